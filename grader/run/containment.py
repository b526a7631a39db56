"""A cgroup around one graded file's processes: a cap on their number and on their memory
together, and a way to end every one of them.

Where the judge may write cgroups (root on most Linux hosts: cgroup v1 with the `pids` and
`memory` controllers, as here, or cgroup v2 with both enabled), each box is a fresh cgroup named
`kata-grade-<pid>-<random>` in each hierarchy, with `pids.max` and a memory limit. The judge creates
it, moves the file's box process in (`add`, with the pid the kernel reported; every process it
forks is then counted too), and `close()` kills every process still in it, whichever session or
process group it made for itself, before it removes the cgroup. A contestant cannot write it: the
sandbox mounts no cgroupfs, and its cgroup namespace is its own. A fork bomb hits the cap (fork
fails with EAGAIN), and the memory of all its processes together is capped.

Elsewhere the box is empty (`path` None): the sandbox's pid namespace still ends every process of
a file, RLIMIT_AS caps each process's memory, and RLIMIT_NPROC caps a user other than root.
`clean_leftovers()` removes the boxes of a run that was killed (their processes first).
"""

import os
import secrets
import signal
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
MAX_TASKS = 64  # processes and threads one file's contestants may hold at once
PREFIX = "kata-grade-"


def hierarchies() -> list[Path]:
    """The writable cgroup folders a box is made in: v1 `pids` and `memory`, or the v2 root."""
    if (CGROUP_ROOT / "cgroup.controllers").is_file():  # v2, unified
        wanted = (CGROUP_ROOT / "cgroup.controllers").read_text().split()
        roots = [CGROUP_ROOT] if {"pids", "memory"} <= set(wanted) else []
    else:
        roots = [CGROUP_ROOT / "pids", CGROUP_ROOT / "memory"]
    return [root for root in roots if (root / "cgroup.procs").is_file() and os.access(root, os.W_OK)]


def available() -> bool:
    """Whether boxes are cgroups here."""
    return bool(hierarchies())


def clean_leftovers() -> int:
    """Kill the processes of `kata-grade-*` cgroups left by killed runs and remove them; how many.

    A box is named after the process that made it: one whose maker still runs belongs to a run
    going on now (another class, a `kata check`), and is left alone.
    """
    removed = 0
    for root in hierarchies():
        for path in root.glob(f"{PREFIX}*"):
            maker = path.name.removeprefix(PREFIX).split("-")[0]
            if maker.isdigit() and Path(f"/proc/{maker}").exists():
                continue
            _kill_members([path])
            removed += _remove(path)
    return removed


class Box:
    """A cgroup per hierarchy for one file; empty where none can be made (see `available`)."""

    def __init__(self, max_tasks: int = MAX_TASKS, memory_mb: int | None = None):
        self.paths: list[Path] = []
        name = f"{PREFIX}{os.getpid()}-{secrets.token_hex(4)}"  # the maker's pid first (clean_leftovers)
        for root in hierarchies():
            path = root / name
            try:
                path.mkdir()
                self.paths.append(path)
                _limit(path, max_tasks, memory_mb)
            except OSError:
                pass

    @property
    def path(self) -> Path | None:
        return self.paths[0] if self.paths else None

    def add(self, pid: int) -> None:
        """Move process `pid` (and so everything it forks from now on) into the box."""
        for path in self.paths:
            (path / "cgroup.procs").write_text(str(pid))

    def members(self) -> list[int]:
        """Processes in the box now (empty without one)."""
        found = set()
        for path in self.paths:
            try:
                found |= {int(line) for line in (path / "cgroup.procs").read_text().split()}
            except OSError:
                pass
        return sorted(found)

    def kill(self) -> None:
        """SIGKILL every process in the box until none is left."""
        _kill_members(self.paths)

    def close(self) -> None:
        """Kill whatever is left and remove the cgroups."""
        self.kill()
        for path in self.paths:
            _remove(path)
        self.paths = []


def _limit(path: Path, max_tasks: int, memory_mb: int | None) -> None:
    if (path / "pids.max").exists():
        (path / "pids.max").write_text(str(max_tasks))
    if memory_mb is not None:
        for name in ("memory.limit_in_bytes", "memory.max"):  # v1, v2
            if (path / name).exists():
                (path / name).write_text(str(memory_mb * 2**20))
        if (path / "memory.swap.max").exists():
            (path / "memory.swap.max").write_text("0")


def _kill_members(paths: list[Path]) -> None:
    for _ in range(500):  # bounded by pids.max: each sweep leaves fewer that can fork
        pids = set()
        for path in paths:
            try:
                pids |= {int(line) for line in (path / "cgroup.procs").read_text().split()}
            except OSError:
                pass
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.01)


def _remove(path: Path) -> int:
    for _ in range(100):  # a killed process leaves the cgroup a moment after it dies
        try:
            path.rmdir()
            return 1
        except FileNotFoundError:
            return 0
        except OSError:
            time.sleep(0.01)
    return 0
