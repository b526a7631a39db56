"""`kata drill`: type a kata's reference back with some of its code blanked, in the terminal or in
a drill file graded with --check (the drills themselves: grader.content.drill)."""

from contextlib import nullcontext
from pathlib import Path

import click

from grader.cli.options import SLUG, flush_warnings, lang_option, timeout_option, workspace_option
from grader.cli.workspace import Workspace
from grader.content.catalogue import Kata
from grader.content.i18n import joined, phrase, pick_language
from grader.report.console import console, errors


@click.command()
@click.argument("kata", type=SLUG)
@click.option(
    "--level",
    type=click.Choice(["easy", "medium", "hard"]),
    help="Blank 15%, 35% or 70% of the positions (default: medium).",
)
@click.option("--blanks", type=click.IntRange(min=1), help="Blank exactly N positions (instead of a level).")
@click.option(
    "--ratio",
    type=click.FloatRange(0, 1, min_open=True),
    help="Blank this share of the positions (instead of a level).",
)
@click.option(
    "--seed", type=click.IntRange(min=0), help="Choose the blanks with this seed (default: a random one, shown)."
)
@click.option("--function", "function", metavar="NAME", help="Blank only the TODO code of this function.")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write a drill file here (default when not in a terminal: WORKSPACE/drills/SLUG.drill.py).",
)
@click.option(
    "--check",
    "check_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Grade a filled drill file.",
)
@click.option("-i", "--interactive", is_flag=True, help="Ask in the terminal even when output is not one.")
@click.option("--force", is_flag=True, help="Replace an existing drill file (the old one is kept as a backup).")
@workspace_option
@timeout_option
@lang_option
def drill(
    kata: Kata,
    level: str | None,
    blanks: int | None,
    ratio: float | None,
    seed: int | None,
    function: str | None,
    out: Path | None,
    check_path: Path | None,
    interactive: bool,
    force: bool,
    workspace_dir: Path,
    timeout: float,
    lang: str | None,
) -> int:
    """Type the reference of KATA back with some of its code blanked.

    \b
    In a terminal, each numbered blank is asked and judged at once; otherwise (or with --out) a
    drill file is written, with blanks __1__, __2__, ...; fill them in, then grade the file with
    --check: blank by blank against the reference, and by the kata's own checks.
    Your kata file is never touched.
    """
    from grader.content import drill as drills

    lang = pick_language(lang)
    workspace = Workspace(workspace_dir, lang=lang)
    settings = {"--level": level, "--blanks": blanks, "--ratio": ratio, "--seed": seed, "--function": function}
    if check_path is not None:
        extra = {"--out": out, "--interactive": interactive or None}
        refuse_settings(settings | extra, lang)
        return _check_drill(kata, check_path, workspace, timeout, lang)
    exercise, label, line = new_drill(kata, level, blanks, ratio, seed, function, lang)
    console.print(line)
    if interactive or (out is None and console.is_terminal):
        import time

        score = drills.ask(exercise, console.input, console, time.monotonic, lang)
        if label and not score.stopped:
            _record_drill(workspace, kata.slug, label, score.right, score.total)
        return 0 if score.right == score.total and not score.stopped else 1
    return _write_drill(exercise, out or workspace.drill_file(kata.slug), workspace, force)


def refuse_settings(settings: dict, lang: str) -> None:
    """--check reads a drill's settings from its file: a UsageError naming those given as well."""
    given = [name for name, value in settings.items() if value is not None]
    if given:
        raise click.UsageError(phrase(lang, "drill_check_drop", options=joined(lang, given)))


def new_drill(kata: Kata, level, blanks, ratio, seed, function, lang: str):
    """A new drill of `kata` from the command's settings (one of level, blanks and ratio; a random
    seed unless given): (the drill, its level or None, the line that says what was blanked)."""
    from grader.content import drill as drills

    counts = [
        name for name, value in (("--level", level), ("--blanks", blanks), ("--ratio", ratio)) if value is not None
    ]
    if len(counts) > 1:
        raise click.UsageError(phrase(lang, "drill_one_of", options=phrase(lang, "and_").join(counts)))
    if seed is None:
        import random

        seed = random.SystemRandom().randrange(1_000_000)
    label = None if blanks is not None or ratio is not None else level or "medium"
    try:
        exercise = drills.make_drill(kata.slug, seed, label, blanks, ratio, function, lang)
    except drills.DrillError as error:
        raise click.BadParameter(str(error), param_hint="--function") from None
    level = phrase(lang, "drill_level", level=phrase(lang, label)) if label else ""
    n, blanked = len(exercise.candidates), len(exercise.blanks)
    line = phrase(lang, "drill_positions", slug=kata.slug, n=n, blanked=blanked, seed=seed, level=level)
    return exercise, label, line


def _write_drill(exercise, path: Path, workspace: Workspace, force: bool) -> int:
    """Write a drill file; an existing one is replaced only with --force, and kept as a backup."""
    from grader.files import atomic_write

    lang = workspace.lang
    if path.resolve() == workspace.kata_file(exercise.slug).resolve():
        errors.print(phrase(lang, "drill_is_kata_file", path=path), style="warning")
        return 1
    if path.exists() and not force:
        errors.print(phrase(lang, "drill_exists", path=path), style="warning")
        return 1
    backup = workspace.keep_backup(path, f"{exercise.slug}.drill") if path.exists() else None
    atomic_write(path, exercise.file_text(lang))
    kept = phrase(lang, "drill_old_kept", backup=backup) if backup else ""
    console.print(phrase(lang, "drill_wrote", path=path) + kept)
    console.print(phrase(lang, "drill_fill", slug=exercise.slug, path=path))
    return 0


def _check_drill(kata: Kata, path: Path, workspace: Workspace, timeout: float, lang: str) -> int:
    """Grade a filled drill file blank by blank, then with the kata's checks; print both."""
    from grader.run.grading import GradingError

    again = f"kata drill {kata.slug} --check {path}"  # this drill file, never the kata's own
    try:
        with console.status(phrase(lang, "checking", path=path)) if console.is_terminal else nullcontext():
            parts, status = drill_check(
                kata, path.read_text(encoding="utf-8"), str(path), workspace, timeout, lang, again
            )
    except GradingError as error:
        errors.print(f"kata: {error}", style="error")
        return 1
    for part in parts:
        console.print(part)
    return status


def drill_check(
    kata: Kata, text: str, label: str, workspace: Workspace, timeout: float, lang: str, again: str, grade=None
) -> tuple[list, int]:
    """Grade the text of a filled drill (`label`: where it is from) blank by blank, then with the
    kata's checks, by `grade(kata, path, timeout, lang)` (default: a cold run_checks); keep the
    score. Returns what to print and the exit status; a text that is not a drill of `kata` is a
    BadParameter of --check, a failed grading a GradingError."""
    import tempfile

    from rich.text import Text

    from grader.content import drill as drills
    from grader.report.terminal import build_report
    from grader.run.grading import run_checks

    grade = grade or (lambda kata, path, timeout, lang: run_checks(kata, path, timeout, lang=lang))
    try:
        exercise = drills.drill_from_file(text, lang)
    except drills.DrillError as error:
        raise click.BadParameter(str(error), param_hint="--check") from None
    if exercise.slug != kata.slug:
        message = phrase(lang, "drill_of_other", path=label, other=exercise.slug, slug=kata.slug)
        raise click.BadParameter(message, param_hint="--check")
    answers = drills.answers_in(exercise, text)
    with tempfile.TemporaryDirectory(prefix="kata-drill-") as scratch:
        filled = Path(scratch) / f"{kata.slug}.py"
        filled.write_text(text, encoding="utf-8")
        result = grade(kata, filled, timeout, lang)
    checks_pass = result.failed == 0 and bool(result.checks)
    parts = []
    if answers is None:
        parts.append(Text(phrase(lang, "drill_changed"), style="warning"))
    else:
        accepted = frozenset()
        if not checks_pass and len(drills.differing(exercise, answers)) > 1:  # which of them do the checks accept?
            accepted = _accepted_alone(kata, exercise, answers, timeout, lang, grade)
        verdicts = drills.judge_blanks(exercise, answers, checks_pass, accepted)
        parts.append(drills.verdicts_view(verdicts, lang))
        right = sum(verdict.status in ("right", "equivalent") for verdict in verdicts)
        if exercise.level:
            _record_drill(workspace, kata.slug, exercise.level, right, len(exercise.blanks))
    if checks_pass:
        parts.append(Text(phrase(lang, "drill_passes", n=result.passed, slug=kata.slug), style="passed"))
    else:
        parts.append(build_report(result, kata, lang, label, own_file=False, again=again))
    filled_in = answers is not None and not any(drills.PLACEHOLDER.fullmatch(answer) for answer in answers)
    return parts, 0 if checks_pass and filled_in else 1


def _accepted_alone(kata: Kata, exercise, answers: list[str], timeout: float, lang: str, grade) -> frozenset:
    """The differing answers the kata's checks accept each on its own: every other blank filled as
    the reference has it (one grading by `grade` per differing answer)."""
    import tempfile

    from grader.content import drill as drills
    from grader.run.grading import GradingError

    accepted = set()
    with tempfile.TemporaryDirectory(prefix="kata-drill-") as scratch:
        for number in drills.differing(exercise, answers):
            alone = list(exercise.answers)
            alone[number - 1] = answers[number - 1]
            filled = Path(scratch) / f"{kata.slug}.py"
            filled.write_text(drills.fill(exercise.file_text(lang), alone), encoding="utf-8")
            try:
                result = grade(kata, filled, timeout, lang)
            except GradingError:  # not graded: not accepted
                continue
            if result.failed == 0 and result.checks:
                accepted.add(number)
    return frozenset(accepted)


def _record_drill(workspace: Workspace, slug: str, level: str, right: int, total: int) -> None:
    """Keep the best drill score of this level in the progress file."""
    from datetime import datetime

    from grader.content.drill import best_scores

    record = workspace.progress().get(slug, {})
    when = datetime.now().astimezone().isoformat(timespec="seconds")
    workspace.update(slug, drill=best_scores(record.get("drill"), level, right, total, when))
    flush_warnings(workspace)
