"""What a contestant may take: memory and processes, set as resource limits in the contestant
before it loads anything (no torch here: the `kata` process reads these settings too).

Memory is address space beyond what the contestant already holds when it starts (a memory bomb
gets MemoryError or torch's "can't allocate memory" instead of swapping the machine). Processes
bound a user other than root through RLIMIT_NPROC (root ignores it: as root, the file's cgroup
box caps processes instead). Files are capped at FILE_SIZE_MB (RLIMIT_FSIZE: a write past it
fails with EFBIG), and core dumps are off.
"""

import os
import resource
import signal
from dataclasses import dataclass

MEMORY_EXIT = 75  # exit status of a contestant that ran out of memory outside any request
FILE_SIZE_MB = 64  # the largest file a contestant may write (RLIMIT_FSIZE); a box's tmpfs holds as much


@dataclass(frozen=True)
class Limits:
    memory_mb: int | None = None  # address space a contestant may add to what it starts with
    processes: int | None = None  # processes (threads) beyond the user's current ones; not for root


NO_LIMITS = Limits()


def tasks_counted(limits: Limits) -> int | None:
    """What RLIMIT_NPROC counts for this user now, where `apply` will need it (None elsewhere)."""
    return user_tasks() if limits.processes is not None and os.geteuid() != 0 else None


def apply(limits: Limits, tasks: int | None = None) -> None:
    """Set this process's limits, relative to what it holds now; `tasks`: what RLIMIT_NPROC
    counts for this user now (`tasks_counted`; None: count them in /proc now)."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_MB * 2**20, FILE_SIZE_MB * 2**20))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the cap fails (EFBIG); it does not kill
    if limits.memory_mb is not None:
        cap = _address_space() + limits.memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (cap, resource.getrlimit(resource.RLIMIT_AS)[1]))
    if limits.processes is not None and os.geteuid() != 0:
        hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
        cap = (user_tasks() if tasks is None else tasks) + limits.processes
        resource.setrlimit(resource.RLIMIT_NPROC, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))


def _address_space() -> int:
    """Bytes of virtual memory this process has mapped (VmSize)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def user_tasks() -> int:
    """Threads of every process of this user: what RLIMIT_NPROC counts (read from each process's
    status, which a non-dumpable process's /proc folder shows too)."""
    uid, count = str(os.getuid()), 0
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/status", encoding="ascii") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
            if fields["Uid"].split()[0] == uid:
                count += int(fields["Threads"])
        except (OSError, KeyError, ValueError):  # gone meanwhile
            pass
    return count
