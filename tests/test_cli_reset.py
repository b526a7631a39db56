"""`kata reset`: the template again, the old file kept as a backup, the last check forgotten."""

import pytest
from cli_support import flat, list_rows, record_check

from grader.content.catalogue import get_kata

pytestmark = pytest.mark.usefixtures("isolated")


def test_reset_keeps_the_old_file_as_a_backup_and_writes_the_template(kata_main, workspace):
    assert kata_main("start", "grpo_loss", "--workspace", workspace).status == 0
    path = workspace / "grpo_loss.py"
    mine = "# halfway there\nratio = 1.0  # ünïcödé\n".encode()
    path.write_bytes(mine)

    run = kata_main("reset", "grpo_loss", "--workspace", workspace)

    backups = list((workspace / ".backups").iterdir())
    assert run.status == 0
    assert len(backups) == 1
    assert backups[0].read_bytes() == mine
    assert backups[0].name.startswith("grpo_loss.") and backups[0].suffix == ".py"
    assert str(backups[0]) in flat(run.out)
    assert path.read_text(encoding="utf-8") == get_kata("grpo_loss").template("en")


def test_two_resets_in_a_row_keep_two_distinct_backups(kata_main, workspace):
    assert kata_main("start", "grpo_loss", "--workspace", workspace).status == 0
    path = workspace / "grpo_loss.py"
    path.write_bytes(b"first = 1\n")

    assert kata_main("reset", "grpo_loss", "--workspace", workspace).status == 0
    assert kata_main("reset", "grpo_loss", "--workspace", workspace).status == 0

    backups = sorted((workspace / ".backups").iterdir())
    assert len(backups) == 2
    assert sorted(backup.read_bytes() for backup in backups) == sorted(
        [b"first = 1\n", get_kata("grpo_loss").template("en").encode()]
    )


def test_reset_without_a_file_writes_a_blank_one_and_no_backup(kata_main, workspace):
    run = kata_main("reset", "group_advantages", "--workspace", workspace)

    assert run.status == 0
    assert (workspace / "group_advantages.py").read_text(encoding="utf-8") == get_kata("group_advantages").template()
    assert not (workspace / ".backups").exists()


def test_reset_forgets_the_last_check(kata_main, workspace):
    assert kata_main("start", "grpo_loss", "--workspace", workspace).status == 0
    record_check(workspace, "grpo_loss", 20, 6, [3])

    assert kata_main("reset", "grpo_loss", "--workspace", workspace).status == 0

    assert list_rows(kata_main, workspace)["grpo_loss"]["last_check"] is None
    first = get_kata("grpo_loss").todos[0].number
    assert first != 3
    assert kata_main("hint", "grpo_loss", "--workspace", workspace).out.startswith(f"TODO {first}  ")


def test_after_a_reset_the_list_says_in_progress_and_the_solution_stays_unlocked(kata_main, workspace):
    assert kata_main("start", "group_advantages", "--workspace", workspace).status == 0
    record_check(workspace, "group_advantages", 7, 0, [])
    assert list_rows(kata_main, workspace)["group_advantages"]["status"] == "passed"

    assert kata_main("reset", "group_advantages", "--workspace", workspace).status == 0

    assert list_rows(kata_main, workspace)["group_advantages"]["status"] == "in progress"
    assert kata_main("solution", "group_advantages", "--workspace", workspace).status == 0
    record_check(workspace, "group_advantages", 7, 0, [])
    assert list_rows(kata_main, workspace)["group_advantages"]["status"] == "passed"
