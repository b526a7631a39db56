"""What the conformance tests share: `kata check SLUG --against trl` run as a learner runs it."""

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

KATA_SCRIPT = Path(sys.executable).with_name("kata")


@pytest.fixture
def check_against_trl(tmp_path: Path) -> Callable[[str, str], tuple[int, dict]]:
    """A function (slug, source) -> (exit status, the --json report) of `kata check --against trl`.

    The source is written to tmp_path/SLUG.py and checked by the installed `kata` script from
    tmp_path, so the run sees no workspace of its own.
    """

    def check(slug: str, source: str) -> tuple[int, dict]:
        path = tmp_path / f"{slug}.py"
        path.write_text(source, encoding="utf-8")
        done = subprocess.run(
            [str(KATA_SCRIPT), "check", slug, "--against", "trl", "--file", str(path), "--json"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=600,
        )
        return done.returncode, json.loads(done.stdout)

    return check
