"""A lesson's Markdown as the reports print it: every paragraph, list item and table cell wrapped by
`styles.Prose`, so Chinese fills the line and a formula, a number or a code span never splits.

    lesson(text) -> a rich renderable; `console.print(lesson(text))`

- A line break inside a paragraph of the source joins the lines without a space when a Chinese
  character or full-width mark is on both sides of it (with one space otherwise), as a browser does
  for Chinese text.
- Lists: "• " or "1. " on the first line of an item, its continuation indented under its text.
- Code blocks are printed as they are, indented 2 columns, never wrapped (the lessons keep them
  within 80 columns: tests/test_content.py).
- Tables: every cell wraps inside its column, so a table wider than the page is never cut; rows are
  ruled apart when a cell had to wrap.
- Inline code keeps its backticks (it reads as code when piped); bold and italics are styles only.

A terminal gets the theme's colours; piped output is the same text, plain (Trimmed: no padding).
"""

import re

from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode
from rich import box
from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from grader.report.styles import Hanging, Prose, Trimmed, is_cjk, is_wide_mark, narrowest

CODE_INDENT = 2
_PARSER = MarkdownIt("commonmark").enable("table")


def lesson(text: str) -> RenderableType:
    """The whole lesson: its blocks one after another, a blank line between them. Print it with
    `crop=False`, so that a code line wider than the page is never cut."""
    return _blocks(SyntaxTreeNode(_PARSER.parse(text)).children)


def _blocks(nodes: list[SyntaxTreeNode], spaced: bool = True) -> Group:
    parts: list[RenderableType] = []
    for node in nodes:
        if parts and spaced:
            parts.append(Text())
        block = _block(node)
        parts.append(block if isinstance(block, _Code) else Trimmed(block))
    return Group(*parts)


def _block(node: SyntaxTreeNode) -> RenderableType:
    kind = node.type
    if kind == "heading":
        return _Heading(_inline(node.children[0], "title"), level=int(node.tag[1:]))
    if kind == "paragraph":
        return Prose(_inline(node.children[0]))
    if kind in ("bullet_list", "ordered_list"):
        return _list(node)
    if kind in ("fence", "code_block"):
        return _Code(node.content)
    if kind == "table":
        return _table(node)
    if kind == "blockquote":
        return Hanging("│ ", _blocks(node.children), "│ ", style="muted")
    if kind == "hr":
        return Text("─" * 40, style="muted")
    return Prose(node.content.rstrip("\n"))  # html_block and anything else: as written


def _list(node: SyntaxTreeNode) -> RenderableType:
    first = int(node.attrs.get("start", 1)) if node.type == "ordered_list" else None
    items = []
    for index, item in enumerate(node.children):
        marker = "• " if first is None else f"{first + index}. "
        items.append(Hanging(marker, _blocks(item.children, spaced=not _tight(item))))
    return Group(*items)


def _tight(item: SyntaxTreeNode) -> bool:
    """A tight item's paragraphs are hidden (markdown-it's own flag): no blank lines inside it."""
    return all(child.hidden for child in item.children if child.type == "paragraph")


def _table(node: SyntaxTreeNode) -> RenderableType:
    head, *bodies = node.children
    rows = [head.children[0], *(row for body in bodies for row in body.children)]
    return _Table(
        [[Prose(_inline(cell.children[0]) if cell.children else Text()) for cell in row.children] for row in rows]
    )


class _Table:
    """A boxed table whose columns share the page: the widest columns narrow first, none below
    the widest unit that never splits in it (a formula, a number, a code span). Rows are ruled
    apart when cells wrap. A table that cannot fit so is printed as a record per row."""

    def __init__(self, rows: list[list[Prose]]):
        self.rows = rows

    def __rich_console__(self, console, options):
        columns = len(self.rows[0])
        frame = 3 * columns + 1  # a border and a space either side of each cell
        cells = [[row[index].text.plain for row in self.rows if index < len(row)] for index in range(columns)]
        most = [max(cell_len(line) for cell in column for line in cell.split("\n")) for column in cells]
        least = [max(narrowest(cell) for cell in column) for column in cells]
        room = options.max_width - frame
        if sum(least) > room:  # a column too narrow for a unit: a record per row
            yield from self._records()
            return
        wraps = sum(most) > room
        widths = _share(least, most, room) if wraps else most
        table = Table(box=box.SQUARE, header_style="title", show_lines=wraps)
        for width, header in zip(widths, self.rows[0], strict=True):
            table.add_column(header, width=width)
        for row in self.rows[1:]:
            table.add_row(*row)
        yield table

    def _records(self):
        """Each row as its first cell, then each other cell after its header: nothing cut."""
        header, *rows = self.rows
        for index, row in enumerate(rows):
            if index:
                yield Text()
            for column, (name, cell) in enumerate(zip(header, row, strict=False)):
                label = name.text.plain
                if column == 0:  # the row's name, its header a caption
                    yield Prose(
                        Text.assemble(*([(label + _colon(label), "muted")] if label else []), cell.text), "title"
                    )
                elif cell.text.plain:
                    yield Hanging("  ", Prose(Text.assemble((label + _colon(label), "muted"), cell.text)), "    ")


def _colon(label: str) -> str:
    return "：" if is_cjk(label[-1]) else ": "


def _share(least: list[int], most: list[int], room: int) -> list[int]:
    """Column widths within `room`: the widest column gives up a cell, again and again, but none
    goes below its `least`."""
    widths = list(most)
    while sum(widths) > room and (shrinkable := [i for i, w in enumerate(widths) if w > least[i]]):
        widths[max(shrinkable, key=lambda i: widths[i])] -= 1
    return widths


class _Heading:
    """A heading; the first two levels underlined (═, ─) so they stand out in plain text too."""

    def __init__(self, text: Text, level: int):
        self.text, self.level = text, level

    def __rich_console__(self, console, options):
        lines = console.render_lines(Prose(self.text), options, pad=False)
        for line in lines:
            yield from line
            yield Segment.line()
        if self.level <= 2:
            width = max(Segment.get_line_length(line) for line in lines)
            yield Segment("═─"[self.level - 1] * width, console.get_style("muted"))
            yield Segment.line()


class _Code:
    """Lines of code, indented and never wrapped or cut."""

    def __init__(self, code: str):
        self.lines = code.rstrip("\n").split("\n")

    def __rich_console__(self, console, options):
        style = console.get_style("code")
        for line in self.lines:
            yield Segment(" " * CODE_INDENT + line if line else "", style)
            yield Segment.line()


def _inline(node: SyntaxTreeNode, style: str = "") -> Text:
    """The inline content of a block as one Text, code with its backticks. A soft break becomes
    what `_joiner` says; spaces between two Chinese characters outside code go (the source puts
    one beside `**` where Markdown needs it)."""
    text, code = Text(style=style), []  # code: (start, end) of each code span
    for words, kind in _pieces(node, ""):
        if "code" in kind:
            code.append((len(text), len(text) + len(words)))
        text.append(words, kind)
    plain, out, cursor = text.plain, Text(style=style), 0
    for gap in _GAP.finditer(plain):
        before, after = plain[gap.start() - 1 : gap.start()], plain[gap.end() : gap.end() + 1]
        if any(start <= gap.start() < end for start, end in code):
            continue
        if SOFT_BREAK in gap.group():
            new = _joiner(before, after)
        elif is_cjk(before or "a") and is_cjk(after or "a"):
            new = ""
        else:
            continue
        out.append_text(text[cursor : gap.start()])
        out.append(new)
        cursor = gap.end()
    out.append_text(text[cursor:])
    return out


SOFT_BREAK = "\x00"
_GAP = re.compile(f" *{SOFT_BREAK} *| +")
_STYLES = {"strong": "bold", "em": "italic", "link": "underline", "s": "strike"}


def _pieces(node: SyntaxTreeNode, style: str):
    """(text, style) of each inline piece, in order: a soft break is SOFT_BREAK, a hard one a line break."""
    for child in node.children:
        kind = child.type
        if kind in ("text", "html_inline"):
            yield child.content, style
        elif kind == "code_inline":
            yield f"`{child.content}`", f"{style} code".strip()
        elif kind in ("softbreak", "hardbreak"):
            yield SOFT_BREAK if kind == "softbreak" else "\n", style
        else:  # strong, em, link, s: their children in a style
            yield from _pieces(child, f"{style} {_STYLES.get(kind, '')}".strip())


def _joiner(before: str, after: str) -> str:
    """What a soft break becomes: nothing between two Chinese characters or beside a full-width
    mark (Chinese has no spaces), a space otherwise."""
    if not before or not after:
        return ""
    if is_cjk(before) and is_cjk(after) or is_wide_mark(before) or is_wide_mark(after):
        return ""
    return " "
