"""`kata start`: the blank exercise written once, never over the learner's file."""

import pytest
from cli_support import flat, kata_script, list_rows

from grader.content.catalogue import get_kata

pytestmark = pytest.mark.usefixtures("isolated")


def test_start_writes_the_blank_exercise_with_every_todo(kata_main, workspace):
    run = kata_main("start", "grpo_loss", "--workspace", workspace)

    path = workspace / "grpo_loss.py"
    text = path.read_text(encoding="utf-8")
    assert run.status == 0
    assert f"wrote {path} ({len(get_kata('grpo_loss').todos)} TODOs)" in flat(run.out)
    assert text == get_kata("grpo_loss").template("en")
    assert "raise NotImplementedError" in text
    for todo in get_kata("grpo_loss").todos:
        assert f"# TODO {todo.number}: {todo.title['en']}" in text
    compile(text, str(path), "exec")
    assert list_rows(kata_main, workspace)["grpo_loss"]["status"] == "in progress"


def test_start_counts_a_single_todo_in_the_singular(kata_main, workspace):
    assert len(get_kata("group_advantages").todos) == 1

    run = kata_main("start", "group_advantages", "--workspace", workspace)

    assert f"wrote {workspace / 'group_advantages.py'} (1 TODO)" in flat(run.out)


def test_start_reminds_the_learner_of_a_prerequisite_not_passed_yet(kata_main, workspace):
    prerequisites = get_kata("grpo_loss").prerequisites
    assert "group_advantages" in prerequisites

    run = kata_main("start", "grpo_loss", "--workspace", workspace)

    assert f"builds on {', '.join(prerequisites)}, not passed yet" in flat(run.out)


def test_start_refuses_to_overwrite_and_leaves_the_file_unchanged(kata_main, workspace):
    workspace.mkdir()
    path = workspace / "grpo_loss.py"
    mine = b"# my work in progress\nx = 1\n"
    path.write_bytes(mine)

    run = kata_main("start", "grpo_loss", "--workspace", workspace)

    assert run.status == 1
    assert "already exists; nothing was changed" in flat(run.err)
    assert path.read_bytes() == mine
    assert not (workspace / ".backups").exists()


def test_start_twice_exits_1_as_the_console_script(tmp_path):
    assert kata_script("start", "grpo_loss", "--workspace", "ws", cwd=tmp_path).status == 0
    first = (tmp_path / "ws" / "grpo_loss.py").read_bytes()

    again = kata_script("start", "grpo_loss", "--workspace", "ws", cwd=tmp_path)

    assert again.status == 1
    assert (tmp_path / "ws" / "grpo_loss.py").read_bytes() == first
    assert "Traceback" not in again.err


def test_start_honours_kata_workspace(kata_main, monkeypatch, tmp_path):
    target = tmp_path / "from-env"
    monkeypatch.setenv("KATA_WORKSPACE", str(target))

    run = kata_main("start", "group_advantages")

    assert run.status == 0
    assert (target / "group_advantages.py").is_file()
    assert not (tmp_path / "kata_workspace").exists()


def test_start_without_a_workspace_option_uses_kata_workspace_in_the_current_folder(kata_main, tmp_path):
    assert kata_main("start", "group_advantages").status == 0

    assert (tmp_path / "kata_workspace" / "group_advantages.py").is_file()


def test_start_in_chinese_writes_chinese_todo_titles(kata_main, workspace):
    assert kata_main("start", "grpo_loss", "--workspace", workspace, "--lang", "zh").status == 0

    text = (workspace / "grpo_loss.py").read_text(encoding="utf-8")
    assert get_kata("grpo_loss").title["zh"] in text.splitlines()[0]
    for todo in get_kata("grpo_loss").todos:
        assert f"# TODO {todo.number}: {todo.title['zh']}" in text
        assert todo.title["en"] not in text
    compile(text, "grpo_loss.py", "exec")


def test_start_in_a_workspace_that_cannot_be_created_gives_a_message_not_a_traceback(tmp_path):
    (tmp_path / "afile").write_text("not a folder\n")

    run = kata_script("start", "grpo_loss", "--workspace", "afile/sub", cwd=tmp_path)

    assert "Traceback" not in run.err
    assert run.status in (1, 2)
    assert run.err.startswith("kata")
