"""What a contestant may not do to other processes: the privileges every contestant gives up
before it loads any learner code (grader.run.contestant), and the flag that keeps the warm
process and the judge out of reach.

- `die_with_parent()`: a forked judge does not outlive the worker that forked it.
- `non_dumpable()`: no process without capabilities over this one may ptrace it, read or write its
  memory (/proc/PID/mem) or open its /proc files; forked children inherit it. The warm process and
  the judge set it; a contestant inherits it from the warm process.
- `drop_capabilities()`: every capability gone (bounding, ambient, inheritable, permitted,
  effective), so that no exec can bring one back.
- `no_new_privileges()`: PR_SET_NO_NEW_PRIVS: no setuid binary or file capability ever applies.
- `seccomp_filter()`: a seccomp filter that answers EPERM to `ptrace`, `process_vm_readv`,
  `process_vm_writev`, `pidfd_getfd` and the key-ring calls (`add_key`, `request_key`,
  `keyctl`: kernel key rings outlive a process), and to every call of another architecture's ABI
  (i386 or x32 on x86_64). It works where `PR_SET_SECCOMP` does (Linux on x86_64 and aarch64);
  elsewhere it returns False and the result says the filter is absent.

Plain ctypes over libc; no torch here.
"""

import ctypes
import errno
import os
import platform
import struct
from types import MappingProxyType

_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_CAPBSET_DROP, _PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP = 1, 4, 24, 38, 22
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


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _prctl(*args: int) -> int:
    libc = _libc()
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return libc.prctl(*args, *[0] * (5 - len(args)))


def _checked(result: int, what: str) -> None:
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


def non_dumpable() -> None:
    """Make this process (and what it forks) unreachable to processes without capabilities over it."""
    _checked(_prctl(_PR_SET_DUMPABLE, 0), "prctl(PR_SET_DUMPABLE)")


def die_with_parent() -> None:
    """SIGKILL this process when the thread that forked it ends (a judge forked by a worker)."""
    _checked(_prctl(_PR_SET_PDEATHSIG, 9), "prctl(PR_SET_PDEATHSIG)")


def dumpable() -> None:
    """Undo `non_dumpable` (a contestant writing its own uid map, before any learner code runs)."""
    _checked(_prctl(_PR_SET_DUMPABLE, 1), "prctl(PR_SET_DUMPABLE)")


def drop_capabilities() -> None:
    """Give up every capability, for good; OSError when one is left."""
    for capability in range(64):
        if _prctl(_PR_CAPBSET_DROP, capability) != 0:
            if ctypes.get_errno() == errno.EINVAL:  # past the last capability this kernel knows
                break
            if _has_bounding(capability):
                _checked(-1, f"prctl(PR_CAPBSET_DROP, {capability})")
    _prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL)  # EINVAL before Linux 4.3: there is no ambient set
    header = struct.pack("Ii", _CAPABILITY_VERSION_3, 0)
    data = bytes(24)  # two {effective, permitted, inheritable} u32 triples, all zero
    _checked(_libc().capset(ctypes.c_char_p(header), ctypes.c_char_p(data)), "capset")
    if capabilities() != 0:
        raise OSError(errno.EPERM, "capabilities are left after dropping them")


def _has_bounding(capability: int) -> bool:
    return _prctl(23, capability) == 1  # PR_CAPBSET_READ


def capabilities() -> int:
    """This process's effective capabilities, as a bit set (0: none)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return 0


def no_new_privileges() -> None:
    """No exec may ever grant this process (or its descendants) a privilege."""
    _checked(_prctl(_PR_SET_NO_NEW_PRIVS, 1), "prctl(PR_SET_NO_NEW_PRIVS)")


def seccomp_filter() -> bool:
    """Install the filter (see the module docstring) on this process and its descendants; whether it
    could be (False where this machine's architecture or kernel has no seccomp filters).

    Needs `no_new_privileges()` first. A filter cannot be removed: every later process inherits it.
    """
    known = _SYSCALLS.get(platform.machine())
    if known is None:
        return False
    arch, other_abi, numbers = known
    program = _filter_program(arch, other_abi, list(numbers))
    code = b"".join(struct.pack("HBBI", *instruction) for instruction in program)
    instructions = ctypes.create_string_buffer(code, len(code))
    fprog = ctypes.create_string_buffer(struct.pack("@HP", len(program), ctypes.addressof(instructions)))
    return _prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(fprog)) == 0  # both buffers live until here


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
