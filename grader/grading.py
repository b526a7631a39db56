"""Grade a file from the `kata` process without importing torch or any learner code: run pytest
with the plugin in a child process and read back the JSON it writes.
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from grader import DEFAULT_TIMEOUT, run_limit
from grader.catalogue import Kata
from grader.results import GradeResult
from grader.run.limits import NO_LIMITS, Limits

PROJECT_ROOT = Path(__file__).resolve().parent.parent


class GradingError(RuntimeError):
    """The grading process itself failed (not the learner's code)."""


def pytest_arguments(
    kata: Kata, target: str | Path, timeout: float, report: Path, limits: Limits = NO_LIMITS, against: str | None = None
) -> list[str]:
    """The arguments of the pytest run that grades `target` and writes its result to `report`."""
    arguments = [
        str(kata.checks_path),
        "-p",
        "grader.plugin",
        "-p",
        "no:cacheprovider",
        "-q",
        "--no-header",
        "-rN",
        "--rootdir",
        str(PROJECT_ROOT),
        "-c",
        str(PROJECT_ROOT / "grader" / "pytest-kata.ini"),
        "--kata",
        kata.slug,
        "--kata-timeout",
        str(timeout),
        "--kata-report",
        str(report),
    ]
    if isinstance(target, Path):
        arguments += ["--kata-file", str(target.resolve())]
    else:
        arguments += ["--kata-target", target]
    if limits.memory_mb is not None:
        arguments += ["--kata-memory", str(limits.memory_mb)]
    if limits.processes is not None:
        arguments += ["--kata-processes", str(limits.processes)]
    if against:
        arguments += ["--kata-against", against]
    return arguments


def grade(
    kata: Kata,
    target: str | Path,
    timeout: float = DEFAULT_TIMEOUT,
    against: str | None = None,
) -> GradeResult:
    """Run every check of `kata` against `target` (a file's Path, or "reference", "template" or
    "misconception:ID"), each in its own child process limited to `timeout` seconds; with
    `against="trl"`, TRL's code gives the expected values where it has the function."""
    with tempfile.TemporaryDirectory(prefix="kata-") as scratch:
        report = Path(scratch) / "result.json"
        command = [sys.executable, "-m", "pytest", *pytest_arguments(kata, target, timeout, report, against=against)]
        env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
        try:
            done = subprocess.run(
                command, cwd=scratch, env=env, capture_output=True, text=True, timeout=run_limit(timeout)
            )
        except subprocess.TimeoutExpired:
            raise GradingError("the grader ran out of time (this is a bug in the grader, not your code)") from None
        if not report.exists():
            lines = (done.stderr or done.stdout).strip().splitlines()
            raise GradingError(f"the grader failed: {lines[-1] if lines else f'exit status {done.returncode}'}")
        return GradeResult.from_json(json.loads(report.read_text(encoding="utf-8")))
