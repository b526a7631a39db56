"""The learner's commands: `kata list`, `start`, `check`, `hint`, `solution`, `reset`, `show`,
`quiz` and `watch`."""

import json
import sys
from contextlib import nullcontext
from pathlib import Path

import click

from grader.cli.options import SLUG, flush_warnings, lang_option, timeout_option, workspace_option
from grader.cli.workspace import Workspace, WorkspaceRefusal
from grader.content import catalogue, render
from grader.content.catalogue import Kata
from grader.content.i18n import joined, phrase, pick_language, speaking
from grader.oracles.against import ORACLES, TRL_VERSION
from grader.report.console import console, errors


@click.command("list")
@workspace_option
@lang_option
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def list_command(workspace_dir: Path, lang: str | None, as_json: bool) -> int:
    """Every kata in learning order, with your status and what to do next."""
    from grader.cli.listing import listing_rows, plain_listing

    lang = pick_language(lang)
    workspace = Workspace(workspace_dir, lang=lang)
    rows = listing_rows(catalogue.all_katas(), workspace, lang)
    flush_warnings(workspace)
    if as_json:
        click.echo(json.dumps(rows, ensure_ascii=False, indent=1))
    elif not sys.stdout.isatty():
        click.echo(plain_listing(rows, lang=lang))
    else:
        from grader.cli.listing import build_listing

        console.print(build_listing(rows, lang))
    return 0


@click.command()
@click.argument("kata", type=SLUG)
@workspace_option
@lang_option
def start(kata: Kata, workspace_dir: Path, lang: str | None) -> int:
    """Write the blank exercise for KATA to WORKSPACE/KATA.py (never overwrites)."""
    lang = pick_language(lang)
    workspace = Workspace(workspace_dir, lang=lang)
    try:
        path = workspace.create(kata.slug, kata.template(lang))
    except WorkspaceRefusal as refusal:
        errors.print(phrase(lang, "refused", message=refusal), style="warning")
        return 1
    progress = workspace.progress()
    flush_warnings(workspace)
    console.print(phrase(lang, "wrote_todos", path=path, todos=phrase(lang, "todos", n=len(kata.todos))))
    pending = [slug for slug in kata.prerequisites if not workspace.ever_passed(slug, progress)]
    if pending:
        console.print(phrase(lang, "tip_prerequisites", pending=joined(lang, pending)))
    console.print(phrase(lang, "read_lesson", slug=kata.slug))
    return 0


@click.command()
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
    from grader.report.inert import inert
    from grader.report.terminal import build_report
    from grader.run.grading import GradingError, run_checks

    lang = pick_language(lang)
    if against:
        try:
            with speaking(lang):
                require(against, kata.slug)
        except AgainstError as error:
            if error.status == 2:
                raise click.UsageError(str(error)) from None
            errors.print(f"kata: {error}", style="error")
            return 1
    workspace = Workspace(workspace_dir, lang=lang)
    path = file_path or workspace.kata_file(kata.slug)
    if not path.is_file():
        hint = "" if file_path else phrase(lang, "run_start", slug=kata.slug)
        errors.print(phrase(lang, "no_file", path=path) + hint, style="warning")
        return 1
    try:
        checking = console.status(phrase(lang, "checking", path=path))
        with checking if console.is_terminal and not as_json else nullcontext():
            result = run_checks(kata, path, timeout, against=against, lang=lang)
    except GradingError as error:  # it may quote the judge's last line: inert, and never markup
        errors.print(f"kata: {inert(str(error))}", style="error", markup=False)
        return 1
    if file_path is None and not against:  # progress counts the kata's own grading only
        workspace.record_check(kata.slug, result)
        flush_warnings(workspace)
    if as_json:
        data = result.to_json()
        data.pop("matches")
        click.echo(json.dumps(data, ensure_ascii=False, indent=1))
    else:
        own_file = file_path is None and not against  # recorded: a pass opens the solution
        again = f"kata check {kata.slug}" + (f" --file {path}" if file_path else "")
        console.print(build_report(result, kata, lang, str(path), verbose, own_file=own_file, again=again))
    return 0 if result.failed == 0 and result.checks else 1


@click.command()
@click.argument("kata", type=SLUG)
@click.option("--todo", "todo_number", type=int, help="The TODO to get a hint for (default: the first failing one).")
@workspace_option
@lang_option
def hint(kata: Kata, todo_number: int | None, workspace_dir: Path, lang: str | None) -> int:
    """Show one more hint for a TODO of KATA each time it is run."""
    lang = pick_language(lang)
    workspace = Workspace(workspace_dir, lang=lang)
    console.print(hint_view(kata, workspace, todo_number, lang))
    flush_warnings(workspace)
    return 0


def hint_view(kata: Kata, workspace: Workspace, todo_number: int | None, lang: str):
    """The next hint of TODO `todo_number` (None: the one the last check points to), recorded; a
    number that is not one of the kata's TODOs is a BadParameter of --todo."""
    from grader.cli.hints import next_hint

    numbers = [todo.number for todo in kata.todos]
    if todo_number is not None and todo_number not in numbers:
        message = phrase(lang, "has_todos", slug=kata.slug, numbers=joined(lang, numbers))
        raise click.BadParameter(message, param_hint="--todo")
    return next_hint(kata, workspace, todo_number, lang)


@click.command()
@click.argument("kata", type=SLUG)
@click.option("--force", is_flag=True, help="Show it even though the kata is not passed yet.")
@workspace_option
@lang_option
def solution(kata: Kata, force: bool, workspace_dir: Path, lang: str | None) -> int:
    """Print the reference solution of KATA (once you have passed it)."""
    lang = pick_language(lang)
    workspace = Workspace(workspace_dir, lang=lang)
    unlocked = workspace.ever_passed(kata.slug)
    flush_warnings(workspace)
    if not force and not unlocked:
        errors.print(phrase(lang, "not_passed", slug=kata.slug), style="warning")
        return 1
    text = render.translate(kata.solution(), kata.texts(lang))  # the exercise's docstrings, comments, TODO titles
    if console.is_terminal:
        from rich.syntax import Syntax

        console.print(Syntax(text, "python", line_numbers=True))
    else:
        click.echo(text, nl=False)
    return 0


@click.command()
@click.argument("kata", type=SLUG)
@workspace_option
@lang_option
def reset(kata: Kata, workspace_dir: Path, lang: str | None) -> int:
    """Start KATA over from the blank exercise; your current file is kept as a backup."""
    lang = pick_language(lang)
    workspace = Workspace(workspace_dir, lang=lang)
    backup = workspace.reset(kata.slug, kata.template(lang))
    flush_warnings(workspace)
    if backup:
        console.print(phrase(lang, "blank_again", path=workspace.kata_file(kata.slug), backup=backup))
    else:
        console.print(phrase(lang, "wrote_blank", path=workspace.kata_file(kata.slug)))
    return 0


@click.command()
@click.argument("kata", type=SLUG)
@lang_option
def show(kata: Kata, lang: str | None) -> int:
    """Print the lesson of KATA."""
    from grader.report.lesson import lesson

    console.print(lesson(kata.lesson(pick_language(lang))), crop=False)
    return 0


@click.command()
@click.argument("kata", type=SLUG)
@lang_option
def quiz(kata: Kata, lang: str | None) -> int:
    """Ask the concept questions of KATA one by one; each answer is graded and explained."""
    from grader.cli.quiz import ask
    from grader.content import quiz as quizzes

    lang = pick_language(lang)
    if not quizzes.has_quiz(kata.slug):
        others = ", ".join(k.slug for k in catalogue.all_katas() if quizzes.has_quiz(k.slug))
        errors.print(
            phrase(lang, "no_quiz", slug=kata.slug, others=others or phrase(lang, "none_yet")), style="warning"
        )
        return 1
    result = ask(quizzes.load_questions(kata.slug), lang, console.input, console)
    return 0 if result.perfect else 1


@click.command()
@click.argument("kata", type=SLUG, required=False)
@workspace_option
@timeout_option
@click.option("--poll", is_flag=True, help="Poll for changes (for file systems that send no events).")
@lang_option
def watch(kata: Kata | None, workspace_dir: Path, timeout: float, poll: bool, lang: str | None) -> int:
    """Re-check a kata file every time you save it (all katas in the workspace by default)."""
    from grader.cli.watch import watch_workspace

    lang = pick_language(lang)
    workspace = Workspace(workspace_dir, lang=lang)
    if not workspace.root.is_dir():
        errors.print(phrase(lang, "no_workspace", path=workspace.root), style="warning")
        return 1
    return watch_workspace(workspace, kata, timeout, poll, lang, console.rich())  # rich.Live needs the real one
