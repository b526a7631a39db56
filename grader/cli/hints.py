"""Progressive hints: each call reveals one more hint for a TODO, remembered in the progress file."""

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.text import Text

from grader.cli.workspace import Workspace
from grader.content.catalogue import Kata, localized
from grader.content.i18n import phrase
from grader.report.styles import Prose, Trimmed


def pick_todo(kata: Kata, record: dict) -> int:
    """The first failing TODO of the last check, else the first TODO."""
    failing = (record.get("last_check") or {}).get("failing_todos") or []
    return failing[0] if failing else kata.todos[0].number


def next_hint(kata: Kata, workspace: Workspace, todo_number: int | None, lang: str) -> RenderableType:
    """Reveal the next hint of a TODO (recording it) and render every hint shown so far."""
    record = workspace.progress().get(kata.slug, {})
    number = todo_number if todo_number is not None else pick_todo(kata, record)
    todo = kata.todo(number)
    hints = localized(todo.hints, lang)
    shown_before = record.get("hints", {}).get(str(number), 0)
    shown = min(shown_before + 1, len(hints))
    workspace.update(kata.slug, hints=record.get("hints", {}) | {str(number): shown})
    parts: list[RenderableType] = [
        Prose(Text.assemble((f"TODO {number}  ", "todo"), (localized(todo.title, lang), "title"))),
        Text(),
    ]
    for index, text in enumerate(hints[:shown], start=1):
        style = "hint" if index == shown else "muted"
        parts.append(Text(phrase(lang, "hint_of", i=index, n=len(hints)) + phrase(lang, "colon").rstrip(), style=style))
        parts.append(Padding(Prose(text, style), (0, 0, 1, 2), expand=False))
    closing = "hint_last" if shown == len(hints) else "hint_more"
    parts.append(Prose(phrase(lang, closing, slug=kata.slug), "muted"))
    return Trimmed(Group(*parts))
