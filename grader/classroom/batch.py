"""Grade a class: every student's kata files, in parallel, resumably, whatever a file does.

Read: SUBMISSIONS/<student>/<slug>.py, any number of katas per student; the folder's other files
travel with it (a helper module it imports). Written: OUT/results/<student>/<slug>.json, one per
graded file, atomically, the moment it is graded. A rerun reuses a result whose digest is
unchanged: the file, its folder's other files, the kata (checks, reference, misconceptions), the
grader's own source and the limits. `force` regrades everything.

One file (`grade_file`, in a pool worker): the student's folder is copied (regular files only,
links not followed) to a scratch folder that becomes the cwd, HOME and TMPDIR; the worker forks a
judge that runs, in-process, the same pytest run `kata check` starts
(grader.run.grading.pytest_arguments). The learner's code runs only in contestants, forked by the
worker's warm contestant process (grader.run), each with a memory and a process limit, and each
entering the file's containment box (grader.run.containment) before anything else. Workers import
torch and pytest once and keep their warm process, so a file costs forks, not Python starts. The
report goes to a second private folder with a random name; the worker kills the box before it
reads the report, checks it, and turns every other ending into a result with a reason.

The pool is concurrent.futures.ProcessPoolExecutor with "spawn" workers; a worker that dies is
replaced and its files are graded again.

`grade_targets` grades the built-in targets (reference, template, misconception:ID) through the
same warm workers, one forked judge each: the content tests' sweep of every kata.
"""

import gc
import hashlib
import json
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass, field
from multiprocessing import get_context
from pathlib import Path

from grader import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT, run_limit, source_digest
from grader.content import catalogue
from grader.report.results import STATUSES, GradeResult
from grader.run import containment

RECORD_VERSION = 1
COPY_LIMIT_BYTES = 20 * 2**20  # what a student's folder may bring along to the scratch copy
COPY_LIMIT_FILES = 500


@dataclass(frozen=True)
class Settings:
    timeout: float = DEFAULT_TIMEOUT  # seconds per check
    memory_mb: int = DEFAULT_MEMORY_MB  # memory each check may add
    max_tasks: int = containment.MAX_TASKS  # processes and threads one file's grading may hold
    sandboxed: bool = True  # contestants run in the OS sandbox (grader.run.sandbox); False: --no-sandbox
    lang: str = "en"  # the language of the checks' messages

    @property
    def run_limit(self) -> float:
        """Seconds one file's whole grading run may take (as `kata check` allows)."""
        return run_limit(self.timeout)


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


class BatchError(ValueError):
    """The submissions folder cannot be graded at all (a user error, said in one line)."""


# -- discovery --------------------------------------------------------------------------------


def discover(root: Path, slugs: list[str] | None, settings: Settings, exclude: tuple[Path, ...] = ()) -> Roster:
    """The students (sub-folders of `root`) and their kata files; `slugs` limits the katas.

    Any folder or file name is data: the roster's students, strays and ignored entries, and each
    Job's student, are display names (grader.classroom.names.display_name); Job.folder is the real path.
    """
    from grader.classroom.names import display_name

    if not root.is_dir():
        raise BatchError(f"{display_name(str(root))} is not a folder of student folders")
    known = [kata.slug for kata in catalogue.all_katas()]
    wanted = set(slugs or known)
    excluded = {path.resolve() for path in exclude}
    students, jobs, strays, ignored, found = [], [], {}, [], set()
    for entry in sorted(root.iterdir(), key=lambda path: path.name):
        if entry.name.startswith(".") or entry.resolve() in excluded:
            continue
        student = display_name(entry.name)
        if entry.is_symlink() or not entry.is_dir():
            ignored.append(student)
            continue
        students.append(student)
        extras = folder_files(entry)
        for path in sorted(entry.glob("*.py")):
            slug = path.stem
            if path.is_symlink() or not path.is_file():
                continue
            if slug not in known:
                strays.setdefault(student, []).append(display_name(path.name))
            elif slug in wanted:
                found.add(slug)
                jobs.append(Job(student, slug, entry, digest(entry, slug, settings, extras), settings))
    columns = [slug for slug in known if slug in (set(slugs) if slugs else found)]
    return Roster(columns, students, jobs, strays, ignored)


def folder_files(folder: Path) -> list[str]:
    """Relative paths of the regular files a student's folder brings along, in order, within the limits."""
    names, total = [], 0
    for top, dirs, files in os.walk(folder):  # does not follow links to folders
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        for name in sorted(files):
            path = Path(top) / name
            if path.is_symlink() or not path.is_file():
                continue
            size = path.stat().st_size
            if len(names) >= COPY_LIMIT_FILES or total + size > COPY_LIMIT_BYTES:
                continue
            names.append(path.relative_to(folder).as_posix())
            total += size
    return names


def digest(folder: Path, slug: str, settings: Settings, files: list[str]) -> str:
    """What a result depends on: this kata file, the folder's other files, the kata, the grader, the limits."""
    katas = {f"{kata.slug}.py" for kata in catalogue.all_katas()}
    kata = catalogue.get_kata(slug)
    hasher = hashlib.sha256(f"{RECORD_VERSION} {slug} {source_digest()} {kata.digest} {settings}".encode())
    hasher.update((folder / f"{slug}.py").read_bytes())
    for name in files:
        if name not in katas:
            hasher.update(b"\0" + os.fsencode(name) + b"\0")  # any bytes: a name need not be UTF-8
            hasher.update((folder / name).read_bytes())
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
    return record if record.get("digest") == job.digest and record.get("version") == RECORD_VERSION else None


def save_record(out: Path, record: dict) -> None:
    from grader.classroom.names import json_text
    from grader.files import atomic_write

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
    result file while it ran (all its processes are dead by then) is undone.
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
    for record in graded_records(todo, workers):
        save_record(out, record)
        run.records[record["student"], record["kata"]] = record
        run.graded += 1
        if on_done:
            on_done(record)
    for record in run.records.values():
        save_record(out, record)
    return run


def graded_records(jobs: list[Job], workers: int) -> Iterator[dict]:
    """Records of `jobs` as they finish, from a pool of `workers` processes; a broken pool is replaced."""
    with tempfile.TemporaryDirectory(prefix="kata-grade-") as drops:  # the workers' drop folders, gone at the end
        yield from _graded_records(jobs, workers, Path(drops))


def _graded_records(jobs: list[Job], workers: int, drops: Path) -> Iterator[dict]:
    pending = list(jobs)
    while pending:
        finished: set[Job] = set()
        pool = warm_pool(min(workers, len(pending)), pending[0].settings, {job.slug for job in pending}, drops)
        try:
            futures = {pool.submit(grade_file, job): job for job in pending}
            for future in as_completed(futures):
                job = futures[future]
                try:
                    record = future.result()
                except BrokenProcessPool:
                    continue
                except Exception as error:  # the grader's own failure: say so in this file's result
                    record = failed_record(job, f"the grader failed on this file: {error}", 0.0)
                finished.add(job)
                yield record
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        left = [job for job in pending if job not in finished]
        if len(left) == len(pending):  # not one finished: stop retrying
            for job in left:
                yield failed_record(job, "the grading worker died before this file was graded", 0.0)
            return
        pending = left


def warm_pool(workers: int, settings: Settings, slugs: set[str], drops: Path) -> ProcessPoolExecutor:
    """`workers` "spawn" processes, each warmed (see `warm`) for the katas `slugs`, with drop folders under `drops`."""
    from grader.judging.targets import warm_imports

    imports = sorted({line for slug in slugs for line in warm_imports(catalogue.get_kata(slug))})
    return ProcessPoolExecutor(
        workers, mp_context=get_context("spawn"), initializer=warm, initargs=(settings, imports, drops)
    )


_DROP: Path | None = None  # this worker's folder for scratch copies (what its sandbox sees at /kata/drop)
_FINGERPRINTS: Path | None = None  # the run's fingerprints (grader.judging.fingerprints), shared by its workers


def warm(settings: Settings, imports: list[str], drops: Path) -> None:
    """Pool initializer: import once what every grading run needs; start the warm contestant process
    (with a drop folder of this worker's own under `drops`)."""
    import _pytest.config  # noqa: F401
    import torch  # noqa: F401

    import grader.judging.plugin  # noqa: F401
    from grader.content.i18n import set_message_language
    from grader.judging import session
    from grader.run.judge import Zygote
    from grader.run.limits import Limits

    set_message_language(settings.lang)  # the warm process's contestants word their refusals in it

    for line in imports:  # the references' own imports (transformers, for one): each judge forks with them loaded
        exec(line, {})
    global _DROP, _FINGERPRINTS
    _DROP = Path(tempfile.mkdtemp(prefix="drop-", dir=drops))
    _FINGERPRINTS = drops / "fingerprints"  # beside the drop folders: no sandbox sees it
    drop = _DROP if settings.sandboxed else None
    session.SHARED_ZYGOTE = Zygote.start(imports, Limits(settings.memory_mb, settings.max_tasks), drop)
    session.SHARED_ZYGOTE.wait_ready()  # before the first judge forks: each judge shares it
    gc.collect()
    gc.freeze()  # the judges it forks never walk (nor copy) what was imported here when they collect


# -- one file, in a worker --------------------------------------------------------------------


def grade_file(job: Job) -> dict:
    """Grade one student's kata file in a scratch copy of their folder, inside a box; never raises for the file's sake."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kata-grade-", dir=_DROP, ignore_cleanup_errors=True) as work:
        scratch = Path(work)
        copy_folder(job.folder, scratch, f"{job.slug}.py")
        result, reason, peak_kb = _judge(job.slug, scratch / f"{job.slug}.py", scratch, job.settings)
        if result is None:
            reason = reason.replace(f"{scratch}{os.sep}", f"{job.student}{os.sep}")
            return failed_record(job, reason, time.perf_counter() - start, peak_kb)
    return _record(job, result, time.perf_counter() - start, peak_kb)


def _judge(slug: str, target: str | Path, scratch: Path, settings: Settings) -> tuple[GradeResult | None, str, int]:
    """Grade `target` (a file in `scratch`, or a built-in target) in a boxed judge forked in `scratch`.

    Returns the run's result (None when it gave none), why it gave none, and the judge's peak memory in KiB.
    """
    from grader.run.child import last_line
    from grader.run.grading import pytest_arguments

    with tempfile.TemporaryDirectory(prefix="kata-report-", ignore_cleanup_errors=True) as private:
        report = Path(private) / f"{secrets.token_hex(16)}.json"
        log = Path(private) / "pytest.log"
        kata = catalogue.get_kata(slug)
        arguments = pytest_arguments(
            kata, target, settings.timeout, report, fingerprints=_FINGERPRINTS, lang=settings.lang
        )
        ending, peak_kb = _run_boxed(arguments, scratch, log, settings)
        result = _read_report(report, slug)
        reason = "" if result else ending or f"the grading run ended without a result: {last_line(log)}"
    return result, reason, peak_kb


def copy_folder(folder: Path, scratch: Path, kata_file: str) -> None:
    """The kata file (its name in `folder`) and what the folder brings along (see folder_files) into
    `scratch`; a file that vanishes or cannot be read meanwhile (a shared folder such as /tmp) is
    left out, the kata file never."""
    for name in {kata_file, *folder_files(folder)}:
        target = scratch / name
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copyfile(folder / name, target, follow_symlinks=False)
        except OSError:
            if name == kata_file:
                raise


def _run_boxed(arguments: list[str], scratch: Path, log: Path, settings: Settings) -> tuple[str, int]:
    """Fork the judge (the pytest run) for at most the run limit; end the file's cgroup box after it.

    Returns (why it ended without a result, if it did so abnormally, else "") and the peak resident
    memory of the judge in KiB.
    """
    from grader.judging import session
    from grader.run.child import run_judge

    box = containment.Box(settings.max_tasks, settings.memory_mb)
    session.SHARED_CGROUP = box
    try:
        ended = run_judge(arguments, scratch, log, settings.run_limit, fork=True)
        ending = ended.reason(settings.run_limit)
        if ending or session.SHARED_ZYGOTE.process.poll() is not None:
            # the judge may have left the warm process mid-conversation, or learner code killed it
            session.SHARED_ZYGOTE = session.SHARED_ZYGOTE.restart()
    finally:
        box.close()  # before the report is read: nothing the file started is left
        session.SHARED_CGROUP = None
    return ending, ended.peak_kb


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


# -- built-in targets (the content tests) -----------------------------------------------------


def grade_targets(
    targets: list[tuple[str, str]], workers: int, settings: Settings
) -> dict[tuple[str, str], GradeResult]:
    """{(slug, target): result} for built-in targets ("reference", "template", "misconception:ID"),
    graded by a pool of warm workers exactly as `grade_file` grades a student's file.

    A target whose grading gave no result (or whose worker died) gets a result with no checks and
    the reason as its load error.
    """
    if not targets:
        return {}
    slugs = {slug for slug, _ in targets}
    with (
        tempfile.TemporaryDirectory(prefix="kata-grade-") as drops,
        warm_pool(min(workers, len(targets)), settings, slugs, Path(drops)) as pool,
    ):
        futures = {pool.submit(grade_target, slug, target, settings): (slug, target) for slug, target in targets}
        results = {}
        for future in as_completed(futures):
            slug, target = futures[future]
            try:
                results[slug, target] = future.result()
            except Exception as error:  # the grader's own failure (a dead worker included)
                results[slug, target] = GradeResult(slug, target, [], load_error=f"the grader failed: {error!r}")
    return {job: results[job] for job in targets}


def grade_target(slug: str, target: str, settings: Settings) -> GradeResult:
    """Grade one built-in target of kata `slug` in a worker, in an empty scratch folder, inside a box."""
    with tempfile.TemporaryDirectory(prefix="kata-grade-", dir=_DROP, ignore_cleanup_errors=True) as work:
        result, reason, _ = _judge(slug, target, Path(work), settings)
    return result or GradeResult(slug, target, [], load_error=reason)
