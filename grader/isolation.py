"""Run untrusted work in a forked child: a time limit, bounded output, and a post-mortem.

`run_forked(fn, timeout)` forks; the child runs `fn()` in its own process group with stdin at
/dev/null and stdout/stderr on a pipe, and sends back `fn`'s pickled return value. The parent
drains the output while it waits, keeping only the head and the tail (megabytes of prints cost
no memory), kills the whole process group at the deadline or once the child is gone, and says
what happened: finished, timed out, killed by a signal, or exited early without an answer.

`Limits` bound what the child may take: address space beyond what it already has (a memory
bomb gets MemoryError or torch's "can't allocate memory" instead of swapping the machine) and, for
a user other than root (root ignores it), the number of processes. A fork that cannot start (a
fork bomb left the process table full) is an outcome, not an exception.

`traced(name, fn)` wraps a learner function so that the parent knows which learner call was
running when the child hung or died (a shared page written before and after each call), and so
that a function already known to hang is not waited for again.
"""

import faulthandler
import functools
import mmap
import os
import pickle
import resource
import select
import signal
import sys
import time
import traceback
from dataclasses import dataclass

OUTPUT_KEEP = 3000  # bytes kept from each end of a child's output
_CALL_PAGE = mmap.mmap(-1, 4096)  # shared with every child forked after import
_HUNG: set[str] = set()  # learner functions that already ran out of time (parent's view)


class KnownHang(BaseException):  # BaseException: a learner's `except Exception` cannot swallow it
    """A learner function that already timed out in an earlier check was called again."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


MEMORY_EXIT = 75  # the child's exit status when the grading side itself ran out of memory


@dataclass(frozen=True)
class Limits:
    memory_mb: int | None = None  # address space the child may add to what it inherits
    processes: int | None = None  # processes (threads) beyond the user's current ones; not for root


NO_LIMITS = Limits()


@dataclass
class ForkOutcome:
    finished: bool = False  # fn returned and its value arrived
    value: object = None
    timed_out: bool = False
    exit_code: int | None = None
    signal_name: str | None = None
    output: str = ""  # head and tail of what the child printed
    output_bytes: int = 0
    where: str = ""  # learner call running when the child stopped, if any
    start_error: str = ""  # why no child could be forked at all


def run_forked(fn, timeout: float, limits: Limits = NO_LIMITS) -> ForkOutcome:
    """Run `fn()` in a forked child for at most `timeout` seconds; never raises for the child's sake."""
    _set_call("")
    out_r, out_w = os.pipe()
    res_r, res_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        pid = os.fork()
    except OSError as error:  # EAGAIN: the process table (or this box's share of it) is full
        for fd in (out_r, out_w, res_r, res_w):
            os.close(fd)
        return ForkOutcome(start_error=error.strerror or str(error))
    if pid == 0:  # child
        os.close(out_r)
        os.close(res_r)
        _child(fn, out_w, res_w, limits)
    os.close(out_w)
    os.close(res_w)
    outcome = ForkOutcome()
    result, output = _collect(pid, out_r, res_r, timeout, outcome)
    outcome.output = output.text()
    outcome.output_bytes = output.total
    outcome.where = _CALL_PAGE[:].split(b"\0", 1)[0].decode(errors="replace")
    if outcome.timed_out and outcome.where:
        _HUNG.add(outcome.where.split(" > ")[-1])
    if result:
        try:
            outcome.value = pickle.loads(result)
            outcome.finished = True
        except Exception:  # a truncated answer: the child died while writing it
            outcome.finished = False
    return outcome


def _child(fn, out_w: int, res_w: int, limits: Limits) -> None:
    code = 0
    try:
        os.setpgid(0, 0)
        _apply(limits)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out_w, 1)
        os.dup2(out_w, 2)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115  (whatever the parent had bound, e.g. a capture)
        sys.stdout = open(1, "w", closefd=False, encoding="utf-8", errors="replace", buffering=1)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False, encoding="utf-8", errors="replace", buffering=1)  # noqa: SIM115
        faulthandler.enable(sys.stderr)  # a crash shows the learner's line in the captured output
        value = fn()
        sys.stdout.flush()
        sys.stderr.flush()
        data = pickle.dumps(value)
        view = memoryview(data)
        while view:
            view = view[os.write(res_w, view) :]
    except BaseException as error:
        traceback.print_exc()
        code = MEMORY_EXIT if isinstance(error, MemoryError) else 70
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _apply(limits: Limits) -> None:
    """Set the child's resource limits, relative to what it holds now."""
    if limits.memory_mb is not None:
        cap = _address_space() + limits.memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (cap, resource.getrlimit(resource.RLIMIT_AS)[1]))
    if limits.processes is not None and os.geteuid() != 0:
        cap = _user_tasks() + limits.processes
        hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
        resource.setrlimit(resource.RLIMIT_NPROC, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))


def _address_space() -> int:
    """Bytes of virtual memory this process has mapped (VmSize)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _user_tasks() -> int:
    """Threads of every process of this user: what RLIMIT_NPROC counts."""
    uid, count = os.geteuid(), 0
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and os.stat(f"/proc/{entry}").st_uid == uid:
                count += len(os.listdir(f"/proc/{entry}/task"))
        except OSError:  # gone meanwhile
            pass
    return count


class _Output:
    """Keeps the first and last OUTPUT_KEEP bytes of a stream and counts the rest."""

    def __init__(self):
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = OUTPUT_KEEP - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail = (self.tail + chunk)[-OUTPUT_KEEP:]

    def text(self) -> str:
        head = self.head.decode(errors="replace")
        if self.total <= len(self.head) + len(self.tail):
            return head + self.tail.decode(errors="replace")
        skipped = self.total - len(self.head) - len(self.tail)
        return f"{head}\n[... {skipped:,} bytes of output cut ...]\n{self.tail.decode(errors='replace')}"


def _collect(pid: int, out_r: int, res_r: int, timeout: float, outcome: ForkOutcome):
    """Drain both pipes until the child is gone or the deadline passes; fill in how it ended."""
    deadline = time.monotonic() + timeout
    output, result = _Output(), bytearray()
    sinks = {out_r: output.add, res_r: result.extend}
    status = None
    while status is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            outcome.timed_out = True
            _kill_group(pid)
            _, status = os.waitpid(pid, 0)
            break
        if sinks:
            ready, _, _ = select.select(list(sinks), [], [], min(remaining, 0.05))
            for fd in ready:
                _read_chunk(fd, sinks)
        else:
            time.sleep(min(remaining, 0.01))
        done, wait_status = os.waitpid(pid, os.WNOHANG)
        if done:
            status = wait_status
    for fd in list(sinks):  # the child is gone: take what is left, without blocking
        os.set_blocking(fd, False)
        try:
            while fd in sinks and _read_chunk(fd, sinks):
                pass
        except BlockingIOError:
            pass
    for fd in sinks:
        os.close(fd)
    _kill_group(pid)  # grandchildren the learner left behind
    if os.WIFSIGNALED(status) and not outcome.timed_out:
        outcome.signal_name = signal.Signals(os.WTERMSIG(status)).name
    elif os.WIFEXITED(status):
        outcome.exit_code = os.WEXITSTATUS(status)
    return bytes(result), output


def _read_chunk(fd: int, sinks: dict) -> bool:
    """Move one chunk from `fd` to its sink; at end of stream close it and return False."""
    chunk = os.read(fd, 65536)
    if not chunk:
        del sinks[fd]
        os.close(fd)
        return False
    sinks[fd](chunk)
    return True


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _set_call(text: str) -> None:
    data = text.encode()[:4000] + b"\0"
    _CALL_PAGE.seek(0)
    _CALL_PAGE.write(data)


def traced(name: str, fn):
    """Wrap learner function `fn`: record the call on the shared page; refuse known hangs."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if name in _HUNG:
            raise KnownHang(name)
        outer = _CALL_PAGE[:].split(b"\0", 1)[0].decode(errors="replace")
        _set_call(f"{outer} > {name}" if outer else name)
        try:
            return fn(*args, **kwargs)
        finally:
            _set_call(outer)

    return wrapper
