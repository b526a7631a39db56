"""How each misconception variant fails each check, remembered from one grading run to the next.

Naming a learner's mistake re-runs each failed check on every variant of the kata (the reference
with one known mistake) and keeps the variants that fail it the same way
(grader.judging.session). A variant is the grader's own deterministic code, so how variant V
fails check C is the same in every run: the first run that needs it computes it, later runs
(`kata check` again after an edit, the next file of a class) read it. One JSON file per kata,
in a folder the caller chooses (`--kata-fingerprints`): the user's cache for `kata check`,
a folder private to the run for `kata grade` (never one the learner's code can see).

A fingerprint is how a check ended: None (it passed) or [kind, message], where kind is
"AssertionError" for a wrong value and the exception's type otherwise. The file's name carries a
digest of everything a fingerprint depends on: the kata's files, the grader's source, torch's
version, the expected values' source (`--kata-against`), the limits, the sandbox, the messages' language
and the course whose seed draws the inputs (its public label, grader.content.seeds).

Two fingerprints are the same failure (`same_failure`) when they differ only in how equal values are
printed: numbers that agree to 3 significant figures or within 1e-6 (-0 and 0, noise below the
checks' tolerance; integers exactly), blanks that align a table's columns to them, and the entries of
a dict or a set in any order. A mistake
written two algebraically equal ways is named the same.
"""

import ast
import hashlib
import json
import math
import re
from pathlib import Path

from grader import source_digest
from grader.content.catalogue import Kata
from grader.files import atomic_write

MISSING = object()  # not computed yet (None means "passes")


def fingerprint(error: BaseException | None) -> list[str] | None:
    """How a check ended: None when it passed, else [kind, message]."""
    if error is None:
        return None
    kind = (
        "AssertionError"
        if isinstance(error, AssertionError)
        else f"{type(error).__module__}.{type(error).__qualname__}"
    )
    return [kind, str(error)]


NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
INTEGER = re.compile(r"[-+]?\d+")
SPACES = re.compile(r"\s+")
LONGEST_LITERAL = 10_000  # characters: a longer {...} is compared as printed


def same_failure(known: list[str] | None, wanted: list[str] | None) -> bool:
    """Whether two fingerprints are the same failure (see the module docstring); None only matches None."""
    if known is None or wanted is None:
        return known is wanted
    return known[0] == wanted[0] and same_words(known[1], wanted[1])


def same_words(recorded: str, message: str) -> bool:
    """`message` is `recorded` but for how equal values are printed (see the module docstring)."""
    recorded, message = in_order(recorded), in_order(message)
    if _words(message) != _words(recorded):
        return False
    return all(_same_number(a, b) for a, b in zip(NUMBER.findall(recorded), NUMBER.findall(message), strict=True))


def _words(message: str) -> list[str]:
    """What is between the numbers, each run of blanks as one (a table's columns align to the values)."""
    return [SPACES.sub(" ", words) for words in NUMBER.split(message)]


def _same_number(a: str, b: str) -> bool:
    if INTEGER.fullmatch(a) and INTEGER.fullmatch(b):
        return int(a) == int(b)  # -0 and 0 too
    return math.isclose(float(a), float(b), rel_tol=1e-3, abs_tol=1e-6)


def in_order(message: str) -> str:
    """`message` with the entries of each dict or set literal in it sorted (as printed, anything else)."""
    parts, done = [], 0
    for start, end in _outer_braces(message):
        parts += [message[done:start], _sorted_literal(message[start:end])]
        done = end
    return "".join(parts) + message[done:]


def _outer_braces(text: str):
    """(start, end) of each outermost {...} of `text`."""
    depth = start = 0
    for index, char in enumerate(text):
        if char == "{":
            start, depth = (index if depth == 0 else start), depth + 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                yield start, index + 1


def _sorted_literal(text: str) -> str:
    if len(text) > LONGEST_LITERAL:
        return text
    try:
        return _canonical(ast.literal_eval(text))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return text


def _canonical(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(sorted(f"{_canonical(k)}: {_canonical(v)}" for k, v in value.items())) + "}"
    if isinstance(value, set | frozenset):
        return "{" + ", ".join(sorted(_canonical(item) for item in value)) + "}"
    if isinstance(value, list | tuple):
        inner = ", ".join(_canonical(item) for item in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    return repr(value)


class Fingerprints:
    """The fingerprints of one kata's variants under one set of conditions; a folder of None keeps nothing."""

    def __init__(self, folder: Path | None, kata: Kata, conditions: str):
        self.path = folder / f"{kata.slug}-{conditions_digest(kata, conditions)}.json" if folder else None
        self.known: dict[str, dict[str, list[str] | None]] = self._read()
        self.new: dict[str, dict[str, list[str] | None]] = {}

    def get(self, check: str, variant: str):
        """The fingerprint of `variant` on `check` (a pytest node id), or MISSING."""
        return self.known.get(check, {}).get(variant, MISSING)

    def put(self, check: str, variant: str, value: list[str] | None) -> None:
        self.known.setdefault(check, {})[variant] = value
        self.new.setdefault(check, {})[variant] = value

    def refresh(self) -> None:
        """Read again what other runs (a class's other files, graded meanwhile) have added."""
        self.known = self._read()
        for check, variants in self.new.items():
            self.known.setdefault(check, {}).update(variants)

    def save(self) -> None:
        """Add what this run computed to the file (what other runs added meanwhile is kept)."""
        if self.path is None or not self.new:
            return
        self.refresh()
        try:
            atomic_write(self.path, json.dumps(self.known, sort_keys=True))
        except OSError:  # a cache: a folder that cannot be written costs time, not correctness
            return
        self.new = {}

    def _read(self) -> dict:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8")) if self.path else {}
        except (OSError, ValueError):
            return {}
        valid = isinstance(data, dict) and all(
            isinstance(variants, dict) and all(_valid(value) for value in variants.values())
            for variants in data.values()
        )
        return data if valid else {}


def _valid(value) -> bool:
    return value is None or (isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value))


def conditions_digest(kata: Kata, conditions: str) -> str:
    import torch

    text = f"{source_digest()} {kata.digest} {torch.__version__} {conditions}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]
