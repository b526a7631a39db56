"""Fixtures and helpers shared by the tests."""

import os
from contextlib import contextmanager
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


@contextmanager
def one_torch_thread():
    """One torch intra-op thread for the block: the labs' tiny model gains nothing from a second,
    and on a busy 2-core machine the threads of several processes wait on each other (3-10x slower
    wall time measured, SmolLM2 included: 90 s vs 327 s)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def need_sandbox() -> None:
    """Skip a test that needs the OS sandbox where it cannot work, saying why; with
    KATA_REQUIRE_SANDBOX set (scripts/test sets it under CI), fail instead: there the sandbox must
    work, and a skipped defence is an untested one."""
    from grader.run import sandbox

    why = sandbox.problem()
    if why:
        if os.environ.get("KATA_REQUIRE_SANDBOX"):
            pytest.fail(f"the sandbox must work in CI: {why}")
        pytest.skip(f"no sandbox here: {why}")


def processes_named(name: str) -> list[int]:
    """Pids of the processes whose /proc/PID/comm is `name` (what a test's bomb or daemon calls itself)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and open(f"/proc/{entry}/comm").read().strip() == name:
                found.append(int(entry))
        except OSError:
            pass
    return found
