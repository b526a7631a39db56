"""A box around one submission's process tree, so that everything it starts can be capped and ended.

Where the machine lends a writable cgroup-v1 `pids` hierarchy (root on most Linux hosts with
cgroup v1, as here: /sys/fs/cgroup/pids), each box is a fresh cgroup with `pids.max`: a fork
bomb hits the cap (fork fails with EAGAIN, nothing outside the box notices), and `close()` kills
every process still in it, including those that left the process group with setsid(). Root
ignores RLIMIT_NPROC, so this is the only cap that holds for root.

Elsewhere (cgroup v2 without delegation, no permission) the box is the process group alone:
`close()` kills the group, and a user other than root gets RLIMIT_NPROC per check (see
grader.run.limits). `available()` says which one a machine gives.
"""

import itertools
import os
import signal
import time
from pathlib import Path

PIDS_ROOT = Path("/sys/fs/cgroup/pids")
MAX_TASKS = 64  # processes and threads one submission's grading may hold at once
_names = itertools.count()


def available() -> bool:
    """Whether boxes are cgroups here (else process groups only)."""
    return (PIDS_ROOT / "cgroup.procs").is_file() and os.access(PIDS_ROOT, os.W_OK)


class Box:
    """Create in the parent; `enter()` in the child before it runs anything; `close()` in the parent."""

    def __init__(self, max_tasks: int = MAX_TASKS):
        self.path: Path | None = None
        self.leader: int | None = None
        if available():
            path = PIDS_ROOT / f"kata-grade-{os.getpid()}-{next(_names)}"
            try:
                path.mkdir()
                (path / "pids.max").write_text(str(max_tasks))
                self.path = path
            except OSError:
                _remove(path)

    def enter(self) -> None:
        """In the child: move into the cgroup and lead a new process group."""
        os.setpgid(0, 0)
        if self.path is not None:
            (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def started(self, pid: int) -> None:
        """In the parent: the child that entered."""
        self.leader = pid

    def kill(self) -> None:
        """SIGKILL the process group and, with a cgroup, every process in it until none is left."""
        if self.leader is not None:
            try:
                os.killpg(self.leader, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self.path is None:
            return
        for _ in range(500):  # bounded by pids.max: each sweep leaves fewer that can fork
            pids = self.members()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)

    def members(self) -> list[int]:
        """Processes in the cgroup now (empty without one)."""
        if self.path is None:
            return []
        try:
            return [int(line) for line in (self.path / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def close(self) -> None:
        """Kill whatever is left and remove the cgroup."""
        self.kill()
        if self.path is not None:
            _remove(self.path)
            self.path = None


def _remove(path: Path) -> None:
    for _ in range(100):  # a killed process leaves the cgroup a moment after it dies
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)
