"""A replaying file: the attack a student pack's recorded values invite (tests/test_pack.py,
benchmarks/replay_attack.py). Each function of the kata answers a call with the output the pack
recorded for the same inputs, and raises ValueError for any other: no math at all."""

from pathlib import Path


def _literal(value) -> str:
    """Python source that rebuilds a recorded value (how a student would paste it into a file)."""
    import torch

    if isinstance(value, torch.Tensor):
        return f"torch.tensor({value.tolist()!r}, dtype={value.dtype}).reshape({tuple(value.shape)!r})"
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return f"float({str(value)!r})"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(map(_literal, value))
        return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key!r}: {_literal(item)}" for key, item in value.items()) + "}"
    return repr(value)


REPLAYER = """import math
import torch

CASES = {cases}


def _close(given, recorded):
    if isinstance(recorded, torch.Tensor):
        return (
            isinstance(given, torch.Tensor) and given.shape == recorded.shape and given.dtype == recorded.dtype
            and torch.allclose(given.double(), recorded.double(), rtol=1e-6, atol=1e-9, equal_nan=True)
        )
    if isinstance(recorded, (list, tuple)):
        return isinstance(given, (list, tuple)) and len(given) == len(recorded) and all(map(_close, given, recorded))
    if isinstance(recorded, dict):
        return isinstance(given, dict) and given.keys() == recorded.keys() and all(
            _close(given[key], recorded[key]) for key in recorded
        )
    if isinstance(recorded, float) and isinstance(given, (int, float)):
        return math.isclose(given, recorded, rel_tol=1e-9) or (given != given and recorded != recorded)
    return given == recorded


def _replay(name, args, kwargs):
    \"\"\"Not the math: the answer the pack recorded for these very inputs.\"\"\"
    for recorded_args, recorded_kwargs, output in CASES[name]:
        if _close(list(args), list(recorded_args)) and _close(kwargs, recorded_kwargs):
            return output.clone() if isinstance(output, torch.Tensor) else output
    raise ValueError("not an input the pack recorded")
"""
FUNCTION = """

def {name}(*args, **kwargs):
    return _replay({name!r}, args, kwargs)
"""


def replayer(pack: Path, slug: str) -> str:
    """A file that answers each call with the value the pack's recording holds for those inputs."""
    from grader.judging.recorded import Book, _values

    book = Book.load(pack / "katas" / slug / "recorded.bin")
    cases = {
        name: [
            (*_values(entry["inputs"]), _values(entry["output"]))
            for entries in book.checks.values()
            for entry in entries
            if entry["kind"] == "call" and entry["name"] == name and not entry.get("unrecordable")
        ]
        for name in book.functions
    }
    assert any(cases.values()), "the pack must have recorded something to replay"
    return REPLAYER.format(cases=_literal(cases)) + "".join(FUNCTION.format(name=name) for name in cases)
