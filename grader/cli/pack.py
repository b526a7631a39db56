"""`kata pack`: the student pack of a course, and the course seed the instructor keeps (grader.pack.build)."""

from pathlib import Path

import click

from grader.content import catalogue
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
def pack(slugs: tuple[str, ...], out: Path, hints: int | None, workers: int) -> int:
    from grader.pack.build import PackError, build

    unknown = [slug for slug in slugs if slug not in {kata.slug for kata in catalogue.all_katas()}]
    if unknown:
        raise click.UsageError(catalogue.unknown_kata(unknown[0]))
    try:
        packed = build(out, list(slugs) or [kata.slug for kata in catalogue.all_katas()], hints, workers)
    except PackError as error:
        errors.print(f"kata pack: {error}", style="error", markup=False)
        return 1
    for item in packed:
        console.print(
            f"{item.slug}: {len(item.public)} public checks, {len(item.private)} only in your grading;"
            f" {item.named} of {item.variants} misconceptions named; {len(item.fixed)} on fixed inputs",
            markup=False,
        )
    console.print(f"student pack: {out / 'pack'}\ncourse seed (keep it): {out / 'course.toml'}", markup=False)
    return 0
