"""The contestant side: where learner code runs, and nothing else that matters.

`python -m grader.run.contestant FD [MODULE ...]` starts a *warm* process (inside the sandbox,
grader.run.sandbox, where there is one): it imports torch (and the MODULEs a kata needs, e.g.
transformers), then waits on the control socket FD for the judge. It never runs learner code.
For each graded file, `open` forks the file's *box*: in the sandbox, a process in user, pid and
mount namespaces of the file's own with a private capped tmpfs as its cwd (pid 1 there, so that
when it ends, everything the file started ends); otherwise a plain fork in the judge's scratch
folder. For each check the box's `spawn` forks a *contestant*: a fresh process that loads one
module from source (a learner file, a misconception variant, a hybrid) and answers the judge's
requests on a socket of its own until that socket closes. `end` kills a contestant's whole
process group and says how it ended; ending the box ends every process the file started.

The contestant process holds no reference, no expected value, no check and no result: only the
module under test, the objects the judge asked it to keep (handles), and what the builders in
`grader.builders` made. What it sends back is data in the wire format (grader.run.wire).

Requests (one message each; every answer is {"value": ...}, or {"raised": {...}} when the
learner's code raised, or {"refused": "..."} when an answer is not plain data):

    call      target (a name in the module, or a handle), method (optional), args, kwargs,
              keep (return a handle instead of data), changes (answer {"result", "after"}: the
              top-level tensor arguments as they are after the call, for the judge to compare),
              backward (the output's index path and a cotangent: backpropagate the picked output,
              or sum(output * cotangent); answer {"output", "grads"}: the gradient of every
              top-level argument tensor that required grad, in order, None where none came)
    get       target, attr: an attribute as data (or a handle with keep)
    build     builder ("module.function" in grader.builders), args, kwargs: a handle
    copy      target: a deep copy, as a new handle
    state     target: the object's state_dict, detached
    params    target: {name: [requires_grad, grad or None]} for every parameter
    assign    target, values {name: tensor}: copied in place into the parameters and buffers
    seed      value: torch.manual_seed(value)
    rng       torch's global generator state
"""

import ast
import copy
import ctypes
import faulthandler
import gc
import importlib
import importlib.abc
import os
import signal
import socket
import sys
import time
import traceback

import torch

from grader.run import limits, sandbox, wire
from grader.run.source import load_module

# -- the warm process, and one file's box -------------------------------------------------------


def serve(control: socket.socket, pid1: bool = False) -> None:
    """Answer `open` (the warm process: fork a file's box) or `spawn` and `end` (a file's box).

    Exits the loop when the judge closes `control`; every process forked here is ended then. In a
    sandboxed box (`pid1`: pid 1 of the file's namespace) orphans become ours and are collected
    too, and when this process exits the kernel kills every process left in the namespace.
    """
    children: dict[int, int | None] = {}  # pid -> wait status once reaped
    while True:
        _reap(children, everyone=pid1)
        try:
            _, fds, _, _ = socket.recv_fds(control, 1, 2)
            request = wire.read_message(control.recv)
        except (EOFError, OSError, wire.WireError):
            break
        op = request.get("op")
        if op in ("open", "spawn"):
            sys.stdout.flush()
            sys.stderr.flush()
            try:
                pid = os.fork()
            except OSError as error:  # EAGAIN: the box's process cap is full (a fork bomb left its processes)
                for fd in fds:
                    os.close(fd)
                control.sendall(wire.pack({"start_error": error.strerror or str(error)}))
                continue
            if pid == 0:
                control.close()
                (_file_box if op == "open" else _contestant)(*fds, request)
            for fd in fds:
                os.close(fd)
            children[pid] = None
            control.sendall(wire.pack({"pid": pid}))
        elif op == "end":
            pid = request.get("pid")
            if pid in children:
                status = children.pop(pid)
                if status is None and request.get("ending"):  # its channel closed: it is on its way out
                    status = _wait(pid, 1.0)
                control.sendall(wire.pack(_end(pid, status)))
            else:
                control.sendall(wire.pack({"exit": None}))
    for pid, status in children.items():
        _end(pid, status)


def _file_box(channel_fd: int, request: dict) -> None:
    """In the warm process's fork: become one file's box, then serve its spawns; never returns.

    Sandboxed, it enters namespaces of its own and forks the box proper as pid 1 there, with
    the file's private tmpfs as cwd; this process only waits for it. Otherwise the box is this
    process, in the judge's scratch folder.
    """
    code = 0
    channel = socket.socket(fileno=channel_fd)
    try:
        os.setsid()
        if request["sandboxed"]:
            sandbox.enter_file_namespaces()
            child = os.fork()
            if child:
                channel.close()
                code = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
                return
            sandbox.private_work(request["work"], request["tmpfs_mb"])
            work = sandbox.WORK
        else:
            work = request["work"]
        os.chdir(work)
        os.environ.update(HOME=work, TMPDIR=work)
        channel.sendall(b"R" + wire.pack({"ready": True}))  # the kernel gives the judge our pid with the "R"
        serve(channel, pid1=request["sandboxed"])
    except BaseException as error:
        try:
            channel.sendall(b"R" + wire.pack({"error": f"{type(error).__name__}: {error}"}))
        except OSError:
            pass
        code = 71
    finally:
        os._exit(code)


def _end(pid: int, status: int | None) -> dict:
    """Kill contestant `pid`'s process group; how it ended: {"killed": True}, {"exit": code} or {"signal": name}."""
    if status is None:
        done, status = os.waitpid(pid, os.WNOHANG)
        status = status if done else None
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if status is None:
        os.waitpid(pid, 0)
        return {"killed": True}
    if os.WIFSIGNALED(status):
        return {"signal": signal.Signals(os.WTERMSIG(status)).name}
    return {"exit": os.WEXITSTATUS(status)}


def _wait(pid: int, seconds: float) -> int | None:
    """The wait status of `pid` if it exits within `seconds`, else None."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.002)
    return None


def _reap(children: dict[int, int | None], everyone: bool = False) -> None:
    """Collect contestants that ended by themselves (or by a box), keeping how they ended.

    `everyone`: as pid 1, also collect the orphans the file's processes left (they become ours).
    """
    for pid, status in children.items():
        if status is None:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                children[pid] = status
    while everyone:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not pid:
            return
        if pid in children:
            children[pid] = status


# -- one contestant -------------------------------------------------------------------------------


def _contestant(channel_fd: int, output_fd: int, request: dict) -> None:
    """In the file box's fork: bound it, load the module, answer requests; never returns."""
    code = 0
    try:
        os.setsid()
        limits.apply(limits.Limits(request.get("memory_mb"), request.get("processes")))
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
        Server(channel, request["source"], request["filename"]).serve()
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
        "syntax": [error.lineno, error.msg, (error.text or "").strip()] if isinstance(error, SyntaxError) else None,
    }


def _text(error: BaseException) -> str:
    try:
        return str(error)
    except BaseException:
        return f"<{type(error).__name__} whose message cannot be shown>"


class Server:
    """Answers the judge's requests about one module loaded from source."""

    def __init__(self, channel: socket.socket, source: str, filename: str):
        self.channel = channel
        self.filename = filename
        self.objects: dict[int, object] = {}
        try:
            self.module = load_module(source, filename, "kata_under_test")
        except BaseException as error:
            self.module = None
            self.load_error = raised(error, filename)
            if isinstance(error, MemoryError):
                traceback.clear_frames(error.__traceback__)
        else:
            self.load_error = None

    def serve(self) -> None:
        gc.collect()
        self._send({"loaded": self.load_error is None, "raised": self.load_error})
        while True:
            try:
                request = wire.read_message(self.channel.recv, self._object)
            except EOFError:
                return
            self._send(self.answer(request))

    def _send(self, message: dict) -> None:
        try:
            data = wire.pack(message, self._keep if message.pop("keep", False) else None)
        except wire.WireRefusal as refusal:
            data = wire.pack({"refused": str(refusal)})
        self.channel.sendall(data)

    def answer(self, request: dict) -> dict:
        op = request.get("op")
        try:
            if op == "call":
                return self._call(request)
            if op == "get":
                return {"value": self._target(request, request["attr"]), "keep": request.get("keep", False)}
            if op == "build":
                module_name, _, function = request["builder"].rpartition(".")
                builder = getattr(importlib.import_module(f"grader.builders.{module_name}"), function)
                return {"value": builder(*request["args"], **request["kwargs"]), "keep": True}
            if op == "copy":
                return {"value": copy.deepcopy(request["target"]), "keep": True}
            if op == "state":
                return {"value": {k: v.detach().clone() for k, v in request["target"].state_dict().items()}}
            if op == "params":
                params = request["target"].named_parameters()
                return {"value": {n: [p.requires_grad, _plain(p.grad)] for n, p in params}}
            if op == "assign":
                return {"value": _assign(request["target"], request["values"])}
            if op == "seed":
                torch.manual_seed(request["value"])
                return {"value": None}
            if op == "rng":
                return {"value": torch.random.get_rng_state()}
        except MissingName as missing:
            return {"missing": str(missing)}
        except BaseException as error:  # learner code raised (or exited, or ran out of memory)
            answer = {"raised": raised(error, self.filename)}
            if isinstance(error, MemoryError):
                traceback.clear_frames(error.__traceback__)
            return answer
        return {"refused": f"unknown request {op!r}"}

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

    def _call(self, request: dict) -> dict:
        fn = self._target(request, request.get("method"))
        if not callable(fn):
            raise MissingName(request.get("method") or request["target"])
        args, kwargs = request["args"], request["kwargs"]
        top = [value for value in [*args, *kwargs.values()] if type(value) is torch.Tensor]
        result = fn(*args, **kwargs)
        if request.get("changes"):  # the judge compares them with what it sent
            return {"value": {"result": result, "after": [value.detach() for value in top]}}
        backward = request.get("backward")
        if backward is None:
            return {"value": result, "keep": request.get("keep", False)}
        output = result
        for step in backward["path"]:
            output = output[step]
        if type(output) is not torch.Tensor:
            return {"value": {"output": output, "grads": None}}
        cotangent = backward.get("cotangent")
        if cotangent is not None:
            output = (output * cotangent.to(output.dtype)).sum()
        if output.ndim != 0:
            return {"value": {"output": output.detach(), "grads": None}}
        if output.requires_grad:
            output.backward()
        leaves = [value for value in top if value.requires_grad]
        return {"value": {"output": output.detach(), "grads": [_plain(leaf.grad) for leaf in leaves]}}

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


class MissingName(LookupError):
    """The module (or object) has no attribute of that name."""


def _plain(tensor):
    return None if tensor is None else tensor.detach().clone()


def _assign(target, values: dict) -> None:
    state = dict(target.named_parameters()) | dict(target.named_buffers())
    with torch.no_grad():
        for name, value in values.items():
            state[name].copy_(value)


class _RefuseAnswers(importlib.abc.MetaPathFinder):
    """The packages that hold the answers cannot be imported by name. Not a wall: a file that
    removes this finder or opens the reference by path is stopped only by the sandbox."""

    def find_spec(self, name, path, target=None):
        if name.partition(".")[0] in ("reference", "katas"):
            raise ImportError(f"a graded file cannot import {name!r}", name=name)
        return None


_MADV_HUGEPAGE, _MADV_COLLAPSE = 14, 25  # linux/mman.h


def _huge_pages() -> None:
    """Back this process's heap with 2 MiB pages where the kernel can (MADV_COLLAPSE, Linux 6.1+).

    Every contestant is a fork of a fork of this process, and a fork copies one page-table entry
    per 4 KiB page it holds: with torch imported, ~150 MB of heap made each fork and exit cost
    ~9 ms of kernel time; in huge pages, ~3 ms. Best effort: where it fails nothing changes.
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


def main(argv: list[str]) -> None:
    """Warm up (torch and the import statements given, e.g. the reference's), then serve the judge
    on the control socket FD. Only `import` statements are run: anything else is refused.

    `--guard` (outside the sandbox) refuses imports of the packages that hold the answers; in the
    sandbox they are not there to import.
    """
    control = socket.socket(fileno=int(argv[0]))
    for statement in argv[1:]:
        tree = ast.parse(statement) if statement != "--guard" else ast.Module([], [])
        if all(isinstance(node, ast.Import | ast.ImportFrom) for node in tree.body):
            exec(compile(tree, "<warm imports>", "exec"), {})
    if "--guard" in argv:
        sys.meta_path.insert(0, _RefuseAnswers())
    torch.set_num_threads(1)
    gc.collect()
    gc.freeze()
    _huge_pages()
    control.sendall(wire.pack({"ready": True}))
    serve(control)
    os._exit(0)  # no interpreter teardown (~0.5 s with torch): every box it forked has ended


if __name__ == "__main__":
    main(sys.argv[1:])
