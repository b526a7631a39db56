"""`kata gradescope`: build a Gradescope autograder zip (the work: grader.classroom.gradescope)."""

from pathlib import Path

import click

from grader.cli.options import SLUG, course_option, feedback_option, lang_option, scoring_option
from grader.content import catalogue, seeds
from grader.content.i18n import phrase, pick_language
from grader.report.console import console


@click.command()
@click.argument("katas", nargs=-1, required=True, type=SLUG)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("autograder.zip"),
    show_default=True,
    help="The zip to write.",
)
@scoring_option(
    "todos: one test per TODO, the whole-function checks and the input contract (their points);"
    " checks: one test per check."
)
@click.option(
    "--visibility",
    type=click.Choice(["visible", "after_due_date", "after_published", "hidden"]),
    default="visible",
    show_default=True,
    help="When students see the tests' results.",
)
@course_option(
    "The course file `kata pack` wrote (OUT/course.toml), put in the zip: the checks draw their inputs under its seed."
)
@feedback_option
@lang_option
def gradescope(
    katas: tuple[catalogue.Kata, ...],
    out: Path,
    scoring: str,
    visibility: str,
    course_file: Path | None,
    feedback_kind: str,
    lang: str | None,
) -> int:
    """Build a Gradescope autograder for SLUG...: students upload SLUG.py files.

    \b
    The zip holds this project's source, setup.sh (Python >= 3.11, CPU
    torch, this package), run_autograder (grades the submission with the
    checks of `kata check`, in the sandbox where bwrap works, and writes
    results.json) and gradescope.json (the katas and options);
    --lang: the language of the feedback students get; --feedback: what it
    says of a known mistake (graded: in words, never the fix); --course:
    grade under the seed of a course, as `kata grade --course` does.
    """
    from grader.classroom import gradescope as build

    lang = pick_language(lang)
    slugs = list(dict.fromkeys(kata.slug for kata in katas))
    try:
        course = seeds.read_course(course_file, lang) if course_file else None
    except seeds.CourseError as error:
        raise click.BadParameter(str(error), param_hint="--course") from None
    try:
        names = build.build_zip(slugs, out, scoring, visibility, lang, feedback_kind, course)
    except build.GradescopeError as error:
        raise click.UsageError(str(error)) from None
    console.print(phrase(lang, "gs_wrote", out=out, n=len(names)), markup=False)
    return 0
