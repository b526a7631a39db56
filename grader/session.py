"""One grading run: a kata, the module under test, and what each check concluded.

The pytest process (the "grading side") loads only trusted code: the checks, the reference and
the misconception variants. The module under test is loaded only in forked children:
- `probe()` loads it once in a child, so a file that cannot load fails every check at once;
- `run(item)` runs one check's whole protocol in a child with a time limit, then turns the
  child's reports (or its silence) into pytest reports and a `CheckResult`.
Inside the child, `annotate` classifies a failure and names the misconceptions that fail the
check in exactly the same way.
"""

import inspect
import time
import traceback
from pathlib import Path

import pytest
from _pytest.reports import TestReport
from _pytest.runner import runtestprotocol

from grader import guard, outcomes
from grader.catalogue import Kata
from grader.expect import Expect, MissingFunction
from grader.isolation import NO_LIMITS, Limits, run_forked
from grader.results import CheckResult, GradeResult
from grader.targets import load_module, load_target, target_source

OUTCOME_KEY = "kata_outcome"
EXPECTED_FROM_KEY = "kata_expected_from"  # "trl" when a TRL function gave the check's expected values
FINGERPRINT_SHARE = 0.7  # re-running a failed check on the variants stops at this share of its time limit


class KataSession:
    def __init__(
        self,
        config: pytest.Config,
        kata: Kata,
        spec: str | Path,
        timeout: float,
        limits: Limits = NO_LIMITS,
        against: str | None = None,
    ):
        self.config = config
        self.kata = kata
        self.spec = spec
        self.timeout = timeout
        self.limits = limits
        self.against = against
        self.learner_file = target_source(kata, spec)[1]
        self.reference = load_module(kata.solution(), f"<reference {kata.slug}>", f"kata_reference_{kata.slug}")
        if against:  # the checks' expected values come from TRL where it has the function (grader.trl_oracle)
            from grader.trl_oracle import oracle_module

            self.reference = oracle_module(self.reference, kata.slug)
        self.variants = {
            item.id: load_module(kata.variant(item.id), f"<misconception {item.id}>", f"kata_variant_{item.id}")
            for item in kata.misconceptions
        }
        self.load_error: str | None = None
        self.results: list[CheckResult] = []
        self.in_child = False
        self.fingerprint_deadline = 0.0

    # -- parent side ---------------------------------------------------------------------------
    def probe(self) -> None:
        """Load the module under test once, in a child; remember why it failed, if it did.

        Before the first fork: one intra-op thread (the checks' tensors are tiny, and no thread
        pool is then inherited half-made by the children), and the parent's objects frozen out
        of the garbage collector, so the children do not copy its memory page by page.
        """
        import gc

        import torch

        torch.set_num_threads(1)
        gc.freeze()
        fork = run_forked(self._load_in_child, self.timeout, self.limits)
        if fork.finished:
            self.load_error = fork.value
        else:
            self.load_error = "while loading the file, " + outcomes.from_fork(fork, self.timeout).message
        if self.load_error and fork.output.strip():
            self.load_error += f"\n{fork.output.strip()[-800:]}"

    def run(self, item: pytest.Item) -> list[TestReport]:
        """Run one check in a child; return its reports and record its result."""
        output, reports, annotation, expected_from = "", None, None, "reference"
        if self.load_error:
            annotation = {"status": "error", "message": f"your file could not be loaded: {self.load_error}"}
        else:
            fork = run_forked(lambda: self._run_in_child(item), self.timeout, self.limits)
            output = fork.output
            if fork.finished:
                hook = self.config.hook
                reports = [hook.pytest_report_from_serializable(config=self.config, data=data) for data in fork.value]
                annotation = next((dict(r.user_properties)[OUTCOME_KEY] for r in reports if r.failed), None)
                expected_from = dict(reports[0].user_properties).get(EXPECTED_FROM_KEY, expected_from)
            else:
                outcome = outcomes.from_fork(fork, self.timeout)
                annotation = {"status": outcome.status, "message": outcome.message}
        if reports is None:
            reports = [_failed_report(item, annotation["message"])]
        passed = annotation is None
        self.results.append(
            CheckResult(
                name=item.name.removeprefix("test_"),
                title=_titles(item.obj.__doc__)[0] or item.name,
                title_zh=_titles(item.obj.__doc__)[1],
                todo=_todo_of(item),
                status="passed" if passed else annotation["status"],
                message="" if passed else annotation["message"],
                output="" if passed else output,
                matches=[] if passed else annotation.get("matches", []),
                expected_from=expected_from,
            )
        )
        return reports

    def grade(self) -> GradeResult:
        result = GradeResult(self.kata.slug, str(self.spec), self.results, self.load_error, self.against)
        result.settle_misconceptions()
        return result

    # -- child side ----------------------------------------------------------------------------
    def _load_in_child(self) -> str | None:
        guard.seal()
        try:
            load_target(self.kata, self.spec)
        except BaseException as error:  # anything at all: the file is the learner's
            _release(error)
            return outcomes.import_failure(error, self.learner_file)
        return None

    def _run_in_child(self, item: pytest.Item) -> list[dict]:
        guard.seal()
        self.in_child = True
        self.fingerprint_deadline = time.monotonic() + FINGERPRINT_SHARE * self.timeout
        reports = runtestprotocol(item, log=False)
        if self.against and self.reference.trl_calls:
            reports[0].user_properties.append((EXPECTED_FROM_KEY, self.against))
        return [self.config.hook.pytest_report_to_serializable(config=self.config, report=r) for r in reports]

    def load_learner(self):
        return load_target(self.kata, self.spec, trace=True)

    def annotate(self, item: pytest.Item, error: BaseException, report: TestReport) -> None:
        """Classify a failure in the child; name the misconceptions that fail the check the same way."""
        _release(error)
        outcome = outcomes.from_exception(error, self.learner_file)
        matches = []
        if report.when == "call" and _fingerprintable(error):
            matches = self._misconceptions_failing_alike(item, error)
        annotation = {"status": outcome.status, "message": outcome.message, "matches": matches}
        report.user_properties.append((OUTCOME_KEY, annotation))
        report.longrepr = outcome.message

    def _misconceptions_failing_alike(self, item: pytest.Item, failure: BaseException) -> list[str]:
        """The variants whose run of this check raises the same kind of error with the same message."""
        names = inspect.signature(item.obj).parameters
        matches = []
        for misconception_id, variant in self.variants.items():
            if time.monotonic() > self.fingerprint_deadline:  # never let naming a mistake cost a timeout
                break
            values = dict(item.funcargs, learner=variant, expect=Expect(variant, self.reference))
            try:
                item.obj(**{name: values[name] for name in names})
            except Exception as error:
                if _same_failure(error, failure):
                    matches.append(misconception_id)
        return matches


def _release(error: BaseException) -> None:
    """After running out of memory, free what the failed frames still hold (the rest needs some)."""
    if outcomes.out_of_memory(error):
        traceback.clear_frames(error.__traceback__)


def _fingerprintable(error: BaseException) -> bool:
    """A wrong result or an ordinary exception; not a missing function, a blank TODO or an exit."""
    return isinstance(error, Exception) and not isinstance(error, MissingFunction | NotImplementedError)


def _same_failure(error: BaseException, failure: BaseException) -> bool:
    both_assertions = isinstance(error, AssertionError) and isinstance(failure, AssertionError)
    return (both_assertions or type(error) is type(failure)) and str(error) == str(failure)


def _failed_report(item: pytest.Item, message: str) -> TestReport:
    return TestReport(
        nodeid=item.nodeid,
        location=item.location,
        keywords={name: 1 for name in item.keywords},
        outcome="failed",
        longrepr=message,
        when="call",
    )


def _titles(doc: str | None) -> tuple[str, str]:
    """(English title, Chinese title) of a check: its docstring's first line and its "zh:" line."""
    lines = [line.strip() for line in (doc or "").strip().splitlines()]
    zh = next((line.removeprefix("zh:").strip() for line in lines if line.startswith("zh:")), "")
    return (lines[0] if lines else ""), zh


def _todo_of(item: pytest.Item) -> int | None:
    marker = item.get_closest_marker("todo")
    return marker.args[0] if marker else None
