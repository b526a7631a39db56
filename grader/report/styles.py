"""Named styles, the one console factory (no other module hard-codes a colour), and `Trimmed`.

Output is plain text (no colour codes) when it is not a terminal or NO_COLOR is set; rich
decides that from the stream and the environment.
"""

from contextlib import contextmanager

from rich.console import Console, RenderableType
from rich.segment import Segment
from rich.theme import Theme

THEME = Theme(
    {
        "title": "bold",
        "muted": "dim",
        "passed": "green",
        "failed": "red",
        "error": "bold red",
        "timeout": "yellow",
        "todo": "bold cyan",
        "code": "cyan",
        "misconception": "bold magenta",
        "hint": "yellow",
        "next": "bold",
        "warning": "yellow",
    }
)

SYMBOL = {"passed": "✓", "failed": "✗", "error": "!", "timeout": "⏱"}


def make_console(stderr: bool = False) -> Console:
    """stdout wraps to the terminal; stderr carries one-line messages and never wraps them."""
    return Console(theme=THEME, stderr=stderr, highlight=False, soft_wrap=stderr)


@contextmanager
def progress_bar(console: Console | None, description: str, total: int, remaining: bool = False):
    """A transient bar on a terminal (nothing otherwise); yields `advance(steps=1)`.

    Shows the elapsed time, or the estimated time left with `remaining`.
    """
    if console is None or not console.is_terminal:
        yield lambda steps=1: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    clock = TimeRemainingColumn() if remaining else TimeElapsedColumn()
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), clock, console=console, transient=True
    ) as bar:
        task = bar.add_task(description, total=total)
        yield lambda steps=1: bar.advance(task, steps)


class Trimmed:
    """`renderable` without the spaces rich pads its lines (table cells) with at their ends."""

    def __init__(self, renderable: RenderableType):
        self.renderable = renderable

    def __rich_console__(self, console, options):
        for line in console.render_lines(self.renderable, options, pad=False):
            while line and not line[-1].control and not line[-1].text.rstrip():
                line.pop()
            if line and not line[-1].control:
                line[-1] = Segment(line[-1].text.rstrip(), line[-1].style)
            yield from line
            yield Segment.line()
