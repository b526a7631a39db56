"""What a printed lesson or quiz must keep from its source, and the rules its lines follow at a width.

problems(lines, width, code_lines)  -> ["line 12 starts with closing punctuation: '，…'", ...]
printed_chars(markdown)             -> the characters a lesson prints (a Counter, no spaces)
"""

import re
from collections import Counter

from markdown_it import MarkdownIt
from rich.cells import cell_len

from grader.report.lesson import CODE_INDENT

HAN = "\u3400-\u4dbf\u4e00-\u9fff"
CLOSING = "，。；：！？）》」』”’、"
OPERATORS = ("=", "+", "-", "*", "/", "<", ">", "≤", "≥", "≈", "±", "·", "×", "→", "==", "<=", ">=", "**")
FRAME = "│┌┐└┘├┤┬┴┼─═"  # a table's box, a heading's rule
MARKER = re.compile(r"^\s*(• |\d+\. |[a-z]\) |│ )?")  # a list item's, an option's or a quote's mark
_PARSER = MarkdownIt("commonmark").enable("table")


def _inline_and_code(markdown: str):
    """(kind, text) of every printed piece of a lesson: "code" for a code block, "span" for inline
    code (with its backticks), "text" for the rest."""
    for token in _PARSER.parse(markdown):
        if token.type in ("fence", "code_block"):
            yield "code", token.content
        elif token.type == "list_item_open" and token.info:  # an ordered item: its number and dot
            yield "text", token.info + token.markup
        for child in token.children or []:
            if child.type == "code_inline":
                yield "span", f"`{child.content}`"
            elif child.type in ("text", "html_inline"):
                yield "text", child.content


def printed_chars(markdown: str) -> Counter:
    """Every character a lesson must print, spaces and Markdown's own marks aside."""
    chars = Counter()
    for _, text in _inline_and_code(markdown):
        chars.update(char for char in text if not char.isspace())
    return chars


def shown_chars(output: str) -> Counter:
    """The characters of printed output, spaces, bullets and frames aside."""
    return Counter(char for char in output if not char.isspace() and char not in FRAME + "•")


def code_lines(markdown: str) -> set[str]:
    """The lines of a lesson's code blocks as printed: indented."""
    return {
        " " * CODE_INDENT + line
        for kind, code in _inline_and_code(markdown)
        if kind == "code"
        for line in code.splitlines()
    }


def code_spans(markdown: str) -> list[str]:
    return [text for kind, text in _inline_and_code(markdown) if kind == "span"]


def cells(line: str) -> list[str]:
    """A printed line as the texts it holds: a table row's cells, or the line without its mark."""
    if line.lstrip().startswith("│") and line.rstrip().endswith("│"):
        return [cell.strip() for cell in line.strip().strip("│").split("│")]
    return [MARKER.sub("", line, count=1).strip()]


def problems(lines: list[str], width: int, code: set[str] = frozenset()) -> list[str]:
    """The rules of wrapped text at `width`, for every line but the `code` lines: it fits; no text
    starts with closing punctuation; no line ends with an operator or starts with one (a formula
    split); no space between two Chinese characters."""
    found = []
    for number, line in enumerate(lines, 1):
        if line in code:
            continue
        if cell_len(line) > width:
            found.append(f"line {number} is {cell_len(line)} columns: {line!r}")
        following = cells(lines[number]) if number < len(lines) else []
        for column, text in enumerate(cells(line)):
            if text[:1] and text[0] in CLOSING:
                found.append(f"line {number} starts with closing punctuation: {text!r}")
            words, after = text.split(), following[column].split() if column < len(following) else []
            if words and after and (words[-1] in OPERATORS or after[0] in OPERATORS):
                before, rest = _glued(words[::-1])[::-1], _glued(after)
                formula = " ".join(before + rest)
                if before and rest and cell_len(formula) <= width - 4:  # it would have fit on a line of its own
                    found.append(f"line {number} splits the formula {formula!r} at an operator")
            if re.search(f"[{HAN}] +[{HAN}]", text):
                found.append(f"line {number} has a space between Chinese characters: {text!r}")
    return found


def _glued(words: list[str]) -> list[str]:
    """The first words that hold together as a formula: ASCII words, each pair with an operator on
    one side (`eps: -`, a label and a dash, is none)."""
    run: list[str] = []
    for word in words:
        held = run and _open_brackets(run)  # inside brackets, a formula goes on to their other end
        if not word.isascii() or word.endswith(":") or run and not (held or word in OPERATORS or run[-1] in OPERATORS):
            break
        run.append(word)
    return run if any(word not in OPERATORS for word in run) else []


def _open_brackets(words: list[str]) -> bool:
    text = "".join(words)
    return sum(text.count(c) for c in "([{") != sum(text.count(c) for c in ")]}")
