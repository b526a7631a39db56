"""Progressive hints: each call reveals one more hint for a TODO, remembered in the progress file.

They follow the last check of the file (its record in the progress file: grader.cli.workspace):
the TODO is the one its named mistake lies in, else the first located or failing one; and when
the mistake names a hint of that TODO (`hint = N` in misconceptions.toml), that hint comes first,
the others after it in their order. The last hint of a TODO may show the code; its label says so.
"""

import re

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.text import Text

from grader.cli.workspace import Workspace
from grader.content.catalogue import Kata, Misconception, localized
from grader.content.i18n import phrase
from grader.report.styles import Prose, Trimmed

CODE = re.compile(r"`[^`]*[=(][^`]*`")  # a code span with an assignment or a call: the hint shows code


def named_mistake(kata: Kata, record: dict) -> Misconception | None:
    """The mistake the last check named, if it is one of this kata's."""
    diagnosis = (record.get("last_check") or {}).get("diagnosis")
    return next((item for item in kata.misconceptions if item.id == diagnosis), None)


def pick_todo(kata: Kata, record: dict) -> int:
    """The TODO of the mistake the last check named, else its first located or failing TODO, else the first."""
    numbers = [todo.number for todo in kata.todos]
    named = named_mistake(kata, record)
    if named is not None and named.todo in numbers:
        return named.todo
    failing = [todo for todo in (record.get("last_check") or {}).get("failing_todos") or [] if todo in numbers]
    return failing[0] if failing else numbers[0]


def hint_order(kata: Kata, record: dict, number: int, count: int) -> list[int]:
    """The order in which TODO `number`'s hints (1..count) are shown: the named mistake's hint first."""
    order = list(range(1, count + 1))
    named = named_mistake(kata, record)
    if named is not None and named.todo == number and named.hint in order:
        order.remove(named.hint)
        order.insert(0, named.hint)
    return order


def shown_hints(record: dict, number: int, count: int) -> list[int]:
    """The hints of TODO `number` shown so far, in the order shown (an older progress file kept a count)."""
    shown = record.get("hints", {}).get(str(number), [])
    if isinstance(shown, int):
        return list(range(1, min(shown, count) + 1))
    return [index for index in shown if isinstance(index, int) and 1 <= index <= count]


def next_hint(kata: Kata, workspace: Workspace, todo_number: int | None, lang: str) -> RenderableType:
    """Reveal the next hint of a TODO (recording it) and render every hint shown so far."""
    record = workspace.progress().get(kata.slug, {})
    number = todo_number if todo_number is not None else pick_todo(kata, record)
    todo = kata.todo(number)
    hints = localized(todo.hints, lang)
    shown = shown_hints(record, number, len(hints))
    unseen = [index for index in hint_order(kata, record, number, len(hints)) if index not in shown]
    if unseen:
        shown.append(unseen[0])
    workspace.update(kata.slug, hints=record.get("hints", {}) | {str(number): shown})
    parts: list[RenderableType] = [
        Prose(Text.assemble((f"TODO {number}  ", "todo"), (localized(todo.title, lang), "title"))),
        Text(),
    ]
    named = named_mistake(kata, record)
    if named is not None and named.todo == number and shown and shown[0] == named.hint:
        parts += [Prose(phrase(lang, "hint_for", title=named.title_in(lang)), "muted"), Text()]
    for position, index in enumerate(shown, start=1):
        style = "hint" if position == len(shown) else "muted"
        text = hints[index - 1]
        key = "hint_code" if index == len(hints) and CODE.search(text) else "hint_of"
        parts.append(Text(phrase(lang, key, i=index, n=len(hints)) + phrase(lang, "colon").rstrip(), style=style))
        parts.append(Padding(Prose(text, style), (0, 0, 1, 2), expand=False))
    closing = "hint_last" if len(shown) == len(hints) else "hint_more"
    parts.append(Prose(phrase(lang, closing, slug=kata.slug), "muted"))
    return Trimmed(Group(*parts))
