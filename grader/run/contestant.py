"""The contestant side: where learner code runs, and the warm process that forks it.

`python -P -m grader.run.contestant FD MODE [IMPORT ...]` starts the *warm* process (inside the
sandbox, grader.run.sandbox, when MODE is "sandboxed"; "guarded" outside it): it imports torch
(and the IMPORTs a kata needs, e.g. transformers), makes itself non-dumpable, and answers the
judge on the control socket FD. It never runs learner code. Requests (grader.run.wire):

    BOX    fds: a control socket -> SPAWNED {pid}; the box says READY on that socket
    SPAWN  world {work, size_mb[, seccomp][, lang]}, memory_mb, processes; fds: the contestant's channel and output
           -> SPAWNED {pid} (or NOT_STARTED {why})
    END    pid, ending (its channel closed: it is on its way out), collect (False: kill it and answer
           at once, collecting it later) -> ENDED {end, detail}

A *box* is a fork of the warm process that answers the same requests on a control socket of its
own, so that the judge can put it in a graded file's cgroup once (every process it forks is then
counted there): one per graded file, one per hybrid, one per misconception variant. A box never
runs learner code either. Each SPAWN forks a *contestant* from the box (or the warm process) into a
world of its own: in the sandbox, pid 1 of a pid namespace of its own, with mount, IPC and network
namespaces and fresh tmpfs at its cwd, /tmp and /dev/shm, with the sandbox's read-only binds that lie
beneath them put back (sandbox.enter_world; a virtualenv under /tmp); outside it, its
own session and a fresh temporary folder. Either way it holds a copy of the staged folder `work` (None: an empty folder),
gives up every capability, sets no_new_privs, installs the seccomp filter (grader.run.privileges)
and its resource limits, says READY {seccomp} on its channel (the judge reads its pid from the
kernel then, and puts it in the file's cgroup), and only then loads the module it is sent (LOAD)
and answers requests until the channel closes. Ending a contestant kills it, and with it (pid 1
of its namespace, or the leader of its session outside the sandbox) every process it started.

A contestant holds no reference, no expected value, no check and no result: only the module
under test, the objects the judge asked it to keep (handles), and what the builders in
`grader.builders` made. Requests (answers: VALUE {value}, RAISED {raised}, MISSING {name},
REFUSED {why}):

    LOAD      source, name ("<...>" or a file name in its work folder): LOADED, or RAISED
    CALL      target (a name in the module, or a handle), method (optional), args, kwargs,
              keep (return a handle instead of data), changes (answer {"result", "after"}: the
              top-level tensor arguments as they are after the call, for the judge to compare),
              backward (the output's index path and a cotangent: backpropagate the picked output,
              or sum(output * cotangent); answer {"output", "grads"}: the gradient of every
              top-level argument tensor that required grad, in order, None where none came)
    GET       target, attr: an attribute as data (or a handle with keep)
    BUILD     builder ("module.function" in grader.builders), args, kwargs: a handle
    COPY      target: a deep copy, as a new handle
    STATE     target: the object's state_dict, detached
    PARAMS    target: {name: [requires_grad, grad or None]} for every parameter
    ASSIGN    target, values {name: tensor}: copied in place into the parameters and buffers
    SEED      value: torch.manual_seed(value)
    RNG       torch's global generator state
"""

import ast
import copy
import ctypes
import faulthandler
import gc
import importlib
import importlib.abc
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from types import MappingProxyType

import torch

from grader.content.i18n import set_message_language
from grader.run import limits, privileges, sandbox, wire
from grader.run.source import load_module
from grader.run.warm import GUARDED, SANDBOXED
from grader.run.wire import Answer, End, Op

ENDING_GRACE = 1.0  # seconds a contestant whose channel closed gets to exit by itself


# -- the warm process -----------------------------------------------------------------------------


@dataclass
class _Child:
    status: int | None = None  # its wait status, once reaped
    folder: str | None = None  # outside the sandbox: its temporary work folder, removed when it ends
    dying: bool = False  # killed, not yet collected (an END that did not wait)


class Warm:
    """The loop of the warm process and of a box: fork boxes (BOX) and contestants (SPAWN), end them
    (END), until the judge leaves."""

    def __init__(
        self, control: socket.socket, sandboxed: bool, own_pid_namespace: int | None = None,
        kept: tuple[str, ...] | None = None,
    ):  # fmt: skip
        self.control = control
        self.sandboxed = sandboxed
        # the sandbox's binds that a contestant's fresh tmpfs would cover, found once (sandbox.kept_binds)
        self.kept = (sandbox.kept_binds() if sandboxed else ()) if kept is None else kept
        self.children: dict[int, _Child] = {}
        self.libc = privileges.libc()  # made once: every contestant forked here uses it
        if own_pid_namespace is None and sandboxed:
            own_pid_namespace = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        self.own_pid_namespace = own_pid_namespace

    def serve(self) -> None:
        """Answer requests until the control socket closes; then end every contestant left."""
        while True:
            self._reap()
            try:
                message, fds = wire.receive_fds(self.control, 2)
                handler = _WARM_HANDLERS[wire.op_of(message)]
            except (EOFError, OSError, wire.WireError, KeyError):
                break
            wire.send(self.control, handler(self, message, fds))
        for pid in list(self.children):
            self._finish(pid)

    def spawn(self, message: dict, fds: list[int]) -> dict:
        """Fork a contestant into a world of its own (see the module docstring)."""
        world = message["world"]
        child = _Child()
        if not self.sandboxed:
            child.folder = tempfile.mkdtemp(prefix="kata-contestant-")
            if world.get("work"):
                shutil.copytree(world["work"], child.folder, dirs_exist_ok=True, symlinks=True)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = 0
        try:
            if self.sandboxed:
                sandbox.new_pid_namespace(self.libc)
            pid = os.fork()
        except OSError as error:  # EAGAIN: the process table or the user's cap is full
            _close(fds)
            _remove(child.folder)
            return wire.reply(Answer.NOT_STARTED, why=error.strerror or str(error))
        finally:
            if self.sandboxed and pid != 0:
                sandbox.back_to_own(self.libc, self.own_pid_namespace)
        if pid == 0:
            self.control.close()
            _contestant(*fds, world, message, child.folder, self.libc, self.kept)
        _close(fds)
        self.children[pid] = child
        return wire.reply(Answer.SPAWNED, pid=pid)

    def box(self, message: dict, fds: list[int]) -> dict:
        """Fork a box serving the control socket passed (see the module docstring)."""
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            pid = os.fork()
        except OSError as error:
            _close(fds)
            return wire.reply(Answer.NOT_STARTED, why=error.strerror or str(error))
        if pid == 0:
            code = 0
            try:
                self.control.close()
                control = socket.socket(fileno=fds[0])
                wire.send(control, wire.reply(Answer.READY))  # the judge reads the box's pid with it
                Warm(control, self.sandboxed, self.own_pid_namespace, self.kept).serve()
            except BaseException:
                traceback.print_exc()
                code = 70
            finally:
                os._exit(code)
        _close(fds)
        self.children[pid] = _Child()
        return wire.reply(Answer.SPAWNED, pid=pid)

    def end(self, message: dict, fds: list[int]) -> dict:
        """End contestant (or box) `pid` and say how it ended."""
        pid = message.get("pid")
        if pid not in self.children or self.children[pid].dying:
            return wire.reply(Answer.ENDED, end=End.KILLED.value, detail=None)
        if self.children[pid].status is None and message.get("ending"):
            self.children[pid].status = _wait(pid, ENDING_GRACE)
        if message.get("collect", True):
            end, detail = self._finish(pid)
            return wire.reply(Answer.ENDED, end=end.value, detail=detail)
        self._kill(pid)  # the judge does not need how it ended: its exit goes on while the judge does
        self.children[pid].dying = True
        return wire.reply(Answer.ENDED, end=End.KILLED.value, detail=None)

    def _kill(self, pid: int) -> None:
        """SIGKILL `pid` and every process it started (its namespace, or its session)."""
        try:
            os.kill(pid, signal.SIGKILL) if self.sandboxed else os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def _finish(self, pid: int) -> tuple[End, str | int | None]:
        """Kill `pid` and collect it; how it had ended."""
        child = self.children.pop(pid)
        status = child.status
        if status is None:
            done, status = os.waitpid(pid, os.WNOHANG)
            status = status if done else None
        self._kill(pid)
        if status is None:
            os.waitpid(pid, 0)
        _remove(child.folder)
        if status is None:
            return End.KILLED, None
        if os.WIFSIGNALED(status):
            return End.SIGNAL, signal.Signals(os.WTERMSIG(status)).name
        code = os.WEXITSTATUS(status)
        return (End.MEMORY, code) if code == limits.MEMORY_EXIT else (End.EXIT, code)

    def _reap(self) -> None:
        """Collect contestants that ended, keeping how they ended; forget the killed ones."""
        for pid, child in list(self.children.items()):
            if child.status is None:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    child.status = status
            if child.dying and child.status is not None:
                _remove(child.folder)
                del self.children[pid]


_WARM_HANDLERS = MappingProxyType({Op.BOX: Warm.box, Op.SPAWN: Warm.spawn, Op.END: Warm.end})


def _close(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


def _remove(folder: str | None) -> None:
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def _wait(pid: int, seconds: float) -> int | None:
    """The wait status of `pid` if it exits within `seconds`, else None."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.002)
    return None


# -- one contestant -------------------------------------------------------------------------------


def _contestant(
    channel_fd: int, output_fd: int, world: dict, message: dict, folder: str | None, libc, kept: tuple[str, ...]
) -> None:
    """In the warm process's fork: enter a world of its own, give up every privilege, then serve
    the judge; never returns."""
    code = 0
    try:
        os.setsid()
        _keep_only(channel_fd, output_fd)
        bounds = limits.Limits(message.get("memory_mb"), message.get("processes"))
        tasks = limits.tasks_counted(bounds)  # before its /proc shows nothing but itself
        if folder is None:  # in the sandbox
            sandbox.enter_world(libc, world.get("work"), world["size_mb"], kept)
            folder = sandbox.WORK
        os.chdir(folder)
        os.environ.update(HOME=folder, TMPDIR=folder)
        if world.get("lang"):  # its refusals in the language of the judge that asked for it
            set_message_language(world["lang"])
        tempfile.tempdir = None
        # in the sandbox a capability left is fatal (it never loads its module); seccomp False: a test's twin
        seccomp = privileges.lock_down(libc, world.get("seccomp", True), required=folder == sandbox.WORK)
        limits.apply(bounds, tasks)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        os.close(output_fd)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", closefd=False, encoding="utf-8", errors="replace", buffering=1)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False, encoding="utf-8", errors="replace", buffering=1)  # noqa: SIM115
        faulthandler.enable(sys.stderr)  # a crash shows the learner's line in the captured output
        channel = socket.socket(fileno=channel_fd)
        wire.send(channel, wire.reply(Answer.READY, seccomp=seccomp))
        Server(channel).serve()
    except MemoryError:
        code = limits.MEMORY_EXIT
    except BaseException:
        traceback.print_exc()
        code = 70
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _keep_only(*fds: int) -> None:
    """Close every descriptor the warm process had but 0, 1, 2 and `fds`."""
    edges = [2, *sorted(fds)]
    for low, high in zip(edges, [*edges[1:], 1 << 20]):
        os.closerange(low + 1, high)


def learner_line(error: BaseException, filename: str) -> list | None:
    """[line number, function, code] of the deepest frame in the learner's file, else None
    (the judge words it: grader.judging.outcomes.where_text)."""
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename == filename]
    if not frames:
        return None
    frame = frames[-1]
    return [frame.lineno, frame.name, (frame.line or "").strip()]


def raised(error: BaseException, filename: str) -> dict:
    """What the judge needs to know about an exception from learner code."""
    exit_code = error.code if isinstance(error, SystemExit) else None
    return {
        "type": type(error).__name__,
        "builtin": type(error).__module__ == "builtins",
        "message": _text(error),
        "where": learner_line(error, filename),
        "exit_code": exit_code if exit_code is None or type(exit_code) in (int, str) else repr(exit_code),
        "syntax": _syntax(error) if isinstance(error, SyntaxError) else None,
    }


def _syntax(error: SyntaxError) -> list:
    """[line number, message, the line as written (its indentation kept), the 1-based column or None]."""
    line = (error.text or "").rstrip("\r\n").expandtabs(4) if error.text else ""
    return [error.lineno, error.msg, line, error.offset if isinstance(error.offset, int) else None]


def _text(error: BaseException) -> str:
    try:
        return str(error)
    except BaseException:
        return f"<{type(error).__name__} whose message cannot be shown>"


class Server:
    """Answers the judge's requests about one module loaded from source (the first request, LOAD)."""

    def __init__(self, channel: socket.socket):
        self.channel = channel
        self.filename = "<not loaded>"
        self.module = None
        self.objects: dict[int, object] = {}

    def serve(self) -> None:
        while True:
            try:
                request = wire.receive(self.channel, self._object)
            except EOFError:
                return
            self._send(self.answer(request))

    def _send(self, message: dict) -> None:
        try:
            data = wire.pack(message, self._keep if message.pop("keep", False) else None)
        except wire.WireRefusal as refusal:
            data = wire.pack(wire.reply(Answer.REFUSED, why=str(refusal)))
        self.channel.sendall(data)

    def answer(self, request: dict) -> dict:
        """The answer to one request (see the module docstring)."""
        try:
            handler = _HANDLERS[wire.op_of(request)]
            if self.module is None and handler is not Server.load:
                return wire.reply(Answer.MISSING, name=str(request.get("target")))
            return handler(self, request)
        except MissingName as missing:
            return wire.reply(Answer.MISSING, name=str(missing))
        except BaseException as error:  # learner code raised (or exited, or ran out of memory)
            answer = wire.reply(Answer.RAISED, raised=raised(error, self.filename))
            if isinstance(error, MemoryError):
                traceback.clear_frames(error.__traceback__)
            return answer

    def load(self, request: dict) -> dict:
        name = request["name"]
        in_folder = not name.startswith("<")
        self.filename = os.path.join(os.getcwd(), name) if in_folder else name
        self.module = load_module(
            request["source"], self.filename, "kata_under_test", os.getcwd() if in_folder else None
        )
        gc.collect()
        return wire.reply(Answer.LOADED)

    def get(self, request: dict) -> dict:
        return wire.reply(Answer.VALUE, value=self._target(request, request["attr"]), keep=request.get("keep", False))

    def build(self, request: dict) -> dict:
        module_name, _, function = request["builder"].rpartition(".")
        builder = getattr(importlib.import_module(f"grader.builders.{module_name}"), function)
        return wire.reply(Answer.VALUE, value=builder(*request["args"], **request["kwargs"]), keep=True)

    def copy(self, request: dict) -> dict:
        return wire.reply(Answer.VALUE, value=copy.deepcopy(request["target"]), keep=True)

    def state(self, request: dict) -> dict:
        state = {key: value.detach().clone() for key, value in request["target"].state_dict().items()}
        return wire.reply(Answer.VALUE, value=state)

    def params(self, request: dict) -> dict:
        found = {name: [p.requires_grad, _plain(p.grad)] for name, p in request["target"].named_parameters()}
        return wire.reply(Answer.VALUE, value=found)

    def assign(self, request: dict) -> dict:
        target = request["target"]
        state = dict(target.named_parameters()) | dict(target.named_buffers())
        with torch.no_grad():
            for name, value in request["values"].items():
                state[name].copy_(value)
        return wire.reply(Answer.VALUE, value=None)

    def seed(self, request: dict) -> dict:
        torch.manual_seed(request["value"])
        return wire.reply(Answer.VALUE, value=None)

    def rng(self, request: dict) -> dict:
        return wire.reply(Answer.VALUE, value=torch.random.get_rng_state())

    def call(self, request: dict) -> dict:
        fn = self._target(request, request.get("method"))
        if not callable(fn):
            raise MissingName(request.get("method") or request["target"])
        args, kwargs = request["args"], request["kwargs"]
        top = [value for value in [*args, *kwargs.values()] if type(value) is torch.Tensor]
        result = fn(*args, **kwargs)
        if request.get("changes"):  # the judge compares them with what it sent
            return wire.reply(Answer.VALUE, value={"result": result, "after": [value.detach() for value in top]})
        backward = request.get("backward")
        if backward is None:
            return wire.reply(Answer.VALUE, value=result, keep=request.get("keep", False))
        output = result
        for step in backward["path"]:
            output = output[step]
        if type(output) is not torch.Tensor:
            return wire.reply(Answer.VALUE, value={"output": output, "grads": None})
        cotangent = backward.get("cotangent")
        if cotangent is not None:
            output = (output * cotangent.to(output.dtype)).sum()
        if output.ndim != 0:
            return wire.reply(Answer.VALUE, value={"output": output.detach(), "grads": None})
        if output.requires_grad:
            output.backward()
        leaves = [value for value in top if value.requires_grad]
        return wire.reply(
            Answer.VALUE, value={"output": output.detach(), "grads": [_plain(leaf.grad) for leaf in leaves]}
        )

    def _target(self, request: dict, attr: str | None = None):
        target = request.get("target")
        if target is None:
            target = self.module
        elif isinstance(target, str):
            if not hasattr(self.module, target):
                raise MissingName(target)
            target = getattr(self.module, target)
        if attr is None:
            return target
        if not hasattr(target, attr):
            raise MissingName(attr)
        return getattr(target, attr)

    def _keep(self, value) -> wire.Handle:
        number = len(self.objects) + 1
        self.objects[number] = value
        kinds = tuple(
            name
            for name, cls in (("torch.nn.Module", torch.nn.Module), ("torch.nn.Linear", torch.nn.Linear))
            if isinstance(value, cls)
        )
        return wire.Handle(number, type(value).__name__, kinds + (("callable",) if callable(value) else ()))

    def _object(self, data: dict):
        if data["$handle"] not in self.objects:
            raise wire.WireError(f"no object {data['$handle']}")
        return self.objects[data["$handle"]]


_HANDLERS = MappingProxyType({
    Op.LOAD: Server.load, Op.CALL: Server.call, Op.GET: Server.get, Op.BUILD: Server.build, Op.COPY: Server.copy,
    Op.STATE: Server.state, Op.PARAMS: Server.params, Op.ASSIGN: Server.assign, Op.SEED: Server.seed,
    Op.RNG: Server.rng,
})  # fmt: skip


class MissingName(LookupError):
    """The module (or object) has no attribute of that name."""


def _plain(tensor):
    return None if tensor is None else tensor.detach().clone()


class _RefuseAnswers(importlib.abc.MetaPathFinder):
    """The packages that hold the answers cannot be imported by name. Not a wall: a file that
    removes this finder or opens the reference by path is stopped only by the sandbox."""

    def find_spec(self, name, path, target=None):
        if name.partition(".")[0] in sandbox.HIDDEN_PACKAGES:
            raise ImportError(f"a graded file cannot import {name!r}", name=name)
        return None


_MADV_HUGEPAGE, _MADV_COLLAPSE = 14, 25  # linux/mman.h


def _huge_pages() -> None:
    """Back this process's heap with 2 MiB pages where the kernel can (MADV_COLLAPSE, Linux 6.1+).

    Every contestant is a fork of this process, and a fork copies one page-table entry per 4 KiB
    page it holds: with torch imported, ~150 MB of heap made each fork and exit cost ~9 ms of
    kernel time; in huge pages, ~3 ms. Best effort: where it fails nothing changes.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        with open("/proc/self/maps", encoding="ascii") as maps:
            regions = [line.split() for line in maps]
    except OSError:
        return
    huge = 2**21
    for fields in regions:
        if fields[1].startswith("rw") and (len(fields) == 5 or fields[5] == "[heap]"):
            start, end = (int(address, 16) for address in fields[0].split("-"))
            start, end = -(-start // huge) * huge, end // huge * huge
            if end > start:
                libc.madvise(start, end - start, _MADV_HUGEPAGE)
                libc.madvise(start, end - start, _MADV_COLLAPSE)


def _warm_up_torch() -> None:
    """Let torch read what it reads about the machine once, here: a contestant's /proc holds only its
    own processes (no /proc/cpuinfo), and torch, left to find out there, would pick other kernels."""
    torch.backends.cpu.get_cpu_capability()
    x = torch.ones(4, 4)
    (x @ x).softmax(-1).log().sum()


def main(argv: list[str]) -> None:
    """Warm up (torch and the import statements given, e.g. the reference's), then serve the judge
    on the control socket FD. Only `import` statements are run: anything else is refused.

    MODE "guarded" (outside the sandbox) refuses imports of the packages that hold the answers; in
    the sandbox they are not there to import.
    """
    control = socket.socket(fileno=int(argv[0]))
    mode = argv[1]
    privileges.non_dumpable()
    for statement in argv[2:]:
        tree = ast.parse(statement)
        if all(isinstance(node, ast.Import | ast.ImportFrom) for node in tree.body):
            exec(compile(tree, "<warm imports>", "exec"), {})
    if mode == GUARDED:
        sys.meta_path.insert(0, _RefuseAnswers())
    torch.set_num_threads(1)
    _warm_up_torch()
    gc.collect()
    gc.freeze()
    _huge_pages()
    wire.send(control, wire.reply(Answer.READY))
    Warm(control, sandboxed=mode == SANDBOXED).serve()
    os._exit(0)  # no interpreter teardown (~0.5 s with torch): every contestant it forked has ended


if __name__ == "__main__":
    main(sys.argv[1:])
