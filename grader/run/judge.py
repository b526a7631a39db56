"""The judge's side of a contestant: start the warm process, spawn a contestant per check, talk
to it in the wire format with a deadline, end it, and say how it ended.

    zygote = Zygote.start(["from transformers import GPT2LMHeadModel"])  # imports meanwhile
    learner = zygote.spawn(source, filename, seconds=10)       # a fresh process, 10 s to answer all
    learner.call("compute_group_advantages", rewards, ids)   # plain tensors back, never objects
    model = learner.new("RewardModel", learner.build("reward_model.make_backbone", "lesson", 0), 6)
    model(input_ids, mask); model.method("compute_preference_loss", chosen, rejected)
    learner.close()                                   # kills its whole process group

Anything the contestant answers is read as data by grader.run.wire (never unpickled). A request
that runs past the deadline ends the contestant; so does a contestant that dies, exits or sends
something malformed. Those raise `Stopped` (a BaseException, so that no check's `except
Exception` can take it for the learner's own error), carrying an `Ending`. An exception raised
by learner code arrives as a `LearnerRaised` of the same builtin type (a ValueError stays
catchable as ValueError) with the learner's message.
"""

import builtins
import os
import select
import socket
import struct
import subprocess
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import torch

from grader.content.i18n import say
from grader.run import sandbox, warm, wire
from grader.run.limits import FILE_SIZE_MB, NO_LIMITS, Limits

OUTPUT_KEEP = 3000  # bytes kept from each end of what a contestant prints


@dataclass
class Ending:
    """How a contestant stopped answering."""

    timed_out: bool = False
    exit_code: int | None = None
    signal_name: str | None = None
    where: str = ""  # the learner call that was running, if any
    malformed: str = ""  # why its answer could not be read
    start_error: str = ""  # why no contestant could be started
    lost: bool = False  # the warm process itself was gone (killed by learner code?)
    output: str = ""


class Stopped(BaseException):
    """The contestant stopped answering (timed out, crashed, exited, or lied about the format)."""

    def __init__(self, ending: Ending):
        super().__init__(ending)
        self.ending = ending


class KnownHang(BaseException):
    """A learner function that already ran out of time was called again: not waited for twice."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


class LearnerRaised(Exception):
    """An exception raised by learner code in the contestant; `type_name` is its class's name."""

    type_name = "Exception"
    where = ""  # ' (line 3 in f: `code`)', in the messages' language
    exit_code = None  # SystemExit's code

    def __str__(self) -> str:
        return self.args[0] if self.args else ""


class MissingName(AttributeError):
    """The learner's module or object has no attribute the checks use."""


class Refused(TypeError):
    """The learner's answer was not plain data (a tensor subclass, an object...)."""


@cache
def raised_class(type_name: str, builtin: bool) -> type:
    """One class per exception name: a subclass of the builtin of that name when there is one."""
    base = getattr(builtins, type_name, None) if builtin else None
    if not (isinstance(base, type) and issubclass(base, Exception)) or base is LearnerRaised:
        base = None
    bases = (LearnerRaised, base) if base else (LearnerRaised,)
    return type(type_name, bases, {"type_name": type_name, "__str__": LearnerRaised.__str__})


def where_text(where) -> str:
    """' (line 42 in compute_x: `code`)' from the contestant's [line, function, code]; '' otherwise."""
    if not (isinstance(where, list) and len(where) == 3 and all(isinstance(item, int | str) for item in where)):
        return ""
    line, function, code = where
    shown = say(f": `{code}`", f"：`{code}`") if code else ""
    return say(f" (line {line} in {function}{shown})", f"（第 {line} 行，{function} 中{shown}）")


def to_exception(data: dict) -> LearnerRaised:
    """The judge-side exception for a contestant's {"raised": {...}}."""
    error = raised_class(str(data.get("type")), data.get("builtin") is True)(str(data.get("message", "")))
    error.where = where_text(data.get("where"))
    error.exit_code = data.get("exit_code")
    error.syntax = data.get("syntax")
    return error


class _Asker:
    """One request at a time over a control socket (with descriptors passed alongside)."""

    control: socket.socket
    alive: bool = True

    def _ask(self, request: dict, fds: list[int] = ()) -> dict:
        try:
            socket.send_fds(self.control, [b"R"], list(fds))
            self.control.sendall(wire.pack(request))
            return wire.read_message(self.control.recv)
        except (OSError, EOFError, wire.WireError):  # the process on the other side is gone
            self.alive = False
            return {"lost": True}


class Zygote(_Asker):
    """The warm process: torch imported, never runs learner code, forks one box per graded file.

    Sandboxed (grader.run.sandbox), it runs inside bwrap and sees `drop` at /kata/drop: the folder under
    which the judge puts each file's copy of the student's folder.
    """

    def __init__(self, process: subprocess.Popen, control: socket.socket, imports: list[str], limits: Limits,
                 drop: Path | None):  # fmt: skip
        self.process = process
        self.control = control
        self.imports = imports
        self.limits = limits
        self.drop = drop
        self.ready = False
        self.alive = True  # False once its control channel broke (it died, or was killed)

    @property
    def sandboxed(self) -> bool:
        return self.drop is not None

    @classmethod
    def start(cls, imports: list[str] = (), limits: Limits = NO_LIMITS, drop: Path | None = None) -> "Zygote":
        """Start the warm process (in the sandbox when `drop` is given); it imports torch and runs the
        `imports` (statements such as "from transformers import GPT2LMHeadModel") while the caller goes on."""
        process, control = warm.start(imports, drop)
        return cls(process, control, list(imports), limits, drop)

    def restart(self) -> "Zygote":
        """End this warm process and start an equal one (after a judge left it mid-conversation)."""
        self.close()
        fresh = Zygote.start(self.imports, self.limits, self.drop)
        fresh.wait_ready()
        return fresh

    def wait_ready(self) -> None:
        """Block until the warm process has imported what it needs (before forking judges that share it)."""
        if not self.ready:
            try:
                message = wire.read_message(self.control.recv)
            except (OSError, EOFError, wire.WireError):
                message = {}
            if message.get("ready") is not True:
                self.alive = False
                raise Stopped(Ending(start_error="the contestants' warm process did not start"))
            self.ready = True

    def open_file(self, folder: Path, tmpfs_mb: int = FILE_SIZE_MB, seconds: float = 30.0) -> "FileBox":
        """A box for one graded file, holding `folder` (the judge's copy of the student's files).

        Sandboxed, `folder` lies under the drop folder and the box copies it into a private tmpfs of
        `tmpfs_mb`; otherwise the box works in `folder` itself. The box's pid as the judge sees it
        (for a cgroup) comes with its first message, from the kernel.
        """
        self.wait_ready()
        ours, theirs = socket.socketpair()
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        work = f"{sandbox.DROP}/{folder.relative_to(self.drop).as_posix()}" if self.sandboxed else str(folder)
        answer = self._ask({"op": "open", "sandboxed": self.sandboxed, "work": work, "tmpfs_mb": tmpfs_mb},
                           [theirs.fileno()])  # fmt: skip
        theirs.close()
        if "pid" not in answer:
            ours.close()
            raise Stopped(Ending(lost=bool(answer.get("lost")), start_error=str(answer.get("start_error", ""))))
        box = FileBox(self, answer["pid"], ours, self.limits)
        box.hello(time.monotonic() + seconds)
        return box

    def end(self, pid: int, ending: bool = False) -> dict:
        return self._ask({"op": "end", "pid": pid, "ending": ending})

    def close(self, wait: bool = True) -> None:
        """Close its control socket, on which it ends; `wait` for it to be gone."""
        self.control.close()
        if not wait or self.process is None:  # None: the caller that started it waits for it
            return
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        except ChildProcessError:  # a judge forked from the process that started it
            pass


class FileBox(_Asker):
    """One graded file's box in the warm process: it forks a fresh contestant per check."""

    def __init__(self, zygote: Zygote, pid: int, control: socket.socket, limits: Limits):
        self.zygote = zygote
        self.pid = pid  # as the warm process knows it
        self.host_pid: int | None = None  # as this process knows it
        self.control = control
        self.limits = limits
        self.alive = True

    def hello(self, deadline: float) -> None:
        """Read the box's first message and, with it, its pid here (SCM_CREDENTIALS)."""
        self.control.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            first, ancillary, _, _ = self.control.recvmsg(1, socket.CMSG_SPACE(struct.calcsize("iII")))
            if first != b"R":
                raise EOFError("no greeting")
            message = wire.read_message(self.control.recv)
        except (OSError, EOFError, wire.WireError) as error:
            self.close()
            raise Stopped(Ending(start_error=f"the file's box did not start ({error})")) from None
        finally:
            self.control.settimeout(None)
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                self.host_pid = struct.unpack("iII", data[: struct.calcsize("iII")])[0]
        if message.get("ready") is not True:
            self.close()
            raise Stopped(Ending(start_error=f"the file's box did not start: {message.get('error', 'no reason')}"))

    def spawn(self, source: str, filename: str, seconds: float, hung: set[str] | None = None) -> "Contestant":
        """A fresh contestant with `source` loaded (or a load error), answering until `close()`.

        It has `seconds` from now to load and answer everything. `hung` names learner functions
        that already ran out of time: calling one again raises KnownHang at once (share one set
        across the checks of one file).
        """
        ours, theirs = socket.socketpair()
        out_r, out_w = os.pipe()
        request = {"op": "spawn", "source": source, "filename": filename}
        request |= {"memory_mb": self.limits.memory_mb, "processes": self.limits.processes}
        answer = self._ask(request, [theirs.fileno(), out_w])
        theirs.close()
        os.close(out_w)
        if "pid" not in answer:
            os.close(out_r)
            ours.close()
            raise Stopped(Ending(lost=bool(answer.get("lost")), start_error=str(answer.get("start_error", ""))))
        pid, deadline = answer["pid"], time.monotonic() + seconds
        return Contestant(self, pid, ours, out_r, filename, deadline, set() if hung is None else hung)

    def end(self, pid: int, ending: bool = False) -> dict:
        """Kill contestant `pid`'s process group; {"killed": True}, {"exit": code} or {"signal": name}.

        `ending`: its channel closed, so it is exiting by itself: wait a moment for how it ended.
        """
        return self._ask({"op": "end", "pid": pid, "ending": ending})

    def close(self) -> None:
        """End the box and everything it started (waits until the warm process has collected it)."""
        if self.control.fileno() == -1:
            return
        self.control.close()
        self.zygote.end(self.pid, ending=True)


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


@dataclass
class Contestant:
    """One module under test in its own process. Every method returns plain data (or a Remote)."""

    box: FileBox
    pid: int
    channel: socket.socket
    output_fd: int
    filename: str
    deadline: float
    hung: set[str]
    load_error: dict | None = None
    ending: Ending | None = None
    _output: _Output = field(default_factory=_Output)

    def __post_init__(self):
        hello = self._receive("")
        if not hello.get("loaded"):
            self.load_error = hello.get("raised") or {"type": "Exception", "message": "the file did not load"}

    # -- the module ---------------------------------------------------------------------------
    def call(self, name: str, *args, **kwargs):
        """`module.name(*args, **kwargs)`, its result as data (see `answer` for the rest)."""
        return self.answer({"op": "call", "target": name, "args": list(args), "kwargs": kwargs}, name)

    def call_and_inputs(self, name: str, *args, **kwargs) -> tuple[object, list]:
        """(result, the top-level tensor arguments as they were after the call), to see in-place changes."""
        request = {"op": "call", "target": name, "args": list(args), "kwargs": kwargs, "changes": True}
        answer = self.answer(request, name)
        return answer["result"], answer["after"]

    def new(self, name: str, *args, **kwargs) -> "Remote":
        """An object of the module's class (or any callable's result), kept in the contestant."""
        return self.answer({"op": "call", "target": name, "args": list(args), "kwargs": kwargs, "keep": True}, name)

    def value(self, name: str):
        """A module-level value (e.g. a dict of answers) as data."""
        return self.answer({"op": "get", "target": None, "attr": name}, name)

    def backward(self, target, args: tuple, kwargs: dict, path=(), cotangent=None, method: str | None = None):
        """Call, pick `result[path]`, backpropagate (sum(output * cotangent) when given).

        Returns {"output": the picked output, "grads": the gradient of each argument tensor that
        requires grad, in argument order (None where none arrived)}, or grads None when the picked
        output is not a tensor.
        """
        request = {"op": "call", "target": target, "method": method, "args": list(args), "kwargs": kwargs}
        request["backward"] = {"path": list(path), "cotangent": cotangent}
        return self.answer(request, method or target)

    def build(self, builder: str, *args, **kwargs) -> "Remote":
        """An object made in the contestant by `grader.builders.<builder>` (a trusted fixture)."""
        return self.answer({"op": "build", "builder": builder, "args": list(args), "kwargs": kwargs}, builder)

    def manual_seed(self, seed: int) -> None:
        self.answer({"op": "seed", "value": seed}, "torch.manual_seed")

    def rng_state(self) -> torch.Tensor:
        return self.answer({"op": "rng"}, "torch.random.get_rng_state")

    # -- the exchange -------------------------------------------------------------------------
    def answer(self, request: dict, name: str):
        """Send one request; the value of the answer, or raise what the learner's code raised."""
        label = name if isinstance(name, str) else repr(name)
        if label in self.hung:
            raise KnownHang(label)
        self._send(request, label)
        reply = self._receive(label)
        if "raised" in reply:
            raise to_exception(reply["raised"])
        if "missing" in reply:
            raise MissingName(str(reply["missing"]))
        if "refused" in reply:
            raise Refused(str(reply["refused"]))
        if "value" not in reply:
            self._stop(Ending(malformed="an answer without a value", where=label))
        return reply["value"]

    def _send(self, request: dict, label: str) -> None:
        try:
            data = wire.pack(request)
        except wire.WireRefusal as error:
            raise TypeError(f"the check passed something that cannot cross: {error}") from None
        try:
            self.channel.sendall(data)
        except OSError:
            self._stop(Ending(where=label))

    def _receive(self, label: str) -> dict:
        buffer = bytearray()
        reader = select.poll()
        reader.register(self.channel, select.POLLIN)
        reader.register(self.output_fd, select.POLLIN)
        open_fds = {self.channel.fileno(), self.output_fd}
        while True:
            need = _message_size(buffer)
            if need is not None and len(buffer) >= need:
                try:
                    return wire.unpack_body(*_split(buffer), handle=self._handle)
                except wire.WireError as error:
                    self._stop(Ending(malformed=str(error), where=label))
            left = self.deadline - time.monotonic()
            if left <= 0:
                self.hung.add(label)
                self._stop(Ending(timed_out=True, where=label))
            for fd, _ in reader.poll(min(left, 1.0) * 1000):
                if fd == self.output_fd:
                    chunk = os.read(fd, 65536)
                    if chunk:
                        self._output.add(chunk)
                    else:
                        reader.unregister(fd)
                        open_fds.discard(fd)
                    continue
                chunk = self.channel.recv(1 << 20)
                if not chunk:
                    self._stop(Ending(where=label))
                buffer += chunk
                if (_message_size(buffer) or 0) > wire.MAX_JSON + wire.MAX_BLOB:
                    self._stop(Ending(malformed="an answer over the size limit", where=label))

    def _handle(self, data: dict) -> "Remote":
        kinds = data.get("kinds", [])
        if not isinstance(kinds, list) or not all(isinstance(kind, str) for kind in kinds):
            raise wire.WireError("a handle's kinds are not a list of names")
        return Remote(self, data["$handle"], str(data.get("type", "object")), tuple(kinds))

    def _stop(self, ending: Ending):
        """End the process and raise Stopped with how it ended."""
        status = self._end(ending=not ending.timed_out and not ending.malformed)
        ending.lost = status.get("lost", False)
        if not ending.timed_out and not ending.malformed:
            ending.exit_code = status.get("exit")
            ending.signal_name = status.get("signal")
        ending.output = self.output
        self.ending = ending
        raise Stopped(ending)

    def _end(self, ending: bool = False) -> dict:
        if self.pid is None:
            return {}
        status = self.box.end(self.pid, ending)
        self.pid = None
        self.channel.close()
        self._drain()
        os.close(self.output_fd)
        return status

    def _drain(self) -> None:
        """What the process printed and is still in the pipe (a daemon holding it is not waited for)."""
        os.set_blocking(self.output_fd, False)
        try:
            while chunk := os.read(self.output_fd, 65536):
                self._output.add(chunk)
                if self._output.total > 64 * 2**20:
                    break
        except BlockingIOError:
            pass

    @property
    def output(self) -> str:
        return self._output.text()

    def close(self) -> None:
        """End the process (its whole group); what it printed stays in `output`."""
        self._end()


def _message_size(buffer: bytearray) -> int | None:
    if len(buffer) < 4:
        return None
    (size,) = struct.unpack(">I", buffer[:4])
    if len(buffer) < 4 + size + 8:
        return 4 + size + 8
    (blob,) = struct.unpack(">Q", buffer[4 + size : 12 + size])
    return 12 + size + blob


def _split(buffer: bytearray) -> tuple[bytes, bytes]:
    (size,) = struct.unpack(">I", buffer[:4])
    return bytes(buffer[4 : 4 + size]), bytes(buffer[12 + size :])


class Remote(wire.Handle):
    """An object that lives in a contestant (a model, a learner's class instance)."""

    def __init__(self, contestant: Contestant, number: int, type_name: str, kinds: tuple[str, ...] = ()):
        super().__init__(number, type_name, kinds)
        self.contestant = contestant

    def is_a(self, kind: str) -> bool:
        """What the contestant said it is: "torch.nn.Module", "torch.nn.Linear", "callable"."""
        return kind in self.kinds

    def __call__(self, *args, **kwargs):
        return self.method(None, *args, **kwargs)

    def method(self, name: str | None, *args, keep: bool = False, **kwargs):
        request = {"op": "call", "target": self, "method": name, "args": list(args), "kwargs": kwargs}
        return self.contestant.answer(request | {"keep": keep}, f"{self.type_name}.{name or '__call__'}")

    def backward(self, name: str | None, *args, path=(), cotangent=None, **kwargs):
        """See Contestant.backward, for a method of this object (`None`: calling it)."""
        return self.contestant.backward(self, args, kwargs, path, cotangent, method=name)

    def get(self, attr: str, keep: bool = False):
        request = {"op": "get", "target": self, "attr": attr, "keep": keep}
        return self.contestant.answer(request, f"{self.type_name}.{attr}")

    def copy(self) -> "Remote":
        return self.contestant.answer({"op": "copy", "target": self}, "copy.deepcopy")

    def state(self) -> dict:
        """The object's state_dict, as plain tensors."""
        return self.contestant.answer({"op": "state", "target": self}, f"{self.type_name}.state_dict")

    def params(self) -> dict:
        """{name: (requires_grad, grad or None)} for every parameter."""
        found = self.contestant.answer({"op": "params", "target": self}, f"{self.type_name}.parameters")
        return {name: tuple(entry) for name, entry in found.items()}

    def assign(self, values: dict) -> None:
        """Copy `values` ({name: tensor}) in place into the object's parameters and buffers."""
        self.contestant.answer({"op": "assign", "target": self, "values": values}, f"{self.type_name}.assign")
