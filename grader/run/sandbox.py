"""The OS sandbox: bubblewrap around the warm process, and a world of its own for each contestant.

Two layers (grader/ARCHITECTURE.md draws them):

- `command(argv, drop)` wraps the warm process in `bwrap` (the sandbox Flatpak is built on): every
  namespace unshared (user, pid, network, ipc, uts, cgroup), `--die-with-parent`, `--clearenv`
  with only what Python needs, and a read-only view of an allow-list: the system libraries, the
  Python installation, the environment's site-packages and the `grader` package (`bound_paths`);
  never the working directory, the project folder or anything else on the caller's sys.path. The
  `reference` and `katas` packages are covered by empty read-only tmpfs wherever they lie under
  what is bound (a non-editable install's site-packages, a virtualenv inside the project). The
  root, /dev and the covers are read-only, /dev/shm is a bare folder, and `drop` (where the judge
  stages the student's folder) is bound read-only at /kata/drop; the only writable place is the
  warm process's own small /tmp (torch needs one to import), which every contestant's fresh /tmp
  hides. No /sys, so no cgroupfs. The warm process keeps CAP_SYS_ADMIN and CAP_SETPCAP
  within the sandbox's user namespace: what it needs to give each contestant a world.
- `enter_world(work, size_mb, kept)`, run by each contestant before anything else: a pid namespace of
  its own (its box forked it as pid 1 there: `new_pid_namespace`/`back_to_own`), mount, IPC
  and network namespaces of its own (its loopback down: no contestant reaches another alive at
  the same time, by socket or abstract unix address) with fresh tmpfs of `size_mb` at /kata/work (its cwd, HOME and TMPDIR,
  holding a copy of the staged folder `work`), /tmp and /dev/shm, a /proc of its own holding only
  its own processes (`subset=pid`: no /proc/sys, no sysrq-trigger), and /kata/drop hidden. It then
  gives up both capabilities (grader.run.privileges). When it ends, the kernel ends every process
  it started and every writable place it had goes with it.

An allow-listed bind may lie beneath one of those fresh places: a virtualenv, or the checkout the
`grader` package is in, under /tmp (`kept`, chosen from `bound_paths` by `kept_binds`). A fresh
tmpfs would cover it, so each one is put back on it (`_fresh_place`): held open before the tmpfs is
mounted, bound again at its own path from that handle, recursively (the covers of `reference` and
`katas` beneath it come with it), and remounted read-only. The folders above it are a small tmpfs
of their own at the first folder below the fresh place, read-only too (a bind right below it, such as
/tmp/venv, needs none). A contestant of a Python in
/tmp/pytest-of-u/venv sees:

    /tmp                          its fresh tmpfs, writable (and empty but for what follows)
    /tmp/pytest-of-u              a tmpfs holding only the folders down to the bind, read-only
    /tmp/pytest-of-u/venv         the sandbox's read-only bind of the host's folder, again

Nothing else of the host's /tmp is ever in view (the sandbox binds nothing but the allow-list), the
places it can write are still only its three fresh tmpfs, and what it writes there goes with it.

Inside, a contestant's uid is the grader's own (outside, the sandbox's user maps to it; as root, to
root): with no capability, a read-only view, a /proc of its own and the seccomp filter, a uid is
all it is. Files it can write are only its own fresh tmpfs.

`problem()` says why this machine cannot sandbox (None when it can): bwrap missing, or namespaces
blocked; `choose("auto" | "on" | "off")` decides.
"""

import ctypes
import importlib.util
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from grader.content.i18n import MESSAGE_VARIABLE

WORK = "/kata/work"  # a contestant's private tmpfs (a path no host folder is bound to)
DROP = "/kata/drop"  # the judge's staged copies of students' folders, read-only
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/etc/ld.so.cache", "/etc/ld.so.conf",
          "/etc/ld.so.conf.d", "/etc/localtime", "/etc/alternatives")  # fmt: skip
HIDDEN_PACKAGES = ("reference", "katas")
CAPABILITIES = ("CAP_SYS_ADMIN", "CAP_SETPCAP")  # the warm process's, inside the sandbox only
WRITABLE = ("/tmp", "/dev/shm")  # each contestant gets a fresh tmpfs here, and at WORK
FRESH = (WORK, *WRITABLE)
SKELETON = "size=1m,mode=0755"  # the read-only tmpfs holding the folders above a kept bind
WARM_TMP_MB = 16  # the warm process's own /tmp, which no contestant sees

_CLONE_NEWNS, _CLONE_NEWPID, _CLONE_NEWIPC, _CLONE_NEWNET = 0x00020000, 0x20000000, 0x08000000, 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18

CHOICES = ("auto", "on", "off")


class Unavailable(RuntimeError):
    """The sandbox was required (`on`) and this machine cannot provide it; the message says why."""


def choose(choice: str) -> bool:
    """Whether to sandbox: `on` requires it (Unavailable when it cannot work), `auto` uses it where
    it works, `off` never."""
    if choice == "off":
        return False
    why = problem()
    if why and choice == "on":
        raise Unavailable(why)
    return why is None


def problem() -> str | None:
    """Why contestants cannot run in the sandbox here, in one line; None when they can."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bwrap (bubblewrap) is not installed: `apt-get install bubblewrap` (or your system's package)"
    probe = [bwrap, "--unshare-all", "--die-with-parent", *_capability_options(), "--ro-bind", "/", "/"]
    probe += ["--proc", "/proc", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bwrap could not run: {error}"
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no reason given"])[-1]
        return (
            f"bwrap cannot create namespaces here ({why}): allow unprivileged user namespaces "
            "(sysctl kernel.unprivileged_userns_clone=1, or kernel.apparmor_restrict_unprivileged_userns=0 "
            "on Ubuntu 24.04), or in a container run with a seccomp profile that permits them"
        )
    return None


def _capability_options() -> list[str]:
    return ["--cap-drop", "ALL", *[option for name in CAPABILITIES for option in ("--cap-add", name)]]


def command(argv: list[str], drop: Path) -> list[str]:
    """`argv` inside bwrap, seeing only what a contestant needs (see the module docstring)."""
    args = [shutil.which("bwrap") or "bwrap", "--unshare-all", "--die-with-parent", "--new-session"]
    args += [*_capability_options(), "--clearenv"]
    for name, value in _environment().items():
        args += ["--setenv", name, value]
    # first: binds may lie under /tmp. The warm process's own /tmp (torch wants a temporary folder when
    # it imports) is hidden from every contestant under a fresh one of its own, which puts back the
    # binds beneath it (kept_binds, enter_world).
    args += ["--dev", "/dev", "--proc", "/proc", "--size", str(WARM_TMP_MB * 2**20), "--tmpfs", "/tmp"]
    bound = bound_paths()
    for path in bound:
        args += ["--ro-bind", path, path]
    for path in hidden(bound):
        args += ["--tmpfs", path, "--remount-ro", path]
    args += ["--dir", WORK, "--ro-bind", str(drop), DROP]
    args += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/"]
    return args + argv


def _environment() -> dict[str, str]:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": WORK, "TMPDIR": WORK}
    env |= {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONSAFEPATH": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    if os.environ.get(MESSAGE_VARIABLE):  # the language of the messages written in the sandbox
        env[MESSAGE_VARIABLE] = os.environ[MESSAGE_VARIABLE]
    return env


def bound_paths() -> list[str]:
    """The allow-list: system libraries, the Python installation and environment (prefixes, the
    interpreter's folder, every site-packages folder on sys.path) and the grader package.

    Not the working directory, nor any other sys.path entry (a project checkout, a tests folder,
    PYTHONPATH): whatever the caller's import path holds besides site-packages stays outside.
    """
    import grader

    paths = [path for path in SYSTEM if os.path.exists(path)]
    paths += [sys.base_prefix, sys.prefix, str(Path(sys.executable).resolve().parent)]
    paths += [entry for entry in sys.path if _is_site_folder(entry)]
    paths.append(str(Path(grader.__file__).resolve().parent))
    unique = []
    for path in sorted({os.path.realpath(path) for path in paths} | {os.path.abspath(path) for path in paths}):
        if not any(path.startswith(parent.rstrip("/") + "/") for parent in unique):
            unique.append(path)
    return unique


def _is_site_folder(entry: str) -> bool:
    return bool(entry) and Path(entry).name in ("site-packages", "dist-packages") and os.path.isdir(entry)


def hidden(bound: list[str]) -> list[str]:
    """Where the reference and the checks lie under a bound path: the packages Python would import,
    and any folder of that name in a site-packages folder (another installed copy)."""
    found = set()
    for name in HIDDEN_PACKAGES:
        spec = importlib.util.find_spec(name)
        locations = list(spec.submodule_search_locations or []) if spec else []
        locations += [os.path.join(entry, name) for entry in sys.path if _is_site_folder(entry)]
        for location in locations:
            for path in {os.path.realpath(location), os.path.abspath(location)}:
                if os.path.isdir(path) and any(_under(path, parent) for parent in bound):
                    found.add(path)
    return sorted(found)


def _under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


# -- one contestant's world (run inside the sandbox, by the contestant itself) ------------------------


def _check(result: int, what: str) -> None:
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


def new_pid_namespace(libc) -> None:
    """In a box: the next fork is pid 1 of a pid namespace of its own (`libc`: privileges.libc())."""
    _check(libc.unshare(_CLONE_NEWPID), "unshare(pid)")


def back_to_own(libc, own_pid_namespace: int) -> None:
    """In a box, after that fork: later forks are again in its own pid namespace."""
    _check(libc.setns(own_pid_namespace, _CLONE_NEWPID), "setns(pid)")


def enter_world(libc, work: str | None, size_mb: int, kept: tuple[str, ...] = ()) -> None:
    """Become one contestant's world (see the module docstring); `work`: the staged folder under
    DROP to copy in (None: an empty one); `kept`: the binds beneath a fresh place (`kept_binds`).
    Needs the warm process's capabilities (the caller drops them next); `libc`: privileges.libc()."""
    _check(libc.unshare(_CLONE_NEWNS | _CLONE_NEWIPC | _CLONE_NEWNET), "unshare(mount, ipc, net)")
    _check(libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "mount(private)")
    for where in FRESH:
        _fresh_place(libc, where, size_mb, [path for path in kept if _beneath(path, where)])
    if work is not None:
        copy_tree(work, WORK)
    proc = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
    _check(libc.mount(b"proc", b"/proc", b"proc", proc, b"subset=pid"), "mount(/proc)")
    _check(libc.mount(b"tmpfs", DROP.encode(), b"tmpfs", _MS_RDONLY, b"size=4k"), "mount(hide drop)")


def kept_binds(bound: list[str] | None = None) -> tuple[str, ...]:
    """The binds of the allow-list (`bound_paths`, as `command` binds them) that lie beneath a
    place each contestant gets a fresh tmpfs at, which it puts back (`_fresh_place`); usually none.
    A bind at such a place itself (a Python installed at /tmp) stays covered."""
    bound = bound_paths() if bound is None else bound
    return tuple(path for path in bound if any(_beneath(path, where) for where in FRESH))


def _beneath(path: str, parent: str) -> bool:
    return path.startswith(parent.rstrip("/") + "/")


def _fresh_place(libc, where: str, size_mb: int, kept: list[str]) -> None:
    """A fresh writable tmpfs of `size_mb` at `where`, with each bind in `kept` (all beneath it) put
    back at its own path, read-only, in read-only folders (the layout: the module docstring)."""
    held = [os.open(path, os.O_PATH | os.O_CLOEXEC) for path in kept]  # before the tmpfs covers them
    try:
        options = f"size={size_mb}m,mode=0755".encode()
        _check(libc.mount(b"tmpfs", where.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, options), f"mount({where})")
        tops: dict[str, list[tuple[str, int]]] = {}
        for path, fd in zip(kept, held):
            top = os.path.join(where, os.path.relpath(path, where).split(os.sep)[0])
            tops.setdefault(top, []).append((path, fd))
        for top, binds in tops.items():
            skeleton = [path for path, _ in binds] != [top]
            if skeleton:
                os.mkdir(top)
                _check(libc.mount(b"tmpfs", top.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, SKELETON.encode()),
                       f"mount({top})")  # fmt: skip
            for path, fd in binds:
                _rebind(libc, fd, path)
            if skeleton:
                _read_only(libc, top)
    finally:
        for fd in held:
            os.close(fd)


def _rebind(libc, fd: int, path: str) -> None:
    """Bind what `fd` holds open (a mount covered since) at `path` again, with what is mounted
    beneath it, read-only."""
    if stat.S_ISDIR(os.fstat(fd).st_mode):
        os.makedirs(path, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o644))
    source = f"/proc/self/fd/{fd}".encode()  # the handle's own mount: the path is covered now
    _check(libc.mount(source, path.encode(), None, _MS_BIND | _MS_REC, None), f"mount(bind {path})")
    _read_only(libc, path)


def _read_only(libc, path: str) -> None:
    flags = _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV
    _check(libc.mount(None, path.encode(), None, flags, None), f"mount(read-only {path})")


def copy_tree(source: str, target: str) -> None:
    """Copy the regular files and folders under `source` into the existing folder `target` (a
    staged folder holds nothing else); the plain loop costs a contestant a fraction of copytree's."""
    for top, folders, files in os.walk(source):
        into = os.path.join(target, os.path.relpath(top, source))
        for name in folders:
            os.mkdir(os.path.join(into, name))
        for name in files:
            with open(os.path.join(top, name), "rb") as read, open(os.path.join(into, name), "wb") as write:
                write.write(read.read())
