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
from grader.content.i18n import joined, phrase, pick_language
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
@click.option(
    "--roster",
    "roster_file",
    type=click.Path(path_type=Path),
    metavar="FILE.csv",
    help="The class list: CSV with a header row (UTF-8, a BOM or none), one row per student; its key column"
    " (--roster-key) is matched to the folder names ignoring case, its columns lead grades.csv, and names"
    " on one side only are listed.",
)
@click.option(
    "--roster-key",
    metavar="COLUMN",
    help="The --roster column holding the folder names, by its header in any case (default: the first).",
)
@click.option(
    "--excel/--no-excel",
    default=False,
    help="Also write OUT/grades-excel.csv: grades.csv as UTF-8 with a BOM, so that Excel shows names like José.",
)
@feedback_option
@lang_option
@click.option(
    "--defaults",
    "use_defaults",
    is_flag=True,
    help="Options left out take their defaults, not the values the last run kept in OUT/view.json.",
)
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
    roster_file: Path | None,
    roster_key: str | None,
    excel: bool,
    feedback_kind: str,
    lang: str | None,
    use_defaults: bool,
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
    --points), the language (--lang), --feedback, --roster and --excel only
    change how the saved results are shown: changing them grades nothing
    again, and a rerun that leaves one out uses the last run's (kept in
    OUT/view.json; --defaults: not). With --roster, grades.csv starts with
    the class list's columns and has a row for every student on it (--excel:
    a copy for Excel too). With --course, the checks draw their inputs under
    the course's seed: values recorded in a student pack cannot pass them.
    Exit 3: the grader failed on some file (not a grade).
    """
    from grader.classroom import batch, feedback, gradesheet, report_html, view
    from grader.classroom.names import display_name

    if roster_key is not None and not roster_file:
        raise click.BadParameter(phrase(pick_language(lang), "roster_key_alone"), param_hint="--roster-key")
    chosen = {"scoring": scoring, "feedback": feedback_kind, "excel": excel}
    shown, reused = _view(out, lang, chosen, points_file, (roster_file, roster_key), use_defaults)
    lang = shown.lang
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
    if reused:
        path = display_name(str(out / view.VIEW_FILE))
        console.print(
            Trimmed(Prose(phrase(lang, "grade_view_kept", path=path, options=shown.options(reused, lang)), "muted"))
        )
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
    sheet = gradesheet.build_sheet(roster, run.records, shown.scoring, shown.points, lang, shown.roster)
    gradesheet.write_sheet(sheet, out, shown.excel)
    texts = feedback.feedback_texts(roster, run.records, lang, shown.feedback, sheet)
    feedback.write_feedback(out, texts)
    report_html.write_report(sheet, out, lang, texts)
    view.write_view(out, shown)
    names = ("grades.csv", *[gradesheet.EXCEL_CSV] * shown.excel, "grades.json", "junit", "feedback", "report.html")
    wrote = joined(lang, (display_name(str(out / name)) for name in names))
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


def _view(
    out: Path,
    lang: str | None,
    chosen: dict,
    points_file: Path | None,
    roster: tuple[Path | None, str | None],
    use_defaults: bool,
):
    """This run's view (grader.classroom.view) and the options it kept: each option the command
    line gives (`chosen`: the values of the options with defaults, by field), else the one
    OUT/view.json kept (unless `use_defaults`), else its default. The --points and --roster files
    are read here: a bad one is a one-line error, before any grading."""
    from click.core import ParameterSource

    from grader.classroom import view
    from grader.classroom.names import display_name

    context = click.get_current_context()
    default_lang = pick_language(lang)
    given = {"lang": lang} if lang else {}
    parameters = {"feedback": "feedback_kind"}
    for field, value in chosen.items():
        if context.get_parameter_source(parameters.get(field, field)) is not ParameterSource.DEFAULT:
            given[field] = value
    if points_file:
        given |= {"points": read_points(points_file, default_lang), "points_from": display_name(str(points_file))}
    roster_file, roster_key = roster
    if roster_file:
        given |= {
            "roster": _read_roster(roster_file, roster_key, default_lang),
            "roster_from": display_name(str(roster_file)),
        }
    kept = None
    if not use_defaults:
        try:
            kept = view.read_view(out)
        except view.ViewError as error:
            path = display_name(str(out / view.VIEW_FILE))
            line = phrase(default_lang, "grade_view_unread", path=path, why=error)
            errors.print(line, style="warning", markup=False)
    return view.resolve(given, kept, default_lang)


def _read_roster(path: Path, key: str | None, lang: str = "en") -> dict:
    """The --roster file as plain data (class_list.read_class_list), or a one-line error, status 2."""
    from grader.classroom import class_list

    try:
        return class_list.read_class_list(path, key, lang)
    except class_list.ClassListError as error:
        raise click.BadParameter(str(error), param_hint="--roster") from None


def _check_course(path: Path, lang: str = "en") -> str:
    """The --course file's absolute path, once it reads as a course file (one-line error, status 2)."""
    from grader.content import seeds

    try:
        seeds.read_course(path, lang)
    except seeds.CourseError as error:
        raise click.BadParameter(str(error), param_hint="--course") from None
    return str(path.resolve())
