"""Every contestant starts from nothing and touches nothing but itself (issue 26), tested on the
contestants themselves: a probe module, loaded as the module under test in the sandbox, reports
what it can see, write and reach, and the tests compare that with what its world should hold.

Each defence has its twin: a probe that does the same where the defence is absent (its own child
for ptrace, with the seccomp filter off; files in its own folder for writes), so that the test
would fail if the defence were not there. `kata grade` across files is tests/test_isolation_class.py.
"""

import hashlib
from pathlib import Path

import pytest
from conftest import need_sandbox

from grader.run import sandbox
from grader.run.arena import Arena

PROJECT = Path(__file__).resolve().parent.parent

PROBE = r'''
import ctypes, errno, hashlib, os, signal, sys, time

libc = ctypes.CDLL(None, use_errno=True)


def visible_processes():
    """Every pid this process can name: in /proc, or by a signal 0 to each of the first 65536."""
    named = {int(entry) for entry in os.listdir("/proc") if entry.isdigit()}
    for pid in range(1, 65536):
        try:
            os.kill(pid, 0)
            named.add(pid)
        except PermissionError:
            named.add(pid)
        except ProcessLookupError:
            pass
    return sorted(named)


def memory_of_others():
    """The processes other than this one whose /proc/PID/mem it can open."""
    opened = []
    for pid in visible_processes():
        if pid == os.getpid():
            continue
        try:
            os.close(os.open(f"/proc/{pid}/mem", os.O_RDWR))
            opened.append(pid)
        except OSError:
            pass
    return opened


def writable_places(skip=("/proc", "/sys")):
    """Every folder under / where it can create a file (it removes what it made)."""
    found = []
    for top, dirs, _ in os.walk("/", followlinks=False):
        dirs[:] = [d for d in dirs if os.path.join(top, d) not in skip]
        probe = os.path.join(top, ".kata-probe")
        try:
            with open(probe, "w") as handle:
                handle.write("x")
            os.remove(probe)
            found.append(top)
        except OSError:
            pass
    return sorted(found)


def readable_digests(wanted):
    """The paths of readable files whose (size, sha256) is one of `wanted`."""
    sizes, hits = {size for size, _ in wanted}, []
    wanted = {tuple(item) for item in wanted}
    for top, dirs, files in os.walk("/", followlinks=False):
        dirs[:] = [d for d in dirs if os.path.join(top, d) not in ("/proc", "/sys", "/dev")]
        for name in files:
            path = os.path.join(top, name)
            try:
                size = os.lstat(path).st_size
                if size in sizes:
                    with open(path, "rb") as handle:
                        if (size, hashlib.sha256(handle.read()).hexdigest()) in wanted:
                            hits.append(path)
            except OSError:
                pass
    return hits


def trace_own_child():
    """errno of PTRACE_ATTACH, and of process_vm_writev, on a child of its own that made itself
    dumpable (nothing but the seccomp filter forbids either); 0 where it worked."""
    child = os.fork()
    if child == 0:
        libc.prctl(4, 1, 0, 0, 0)
        time.sleep(5)
        os._exit(0)
    time.sleep(0.2)
    attach = 0 if libc.ptrace(16, child, 0, 0) == 0 else ctypes.get_errno()
    if attach == 0:
        os.waitpid(child, 0)
        libc.ptrace(17, child, 0, 0)
    buffer = ctypes.create_string_buffer(8)
    iov = (ctypes.c_void_p * 2)(ctypes.addressof(buffer), 8)
    number = {"x86_64": 311, "aarch64": 271}[os.uname().machine]
    written = libc.syscall(number, child, iov, 1, iov, 1, 0)
    writev = 0 if written >= 0 else ctypes.get_errno()
    os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
    return [attach, writev]


def capabilities():
    for line in open("/proc/self/status"):
        if line.startswith(("CapEff", "CapPrm", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp:")):
            yield line.split(":")[0], line.split()[1]


def status():
    return dict(capabilities())


def import_path():
    """sys.path, and which of its entries this process can write to."""
    return [[entry, os.access(entry, os.W_OK)] for entry in sys.path]


def who():
    return [os.getpid(), os.getuid(), os.getcwd(), os.environ.get("HOME"), os.environ.get("TMPDIR")]


def run(code):
    exec(code, {})


def exists(paths):
    return [os.path.exists(path) for path in paths]


def dumpable():
    return libc.prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE


def listen():
    """Listen on an abstract unix socket and on loopback TCP; kept open until the process ends."""
    import socket

    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind("\0kata-isolation-probe")
    unix.listen(1)
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(1)
    globals()["listening"] = (unix, tcp)
    return tcp.getsockname()[1]


def reach(port):
    """[whether a connection to each listener of `listen` succeeds]: the unix socket, then TCP."""
    import socket

    reached = []
    for family, address in ((socket.AF_UNIX, "\0kata-isolation-probe"), (socket.AF_INET, ("127.0.0.1", port))):
        try:
            with socket.socket(family, socket.SOCK_STREAM) as client:
                client.settimeout(5)
                client.connect(address)
            reached.append(True)
        except OSError:
            reached.append(False)
    return reached
'''


def _digests() -> list[list]:
    """[size, sha256] of every file of the reference and of the checks (and their misconceptions)."""
    files = [*(PROJECT / "reference").glob("*.py"), *(PROJECT / "katas").glob("*/checks.py")]
    files += (PROJECT / "katas").glob("*/misconceptions.toml")
    return sorted({(path.stat().st_size, hashlib.sha256(path.read_bytes()).hexdigest()) for path in files})


@pytest.fixture(scope="module")
def arena():
    need_sandbox()
    arena = Arena.start(["import torch"], sandboxed=True)
    yield arena
    arena.close()


def probe(arena: Arena, seconds: float = 60.0, **world):
    """A contestant of the probe module, in a world of its own (holding a staged folder with a file)."""
    staged, work = arena.stage()
    (staged / "probe.py").write_text(PROBE, encoding="utf-8")
    learner = arena.zygote.spawn({"work": work, "size_mb": 64} | world, seconds)
    learner.load(PROBE, "probe.py")
    return learner


def test_a_contestant_sees_no_process_but_its_own(arena):
    learner = probe(arena)
    try:
        pid, *_ = learner.call("who")
        assert pid == 1  # pid 1 of a pid namespace of its own
        assert learner.call("visible_processes") == [1]
        assert learner.call("memory_of_others") == []
    finally:
        learner.close()


def test_a_contestant_holds_no_capability_and_no_new_privileges_can_come(arena):
    learner = probe(arena)
    try:
        state = learner.call("status")
    finally:
        learner.close()
    assert state["CapEff"] == state["CapPrm"] == state["CapBnd"] == state["CapAmb"] == "0000000000000000"
    assert state["NoNewPrivs"] == "1"
    assert state["Seccomp"] == "2" and learner.seccomp


def test_the_seccomp_filter_alone_forbids_ptrace_and_process_vm_writev(arena):
    """Its own dumpable child: nothing else forbids it (the twin, without the filter, does it)."""
    import errno

    guarded, twin = probe(arena), probe(arena, seccomp=False)
    try:
        assert guarded.call("trace_own_child") == [errno.EPERM, errno.EPERM]
        assert twin.call("trace_own_child") == [0, 0] and not twin.seccomp
    finally:
        guarded.close()
        twin.close()


def test_the_only_writable_places_are_its_own_fresh_tmpfs(arena):
    learner = probe(arena)
    try:
        places = learner.call("writable_places")
        _, _, cwd, home, temporary = learner.call("who")
    finally:
        learner.close()
    assert cwd == home == temporary == sandbox.WORK
    assert set(places) <= {sandbox.WORK, "/tmp", "/dev/shm"} and sandbox.WORK in places and "/tmp" in places


def test_its_folder_is_last_on_the_import_path_and_nothing_else_on_it_is_writable(arena):
    learner = probe(arena)
    try:
        path = learner.call("import_path")
    finally:
        learner.close()
    assert path[-1] == [sandbox.WORK, True]
    assert [entry for entry, writable in path[:-1] if writable] == []
    assert "" not in [entry for entry, _ in path] and "/" not in [entry for entry, _ in path]


def test_what_one_contestant_writes_no_later_contestant_can_read(arena):
    """The first writes into every writable place; the second, of the same folder, looks."""
    first = probe(arena)
    try:
        assert first.call("writable_places")  # it could write somewhere (its own tmpfs)
        first.call("run", "for p in ('/tmp/left', '/dev/shm/left', 'left'): open(p, 'w').write('x')")
        assert first.call("exists", ["/tmp/left", "/dev/shm/left", "left"]) == [True, True, True]
    finally:
        first.close()
    second = probe(arena)
    try:
        assert second.call("exists", ["/tmp/left", "/dev/shm/left", "left"]) == [False, False, False]
    finally:
        second.close()


def test_two_contestants_alive_at_once_cannot_reach_each_other(arena):
    """A check's contestant and the next one (started while it runs, grader.judging.boxes.Upcoming),
    or two hybrids, share no network: each has a network namespace of its own, whose loopback is
    down. The twin: one contestant reaches its own abstract unix socket (scoped by the namespace)."""
    first, second = probe(arena), probe(arena)
    try:
        port = first.call("listen")
        assert first.call("reach", port) == [True, False]  # the twin; no loopback even for itself
        assert second.call("reach", port) == [False, False]
    finally:
        first.close()
        second.close()


def test_no_readable_file_holds_the_reference_or_the_checks(arena):
    """Wherever the package lies (here: an editable checkout, the project folder on sys.path)."""
    wanted = _digests()
    assert len(wanted) > 20
    learner = probe(arena, seconds=120.0)
    try:
        assert learner.call("readable_digests", wanted) == []
    finally:
        learner.close()
    outside = {(path.stat().st_size, hashlib.sha256(path.read_bytes()).hexdigest()) for path in PROJECT.rglob("*.py")}
    outside |= {
        (path.stat().st_size, hashlib.sha256(path.read_bytes()).hexdigest()) for path in PROJECT.rglob("*.toml")
    }
    assert set(wanted) <= outside  # the twin: outside the sandbox, every one of them is found


def test_the_warm_process_and_the_judge_are_not_dumpable(tmp_path):
    """A contestant outside the sandbox inherits the warm process's flag as it is; a forked judge
    sets its own before it runs anything."""
    from grader.run.child import run_judge

    arena = Arena.start(["import torch"], sandboxed=False)
    try:
        learner = arena.zygote.spawn({"work": None, "size_mb": 64}, 30.0)
        learner.load(PROBE, "<probe>")
        assert learner.call("dumpable") == 0
        learner.close()
    finally:
        arena.close()
    flag = tmp_path / "flag"

    def judge() -> int:
        import ctypes

        flag.write_text(str(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0)))
        return 0

    run_judge(judge, tmp_path, tmp_path / "log", 30.0)
    assert flag.read_text() == "0"
