"""The one way the grader runs a judge (a pytest run with the grading plugin) as a child process:
in a scratch folder, its output to a log file, with a deadline after which its process group is
killed, and an account of how it ended.

    ended = run_judge(["-m", "grader.judging", ...], scratch, log, limit=120.0)   # `kata check`: a fresh Python
    ended = run_judge(judge, scratch, log, limit=120.0)                          # a warm worker: a fork calling judge()

Either way the judge's last act is `exit_after`: an exit with its status, without the
interpreter's teardown. No torch here: `kata check` calls it from the `kata` process.
"""

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from grader.run import containment, interrupt
from grader.run.interrupt import deferred


@dataclass
class Ended:
    status: int  # the wait status
    timed_out: bool
    peak_kb: int  # the child's largest resident set

    def reason(self, limit: float) -> str:
        """Why it ended without finishing normally, in one line ("" when it exited by itself)."""
        if self.timed_out:
            return f"the grading run did not finish within {limit:g} s"
        if os.WIFSIGNALED(self.status):
            return f"the grading process was killed ({_signal_name(os.WTERMSIG(self.status))})"
        return ""


def run_judge(judge: list[str] | Callable[[], int], scratch: Path, log: Path, limit: float) -> Ended:
    """Run the judge in `scratch` (also HOME and TMPDIR) for at most `limit` seconds: a new Python
    with the arguments `judge`, or a fork of this process (which has imported pytest and torch
    already) that calls `judge()` and exits with what it returns. Either way the child leads its
    own process group, which is killed at the deadline, or when this process is interrupted.
    """
    pid = 0
    try:
        with deferred():  # an interrupt before `pid` is known would leave a judge that no one kills
            pid = _start(judge, scratch, log)
        deadline = time.monotonic() + limit
        with _exits(pid) as exited:
            while True:
                done, status, usage = os.wait4(pid, os.WNOHANG)
                if done:
                    return Ended(status, False, usage.ru_maxrss)
                if time.monotonic() > deadline:
                    status, peak_kb = _end(pid)
                    return Ended(status, True, peak_kb)
                exited(min(0.5, max(0.0, deadline - time.monotonic())))
    except BaseException:  # an interrupt (grader.run.interrupt): the judge ends with the command
        if pid:
            _end(pid)
        raise


@contextmanager
def _exits(pid: int):
    """`wait(seconds)`: return when the process `pid` exits or `seconds` have passed; at once on the
    exit where the kernel gives a pidfd (Linux 5.3), else within 20 ms of it."""
    try:
        handle = os.pidfd_open(pid)
    except (AttributeError, OSError):
        yield lambda seconds: time.sleep(min(seconds, 0.02))
        return
    try:
        yield lambda seconds: select.select([handle], [], [], seconds)
    finally:
        os.close(handle)


def _start(judge: list[str] | Callable[[], int], scratch: Path, log: Path) -> int:
    """The judge's pid, spawned or forked (the forked child never returns from here)."""
    parent = os.getpid()
    output = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        if not callable(judge):
            return _spawn(judge, scratch, output)
        pid = os.fork()
        if pid == 0:
            _forked(judge, scratch, output, parent)
        return pid
    finally:
        os.close(output)


def _end(pid: int) -> tuple[int, int]:
    """Kill the judge `pid` and its process group (its sandbox dies with it: bwrap's
    --die-with-parent), collect it, and remove the cgroups it made (grader.run.containment); its
    wait status and peak resident set in KiB."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _, status, usage = os.wait4(pid, 0)
    containment.clean_leftovers()
    return status, usage.ru_maxrss


def _environment(scratch: Path) -> dict:
    return dict(os.environ, HOME=str(scratch), TMPDIR=str(scratch), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")


def _spawn(arguments: list[str], scratch: Path, output: int) -> int:
    process = subprocess.Popen(
        [sys.executable, *arguments],
        cwd=scratch,
        env=_environment(scratch),
        stdin=subprocess.DEVNULL,
        stdout=output,
        stderr=output,
        start_new_session=True,
    )
    process.returncode = 0  # waited for with os.wait4 above, not by Popen
    return process.pid


def _forked(judge: Callable[[], int], scratch: Path, output: int, parent: int) -> None:
    """In the forked child: take the scratch folder as home, call `judge`, exit with its status;
    die with the process that forked it (`parent`), even if it died before it could say so."""
    try:
        import resource
        import tempfile

        from grader.run import privileges

        os.setsid()
        privileges.die_with_parent()
        if os.getppid() != parent:
            os._exit(70)
        interrupt.unblock()
        os.chdir(scratch)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        os.environ.clear()
        os.environ.update(_environment(scratch))
        tempfile.tempdir = None
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except BaseException:
        import traceback

        traceback.print_exc()
        os._exit(70)
    exit_after(judge)


def exit_after(judge: Callable[[], int]) -> None:
    """Call `judge`, flush what it wrote and exit with its status, skipping the interpreter's
    teardown (with torch loaded it takes ~0.5 s, and the judge has nothing left to clean)."""
    code = 70
    try:
        from grader.run import privileges

        privileges.non_dumpable()
        code = int(judge())
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def last_line(log: Path) -> str:
    """The last line the child wrote (for a one-line reason), at most 300 characters."""
    try:
        with log.open("rb") as handle:
            handle.seek(max(0, log.stat().st_size - 4000))
            lines = handle.read().decode(errors="replace").strip().splitlines()
    except OSError:
        lines = []
    return lines[-1][:300] if lines else "no output"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
