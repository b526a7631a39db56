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
"""

import hashlib
import json
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
