"""One grading run, in the judge: a kata, the module under test, and what each check concluded.

The judge (this pytest process) holds the checks, the reference, the misconception variants'
source and every result. It never runs learner code: the module under test lives in contestant
processes (grader.run), a fresh one per check, in worlds of their own (grader.judging.boxes).
The session ties the jobs together:

- `probe()` loads the module once, so a file that cannot load fails every check at once;
- the `learner` fixture is a fresh contestant with the check's deadline; calls cross as data;
  the next check's is started while a check runs (grader.judging.boxes.Upcoming);
- `run(item)` runs a check's protocol here and turns its reports into a `CheckResult`;
- `annotate` classifies a failure and names the misconceptions that fail the check in exactly the
  same way (grader.judging.naming);
- `locate()`, after the file's own checks, grades hybrids of the file and the reference to find
  the TODOs that hold its mistake (grader.judging.locating); only whether each passes is kept. Then
  each located TODO gets its own diagnosis (GradeResult.diagnoses): the misconception of that TODO
  that fits the most of the file's failed checks. When several TODOs are located, the others' mistakes
  blur those failures (two mistakes of a TODO can then fit alike): the hybrid with the reference's
  code in every other TODO (that TODO's mistake alone) is run on the file's failed checks of that
  TODO and of the whole function and named the same way, and that name is used where it finds one.

With `every_language` (`kata grade`: a stored result, shown later in any language) each failed
check's message, and the load error, is also given in every other language (CheckResult.messages,
GradeResult.load_errors). One worded from data (grader.judging.outcomes: a timeout, a crash, the
learner's exception, a TODO not written, a load error) is worded again in each; one the check wrote
itself comes from running the check once more with that message language, on the file, in a fresh
contestant: only its message is kept, and only when it ends as the first run did (else the first
message stands for it too). Naming, fingerprints, outputs and the verdict are the first run's.
"""

import time
from collections import Counter
from pathlib import Path

import pytest
import torch
from _pytest.reports import TestReport
from _pytest.runner import runtestprotocol

from grader.content import seeds
from grader.content.catalogue import Kata
from grader.content.i18n import PHRASES, in_each, message_language, say, speaking
from grader.content.render import transplant
from grader.judging import outcomes
from grader.judging.boxes import Boxes, Upcoming
from grader.judging.expect import MissingFunction
from grader.judging.fingerprints import Fingerprints, fingerprint
from grader.judging.items import is_whole, run_check, titles, todo_of
from grader.judging.locating import Locator, default_parallel
from grader.judging.naming import Naming, PackedNaming
from grader.judging.recorded import Book, Recorder, Replay
from grader.judging.targets import load_module, target_source
from grader.report.results import CheckResult, Diagnosis, GradeResult, Location
from grader.run.arena import Arena
from grader.run.judge import Contestant, KnownHang, Stopped
from grader.run.limits import NO_LIMITS, Limits

OUTCOME_KEY = "kata_outcome"
FINGERPRINT_SHARE = 0.7  # re-running a failed check on the variants stops at this share of its time limit
REWORD_SLACK, REWORD_FLOOR = 2.0, 1.0  # a check run again for its message: 2x its first run + 1 s, at most


class KataSession:
    def __init__(self, kata: Kata, spec: str | Path, timeout: float, arena: Arena, limits: Limits = NO_LIMITS,
                 against: str | None = None, every_language: bool = False, values: str | None = None):  # fmt: skip
        """`arena`: the warm process and what goes with it (grader.run.arena); `every_language`:
        failed checks' messages in every language (see the module docstring); `values`:
        "record:DIR" keeps what the checks ask of the reference in DIR/SLUG.bin, "replay:DIR" answers
        them from there instead of the reference (grader.judging.recorded), as a student pack does."""
        torch.set_num_threads(1)  # the checks' tensors are tiny; idle OpenMP threads would spin on the CPU
        self.kata = kata
        self.spec = spec
        self.timeout = timeout
        self.against = against
        self.source, self.label = target_source(kata, spec)
        self.reference, self.recording = self._expected_values(kata, against, values)
        self.boxes = Boxes(arena, spec, limits)
        conditions = (
            f"{against=} {limits} sandboxed={arena.sandboxed} {message_language()} course={seeds.active_label()}"
        )
        self.fingerprints = Fingerprints(arena.fingerprints, kata, conditions)
        if kata.packed:  # no variant, no reference: recorded fingerprints name, the checks' TODOs locate
            self.naming = PackedNaming(kata, timeout)
            self.locator = Locator(self.boxes, self.reference, None, timeout, 1)
        else:
            self.naming = Naming(kata, self.boxes, self.fingerprints, self.reference)
            solution, parallel = kata.solution(), default_parallel(arena.in_class)
            self.locator = Locator(self.boxes, self.reference, solution, timeout, parallel)
        # grading a built-in variant runs each check on it: its outcomes are its fingerprints
        variant = isinstance(spec, str) and spec.startswith("misconception:")
        self.own_variant = spec.removeprefix("misconception:") if variant else None
        own = message_language()
        self.other_languages = tuple(lang for lang in PHRASES if lang != own) if every_language else ()
        self.load_error: str | None = None
        self.load_errors: dict[str, str] = {}  # the load error in every language (with every_language)
        self.check_started = 0.0  # when the running check started (time.monotonic)
        self.results: list[CheckResult] = []
        self.ran: list[tuple[pytest.Item, bool]] = []  # each check run, and whether it passed
        self.location: Location | None = None
        self.diagnoses: list[Diagnosis] = []  # one per located TODO written (see the module docstring)
        self.timings: Counter = Counter()  # seconds: the file's checks, naming, hybrids (GradeResult.timings)
        self.hung: set[str] = set()  # learner functions that already ran out of time
        self.spare: Contestant | None = None  # the probe's contestant, for the first check
        self.upcoming: Upcoming | None = None  # the next check's, started while a check runs
        self.outputs: dict[str, str] = {}  # nodeid -> what the learner's code printed in that check
        self.expected_from: dict[str, str] = {}

    def close_file(self) -> None:
        """End the variants' contestants (every other contestant ended with its check)."""
        self.naming.close()
        if self.spare is not None:  # no check ran
            self.spare.close()
            self.spare = None
        if self.upcoming is not None:
            self.upcoming.close()
            self.upcoming = None

    def close(self) -> None:
        self.close_file()
        self.boxes.close()
        self.fingerprints.save()
        if self.recording is not None:
            book, path = self.recording
            book.save(path)
            self.recording = None

    @staticmethod
    def _expected_values(kata: Kata, against: str | None, values: str | None):
        """(what the checks see as the reference, (book, path) when recording): the reference
        module, TRL's code where it has the function (`against`), a recorder or a replay."""
        if kata.packed:
            return Replay(Book.load(kata.folder / "recorded.bin")), None
        mode, _, folder = (values or "").partition(":")
        path = Path(folder) / f"{kata.slug}.bin"
        if mode == "replay":
            return Replay(Book.load(path)), None
        reference = load_module(kata.solution(), f"<reference {kata.slug}>", f"kata_reference_{kata.slug}")
        if against:  # the checks' expected values come from TRL where it has the function (grader.oracles.trl_oracle)
            from grader.oracles.trl_oracle import oracle_module

            reference = oracle_module(reference, kata.slug)
        if mode == "record":
            book = Book()
            return Recorder(reference, book), (book, path)
        return reference, None

    # -- contestants ------------------------------------------------------------------------------
    def learner(self, item: pytest.Item) -> Contestant:
        """A fresh contestant for this check, with the check's deadline: the probe's for the first
        check, then the one started while the check before ran (boxes.Upcoming), or one started
        now. While this check runs, the next check's is started."""
        contestant, self.spare = self.spare, None
        if contestant is None and self.upcoming is not None:
            contestant, self.upcoming = self.upcoming.take(), None
        if contestant is None:
            contestant = self.boxes.learner(self.source, self.label, self.timeout, self.hung)
        else:
            contestant.deadline = time.monotonic() + self.timeout
        items = item.session.items
        if items and item is not items[-1]:
            try:
                self.upcoming = self.boxes.upcoming(self.source, self.label, self.timeout, self.hung)
            except Stopped:  # no box to start it in: the next check starts its own, and says why not
                self.upcoming = None
        return contestant

    def probe(self) -> None:
        """Load the module under test once; remember why it failed, if it did. A contestant that
        loaded is kept for the first check (it is as fresh as any: nothing else ran in it)."""
        word = None  # words why it did not load, in the message language
        try:
            contestant = self.boxes.learner(self.source, self.label, self.timeout, self.hung)
        except Stopped as stopped:
            ending = stopped.ending
            word = lambda: (
                say("while loading the file, ", "加载文件时，") + outcomes.from_ending(ending, self.timeout).message
            )
            output = ending.output.strip()
        else:
            if contestant.load_error:
                contestant.close()
                raised = contestant.load_error
                word = lambda: outcomes.import_failure(raised)
            else:
                self.spare = contestant
            output = contestant.output.strip()
        if word is not None:
            tail = f"\n{output[-800:]}" if output else ""
            self.load_error = word() + tail
            self.load_errors = {lang: text + tail for lang, text in self.in_every_language(word).items()}

    def in_every_language(self, word) -> dict[str, str]:
        """{lang: word()} in this run's language and every other (grader.content.i18n.in_each),
        when the run gives every language; {} otherwise."""
        return in_each((message_language(), *self.other_languages), word) if self.other_languages else {}

    def _not_loaded(self) -> str:
        """A check's message when the file did not load, in the message language."""
        why = self.load_errors.get(message_language(), self.load_error)
        return say(f"your file could not be loaded: {why}", f"无法加载你的文件：{why}")

    # -- one check --------------------------------------------------------------------------------
    def run(self, item: pytest.Item) -> list[TestReport]:
        """Run one check (learner calls cross to contestants); return its reports and record its result."""
        if self.load_error:
            annotation = {
                "status": "error",
                "message": self._not_loaded(),
                "messages": self.in_every_language(self._not_loaded),
            }
            reports = [_failed_report(item, annotation["message"])]
        else:
            self.check_started = started = time.monotonic()
            naming_before = self.timings["naming"]
            self.fingerprint_deadline = self.check_started + FINGERPRINT_SHARE * self.timeout
            if self.against:
                self.reference.trl_calls = 0
            reports = runtestprotocol(item, log=False)
            annotation = next((dict(r.user_properties)[OUTCOME_KEY] for r in reports if r.failed), None)
            if annotation is not None and "messages" not in annotation:  # the check wrote it: run it again
                annotation["messages"] = self._run_again(item, annotation)
            self.timings["checks"] += time.monotonic() - started - (self.timings["naming"] - naming_before)
        passed = annotation is None
        self.ran.append((item, passed))
        if passed and self.own_variant:
            self.fingerprints.put(item.nodeid, self.own_variant, None)
        output = self.outputs.pop(item.nodeid, "")
        title, title_zh = titles(item)
        self.results.append(
            CheckResult(
                name=item.name.removeprefix("test_"),
                title=title,
                title_zh=title_zh,
                todo=todo_of(item),
                status="passed" if passed else annotation["status"],
                message="" if passed else annotation["message"],
                messages={} if passed else annotation["messages"],
                output="" if passed else output,
                matches=[] if passed else annotation.get("matches", []),
                expected_from=self.expected_from.pop(item.nodeid, "reference"),
                whole=is_whole(item),
                unwritten=None if passed else annotation.get("unwritten"),
            )
        )
        return reports

    def _run_again(self, item: pytest.Item, first: dict) -> dict[str, str]:
        """The failed check's message in every language, by running it again in each other one
        (see the module docstring); {} when the run gives one language only."""
        if not self.other_languages:
            return {}
        messages = {message_language(): first["message"]}
        seconds = min(self.timeout, REWORD_SLACK * first["seconds"] + REWORD_FLOOR)
        for lang in self.other_languages:
            with speaking(lang):
                again = self._check_again(item, seconds)
            messages[lang] = again.message if again.status == first["status"] else first["message"]
        return messages

    def _check_again(self, item: pytest.Item, seconds: float) -> outcomes.Outcome:
        """How `item` ends when run once more on the file, outside pytest, in a fresh contestant
        that has `seconds`; it changes nothing this run keeps (the functions known to hang included)."""
        contestant = None
        try:
            contestant = self.boxes.learner(self.source, self.label, seconds, set(self.hung))
            if contestant.load_error:
                return outcomes.Outcome("error")
            run_check(item, contestant, self.reference)
        except (Exception, Stopped, KnownHang, pytest.fail.Exception) as error:
            return outcomes.from_exception(error, self.timeout)
        finally:
            if contestant is not None:
                contestant.close()
        return outcomes.Outcome("passed")

    def finished(self, item: pytest.Item, contestant: Contestant) -> None:
        """The check's contestant is done: end it and keep what it printed."""
        contestant.close()
        self.outputs[item.nodeid] = contestant.output
        if self.against and getattr(self.reference, "trl_calls", 0):
            self.expected_from[item.nodeid] = self.against

    def result(self) -> GradeResult:
        result = GradeResult(
            self.kata.slug, str(self.spec), self.results, self.load_error, self.against, self.boxes.sandboxed,
            self.location, seccomp=self.boxes.seccomp is True, load_errors=self.load_errors,
            diagnoses=self.diagnoses, timings={phase: round(s, 4) for phase, s in self.timings.items()},
        )  # fmt: skip
        result.settle_misconceptions()
        return result

    def annotate(self, item: pytest.Item, error: BaseException, report: TestReport) -> None:
        """Classify a failure; name the misconceptions that fail the check the same way."""
        seconds = time.monotonic() - self.check_started  # the check's own run, before naming's
        outcome = outcomes.from_exception(error, self.timeout)
        matches = []
        if report.when == "call" and _fingerprintable(error):
            naming_started = time.monotonic()
            matches = self.naming.failing_alike(item, error, self.fingerprint_deadline)
            self.timings["naming"] += time.monotonic() - naming_started
            if self.own_variant:  # after naming: a variant is named by the same rule as a learner's file
                self.fingerprints.put(item.nodeid, self.own_variant, fingerprint(error))
            self.fingerprints.save()  # at once: a class's other files, graded meanwhile, read them
        annotation = {
            "status": outcome.status,
            "message": outcome.message,
            "matches": matches,
            "unwritten": outcome.unwritten,
            "seconds": seconds,
        }
        if outcome.rewordable:  # else run() runs the check again for the other languages
            annotation["messages"] = self.in_every_language(
                lambda: outcomes.from_exception(error, self.timeout).message
            )
        report.user_properties.append((OUTCOME_KEY, annotation))
        report.longrepr = outcome.message

    # -- where the mistake is -------------------------------------------------------------------
    def locate(self) -> None:
        """Find the TODOs that hold a failing file's difference from the reference (after its checks,
        the variants' contestants ended); the time it takes, naming within its hybrids included, is
        the hybrids'."""
        started = time.monotonic()
        self.location = self.locator.locate(self.source, self.ran)
        if self.location is not None and self.location.method == "transplant":
            todo_of_misconception = {item.id: item.todo for item in self.kata.misconceptions}
            for result in self.results:  # a misconception of another TODO cannot be this mistake
                result.matches = [m for m in result.matches if todo_of_misconception[m] in self.location.todos]
        self.diagnoses = self._diagnose()
        self.timings["hybrids"] += time.monotonic() - started

    def _diagnose(self) -> list[Diagnosis]:
        """A diagnosis for each located TODO that is written (see the module docstring)."""
        location = self.location
        if location is None or self.load_error:
            return []
        todo_of_misconception = {item.id: item.todo for item in self.kata.misconceptions}
        blank = {result.unwritten for result in self.results} - {None}
        diagnoses = []
        for todo in [todo for todo in location.todos if todo not in blank]:
            counts = Counter(m for r in self.results for m in r.matches if todo_of_misconception.get(m) == todo)
            several = len(location.todos) > 1 and location.method == "transplant"
            # the other mistakes blur the file's failures: the TODO's mistake alone names it where it can
            alone = self._named_alone(todo, todo_of_misconception) if several else Counter()
            named, checks = (alone or counts).most_common(1)[0] if alone or counts else (None, 0)
            diagnoses.append(Diagnosis(todo, named, checks, bool(alone)))
        return diagnoses

    def _named_alone(self, todo: int, todo_of_misconception: dict[str, int]) -> Counter:
        """How often each misconception of `todo` fits a failure of the hybrid holding the file's code
        of `todo` only (the reference's in every other TODO), on the file's failed checks of `todo` and
        of the whole function; within the locator's time."""
        others = {number.number for number in self.kata.todos} - {todo}
        source = transplant(self.source, self.kata.solution(), others)
        items = [item for item, passed in self.ran if not passed and todo_of(item) in (todo, None)]
        counts: Counter = Counter()
        for item, error in self.locator.failures(source, items):
            if _fingerprintable(error):
                matches = self.naming.failing_alike(item, error, self.locator.deadline)
                counts.update(m for m in matches if todo_of_misconception.get(m) == todo)
        return counts


def _fingerprintable(error: BaseException) -> bool:
    """A wrong result or an ordinary exception; not a missing function, a blank TODO or an exit."""
    return isinstance(error, Exception) and not isinstance(error, MissingFunction | NotImplementedError)


def _failed_report(item: pytest.Item, message: str) -> TestReport:
    return TestReport(
        nodeid=item.nodeid,
        location=item.location,
        keywords={name: 1 for name in item.keywords},
        outcome="failed",
        longrepr=message,
        when="call",
    )
