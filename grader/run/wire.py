"""The one format that crosses between the judge, the warm process and a contestant: JSON for
structure, safetensors for tensors. Nothing is ever unpickled, and nothing that arrives can be
anything but plain data. This module is the only one that knows how a message is framed.

A message on the wire is

    u32 length | JSON (UTF-8) | u64 length | safetensors bytes (may be empty)

Every message is a request {"op": Op, ...} or an answer {"answer": Answer, ...}: one vocabulary,
`Op` and `Answer` below (`request(...)`, `reply(...)`, `op_of(...)`, `answer_of(...)`).
`send`/`receive` move one message over a socket (with descriptors alongside, or the sender's pid
as the kernel gives it); `Reader` assembles a message from chunks (the judge reads a contestant's
answers and its printed output at once).

Values inside the JSON (`encode` writes them, `decode` reads them back, rejecting anything else):

| Python value                     | JSON                                                      |
|----------------------------------|-----------------------------------------------------------|
| None, bool, int, str             | themselves                                                |
| ... (Ellipsis, a placeholder)    | {"$ellipsis": 1}                                          |
| float, finite                    | a JSON number (always written with a `.` or exponent)     |
| float NaN, inf, -inf             | {"$float": "nan" \\| "inf" \\| "-inf"}                      |
| list                             | a JSON list                                               |
| tuple                            | {"$tuple": [...]}                                         |
| dict (keys: str, int, bool, None)| {"$dict": [[key, value], ...]} (order kept)               |
| torch.Tensor (exactly that type) | {"$tensor": "t3", "requires_grad": bool, "graph": bool}   |
|                                  | dtype and shape live in the safetensors entry "t3"        |
| torch.Generator (CPU)            | {"$generator": "t4"}: its state, a uint8 tensor           |
| torch.dtype                      | {"$dtype": "float32"}                                     |
| an object left in the contestant | {"$handle": 7, "type": "RewardModel", "kinds": [...]}     |

`requires_grad` is restored on decode (a leaf); `graph` says whether the tensor had a grad_fn
where it was made. Only exact types are accepted: a tensor subclass, a float subclass or any
other object is refused with a `WireRefusal` that names it ("returned a `Liar`, not a plain
`torch.Tensor`"). Limits (`MAX_JSON`, `MAX_BLOB`, `MAX_DEPTH`) bound what a reader accepts.
"""

import json
import math
import socket
import struct
from enum import StrEnum
from types import MappingProxyType

import torch
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors

from grader.content.i18n import say

MAX_JSON = 64 * 2**20
MAX_BLOB = 1 * 2**30
MAX_DEPTH = 64
_DTYPES = MappingProxyType(
    {
        str(dtype).removeprefix("torch."): dtype
        for dtype in (
            torch.float64,
            torch.float32,
            torch.float16,
            torch.bfloat16,
            torch.int64,
            torch.int32,
            torch.int16,
            torch.int8,
            torch.uint8,
            torch.bool,
        )
    }
)
_FLOATS = MappingProxyType({"nan": math.nan, "inf": math.inf, "-inf": -math.inf})
_WHAT_ZH = MappingProxyType({"returned": "返回"})  # `what` of a refusal, in Chinese


class Op(StrEnum):
    """What a request asks for. To the warm process or a box: BOX, SPAWN, END; to a contestant: the rest."""

    BOX = "box"  # fork a box: a process that answers BOX, SPAWN and END on the control socket passed
    SPAWN = "spawn"  # fork a contestant into a world of its own (fds: its channel, its output)
    END = "end"  # end contestant `pid`; answered with how it ended
    LOAD = "load"  # load `source` as the module under test (tracebacks point into `filename`)
    CALL = "call"  # call target(.method)(*args, **kwargs); keep, changes, backward (see contestant)
    GET = "get"  # an attribute as data (or a handle with keep)
    BUILD = "build"  # an object made by grader.builders.<builder>
    COPY = "copy"  # a deep copy of a handle's object, as a new handle
    STATE = "state"  # a handle's state_dict, detached
    PARAMS = "params"  # {name: [requires_grad, grad or None]} of a handle's parameters
    ASSIGN = "assign"  # copy `values` into a handle's parameters and buffers
    SEED = "seed"  # torch.manual_seed(value)
    RNG = "rng"  # torch's global generator state


class End(StrEnum):
    """How a contestant stopped answering: one kind, set once by whoever observed it."""

    TIMEOUT = "timeout"  # the judge: its deadline passed (the judge ended it)
    MALFORMED = "malformed"  # the judge: an answer that is not a well-formed message (`detail`: why)
    LOST = "lost"  # the judge: the warm process was gone
    NOT_STARTED = "not_started"  # the warm process could not fork it, or its world could not be made (`detail`)
    EXIT = "exit"  # the warm process: it exited by itself (`detail`: the status)
    SIGNAL = "signal"  # the warm process: a signal ended it (`detail`: its name)
    MEMORY = "memory"  # the warm process: it ran out of memory outside a request
    KILLED = "killed"  # the warm process: still running when the judge ended it


class Answer(StrEnum):
    """What kind of answer a message is."""

    READY = "ready"  # the warm process has imported everything; a box is ready; a contestant's world is set up
    SPAWNED = "spawned"  # the box's or contestant's pid, as its parent sees it
    NOT_STARTED = "not_started"  # no contestant could be forked (`why`)
    ENDED = "ended"  # how a contestant ended: `end` (an End) and `detail`
    LOADED = "loaded"  # the module under test is loaded
    VALUE = "value"  # the request's result, `value`
    RAISED = "raised"  # learner code raised (`raised`: type, message, where, ...)
    MISSING = "missing"  # the module or object has no such attribute (`name`)
    REFUSED = "refused"  # an answer that is not plain data (`why`, for the learner)


class WireError(ValueError):
    """Bytes that are not a well-formed message (a lie, a truncation, or an attack)."""


class WireRefusal(TypeError):
    """A value that may not cross: not plain data. The message is for the learner."""


class Handle:
    """An object that lives in a contestant; the judge holds only its number and its type's name."""

    def __init__(self, number: int, type_name: str, kinds: tuple[str, ...] = ()):
        self.number = number
        self.type_name = type_name
        self.kinds = kinds  # e.g. ("torch.nn.Module", "torch.nn.Linear"): what the contestant says it is

    def __repr__(self) -> str:
        return f"<{self.type_name}>"


def _plain_name(value) -> str:
    return type(value).__name__


class Encoder:
    """Turns one value tree into JSON-ready data and a dict of tensors; `handles` keeps objects."""

    def __init__(self, keep=None):
        self.tensors: dict[str, torch.Tensor] = {}
        self.keep = keep  # callable(object) -> Handle for objects that stay behind, or None

    def value(self, value, depth: int = 0, what: str = "returned"):
        if depth > MAX_DEPTH:
            raise WireRefusal(
                say(
                    f"{what} a structure nested more than {MAX_DEPTH} levels deep",
                    f"{_WHAT_ZH.get(what, what)}嵌套超过 {MAX_DEPTH} 层的结构",
                )
            )
        kind = type(value)
        if value is None or kind in (bool, int, str):
            return value
        if kind is float:
            return value if math.isfinite(value) else {"$float": repr(value)}
        if value is Ellipsis:
            return {"$ellipsis": 1}
        if kind is list:
            return [self.value(item, depth + 1, what) for item in value]
        if kind is tuple:
            return {"$tuple": [self.value(item, depth + 1, what) for item in value]}
        if kind is dict:
            return {
                "$dict": [[self.value(k, depth + 1, what), self.value(v, depth + 1, what)] for k, v in value.items()]
            }
        if kind is torch.Tensor:
            return {
                "$tensor": self._tensor(value),
                "requires_grad": value.requires_grad,
                "graph": value.grad_fn is not None,
            }
        if kind is torch.Generator:
            return {"$generator": self._tensor(value.get_state())}
        if kind is torch.dtype:
            return {"$dtype": str(value).removeprefix("torch.")}
        if isinstance(value, Handle):  # an object the other side kept (the judge's Remote, say)
            return {"$handle": value.number}
        if self.keep is not None:
            handle = self.keep(value)
            return {"$handle": handle.number, "type": handle.type_name, "kinds": list(handle.kinds)}
        raise WireRefusal(refusal(value, what))

    def _tensor(self, tensor: torch.Tensor) -> str:
        if tensor.dtype not in _DTYPES.values() or tensor.is_sparse or tensor.is_quantized:
            raise WireRefusal(
                say(
                    f"a tensor of dtype {tensor.dtype} cannot be compared; use float32 or float64",
                    f"dtype 为 {tensor.dtype} 的张量无法比较；请使用 float32 或 float64",
                )
            )
        name = f"t{len(self.tensors)}"
        self.tensors[name] = tensor.detach().to("cpu", copy=True).contiguous()
        return name


def refusal(value, what: str = "returned") -> str:
    """Why `value` may not cross, in the learner's words."""
    name, what_zh = _plain_name(value), _WHAT_ZH.get(what, what)
    if isinstance(value, torch.Tensor):
        return say(
            f"{what} a `{name}`, not a plain `torch.Tensor`", f"{what_zh}的是 `{name}`，而不是普通的 `torch.Tensor`"
        )
    for plain in (float, int, str, list, tuple, dict, bool):
        if isinstance(value, plain):
            return say(
                f"{what} a `{name}`, not a plain `{plain.__name__}`",
                f"{what_zh}的是 `{name}`，而不是普通的 `{plain.__name__}`",
            )
    return say(
        f"{what} a `{name}`, which is not data the checks can compare",
        f"{what_zh}的是 `{name}`，不是检查能够比较的数据",
    )


def request(op: Op, **fields) -> dict:
    """A request message."""
    return {"op": op.value, **fields}


def reply(answer: Answer, **fields) -> dict:
    """An answer message."""
    return {"answer": answer.value, **fields}


def op_of(message: dict) -> Op:
    """The operation a request asks for (WireError when it names none)."""
    try:
        return Op(message.get("op"))
    except ValueError:
        raise WireError(f"unknown request {message.get('op')!r}") from None


def answer_of(message: dict) -> Answer:
    """The kind of an answer (WireError when it is none)."""
    try:
        return Answer(message.get("answer"))
    except ValueError:
        raise WireError(f"unknown answer {message.get('answer')!r}") from None


def pack(message: dict, keep=None) -> bytes:
    """`message` (a dict of values) as one wire message."""
    encoder = Encoder(keep)
    body = json.dumps(encoder.value(message), allow_nan=False, separators=(",", ":")).encode()
    blob = save_tensors(encoder.tensors) if encoder.tensors else b""
    return struct.pack(">I", len(body)) + body + struct.pack(">Q", len(blob)) + blob


class Decoder:
    """Turns JSON data and its tensors back into values; `handle` resolves {"$handle": n}."""

    def __init__(self, tensors: dict[str, torch.Tensor], handle=None):
        self.tensors = tensors
        self.handle = handle  # callable(dict) -> object, or None to refuse handles

    def value(self, data, depth: int = 0):
        if depth > MAX_DEPTH:
            raise WireError("nested too deep")
        kind = type(data)
        if data is None or kind in (bool, int, str, float):
            return data
        if kind is list:
            return [self.value(item, depth + 1) for item in data]
        if kind is not dict or len(data) == 0:
            raise WireError(f"unexpected {kind.__name__}")
        tag = next(iter(data))
        if tag == "$float" and len(data) == 1 and data[tag] in _FLOATS:
            return _FLOATS[data[tag]]
        if tag == "$ellipsis" and data == {"$ellipsis": 1}:
            return Ellipsis
        if tag == "$tuple" and len(data) == 1 and type(data[tag]) is list:
            return tuple(self.value(item, depth + 1) for item in data[tag])
        if tag == "$dict" and len(data) == 1 and type(data[tag]) is list:
            pairs = {}
            for pair in data[tag]:
                if type(pair) is not list or len(pair) != 2:
                    raise WireError("a dict entry is not a [key, value] pair")
                key = self.value(pair[0], depth + 1)
                if key is not None and type(key) not in (str, int, bool, float):
                    raise WireError("a dict key that is not a str, int, bool, float or None")
                pairs[key] = self.value(pair[1], depth + 1)
            return pairs
        if tag == "$tensor" and set(data) == {"$tensor", "requires_grad", "graph"}:
            tensor = self._tensor(data["$tensor"])
            if data["requires_grad"] is True:
                if not tensor.is_floating_point():
                    raise WireError("requires_grad on a tensor that is not floating point")
                tensor.requires_grad_(True)
            return tensor
        if tag == "$generator" and len(data) == 1:
            generator = torch.Generator()
            try:
                generator.set_state(self._tensor(data[tag]))
            except (RuntimeError, TypeError) as error:
                raise WireError(f"not a generator state: {error}") from None
            return generator
        if tag == "$dtype" and len(data) == 1 and data[tag] in _DTYPES:
            return _DTYPES[data[tag]]
        if tag == "$handle" and self.handle is not None and type(data[tag]) is int:
            return self.handle(data)
        raise WireError(f"unknown value {tag!r}")

    def _tensor(self, name) -> torch.Tensor:
        if type(name) is not str or name not in self.tensors:
            raise WireError(f"no tensor {name!r} in the message")
        return self.tensors[name].clone()


def unpack_body(body: bytes, blob: bytes, handle=None) -> dict:
    """The message in `body` and `blob` (see `pack`), or WireError."""
    try:
        data = json.loads(body.decode("utf-8"), parse_constant=_no_constant)
        tensors = load_tensors(blob) if blob else {}
    except WireError:
        raise
    except Exception as error:  # any malformed JSON or safetensors
        raise WireError(f"malformed message: {type(error).__name__}") from None
    if any(type(t) is not torch.Tensor or t.dtype not in _DTYPES.values() for t in tensors.values()):
        raise WireError("a tensor of an unsupported dtype")
    message = Decoder(tensors, handle).value(data)
    if type(message) is not dict:
        raise WireError("a message is a dict")
    return message


def _no_constant(name: str):
    raise WireError(f"bare {name} in JSON")


def read_exact(read, count: int) -> bytes:
    """`count` bytes from `read(n)`; EOFError if the stream ends first."""
    chunks, left = [], count
    while left:
        chunk = read(min(left, 1 << 20))
        if not chunk:
            raise EOFError("the stream ended inside a message")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_message(read, handle=None) -> dict:
    """One message from a byte stream (`read(n)` returns up to n bytes, b"" at the end)."""
    (size,) = struct.unpack(">I", read_exact(read, 4))
    if size > MAX_JSON:
        raise WireError(f"a message of {size} bytes is over the limit")
    body = read_exact(read, size)
    (blob_size,) = struct.unpack(">Q", read_exact(read, 8))
    if blob_size > MAX_BLOB:
        raise WireError(f"tensors of {blob_size} bytes are over the limit")
    return unpack_body(body, read_exact(read, blob_size), handle)


class Reader:
    """Assembles messages from chunks as they arrive: `feed(chunk)`, then `message()` once `done`
    (which takes the first message out; what came after it stays for the next)."""

    def __init__(self):
        self.buffer = bytearray()

    def feed(self, chunk: bytes) -> None:
        self.buffer += chunk
        if (self._size() or 0) > 12 + MAX_JSON + MAX_BLOB:
            raise WireError("a message over the size limit")

    @property
    def done(self) -> bool:
        size = self._size()
        return size is not None and len(self.buffer) >= size

    def message(self, handle=None) -> dict:
        """The first message, once `done` (WireError when it is malformed)."""
        (size,) = struct.unpack(">I", self.buffer[:4])
        if size > MAX_JSON:
            raise WireError(f"a message of {size} bytes is over the limit")
        end = self._size()
        body, blob = bytes(self.buffer[4 : 4 + size]), bytes(self.buffer[12 + size : end])
        del self.buffer[:end]
        return unpack_body(body, blob, handle)

    def _size(self) -> int | None:
        """The whole message's length in bytes, once its headers have arrived."""
        if len(self.buffer) < 4:
            return None
        (size,) = struct.unpack(">I", self.buffer[:4])
        if len(self.buffer) < 12 + size:
            return 12 + size
        (blob,) = struct.unpack(">Q", self.buffer[4 + size : 12 + size])
        return 12 + size + blob


_CREDENTIALS = struct.Struct("iII")  # struct ucred: pid, uid, gid
_CREDENTIALS_SPACE = socket.CMSG_SPACE(_CREDENTIALS.size)  # what recvmsg needs room for, to read them


def send(channel: socket.socket, message: dict, fds: tuple[int, ...] = (), keep=None) -> None:
    """Send one message, with descriptors `fds` passed alongside its first byte."""
    data = pack(message, keep)
    if fds:
        socket.send_fds(channel, [data[:1]], list(fds))
        data = data[1:]
    channel.sendall(data)


def receive(channel: socket.socket, handle=None) -> dict:
    """One message from a socket (EOFError when it closed, WireError when the bytes are not one)."""
    return read_message(channel.recv, handle)


def receive_fds(channel: socket.socket, most: int) -> tuple[dict, list[int]]:
    """One message and the (at most `most`) descriptors passed with it."""
    first, fds, _, _ = socket.recv_fds(channel, 1, most)
    if not first:
        raise EOFError("the channel closed")
    return read_message(_after(first, channel.recv)), fds


def receive_with_sender(channel: socket.socket) -> tuple[dict, int | None]:
    """One message and the pid of the process that sent it, as the kernel reports it to this one
    (needs SO_PASSCRED on `channel`); None where no credentials came."""
    first, ancillary, _, _ = channel.recvmsg(1, _CREDENTIALS_SPACE)
    if not first:
        raise EOFError("the channel closed")
    pid = None
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
            pid = _CREDENTIALS.unpack(data[: _CREDENTIALS.size])[0]
    return read_message(_after(first, channel.recv)), pid


def _after(first: bytes, read):
    """A `read` that returns `first` before what `read` returns."""
    pending = [first]

    def read_more(count: int) -> bytes:
        if pending:
            return pending.pop()
        return read(count)

    return read_more
