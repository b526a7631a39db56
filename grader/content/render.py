"""Render learner-facing sources from a reference module: the one source of truth.

A reference marks each learner step with a pair of comment lines::

    # TODO 2: optional words for the reader
    ...the reference code of the step...
    # END TODO 2

and may pull another kata's reference in whole with ``from reference.X import f  # kata: include``.

- `solution_source` inlines the includes: a standalone module, the "reference" grading target.
- `template_source` replaces every marked step by its title, guidance and a NotImplementedError,
  between the same markers (so the grader finds the learner's steps again: `transplant`);
  `filled=True` keeps the reference's code instead: a correct file as a learner would hold it.
- `transplant` puts the reference's code of some steps into a learner's file (a "hybrid").
- `apply_edit` makes a misconception variant: one exact textual replacement in the solution.

Pure text in, text out; nothing here imports torch.
"""

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

REFERENCE_DIR = Path(__file__).resolve().parents[2] / "reference"

_START = re.compile(r"^(?P<indent>[ \t]*)# TODO (?P<number>\d+)\b.*$")
_END = re.compile(r"^[ \t]*# END TODO (?P<number>\d+)\s*$")
_INCLUDE = re.compile(r"^from reference\.(?P<module>\w+) import [\w, ]+# kata: include\s*$")


class RenderError(ValueError):
    """A reference or an edit breaks the marker rules."""


@dataclass(frozen=True)
class Region:
    """One learner step: lines [start, end] (0-based, markers included) of a source."""

    number: int
    start: int
    end: int
    indent: str


def included_modules(source: str) -> list[str]:
    """Names of the reference modules a source includes, in order."""
    return [m["module"] for line in source.splitlines() if (m := _INCLUDE.match(line))]


def read_reference(module: str) -> str:
    return (REFERENCE_DIR / f"{module}.py").read_text(encoding="utf-8")


@cache
def solution_source(module: str) -> str:
    """The reference of `module` as one standalone module, includes inlined (recursively)."""
    lines = read_reference(module).splitlines()
    out: list[str] = []
    for line in lines:
        match = _INCLUDE.match(line)
        if not match:
            out.append(line)
            continue
        imports, body = _split_module(solution_source(match["module"]))
        known = {existing.strip() for existing in lines}
        out.extend(statement for statement in imports if statement.strip() not in known)
        while out and not out[-1].strip():
            out.pop()
        out.extend(["", ""] + body)
    return "\n".join(out).rstrip() + "\n"


def _split_module(source: str) -> tuple[list[str], list[str]]:
    """(top-level import lines, remaining body lines) of a module, docstring dropped."""
    import ast

    tree = ast.parse(source)
    lines = source.splitlines()
    skip: set[int] = set()
    imports: list[str] = []
    for node in tree.body:
        span = range(node.lineno - 1, node.end_lineno)
        is_docstring = node is tree.body[0] and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if isinstance(node, ast.Import | ast.ImportFrom):
            imports.extend(lines[i] for i in span)
            skip.update(span)
        elif is_docstring:
            skip.update(span)
    body = [line for i, line in enumerate(lines) if i not in skip]
    while body and not body[0].strip():
        body.pop(0)
    return imports, body


def find_regions(source: str) -> list[Region]:
    """Every `# TODO N` ... `# END TODO N` region, checked: paired, not nested, numbers unique."""
    regions: list[Region] = []
    open_start: re.Match | None = None
    start_line = 0
    for i, line in enumerate(source.splitlines()):
        if start := _START.match(line):
            if open_start:
                raise RenderError(f"line {i + 1}: TODO {start['number']} starts inside TODO {open_start['number']}")
            open_start, start_line = start, i
        elif end := _END.match(line):
            if not open_start or end["number"] != open_start["number"]:
                raise RenderError(f"line {i + 1}: END TODO {end['number']} has no matching start")
            regions.append(Region(int(open_start["number"]), start_line, i, open_start["indent"]))
            open_start = None
    if open_start:
        raise RenderError(f"TODO {open_start['number']} is never closed")
    numbers = [region.number for region in regions]
    if len(set(numbers)) != len(numbers):
        raise RenderError(f"TODO numbers repeat: {numbers}")
    return regions


def template_source(
    source: str, steps: dict[int, tuple[str, list[str]]], header: list[str], filled: bool = False
) -> str:
    """Blank every marked step of `source`.

    `steps` maps a TODO number to (title, guidance lines); `header` is comment text put on top.
    Each region becomes its title and its guidance as comments, then its end marker; inside a
    function it also becomes `raise NotImplementedError`. A module-level region (data the learner
    fills in, such as an answers dict) is left blank, so the file still loads; its checks report
    what is missing. `filled`: keep the step's code where the raise would be.
    """
    lines = source.splitlines()
    out = [f"# {text}".rstrip() for text in header]
    cursor = 0
    for region in find_regions(source):
        if region.number not in steps:
            raise RenderError(f"TODO {region.number} has no title in the kata's metadata")
        title, guidance = steps[region.number]
        pad = region.indent
        out.extend(lines[cursor : region.start])
        out.append(f"{pad}# TODO {region.number}: {title}")
        out.extend(f"{pad}#   {text}".rstrip() for text in guidance)
        if filled:
            out.extend(lines[region.start + 1 : region.end])
        elif pad:  # inside a function: the call stops here until the step is written
            out.append(f"{pad}raise NotImplementedError({f'TODO {region.number}: {title}'!r})")
        out.append(f"{pad}# END TODO {region.number}")
        cursor = region.end + 1
    out.extend(lines[cursor:])
    return "\n".join(out).rstrip() + "\n"


def transplant(learner: str, solution: str, numbers: set[int]) -> str:
    """`learner` with the code between the markers of each TODO in `numbers` replaced by the
    solution's code of that TODO (re-indented to the learner's markers).

    Raises RenderError when the learner's markers are not those of the solution (removed, renumbered,
    unpaired): then no step can be told apart from the rest.
    """
    ours = find_regions(solution)
    try:
        theirs = find_regions(learner)
    except RenderError as error:
        raise RenderError(f"the file's TODO markers are broken: {error}") from None
    if [region.number for region in theirs] != [region.number for region in ours]:
        raise RenderError("the file's TODO markers differ from the exercise's")
    learner_lines, solution_lines = learner.splitlines(), solution.splitlines()
    out: list[str] = []
    cursor = 0
    for region, reference in zip(theirs, ours, strict=True):
        if region.number not in numbers:
            continue
        out.extend(learner_lines[cursor : region.start + 1])
        for line in solution_lines[reference.start + 1 : reference.end]:
            out.append(region.indent + line.removeprefix(reference.indent) if line.strip() else "")
        cursor = region.end
    out.extend(learner_lines[cursor:])
    return "\n".join(out) + "\n"


def translated_spans(source: str, texts: dict) -> list[tuple[int, int, str]]:
    """(start, end, new text) character spans of `source` that `texts` translates, in order:
    docstrings (whole lines) by key: "module" for the module's, a function's or class's name for
    its own, "Class.method" for a method's; comments by their text, in the table "comments"
    ({"a NaN anywhere makes both NaN": "…"}); and each `# TODO N` marker's title by its number, in
    the table "todos" ({1: "…"}: `# TODO 1: …`). What `texts` does not name keeps its own."""
    import ast
    import io
    import tokenize

    if not texts:  # English: nothing to parse
        return []
    found: list[tuple[ast.stmt, str]] = []  # (the docstring's statement, its new text)

    def visit(body: list, prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                name = f"{prefix}{node.name}"
                if name in texts and ast.get_docstring(node) is not None:
                    found.append((node.body[0], texts[name]))
                if isinstance(node, ast.ClassDef):
                    visit(node.body, f"{name}.")

    tree = ast.parse(source)
    if "module" in texts and ast.get_docstring(tree) is not None:
        found.append((tree.body[0], texts["module"]))
    visit(tree.body, "")
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    spans = []
    for statement, text in found:
        pad = " " * statement.col_offset
        body = text.strip().splitlines()
        lines = [f'"""{body[0]}"""'] if len(body) == 1 else [f'"""{body[0]}', *body[1:], '"""']
        new = "\n".join(f"{pad}{line}".rstrip() for line in lines)
        end = starts[statement.end_lineno] - 1 if source[starts[statement.end_lineno] - 1] == "\n" else len(source)
        spans.append((starts[statement.lineno - 1], end, new))
    comments, titles = texts.get("comments", {}), texts.get("todos", {})
    for token in tokenize.generate_tokens(io.StringIO(source).readline) if comments or titles else ():
        if token.type != tokenize.COMMENT:
            continue
        said = token.string.removeprefix("#").strip()
        (row, column), (end_row, end_column) = token.start, token.end
        marker = _START.match(token.line.rstrip("\n"))
        if marker and int(marker["number"]) in titles:
            new = f"# TODO {marker['number']}: {titles[int(marker['number'])]}"
        elif said in comments:
            new = f"# {comments[said]}"
        else:
            continue
        spans.append((starts[row - 1] + column, starts[end_row - 1] + end_column, new))
    return sorted(spans)


def translate(source: str, texts: dict) -> str:
    """`source` with the docstrings and comments `texts` translates (see translated_spans)."""
    out, cursor = [], 0
    for start, end, text in translated_spans(source, texts):
        out += [source[cursor:start], text]
        cursor = end
    return "".join(out + [source[cursor:]])


def apply_edit(source: str, find: str, replace: str) -> str:
    """Replace the one occurrence of `find`; refuse when there are none or several."""
    count = source.count(find)
    if count != 1:
        raise RenderError(f"the edit's text occurs {count} times, expected exactly once: {find!r}")
    return source.replace(find, replace)
