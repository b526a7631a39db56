"""`kata watch`: a check per saved kata file, nothing for other files."""

import io
import re
import time
from pathlib import Path

import pytest
from cli_support import flat, grpo_reference, list_rows
from rich.console import Console

from grader.cli.watch import FileChanges, watch_workspace
from grader.cli.workspace import Workspace
from grader.content.catalogue import get_kata
from grader.content.i18n import phrase
from grader.report.results import CheckResult, GradeResult
from grader.report.styles import THEME

SUMMARY = re.compile(r"^\d+ passed, \d+ failed$", re.MULTILINE)

pytestmark = pytest.mark.usefixtures("isolated")


def _watch(workspace: Path, slug: str | None, changes: list) -> tuple[int, str]:
    output = io.StringIO()
    kata_ = get_kata(slug) if slug else None
    status = watch_workspace(
        Workspace(workspace),
        kata_,
        10.0,
        poll=False,
        lang="en",
        console=Console(file=output, width=200, theme=THEME),
        changes=changes,
    )
    return status, output.getvalue()


@pytest.fixture
def fake_grade(monkeypatch):
    """Replace the grading run in `kata watch` by a record of what it was asked to grade."""
    calls = []

    def grade(kata, target, timeout, lang="en"):
        calls.append((kata.slug, str(target)))
        return GradeResult(kata.slug, str(target), [CheckResult("stub", "stub", 1, "passed")])

    judge_with(monkeypatch, grade)
    return calls


def judge_with(monkeypatch, grade) -> None:
    """Make `kata watch`'s warm judge grade with `grade(kata, target, timeout, lang)`."""

    class Judge:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

        def check(self, kata, target, timeout, lang="en"):
            return grade(kata, target, timeout, lang)

    monkeypatch.setattr("grader.cli.watch.WarmJudge", Judge)


def test_watch_grades_once_per_batch_that_saves_a_kata_file_and_ignores_other_files(kata_main, workspace):
    workspace.mkdir()
    (workspace / "grpo_loss.py").write_text(grpo_reference(), encoding="utf-8")
    (workspace / "notes.txt").write_text("notes\n")
    saved = str(workspace / "grpo_loss.py")
    changes = [
        {(2, str(workspace / "notes.txt"))},
        {(1, saved), (2, saved)},
        {(2, str(workspace / "group_advantages.py"))},
        {(2, str(workspace / "grpo_loss.txt"))},
    ]

    status, output = _watch(workspace, None, changes)

    assert status == 0
    assert output.startswith(f"watching every kata in {workspace}")
    assert len(SUMMARY.findall(output)) == 1
    assert re.search(r"^(\d+) passed, 0 failed$", output, re.MULTILINE)
    assert list_rows(kata_main, workspace)["grpo_loss"]["status"] == "passed"


def test_watch_of_one_kata_checks_it_on_start_and_ignores_the_other_katas(workspace, fake_grade):
    workspace.mkdir()
    for slug in ("group_advantages", "grpo_loss"):
        (workspace / f"{slug}.py").write_text("x = 1\n")

    status, output = _watch(workspace, "grpo_loss", [{(2, str(workspace / "group_advantages.py"))}])

    assert status == 0
    assert fake_grade == [("grpo_loss", str(workspace / "grpo_loss.py"))]
    assert output.startswith("watching grpo_loss")


def test_watch_does_not_check_a_deleted_kata_file(workspace, fake_grade):
    workspace.mkdir()

    _watch(workspace, None, [{(3, str(workspace / "grpo_loss.py"))}])

    assert fake_grade == []


def test_watch_ignores_a_file_of_the_same_name_in_a_subfolder(workspace, fake_grade):
    (workspace / "attic").mkdir(parents=True)
    (workspace / "grpo_loss.py").write_text("x = 1\n")
    (workspace / "attic" / "grpo_loss.py").write_text("old = 1\n")

    _watch(workspace, None, [{(2, str(workspace / "attic" / "grpo_loss.py"))}])

    assert fake_grade == []


def test_watch_without_a_workspace_exits_1(kata_main, workspace):
    run = kata_main("watch", "--workspace", workspace)

    assert run.status == 1
    assert "no workspace at" in flat(run.err)


class Recorded:
    """Change batches that note in `events` when they start to be watched (iterated)."""

    def __init__(self, events: list, batches: list):
        self.events, self.batches = events, batches

    def __iter__(self):
        self.events.append("watching")
        return iter(self.batches)


def test_watch_starts_watching_before_the_first_check(workspace, fake_grade):
    """A save made while the first check runs must not be missed."""
    workspace.mkdir()
    saved = workspace / "grpo_loss.py"
    saved.write_text("x = 1\n")

    _watch(workspace, "grpo_loss", Recorded(fake_grade, [{(2, str(saved))}]))

    assert fake_grade == ["watching", ("grpo_loss", str(saved)), ("grpo_loss", str(saved))]


def test_file_changes_sees_a_save_made_right_after_it_starts(tmp_path):
    batches = iter(FileChanges(tmp_path, poll=False))
    (tmp_path / "grpo_loss.py").write_text("x = 1\n")
    deadline = time.monotonic() + 10
    seen: set = set()
    while not any(name.endswith("grpo_loss.py") for _, name in seen) and time.monotonic() < deadline:
        seen |= next(batches)
    assert any(Path(name) == tmp_path / "grpo_loss.py" for _, name in seen), seen


def test_ctrl_c_ends_a_watch_with_one_line_of_its_own_and_status_0(workspace, fake_grade):
    def interrupted():
        raise KeyboardInterrupt
        yield

    workspace.mkdir()
    try:
        status, output = _watch(workspace, None, interrupted())
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C escaped the watch")

    assert status == 0 and output.rstrip().endswith("stopped watching")


def test_file_changes_has_watchfiles_raise_the_interrupt_rather_than_log_it_in_english(tmp_path, monkeypatch):
    seen = {}

    def watch(*paths, **options):
        seen.update(options)
        return iter([])

    monkeypatch.setattr("watchfiles.watch", watch)
    list(FileChanges(tmp_path, poll=False))

    assert seen["raise_interrupt"] is True


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("terminal", [False, True])
def test_each_check_shows_a_progress_line_then_the_report_then_a_status_line_that_stays(
    workspace, monkeypatch, lang, terminal
):
    workspace.mkdir()
    saved = workspace / "grpo_loss.py"
    saved.write_text("x = 1\n")
    output = io.StringIO()
    console = Console(file=output, width=200, theme=THEME, force_terminal=terminal, color_system=None)
    seen_while_checking = []

    def grade(kata, target, timeout, lang="en"):
        seen_while_checking.append(output.getvalue())
        return GradeResult(kata.slug, str(target), [CheckResult("stub", "stub", 1, "passed")])

    judge_with(monkeypatch, grade)
    watch_workspace(
        Workspace(workspace), get_kata("grpo_loss"), 10.0, False, lang, console, changes=[{(2, str(saved))}]
    )

    checking = phrase(lang, "checking", path=saved)
    assert len(seen_while_checking) == 2 and all(checking in seen for seen in seen_while_checking)
    text = output.getvalue()
    status = re.compile(
        re.escape(phrase(lang, "watch_status", slug="grpo_loss", path=saved, time="TIME", scope="grpo_loss")).replace(
            "TIME", r"\d\d:\d\d:\d\d"
        )
    )
    assert len(status.findall(text)) == 2
    last_report = text.rindex("1 passed, 0 failed")
    assert status.search(text, last_report), "the status line comes after the report"
    assert "Ctrl-C" in phrase(lang, "watch_status", slug="", path="", time="", scope="")
