"""Fixtures shared by the CLI tests."""

from typing import NamedTuple

import pytest

from grader.cli import main


class MainRun(NamedTuple):
    status: int
    out: str
    err: str


@pytest.fixture
def kata_main(capsys):
    """`kata ARGS` through `grader.cli.main`, exactly as the console script exits (usage errors: status 2)."""

    def run(*args) -> MainRun:
        status = main([str(arg) for arg in args])
        out, err = capsys.readouterr()
        return MainRun(status, out, err)

    return run
