"""The OS sandbox around contestants: bubblewrap for the warm process, and namespaces of its own
for each graded file.

Two layers:
- `command(argv, drop)` wraps the warm process in `bwrap` (the sandbox Flatpak is built on):
  every namespace unshared (user, pid, network, ipc, uts, cgroup), `--die-with-parent`,
  `--clearenv` with only what Python needs, uid and gid 65534, and a read-only view of just the
  system libraries, the Python environment and the `grader` package. The `reference` and
  `katas` packages are covered by empty tmpfs wherever they lie under what is bound (a virtualenv
  inside the project folder is bound, the project folder is not). No /sys (so no cgroupfs), a
  fresh /proc, /dev and /tmp, and `drop` read-only at /kata/drop: the folder where the judge puts the
  copy of the student's files to grade.
- `enter_file_namespaces()` and `private_work(...)`, run by the warm process's fork for one file
  (grader.run.contestant): a user, pid and mount namespace of the file's own, a tmpfs capped at
  a size as its cwd (/kata/work), HOME and TMPDIR holding the copy of the student's folder, and
  /kata/drop hidden.
  Its first process is pid 1 there: when it ends, the kernel kills every process the file started.

`problem()` says why this machine cannot sandbox (None when it can): bwrap missing, or
namespaces blocked; `choose("auto" | "on" | "off")` decides.
"""

import ctypes
import importlib.util
import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

from grader.content.i18n import MESSAGE_VARIABLE

WORK = "/kata/work"  # the file's private tmpfs inside the sandbox (a path no host folder is bound to)
DROP = "/kata/drop"  # the judge's copy of the student's files, read-only
NOBODY = 65534
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/etc/ld.so.cache", "/etc/ld.so.conf",
          "/etc/ld.so.conf.d", "/etc/localtime", "/etc/alternatives")  # fmt: skip
HIDDEN_PACKAGES = ("reference", "katas")

_CLONE_NEWNS, _CLONE_NEWUSER, _CLONE_NEWPID = 0x00020000, 0x10000000, 0x20000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_REC, _MS_PRIVATE = 1, 2, 4, 16384, 1 << 18


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


@cache
def problem() -> str | None:
    """Why contestants cannot run in the sandbox here, in one line; None when they can."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bwrap (bubblewrap) is not installed: `apt-get install bubblewrap` (or your system's package)"
    probe = [bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "true"]
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


def command(argv: list[str], drop: Path) -> list[str]:
    """`argv` inside bwrap, seeing only what a contestant needs (see the module docstring)."""
    args = [shutil.which("bwrap") or "bwrap", "--unshare-all", "--die-with-parent", "--new-session"]
    args += ["--uid", str(NOBODY), "--gid", str(NOBODY), "--clearenv"]
    for name, value in _environment().items():
        args += ["--setenv", name, value]
    # first: binds may lie under /tmp
    args += ["--dev", "/dev", "--tmpfs", "/dev/shm", "--proc", "/proc", "--tmpfs", "/tmp"]
    bound = _bound_paths()
    for path in bound:
        args += ["--ro-bind", path, path]
    for path in _hidden(bound):
        args += ["--tmpfs", path]
    args += ["--dir", WORK, "--ro-bind", str(drop), DROP, "--chdir", "/"]
    return args + argv


def _environment() -> dict[str, str]:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp", "TMPDIR": "/tmp"}
    env |= {"PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    if os.environ.get(MESSAGE_VARIABLE):  # the language of the messages written in the sandbox
        env[MESSAGE_VARIABLE] = os.environ[MESSAGE_VARIABLE]
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def _bound_paths() -> list[str]:
    """System libraries, the Python installation and environment, sys.path, the grader package."""
    import grader

    paths = [path for path in SYSTEM if os.path.exists(path)]
    paths += [sys.base_prefix, sys.prefix, str(Path(sys.executable).resolve().parent)]
    paths += [entry for entry in sys.path if entry and os.path.isdir(entry)]
    paths.append(str(Path(grader.__file__).resolve().parent))
    unique = []
    for path in sorted({os.path.realpath(path) for path in paths} | {os.path.abspath(path) for path in paths}):
        if not any(path.startswith(parent.rstrip("/") + "/") for parent in unique):
            unique.append(path)
    return unique


def _hidden(bound: list[str]) -> list[str]:
    """Where the reference and the checks lie under a bound path: covered by an empty tmpfs."""
    found = []
    for name in HIDDEN_PACKAGES:
        spec = importlib.util.find_spec(name)
        for location in (spec.submodule_search_locations or []) if spec else []:
            for path in {os.path.realpath(location), os.path.abspath(location)}:
                if any(path == parent or path.startswith(parent.rstrip("/") + "/") for parent in bound):
                    found.append(path)
    return sorted(set(found))


# -- one file's namespaces (run inside the sandbox, by the warm process's fork) ------------------------


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        raise OSError(ctypes.get_errno(), f"{what}: {os.strerror(ctypes.get_errno())}")


def enter_file_namespaces() -> None:
    """A user, pid and mount namespace of this file's own (the next fork is pid 1 there)."""
    libc, uid, gid = _libc(), os.getuid(), os.getgid()
    _check(libc.unshare(_CLONE_NEWUSER), "unshare(user)")
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
    Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
    _check(libc.unshare(_CLONE_NEWPID | _CLONE_NEWNS), "unshare(pid, mount)")
    _check(libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "mount(private)")


def private_work(source: str, size_mb: int) -> None:
    """A tmpfs of `size_mb` at WORK holding a copy of `source` (under DROP), then DROP hidden."""
    libc = _libc()
    options = f"size={size_mb}m,mode=0700".encode()
    _check(libc.mount(b"tmpfs", WORK.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, options), "mount(work)")
    shutil.copytree(source, WORK, dirs_exist_ok=True, symlinks=True)
    _check(libc.mount(b"tmpfs", DROP.encode(), b"tmpfs", _MS_RDONLY, b"size=4k"), "mount(hide drop)")
