"""The judge's side of the contestants: ask the warm process for a contestant, talk to it in the
wire format with a deadline, end it, and say how it ended.

    zygote = Zygote(process, control, sandboxed=True)          # the warm process (grader.run.arena)
    box = zygote.box(cgroup)                                   # a fork of it, in a file's cgroup
    learner = box.spawn(world, seconds=10)                     # a fresh process in a world of its own
    learner.load(source, "grpo_loss.py")                       # its module under test
    learner.call("compute_group_advantages", rewards, ids)     # plain tensors back, never objects
    model = learner.new("RewardModel", learner.build("reward_model.make_backbone", "lesson", 0), 6)
    model(input_ids, mask); model.method("compute_preference_loss", chosen, rejected)
    learner.close()                                            # kills it and everything it started

Anything the contestant answers is read as data by grader.run.wire (never unpickled). A request
that runs past the deadline ends the contestant; so does a contestant that dies, exits or sends
something malformed. Those raise `Stopped` (a BaseException, so that no check's `except
Exception` can take it for the learner's own error), carrying an `Ending` of one kind
(wire.End), set by whoever observed it: the judge (a deadline, a malformed answer, the warm
process gone) or the warm process (an exit, a signal, memory). An exception raised by learner
code arrives as a `LearnerRaised` of the same builtin type (a ValueError stays catchable as
ValueError) with the learner's message.
"""

import builtins
import os
import select
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field

import torch

from grader.content.i18n import say
from grader.run import wire
from grader.run.limits import NO_LIMITS, Limits
from grader.run.wire import Answer, End, Op

OUTPUT_KEEP = 3000  # bytes kept from each end of what a contestant prints


@dataclass(frozen=True)
class Ending:
    """How a contestant stopped answering: one kind (see wire.End), with its detail."""

    kind: End
    detail: str | int | None = None  # the exit status, the signal's name, why it is malformed or did not start
    where: str = ""  # the learner call that was running, if any
    output: str = ""  # what it printed


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
    place = None  # the contestant's [line, function, code] of the learner's line, if any
    exit_code = None  # SystemExit's code

    def __str__(self) -> str:
        return self.args[0] if self.args else ""

    @property
    def where(self) -> str:
        """' (line 3 in f: `code`)', worded when asked, in the messages' language at that time."""
        return where_text(self.place)


class MissingName(AttributeError):
    """The learner's module or object has no attribute the checks use."""


class Refused(TypeError):
    """The learner's answer was not plain data (a tensor subclass, an object...)."""


def raised_class(type_name: str, builtin: bool) -> type:
    """A class for an exception of that name: a subclass of the builtin of that name when there is one."""
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
    """The judge-side exception for a contestant's RAISED answer."""
    error = raised_class(str(data.get("type")), data.get("builtin") is True)(str(data.get("message", "")))
    error.place = data.get("where")
    error.exit_code = data.get("exit_code")
    error.syntax = data.get("syntax")
    return error


class Zygote:
    """The warm process, or a box forked from it (grader.run.contestant): torch imported, never runs
    learner code, forks one contestant per request.

    One request at a time on its control socket (hybrids ask from threads: a lock orders them).
    """

    def __init__(self, process: subprocess.Popen | None, control: socket.socket, sandboxed: bool,
                 parent: "Zygote | None" = None, pid: int | None = None):  # fmt: skip
        self.process = process
        self.control = control
        self.sandboxed = sandboxed
        self.parent = parent  # a box's warm process
        self.pid = pid  # a box's pid, as its warm process sees it
        self.ready = parent is not None
        self.alive = True  # False once its control channel broke (it died, or was killed)
        self.lock = threading.Lock()

    def wait_ready(self) -> None:
        """Block until the warm process has imported what it needs (before forking judges that share it)."""
        if self.ready:
            return
        try:
            message = wire.receive(self.control)
        except (OSError, EOFError, wire.WireError):
            message = {}
        if message.get("answer") != Answer.READY:
            self.alive = False
            raise Stopped(Ending(End.NOT_STARTED, "the contestants' warm process did not start"))
        self.ready = True

    def _ask(self, message: dict, fds: tuple[int, ...] = ()) -> dict | None:
        """The warm process's answer, or None when it is gone."""
        with self.lock:
            try:
                wire.send(self.control, message, fds)
                return wire.receive(self.control)
            except (OSError, EOFError, wire.WireError):
                self.alive = False
                return None

    def box(self, cgroup=None, seconds: float = 30.0) -> "Zygote":
        """A box forked from this process, put in `cgroup` (a containment.Box, or None) before it
        answers anything: every contestant it forks is counted there."""
        self.wait_ready()
        ours, theirs = socket.socketpair()
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        answer = self._ask(wire.request(Op.BOX), (theirs.fileno(),))
        theirs.close()
        if answer is None or answer.get("answer") != Answer.SPAWNED:
            ours.close()
            kind = End.LOST if answer is None else End.NOT_STARTED
            raise Stopped(Ending(kind, None if answer is None else str(answer.get("why", ""))))
        box = Zygote(None, ours, self.sandboxed, parent=self, pid=answer["pid"])
        ours.settimeout(seconds)
        try:
            ready, host_pid = wire.receive_with_sender(ours)
        except (OSError, EOFError, wire.WireError) as error:
            box.close()
            raise Stopped(Ending(End.NOT_STARTED, f"the box did not start ({error})")) from None
        ours.settimeout(None)
        if ready.get("answer") != Answer.READY:
            box.close()
            raise Stopped(Ending(End.NOT_STARTED, "the box did not start"))
        if cgroup is not None and cgroup.paths and host_pid:
            cgroup.add(host_pid)
        return box

    def spawn(
        self, world: dict, seconds: float, hung: set[str] | None = None, limits: Limits = NO_LIMITS
    ) -> "Contestant":
        """A fresh contestant in a world of its own (`world`: {"work": the staged folder as the warm
        process sees it, or None; "size_mb": its tmpfs}). It has `seconds` from now to load and
        answer everything. `hung` names learner functions that already ran out of time: calling one
        again raises KnownHang at once (share one set across the checks of one file)."""
        self.wait_ready()
        ours, theirs = socket.socketpair()
        out_r, out_w = os.pipe()
        request = wire.request(Op.SPAWN, world=world, memory_mb=limits.memory_mb, processes=limits.processes)
        answer = self._ask(request, (theirs.fileno(), out_w))
        theirs.close()
        os.close(out_w)
        if answer is None or answer.get("answer") != Answer.SPAWNED:
            os.close(out_r)
            ours.close()
            kind = End.LOST if answer is None else End.NOT_STARTED
            raise Stopped(Ending(kind, None if answer is None else str(answer.get("why", ""))))
        contestant = Contestant(
            self, answer["pid"], ours, out_r, time.monotonic() + seconds, set() if hung is None else hung
        )
        return contestant

    def end(self, pid: int, ending: bool = False, collect: bool = True) -> tuple[End, str | int | None] | None:
        """End contestant `pid` (it and everything it started); how it had ended, None when the warm
        process is gone. `ending`: its channel closed, so it is exiting by itself: wait a moment.
        `collect` False: kill it and go on (its exit is not waited for; how it ended is not known)."""
        answer = self._ask(wire.request(Op.END, pid=pid, ending=ending, collect=collect))
        if answer is None or answer.get("answer") != Answer.ENDED:
            return None
        return End(answer["end"]), answer.get("detail")

    def close(self, wait: bool = True) -> None:
        """Close its control socket, on which it ends (with every contestant it forked); `wait` for
        it to be gone."""
        self.control.close()
        if self.parent is not None:  # a box: its warm process kills it and collects it later (the
            self.parent.end(self.pid, collect=False)  # contestants it forked were ended with their checks)
            return
        if not wait or self.process is None:  # None: the caller that started it waits for it
            return
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        except ChildProcessError:  # a judge forked from the process that started it
            pass


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

    zygote: Zygote
    pid: int | None
    channel: socket.socket
    output_fd: int
    deadline: float
    hung: set[str]
    seccomp: bool = False  # whether its seccomp filter is installed (grader.run.privileges), once greeted
    greeted: bool = False  # its READY was read (the first request is sent before: no round trip lost)
    _reader: wire.Reader = field(default_factory=wire.Reader)
    load_error: dict | None = None
    ending: Ending | None = None
    _output: _Output = field(default_factory=_Output)

    def load(self, source: str, name: str) -> None:
        """Load the module under test (`name`: "<...>", or its file name in the contestant's folder);
        a load error is kept in `load_error`."""
        self.send_load(source, name)
        self.loaded()

    def send_load(self, source: str, name: str) -> None:
        """The first half of `load`: ask for the module and go on while the contestant loads it."""
        self._send(wire.request(Op.LOAD, source=source, name=name), "")

    def loaded(self) -> None:
        """The second half of `load`: wait for its answer."""
        reply = self._reply("")
        if reply.get("answer") != Answer.LOADED:
            self.load_error = reply.get("raised") or {"type": "Exception", "message": "the file did not load"}

    def quiet(self) -> bool:
        """Whether nothing has come on its channel since its last answer (no stray bytes, read or
        not, and no end): between requests, a contestant that is still as it was then."""
        return not self._reader.buffer and not select.select([self.channel], [], [], 0)[0]

    # -- the module ---------------------------------------------------------------------------
    def call(self, name: str, *args, **kwargs):
        """`module.name(*args, **kwargs)`, its result as data (see `answer` for the rest)."""
        return self.answer(wire.request(Op.CALL, target=name, args=list(args), kwargs=kwargs), name)

    def call_and_inputs(self, name: str, *args, **kwargs) -> tuple[object, list]:
        """(result, the top-level tensor arguments as they were after the call), to see in-place changes."""
        request = wire.request(Op.CALL, target=name, args=list(args), kwargs=kwargs, changes=True)
        answer = self.answer(request, name)
        return answer["result"], answer["after"]

    def new(self, name: str, *args, **kwargs) -> "Remote":
        """An object of the module's class (or any callable's result), kept in the contestant."""
        return self.answer(wire.request(Op.CALL, target=name, args=list(args), kwargs=kwargs, keep=True), name)

    def value(self, name: str):
        """A module-level value (e.g. a dict of answers) as data."""
        return self.answer(wire.request(Op.GET, target=None, attr=name), name)

    def backward(self, target, args: tuple, kwargs: dict, path=(), cotangent=None, method: str | None = None):
        """Call, pick `result[path]`, backpropagate (sum(output * cotangent) when given).

        Returns {"output": the picked output, "grads": the gradient of each argument tensor that
        requires grad, in argument order (None where none arrived)}, or grads None when the picked
        output is not a tensor.
        """
        request = wire.request(Op.CALL, target=target, method=method, args=list(args), kwargs=kwargs)
        request["backward"] = {"path": list(path), "cotangent": cotangent}
        return self.answer(request, method or target)

    def build(self, builder: str, *args, **kwargs) -> "Remote":
        """An object made in the contestant by `grader.builders.<builder>` (a trusted fixture)."""
        return self.answer(wire.request(Op.BUILD, builder=builder, args=list(args), kwargs=kwargs), builder)

    def manual_seed(self, seed: int) -> None:
        self.answer(wire.request(Op.SEED, value=seed), "torch.manual_seed")

    def rng_state(self) -> torch.Tensor:
        return self.answer(wire.request(Op.RNG), "torch.random.get_rng_state")

    # -- the exchange -------------------------------------------------------------------------
    def answer(self, request: dict, name):
        """Send one request; the value of the answer, or raise what the learner's code raised."""
        label = name if isinstance(name, str) else repr(name)
        if label in self.hung:
            raise KnownHang(label)
        reply = self._exchange(request, label)
        kind = reply.get("answer")
        if kind == Answer.VALUE and "value" in reply:
            return reply["value"]
        if kind == Answer.RAISED:
            raise to_exception(reply.get("raised") or {})
        if kind == Answer.MISSING:
            raise MissingName(str(reply.get("name")))
        if kind == Answer.REFUSED:
            raise Refused(str(reply.get("why")))
        self._stop(End.MALFORMED, "an answer that is not one the request can have", label)

    def _exchange(self, request: dict, label: str) -> dict:
        self._send(request, label)
        return self._reply(label)

    def _send(self, request: dict, label: str) -> None:
        try:
            data = wire.pack(request)
        except wire.WireRefusal as error:
            raise TypeError(f"the check passed something that cannot cross: {error}") from None
        try:
            self.channel.sendall(data)
        except OSError:
            self._stop(None, None, label)

    def _reply(self, label: str) -> dict:
        if not self.greeted:  # READY: its world is set up
            self.seccomp = self._receive(label).get("seccomp") is True
            self.greeted = True
        return self._receive(label)

    def _receive(self, label: str) -> dict:
        """The next message on the channel, while keeping what the contestant prints."""
        reader = self._reader
        poll = select.poll()
        poll.register(self.channel, select.POLLIN)
        poll.register(self.output_fd, select.POLLIN)
        while not reader.done:
            left = self.deadline - time.monotonic()
            if left <= 0:
                self.hung.add(label)
                self._stop(End.TIMEOUT, None, label)
            for fd, _ in poll.poll(min(left, 1.0) * 1000):
                if fd == self.output_fd:
                    chunk = os.read(fd, 65536)
                    if chunk:
                        self._output.add(chunk)
                    else:
                        poll.unregister(fd)
                    continue
                chunk = self.channel.recv(1 << 20)
                if not chunk:
                    self._stop(None, None, label)
                try:
                    reader.feed(chunk)
                except wire.WireError as error:
                    self._stop(End.MALFORMED, str(error), label)
        try:
            return reader.message(self._handle)
        except wire.WireError as error:
            self._stop(End.MALFORMED, str(error), label)

    def _handle(self, data: dict) -> "Remote":
        kinds = data.get("kinds", [])
        if not isinstance(kinds, list) or not all(isinstance(kind, str) for kind in kinds):
            raise wire.WireError("a handle's kinds are not a list of names")
        return Remote(self, data["$handle"], str(data.get("type", "object")), tuple(kinds))

    def _stop(self, kind: End | None, detail, label: str):
        """End the process and raise Stopped with how it ended: `kind` when the judge saw it (a
        deadline, a malformed answer), else what the warm process saw (its channel just closed)."""
        seen = self._end(ending=kind is None, collect=kind is None)
        if kind is None:
            kind, detail = seen if seen is not None else (End.LOST, None)
        self.ending = Ending(kind, detail, label, self.output)
        raise Stopped(self.ending)

    def _end(self, ending: bool = False, collect: bool = False) -> tuple[End, str | int | None] | None:
        if self.pid is None:
            return None
        seen = self.zygote.end(self.pid, ending, collect)
        self.pid = None
        self.channel.close()
        self._drain()
        os.close(self.output_fd)
        return seen

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
        """End the process (and everything it started); what it printed stays in `output`."""
        self._end()


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
        request = wire.request(Op.CALL, target=self, method=name, args=list(args), kwargs=kwargs, keep=keep)
        return self.contestant.answer(request, f"{self.type_name}.{name or '__call__'}")

    def backward(self, name: str | None, *args, path=(), cotangent=None, **kwargs):
        """See Contestant.backward, for a method of this object (`None`: calling it)."""
        return self.contestant.backward(self, args, kwargs, path, cotangent, method=name)

    def get(self, attr: str, keep: bool = False):
        request = wire.request(Op.GET, target=self, attr=attr, keep=keep)
        return self.contestant.answer(request, f"{self.type_name}.{attr}")

    def copy(self) -> "Remote":
        return self.contestant.answer(wire.request(Op.COPY, target=self), "copy.deepcopy")

    def state(self) -> dict:
        """The object's state_dict, as plain tensors."""
        return self.contestant.answer(wire.request(Op.STATE, target=self), f"{self.type_name}.state_dict")

    def params(self) -> dict:
        """{name: (requires_grad, grad or None)} for every parameter."""
        found = self.contestant.answer(wire.request(Op.PARAMS, target=self), f"{self.type_name}.parameters")
        return {name: tuple(entry) for name, entry in found.items()}

    def assign(self, values: dict) -> None:
        """Copy `values` ({name: tensor}) in place into the object's parameters and buffers."""
        request = wire.request(Op.ASSIGN, target=self, values=values)
        self.contestant.answer(request, f"{self.type_name}.assign")
