"""One grading run, in the judge: a kata, the module under test, and what each check concluded.

The judge (this pytest process) holds the checks, the reference, the misconception variants'
source and every result. It never runs learner code: the module under test lives in contestant
processes (grader.run), a fresh one per check, spawned by a warm process started first thing:

- `probe()` loads the module once, so a file that cannot load fails every check at once;
- the `learner` fixture is a fresh contestant with the check's deadline; calls cross as data;
- `run(item)` runs a check's protocol here and turns its reports into a `CheckResult`;
- `annotate` classifies a failure and names the misconceptions that fail the check in exactly
  the same way (each variant, too, runs in a contestant of its own);
- `locate()`, after the file's own checks, grades hybrids of the file and the reference to find the
  TODOs that hold its mistake (grader.judging.localise); hybrids are learner code, so they run as
  contestants too, in boxes of their own, and only whether they pass is kept.
"""

import inspect
import os
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch
from _pytest.reports import TestReport
from _pytest.runner import runtestprotocol

from grader.content.catalogue import Kata
from grader.content.i18n import message_language, say
from grader.judging import localise, outcomes
from grader.judging.expect import Expect, MissingFunction
from grader.judging.fingerprints import MISSING, Fingerprints, fingerprint
from grader.judging.targets import load_module, target_source, warm_imports
from grader.report.results import CheckResult, GradeResult, Location
from grader.run import containment, sandbox
from grader.run.judge import Contestant, FileBox, KnownHang, Stopped, Zygote
from grader.run.limits import NO_LIMITS, Limits

OUTCOME_KEY = "kata_outcome"
FINGERPRINT_SHARE = 0.7  # re-running a failed check on the variants stops at this share of its time limit
LOCATE_SECONDS = 4.0  # the hybrids of one file may take this many check time limits in all
SHARED_ZYGOTE: Zygote | None = None  # a warm process a batch worker keeps across files (grader.classroom.batch)
SHARED_CGROUP: containment.Box | None = None  # the batch worker's cgroup box for the file being graded


class KataSession:
    def __init__(
        self,
        kata: Kata,
        spec: str | Path,
        timeout: float,
        limits: Limits = NO_LIMITS,
        against: str | None = None,
        started: tuple | None = None,
        fingerprints: Path | None = None,
    ):
        """`started`: (process, control socket, drop folder or None) of the warm process the plugin
        started before importing torch (grader.run.warm); without it, a batch worker's SHARED_ZYGOTE.
        `fingerprints`: the folder where the variants' fingerprints are remembered (None: nowhere)."""
        torch.set_num_threads(1)  # the checks' tensors are tiny; idle OpenMP threads would spin on the CPU
        self.drop: Path | None = None  # the folder the sandbox sees at /kata/drop, when this session made one
        if SHARED_ZYGOTE is not None:
            self.zygote = SHARED_ZYGOTE
        else:
            process, control, self.drop = started
            self.zygote = Zygote(process, control, warm_imports(kata), limits, self.drop)
        self.sandboxed = self.zygote.sandboxed
        self.file_box: FileBox | None = None
        self.cgroup: containment.Box | None = None
        self.kata = kata
        self.spec = spec
        self.timeout = timeout
        self.against = against
        self.source, self.learner_file = target_source(kata, spec)
        if self.sandboxed and isinstance(spec, Path):  # its copy, as the contestant sees it
            self.learner_file = f"{sandbox.WORK}/{spec.name}"
        self.reference = load_module(kata.solution(), f"<reference {kata.slug}>", f"kata_reference_{kata.slug}")
        if against:  # the checks' expected values come from TRL where it has the function (grader.oracles.trl_oracle)
            from grader.oracles.trl_oracle import oracle_module

            self.reference = oracle_module(self.reference, kata.slug)
        self.variants = {item.id: kata.variant(item.id) for item in kata.misconceptions}
        self.variant_contestants: dict[str, Contestant] = {}
        # grading a built-in variant runs each check on it: its outcomes are its fingerprints
        variant = isinstance(spec, str) and spec.startswith("misconception:")
        self.own_variant = spec.removeprefix("misconception:") if variant else None
        self.fingerprints = Fingerprints(
            fingerprints, kata, f"{against=} {self.zygote.limits} {self.sandboxed=} {message_language()}"
        )
        self.load_error: str | None = None
        self.results: list[CheckResult] = []
        self.ran: list[tuple[pytest.Item, bool]] = []  # each check run, and whether it passed
        self.location: Location | None = None
        self.zygote_lock = threading.Lock()  # hybrids open and close boxes from threads
        self.hung: set[str] = set()  # learner functions that already ran out of time
        self.outputs: dict[str, str] = {}  # nodeid -> what the learner's code printed in that check
        self.expected_from: dict[str, str] = {}

    def close_file(self) -> None:
        """End the file's box: every process its code started is gone when this returns."""
        for variant in self.variant_contestants.values():
            variant.close()
        self.variant_contestants = {}
        if self.file_box is not None:
            self.file_box.close()
            self.file_box = None
        if self.cgroup is not None and self.cgroup is not SHARED_CGROUP:
            self.cgroup.close()
        self.cgroup = None

    def close(self) -> None:
        self.close_file()
        self.fingerprints.save()
        if self.zygote is not SHARED_ZYGOTE:
            self.zygote.close(wait=False)  # it ends when its control socket closes; nothing of the file is left
        if self.drop is not None:
            shutil.rmtree(self.drop, ignore_errors=True)

    # -- contestants ------------------------------------------------------------------------------
    def _work(self) -> Path:
        """The folder the file's box starts from: the copy of the student's folder."""
        if SHARED_ZYGOTE is not None or self.drop is None:
            return Path.cwd()  # grader.classroom.batch's scratch copy, or `kata check`'s scratch folder
        work = self.drop / "file"
        if not work.exists():
            work.mkdir()
            if isinstance(self.spec, Path):
                from grader.classroom.batch import copy_folder

                copy_folder(self.spec.resolve().parent, work, self.spec.name)
        return work

    def _box(self) -> FileBox:
        if self.file_box is None or not self.file_box.alive:
            if self.file_box is not None:  # learner code killed it: start the file's box again
                self.file_box.close()
            self.file_box = self._open_box(self._work())
        return self.file_box

    def _open_box(self, folder: Path) -> FileBox:
        """A box for the file's code, working in `folder`, inside the file's cgroup (where there is one)."""
        if not self.zygote.alive:  # learner code killed the warm process: go on with one of this judge's own
            self.zygote = self.zygote.restart()
        box = self.zygote.open_file(folder)
        if self.cgroup is None:
            self.cgroup = SHARED_CGROUP or containment.Box(memory_mb=self.zygote.limits.memory_mb)
        if self.cgroup.paths and box.host_pid:
            self.cgroup.add(box.host_pid)
        return box

    def spawn(self, source: str, filename: str, seconds: float, hung: set[str] | None = None) -> Contestant:
        return self._box().spawn(source, filename, seconds, self.hung if hung is None else hung)

    def probe(self) -> None:
        """Load the module under test once; remember why it failed, if it did."""
        try:
            contestant = self.spawn(self.source, self.learner_file, self.timeout)
        except Stopped as stopped:
            outcome = outcomes.from_ending(stopped.ending, self.timeout)
            self.load_error = say("while loading the file, ", "加载文件时，") + outcome.message
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
            message = say(f"your file could not be loaded: {self.load_error}", f"无法加载你的文件：{self.load_error}")
            annotation = {"status": "error", "message": message}
            reports = [_failed_report(item, annotation["message"])]
        else:
            self.fingerprint_deadline = time.monotonic() + FINGERPRINT_SHARE * self.timeout
            if self.against:
                self.reference.trl_calls = 0
            reports = runtestprotocol(item, log=False)
            annotation = next((dict(r.user_properties)[OUTCOME_KEY] for r in reports if r.failed), None)
        passed = annotation is None
        self.ran.append((item, passed))
        if passed and self.own_variant:
            self.fingerprints.put(item.nodeid, self.own_variant, None)
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
                whole=item.get_closest_marker("whole") is not None,
                unwritten=None if passed else annotation.get("unwritten"),
            )
        )
        return reports

    def finished(self, item: pytest.Item, contestant: Contestant) -> None:
        """The check's contestant is done: end it and keep what it printed."""
        contestant.close()
        self.outputs[item.nodeid] = contestant.output
        if self.against and getattr(self.reference, "trl_calls", 0):
            self.expected_from[item.nodeid] = self.against

    def result(self) -> GradeResult:
        result = GradeResult(
            self.kata.slug, str(self.spec), self.results, self.load_error, self.against, self.sandboxed, self.location
        )
        result.settle_misconceptions()
        return result

    def annotate(self, item: pytest.Item, error: BaseException, report: TestReport) -> None:
        """Classify a failure; name the misconceptions that fail the check the same way."""
        outcome = outcomes.from_exception(error, self.timeout)
        matches = []
        if report.when == "call" and _fingerprintable(error):
            matches = self._misconceptions_failing_alike(item, error)
            if self.own_variant:  # after naming: a variant is named by the same rule as a learner's file
                self.fingerprints.put(item.nodeid, self.own_variant, fingerprint(error))
            self.fingerprints.save()  # at once: a class's other files, graded meanwhile, read them
        annotation = {
            "status": outcome.status,
            "message": outcome.message,
            "matches": matches,
            "unwritten": outcome.unwritten,
        }
        report.user_properties.append((OUTCOME_KEY, annotation))
        report.longrepr = outcome.message

    def _misconceptions_failing_alike(self, item: pytest.Item, failure: BaseException) -> list[str]:
        """The variants whose run of this check raises the same kind of error with the same message.

        A variant's fingerprint on a check is computed once and remembered (grader.judging.fingerprints).
        """
        wanted = fingerprint(failure)
        matches = []
        self.fingerprints.refresh()
        for misconception_id in self.variants:
            known = self.fingerprints.get(item.nodeid, misconception_id)
            if known is MISSING:
                left = self.fingerprint_deadline - time.monotonic()
                if left <= 0:  # never let naming a mistake cost a timeout
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
            if known == wanted:
                matches.append(misconception_id)
        return matches

    def _fingerprint_of(self, item: pytest.Item, variant: Contestant) -> list[str] | None:
        """How the check ends with `variant` as the module under test."""
        try:
            self._run_check(item, variant)
        except Exception as error:
            return fingerprint(error)
        return None

    def _run_check(self, item: pytest.Item, contestant: Contestant) -> None:
        """The check's own code, with `contestant` as the module under test (raises what it raises)."""
        params = item.callspec.params if hasattr(item, "callspec") else {}
        values = dict(params, learner=contestant, reference=self.reference)
        values["expect"] = Expect(contestant, self.reference)
        item.obj(**{name: values[name] for name in inspect.signature(item.obj).parameters})

    # -- where the mistake is -------------------------------------------------------------------
    def locate(self) -> None:
        """Find the TODOs that hold a failing file's difference from the reference (after its checks,
        its own box closed): each hybrid runs every check in a fresh box, the file's failed ones first."""
        failed = [item for item, passed in self.ran if not passed]
        if not failed:
            return
        self.hybrid_order = failed + [item for item, passed in self.ran if passed]
        self.locate_deadline = time.monotonic() + LOCATE_SECONDS * self.timeout
        tagged = sorted({_todo_of(item) for item in failed} - {None})
        self.location = localise.locate(self.source, self.kata.solution(), tagged, self._first_passing)
        if self.location.method == "transplant":  # a misconception of another TODO cannot be this mistake
            todo_of = {item.id: item.todo for item in self.kata.misconceptions}
            for result in self.results:
                result.matches = [match for match in result.matches if todo_of[match] in self.location.todos]

    def _first_passing(self, sources: list[str]) -> int | None:
        """The index of the first hybrid, in order, that passes every check; graded a few at a time."""
        parallel = 1 if SHARED_ZYGOTE is not None else min(2, os.cpu_count() or 1)  # a class: files in parallel
        with ThreadPoolExecutor(parallel) as pool:
            for start in range(0, len(sources), parallel):
                passes = list(pool.map(self._hybrid_passes, sources[start : start + parallel]))
                if True in passes:
                    return start + passes.index(True)
        return None

    def _fresh_folder(self) -> Path:
        """A folder for a hybrid's box that nothing of the file's own run touched."""
        if self.sandboxed:
            return self._work()  # a sandboxed box copies it into a tmpfs of its own
        folder = Path(tempfile.mkdtemp(prefix="kata-hybrid-"))
        if isinstance(self.spec, Path):
            from grader.classroom.batch import copy_folder

            copy_folder(self.spec.resolve().parent, folder, self.spec.name)
        return folder

    def _hybrid_passes(self, source: str) -> bool:
        """Whether the hybrid passes every check; OutOfTime once the search's time is spent."""
        folder = self._fresh_folder()
        box = None
        try:
            with self.zygote_lock:
                box = self._open_box(folder)
            hung: set[str] = set()
            for item in self.hybrid_order:
                left = self.locate_deadline - time.monotonic()
                if left <= 0:
                    raise localise.OutOfTime
                contestant = box.spawn(source, self.learner_file, min(self.timeout, left), hung)
                try:
                    self._run_check(item, contestant)
                except (Exception, KnownHang, pytest.fail.Exception):
                    return False
                finally:
                    contestant.close()
            return True
        except Stopped as stopped:
            if stopped.ending.timed_out and time.monotonic() >= self.locate_deadline:
                raise localise.OutOfTime from None  # cut short by the search's time, not the check's
            return False
        finally:
            if box is not None:
                with self.zygote_lock:
                    box.close()
            if not self.sandboxed:
                shutil.rmtree(folder, ignore_errors=True)

    def _variant(self, misconception_id: str, seconds: float) -> Contestant:
        """The variant's contestant, kept for the file's later checks (the variants are the grader's
        own deterministic code: one process each per file, not per check, keeps naming cheap)."""
        variant = self.variant_contestants.get(misconception_id)
        if variant is None or variant.pid is None:
            source = self.variants[misconception_id]
            variant = self.spawn(source, f"<misconception {misconception_id}>", seconds, set())
            self.variant_contestants[misconception_id] = variant
        variant.deadline = time.monotonic() + seconds
        return variant


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


def _titles(doc: str | None) -> tuple[str, str]:
    """(English title, Chinese title) of a check: its docstring's first line and its "zh:" line."""
    lines = [line.strip() for line in (doc or "").strip().splitlines()]
    zh = next((line.removeprefix("zh:").strip() for line in lines if line.startswith("zh:")), "")
    return (lines[0] if lines else ""), zh


def _todo_of(item: pytest.Item) -> int | None:
    marker = item.get_closest_marker("todo")
    return marker.args[0] if marker else None
