"""The contestant side: where learner code runs, and nothing else that matters.

`python -m grader.run.contestant FD [MODULE ...]` starts a *warm* process: it imports torch (and
the MODULEs a kata needs, e.g. transformers), then waits on the control socket FD for the judge.
It never runs learner code itself. For each `spawn` it forks a *contestant*: a fresh process
that loads one module from source (a learner file, a misconception variant, a hybrid) and
answers the judge's requests on a socket of its own until that socket closes. `end` kills a
contestant's whole process group and says how it ended.

The contestant process holds no reference, no expected value, no check and no result: only the
module under test, the objects the judge asked it to keep (handles), and what the builders in
`grader.builders` made. What it sends back is data in the wire format (grader.run.wire).

Requests (one message each; every answer is {"value": ...}, or {"raised": {...}} when the
learner's code raised, or {"refused": "..."} when an answer is not plain data):

    call      target (a name in the module, or a handle), method (optional), args, kwargs,
              keep (return a handle instead of data), changes (answer {"result", "changed"}: the
              top-level tensor arguments the call changed in place, [index, value after]),
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

import copy
import faulthandler
import gc
import importlib
import os
import resource
import signal
import socket
import sys
import traceback

import torch

from grader.run import wire
from grader.run.source import load_module

MEMORY_EXIT = 75  # exit status of a contestant that ran out of memory outside any request


# -- the warm process ---------------------------------------------------------------------------


def serve_spawns(control: socket.socket) -> None:
    """Fork a contestant per `spawn`; end them on `end`; exit when the judge goes away."""
    children: set[int] = set()
    while True:
        try:
            _, fds, _, _ = socket.recv_fds(control, 1, 2)
            request = wire.read_message(control.recv)
        except (EOFError, OSError, wire.WireError):
            break
        if request.get("op") == "spawn":
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                control.close()
                _contestant(fds[0], fds[1], request)
            for fd in fds:
                os.close(fd)
            children.add(pid)
            control.sendall(wire.pack({"pid": pid}))
        elif request.get("op") == "end":
            pid = request.get("pid")
            status = _end(pid) if pid in children else {"exit": None}
            children.discard(pid)
            control.sendall(wire.pack(status))
    for pid in children:
        _end(pid)


def _end(pid: int) -> dict:
    """Kill contestant `pid`'s process group; how it ended: {"exit": code} or {"signal": name}."""
    done, status = os.waitpid(pid, os.WNOHANG)
    killed = False
    if not done:
        killed = True
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if not done:
        _, status = os.waitpid(pid, 0)
    if killed:
        return {"killed": True}
    if os.WIFSIGNALED(status):
        return {"signal": signal.Signals(os.WTERMSIG(status)).name}
    return {"exit": os.WEXITSTATUS(status)}


# -- one contestant -------------------------------------------------------------------------------


def _contestant(channel_fd: int, output_fd: int, request: dict) -> None:
    """In the forked child: bound it, load the module, answer requests; never returns."""
    code = 0
    try:
        os.setsid()
        _limit(request.get("memory_mb"), request.get("processes"))
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
        code = MEMORY_EXIT
    except BaseException:
        traceback.print_exc()
        code = 70
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _limit(memory_mb: int | None, processes: int | None) -> None:
    """Address space beyond what the process holds now; for a user other than root, processes."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if memory_mb is not None:
        cap = _address_space() + memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (cap, resource.getrlimit(resource.RLIMIT_AS)[1]))
    if processes is not None and os.geteuid() != 0:
        hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
        cap = _user_tasks() + processes
        resource.setrlimit(resource.RLIMIT_NPROC, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))


def _address_space() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _user_tasks() -> int:
    uid, count = os.geteuid(), 0
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and os.stat(f"/proc/{entry}").st_uid == uid:
                count += len(os.listdir(f"/proc/{entry}/task"))
        except OSError:
            pass
    return count


def learner_line(error: BaseException, filename: str) -> str:
    """' (line 42 in compute_x: `code`)' for the deepest frame in the learner's file, else ''."""
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename == filename]
    if not frames:
        return ""
    frame = frames[-1]
    code = f": `{frame.line.strip()}`" if frame.line else ""
    return f" (line {frame.lineno} in {frame.name}{code})"


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
        before = [value.detach().clone() for value in top] if request.get("changes") else []
        result = fn(*args, **kwargs)
        if request.get("changes"):
            changed = [[i, now.detach()] for i, (was, now) in enumerate(zip(before, top)) if not _same(was, now)]
            return {"value": {"result": result, "changed": changed}}
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


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    a, b = a.detach(), b.detach()
    return a.shape == b.shape and a.dtype == b.dtype and bool(((a == b) | (a.isnan() & b.isnan())).all())


def _assign(target, values: dict) -> None:
    state = dict(target.named_parameters()) | dict(target.named_buffers())
    with torch.no_grad():
        for name, value in values.items():
            state[name].copy_(value)


def main(argv: list[str]) -> None:
    """Warm up (torch and the named modules), then serve spawns on the control socket."""
    control = socket.socket(fileno=int(argv[0]))
    for name in argv[1:]:
        importlib.import_module(name)
    torch.set_num_threads(1)
    gc.collect()
    gc.freeze()
    control.sendall(wire.pack({"ready": True}))
    serve_spawns(control)


if __name__ == "__main__":
    main(sys.argv[1:])
