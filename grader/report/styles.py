"""Named styles, the one console factory (no other module hard-codes a colour), and `Trimmed`.

Output is plain text (no colour codes) when it is not a terminal or NO_COLOR is set; rich
decides that from the stream and the environment.
"""

import re
from contextlib import contextmanager

from rich.cells import cell_len, chop_cells
from rich.console import Console, RenderableType
from rich.containers import Lines
from rich.measure import Measurement
from rich.segment import Segment
from rich.text import Text
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


# -- wrapping that keeps formulas and numbers whole, and breaks Chinese between characters ------

_CJK = "\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef“”‘’"  # a regex class: Chinese characters and full-width marks (is_cjk)
_ATOM = re.compile(f"`[^`\n]*`|\\s+|[{_CJK}]|[^\\s`{_CJK}]+|`")
_WORDS = re.compile(r"\s+|\S+")
_OPERATOR = re.compile(r"^(=|==|!=|\+|-|\*|/|<|>|<=|>=|≤|≥|±|≈|→|×|·|\*\*)$")
SHORT_GROUP = 24  # cells: a bracketed group this short stays on one line
_NO_LINE_START = set("，。；：！？）》」』”’、,.;:!?)]}%")  # closing punctuation stays on its line
_NO_LINE_END = set("（《「『“‘([{")  # opening punctuation stays with what follows


def break_offsets(text: str, width: int) -> list[int]:
    """Where to break `text` into lines of at most `width` cells (rich's divide_line contract).

    The units never split: a `code span` (a formula), a run of non-space ASCII (a word, a number),
    one Chinese character. A line may break at a space, except one beside an operator (`a = b`
    stays whole), inside a short bracketed group (`(4, 6)`) or inside a `kata` command
    (`kata hint grpo_loss --todo 3`: only one wider than the line breaks), and between Chinese characters,
    except before closing or after opening punctuation. Only a unit wider than a line is folded.
    """
    atoms = []
    for match in _ATOM.finditer(text):
        if match.group().startswith("`") and cell_len(match.group()) > width:  # too wide: it breaks at its spaces
            atoms += [(match.start() + m.start(), m.group()) for m in _WORDS.finditer(match.group())]
        else:
            atoms.append((match.start(), match.group()))
    inside = _short_brackets(text) | _commands(text)
    breaks: list[int] = []
    line_start, used = 0, 0  # where the current line starts, and its cells so far
    last_break: tuple[int, int] | None = None  # (offset, cells of the line before it)
    previous = ""  # the last unit that is not a space
    for index, (start, atom) in enumerate(atoms):
        cells = cell_len(atom)
        if atom.isspace():
            following = atoms[index + 1][1] if index + 1 < len(atoms) else ""
            glued = _OPERATOR.match(previous) or _OPERATOR.match(following) or start in inside
            if start > line_start and not glued:
                last_break = (start + len(atom), used + cells)
            used += cells
            continue
        if start > line_start and start not in inside and _breakable_between(previous, atom, text[start - 1]):
            last_break = (start, used)
        if used + cells > width and last_break is not None:
            offset, before = last_break
            breaks.append(offset)
            line_start, used, last_break = offset, used - before, None
        if used + cells > width:  # no place to break before it: it starts a line, folded if it must be
            if start > line_start:
                breaks.append(start)
            position = start
            for piece in chop_cells(atom, width)[:-1]:
                position += len(piece)
                breaks.append(position)
            line_start, used = position, cell_len(atom[position - start :])
        else:
            used += cells
        previous = atom
    return breaks


def narrowest(text: str) -> int:
    """The cells of the widest piece of `text` no line break goes inside: a unit (a code span, a
    number, a word, a Chinese character) with the punctuation that holds on to it (`（padding）`,
    `0.5，`)."""
    units: list[str] = []
    end = -1
    for match in _ATOM.finditer(text):
        atom = match.group()
        if atom.isspace():
            continue
        if units and match.start() == end and (units[-1][-1] in _NO_LINE_END or atom[0] in _NO_LINE_START):
            units[-1] += atom
        else:
            units.append(atom)
        end = match.end()
    return max((cell_len(unit) for unit in units), default=1)


_COMMAND = re.compile(
    r"\bkata (?:list|start|check|hint|show|quiz|solution|drill|reset|watch|grade|pack|gradescope|lab)"
    r"(?: (?!-)[\w./:{}-]*[\w/}])?(?: --?[\w-]+(?: (?!-)[\w./:=-]*\w)?)*"
)


def _commands(text: str) -> set[int]:
    """Offsets of the spaces inside a `kata ...` command: a command stays on one line."""
    return {match.start() + m.start() for match in _COMMAND.finditer(text) for m in re.finditer(" ", match.group())}


def _short_brackets(text: str) -> set[int]:
    """Offsets inside a short bracketed group, `(4, 6)` or `P(a 优于 b)`: no line breaks there."""
    inside: set[int] = set()
    opened: list[int] = []
    for offset, char in enumerate(text):
        if char in "([{":
            opened.append(offset)
        elif char in ")]}" and opened:
            start = opened.pop()
            if cell_len(text[start : offset + 1]) <= SHORT_GROUP:
                inside.update(range(start + 1, offset + 1))
    return inside


def _breakable_between(previous: str, atom: str, before: str) -> bool:
    """Whether a line may break between two adjacent units with no space between them."""
    if before.isspace() or not previous:
        return False
    cjk = is_cjk(previous[-1]) or is_cjk(atom[0])
    return cjk and atom[0] not in _NO_LINE_START and previous[-1] not in _NO_LINE_END


def is_cjk(char: str) -> bool:
    """A Chinese character or a full-width mark: a line may break beside it."""
    return (
        "\u2e80" <= char <= "\u9fff" or "\uf900" <= char <= "\ufaff" or "\uff00" <= char <= "\uffef" or char in "“”‘’"
    )


def is_wide_mark(char: str) -> bool:
    """A full-width punctuation mark (，。：（）“” …): no space goes beside it."""
    return "\u3000" <= char <= "\u303f" or "\uff00" <= char <= "\uff65" and not char.isalnum() or char in "“”‘’"


class Prose:
    """`text` (a rich Text, or a str with a style) wrapped by `break_offsets`: formulas, numbers and
    code spans never split, Chinese lines fill the width. The reports print prose and messages
    through it. (A wrapper, not a Text subclass: console.print merges adjacent Texts into a plain one.)"""

    def __init__(self, text: Text | str, style: str = ""):
        self.text = text if isinstance(text, Text) else Text(text, style=style)

    def __rich_console__(self, console, options):
        if self.text.no_wrap:
            yield self.text
            return
        lines = Lines()
        for line in self.text.split(allow_blank=True):
            if "\t" in line.plain:
                line.expand_tabs()
            pieces = line.divide(break_offsets(line.plain, options.max_width))
            for piece in pieces:
                piece.rstrip()  # the space a line broke at
            lines.extend(pieces)
        yield from Text("\n").join(lines).render(console)
        yield Segment.line()

    def __rich_measure__(self, console, options):
        """The widest line, and the widest unit that never splits (so a table column is never
        narrower than a formula or a number in it)."""
        lines = self.text.plain.split("\n")
        widest = max(cell_len(line) for line in lines)
        return Measurement(min(narrowest(self.text.plain), options.max_width), min(widest, options.max_width))


class Hanging:
    """`renderable` after `first` on its first line, and indented by `rest` (spaces as wide as
    `first` by default) on the lines after: a list item, a quiz option, a quoted block."""

    def __init__(self, first: str, renderable: RenderableType, rest: str | None = None, style: str = ""):
        self.first, self.renderable, self.style = first, renderable, style
        self.rest = " " * cell_len(first) if rest is None else rest

    def __rich_console__(self, console, options):
        width = max(options.max_width - max(cell_len(self.first), cell_len(self.rest)), 1)
        lines = console.render_lines(self.renderable, options.update(width=width), pad=False)
        for index, line in enumerate(lines):
            yield Segment(self.first if index == 0 else self.rest, console.get_style(self.style or "none"))
            yield from line
            yield Segment.line()

    def __rich_measure__(self, console, options):
        inner = Measurement.get(console, options, self.renderable)
        return Measurement(inner.minimum + cell_len(self.first), inner.maximum + cell_len(self.first))
