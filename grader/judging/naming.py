"""Naming a mistake: the known misconceptions whose variant fails a check exactly as the file does.

When a check fails, the same check runs on every variant of the kata (the reference with one
known mistake) and the variants that fail it with the same kind of error and the same message are
named (grader.judging.fingerprints remembers how each variant fails each check, so this mostly
reads a file). A variant is the grader's own code: it runs in a contestant of its own, in a box of
its own forked from the warm process (grader.judging.boxes), never where the file's code ran, and
kept for the file's later checks. Only this judge writes the fingerprint store.

A student pack has no variant: `PackedNaming` names from how each variant's run of each check
ended where the pack was built (katas/SLUG/fingerprints.json: {language: {check name: {variant:
[status, message] or None}}}), compared with how the file's run ended: in the same words, the numbers to 3 significant figures.

Either way a variant fails a check as the file does when the two failures differ only in how equal
values are printed (grader.judging.fingerprints.same_failure).
"""

import json
import time

import pytest

from grader.content.catalogue import Kata
from grader.content.i18n import message_language
from grader.judging import outcomes
from grader.judging.boxes import Boxes
from grader.judging.fingerprints import MISSING, Fingerprints, fingerprint, same_failure, same_words
from grader.judging.items import run_check
from grader.run.judge import Contestant, KnownHang, Stopped, Zygote


class Naming:
    def __init__(self, kata: Kata, boxes: Boxes, fingerprints: Fingerprints, reference):
        self.boxes = boxes
        self.fingerprints = fingerprints
        self.reference = reference
        self.variants = {item.id: kata.variant(item.id) for item in kata.misconceptions}
        self.contestants: dict[str, tuple[Zygote, Contestant]] = {}  # variant -> its box and contestant

    def failing_alike(self, item: pytest.Item, failure: BaseException, deadline: float) -> list[str]:
        """The variants whose run of this check raises the same kind of error with the same message (but
        for how equal values are printed);
        variants not yet fingerprinted are run until `deadline` (naming never costs a timeout)."""
        wanted = fingerprint(failure)
        matches = []
        self.fingerprints.refresh()
        for misconception_id in self.variants:
            known = self.fingerprints.get(item.nodeid, misconception_id)
            if known is MISSING:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                try:
                    variant = self._variant(misconception_id, left)
                except (Stopped, KnownHang):
                    break
                try:
                    known = self._fingerprint_of(item, variant)
                except (Stopped, KnownHang):  # it did not end in time: neither a match nor remembered
                    continue
                self.fingerprints.put(item.nodeid, misconception_id, known)
            if same_failure(known, wanted):
                matches.append(misconception_id)
        return matches

    def _fingerprint_of(self, item: pytest.Item, variant: Contestant) -> list[str] | None:
        """How the check ends with `variant` as the module under test."""
        try:
            run_check(item, variant, self.reference)
        except Exception as error:
            return fingerprint(error)
        return None

    def _variant(self, misconception_id: str, seconds: float) -> Contestant:
        """The variant's contestant, kept for the file's later checks (one process per variant per
        file, not per check, keeps naming cheap)."""
        box, variant = self.contestants.get(misconception_id, (None, None))
        if variant is None or variant.pid is None:
            if box is not None:
                box.close()
            box = self.boxes.box(learner_code=False)
            label = f"<misconception {misconception_id}>"
            try:
                variant = self.boxes.trusted(self.variants[misconception_id], label, seconds, box)
            except BaseException:
                box.close()
                raise
            self.contestants[misconception_id] = (box, variant)
        variant.deadline = time.monotonic() + seconds
        return variant

    def close(self) -> None:
        for box, variant in self.contestants.values():
            variant.close()
            box.close()
        self.contestants = {}


class PackedNaming:
    def __init__(self, kata: Kata, timeout: float):
        self.timeout = timeout
        self.table = json.loads((kata.folder / "fingerprints.json").read_text(encoding="utf-8"))

    def failing_alike(self, item: pytest.Item, failure: BaseException, deadline: float) -> list[str]:
        """The variants whose recorded run of this check ended as `failure` ends it: the same status,
        the same words, the same numbers to 3 significant figures (another CPU rounds in the last digits)
        (grader.judging.fingerprints.same_words)."""
        outcome = outcomes.from_exception(failure, self.timeout)
        recorded = self.table.get(message_language(), {}).get(item.name, {})
        return [
            variant
            for variant, ending in recorded.items()
            if ending is not None and ending[0] == outcome.status and same_words(ending[1], outcome.message)
        ]

    def close(self) -> None:
        return None
