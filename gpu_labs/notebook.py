"""A lab run from a notebook cell: `kata lab run`'s run, shown as a notebook shows things.

    from gpu_labs.notebook import run_in_notebook
    run_in_notebook("grpo_mechanism", run_mode="cpu_smoke")    # -> runs/grpo_mechanism/cpu_smoke-…

The run is gpu_labs.runner.run_lab's, as `kata lab run` makes it: the same run folder (runs/LAB/LABEL,
or `out`), the same evidence.json and artifacts. Only how it is shown differs:

    progress    each of the lab's bars is an HTML <progress> shown once and updated in place
                (IPython display ids: no ipywidgets, no terminal codes)
    log lines   train_grpo's, as plain text on stdout
    at the end  the decision in a few lines (and the failure, if the run raised), curves.png
                inline, and the whole summary of `kata lab run`, folded, as HTML

Every output is HTML with a plain-text twin, and neither holds an ANSI escape code. The lab runs in
the kernel's process: a lab is the project's own code, never a learner's.

Bad input (an unknown lab or run mode, real_gpu without CUDA, no labs extra, no model, a used label,
a bad override) is refused before any folder is made, with the runner's one-line message:
`NotebookRefusal`, a LabRefusal that IPython shows as that one line, without a traceback.
"""

import html
import io
import sys
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

from gpu_labs.runs import LabRefusal

UPDATE_EVERY = 0.25  # seconds between two redraws of a bar (its last state is always drawn)
WIDTH = 80  # columns of the text and of the summary's HTML
PRE = '<pre style="font-family: monospace; line-height: 1.35; white-space: pre-wrap">{code}</pre>'


class NotebookRefusal(LabRefusal):
    """A refused run; IPython shows it as its one line ("kata lab: …"), without a traceback."""

    def __init__(self, message: str, lang: str = "en"):
        super().__init__(message)
        self.line = f"kata lab{'：' if lang == 'zh' else ': '}{message}"

    def _render_traceback_(self) -> list[str]:  # IPython's hook for an exception's own traceback
        return [self.line]


def run_in_notebook(
    name: str,
    run_mode: str = "cpu_smoke",
    label: str | None = None,
    out: Path | str | None = None,
    model: str | None = None,
    overrides: dict | None = None,
    lang: str | None = None,
) -> Path:
    """Run lab `name` from a notebook cell, as `kata lab run NAME --run-mode RUN_MODE` would; returns
    the run folder (it holds evidence.json and curves.png).

    name       a lab of `kata lab list` (gpu_labs.LABS)
    run_mode   dry_run, cpu_smoke (the default here: the tiny model on the CPU) or real_gpu
    label      --label: the run's name (default RUN_MODE-UTC time); a used one is refused
    out        --out: a new or empty folder to write the run to, instead of runs/NAME/LABEL
    model      --model: smollm2, tiny, a hub id or a local model folder (default: the mode's)
    overrides  --set: {field: value} on the lab's config; text values are parsed as --set's are
    lang       --lang: en or zh (default: KATA_LANG, then the locale, then English)

    Raises NotebookRefusal (one line, in `lang`) before anything is written. A run that fails
    after it started is not raised: its evidence records the failure, and the summary says so.
    """
    from gpu_labs.config import ConfigError
    from gpu_labs.phrases import speaking
    from gpu_labs.runner import run_lab
    from grader.content.i18n import pick_language

    lang = pick_language(lang)
    try:
        with speaking(lang), warnings.catch_warnings():
            # tqdm.auto, imported by the model libraries, asks for ipywidgets; the lab shows its own bars
            warnings.filterwarnings("ignore", message="IProgress not found")
            record, run_dir = run_lab(name, run_mode, label, out, model, overrides, NotebookConsole())
    except (LabRefusal, ConfigError) as error:
        raise NotebookRefusal(str(error), lang) from None
    show_outcome(record, run_dir, lang)
    return run_dir


class NotebookConsole:
    """What a LabRun's `console` is in a notebook: progress bars shown in place, log lines on stdout."""

    @contextmanager
    def progress_bar(self, description: str, total: int):
        """An HTML bar, drawn now and redrawn as `advance(steps=1)` is called; yields `advance`."""
        from IPython.display import display

        started = last = time.perf_counter()
        done = 0
        handle = display(bar_bundle(description, done, total, 0.0), raw=True, display_id=True)

        def advance(steps: int = 1) -> None:
            nonlocal done, last
            done += steps
            now = time.perf_counter()
            if now - last >= UPDATE_EVERY or done >= total:
                last = now
                handle.update(bar_bundle(description, done, total, now - started), raw=True)

        try:
            yield advance
        finally:  # the bar as it ended (full, or where a failure stopped it)
            handle.update(bar_bundle(description, done, total, time.perf_counter() - started), raw=True)

    def print(self, *objects, **_options) -> None:
        """A log line (train_grpo's): plain text on stdout, whatever rich options it was printed with."""
        sys.stdout.write(" ".join(obj if isinstance(obj, str) else rich_bundle(obj)["text/plain"] for obj in objects))
        sys.stdout.write("\n")


def bar_bundle(description: str, done: int, total: int, seconds: float) -> dict:
    """One bar as a display bundle: `description  [<progress>]  done/total  seconds`, HTML and text."""
    from gpu_labs.phrases import text

    count = f"{done}/{total}"
    elapsed = text("elapsed", seconds=f"{seconds:.1f}")
    markup = (
        f'<div style="font-family: monospace">{html.escape(description)} '
        f'<progress value="{min(done, total)}" max="{max(total, 1)}" style="width: 14em; vertical-align: middle">'
        f"</progress> {count}  {elapsed}</div>"
    )
    return {"text/html": markup, "text/plain": f"{description}  {count}  {elapsed}"}


def show_outcome(record: dict, run_dir: Path, lang: str) -> None:
    """The decision in a few lines, curves.png inline, then `kata lab run`'s whole summary, folded."""
    from IPython.display import Image, display

    from gpu_labs.phrases import phrase
    from gpu_labs.summary import build_summary

    display(rich_bundle(decision_lines(record, run_dir, lang)), raw=True)
    curves = (record.get("artifacts") or {}).get("curves")
    if curves and (run_dir / curves).is_file():
        display(Image(filename=str(run_dir / curves)))
    summary = rich_bundle(build_summary(record, run_dir, lang))
    title = html.escape(phrase(lang, "full_summary"))
    display({**summary, "text/html": f"<details><summary>{title}</summary>{summary['text/html']}</details>"}, raw=True)


def decision_lines(record: dict, run_dir: Path, lang: str):
    """`lab · label  run_mode`, `decision: …` in its style, the failure's line if any, the folder."""
    from rich.console import Group
    from rich.text import Text

    from gpu_labs.phrases import decision_label, phrase
    from gpu_labs.summary import decision_style

    decision = str(record.get("decision", "?"))
    colon = "：" if lang == "zh" else ": "
    lines = [
        Text.assemble((f"{record['lab']} · {record['label']}", "title"), (f"  {record['run_mode']}", "muted")),
        Text.assemble(phrase(lang, "decision") + colon, (decision_label(decision, lang), decision_style(decision))),
    ]
    if record.get("failure"):
        failed = phrase(lang, "failed_in_stage", name=record["lab"], run_dir=run_dir, **record["failure"])
        lines.append(Text(failed, style="error"))
    lines.append(Text.assemble((phrase(lang, "evidence"), "muted"), (str(run_dir), "code")))
    return Group(*lines)


def rich_bundle(renderable) -> dict:
    """A rich renderable as a display bundle: inline-styled HTML and plain text, WIDTH columns, no ANSI."""
    from rich.console import Console

    from grader.report.styles import THEME

    console = Console(
        file=io.StringIO(),
        record=True,
        width=WIDTH,
        theme=THEME,
        color_system="truecolor",
        force_terminal=True,
        force_jupyter=False,  # in a kernel rich would otherwise display it itself, ANSI in its plain text
        highlight=False,
    )
    console.print(renderable)
    plain = console.export_text(clear=False)
    return {"text/html": console.export_html(inline_styles=True, code_format=PRE), "text/plain": plain.rstrip("\n")}
