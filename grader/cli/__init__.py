"""The `kata` command: thin click commands over the catalogue, the workspace and the grader.

Exit status: 0 success; 1 checks failed or the action was refused; 2 usage error.
`list`, `start`, `hint`, `show`, `solution`, `reset` and `drill` (but for its --check) never import torch.
"""

import json
import os
import sys
from contextlib import nullcontext
from pathlib import Path

import click

from gpu_labs.cli import lab
from grader import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT
from grader.cli.workspace import DEFAULT_DIR, Workspace, WorkspaceRefusal
from grader.content import catalogue
from grader.content.catalogue import Kata
from grader.content.i18n import pick_language
from grader.oracles.against import ORACLES, TRL_VERSION
from grader.report.console import console, errors


class KataSlug(click.ParamType):
    """A kata's slug, resolved to its Kata; unknown names get a did-you-mean."""

    name = "SLUG"

    def convert(self, value, param, ctx):
        if isinstance(value, Kata):
            return value
        try:
            return catalogue.get_kata(value)
        except catalogue.UnknownKata as error:
            self.fail(str(error), param, ctx)

    def shell_complete(self, ctx, param, incomplete):
        from click.shell_completion import CompletionItem

        return [CompletionItem(kata.slug) for kata in catalogue.all_katas() if kata.slug.startswith(incomplete)]


SLUG = KataSlug()


def workspace_option(command):
    return click.option(
        "--workspace",
        "workspace_dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=DEFAULT_DIR,
        envvar="KATA_WORKSPACE",
        show_default=True,
        help="Folder with your kata files (or set KATA_WORKSPACE).",
    )(command)


def lang_option(command):
    return click.option(
        "--lang",
        type=click.Choice(["en", "zh"]),
        help="Language: en or zh (default: KATA_LANG, then the locale, then English).",
    )(command)


def timeout_option(command):
    return click.option(
        "--timeout",
        type=click.FloatRange(min=0.1),
        default=DEFAULT_TIMEOUT,
        show_default=True,
        help="Time limit of each check, in seconds.",
    )(command)


def _workspace(path: Path) -> Workspace:
    return Workspace(path)


def _flush_warnings(workspace: Workspace) -> None:
    for warning in workspace.warnings:
        errors.print(f"warning: {warning}", style="warning")
    workspace.warnings.clear()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="post-training-katas", prog_name="kata")
def cli():
    """Post-Training Katas: learn the math of LLM post-training by writing it.

    \b
    kata list                 the katas, in learning order, with your progress
    kata start group_advantages
    kata check group_advantages
    kata hint group_advantages
    """


@cli.command("list")
@workspace_option
@lang_option
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def list_command(workspace_dir: Path, lang: str | None, as_json: bool) -> int:
    """Every kata in learning order, with your status and what to do next."""
    from grader.cli.listing import listing_rows, plain_listing

    workspace = _workspace(workspace_dir)
    rows = listing_rows(catalogue.all_katas(), workspace, pick_language(lang))
    _flush_warnings(workspace)
    if as_json:
        click.echo(json.dumps(rows, ensure_ascii=False, indent=1))
    elif not sys.stdout.isatty():
        click.echo(plain_listing(rows))
    else:
        from grader.cli.listing import build_listing

        console.print(build_listing(rows))
    return 0


@cli.command()
@click.argument("kata", type=SLUG)
@workspace_option
@lang_option
def start(kata: Kata, workspace_dir: Path, lang: str | None) -> int:
    """Write the blank exercise for KATA to WORKSPACE/KATA.py (never overwrites)."""
    workspace = _workspace(workspace_dir)
    lang = pick_language(lang)
    try:
        path = workspace.create(kata.slug, kata.template(lang))
    except WorkspaceRefusal as refusal:
        errors.print(f"kata: {refusal}", style="warning")
        return 1
    progress = workspace.progress()
    _flush_warnings(workspace)
    console.print(f"[passed]✓[/] wrote [code]{path}[/]  ({len(kata.todos)} TODOs)")
    pending = [slug for slug in kata.prerequisites if not progress.get(slug, {}).get("passed_at")]
    if pending:
        console.print(f"[warning]tip:[/] this kata builds on {', '.join(pending)}, not passed yet.")
    console.print(f"Read the lesson: [code]kata show {kata.slug}[/]   Then: [code]kata check {kata.slug}[/]")
    return 0


@cli.command()
@click.argument("kata", type=SLUG)
@workspace_option
@click.option(
    "--file",
    "file_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Grade this file instead of the workspace's.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@click.option("-v", "--verbose", is_flag=True, help="Show every failing check in full.")
@click.option(
    "--against",
    type=click.Choice(ORACLES),
    help=f"Take expected values from TRL {TRL_VERSION}'s own code where it has the function (needs trl installed).",
)
@timeout_option
@lang_option
def check(
    kata: Kata,
    workspace_dir: Path,
    file_path: Path | None,
    as_json: bool,
    verbose: bool,
    against: str | None,
    timeout: float,
    lang: str | None,
) -> int:
    """Grade your file for KATA: each check runs in its own process, with a time limit."""
    from grader.oracles.against import AgainstError, require
    from grader.report.terminal import build_report
    from grader.run.grading import GradingError, run_checks

    if against:
        try:
            require(against, kata.slug)
        except AgainstError as error:
            if error.status == 2:
                raise click.UsageError(str(error)) from None
            errors.print(f"kata: {error}", style="error")
            return 1
    workspace = _workspace(workspace_dir)
    path = file_path or workspace.kata_file(kata.slug)
    if not path.is_file():
        hint = "" if file_path else f" Run `kata start {kata.slug}` first."
        errors.print(f"kata: no file to grade at {path}.{hint}", style="warning")
        return 1
    try:
        with console.status(f"checking {path} …") if console.is_terminal and not as_json else nullcontext():
            result = run_checks(kata, path, timeout, against=against)
    except GradingError as error:
        errors.print(f"kata: {error}", style="error")
        return 1
    if file_path is None and not against:  # progress counts the kata's own grading only
        workspace.record_check(kata.slug, result)
        _flush_warnings(workspace)
    if as_json:
        data = result.to_json()
        data.pop("matches")
        click.echo(json.dumps(data, ensure_ascii=False, indent=1))
    else:
        console.print(build_report(result, kata, pick_language(lang), str(path), verbose))
    return 0 if result.failed == 0 and result.checks else 1


@cli.command()
@click.argument("kata", type=SLUG)
@click.option("--todo", "todo_number", type=int, help="The TODO to get a hint for (default: the first failing one).")
@workspace_option
@lang_option
def hint(kata: Kata, todo_number: int | None, workspace_dir: Path, lang: str | None) -> int:
    """Show one more hint for a TODO of KATA each time it is run."""
    from grader.content.hints import next_hint

    workspace = _workspace(workspace_dir)
    numbers = [todo.number for todo in kata.todos]
    if todo_number is not None and todo_number not in numbers:
        raise click.BadParameter(f"{kata.slug} has TODOs {', '.join(map(str, numbers))}", param_hint="--todo")
    console.print(next_hint(kata, workspace, todo_number, pick_language(lang)))
    _flush_warnings(workspace)
    return 0


@cli.command()
@click.argument("kata", type=SLUG)
@click.option("--force", is_flag=True, help="Show it even though the kata is not passed yet.")
@workspace_option
def solution(kata: Kata, force: bool, workspace_dir: Path) -> int:
    """Print the reference solution of KATA (once you have passed it)."""
    workspace = _workspace(workspace_dir)
    status = workspace.status(kata.slug)
    _flush_warnings(workspace)
    if not force and status != "passed":
        errors.print(
            f"kata: {kata.slug} is not passed yet; the solution opens once `kata check {kata.slug}` passes (or use --force).",
            style="warning",
        )
        return 1
    if console.is_terminal:
        from rich.syntax import Syntax

        console.print(Syntax(kata.solution(), "python", line_numbers=True))
    else:
        click.echo(kata.solution(), nl=False)
    return 0


@cli.command()
@click.argument("kata", type=SLUG)
@workspace_option
@lang_option
def reset(kata: Kata, workspace_dir: Path, lang: str | None) -> int:
    """Start KATA over from the blank exercise; your current file is kept as a backup."""
    workspace = _workspace(workspace_dir)
    backup = workspace.reset(kata.slug, kata.template(pick_language(lang)))
    _flush_warnings(workspace)
    if backup:
        console.print(
            f"[passed]✓[/] {workspace.kata_file(kata.slug)} is blank again; your previous file is in [code]{backup}[/]"
        )
    else:
        console.print(f"[passed]✓[/] wrote a blank [code]{workspace.kata_file(kata.slug)}[/]")
    return 0


@cli.command()
@click.argument("kata", type=SLUG)
@lang_option
def show(kata: Kata, lang: str | None) -> int:
    """Print the lesson of KATA."""
    text = kata.lesson(pick_language(lang))
    if console.is_terminal:
        from rich.markdown import Markdown

        console.print(Markdown(text))
    else:
        click.echo(text, nl=False)
    return 0


@cli.command()
@click.argument("kata", type=SLUG)
@lang_option
def quiz(kata: Kata, lang: str | None) -> int:
    """Ask the concept questions of KATA one by one; each answer is graded and explained."""
    from grader.content import quiz as quizzes

    if not quizzes.has_quiz(kata.slug):
        others = ", ".join(k.slug for k in catalogue.all_katas() if quizzes.has_quiz(k.slug)) or "none yet"
        errors.print(f"kata: {kata.slug} has no quiz questions (katas with a quiz: {others}).", style="warning")
        return 1
    result = quizzes.ask(quizzes.load_questions(kata.slug), pick_language(lang), console.input, console)
    return 0 if result.perfect else 1


@cli.command()
@click.argument("kata", type=SLUG, required=False)
@workspace_option
@timeout_option
@click.option("--poll", is_flag=True, help="Poll for changes (for file systems that send no events).")
@lang_option
def watch(kata: Kata | None, workspace_dir: Path, timeout: float, poll: bool, lang: str | None) -> int:
    """Re-check a kata file every time you save it (all katas in the workspace by default)."""
    from grader.cli.watch import watch_workspace

    workspace = _workspace(workspace_dir)
    if not workspace.root.is_dir():
        errors.print(f"kata: no workspace at {workspace.root}. Run `kata start SLUG` first.", style="warning")
        return 1
    return watch_workspace(workspace, kata, timeout, poll, pick_language(lang), console)


@cli.command()
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

    workspace = _workspace(workspace_dir)
    settings = {"--level": level, "--blanks": blanks, "--ratio": ratio, "--seed": seed, "--function": function}
    given = [name for name, value in settings.items() if value is not None]
    if check_path is not None:
        given += [name for name, value in (("--out", out), ("--interactive", interactive or None)) if value]
        if given:
            raise click.UsageError(f"--check reads the drill's settings from its file; drop {', '.join(given)}")
        return _check_drill(kata, check_path, workspace, timeout, pick_language(lang))
    counts = [name for name in given if name in ("--level", "--blanks", "--ratio")]
    if len(counts) > 1:
        raise click.UsageError(f"give one of --level, --blanks and --ratio, not {' and '.join(counts)}")
    if seed is None:
        import random

        seed = random.SystemRandom().randrange(1_000_000)
    label = None if blanks is not None or ratio is not None else level or "medium"
    try:
        exercise = drills.make_drill(kata.slug, seed, label, blanks, ratio, function)
    except drills.DrillError as error:
        raise click.BadParameter(str(error), param_hint="--function") from None
    console.print(
        f"{kata.slug}: {len(exercise.candidates)} positions are blankable; {len(exercise.blanks)} blanked "
        f"(--seed {seed}{f', level {label}' if label else ''})"
    )
    if interactive or (out is None and console.is_terminal):
        import time

        score = drills.ask(exercise, console.input, console, time.monotonic)
        if label and not score.stopped:
            _record_drill(workspace, kata.slug, label, score.right, score.total)
        return 0 if score.right == score.total and not score.stopped else 1
    return _write_drill(exercise, out or workspace.drill_file(kata.slug), workspace, force)


def _write_drill(exercise, path: Path, workspace: Workspace, force: bool) -> int:
    """Write a drill file; an existing one is replaced only with --force, and kept as a backup."""
    from grader.files import atomic_write

    if path.resolve() == workspace.kata_file(exercise.slug).resolve():
        errors.print(f"kata: {path} is your kata file; a drill never touches it.", style="warning")
        return 1
    if path.exists() and not force:
        errors.print(
            f"kata: {path} already exists; nothing was changed (--force replaces it, with a backup).", style="warning"
        )
        return 1
    backup = workspace.keep_backup(path, f"{exercise.slug}.drill") if path.exists() else None
    atomic_write(path, exercise.file_text())
    console.print(
        f"[passed]✓[/] wrote [code]{path}[/]" + (f"  (the old one is in [code]{backup}[/])" if backup else "")
    )
    console.print(f"Fill in each __N__, then: [code]kata drill {exercise.slug} --check {path}[/]")
    return 0


def _check_drill(kata: Kata, path: Path, workspace: Workspace, timeout: float, lang: str) -> int:
    """Grade a filled drill file blank by blank, then with the kata's checks; report both."""
    import tempfile

    from rich.text import Text

    from grader.content import drill as drills
    from grader.report.terminal import build_report
    from grader.run.grading import GradingError, run_checks

    text = path.read_text(encoding="utf-8")
    try:
        exercise = drills.drill_from_file(text)
    except drills.DrillError as error:
        raise click.BadParameter(str(error), param_hint="--check") from None
    if exercise.slug != kata.slug:
        raise click.BadParameter(f"{path} is a drill of {exercise.slug}, not {kata.slug}", param_hint="--check")
    answers = drills.answers_in(exercise, text)
    try:
        with tempfile.TemporaryDirectory(prefix="kata-drill-") as scratch:
            filled = Path(scratch) / f"{kata.slug}.py"
            filled.write_text(text, encoding="utf-8")
            with console.status(f"checking {path} …") if console.is_terminal else nullcontext():
                result = run_checks(kata, filled, timeout)
    except GradingError as error:
        errors.print(f"kata: {error}", style="error")
        return 1
    checks_pass = result.failed == 0 and bool(result.checks)
    if answers is None:
        console.print(
            Text(
                "The text outside the blanks was changed, so the blanks cannot be compared one by one.", style="warning"
            )
        )
    else:
        verdicts = drills.judge_blanks(exercise, answers, checks_pass)
        console.print(drills.verdicts_view(verdicts))
        right = sum(verdict.status == "right" for verdict in verdicts)
        if exercise.level:
            _record_drill(workspace, kata.slug, exercise.level, right, len(exercise.blanks))
    if checks_pass:
        console.print(Text(f"✓ the filled file passes all {result.passed} checks of {kata.slug}", style="passed"))
    else:
        console.print(build_report(result, kata, lang, str(path)))
    filled_in = answers is not None and not any(drills.PLACEHOLDER.fullmatch(answer) for answer in answers)
    return 0 if checks_pass and filled_in else 1


def _record_drill(workspace: Workspace, slug: str, level: str, right: int, total: int) -> None:
    """Keep the best drill score of this level in the progress file."""
    from datetime import datetime

    from grader.content.drill import best_scores

    record = workspace.progress().get(slug, {})
    when = datetime.now().astimezone().isoformat(timespec="seconds")
    workspace.update(slug, drill=best_scores(record.get("drill"), level, right, total, when))
    _flush_warnings(workspace)


@cli.command()
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
    help="Folder for grades.csv, grades.json, junit/ and the per-file results.",
)
@timeout_option
@click.option(
    "--memory",
    type=click.IntRange(min=16),
    default=DEFAULT_MEMORY_MB,
    show_default=True,
    help="Memory each check may add, in MB.",
)
@click.option("--force", is_flag=True, help="Grade every file again, even those graded before and unchanged.")
@click.option(
    "--no-sandbox",
    "no_sandbox",
    is_flag=True,
    help="Run the files' code outside the OS sandbox (bwrap); said in the output, grades.json and JUnit.",
)
@lang_option
def grade(
    submissions: Path,
    kata_names: str | None,
    workers: int,
    out: Path,
    timeout: float,
    memory: int,
    force: bool,
    no_sandbox: bool,
    lang: str | None,
) -> int:
    """Grade a class: SUBMISSIONS holds one folder per student, each with any number of kata files.

    \b
    Each file is graded with the checks of `kata check`, in a scratch copy of its folder, with a
    time and a memory limit per check; results are saved as each file finishes, so a rerun grades
    only what is new or changed. Writes OUT/grades.csv, OUT/grades.json and OUT/junit/STUDENT.xml.
    """
    from grader.classroom import batch, gradesheet
    from grader.classroom.names import display_name

    slugs = None
    if kata_names is not None:
        slugs = [name.strip() for name in kata_names.split(",") if name.strip()]
        if not slugs:
            raise click.BadParameter("name at least one kata", param_hint="--katas")
        for name in slugs:
            try:
                catalogue.get_kata(name)
            except catalogue.UnknownKata as error:
                raise click.BadParameter(str(error), param_hint="--katas") from None
    from grader.run import sandbox

    why = None if no_sandbox else sandbox.problem()
    if why:
        errors.print(f"kata: cannot grade in the sandbox: {why}; or pass --no-sandbox", style="error", markup=False)
        return 1
    settings = batch.Settings(timeout=timeout, memory_mb=memory, sandboxed=not no_sandbox)
    try:
        roster = batch.discover(submissions, slugs, settings, exclude=(out,))
    except batch.BatchError as error:
        raise click.UsageError(str(error)) from None
    if not roster.students:
        errors.print(
            f"kata: no student folders in {display_name(str(submissions))}; nothing to grade.",
            style="warning",
            markup=False,
        )
        return 1
    from grader.report.styles import progress_bar

    if no_sandbox:
        console.print("grading without the sandbox (--no-sandbox): the files' code runs as you", style="warning")
    with progress_bar(console.rich(), "grading", len(roster.jobs), remaining=True) as advance:
        run = batch.run_batch(roster, out, workers, force, on_done=lambda record: advance())
    sheet = gradesheet.build_sheet(roster, run.records)
    gradesheet.write_sheet(sheet, out)
    wrote = ", ".join(display_name(str(out / name)) for name in ("grades.csv", "grades.json", "junit"))
    console.print(f"graded {run.graded}, unchanged {run.reused}; wrote {wrote}", style="muted", markup=False)
    console.print(gradesheet.build_summary(sheet, pick_language(lang)))
    return 0


cli.add_command(lab)  # `kata lab ...` (gpu_labs/cli.py)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the command; turn usage errors into one line and status 2."""
    try:
        status = cli.main(args=argv, prog_name="kata", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as error:
        click.echo(error.ctx.get_help())
        return 0
    except click.UsageError as error:
        command = error.ctx.command_path if error.ctx else "kata"
        errors.print(
            f"{command}: error: {error.format_message()}  (see `{command} --help`)", style="error", markup=False
        )
        return 2
    except click.exceptions.Exit as exit_:
        return exit_.exit_code
    except (click.Abort, KeyboardInterrupt):
        errors.print("interrupted")
        return 130
    except BrokenPipeError:
        return 0
    except OSError as error:  # e.g. a workspace path that is a file, or no permission
        where = f": {error.filename}" if error.filename else ""
        errors.print(f"kata: error: {error.strerror or error}{where}", style="error", markup=False)
        return 1
    return status if isinstance(status, int) else 0
