"""`kata hint`: one more hint each time, per TODO, defaulting to the first failing TODO."""

import pytest
from cli_support import flat, record_check, squash

from grader.content.catalogue import get_kata

pytestmark = pytest.mark.usefixtures("isolated")


def test_hint_reveals_one_more_hint_each_time_and_stops_at_the_last(kata_main, workspace):
    todo = get_kata("group_advantages").todos[0]
    hints = todo.hints["en"]
    n = len(hints)
    assert n >= 2
    shown = [kata_main("hint", "group_advantages", "--workspace", workspace) for _ in range(n + 1)]

    assert all(run.status == 0 for run in shown)
    assert all(run.out.startswith(f"TODO {todo.number}  ") for run in shown)
    texts = [flat(run.out) for run in shown]
    first, second, last, after_last = texts[0], texts[1], texts[n - 1], texts[n]
    assert f"hint 1 of {n}" in first and f"hint 2 of {n}" not in first
    assert flat(hints[0]) in first and flat(hints[1]) not in first
    assert "Run the same command again for the next hint." in first
    assert f"hint 1 of {n}" in second and f"hint 2 of {n}" in second
    assert flat(hints[1]) in second
    assert (f"hint 3 of {n}" not in second) if n > 2 else ("That was the last hint for this TODO." in second)
    assert f"hint {n} of {n}" in last and "That was the last hint for this TODO." in last
    assert all(flat(hint) in last for hint in hints)
    assert after_last == last
    assert f"hint {n + 1}" not in after_last


def test_hint_counts_each_todo_separately(kata_main, workspace):
    kata_main("hint", "grpo_loss", "--workspace", workspace, "--todo", "2")
    kata_main("hint", "grpo_loss", "--workspace", workspace, "--todo", "2")

    run = kata_main("hint", "grpo_loss", "--workspace", workspace, "--todo", "3")

    n = len(get_kata("grpo_loss").todo(3).hints["en"])
    assert run.out.startswith("TODO 3  ")
    assert f"hint 1 of {n}" in run.out and f"hint 2 of {n}" not in run.out


def test_hint_for_a_todo_that_does_not_exist_exits_2_and_records_nothing(kata_main, workspace):
    numbers = [todo.number for todo in get_kata("grpo_loss").todos]

    run = kata_main("hint", "grpo_loss", "--workspace", workspace, "--todo", max(numbers) + 1)

    assert run.status == 2
    assert "--todo" in run.err and f"grpo_loss has TODOs {', '.join(map(str, numbers))} " in flat(run.err)
    assert not workspace.exists()


def test_hint_defaults_to_the_first_todo_without_a_check(kata_main, workspace):
    first = get_kata("grpo_loss").todos[0]

    run = kata_main("hint", "grpo_loss", "--workspace", workspace)

    assert run.out.startswith(f"TODO {first.number}  {first.title['en']}")


def test_hint_defaults_to_the_first_failing_todo_of_the_last_check(kata_main, workspace):
    record_check(workspace, "grpo_loss", 20, 6, [3, 4])

    run = kata_main("hint", "grpo_loss", "--workspace", workspace)

    assert run.status == 0
    assert run.out.startswith(f"TODO 3  {get_kata('grpo_loss').todo(3).title['en']}")
    assert flat(get_kata("grpo_loss").todo(3).hints["en"][0]) in flat(run.out)


def test_hint_speaks_chinese_with_lang_zh(kata_main, workspace):
    todo = get_kata("group_advantages").todos[0]

    run = kata_main("hint", "group_advantages", "--workspace", workspace, "--lang", "zh")

    assert run.status == 0
    assert run.out.startswith(f"TODO {todo.number}  {todo.title['zh']}")
    assert f"第 1 条提示，共 {len(todo.hints['zh'])} 条" in run.out
    assert squash(todo.hints["zh"][0]) in squash(run.out)
    assert todo.hints["en"][0][:20] not in run.out
