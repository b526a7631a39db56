"""`kata hint`: one more hint each time, per TODO, defaulting to the first failing TODO."""

import io

import pytest
from cli_support import flat, record_check, squash
from rich.console import Console

from grader.cli.workspace import Workspace
from grader.content.catalogue import get_kata
from grader.content.i18n import phrase
from grader.report.results import CheckResult, GradeResult
from grader.report.styles import THEME, Prose

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


def _named(workspace, slug: str, misconception: str, todo: int) -> None:
    """Record a last check that named `misconception` (its failing checks in `todo`)."""
    check = CheckResult("f", "f", todo, "failed", "wrong", misconception=misconception, matches=[misconception])
    Workspace(workspace).record_check(slug, GradeResult(slug, "file", [check]))


def test_a_named_mistake_with_a_hint_of_its_own_gets_that_hint_first_then_the_others(kata_main, workspace):
    kata_ = get_kata("group_advantages")
    named = next(item for item in kata_.misconceptions if item.id == "eps_added")
    hints = kata_.todo(named.todo).hints["en"]
    assert named.hint == len(hints) >= 3  # the answer line: the last hint, which shows the code
    _named(workspace, "group_advantages", "eps_added", named.todo)

    first = flat(kata_main("hint", "group_advantages", "--workspace", workspace).out)
    second = flat(kata_main("hint", "group_advantages", "--workspace", workspace).out)

    assert f"named this mistake: {named.title['en']}" in first
    assert flat(hints[named.hint - 1]) in first and flat(hints[0]) not in first
    assert f"hint {named.hint} of {len(hints)}, which shows the code:" in first
    assert first.index(f"hint {named.hint} of") < second.index("hint 1 of") and flat(hints[1]) not in second


def test_a_named_mistake_in_another_todo_than_the_first_failing_one_sends_the_hint_there(kata_main, workspace):
    kata_ = get_kata("grpo_loss")
    named = next(item for item in kata_.misconceptions if item.todo != kata_.todos[0].number)
    _named(workspace, "grpo_loss", named.id, named.todo)
    Workspace(workspace).update(
        "grpo_loss",
        last_check={
            "failing_todos": [kata_.todos[0].number],
            **{
                key: value
                for key, value in Workspace(workspace).progress()["grpo_loss"]["last_check"].items()
                if key != "failing_todos"
            },
        },
    )

    run = kata_main("hint", "grpo_loss", "--workspace", workspace)

    assert run.out.startswith(f"TODO {named.todo}  ")


def test_a_hint_counted_by_an_older_progress_file_goes_on_from_there(kata_main, workspace):
    Workspace(workspace).update("group_advantages", hints={"1": 1})

    run = kata_main("hint", "group_advantages", "--workspace", workspace)

    assert "hint 1 of" in run.out and "hint 2 of" in run.out


def test_a_command_in_a_hint_is_never_split_over_two_lines():
    text = phrase("en", "hint_last", slug="delivery_decisions")
    for width in (40, 50, 60):
        console = Console(file=io.StringIO(), width=width, theme=THEME)
        console.print(Prose(text))
        assert "kata show delivery_decisions" in console.file.getvalue(), console.file.getvalue()
