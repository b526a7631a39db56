"""`kata watch`: re-check a kata file each time it is saved.

File events come from watchfiles (inotify/FSEvents), which falls back to polling where events do
not come (and on WSL); `--poll` forces polling. The loop takes any iterable of change batches, so
it can be driven without a file system; it starts iterating (watching) before the first check, so
a save made while that check runs is checked next. Ctrl-C ends it with one line in the learner's
language (watchfiles' own English warning never shows: it raises the interrupt instead).

Checks are made by a warm judge (grader.judging.warm_judge) kept for the whole watch: torch,
pytest and the contestants' warm process are started once, on the first check, so that each save
pays only for its own check, with the same verdicts and isolation as a cold `kata check`. Saves
made while a check runs are checked together next, so the last report is of the last save.

Each check shows that it is working: the screen is cleared (on a terminal), a progress line says
which file is being checked (a spinner on a terminal, one plain line elsewhere), then comes the
report, then a status line that stays until the next check: the kata, its file, the time of the
check and how to stop.
"""

import itertools
import json
import os
import time
from collections.abc import Iterable, Iterator
from contextlib import nullcontext
from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from grader.cli.workspace import Workspace
from grader.content import catalogue
from grader.content.catalogue import Kata
from grader.content.i18n import phrase
from grader.judging.warm_judge import WarmJudge
from grader.report.inert import inert
from grader.report.terminal import build_report
from grader.run.grading import GradingError
from grader.run.interrupt import exit_status

TIMINGS_LOG = "KATA_TIMINGS_LOG"  # a file to append each check's timings to (_log_timings)


def watch_workspace(
    workspace: Workspace,
    kata: Kata | None,
    timeout: float,
    poll: bool,
    lang: str,
    console: Console,
    changes: Iterable[set[tuple[object, str]]] | None = None,
) -> int:
    """Check on start, then after each batch of saves; returns 0 when interrupted (Ctrl-C), says so in
    `lang`. SIGTERM still ends the command with 143."""
    katas = {k.slug: k for k in ([kata] if kata else catalogue.all_katas())}
    batches = iter(FileChanges(workspace.root, poll) if changes is None else changes)
    scope = kata.slug if kata else phrase(lang, "every_kata_in", path=workspace.root)
    console.print(phrase(lang, "watching", scope=scope), style="muted")
    watched = {workspace.kata_file(slug).resolve(): slug for slug in katas}
    try:
        with WarmJudge() as judge:
            if kata and workspace.kata_file(kata.slug).exists():
                _check(judge, katas[kata.slug], workspace, timeout, lang, console, scope)
            for batch in batches:
                saved = {watched[path] for _, name in batch if (path := Path(name).resolve()) in watched}
                for slug in sorted(saved):
                    if workspace.kata_file(slug).exists():
                        _check(judge, katas[slug], workspace, timeout, lang, console, scope)
    except KeyboardInterrupt as stop:  # Ctrl-C: how a watch ends
        if exit_status(stop) != exit_status(KeyboardInterrupt()):
            raise
        console.print()
        console.print(phrase(lang, "watch_stopped"), style="muted")
    return 0


def _check(
    judge: WarmJudge, kata: Kata, workspace: Workspace, timeout: float, lang: str, console: Console, scope: str
) -> None:
    """Clear the screen, say which file is being checked, check it, then print the report and the status line."""
    path = workspace.kata_file(kata.slug)
    checking = phrase(lang, "checking", path=path)
    if console.is_terminal:
        console.clear()
        working = Live(Spinner("dots", Text(checking, style="muted")), console=console, transient=True)
    else:
        console.print(checking, style="muted", markup=False)
        working = nullcontext()
    try:
        with working:
            if isinstance(working, Live):
                working.refresh()  # at once, not at the spinner's first tick
            started = time.perf_counter()
            result = judge.check(kata, path, timeout, lang=lang)
            judged = time.perf_counter() - started
    except GradingError as error:  # it may quote the judge's last line: inert, and never markup
        console.print(f"kata: {inert(str(error))}", style="error", markup=False)
    else:
        workspace.record_check(kata.slug, result)
        started = time.perf_counter()
        console.print(build_report(result, kata, lang, str(path)))
        _log_timings(kata.slug, judged, result.timings, time.perf_counter() - started)
    when = datetime.now().strftime("%H:%M:%S")
    console.print()
    console.print(
        phrase(lang, "watch_status", slug=kata.slug, path=path, time=when, scope=scope), style="muted", markup=False
    )


def _log_timings(slug: str, judged: float, phases: dict[str, float], rendering: float) -> None:
    """With KATA_TIMINGS_LOG set (benchmarks/bench_watch.py), append a JSON line to that file: the
    check's seconds in the judge (`judged`: the warm judge's whole answer), in its phases, and in
    rendering the report."""
    log = os.environ.get(TIMINGS_LOG)
    if log:
        line = {"kata": slug, "judged": round(judged, 4), **phases, "rendering": round(rendering, 4)}
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")


class FileChanges:
    """The batches of changes in `root` (not its subfolders), seen from the moment `iter()` is called.

    watchfiles.watch only starts watching on its first step, so that step is taken at once: it
    ends after WAKE_MS with an empty batch (or the changes made meanwhile, kept), and every
    later wait ends the same way when nothing changed.
    """

    WAKE_MS = 100
    QUIET_MS = 20  # a batch ends after this long without a change (watchfiles' 50 ms, less: a save is answered sooner)

    def __init__(self, root: Path, poll: bool):
        self.root, self.poll = root, poll

    def __iter__(self) -> Iterator[set[tuple[object, str]]]:
        import watchfiles

        batches = watchfiles.watch(
            self.root,
            force_polling=True if self.poll else None,
            recursive=False,
            raise_interrupt=True,  # not its English log line: watch_workspace says it in the learner's language
            rust_timeout=self.WAKE_MS,
            step=self.QUIET_MS,
            yield_on_timeout=True,
        )
        return itertools.chain([next(batches, set())], batches)
