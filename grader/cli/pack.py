"""`kata pack`: the student pack of a course, and the course seed the instructor keeps (grader.pack.build)."""

from pathlib import Path

import click

from grader.cli.options import lang_option
from grader.content import catalogue
from grader.content.i18n import phrase, pick_language
from grader.report.console import console, errors

HELP = """Build a student pack of the katas SLUG... (default: every kata) in OUT.

\b
OUT/pack/        for students: pip install OUT/pack (offline, beside torch)
OUT/course.toml  keep it: kata grade SUBMISSIONS --course OUT/course.toml
OUT/report.txt   per kata: public checks, checks only your grading runs,
                 checks on fixed inputs (replayable even under the course)"""


@click.command(help=HELP)
@click.argument("slugs", nargs=-1, metavar="[SLUG]...")
@click.option("--out", "out", type=click.Path(path_type=Path), required=True, help="The folder to write.")
@click.option("--hints", type=click.IntRange(0), help="Hints per TODO the pack keeps (default: all).")
@click.option("--workers", type=click.IntRange(1), default=2, show_default=True, help="Gradings at once.")
@lang_option
def pack(slugs: tuple[str, ...], out: Path, hints: int | None, workers: int, lang: str | None) -> int:
    from grader.pack.build import COURSE, PACK, REPORT, PackError, build

    lang = pick_language(lang)
    unknown = [slug for slug in slugs if slug not in {kata.slug for kata in catalogue.all_katas()}]
    if unknown:
        raise click.UsageError(catalogue.unknown_kata(unknown[0], lang))
    try:
        build(out, list(slugs) or [kata.slug for kata in catalogue.all_katas()], hints, workers, lang)
    except PackError as error:
        errors.print(f"kata pack: {error}", style="error", markup=False)
        return 1
    console.print((out / REPORT).read_text(encoding="utf-8").rstrip(), markup=False)
    console.print(phrase(lang, "pack_wrote", pack=out / PACK, course=out / COURSE, report=out / REPORT), markup=False)
    return 0
