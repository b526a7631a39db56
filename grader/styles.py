"""Named styles and the one console factory: no other module hard-codes a colour.

Output is plain text (no colour codes) when it is not a terminal or NO_COLOR is set; rich
decides that from the stream and the environment.
"""

from rich.console import Console
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
