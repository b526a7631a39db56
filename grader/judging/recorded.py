"""Expected values recorded from the reference, for grading where the reference is not: a student pack.

`kata pack` grades the reference once with a `Recorder` in the reference's place: every call a
check makes into the reference (a function's value, or the gradients `expect` asks for) is kept,
in order, with its inputs and its output. A student pack then grades with a `Replay` in the
reference's place: the check's k-th call into the reference answers the k-th recorded output,
once its inputs are the recorded ones within the checks' tolerances (another torch or CPU may
round the inputs differently in the last bits). A call the recording cannot answer — its inputs
came from the learner's own output, or it asks for a class, a model or anything that is not
data — raises `NotRecorded`, a failed check that says so; `kata pack` finds out which checks do
this for the reference or any misconception variant, and leaves them to the instructor's grading.

A recording (a `Book`) is one wire message (grader.run.wire: JSON and safetensors, nothing
unpickled): {"checks": {check name: [entry, ...]}, "functions": {name: {"parameters": [...],
"returned": [...]}}}, each entry {"kind": "call" | "gradients", "name", "inputs", "output"}, or
{"kind", "name", "unrecordable": True}. `for_check(reference, item)` gives a check its own view.
"""

import inspect
import io
import math
from pathlib import Path
from types import MappingProxyType

import torch

from grader.content.i18n import say
from grader.files import atomic_write
from grader.judging.expect import TOLERANCE, CheckFailed, returned_names
from grader.run import wire

PARAMETER_KINDS = MappingProxyType(
    {
        kind.name: kind
        for kind in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.KEYWORD_ONLY,
            inspect.Parameter.VAR_KEYWORD,
        )
    }
)
HAS_DEFAULT = object()  # a recorded parameter's default: only whether it has one matters (binding names arguments)


class NotRecorded(CheckFailed):
    """A call into the reference that the recording cannot answer (see the module docstring)."""

    def __init__(self, what: str):
        super().__init__(
            say(
                f"this check needs the reference's {what}, which the pack did not record (its input "
                "comes from your own output, which is not the reference's); your instructor's grading runs it",
                f"这项检查需要参考答案的 {what}，而学生包没有记录它（它的输入来自你自己的输出，"
                "与参考答案的不同）；它会在教师评分时运行",
            )
        )


def for_check(reference, item) -> object:
    """What a check sees as `reference`: the module itself, or a recording's view for this check."""
    view = getattr(reference, "for_check", None)
    return reference if view is None else view(item.name)


class Book:
    """A recording: the entries of every check and what each recorded function looks like."""

    def __init__(self, checks: dict | None = None, functions: dict | None = None):
        self.checks: dict[str, list[dict]] = checks or {}
        self.functions: dict[str, dict] = functions or {}

    @classmethod
    def load(cls, path: Path) -> "Book":
        data = wire.read_message(io.BytesIO(path.read_bytes()).read)
        return cls(data["checks"], data["functions"])

    def save(self, path: Path) -> None:
        atomic_write(path, wire.pack({"checks": self.checks, "functions": self.functions}))


class Recorder:
    """The reference module, keeping what each check asks of it (in `book`)."""

    def __init__(self, module, book: Book):
        self.module = module
        self.book = book

    def for_check(self, check: str) -> "RecordingView":
        self.book.checks[check] = []  # a check run again (in another language) records afresh
        return RecordingView(self.module, self.book, self.book.checks[check])


class RecordingView:
    def __init__(self, module, book: Book, entries: list[dict]):
        self._module, self._book, self._entries = module, book, entries
        self._inside = False  # a call made while computing a recorded one is part of it

    def __getattr__(self, name: str):
        value = getattr(self._module, name)
        if not inspect.isfunction(value):
            return value  # a class or a constant: used as it is, and a check that needs it stays the instructor's
        if name not in self._book.functions:
            self._book.functions[name] = describe_function(value)

        def recorded(*args, **kwargs):
            return self.remembered("call", name, (args, kwargs), lambda: value(*args, **kwargs))

        recorded.__signature__ = inspect.signature(value)
        recorded.__name__ = name
        recorded.returned_names = returned_names(value)
        return recorded

    def remembered(self, kind: str, name: str, inputs, compute):
        """compute(), recorded under (kind, name, inputs) unless it is part of a recorded call."""
        if self._inside:
            return compute()
        self._inside = True
        try:
            output = compute()
        finally:
            self._inside = False
        try:
            entry = {"kind": kind, "name": name, "inputs": _data(inputs), "output": _data(output)}
        except wire.WireRefusal:
            entry = {"kind": kind, "name": name, "unrecordable": True}
        self._entries.append(entry)
        return output


class Replay:
    """The reference as a recording answers it (see the module docstring)."""

    def __init__(self, book: Book):
        self.book = book

    def for_check(self, check: str) -> "ReplayView":
        return ReplayView(self.book, iter(self.book.checks.get(check, ())))


class ReplayView:
    def __init__(self, book: Book, entries):
        self._book, self._entries = book, entries

    def __getattr__(self, name: str):
        if name.startswith("__") or name not in self._book.functions:
            raise NotRecorded(say(f"`{name}`", f"`{name}`"))
        described = self._book.functions[name]

        def replayed(*args, **kwargs):
            return self.remembered("call", name, (args, kwargs), None)

        replayed.__signature__ = _signature(described["parameters"])
        replayed.__name__ = name
        replayed.returned_names = tuple(described["returned"])
        return replayed

    def remembered(self, kind: str, name: str, inputs, compute):
        """The recorded output of the next entry, when it is this call on these inputs."""
        what = (
            say(f"`{name}` value", f"`{name}` 的值")
            if kind == "call"
            else say(f"`{name}` gradients", f"`{name}` 的梯度")
        )
        entry = next(self._entries, None)
        if entry is None or entry["kind"] != kind or entry["name"] != name or entry.get("unrecordable"):
            raise NotRecorded(what)
        try:
            close = _close(_data(inputs), entry["inputs"])
        except wire.WireRefusal:
            close = False
        if not close:
            raise NotRecorded(what)
        return _values(entry["output"])


def drawn(public: Book, coursed: Book) -> set[str]:
    """The checks that ask the reference about other inputs under a course than on their own seeds
    (two recordings of one reference): values recorded in a student pack cannot answer them."""

    def alike(mine: dict, theirs: dict) -> bool:
        if "unrecordable" in mine or "unrecordable" in theirs:
            return "unrecordable" in mine and "unrecordable" in theirs
        return _close(mine["inputs"], theirs["inputs"])

    return {
        check
        for check, entries in public.checks.items()
        if len(entries) != len(coursed.checks.get(check, []))
        or not all(map(alike, entries, coursed.checks.get(check, [])))
    }


def describe_function(fn) -> dict:
    """What a replayed function needs to look like the reference's: its parameters and returned names."""
    parameters = [
        [p.name, p.kind.name, p.default is not inspect.Parameter.empty]
        for p in inspect.signature(fn).parameters.values()
    ]
    return {"parameters": parameters, "returned": list(returned_names(fn))}


def _signature(parameters: list) -> inspect.Signature:
    return inspect.Signature(
        [
            inspect.Parameter(
                name, PARAMETER_KINDS[kind], default=HAS_DEFAULT if has_default else inspect.Parameter.empty
            )
            for name, kind, has_default in parameters
        ]
    )


def _data(value):
    """`value` as wire values (a round trip through the wire format: a copy, plain data only)."""
    message = wire.pack({"value": value})
    return wire.read_message(io.BytesIO(message).read)["value"]


def _values(value):
    """A fresh copy of a recorded output (a check may change what it is given)."""
    return _data(value)


def _close(got, want) -> bool:
    """Whether `got` is `want`: the same structure and types, tensors and floats within the checks' tolerances."""
    if type(got) is not type(want):
        return False
    if isinstance(want, tuple | list):
        return len(got) == len(want) and all(_close(g, w) for g, w in zip(got, want))
    if isinstance(want, dict):
        return list(got) == list(want) and all(_close(got[key], want[key]) for key in want)
    if isinstance(want, torch.Tensor):
        if got.shape != want.shape or got.dtype != want.dtype:
            return False
        if not (want.is_floating_point() or want.is_complex()):
            return bool(torch.equal(got, want))
        rtol, atol = TOLERANCE.get(want.dtype, (1e-5, 1e-6))
        return bool(torch.allclose(got.double(), want.double(), rtol=rtol, atol=atol, equal_nan=True))
    if isinstance(want, float):
        rtol, atol = TOLERANCE[torch.float64]
        return (math.isnan(got) and math.isnan(want)) or abs(got - want) <= atol + rtol * abs(want)
    if isinstance(want, torch.Generator):
        return bool(torch.equal(got.get_state(), want.get_state()))
    return got == want
