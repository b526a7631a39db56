"""The `%kata` magic, a line magic and a cell magic: thin click commands over the functions the
`kata` command uses, parsed by the same rules (grader.cli.options: the SLUG, --lang, --timeout,
--workspace), a bad argument told in one line in the learner's language.

    %kata list [--lang zh]
    %kata show SLUG                   the lesson, as Markdown
    %kata start SLUG                  the exercise (or your file, if there is one) as the next cell
    %%kata check SLUG [-v]            the cell is your file: saved (grader.notebook.cells), graded by
                                      the kernel's warm judge, recorded
    %kata hint SLUG [--todo N]        the next hint, as `kata hint` picks it
    %kata drill SLUG [--level ...]    a drill as the next cell, whose first line is
    %%kata drill SLUG --check         `kata drill SLUG --check FILE` with the cell as the FILE
    %kata lab run NAME [--run-mode]   a lab, as gpu_labs.notebook.run_in_notebook runs it (cpu_smoke)

The cell's code is never run in the kernel: the judge runs it in contestants. Reports are shown
as HTML and plain text (grader.notebook.output), never as ANSI.
"""

import shlex
from dataclasses import dataclass
from typing import Any

import click

from grader.cli.options import SLUG, lang_option, timeout_option, workspace_option
from grader.cli.workspace import Workspace
from grader.content.catalogue import Kata, in_pack
from grader.content.i18n import phrase, pick_language
from grader.notebook.output import say_error, show


@dataclass
class Call:
    """One use of the magic: the shell (for set_next_input), the cell's code (None for a line
    magic) and the kernel's judge."""

    shell: Any
    cell: str | None
    judge: Any  # grader.judging.warm_judge.WarmJudge


def run(line: str, cell: str | None, shell, judge) -> None:
    """Parse `line` as `%kata`'s arguments and run the command; every refusal is one line."""
    from grader.cli import usage_line
    from grader.report.inert import inert
    from grader.run.grading import GradingError

    try:
        arguments = shlex.split(line)
    except ValueError as error:  # an unclosed quote
        say_error(phrase(pick_language(), "usage_error", command="%kata", message=error))
        return
    try:
        magic.main(args=arguments, prog_name="%kata", standalone_mode=False, obj=Call(shell, cell, judge))
    except click.exceptions.NoArgsIsHelpError as error:
        print(error.ctx.get_help())
    except click.UsageError as error:
        say_error(usage_line(error, "%kata"))
    except click.exceptions.Exit:
        pass
    except GradingError as error:  # it may quote the judge's last line: inert, never markup
        say_error(f"kata: {inert(str(error))}")
    except (click.Abort, KeyboardInterrupt):
        say_error(phrase(pick_language(), "interrupted"))
    except OSError as error:  # a workspace path that is a file, no permission
        where = f": {error.filename}" if error.filename else ""
        say_error(phrase(pick_language(), "os_error", message=error.strerror or error, where=where))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def magic():
    """Post-Training Katas in a notebook: `%kata start SLUG`, then run the cell it gives."""


def _workspace(workspace_dir, lang: str) -> Workspace:
    return Workspace(workspace_dir, lang=lang)


def _warnings(workspace: Workspace) -> None:
    for warning in workspace.warnings:
        say_error(phrase(workspace.lang, "warning", warning=warning))
    workspace.warnings.clear()


def _first_line(command: str, kata: Kata, lang: str | None, *flags: str) -> str:
    """The magic line of a cell this command gives: its --lang when one was asked for."""
    return " ".join(["%%kata", command, kata.slug, *flags, *(["--lang", lang] if lang else [])]) + "\n"


def _cell(command: str, lang: str) -> str:
    code = click.get_current_context().obj.cell
    if code is None:
        raise click.UsageError(phrase(lang, "nb_cell_needed", command=command))
    return code if code.endswith("\n") else code + "\n"


@magic.command("list")
@workspace_option
@lang_option
def list_command(workspace_dir, lang: str | None) -> None:
    """Every kata in learning order, with your status and what to do next."""
    from grader.cli.listing import build_listing, listing_rows
    from grader.content import catalogue

    lang = pick_language(lang)
    workspace = _workspace(workspace_dir, lang)
    rows = listing_rows(catalogue.all_katas(), workspace, lang)
    _warnings(workspace)
    show(build_listing(rows, lang))


@magic.command("show")
@click.argument("kata", type=SLUG)
@lang_option
def show_command(kata: Kata, lang: str | None) -> None:
    """The lesson of KATA, as Markdown."""
    from IPython.display import Markdown, display

    display(Markdown(kata.lesson(pick_language(lang))))


@magic.command("start")
@click.argument("kata", type=SLUG)
@workspace_option
@lang_option
def start_command(kata: Kata, workspace_dir, lang: str | None) -> None:
    """The exercise of KATA as the next cell (your file, if you have one), headed by `%%kata check`."""
    from grader.content.i18n import joined

    chosen, lang = lang, pick_language(lang)
    workspace = _workspace(workspace_dir, lang)
    path = workspace.kata_file(kata.slug)
    if path.is_file():
        text = path.read_text(encoding="utf-8")
        what = phrase(lang, "nb_your_file", path=path, slug=kata.slug)
    else:
        text = kata.template(lang)
        what = phrase(lang, "nb_the_exercise", todos=phrase(lang, "todos", n=len(kata.todos)))
    click.get_current_context().obj.shell.set_next_input(_first_line("check", kata, chosen) + text)
    lines = [phrase(lang, "nb_next_cell", what=what)]
    progress = workspace.progress()
    pending = [slug for slug in kata.prerequisites if not workspace.ever_passed(slug, progress)]
    if pending:
        lines.append(phrase(lang, "tip_prerequisites", pending=joined(lang, pending)))
    _warnings(workspace)
    show(*lines)


@magic.command("check")
@click.argument("kata", type=SLUG)
@workspace_option
@click.option("-v", "--verbose", is_flag=True, help="Show every failing check in full.")
@timeout_option
@lang_option
def check_command(kata: Kata, workspace_dir, verbose: bool, timeout: float, lang: str | None) -> None:
    """Grade the cell's code as your file for KATA (it runs in contestants, never in the kernel)."""
    from rich.text import Text

    from grader.notebook.cells import save_cell
    from grader.report.terminal import build_report

    lang = pick_language(lang)
    code = _cell("check", lang)
    call = click.get_current_context().obj
    workspace = _workspace(workspace_dir, lang)
    path, backup = save_cell(workspace, kata.slug, code)
    result = call.judge.check(kata, path, timeout, lang)
    workspace.record_check(kata.slug, result)
    _warnings(workspace)
    parts = [Text(phrase(lang, "nb_kept", backup=backup), style="warning")] if backup else []
    parts += _conditions(result, lang)
    parts.append(build_report(result, kata, lang, str(path), verbose, again=f"%%kata check {kata.slug}"))
    show(*parts)


def _conditions(result, lang: str) -> list:
    """What the report says of how the check ran: without the sandbox; from a pack's recorded values."""
    from rich.text import Text

    from grader.report.styles import Prose

    lines = []
    if result.sandboxed is False:
        lines.append(Prose(phrase(lang, "not_sandboxed"), "warning"))
    if in_pack():
        lines.append(Prose(phrase(lang, "nb_recorded"), "muted"))
    return [*lines, Text()] if lines else []


@magic.command("hint")
@click.argument("kata", type=SLUG)
@click.option("--todo", "todo_number", type=int, help="The TODO to get a hint for (default: the first failing one).")
@workspace_option
@lang_option
def hint_command(kata: Kata, todo_number: int | None, workspace_dir, lang: str | None) -> None:
    """One more hint for a TODO of KATA each time (the TODO your last check points to)."""
    from grader.cli.learner import hint_view

    lang = pick_language(lang)
    workspace = _workspace(workspace_dir, lang)
    view = hint_view(kata, workspace, todo_number, lang)
    _warnings(workspace)
    show(view)


@magic.command("drill")
@click.argument("kata", type=SLUG)
@click.option("--level", type=click.Choice(["easy", "medium", "hard"]), help="Blank 15%, 35% or 70% (default: medium).")
@click.option("--blanks", type=click.IntRange(min=1), help="Blank exactly N positions (instead of a level).")
@click.option("--ratio", type=click.FloatRange(0, 1, min_open=True), help="Blank this share of the positions.")
@click.option("--seed", type=click.IntRange(min=0), help="Choose the blanks with this seed (default: a random one).")
@click.option("--function", "function", metavar="NAME", help="Blank only the TODO code of this function.")
@click.option("--check", "check", is_flag=True, help="Grade the cell, a filled drill (as `kata drill --check`).")
@workspace_option
@timeout_option
@lang_option
def drill_command(kata: Kata, level, blanks, ratio, seed, function, check: bool, workspace_dir, timeout, lang) -> None:
    """A drill of KATA as the next cell; `%%kata drill KATA --check` grades it, blank by blank."""
    chosen, lang = lang, pick_language(lang)
    if in_pack():  # a student pack has no reference, and no grader.cli.drill
        say_error(phrase(lang, "nb_no_drill_in_pack"))
        return
    from grader.cli.drill import drill_check, new_drill, refuse_settings

    call = click.get_current_context().obj
    workspace = _workspace(workspace_dir, lang)
    if check:
        settings = {"--level": level, "--blanks": blanks, "--ratio": ratio, "--seed": seed, "--function": function}
        refuse_settings(settings, lang)
        again = f"%%kata drill {kata.slug} --check"
        parts, _ = drill_check(kata, _cell("drill", lang), again, workspace, timeout, lang, again, call.judge.check)
        _warnings(workspace)
        show(*parts)
        return
    exercise, _, line = new_drill(kata, level, blanks, ratio, seed, function, lang)
    call.shell.set_next_input(_first_line("drill", kata, chosen, "--check") + exercise.file_text(lang))
    show(line, phrase(lang, "nb_next_cell", what=phrase(lang, "nb_the_drill")))


@magic.group("lab")
def lab_group():
    """The labs on a real model, run from a cell (gpu_labs.notebook; not in a student pack)."""


@lab_group.command("run")
@click.argument("name")
@click.option("--run-mode", default="cpu_smoke", show_default=True, help="dry_run, cpu_smoke or real_gpu.")
@click.option("--label", help="Name of this run (default: RUN_MODE-UTC time); a used label is refused.")
@click.option("--model", "model_spec", metavar="SPEC", help="smollm2, tiny, a hub id or a local model folder.")
@lang_option
def lab_run_command(name: str, run_mode: str, label: str | None, model_spec: str | None, lang: str | None) -> None:
    """Run lab NAME as `kata lab run NAME` does: bars in place, its curves and summary in the cell."""
    lang = pick_language(lang)
    if in_pack():  # a student pack brings no labs
        say_error(phrase(lang, "nb_no_labs_in_pack"))
        return
    from gpu_labs.notebook import NotebookRefusal, run_in_notebook

    try:
        run_in_notebook(name, run_mode, label=label, model=model_spec, lang=lang)
    except NotebookRefusal as refusal:  # an unknown lab or run mode, no CUDA, no model: one line
        say_error(str(refusal))
