"""A corrupt progress file: set aside with a warning and replaced, never a crash."""

import json
import time

import pytest
from cli_support import flat, list_json

from grader.content.catalogue import all_katas

pytestmark = pytest.mark.usefixtures("isolated")


def test_a_corrupt_progress_file_is_set_aside_with_a_warning_and_replaced(kata_main, workspace):
    workspace.mkdir()
    garbage = b"{not json at all\x00\n"
    (workspace / ".progress.json").write_bytes(garbage)

    listed = kata_main("list", "--workspace", workspace)

    asides = list(workspace.glob(".progress.json.corrupt-*"))
    assert listed.status == 0
    assert flat(listed.err).startswith("warning: progress file was unreadable")
    assert asides and asides[0].name in flat(listed.err)
    assert len(asides) == 1 and asides[0].read_bytes() == garbage
    assert not (workspace / ".progress.json").exists()
    assert [row["status"] for row in list_json(kata_main, workspace)["katas"]] == ["not started"] * len(all_katas())

    assert kata_main("start", "grpo_loss", "--workspace", workspace).status == 0
    progress = json.loads((workspace / ".progress.json").read_text(encoding="utf-8"))
    assert progress["version"] == 1 and "started_at" in progress["katas"]["grpo_loss"]


def test_a_progress_file_of_the_wrong_shape_is_set_aside_too(kata_main, workspace):
    workspace.mkdir()
    (workspace / ".progress.json").write_text('["a", "list"]', encoding="utf-8")

    listed = kata_main("list", "--workspace", workspace)

    assert listed.status == 0
    assert "progress file was unreadable" in flat(listed.err)
    assert len(list(workspace.glob(".progress.json.corrupt-*"))) == 1


def test_a_progress_record_of_the_wrong_shape_is_set_aside_not_a_crash(kata_main, workspace):
    workspace.mkdir()
    (workspace / ".progress.json").write_text('{"version": 1, "katas": {"grpo_loss": []}}', encoding="utf-8")

    listed = kata_main("list", "--workspace", workspace)

    assert listed.status == 0
    assert "progress file was unreadable" in flat(listed.err)


def test_a_refused_solution_still_warns_that_the_progress_file_was_set_aside(kata_main, workspace):
    workspace.mkdir()
    (workspace / ".progress.json").write_bytes(b"garbage")

    run = kata_main("solution", "grpo_loss", "--workspace", workspace)

    assert run.status == 1
    assert list(workspace.glob(".progress.json.corrupt-*"))
    assert "progress file was unreadable" in flat(run.err)


def test_two_corrupt_progress_files_in_the_same_second_are_both_kept(kata_main, monkeypatch, workspace):
    monkeypatch.setattr(time, "time", lambda: 1_700_000_000.25)
    workspace.mkdir()
    for garbage in (b"first garbage", b"second garbage"):
        (workspace / ".progress.json").write_bytes(garbage)
        assert kata_main("list", "--workspace", workspace).status == 0

    kept = sorted(path.read_bytes() for path in workspace.glob(".progress.json.corrupt-*"))

    assert kept == [b"first garbage", b"second garbage"]
