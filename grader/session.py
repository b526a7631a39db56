"""One grading run, in the judge: a kata, the module under test, and what each check concluded.

The judge (this pytest process) holds the checks, the reference, the misconception variants'
source and every result. It never runs learner code: the module under test lives in contestant
processes (grader.run), a fresh one per check, spawned by a warm process started first thing:

- `probe()` loads the module once, so a file that cannot load fails every check at once;
- the `learner` fixture is a fresh contestant with the check's deadline; calls cross as data;
- `run(item)` runs a check's protocol here and turns its reports into a `CheckResult`;
- `annotate` classifies a failure and names the misconceptions that fail the check in exactly
  the same way (each variant, too, runs in a contestant of its own).
"""

import ast
import inspect
import time
from pathlib import Path

import pytest
from _pytest.reports import TestReport
from _pytest.runner import runtestprotocol

from grader import outcomes
from grader.catalogue import Kata
from grader.expect import Expect, MissingFunction
from grader.results import CheckResult, GradeResult
from grader.run.judge import Contestant, KnownHang, Stopped, Zygote
from grader.run.limits import NO_LIMITS, Limits
from grader.targets import load_module, target_source

OUTCOME_KEY = "kata_outcome"
FINGERPRINT_SHARE = 0.7  # re-running a failed check on the variants stops at this share of its time limit
WARM_MODULES = ("transformers",)  # imported by the warm process when a kata's reference imports them
SHARED_ZYGOTE: Zygote | None = None  # a warm process a batch worker keeps across files (grader.batch)


def warm_modules(kata: Kata) -> list[str]:
    """The heavy modules the kata's reference imports, for the warm process to import first."""
    tree = ast.parse(kata.solution())
    names = {
        alias.name.partition(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    names |= {
        node.module.partition(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    }
    return [name for name in WARM_MODULES if name in names]


class KataSession:
    def __init__(
        self,
        kata: Kata,
        spec: str | Path,
        timeout: float,
        limits: Limits = NO_LIMITS,
        against: str | None = None,
    ):
        self.zygote = SHARED_ZYGOTE or Zygote.start(warm_modules(kata), limits)  # first: it imports torch meanwhile
        self.kata = kata
        self.spec = spec
        self.timeout = timeout
        self.against = against
        self.source, self.learner_file = target_source(kata, spec)
        self.reference = load_module(kata.solution(), f"<reference {kata.slug}>", f"kata_reference_{kata.slug}")
        if against:  # the checks' expected values come from TRL where it has the function (grader.trl_oracle)
            from grader.trl_oracle import oracle_module

            self.reference = oracle_module(self.reference, kata.slug)
        self.variants = {item.id: kata.variant(item.id) for item in kata.misconceptions}
        self.load_error: str | None = None
        self.results: list[CheckResult] = []
        self.hung: set[str] = set()  # learner functions that already ran out of time
        self.outputs: dict[str, str] = {}  # nodeid -> what the learner's code printed in that check
        self.expected_from: dict[str, str] = {}

    def close(self) -> None:
        if self.zygote is not SHARED_ZYGOTE:
            self.zygote.close()

    # -- contestants ------------------------------------------------------------------------------
    def spawn(self, source: str, filename: str, seconds: float, hung: set[str] | None = None) -> Contestant:
        if not self.zygote.alive:  # learner code killed it: go on with a warm process of this judge's own
            self.zygote = self.zygote.restart()
        return self.zygote.spawn(source, filename, seconds, self.hung if hung is None else hung)

    def probe(self) -> None:
        """Load the module under test once; remember why it failed, if it did."""
        try:
            contestant = self.spawn(self.source, self.learner_file, self.timeout)
        except Stopped as stopped:
            outcome = outcomes.from_ending(stopped.ending, self.timeout)
            self.load_error = "while loading the file, " + outcome.message
            output = stopped.ending.output.strip()
        else:
            contestant.close()
            self.load_error = outcomes.import_failure(contestant.load_error) if contestant.load_error else None
            output = contestant.output.strip()
        if self.load_error and output:
            self.load_error += f"\n{output[-800:]}"

    def learner(self, item: pytest.Item) -> Contestant:
        """A fresh contestant for this check, with the check's deadline."""
        return self.spawn(self.source, self.learner_file, self.timeout)

    # -- one check --------------------------------------------------------------------------------
    def run(self, item: pytest.Item) -> list[TestReport]:
        """Run one check (learner calls cross to contestants); return its reports and record its result."""
        if self.load_error:
            annotation = {"status": "error", "message": f"your file could not be loaded: {self.load_error}"}
            reports = [_failed_report(item, annotation["message"])]
        else:
            self.fingerprint_deadline = time.monotonic() + FINGERPRINT_SHARE * self.timeout
            if self.against:
                self.reference.trl_calls = 0
            reports = runtestprotocol(item, log=False)
            annotation = next((dict(r.user_properties)[OUTCOME_KEY] for r in reports if r.failed), None)
        passed = annotation is None
        output = self.outputs.pop(item.nodeid, "")
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
                expected_from=self.expected_from.pop(item.nodeid, "reference"),
            )
        )
        return reports

    def finished(self, item: pytest.Item, contestant: Contestant) -> None:
        """The check's contestant is done: end it and keep what it printed."""
        contestant.close()
        self.outputs[item.nodeid] = contestant.output
        if self.against and getattr(self.reference, "trl_calls", 0):
            self.expected_from[item.nodeid] = self.against

    def grade(self) -> GradeResult:
        result = GradeResult(self.kata.slug, str(self.spec), self.results, self.load_error, self.against)
        result.settle_misconceptions()
        return result

    def annotate(self, item: pytest.Item, error: BaseException, report: TestReport) -> None:
        """Classify a failure; name the misconceptions that fail the check the same way."""
        outcome = outcomes.from_exception(error, self.timeout)
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
        for misconception_id, source in self.variants.items():
            left = self.fingerprint_deadline - time.monotonic()
            if left <= 0:  # never let naming a mistake cost a timeout
                break
            try:
                variant = self.spawn(source, f"<misconception {misconception_id}>", left, set())
            except (Stopped, KnownHang):
                break
            values = dict(item.funcargs, learner=variant, expect=Expect(variant, self.reference))
            try:
                item.obj(**{name: values[name] for name in names})
            except Exception as error:
                if _same_failure(error, failure):
                    matches.append(misconception_id)
            except (Stopped, KnownHang):
                pass
            finally:
                variant.close()
        return matches


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
