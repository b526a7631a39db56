"""Grade a class: every student's kata files, in parallel, resumably, whatever a file does.

Read: SUBMISSIONS/<student>/<slug>.py, any number of katas per student; the folder's other files
travel with it (a helper module it imports). Written: OUT/results/<student>/<slug>.json, one per
graded file, atomically, the moment it is graded. A rerun reuses a result whose digest (the rerun
key) is unchanged: every file a contestant can read of the student's folder (exactly what staging
copies, grader.run.staging.staged_names: the kata file, helpers, files named after other katas),
the kata (checks, reference, misconceptions), the grader's own source and the Settings (each can
change whether a check passes). `force` regrades everything. The language, the scoring, the
points and the feedback's kind are not in the key: a record holds each failed check's message in
every language (CheckResult.messages), and the grade sheet and feedback are rendered from the
records, so a change of --lang, --scoring, --points or --feedback grades nothing again.

One file (`grade_file`, in a worker of grader.judging.workers): the worker forks a judge that
runs, in-process, the same pytest run `kata check` starts (grader.run.grading.pytest_arguments),
in a private scratch folder (its cwd, HOME and TMPDIR), handing it the worker's arena for this
file (grader.run.arena: the warm process, the drop folder, the fingerprints, the file's cgroup).
The judge stages the student's folder (grader.run.staging); the learner's code runs only in
contestants forked by the warm process, each in a world of its own with a memory and a process
limit, inside the file's cgroup box (grader.run.containment). Workers import torch and pytest once
and keep their warm process, so a file costs forks, not Python starts. The report goes to a
private file with a random name; the worker kills the box before it reads the report, checks it,
and turns every other ending into a result with a reason. A worker that dies is replaced and its
file graded again (grader.judging.workers).

`grade_targets` grades the built-in targets (reference, template, misconception:ID) through the
same warm workers, one forked judge each: the content tests' sweep of every kata.
"""

import hashlib
import json
import os
import secrets
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import asdict, dataclass, field
from pathlib import Path

from grader import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT, run_limit, source_digest
from grader.content import catalogue
from grader.judging.workers import Died, Workers, fork_judge
from grader.report.inert import inert
from grader.report.results import STATUSES, GradeResult
from grader.run import containment
from grader.run.staging import folder_files, staged_names

RECORD_VERSION = 2  # 2: every failed check's message in every language; siblings in the rerun key
JUDGE_LANGUAGE = "en"  # the judge's own language; the records hold every language's messages anyway


@dataclass(frozen=True)
class Settings:
    """How a file is graded. Each field can change whether a check passes, so all of them are in
    the rerun key (digest hashes this object's repr); what only changes how a result is shown
    (the language, the scoring, the points, the feedback's kind) does not belong here."""

    timeout: float = DEFAULT_TIMEOUT  # seconds per check
    memory_mb: int = DEFAULT_MEMORY_MB  # memory each check may add
    max_tasks: int = containment.MAX_TASKS  # processes and threads one file's grading may hold
    sandboxed: bool = True  # contestants run in the OS sandbox (grader.run.sandbox); False: --no-sandbox
    values: str = (
        ""  # `kata pack`: "record:DIR" or "replay:DIR", the expected values' recordings (grader.judging.recorded)
    )
    course: str = ""  # --course: the course file whose seed draws the checks' inputs (grader.content.seeds); "": none

    @property
    def course_label(self) -> str:
        """The public label of the course's seed ("" with none): a changed course file grades again."""
        from grader.content import seeds

        return seeds.label(seeds.read_course(Path(self.course))) if self.course else ""

    @property
    def run_limit(self) -> float:
        """Seconds one file's whole grading run may take (as `kata check` allows)."""
        return run_limit(self.timeout)

    @property
    def limits(self):
        """What each contestant may take (grader.run.limits)."""
        from grader.run.limits import Limits

        return Limits(self.memory_mb, self.max_tasks)


@dataclass(frozen=True)
class Job:
    student: str
    slug: str
    folder: Path
    digest: str
    settings: Settings


@dataclass
class Roster:
    katas: list[str]  # the grade sheet's columns, in learning order
    students: list[str]
    jobs: list[Job]
    strays: dict[str, list[str]] = field(default_factory=dict)  # student -> .py files named after no kata
    ignored: list[str] = field(default_factory=list)  # entries of SUBMISSIONS that are not student folders
    misnamed: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # student -> {slug: names near it}
    several: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # student -> {slug: its files, 2+}

    def not_graded(self, student: str, slug: str) -> dict[str, list[str]]:
        """Why `student`'s `slug` was graded nowhere, where the roster knows: {"misnamed": names near
        it} and/or {"several": its files}; {} otherwise."""
        found = {kind: getattr(self, kind).get(student, {}).get(slug) for kind in ("misnamed", "several")}
        return {kind: names for kind, names in found.items() if names}


class BatchError(ValueError):
    """The submissions folder cannot be graded at all (a user error, said in one line)."""


# -- discovery --------------------------------------------------------------------------------


def discover(root: Path, slugs: list[str] | None, settings: Settings, exclude: tuple[Path, ...] = ()) -> Roster:
    """The students (sub-folders of `root`) and their kata files; `slugs` limits the katas.

    Any folder or file name is data: the roster's students, strays and ignored entries, and each
    Job's student, are display names (grader.classroom.names.display_name); Job.folder is the real path.
    A kata file is found anywhere inside the student's folder (hw3/grpo_loss.py) when it is the only
    one of its name, and graded in its own folder; several of one name are graded nowhere but kept in
    `several`, for the feedback to list. A file whose name is near a kata's (names.near_slug:
    "GRPO_loss.py", "dpo_loss (1).py") is graded nowhere but kept in `misnamed`, for the feedback to
    ask "did you mean". Students come in natural, case-insensitive order (names.natural_key:
    student2 before student10), the order of grades.json, grades.csv and the class page.
    """
    from grader.classroom.names import display_name, natural_key, near_slug

    if not root.is_dir():
        raise BatchError(f"{display_name(str(root))} is not a folder of student folders")
    known = [kata.slug for kata in catalogue.all_katas()]
    wanted = set(slugs or known)
    excluded = {path.resolve() for path in exclude}
    students, jobs, strays, misnamed, several, ignored, found = [], [], {}, {}, {}, [], set()
    for entry in sorted(root.iterdir(), key=lambda path: natural_key(display_name(path.name))):
        if entry.name.startswith(".") or entry.resolve() in excluded:
            continue
        student = display_name(entry.name)
        if entry.is_symlink() or not entry.is_dir():
            ignored.append(student)
            continue
        students.append(student)
        for name, paths in sorted(_python_files(entry).items()):
            slug, top = name.removesuffix(".py"), [path for path in paths if path.parent == entry]
            near = near_slug(slug, known) if slug not in known else None
            if slug in wanted and len(paths) == 1:  # anywhere inside the student's folder: hw3/grpo_loss.py
                found.add(slug)
                folder = paths[0].parent
                jobs.append(Job(student, slug, folder, digest(folder, slug, settings, folder_files(folder)), settings))
            elif slug in wanted:  # which one to grade is not for us to guess: none, and the feedback lists them
                found.add(slug)
                several.setdefault(student, {})[slug] = [
                    display_name(path.relative_to(entry).as_posix()) for path in paths
                ]
            elif near in wanted:  # graded nowhere, but named: "did you mean {near}.py?"
                found.add(near)
                names = [display_name(path.relative_to(entry).as_posix()) for path in paths]
                misnamed.setdefault(student, {}).setdefault(near, []).extend(names)
            elif slug not in known and top:  # helpers in sub-folders are no one's business
                strays.setdefault(student, []).extend(display_name(path.name) for path in top)
    columns = [slug for slug in known if slug in (set(slugs) if slugs else found)]
    return Roster(columns, students, jobs, strays, ignored, misnamed, several)


def _python_files(folder: Path) -> dict[str, list[Path]]:
    """{file name: its paths}: the .py files anywhere inside `folder`, links, hidden folders and
    __pycache__ left out (as staging.folder_files walks), each name's paths in order."""
    found: dict[str, list[Path]] = {}
    for top, dirs, files in os.walk(folder):  # does not follow links to folders
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        for name in sorted(files):
            path = Path(top) / name
            if name.endswith(".py") and not name.startswith(".") and not path.is_symlink() and path.is_file():
                found.setdefault(name, []).append(path)
    return found


def digest(folder: Path, slug: str, settings: Settings, files: list[str]) -> str:
    """The rerun key: what a result depends on. The kata, the grader, the settings, and every file
    staged for this kata file (staging.staged_names of `files`, the folder's folder_files): the
    kata file, and every other, named after a kata or not, since a contestant can import any.

    Each file is its name as bytes (a name need not be UTF-8) and its content, each with its
    length first, so that no two folders hash alike; a file that cannot be read is hashed as
    absent, as staging leaves it out (the kata file must be readable).
    """
    kata_file = f"{slug}.py"
    kata = catalogue.get_kata(slug)
    hasher = hashlib.sha256(
        f"{RECORD_VERSION} {slug} {source_digest()} {kata.digest} {settings} {settings.course_label}".encode()
    )
    for name in staged_names(kata_file, files):
        encoded = os.fsencode(name)
        hasher.update(len(encoded).to_bytes(8, "big") + encoded)
        try:
            content = (folder / name).read_bytes()
        except OSError:
            if name == kata_file:
                raise
            hasher.update(b"\0")
            continue
        hasher.update(b"\1" + len(content).to_bytes(8, "big") + content)
    return hasher.hexdigest()


# -- results on disk --------------------------------------------------------------------------


def record_path(out: Path, student: str, slug: str) -> Path:
    """OUT/results/STUDENT/SLUG.json; `student` is a display name, one folder per student (names.file_name)."""
    from grader.classroom.names import file_name

    return out / "results" / file_name(student) / f"{slug}.json"


def load_record(out: Path, job: Job) -> dict | None:
    """The stored result of `job` if it is there, readable and of the same digest."""
    try:
        record = json.loads(record_path(out, job.student, job.slug).read_text(encoding="utf-8"))
        GradeResult.from_json(record["grade"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    same = record.get("digest") == job.digest and record.get("version") == RECORD_VERSION
    return record if same and "error" not in record else None  # a grader failure is graded again


def save_record(out: Path, record: dict) -> None:
    from grader.files import atomic_write, json_text

    results = out / "results"  # the instructor's only: every check's messages, the settings
    results.mkdir(mode=0o700, parents=True, exist_ok=True)
    results.chmod(0o700)
    atomic_write(record_path(out, record["student"], record["kata"]), json_text(record))


# -- the pool ---------------------------------------------------------------------------------


@dataclass
class BatchRun:
    records: dict[tuple[str, str], dict]  # (student, slug) -> record
    graded: int = 0
    reused: int = 0


def run_batch(
    roster: Roster, out: Path, workers: int, force: bool = False, on_done: Callable[[dict], None] | None = None
) -> BatchRun:
    """Grade what is new or changed (everything with `force`), saving each result as it arrives.

    At the end every record is saved again from memory: whatever a submission wrote over another's
    result file while it ran (all its processes are dead by then) is undone. An interrupt
    (grader.run.interrupt) ends every worker, and removes the run's folder, before it goes on up:
    what was saved before it is kept, and a rerun resumes from there.
    """
    containment.clean_leftovers()  # the cgroups of a run that was killed, and their processes
    run = BatchRun({})
    todo = []
    for job in roster.jobs:
        record = None if force else load_record(out, job)
        if record is None:
            todo.append(job)
        else:
            run.records[job.student, job.slug] = record
            run.reused += 1
    with closing(graded_records(todo, workers)) as records:  # an interrupt ends the workers before it leaves
        for record in records:
            save_record(out, record)
            run.records[record["student"], record["kata"]] = record
            run.graded += 1
            if on_done:
                on_done(record)
    for record in run.records.values():
        save_record(out, record)
    return run


def graded_records(jobs: list[Job], workers: int) -> Iterator[dict]:
    """Records of `jobs` as they finish, from `workers` warm workers (grader.judging.workers).

    A job whose workers all died is the file's crash only if a fresh worker then grades the kata's
    reference (the control file); else it is an error record. A task that raised (`Failed`: the
    worker could not grade at all, grade_file turns every ending of a file into a record) is an error.
    """
    if not jobs:
        return
    with warm_workers(workers, jobs[0].settings, {job.slug for job in jobs}) as pool:
        died = []
        for index, outcome in pool.run([(grade_file, (job,)) for job in jobs]):
            if isinstance(outcome, Died):
                died.append(jobs[index])
            else:
                yield outcome if isinstance(outcome, dict) else error_record(jobs[index], outcome.reason)
        slugs = sorted({job.slug for job in died})
        controls = dict(pool.run([(control_passes, (slug, jobs[0].settings)) for slug in slugs]))
        for job in died:
            passes = controls.get(slugs.index(job.slug)) is True
            yield failed_record(job, Died.reason, 0.0) if passes else error_record(job, Died.reason)


class warm_workers:  # noqa: N801  (used as `with warm_workers(...) as pool`)
    """`Workers` for the katas `slugs`, in a run folder of their own in the system's temporary
    folder: their drop folders, their judges' scratch folders, the run's fingerprints; gone at the end."""

    def __init__(self, count: int, settings: Settings, slugs: set[str]):
        imports = sorted({line for slug in slugs for line in catalogue.get_kata(slug).warm_imports})
        self.folder = tempfile.TemporaryDirectory(prefix="kata-grade-")
        self.pool = Workers(count, settings.sandboxed, JUDGE_LANGUAGE, imports, Path(self.folder.name))

    def __enter__(self) -> Workers:
        return self.pool

    def __exit__(self, *exc) -> None:
        try:
            self.pool.close()
        finally:
            self.folder.cleanup()


# -- one file, in a worker --------------------------------------------------------------------


def grade_file(job: Job, arena) -> dict:
    """Grade one student's kata file with a judge of its own, inside a box; never raises.

    A grading that gave no result, or a check that crashed, is the file's doing only if this worker
    then grades the control file (the kata's reference) with every check passing; if it cannot, the
    grader failed, and the record is an error (error_record), never a grade.

    Its record is shown later in any language (the rerun key holds none): the judge gives every
    failed check's message in every language.
    """
    start = time.perf_counter()
    try:
        result, reason, peak_kb = _judge(job.slug, job.folder / f"{job.slug}.py", job.settings, arena, True)
    except Exception as error:  # the grader's own failure, or one the file caused: the control tells
        result, reason, peak_kb = None, f"grading stopped on {type(error).__name__}: {error}", 0
    seconds = time.perf_counter() - start
    crashed = None if result is None else [check.name for check in result.checks if check.status == "error"]
    if crashed != [] and not control_passes(job.slug, job.settings, arena, crashed):
        return error_record(job, reason or _crash_reason(result), seconds)
    if result is None:
        reason = reason.replace(f"{job.folder}{os.sep}", f"{job.student}{os.sep}")
        return failed_record(job, reason, seconds, peak_kb)
    return _record(job, result, seconds, peak_kb)


def control_passes(slug: str, settings: Settings, arena, checks: list[str] | None = None) -> bool:
    """Whether this worker grades kata `slug`'s reference with every check passing (never raises):
    if it cannot, what went wrong with a file's grading was the grader's, not the file's.
    `checks`: the checks that crashed for the file, run again on the reference (the same way);
    None (the grading gave no result): every check."""
    try:
        result, _, _ = _judge(slug, "reference", settings, arena, checks=checks)
    except Exception:
        return False
    return result is not None and bool(result.checks) and result.failed == 0


def _crash_reason(result: GradeResult) -> str:
    crashed = next(check for check in result.checks if check.status == "error")
    return f"{crashed.name}: {crashed.message.splitlines()[0] if crashed.message else 'crashed'}"


def _judge(
    slug: str, target: str | Path, settings: Settings, arena, every_language: bool = False, checks=None
) -> tuple[GradeResult | None, str, int]:
    """Grade `target` (a student's file, or a built-in target) with a judge forked in a scratch
    folder of its own, in the worker's run folder; its messages in JUDGE_LANGUAGE, and with
    `every_language` each failed check's in every language too (grader.judging.session).
    `checks`: only these (their names); None: every check.

    Returns the run's result (None when it gave none), why it gave none, and the judge's peak memory in KiB.
    """
    from grader.run.child import last_line
    from grader.run.grading import pytest_arguments

    with tempfile.TemporaryDirectory(prefix="judge-", dir=arena.home, ignore_cleanup_errors=True) as scratch:
        report = Path(scratch) / f"{secrets.token_hex(16)}.json"
        log = Path(scratch) / "pytest.log"
        kata = catalogue.get_kata(slug)
        arguments = pytest_arguments(
            kata, target, settings.timeout, report, settings.limits,
            lang=JUDGE_LANGUAGE, every_language=every_language, checks=checks, values=settings.values or None,
            course=settings.course or None,
        )  # fmt: skip
        ending, peak_kb = _run_boxed(arguments, Path(scratch), log, settings, arena)
        result = _read_report(report, slug)
        reason = "" if result else ending or f"the grading run ended without a result: {last_line(log)}"
    return result, reason, peak_kb


def _run_boxed(arguments: list[str], scratch: Path, log: Path, settings: Settings, arena) -> tuple[str, int]:
    """Fork the judge (the pytest run) in the file's cgroup box, for at most the run limit.

    Returns (why it ended without a result, if it did so abnormally, else "") and the peak resident
    memory of the judge in KiB.
    """
    box = containment.Box(settings.max_tasks, settings.memory_mb)
    ended = fork_judge(arguments, arena, scratch, log, settings.run_limit, box)
    return ended.reason(settings.run_limit), ended.peak_kb


def _read_report(report: Path, slug: str) -> GradeResult | None:
    """The run's result if it is a well-formed result for this kata, else None."""
    try:
        result = GradeResult.from_json(json.loads(report.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    valid = result.kata == slug and all(check.status in STATUSES for check in result.checks)
    return result if valid and (result.checks or result.load_error) else None


def _record(job: Job, result: GradeResult, seconds: float, peak_kb: int = 0) -> dict:
    result.target = f"{job.student}/{job.slug}.py"
    return {
        "version": RECORD_VERSION,
        "student": job.student,
        "kata": job.slug,
        "digest": job.digest,
        "seconds": round(seconds, 3),
        "peak_kb": peak_kb,
        "settings": asdict(job.settings),
        "grade": result.to_json(),
    }


def failed_record(job: Job, reason: str, seconds: float, peak_kb: int = 0) -> dict:
    """A result for a file whose grading run gave none: no checks, the reason as its load error."""
    return _record(job, GradeResult(job.slug, f"{job.slug}.py", [], load_error=reason), seconds, peak_kb)


def error_record(job: Job, reason: str, seconds: float = 0.0) -> dict:
    """The grader failed on this file (the control file failed too): no grade, `"error"` says why.
    Never reused by a rerun (load_record), counted by nobody's grade (gradesheet)."""
    return failed_record(job, reason, seconds) | {"error": inert(reason)}


# -- built-in targets (the content tests) -----------------------------------------------------


def grade_targets(
    targets: list[tuple[str, str]], workers: int, settings: Settings, every_language: bool = False
) -> dict[tuple[str, str], GradeResult]:
    """{(slug, target): result} for built-in targets ("reference", "template", "misconception:ID"),
    graded by warm workers as `grade_file` grades a student's file; with `every_language`, each
    failed check's message in every language too, as `grade_file` stores them (GradeResult.in_language).

    A target whose grading gave no result (or whose worker died) gets a result with no checks and
    the reason as its load error.
    """
    if not targets:
        return {}
    results = {}
    with warm_workers(min(workers, len(targets)), settings, {slug for slug, _ in targets}) as pool:
        tasks = [(grade_target, (slug, target, settings, every_language)) for slug, target in targets]
        for index, outcome in pool.run(tasks):
            slug, target = targets[index]
            if not isinstance(outcome, GradeResult):
                outcome = GradeResult(slug, target, [], load_error=f"the grader failed: {outcome.reason}")
            results[slug, target] = outcome
    return {job: results[job] for job in targets}


def grade_target(slug: str, target: str, settings: Settings, every_language: bool, arena) -> GradeResult:
    """Grade one built-in target of kata `slug` in a worker, inside a box."""
    result, reason, _ = _judge(slug, target, settings, arena, every_language)
    return result or GradeResult(slug, target, [], load_error=reason)
