"""A check as pytest collected it: the TODO it grades, its titles, and its code run against a
contestant outside pytest's own protocol (naming runs it on misconception variants, locating on
hybrids)."""

import inspect

import pytest

from grader.judging.expect import Expect
from grader.judging.recorded import for_check


def todo_of(item: pytest.Item) -> int | None:
    """The TODO a check grades (`@pytest.mark.todo(N)`), None for whole-function and contract checks."""
    marker = item.get_closest_marker("todo")
    return marker.args[0] if marker else None


def is_whole(item: pytest.Item) -> bool:
    return item.get_closest_marker("whole") is not None


def titles(item: pytest.Item) -> tuple[str, str]:
    """(English title, Chinese title) of a check: its docstring's first line and its "zh:" line."""
    lines = [line.strip() for line in (item.obj.__doc__ or "").strip().splitlines()]
    zh = next((line.removeprefix("zh:").strip() for line in lines if line.startswith("zh:")), "")
    return (lines[0] if lines else item.name), zh


def run_check(item: pytest.Item, contestant, reference) -> None:
    """The check's own code, with `contestant` as the module under test (raises what it raises)."""
    params = item.callspec.params if hasattr(item, "callspec") else {}
    reference = for_check(reference, item)
    values = dict(params, learner=contestant, reference=reference)
    values["expect"] = Expect(contestant, reference)
    item.obj(**{name: values[name] for name in inspect.signature(item.obj).parameters})
