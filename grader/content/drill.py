"""Drills: the reference's TODO regions with some positions blanked, to be typed back.

The blanking rule (the *positions* of a kata):

- inside a function's TODO region, a position is one of
  - a name or a dotted name on one line (`ratio`, `torch.exp`, `response_mask.sum`), or an
    attribute name after a call or subscript (`.mean` in `x.sum().mean()`); never a keyword;
  - a number, or a string that is not part of an implicit concatenation;
  - a whole small expression: a unary, binary, comparison or boolean operation on one line whose
    operands are all names, dotted names or constants, at most 30 characters (`1.0 - clip_range`,
    `-1`, `~response_mask`, `beta > 0`); its operands are then not positions of their own.
  Operators, brackets, commas, colons, dots and `=` are never blanked alone, so a blank never
  splits a token and every drill stays valid Python;
- inside a module-level TODO region (data the learner fills in, such as the `ANSWERS` of
  `concepts`), each assigned value is one position.

A blank is written `__N__` (a valid identifier), numbered in reading order. The drill file is a
header of comments, an empty line, then the whole reference with the chosen positions blanked.
An answer is judged by its tokens: whitespace does not matter, and numbers and strings compare by
value and type (`'c'` is `"c"`, `1e-6` is `0.000001`, `1` is not `1.0`).

Pure Python: nothing here imports torch.
"""

import ast
import io
import keyword
import random
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from grader.content import render
from grader.content.catalogue import DIFFICULTIES
from grader.content.i18n import joined, phrase
from grader.content.interface import PHRASES

LEVELS = dict(zip(DIFFICULTIES, (0.15, 0.35, 0.70)))  # the share of positions blanked
SMALL_EXPRESSION = 30  # characters, at most
PLACEHOLDER = re.compile(r"__(\d+)__")
_HEADER = re.compile(
    r"^# kata drill (?P<slug>\w+) --seed (?P<seed>\d+) --blanks (?P<blanks>\d+)(?: --function (?P<function>\w+))?$",
    re.M,
)
_OPERATIONS = (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp)


class DrillError(ValueError):
    """A drill that cannot be made or read (a usage error)."""


@dataclass(frozen=True)
class Position:
    """One blankable span of the source: [start, end) character offsets, its 1-based line."""

    start: int
    end: int
    line: int
    text: str
    functions: tuple[str, ...]  # the names of the enclosing defs and classes, outermost first


# -- finding positions -------------------------------------------------------------------------
@cache
def positions(slug: str) -> tuple[Position, ...]:
    """Every blankable position of the TODO regions of `slug`'s rendered reference, in order."""
    source = render.solution_source(slug)
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    tree = ast.parse(source)
    scopes = _scopes(tree)

    def make(row: int, col: int, end_col: int) -> Position:
        start, end = offsets[row - 1] + col, offsets[row - 1] + end_col
        return Position(start, end, row, source[start:end], scopes.get(row, ()))

    found: list[Position] = []
    for region in render.find_regions(source):
        rows = range(region.start + 2, region.end + 1)  # 1-based lines strictly inside the markers
        if region.indent:
            spans = _code_spans(source, tree, rows, lines)
        else:
            spans = _value_spans(tree, rows, lines)
        found.extend(make(*span) for span in spans)
    return tuple(sorted(found, key=lambda p: p.start))


def _char_col(line: str, byte_col: int) -> int:
    """An ast column (UTF-8 bytes) as a character column."""
    return len(line.encode("utf-8")[:byte_col].decode("utf-8"))


def _node_span(node: ast.AST, lines: list[str]) -> tuple[int, int, int] | None:
    """(row, start column, end column) of a node on one line, else None."""
    if node.lineno != node.end_lineno:
        return None
    line = lines[node.lineno - 1]
    return node.lineno, _char_col(line, node.col_offset), _char_col(line, node.end_col_offset)


def _scopes(tree: ast.Module) -> dict[int, tuple[str, ...]]:
    """{line: names of the enclosing defs and classes}."""
    scopes: dict[int, tuple[str, ...]] = {}

    def visit(node: ast.AST, names: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                inner = (*names, child.name)
                for row in range(child.lineno, child.end_lineno + 1):
                    scopes[row] = inner
                visit(child, inner)
            else:
                visit(child, names)

    visit(tree, ())
    return scopes


def _value_spans(tree: ast.Module, rows: range, lines: list[str]) -> list[tuple[int, int, int]]:
    """The value of each module-level assignment in `rows`: one position per answer."""
    spans = []
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.lineno in rows and node.value is not None:
            if span := _node_span(node.value, lines):
                spans.append(span)
    return spans


def _is_leaf(node: ast.AST) -> bool:
    """A name, a dotted name or a constant."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name | ast.Constant)


def _operands(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.UnaryOp):
        return [node.operand]
    if isinstance(node, ast.Compare):
        return [node.left, *node.comparators]
    return list(node.values)


def _code_spans(source: str, tree: ast.Module, rows: range, lines: list[str]) -> list[tuple[int, int, int]]:
    """Small expressions first, then the names, numbers and strings outside them."""
    small = []
    for node in ast.walk(tree):
        if isinstance(node, _OPERATIONS) and node.lineno in rows and all(map(_is_leaf, _operands(node))):
            span = _node_span(node, lines)
            if span and span[2] - span[1] <= SMALL_EXPRESSION:
                small.append(span)
    inside = {(row, col) for row, start, end in small for col in range(start, end)}
    return small + [span for span in _token_spans(source, rows) if (span[0], span[1]) not in inside]


def _token_spans(source: str, rows: range) -> list[tuple[int, int, int]]:
    """Names and dotted names (one line, no keywords), numbers, and strings not next to a string."""
    skip = {tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT}
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type not in skip]
    spans = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.start[0] not in rows:
            i += 1
            continue
        if token.type == tokenize.NAME and not keyword.iskeyword(token.string):
            j = i
            while (
                j + 2 < len(tokens)
                and tokens[j + 1].string == "."
                and _is_name(tokens[j + 2])
                and tokens[j + 2].start[0] == token.start[0]
            ):
                j += 2
            spans.append((token.start[0], token.start[1], tokens[j].end[1]))
            i = j + 1
            continue
        neighbours = {tokens[k].type for k in (i - 1, i + 1) if 0 <= k < len(tokens)}
        if token.type == tokenize.NUMBER or (token.type == tokenize.STRING and tokenize.STRING not in neighbours):
            if token.start[0] == token.end[0]:
                spans.append((token.start[0], token.start[1], token.end[1]))
        i += 1
    return spans


def _is_name(token: tokenize.TokenInfo) -> bool:
    return token.type == tokenize.NAME and not keyword.iskeyword(token.string)


# -- making a drill ----------------------------------------------------------------------------
def blank_count(total: int, level: str = "medium", blanks: int | None = None, ratio: float | None = None) -> int:
    """How many of `total` positions to blank: `blanks`, else `ratio`, else the level's share
    (rounded, at least one when there is any position), never more than `total`."""
    if blanks is not None:
        return max(0, min(blanks, total))
    share = LEVELS[level] if ratio is None else ratio
    return min(total, max(1 if total and share > 0 else 0, round(share * total)))


@dataclass(frozen=True)
class Drill:
    slug: str
    seed: int
    source: str  # the rendered reference
    candidates: tuple[Position, ...]  # every blankable position (of the function, if one is named)
    blanks: tuple[Position, ...]  # the chosen ones, in reading order: blank i + 1 is blanks[i]
    function: str | None = None
    level: str | None = None  # None when --blanks or --ratio set the count

    @property
    def answers(self) -> list[str]:
        """The reference text of each blank, in order."""
        return [position.text for position in self.blanks]

    @property
    def text(self) -> str:
        """The reference with each chosen position replaced by its placeholder."""
        return self.body("en")

    def body(self, lang: str = "en") -> str:
        """The reference with each chosen position replaced by its placeholder, its docstrings,
        comments and TODO titles in `lang` as the exercise has them (Kata.texts; none of them is code,
        so none overlaps a blank)."""
        from grader.content.catalogue import get_kata

        placeholders = [(p.start, p.end, f"__{number}__") for number, p in enumerate(self.blanks, start=1)]
        texts = render.translated_spans(self.source, get_kata(self.slug).texts(lang))
        out, cursor = [], 0
        for start, end, text in sorted(placeholders + texts):
            out += [self.source[cursor:start], text]
            cursor = end
        return "".join(out + [self.source[cursor:]])

    def header(self, lang: str = "en") -> str:
        """The drill file's comment lines (in `lang`): the command that rebuilds it (read back by
        read_header), its level (read back too), and what to do."""
        command = f"kata drill {self.slug} --seed {self.seed} --blanks {len(self.blanks)}"
        if self.function:
            command += f" --function {self.function}"
        level = f"{_level_line(self.level, lang)}\n" if self.level else ""
        return (
            f"# {phrase(lang, 'drill_title', slug=self.slug)}\n"
            f"# {command}\n{level}"
            f"# {phrase(lang, 'drill_replace', n=len(self.blanks))}\n"
            f"#   kata drill {self.slug} --check {phrase(lang, 'drill_this_file')}\n"
        )

    def file_text(self, lang: str = "en") -> str:
        """The drill file: the header, an empty line, the blanked reference (valid Python)."""
        return f"{self.header(lang)}\n{self.body(lang)}"


def make_drill(
    slug: str,
    seed: int,
    level: str | None = "medium",
    blanks: int | None = None,
    ratio: float | None = None,
    function: str | None = None,
    lang: str = "en",
) -> Drill:
    """Blank a seeded random choice of `slug`'s positions (of `function`'s only, if named); a
    DrillError, in `lang`, when `function` has none."""
    candidates = positions(slug)
    if function is not None:
        names = sorted({name for p in candidates for name in p.functions})
        candidates = tuple(p for p in candidates if function in p.functions)
        if not candidates and not names:
            raise DrillError(phrase(lang, "drill_no_functions", slug=slug))
        if not candidates:
            raise DrillError(phrase(lang, "drill_no_code_in", slug=slug, function=function, names=joined(lang, names)))
    count = blank_count(len(candidates), level or "medium", blanks, ratio)
    chosen = sorted(random.Random(seed).sample(range(len(candidates)), count))
    return Drill(
        slug, seed, render.solution_source(slug), candidates, tuple(candidates[i] for i in chosen), function, level
    )


def read_header(text: str, lang: str = "en") -> dict:
    """The settings a drill file was made with: slug, seed, blanks, function, level."""
    found = _HEADER.search(text.partition("\n\n")[0])
    if not found:
        raise DrillError(phrase(lang, "drill_not_a_file"))
    lines = set(text.partition("\n\n")[0].splitlines())
    return {
        "slug": found["slug"],
        "seed": int(found["seed"]),
        "blanks": int(found["blanks"]),
        "function": found["function"],
        "level": next((level for level in LEVELS for lang in PHRASES if _level_line(level, lang) in lines), None),
    }


def _level_line(level: str, lang: str) -> str:
    """The drill file's header line that gives its level, in `lang` (`# level: easy`, `# 难度：简单`)."""
    return f"# {phrase(lang, 'drill_header_level', level=phrase(lang, level))}"


def drill_from_file(text: str, lang: str = "en") -> Drill:
    """Rebuild the drill a drill file was made from."""
    settings = read_header(text, lang)
    level, blanks = settings["level"], settings["blanks"]
    return make_drill(settings["slug"], settings["seed"], level, blanks, function=settings["function"], lang=lang)


# -- answers -----------------------------------------------------------------------------------
def fill(text: str, answers: list[str]) -> str:
    """`text` with each `__N__` replaced by answers[N - 1]."""
    return PLACEHOLDER.sub(lambda m: answers[int(m[1]) - 1], text)


def answers_in(drill: Drill, text: str) -> list[str] | None:
    """What the learner wrote in place of each blank of a filled drill file (header included), or
    None when text outside the blanks was changed. The header may be in either language."""
    lang = next((lang for lang in PHRASES if text.startswith(drill.header(lang))), "en")
    segments = PLACEHOLDER.split(drill.file_text(lang))[::2]
    if not text.startswith(segments[0]):
        return None
    found, cursor = [], len(segments[0])
    for segment, expected in zip(segments[1:-1], drill.answers):
        ends = _ends(text, cursor, segment)
        if not ends:
            return None
        # where two splits both read well (`__5__ + __6__`), the one that gives the reference wins
        at = next((end for end in ends if same_code(text[cursor:end], expected)), ends[0])
        found.append(text[cursor:at])
        cursor = at + len(segment)
    if len(segments) > 1:
        last = segments[-1].rstrip()
        body = text.rstrip()
        if not body.endswith(last) or len(body) - len(last) < cursor:
            return None
        found.append(body[cursor : len(body) - len(last)])
    return [answer.strip() for answer in found]


def _ends(text: str, cursor: int, segment: str) -> list[int]:
    """Where an answer starting at `cursor` may end: before an occurrence of `segment` on the
    same line (or the next few lines), the answer in between reading as one whole snippet."""
    ends, at = [], text.find(segment, cursor)
    while at != -1 and text.count("\n", cursor, at) <= 1:
        if _balanced(text[cursor:at]):
            ends.append(at)
        at = text.find(segment, at + 1)
    return ends


def _balanced(text: str) -> bool:
    """Whether `text` could be one whole answer: one line, its brackets and strings closed."""
    if not text.strip() or "\n" in text.strip():
        return False
    depth = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(text.strip()).readline):
            if token.type == tokenize.ERRORTOKEN and not token.string.isspace():
                return False
            depth += (token.string in "([{") - (token.string in ")]}") if token.type == tokenize.OP else 0
            if depth < 0:
                return False
    except (tokenize.TokenError, SyntaxError):
        return False
    return depth == 0


def same_code(answer: str, expected: str) -> bool:
    """Whether two snippets are the same tokens (whitespace aside; literals by value and type)."""
    mine, theirs = _tokens(answer), _tokens(expected)
    if mine is None or theirs is None:
        return "".join(answer.split()) == "".join(expected.split())
    return mine == theirs


def _tokens(text: str) -> list | None:
    skip = {tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER, tokenize.COMMENT}
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(text.strip()).readline) if t.type not in skip]
    except (tokenize.TokenError, SyntaxError):
        return None
    return [(t.type, _literal(t)) for t in tokens]


def _literal(token: tokenize.TokenInfo):
    if token.type in (tokenize.NUMBER, tokenize.STRING):
        try:
            value = ast.literal_eval(token.string)
            return type(value).__name__, value
        except (ValueError, SyntaxError):
            pass
    return token.string


def best_scores(record: dict | None, level: str, right: int, total: int, when: str) -> dict:
    """The per-level best drill scores, with this one kept if it is better than the level's best."""
    scores = dict(record or {})
    best = scores.get(level)
    if not best or right / max(total, 1) > best["right"] / max(best["blanks"], 1):
        scores[level] = {"right": right, "blanks": total, "at": when}
    return scores


# -- the terminal drill ------------------------------------------------------------------------
@dataclass
class DrillScore:
    total: int
    answered: int = 0
    right: int = 0
    seconds: float = 0.0
    stopped: bool = False  # the learner left early (EOF or Ctrl-C)


def blank_rows(text: str) -> dict[int, int]:
    """{blank number: its 1-based line} in a drill's text (the body in any language)."""
    return {int(m[1]): text.count("\n", 0, m.start()) + 1 for m in PLACEHOLDER.finditer(text)}


def code_view(drill: Drill, lang: str = "en"):
    """The TODO regions holding a blank, numbered lines, each blank highlighted (a rich Text), in
    `lang` (TODO titles and comments as in the drill file)."""
    from rich.text import Text

    text = drill.body(lang)
    lines = text.splitlines()
    rows = set(blank_rows(text).values())
    view = Text()
    for region in render.find_regions(text):
        if not any(region.start < row - 1 < region.end for row in rows):
            continue
        for i in range(region.start, region.end + 1):
            view.append(f"{i + 1:4d}  ", style="muted")
            view.append(Text(lines[i] + "\n", style="muted" if i in (region.start, region.end) else ""))
        view.append("   ⋮\n", style="muted")
    view.highlight_regex(PLACEHOLDER.pattern, "todo")
    return view


def ask(
    drill: Drill, input_fn: Callable[[str], str], console, clock: Callable[[], float], lang: str = "en"
) -> DrillScore:
    """Show the code, ask each blank in order, judge it at once; end with the score and the time.

    `input_fn(prompt)` returns one typed line (EOFError or KeyboardInterrupt end the drill).
    """
    from rich.text import Text

    score = DrillScore(total=len(drill.blanks))
    console.print(code_view(drill, lang))
    text = drill.body(lang)
    lines, rows = text.splitlines(), blank_rows(text)
    began = clock()
    for number, position in enumerate(drill.blanks, start=1):
        line = Text(f"{rows[number]:4d}  {lines[rows[number] - 1].strip()}")
        line.highlight_regex(rf"__{number}__", "todo")
        console.print(line)
        try:
            answer = input_fn(f"__{number}__ = ")
        except (EOFError, KeyboardInterrupt):
            score.stopped = True
            console.print()
            break
        score.answered += 1
        if same_code(answer, position.text):
            score.right += 1
            console.print(Text(phrase(lang, "drill_right"), style="passed"))
        else:
            console.print(Text.assemble((phrase(lang, "drill_expected"), "failed"), (position.text, "code")))
    score.seconds = clock() - began
    key = "drill_stopped_score" if score.stopped else "drill_score"
    time = _duration(score.seconds, lang)
    console.print(Text(phrase(lang, key, right=score.right, total=score.total, time=time), style="title"))
    return score


def _duration(seconds: float, lang: str = "en") -> str:
    minutes, rest = divmod(round(seconds), 60)
    return phrase(lang, "drill_minutes", m=minutes, s=rest) if minutes else phrase(lang, "drill_seconds", s=rest)


@dataclass(frozen=True)
class Verdict:
    """How one filled blank compares: right, not filled in, equivalent (differs, checks pass) or wrong."""

    number: int
    status: str
    answer: str
    expected: str


def differing(drill: Drill, answers: list[str]) -> list[int]:
    """The numbers (from 1) of the filled blanks whose answer is not the reference's code."""
    pairs = enumerate(zip(answers, drill.answers), start=1)
    return [
        n for n, (answer, expected) in pairs if not same_code(answer, expected) and not PLACEHOLDER.fullmatch(answer)
    ]


def judge_blanks(
    drill: Drill, answers: list[str], checks_pass: bool, accepted: frozenset = frozenset()
) -> list[Verdict]:
    """Each blank against the reference; a different answer counts as equivalent when the checks pass,
    with it alone (its number in `accepted`) or with every answer (`checks_pass`)."""
    verdicts = []
    for number, (answer, expected) in enumerate(zip(answers, drill.answers), start=1):
        if same_code(answer, expected):
            status = "right"
        elif PLACEHOLDER.fullmatch(answer):
            status = "blank"
        else:
            status = "equivalent" if checks_pass or number in accepted else "wrong"
        verdicts.append(Verdict(number, status, answer, expected))
    return verdicts


def verdicts_view(verdicts: list[Verdict], lang: str = "en"):
    """One line per blank, then how many are as in the reference."""
    from rich.console import Group
    from rich.text import Text

    lines = []
    for v in verdicts:
        tag = f"__{v.number}__  "
        if v.status == "right":
            lines.append(Text.assemble(("✓ ", "passed"), tag, (v.answer, "code")))
        elif v.status == "blank":
            lines.append(Text.assemble(("✗ ", "failed"), tag, phrase(lang, "drill_blank"), (v.expected, "code")))
        elif v.status == "equivalent":
            lines.append(
                Text.assemble(
                    ("≈ ", "passed"),
                    tag,
                    (v.answer, "code"),
                    phrase(lang, "drill_differs"),
                    (v.expected, "code"),
                    phrase(lang, "drill_equivalent"),
                )
            )
        else:
            lines.append(
                Text.assemble(
                    ("✗ ", "failed"), tag, (v.answer, "code"), phrase(lang, "drill_wrong"), (v.expected, "code")
                )
            )
    same = sum(v.status == "right" for v in verdicts)
    lines.append(Text(phrase(lang, "drill_same", same=same, n=len(verdicts)), style="title"))
    equivalent = sum(v.status == "equivalent" for v in verdicts)
    if equivalent:
        lines.append(Text(phrase(lang, "drill_counted", right=same + equivalent, n=len(verdicts)), style="title"))
    return Group(*lines)
