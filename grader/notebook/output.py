"""What a `%kata` magic shows: the same rich renderables the terminal prints, as HTML in the notebook.

A renderable (a report, hints, the listing) is printed once into a recording rich Console of WIDTH
columns with the report's theme (grader.report.styles.THEME) and exported twice: as HTML with inline
styles (each colour a `style=` of its own span, so a notebook's HTML sanitiser and nbconvert keep
them) in a `<pre>` of its own colours, and as plain text, with no ANSI, for frontends that show only
text/plain. `Shown` carries both as one display bundle (`_repr_mimebundle_`).
"""

import io

from rich.console import Console, RenderableType
from rich.text import Text

from grader.report.styles import THEME

WIDTH = 80  # columns: the reports are built for 80, and a notebook's code cell is wider
PRE = (
    "<pre style=\"font-family: Menlo, 'DejaVu Sans Mono', Consolas, monospace; font-size: 13px;"
    " line-height: 1.35; white-space: pre; overflow-x: auto; padding: 0.6em 0.8em;"
    ' color: {foreground}; background-color: {background}">{code}</pre>'
)


class Shown:
    """A renderable as a display bundle: text/html (coloured, inline styles) and text/plain."""

    def __init__(self, renderable: RenderableType, width: int = WIDTH):
        recorder = Console(
            theme=THEME, record=True, width=width, file=io.StringIO(), highlight=False, force_jupyter=False
        )  # not rich's own Jupyter display, which would show the text again, with ANSI
        recorder.print(renderable, crop=False)
        self.html = recorder.export_html(inline_styles=True, clear=False, code_format=PRE)
        self.text = recorder.export_text()

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return {"text/html": self.html, "text/plain": self.text}

    def __repr__(self) -> str:
        return self.text


def show(*renderables: RenderableType | str) -> None:
    """Display renderables in the cell's output, one bundle for all; a str is rich markup (a
    phrase such as `[passed]✓[/] wrote ...`)."""
    from IPython.display import display
    from rich.console import Group

    parts = [Text.from_markup(part) if isinstance(part, str) else part for part in renderables]
    display(Shown(Group(*parts)))


def say_error(line: str) -> None:
    """One line on the cell's stderr (plain: no markup, no traceback)."""
    import sys

    print(Text.from_markup(line).plain if "[/]" in line else line, file=sys.stderr)
