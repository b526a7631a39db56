"""grader.run: the wire format, and contestants that answer, hang, crash, flood or lie."""

import math
import os
import socket
import struct
import threading
import time

import pytest
import torch

from grader.judging import outcomes
from grader.run import contestant, wire
from grader.run.arena import Arena
from grader.run.judge import OUTPUT_KEEP, KnownHang, Refused, Stopped, Zygote

SOURCE = """
import ctypes, os, sys, torch

def echo(*args, **kwargs):
    return args, kwargs

def spin():
    while True:
        pass

def crash():
    ctypes.string_at(0)

def leave():
    os._exit(3)

def flood():
    for _ in range(100_000):
        print("z" * 99)
    return "done"

def read_stdin():
    return sys.stdin.read()

def reject(x):
    raise ValueError(f"bad x: {x}")

class Liar(torch.Tensor):
    pass

class LyingFloat(float):
    def __eq__(self, other):
        return True

def lie_tensor():
    return torch.zeros(2).as_subclass(Liar)

def lie_float():
    return LyingFloat(0.5)

def an_object():
    return object()
"""


@pytest.fixture(scope="module")
def zygote():
    """A warm process outside the sandbox (tests/test_sandbox.py and tests/test_isolation.py have the sandbox)."""
    arena = Arena.start(["import torch"], sandboxed=False)
    yield arena.zygote
    arena.close()


def spawn(zygote, seconds=5.0, hung=None):
    learner = zygote.spawn({"work": None, "size_mb": 64}, seconds, hung)
    learner.load(SOURCE, "<learner>")
    return learner


def roundtrip(value):
    data = wire.pack({"v": value})
    return wire.read_message(_reader(data))["v"]


def _reader(data: bytes):
    view = memoryview(data)
    position = 0

    def read(count):
        nonlocal position
        chunk = view[position : position + count].tobytes()
        position += len(chunk)
        return chunk

    return read


def test_every_documented_value_crosses_and_comes_back_the_same():
    grad = torch.tensor([1.0, 2.0]).requires_grad_()
    value = [
        None, True, 3, "é", 0.5, math.inf, -math.inf, (1, (2.0,)), {"a": 1, 2: [3]}, ...,
        torch.arange(6, dtype=torch.int32).reshape(2, 3), torch.tensor(1.5, dtype=torch.bfloat16),
        torch.zeros(0, 3), torch.float64, grad,
    ]  # fmt: skip
    back = roundtrip(value)
    assert back[:10] == value[:10] and math.isnan(roundtrip(math.nan))
    assert type(back[7]) is tuple and type(back[8]) is dict and back[9] is Ellipsis
    for got, want in zip(back[10:13], value[10:13]):
        assert got.dtype == want.dtype and got.shape == want.shape and torch.equal(got, want)
    assert back[13] is torch.float64 and back[14].requires_grad and back[14].is_leaf
    generator = torch.Generator().manual_seed(7)
    assert torch.equal(torch.rand(3, generator=roundtrip(generator)), torch.rand(3, generator=generator))


def test_a_graph_is_reported_but_never_carried():
    x = torch.ones(2, requires_grad=True)
    data = wire.pack({"v": x * 2})
    assert b'"graph":true' in data
    assert roundtrip(x * 2).grad_fn is None


@pytest.mark.parametrize(
    "data",
    [
        b'{"v": {"$code": "os.system"}}',
        b'{"v": {"$tensor": "t0", "requires_grad": false, "graph": false}}',
        b'{"v": NaN}',
        b"[1, 2]",
        b"\x80\x04\x95pickle",
    ],
    ids=["unknown tag", "missing tensor", "bare NaN", "not a dict", "a pickle"],
)
def test_anything_else_is_a_wire_error(data):
    message = struct.pack(">I", len(data)) + data + struct.pack(">Q", 0)
    with pytest.raises(wire.WireError):
        wire.read_message(_reader(message))


def test_calls_cross_as_data_and_learner_errors_keep_their_builtin_type(zygote):
    learner = spawn(zygote)
    args, kwargs = learner.call("echo", torch.ones(2), 1.5, k=(1, "x"))
    assert torch.equal(args[0], torch.ones(2)) and args[1:] == (1.5,) and kwargs == {"k": (1, "x")}
    with pytest.raises(ValueError, match="bad x: 3") as raised:
        learner.call("reject", 3)
    assert "line" in raised.value.where
    learner.close()


@pytest.mark.parametrize(("name", "words"), [("lie_tensor", "`Liar`, not a plain `torch.Tensor`"),
                                             ("lie_float", "`LyingFloat`, not a plain `float`"),
                                             ("an_object", "`object`, which is not data")])  # fmt: skip
def test_a_subclass_or_an_object_is_refused_by_name(zygote, name, words):
    learner = spawn(zygote)
    with pytest.raises(Refused, match=words.replace("(", r"\(")):
        learner.call(name)
    learner.close()


def test_a_call_past_the_deadline_ends_the_contestant_and_is_not_waited_for_again(zygote):
    learner = spawn(zygote, seconds=0.5)
    start = time.perf_counter()
    with pytest.raises(Stopped) as stopped:
        learner.call("spin")
    assert stopped.value.ending.kind == wire.End.TIMEOUT and stopped.value.ending.where == "spin"
    assert time.perf_counter() - start < 3
    again = spawn(zygote, 5.0, learner.hung)
    with pytest.raises(KnownHang):
        again.call("spin")
    again.close()


@pytest.mark.parametrize(("name", "words"), [("crash", "crashed (SIGSEGV) inside `crash`"),
                                             ("leave", "exited with status 3 inside `leave`")])  # fmt: skip
def test_a_crash_or_an_exit_is_an_ending_with_its_reason(zygote, name, words):
    learner = spawn(zygote)
    with pytest.raises(Stopped) as stopped:
        learner.call(name)
    assert words in outcomes.from_ending(stopped.value.ending, 5.0).message


def test_only_the_head_and_tail_of_a_flood_of_output_are_kept(zygote):
    learner = spawn(zygote, seconds=20)
    assert learner.call("flood") == "done"
    learner.close()
    assert len(learner.output) < 2 * OUTPUT_KEEP + 100 and "bytes of output cut" in learner.output


def test_stdin_is_closed_to_the_contestant(zygote):
    learner = spawn(zygote)
    assert learner.call("read_stdin") == ""
    learner.close()


def test_a_fork_that_cannot_start_is_an_ending_not_an_exception(monkeypatch):
    ours, theirs = socket.socketpair()

    def full():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", full)
    server = threading.Thread(target=contestant.Warm(theirs, sandboxed=False).serve, daemon=True)
    server.start()
    warm = Zygote(None, ours, sandboxed=False)
    warm.ready = True
    with pytest.raises(Stopped) as stopped:
        warm.spawn({"work": None, "size_mb": 64}, 1.0)
    assert "fork bomb" in outcomes.from_ending(stopped.value.ending, 1.0).message
    ours.close()
    server.join(timeout=5)
