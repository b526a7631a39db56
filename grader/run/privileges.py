"""What a contestant may not do to other processes: the privileges every contestant gives up
before it loads any learner code (grader.run.contestant), and the flag that keeps the warm
process and the judge out of reach.

- `die_with_parent()`: a forked judge does not outlive the worker that forked it.
- `non_dumpable()`: no process without capabilities over this one may ptrace it, read or write its
  memory (/proc/PID/mem) or open its /proc files; forked children inherit it. The warm process and
  the judge set it; a contestant inherits it from the warm process.
- `lock_down()`, in each contestant before it loads anything:
  - every capability gone (bounding, ambient, inheritable, permitted, effective), so that no exec
    can bring one back;
  - PR_SET_NO_NEW_PRIVS: no setuid binary or file capability ever applies;
  - a seccomp filter that answers EPERM to `ptrace`, `process_vm_readv`, `process_vm_writev`,
    `pidfd_getfd` and the key-ring calls (`add_key`, `request_key`, `keyctl`: kernel key rings
    outlive a process), and to every call of another architecture's ABI (i386 or x32 on x86_64).
    It works where `PR_SET_SECCOMP` does (Linux on x86_64 and aarch64); elsewhere `lock_down`
    says the filter is absent, and the result records it.

Plain ctypes over libc; no torch here.
"""

import ctypes
import errno
import os
import platform
import struct
from types import MappingProxyType

_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_SET_SECCOMP, _PR_CAPBSET_DROP = 1, 4, 22, 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_CAPABILITY_VERSION_3 = 0x20080522
_SECCOMP_MODE_FILTER = 2
_RET_ALLOW, _RET_EPERM = 0x7FFF0000, 0x00050000 | errno.EPERM
_LD_ABS_W, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JGE|K, BPF_RET|K

DENIED = ("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "add_key", "request_key", "keyctl")
# per machine: AUDIT_ARCH, the first number of another ABI on it (or None), the numbers of DENIED in order
_SYSCALLS = MappingProxyType({
    "x86_64": (0xC000003E, 0x40000000, (101, 310, 311, 438, 248, 249, 250)),
    "aarch64": (0xC00000B7, None, (117, 270, 271, 438, 217, 218, 219)),
})  # fmt: skip


def libc():
    """A handle on libc, prctl's five arguments declared: the warm process makes one and every
    contestant it forks uses it (a handle made in a fresh fork costs it ~0.3 ms of page faults)."""
    handle = ctypes.CDLL(None, use_errno=True)
    handle.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    for name in ("unshare", "setns", "mount", "capset"):
        getattr(handle, name)  # looked up now, so that a fork finds them made
    return handle


def _prctl(handle, option: int, *arguments: int) -> int:
    return handle.prctl(option, *arguments, *[0] * (4 - len(arguments)))


def _checked(result: int, what: str) -> None:
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


def non_dumpable() -> None:
    """Make this process (and what it forks) unreachable to processes without capabilities over it."""
    _checked(_prctl(libc(), _PR_SET_DUMPABLE, 0), "prctl(PR_SET_DUMPABLE)")


def die_with_parent(number: int = 9) -> None:
    """Send this process signal `number` (SIGKILL) when the thread that forked it ends (a judge
    forked by a worker; a worker, sent SIGTERM so that it cleans up first)."""
    _checked(_prctl(libc(), _PR_SET_PDEATHSIG, number), "prctl(PR_SET_PDEATHSIG)")


def lock_down(handle, seccomp: bool = True, required: bool = True) -> bool:
    """Give up every privilege for good (see the module docstring); whether the seccomp filter is on.

    `handle`: a `libc()`. `seccomp` False leaves the filter out (a test's twin, to show what the
    filter alone forbids). `required`: a capability left is an OSError; outside the sandbox a user
    has none to drop.
    """
    try:
        _drop_capabilities(handle)
    except OSError:
        if required:
            raise
    _checked(_prctl(handle, _PR_SET_NO_NEW_PRIVS, 1), "prctl(PR_SET_NO_NEW_PRIVS)")
    if not seccomp or not _FILTER:
        return False
    instructions = ctypes.create_string_buffer(_FILTER, len(_FILTER))
    fprog = ctypes.create_string_buffer(struct.pack("@HP", len(_FILTER) // 8, ctypes.addressof(instructions)))
    return _prctl(handle, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(fprog)) == 0  # both buffers live


def _drop_capabilities(handle) -> None:
    """Every capability set empty; the bounding set first, while CAP_SETPCAP lasts."""
    bounding = _capability_set("CapBnd")
    for capability in (number for number in range(64) if bounding >> number & 1):
        _checked(_prctl(handle, _PR_CAPBSET_DROP, capability), f"prctl(PR_CAPBSET_DROP, {capability})")
    _prctl(handle, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL)  # EINVAL before Linux 4.3: there is no ambient set
    header = struct.pack("Ii", _CAPABILITY_VERSION_3, 0)
    data = bytes(24)  # two {effective, permitted, inheritable} u32 triples, all zero
    _checked(handle.capset(ctypes.c_char_p(header), ctypes.c_char_p(data)), "capset")
    if capabilities() != 0:
        raise OSError(errno.EPERM, "capabilities are left after dropping them")


def capabilities() -> int:
    """Every capability this process holds or could take back, as a bit set (0: none): its
    effective, permitted, inheritable, bounding and ambient sets together."""
    return _capability_set("CapEff", "CapPrm", "CapInh", "CapBnd", "CapAmb")


def _capability_set(*names: str) -> int:
    """The union of the named sets of /proc/self/status ("CapBnd", ...)."""
    held = 0
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.split(":")[0] in names:
                held |= int(line.split()[1], 16)
    return held


def _filter_program(arch: int, other_abi: int | None, denied: list[int]) -> list[tuple[int, int, int, int]]:
    """The BPF program: (code, jump if true, jump if false, k) per instruction.

    load arch; another architecture -> EPERM
    load nr; nr >= other_abi -> EPERM (x32); nr in denied -> EPERM; else allow
    """
    count = len(denied)  # a jump skips that many instructions: to EPERM, past the comparisons and ALLOW
    program = [(_LD_ABS_W, 0, 0, 4), (_JEQ_K, 1, 0, arch), (_RET_K, 0, 0, _RET_EPERM), (_LD_ABS_W, 0, 0, 0)]
    if other_abi is not None:
        program.append((_JGE_K, count + 1, 0, other_abi))
    program += [(_JEQ_K, count - index, 0, number) for index, number in enumerate(denied)]
    return program + [(_RET_K, 0, 0, _RET_ALLOW), (_RET_K, 0, 0, _RET_EPERM)]


def _filter_bytes() -> bytes:
    """The filter's BPF program for this machine, as the kernel reads it (b"": none for it)."""
    known = _SYSCALLS.get(platform.machine())
    if known is None:
        return b""
    program = _filter_program(known[0], known[1], list(known[2]))
    return b"".join(struct.pack("HBBI", *instruction) for instruction in program)


_FILTER = _filter_bytes()  # built once: every contestant installs the same
