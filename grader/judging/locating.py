"""Locating a mistake: grading hybrids of a failing file and the reference (the search itself is
grader.judging.localise), and, when several TODOs are located, how the hybrid with the reference's
code in every other TODO fails the file's failed checks (`failures`: what naming needs to name each
TODO's mistake alone, grader.judging.session).

A hybrid is learner code: it gets a box of its own forked from the warm process (grader.judging.boxes),
every check of it runs in a fresh contestant in a world of its own, and only whether it passes is kept. Nothing else of it leaves its
contestant: what it prints, raises, writes or returns is dropped with it, and it never changes a
fingerprint, a result or the file's own feedback. Whether it passes and how long it takes remain
(a side channel, documented in the README), and which known misconceptions fail a check as it does
(naming, within the judge); none changes a grade (points come from the file's own checks only).
"""

import os
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from grader.judging import localise
from grader.judging.boxes import Boxes
from grader.judging.items import run_check, todo_of
from grader.report.results import Location
from grader.run.judge import KnownHang, Stopped
from grader.run.wire import End

LOCATE_SECONDS = 4.0  # the hybrids of one file may take this many check time limits in all


class Locator:
    def __init__(self, boxes: Boxes, reference, solution: str | None, timeout: float, parallel: int):
        """`parallel`: hybrids graded at once (`kata grade` grades one at a time: files already run in
        parallel there); `solution` None (a student pack): no hybrid, the failing checks' TODOs locate."""
        self.boxes = boxes
        self.reference = reference
        self.solution = solution
        self.timeout = timeout
        self.parallel = parallel

    def locate(self, source: str, ran: list[tuple[pytest.Item, bool]]) -> Location | None:
        """Where `source` (a file whose checks ran as `ran`: each check and whether it passed)
        differs from the reference; None when every check passed."""
        failed = [item for item, passed in ran if not passed]
        if not failed:
            return None
        self.order = failed + [item for item, passed in ran if passed]  # the file's failed checks first
        self.deadline = time.monotonic() + LOCATE_SECONDS * self.timeout
        tagged = sorted({todo_of(item) for item in failed} - {None})
        if self.solution is None:
            return Location(tuple(tagged), "tags", localise.TAGS_PACK)
        return localise.locate(source, self.solution, tagged, self._first_passing)

    def failures(self, source: str, items: list[pytest.Item]) -> list[tuple[pytest.Item, Exception]]:
        """How the hybrid `source` fails each of `items` (each in a fresh contestant, one box), within the
        search's time: the checks that pass, crash, stop or run out of time are left out."""
        try:
            box = self.boxes.box()
        except Stopped:
            return []
        failed = []
        try:
            for item in items:
                left = self.deadline - time.monotonic()
                if left <= 0:
                    break
                contestant = None
                try:
                    contestant = self.boxes.learner(source, "<hybrid>", min(self.timeout, left), set(), box)
                    run_check(item, contestant, self.reference)
                except Exception as error:
                    failed.append((item, error))
                except (Stopped, KnownHang, pytest.fail.Exception):
                    continue
                finally:
                    if contestant is not None:
                        contestant.close()
        finally:
            box.close()
        return failed

    def _first_passing(self, sources: list[str]) -> int | None:
        """The index of the first hybrid, in order, that passes every check; graded a few at a time."""
        with ThreadPoolExecutor(self.parallel) as pool:
            for start in range(0, len(sources), self.parallel):
                passes = list(pool.map(self._passes, sources[start : start + self.parallel]))
                if True in passes:
                    return start + passes.index(True)
        return None

    def _passes(self, source: str) -> bool:
        """Whether the hybrid passes every check; OutOfTime once the search's time is spent."""
        try:
            box = self.boxes.box()
        except Stopped:
            return False
        try:
            return self._passes_in(box, source)
        finally:
            box.close()

    def _passes_in(self, box, source: str) -> bool:
        hung: set[str] = set()
        for item in self.order:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise localise.OutOfTime
            contestant = None
            try:
                contestant = self.boxes.learner(source, "<hybrid>", min(self.timeout, left), hung, box)
                run_check(item, contestant, self.reference)
            except Stopped as stopped:
                if stopped.ending.kind == End.TIMEOUT and time.monotonic() >= self.deadline:
                    raise localise.OutOfTime from None  # cut short by the search's time, not the check's
                return False
            except (Exception, KnownHang, pytest.fail.Exception):
                return False
            finally:
                if contestant is not None:
                    contestant.close()
        return True


def default_parallel(in_class: bool) -> int:
    """Hybrids at once: two where there are two cores for `kata check`, one in `kata grade`."""
    return 1 if in_class else min(2, os.cpu_count() or 1)
