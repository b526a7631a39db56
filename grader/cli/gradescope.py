"""`kata gradescope`: build a Gradescope autograder zip (the work: grader.classroom.gradescope)."""

from pathlib import Path

import click

from grader.classroom.gradescope import OUTPUT_FORMATS, VISIBILITIES
from grader.cli.options import (
    SLUG,
    course_option,
    feedback_option,
    lang_option,
    points_option,
    read_points,
    scoring_option,
)
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
    "One test per TODO, for the whole-function checks and for the input contract; todos: each worth"
    " its points (kata.toml, --points); checks: a point per check of it passed."
)
@points_option
@click.option(
    "--visibility",
    type=click.Choice(VISIBILITIES),
    default="visible",
    show_default=True,
    help="When students see the tests' results.",
)
@click.option(
    "--stdout-visibility",
    type=click.Choice(VISIBILITIES),
    default="hidden",
    show_default=True,
    help="When students see what run_autograder printed (instructors always do).",
)
@click.option(
    "--output-format",
    type=click.Choice(OUTPUT_FORMATS),
    default="md",
    show_default=True,
    help="How Gradescope shows the tests' outputs: md (Markdown, the report in a code block), ansi (colours), text.",
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
    points_file: Path | None,
    visibility: str,
    stdout_visibility: str,
    output_format: str,
    course_file: Path | None,
    feedback_kind: str,
    lang: str | None,
) -> int:
    """Build a Gradescope autograder for SLUG...: students upload SLUG.py files.

    \b
    The zip holds this project's source, setup.sh (Python >= 3.11, CPU
    torch, this package), run_autograder (grades the submission with the
    checks of `kata check`, in the sandbox where bwrap works, and writes
    results.json) and gradescope.json (the katas and options). Each TODO,
    the whole-function checks and the input contract is a test whose output
    is its part of the report alone; --points sets what each is worth, as in
    `kata grade`; --lang: the language of the feedback students get;
    --feedback: what it says of a known mistake (graded: in words, never the
    fix); --course: grade under the seed of a course, as `kata grade
    --course` does.
    """
    from grader.classroom import gradescope as build

    lang = pick_language(lang)
    slugs = tuple(dict.fromkeys(kata.slug for kata in katas))
    points = read_points(points_file, lang) if points_file else {}
    try:
        course = seeds.read_course(course_file, lang) if course_file else None
    except seeds.CourseError as error:
        raise click.BadParameter(str(error), param_hint="--course") from None
    try:
        config = build.Autograder(
            slugs, scoring, visibility, stdout_visibility, output_format, lang, feedback_kind, points
        )
        names = build.build_zip(config, out, course)
    except build.GradescopeError as error:
        raise click.UsageError(str(error)) from None
    console.print(phrase(lang, "gs_wrote", out=out, n=len(names)), markup=False)
    return 0
