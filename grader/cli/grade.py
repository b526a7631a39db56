"""`kata grade`: grade a class (the grading itself: grader.classroom)."""

import os
from pathlib import Path

import click

from grader import DEFAULT_MEMORY_MB
from grader.cli.options import (
    course_option,
    feedback_option,
    lang_option,
    points_option,
    read_points,
    scoring_option,
    timeout_option,
)
from grader.content import catalogue
from grader.content.i18n import phrase, pick_language
from grader.report.console import console, errors
from grader.run.interrupt import exit_status


@click.command()
@click.argument("submissions", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--katas", "kata_names", metavar="A,B", help="Grade only these katas (default: every kata handed in).")
@click.option(
    "--workers", type=click.IntRange(min=1), default=lambda: os.cpu_count() or 1, help="Files graded at once."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("grades"),
    show_default=True,
    help="Folder for grades.csv, grades.json, junit/, feedback/ and the per-file results.",
)
@timeout_option
@click.option(
    "--memory",
    type=click.IntRange(min=16),
    default=DEFAULT_MEMORY_MB,
    show_default=True,
    help="Memory each check may add, in MB.",
)
@scoring_option(
    "todos: points per TODO, for the whole-function checks and for the input contract (kata.toml), each lost"
    " when one of its checks fails; checks: the fraction of checks passed."
)
@points_option
@course_option(
    "The course file `kata pack` wrote (OUT/course.toml): the checks draw their inputs under its seed,"
    " so a student pack's recorded values earn nothing."
)
@click.option("--force", is_flag=True, help="Grade every file again, even those graded before and unchanged.")
@click.option(
    "--no-sandbox",
    "no_sandbox",
    is_flag=True,
    help="Run the files' code outside the OS sandbox (bwrap); said in the output, grades.json and JUnit.",
)
@feedback_option
@lang_option
def grade(
    submissions: Path,
    kata_names: str | None,
    workers: int,
    out: Path,
    timeout: float,
    memory: int,
    scoring: str,
    points_file: Path | None,
    course_file: Path | None,
    force: bool,
    no_sandbox: bool,
    feedback_kind: str,
    lang: str | None,
) -> int:
    """Grade a class: SUBMISSIONS holds one folder per student, each with any number of kata files.

    \b
    Each file is graded with the checks of `kata check`, in a scratch copy of
    its folder, with a time and a memory limit per check; results are saved
    as each file finishes, so a rerun grades only what is new or changed
    (Ctrl-C stops a run: exit 130; 143 after SIGTERM). Writes OUT/grades.csv,
    OUT/grades.json, OUT/junit/STUDENT.xml and OUT/feedback/STUDENT/KATA.txt
    (and .md): the report each student would get from `kata check`, a known
    mistake told in words, never the fix (--feedback full: as `kata check`
    tells it), and OUT/report.html, the class at a glance. Scores (--scoring,
    --points), the language (--lang) and --feedback come from the saved
    results: changing them grades nothing again. With --course, the checks
    draw their inputs under the course's seed: values recorded in a student
    pack cannot pass them. Exit 3: the grader failed on some file (not a
    grade).
    """
    from grader.classroom import batch, feedback, gradesheet, report_html
    from grader.classroom.names import display_name

    lang = pick_language(lang)
    slugs = None
    if kata_names is not None:
        slugs = [name.strip() for name in kata_names.split(",") if name.strip()]
        if not slugs:
            raise click.BadParameter(phrase(lang, "grade_no_katas"), param_hint="--katas")
        for name in slugs:
            try:
                catalogue.get_kata(name)
            except catalogue.UnknownKata:
                raise click.BadParameter(catalogue.unknown_kata(name, lang), param_hint="--katas") from None
    points = read_points(points_file, lang) if points_file else None
    course = _check_course(course_file, lang) if course_file else ""
    from grader.run import sandbox

    why = None if no_sandbox else sandbox.problem()
    if why:
        errors.print(phrase(lang, "grade_no_sandbox", why=why), style="error", markup=False)
        return 1
    settings = batch.Settings(timeout=timeout, memory_mb=memory, sandboxed=not no_sandbox, course=course)
    try:
        roster = batch.discover(submissions, slugs, settings, exclude=(out,))
    except batch.BatchError as error:
        raise click.UsageError(str(error)) from None
    if not roster.students:
        errors.print(
            phrase(lang, "grade_no_students", path=display_name(str(submissions))), style="warning", markup=False
        )
        return 1
    from grader.report.styles import Prose, Trimmed, progress_bar

    if no_sandbox:
        console.print(phrase(lang, "grade_unsandboxed"), style="warning")
    graded = []

    def done(record: dict) -> None:
        graded.append(record)
        advance()

    try:
        with progress_bar(console.rich(), phrase(lang, "grading"), len(roster.jobs), remaining=True) as advance:
            run = batch.run_batch(roster, out, workers, force, on_done=done)
    except KeyboardInterrupt as stop:  # SIGINT or SIGTERM: every worker has ended, the results stay
        errors.print(phrase(lang, "grade_interrupted", n=len(graded)), style="warning", markup=False)
        return exit_status(stop)
    sheet = gradesheet.build_sheet(roster, run.records, scoring, points, lang)
    gradesheet.write_sheet(sheet, out)
    report_html.write_report(sheet, out, lang)
    feedback.write_feedback(out, roster.students, roster.katas, run.records, lang, feedback_kind, roster, sheet)
    wrote = ", ".join(
        display_name(str(out / name)) for name in ("grades.csv", "grades.json", "junit", "feedback", "report.html")
    )
    console.print(
        Trimmed(Prose(phrase(lang, "grade_wrote", graded=run.graded, reused=run.reused, wrote=wrote), "muted"))
    )
    console.print(Trimmed(gradesheet.build_summary(sheet, lang)))  # no padded lines when piped
    failures = gradesheet.errors(sheet)
    for student, slug, why in failures:
        errors.print(phrase(lang, "grade_error_file", student=student, slug=slug, why=why), markup=False)
    if failures:
        errors.print(phrase(lang, "grade_error_hint"), style="warning", markup=False)
    return 3 if failures else 0  # 3: the grader failed on some file (README, "Exit status")


def _check_course(path: Path, lang: str = "en") -> str:
    """The --course file's absolute path, once it reads as a course file (one-line error, status 2)."""
    from grader.content import seeds

    try:
        seeds.read_course(path, lang)
    except seeds.CourseError as error:
        raise click.BadParameter(str(error), param_hint="--course") from None
    return str(path.resolve())
