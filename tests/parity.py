"""What an English text and its Chinese translation must share: the same code spans, numbers and
formulas, each as often (issue 30). Words are translated; these are not.

Three kinds of item are taken from a text:

code
    The content of each inline span `...` (exactly, outside its backticks), and of each f-string
    field of a `say()` call, as its source `{expr}`. In a lesson's fenced code block, a line that is
    pure ASCII on both sides once its `# comment` is cut off is code: the two lines must be equal
    (after collapsing whitespace); a fenced line with Chinese in it is read as prose.

        "`returns = advantages + values`"  -> code  returns = advantages + values

number
    A run of digits outside code spans and not part of a word (k3, float64, V2 are names), with
    its decimals or version parts, its exponent and a percent sign: 0.95, 1e-8, 1.16.0, 95%, 2015.
    A sign belongs to the number when nothing it could subtract from stands before it: -0.75 in
    "is -0.75" and "(-1, 1)", but 1 in "count - 1". A thousands separator is dropped (1,000 is
    1000); an ordinal suffix too (1st is 1); other letters stay (135M). A lesson's list markers
    ("1. " at the start of a line) are structure, not numbers. Chinese texts use ASCII digits:
    full-width ones (０-９) are an error of their own (see full_width()).

        "lam = 0.95, eps 1e-6 (Schulman 2017)" -> numbers  0.95  1e-6  2017

formula
    A run of ASCII math joined by operators (= < > ≤ ≥ ≈ ≠ ± · × / ^ ‖ | → + - * and the
    two-character <= >= == != -> +-): its operands are numbers, code spans, names (r_t,
    V_{t+1}, π_θ, A, values) and bracket groups whose content is math; a name directly followed
    by a group is a call or an index (exp(x), values[:, t]); a math function name (log, exp,
    sqrt, mean_m, clip, KL, ...) also joins the operand after it (log Z(x)). Anything else ends
    the run: Chinese, CJK punctuation (，。：；、), a top-level , ; : or ., quotation marks, a prose
    word between two operands without an operator. A group with prose in it (Chinese, a code
    span, words not joined by operators) is not an operand: it ends the run, and its content is
    read for formulas of its own. A - or + written as a sign (space before, none after) does not
    join the operand before it. Operators at either end of a run are dropped; what is left is a
    formula when it still has an operator (inside a math group counts) or is a call of a math
    function. Full-width （ ） are read as ( ) (with a space before: never a call), the Unicode minus − as -; whitespace inside a
    formula does not count (a + b equals a+b).

        "TD 误差 delta_t = r_t + gamma * V_{t+1} - V_t。" -> formula  delta_t = r_t + gamma * V_{t+1} - V_t
        "KL(π_θ ‖ π_ref)，其中"                          -> formula  KL(π_θ ‖ π_ref)
        "（1 - lam） * lam^(k-1)" equals "(1 - lam) * lam^(k-1)"

    A Chinese word is an operand too, as an English word is: "价值损失 = 0.5 * x".

Once the equal items of the two texts are matched, what is left of each side is matched again,
leniently, so that a translation's wording is not a difference:

- code: a span is matched when the other text has the same characters, in code or not
  (`dapo_loss` and dapo_loss; whitespace is any whitespace, and ... in code stands for any text:
  `{FN}(..., beta=0.1)` is in "{FN}(lesson batch, beta=0.1)"); a span that is one name, a quoted
  name or name=value (`False`, `"bnpo"`, `clip_range=0.2`) is an identifier, which the other text
  may say in words; an f-string field is matched by one that uses its names ({what}, {what_zh}).
- number: matched when the other text says it in words: 0 zero/零/非负, 1 one/一, 2 two/both/两,
  ... 10 ten/十, 0.5 half/半.
- formula: matched when the other text contains it (as code, or inside a longer formula), or
  when both have the same core: each word of prose in it (a plain English word: letters only, a
  capital first at most, not a math name such as gamma or lam; a Chinese word) as □, a leading
  "□ =" or a trailing "= □" dropped: "value loss = 0.5 * x" and "价值损失 = 0.5 * x" agree. A
  formula whose core has fewer than two operands that are not words ("is > 0",
  "count / (count - 1)"), or that gives one name one value ("x = y", "gamma = 1"), is said in
  words or is a name, and is not compared once unmatched (its numbers still are).

compare(where, en, zh) gives the differences: per kind, what only the English has and what only
the Chinese has.
"""

import re
from collections import Counter
from dataclasses import dataclass

KINDS = ("code", "number", "formula")

# -- text preparation -------------------------------------------------------------------------------

FULL_WIDTH = str.maketrans({"（": " (", "）": ")", "［": "[", "］": "]", "−": "-", "＝": "=", "＋": "+"})
FULL_WIDTH_ALNUM = re.compile(r"[０-９Ａ-Ｚａ-ｚ]")
CODE_SPAN = re.compile(r"`([^`\n]+(?:\n[^`\n]+)?)`")  # Markdown lets a span cross one line break
SENTINEL = "\x01"  # \x01N\x01 stands for the Nth code span of a text
MARKDOWN_LINE = re.compile(r"^\s*(#+\s+|>\s?|[-*+]\s+|\d+[.)]\s+)+")
TABLE_RULE = re.compile(r"^\s*\|[\s|:-]+\|\s*$")
EMPHASIS = re.compile(r"\*\*|(?<![\w*\s])\*(?=\w)|(?<=\w)\*(?![\w*])")


def full_width(text: str) -> list[str]:
    """The full-width digits and Latin letters of a text (a Chinese text writes ASCII ones)."""
    return FULL_WIDTH_ALNUM.findall(text)


def markdown_prose(line: str) -> str:
    """A Markdown line as plain text: no heading, quote or list marker, no emphasis, table cells apart."""
    if TABLE_RULE.match(line):
        return ""
    line = MARKDOWN_LINE.sub("", line)
    line = re.sub(r"(?:^|(?<=\s))\|(?=\s|$)|^\|", " ; ", line.strip())
    return EMPHASIS.sub("", line)


# -- numbers ------------------------------------------------------------------------------------------

NUMBER = re.compile(
    r"(?<![A-Za-z0-9_.\x01])"
    r"((?<![A-Za-z0-9_)\]}])[-+])?"  # a sign, when nothing stands right before it to subtract from
    r"(\d{1,3}(?:,\d{3})+(?![\d])|\d+(?:\.\d+)*)"
    r"([eE][-+]?\d+)?(%?)([A-Za-z]*)"
)
ORDINAL = {"st", "nd", "rd", "th", "x"}  # 1st, 2nd; 1.414x (times)


def numbers(text: str) -> list[str]:
    """The numbers of a text whose code spans are already taken out (see the module docstring)."""
    found = []
    for match in NUMBER.finditer(text):
        sign, digits, exponent, percent, letters = match.groups()
        if exponent is None and letters[:1] in ("e", "E") and letters[1:].isdigit():
            continue  # not reached: the exponent group takes it
        if letters in ORDINAL:
            letters = ""
        found.append(f"{sign or ''}{digits.replace(',', '')}{exponent or ''}{percent}{letters}")
    return found


# -- formulas -----------------------------------------------------------------------------------------

OPERATORS = ["+/-", "<=", ">=", "==", "!=", "->", "=>", "+-", ":=", "**", "//", "||"]
OPERATORS += list("=<>≤≥≈≠±∓·×÷/^‖|→←⇒∝∈+-*~")
RELATIONS = {"=", "≈", "<", ">", "≤", "≥", "<=", ">=", "==", ":=", "!=", "≠"}
SIGNS = {"-", "+", "±"}
FUNCTIONS = {"log", "exp", "sqrt", "sigmoid", "softmax", "log_softmax", "logsigmoid", "log_sigmoid", "tanh"}
FUNCTIONS |= {"max", "min", "argmax", "argmin", "mean", "sum", "std", "var", "clip", "clamp", "KL", "E", "P"}
FUNCTIONS |= {"abs", "relu", "softplus", "∑", "∏", "√", "∇", "∂", "Σ"}
MATH_WORDS = {"gamma", "lam", "lambda", "beta", "rho", "eps", "epsilon", "delta", "alpha", "sigma", "mu", "theta"}
MATH_WORDS |= {"tau", "pi", "kl", "inf", "nan", "logp", "logits"}
NAME_CHAR = "A-Za-z0-9_\u0370-\u03ff\u2070-\u209f"
NAME = (
    rf"[A-Za-z_\u0370-\u03ff∑∏√∇∂Σ][{NAME_CHAR}]*"
    rf"(?:_\{{[^{{}}\s]*\}}[{NAME_CHAR}]*|-[A-Za-z]+[{NAME_CHAR}]*|\.[A-Za-z_][{NAME_CHAR}]*|/[A-Za-z_][{NAME_CHAR}.]*)*"
    r"(?:'(?![A-Za-z]))*(?:\*(?=[\s(),.;:，。）]|$))?"  # primes (V'), a star (pi*); not TRL's
)
TOKEN = re.compile(
    "|".join(
        [
            r"(?P<code>\x01\d+\x01)",
            r"(?P<tag></?[A-Za-z]\w*>)",
            r"(?P<compound>\d+-(?:[A-Za-z]{2,}|[A-Za-z]\b)[A-Za-z-]*|[A-Za-z]+(?:-[A-Za-z]+)*-\d+\b)",  # 1-D, top-1
            r"(?P<approx>~(?=\d))",  # ~104: about 104
            r"(?P<han>[\u3400-\u4dbf\u4e00-\u9fff]+)",  # a Chinese word: an operand, as an English word is
            r"(?P<number>\d+(?:\.\d+)*(?:[eE][-+]?\d+)?%?[A-Za-z]*)",
            rf"(?P<name>{NAME}(?:'s)?)",
            r"(?P<ellipsis>\.\.\.|…|∞)",
            "(?P<op>" + "|".join(re.escape(op) for op in OPERATORS) + ")",
            r"(?P<open>[(\[{])",
            r"(?P<close>[)\]}])",
            r"(?P<joiner>[,:])",
            r"(?P<space>\s+)",
            r"(?P<other>.)",
        ]
    ),
    re.S,
)
CLOSER = {"(": ")", "[": "]", "{": "}", "|": "|"}
WORD = "□"  # a word of prose inside a formula, in a formula's core
PLAIN = re.compile(r"[A-Z]?[a-z]+(-[a-z]+)*|\d+-[A-Za-z-]+|[A-Za-z]+-\d+")


def plain_word(text: str) -> bool:
    """An English word a translation puts in Chinese: letters (a capital first at most), not math."""
    return bool(PLAIN.fullmatch(text)) and (len(text) > 1 or text == "a") and text.lower() not in MATH_WORDS


def _is_han(text: str) -> bool:
    return bool(re.match(r"[\u3400-\u9fff]", text))


@dataclass
class _Atom:
    kind: str  # operand, op, joiner, function, boundary
    text: str
    space_before: bool = False
    space_after: bool = False
    math: bool = False  # an operand with an operator somewhere inside (a math group, a call of one)
    call: bool = False  # a call of a math function
    code: bool = False
    name: bool = False  # a name (or a call of one): a group right after it is its argument or index
    inner: list | None = None  # a bracket group's atoms


def _tokens(text: str) -> list[tuple[str, str]]:
    return [(match.lastgroup, match.group()) for match in TOKEN.finditer(text)]


def _closing(tokens: list[tuple[str, str]], index: int, opener: str) -> int | None:
    """The index of the token that closes the group opened just before `index`; None if none does."""
    depth = 1
    for end in range(index, len(tokens)):
        kind, text = tokens[end]
        if opener == "|":
            if kind == "open":
                depth += 1
            elif kind == "close":
                depth -= 1
                if depth == 0:
                    return None
            elif text == "|" and depth == 1:
                return end
        elif kind == "open":
            depth += 1
        elif kind == "close":
            depth -= 1
            if depth == 0:
                return end if text == CLOSER[opener] else None
    return None


def _atoms(tokens: list[tuple[str, str]], found: list[str], codes: list[str]) -> list[_Atom]:
    """The atoms of one level: groups parsed into operands (math) or boundaries (prose, their
    formulas added to `found`)."""
    atoms: list[_Atom] = []
    index, space = 0, False
    while index < len(tokens):
        kind, text = tokens[index]
        index += 1
        if kind == "space":
            space = True
            if atoms:
                atoms[-1].space_after = True
            continue
        end = _closing(tokens, index, text) if kind == "open" or text == "|" else None
        if end is not None:
            atom = _group(text, tokens[index:end], found, codes, space)
            index = end + 1
            previous = atoms[-1] if atoms else None
            if atom.kind == "operand" and previous and not space and previous.name and text != "|":
                atoms[-1] = _Atom(
                    "operand",
                    previous.text + atom.text,
                    previous.space_before,
                    math=atom.math or previous.math,
                    call=previous.kind == "function",
                    name=True,
                )
            else:
                atoms.append(atom)
        elif kind == "code":
            atoms.append(_Atom("operand", f"`{codes[int(text.strip(SENTINEL))]}`", space, code=True))
        elif kind in ("tag", "number", "ellipsis", "compound", "han"):
            atoms.append(_Atom("operand", text, space))
        elif kind == "name":
            base = text.split("_")[0] or text
            is_function = text in FUNCTIONS or base in FUNCTIONS
            atoms.append(_Atom("function" if is_function else "operand", text, space, name=True))
        elif kind in ("op", "joiner"):
            atoms.append(_Atom(kind, text, space))
        else:
            atoms.append(_Atom("boundary", text, space))
        space = False
    return atoms


def _group(opener: str, inner: list[tuple[str, str]], found: list[str], codes: list[str], space: bool) -> _Atom:
    """A bracket group: an operand when its content is math, else a boundary (its formulas kept)."""
    sub: list[str] = []
    atoms = _atoms(inner, sub, codes)
    runs = _runs(atoms, inside=True)
    if not atoms or (len(runs) == 1 and len(runs[0]) == len(atoms) and not any(a.code for a in atoms)):
        math = any(a.kind == "op" or a.math for a in atoms)
        text = opener + _render(atoms) + CLOSER[opener]
        return _Atom("operand", text, space, math=math, inner=atoms)
    found += sub
    found += [formula for run in _runs(atoms) for formula in _formulas(run)]  # prose: a comma ends a formula
    return _Atom("boundary", opener, space)


def _connected(left: _Atom, right: _Atom, inside: bool) -> bool:
    joins = ("op", "joiner") if inside else ("op",)
    if right.kind == "op" and right.text in SIGNS and right.space_before and not right.space_after:
        return left.kind in joins  # a sign: it starts an operand, it does not subtract from the last
    if left.kind in joins:
        return right.kind in ("operand", "function", *joins)
    if right.kind in joins:
        return left.kind in ("operand", "function")
    if left.kind != "function" or right.kind not in ("operand", "function") or plain_word(right.text):
        return False
    return right.inner is None and right.text[:1] not in "([{" and not _is_han(right.text)  # log p, not "std (n)"


def _runs(atoms: list[_Atom], inside: bool = False) -> list[list[_Atom]]:
    """Maximal runs of connected atoms (boundaries dropped)."""
    runs: list[list[_Atom]] = []
    for atom in atoms:
        if atom.kind == "boundary":
            runs.append([])
        elif runs and runs[-1] and _connected(runs[-1][-1], atom, inside):
            runs[-1].append(atom)
        else:
            runs.append([atom])
    return [run for run in runs if run]


def _render(atoms: list[_Atom]) -> str:
    out = ""
    for atom in atoms:
        out += (" " if out and atom.space_before else "") + atom.text
    return out


def _formulas(run: list[_Atom]) -> list[str]:
    """The formula a run makes, operators at its ends dropped; a lone bracket group gives the
    formulas inside it (between its commas)."""
    while run and (
        run[0].kind == "joiner" or (run[0].kind == "op" and not (run[0].text in SIGNS and not run[0].space_after))
    ):
        run = run[1:]
    while run and run[-1].kind in ("op", "joiner"):
        run = run[:-1]
    if not run:
        return []
    if len(run) == 1:
        atom = run[0]
        if atom.inner is not None and not atom.name:
            parts: list[list[_Atom]] = [[]]
            for inner in atom.inner:
                if inner.kind == "joiner":
                    parts.append([])
                else:
                    parts[-1].append(inner)
            return [formula for part in parts for run in _runs(part) for formula in _formulas(run)]
        return [atom.text] if atom.call or (atom.math and atom.name) else []
    if not (any(a.kind == "op" for a in run) or any(a.math for a in run)):
        return []
    if len(run) == 2 and run[0].text in SIGNS and NUMBER.fullmatch(run[1].text):
        return []  # a signed number
    return [_render(run)]


def formulas(text: str, codes: list[str]) -> list[str]:
    """The formulas of a text whose code spans are replaced by sentinels (codes: their contents)."""
    found: list[str] = []
    atoms = _atoms(_tokens(text), found, codes)
    return found + [formula for run in _runs(atoms) for formula in _formulas(run)]


def formula_key(formula: str) -> str:
    """A formula as compared: no backticks, ... as …, and no whitespace that does not separate two
    names or numbers."""
    spaced = re.sub(r"\s+", " ", formula.replace("`", "").replace("...", "…").replace("+/-", "±").strip())
    return re.sub(rf"(?<![{NAME_CHAR}]) | (?![{NAME_CHAR}])", "", spaced)


def core(formula: str) -> str | None:
    """A formula with each word of prose (a plain English word, a Chinese one) as □, and a leading
    "□ =" or a trailing "= □" dropped (see the module docstring); None when fewer than two operands
    are not words ("is > 0", "count / (count - 1)": a value said in words)."""
    codes = [match.group(1) for match in CODE_SPAN.finditer(formula)]
    counter = iter(range(len(codes)))
    bare = CODE_SPAN.sub(lambda _: f"{SENTINEL}{next(counter)}{SENTINEL}", formula)
    out, real = [], 0
    for kind, text in _tokens(bare):
        if kind in ("han", "compound") or (kind == "name" and plain_word(text)):
            out.append(WORD)
        else:
            real += kind in ("number", "code", "tag") or (kind == "name" and text not in FUNCTIONS)
            out.append(f"`{codes[int(text.strip(SENTINEL))]}`" if kind == "code" else text)
    atoms = [atom for atom in _atoms(_tokens(bare), [], codes)]
    if len(atoms) == 3 and atoms[1].text in RELATIONS:
        return None  # one name given one value: x = y, gamma = 1
    written = formula_key("".join(out))
    relation = "|".join(re.escape(op) for op in sorted(RELATIONS, key=len, reverse=True))
    written = re.sub(f"^{WORD}({relation})|({relation}){WORD}$", "", written)
    return written if real >= 2 else None


# -- items and differences ------------------------------------------------------------------------------


FIELD = re.compile("\x02([^\x02\x03]*)\x03")  # an f-string field, as the texts of say() calls mark them
HELD = re.compile("\x04(\\d+)\x04")


def items(text: str, markdown: bool = False) -> dict[str, list[str]]:
    """{kind: [items]} of one text, and under "text" the text itself without backticks (markdown: a
    lesson's prose, whose markers are structure). Fields (\\x02expr\\x03) are code: {expr}."""
    text = text.translate(FULL_WIDTH)
    if markdown:
        text = "\n".join(markdown_prose(line) for line in text.splitlines())
    fields = FIELD.findall(text)
    counter = iter(range(len(fields)))
    text = FIELD.sub(lambda _: f"\x04{next(counter)}\x04", text)

    def shown(part: str) -> str:
        return HELD.sub(lambda match: "{" + fields[int(match.group(1))] + "}", part)

    codes = [shown(match.group(1).strip()) for match in CODE_SPAN.finditer(text)]
    counter = iter(range(len(codes)))
    bare = CODE_SPAN.sub(lambda _: f" {SENTINEL}{next(counter)}{SENTINEL} ", text)
    for match in HELD.finditer(bare):  # a field outside code spans: code of its own
        codes.append("{" + fields[int(match.group(1))] + "}")
    counter = iter(range(len(codes) - len(HELD.findall(bare)), len(codes)))
    bare = HELD.sub(lambda _: f" {SENTINEL}{next(counter)}{SENTINEL} ", bare)
    return {
        "code": codes,
        "number": numbers(shown(text)),
        "formula": formulas(bare, codes),
        "text": [shown(text).replace("`", "")],
    }


@dataclass(frozen=True, order=True)
class Difference:
    """What one kind of item at one place has only in the English and only in the Chinese text."""

    where: str
    kind: str
    en: tuple[str, ...]
    zh: tuple[str, ...]

    def line(self) -> str:
        def side(values):
            return " | ".join(values) if values else "—"

        return f"{self.where}: {self.kind}: only en: {side(self.en)}   only zh: {side(self.zh)}"


def key(kind: str, item: str) -> str:
    """What is compared of an item: a formula without its whitespace, code with it collapsed."""
    if kind == "formula":
        return formula_key(item)
    return re.sub(r"\s+", " ", item.strip())


def _only(en: list[str], zh: list[str], kind: str) -> tuple[list[str], list[str]]:
    """The items (as written) of each side left once the other side's equal items are matched."""
    return _unmatched(en, zh, kind), _unmatched(zh, en, kind)


def _unmatched(items: list[str], other: list[str], kind: str) -> list[str]:
    """The items of `items` that no equal item of `other` matches, one for one."""
    left = Counter(key(kind, item) for item in other)
    unmatched = []
    for item in items:
        if left[key(kind, item)]:
            left[key(kind, item)] -= 1
        else:
            unmatched.append(item)
    return unmatched


def differences(where: str, en: dict[str, list[str]], zh: dict[str, list[str]]) -> list[Difference]:
    """The differences between the items of an English and a Chinese text."""
    found = []
    for kind in KINDS:
        only_en, only_zh = _only(en.get(kind, []), zh.get(kind, []), kind)
        if kind == "code":  # code in one text, the same characters written plainly in the other
            only_en = [item for item in only_en if not _written(item, zh.get("text", []))]
            only_zh = [item for item in only_zh if not _written(item, en.get("text", []))]
        if kind == "code":  # a field that translates another's value: {what} and {what_zh}, {BACKBONE_ZH[kind]}
            only_en, only_zh = _pair_fields(only_en, only_zh)
            only_en = [item for item in only_en if not NAME_ONLY.fullmatch(item)]
            only_zh = [item for item in only_zh if not NAME_ONLY.fullmatch(item)]
        if kind == "number":  # a number in digits in one text, in words in the other
            only_en = [item for item in only_en if not _in_words(item, zh.get("text", []))]
            only_zh = [item for item in only_zh if not _in_words(item, en.get("text", []))]
        if kind == "formula" and (only_en or only_zh):
            only_en = [item for item in only_en if core(item) is not None]
            only_zh = [item for item in only_zh if core(item) is not None]
            cores_en, cores_zh = [core(item) for item in only_en], [core(item) for item in only_zh]
            left_en, left_zh = _only(cores_en, cores_zh, kind)
            only_en = _pick(only_en, cores_en, left_en)
            only_zh = _pick(only_zh, cores_zh, left_zh)
        if kind == "formula":  # a formula written in the other text as code, or inside it
            only_en = [item for item in only_en if not _contained(item, zh.get("text", []))]
            only_zh = [item for item in only_zh if not _contained(item, en.get("text", []))]
        if only_en or only_zh:
            found.append(Difference(where, kind, tuple(sorted(only_en)), tuple(sorted(only_zh))))
    return found


NAME_ONLY = re.compile(r"""(?P<n>[A-Za-z_][\w.]*|"[\w.-]*"|'[\w.-]*')(=(?P=n)?[-\w."']*)?""")


def _contained(formula: str, texts: list[str]) -> bool:
    return any(formula_key(formula) in formula_key(text) for text in texts)


def _pair_fields(only_en: list[str], only_zh: list[str]) -> tuple[list[str], list[str]]:
    """Drop each f-string field of one side paired with a field of the other whose expression uses
    every name of it."""
    names = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
    left_zh = list(only_zh)
    kept_en = []
    for item in only_en:
        partner = next(
            (
                other
                for other in left_zh
                if item.startswith("{")
                and other.startswith("{")
                and all(any(name in its for its in names.findall(other)) for name in names.findall(item))
            ),
            None,
        )
        if partner is None:
            kept_en.append(item)
        else:
            left_zh.remove(partner)
    return kept_en, left_zh


NUMBER_WORDS = {
    "0": ("zero", "零", "nonzero", "non-negative", "非负", "非零"),
    "1": ("one", "once", "single", "first", "一", "单"),
    "2": ("two", "twice", "both", "pair", "second", "二", "两", "双"),
    "3": ("three", "third", "三"),
    "4": ("four", "四"),
    "5": ("five", "五"),
    "6": ("six", "六"),
    "7": ("seven", "七"),
    "8": ("eight", "八"),
    "9": ("nine", "九"),
    "10": ("ten", "十"),
    "0.5": ("half", "半"),
}


def _in_words(number: str, texts: list[str]) -> bool:
    """Whether one of the texts says the number in words (one, 一, half, 半 ...)."""
    words = NUMBER_WORDS.get(number.lstrip("+"), ())
    return any(re.search(rf"(?<![A-Za-z]){word}(s|es|ed)?(?![a-z])", text, re.I) for word in words for text in texts)


def _written(code: str, texts: list[str]) -> bool:
    """Whether the code occurs in one of the texts outside code spans, not inside a longer name."""
    parts = re.split(r"\.\.\.|…", code)  # ... stands for any text; whitespace for any whitespace
    body = ".*?".join(r"\s+".join(re.escape(word) for word in part.split(" ")) for part in parts)
    pattern = re.compile(rf"(?<![A-Za-z0-9_]){body}(?![A-Za-z0-9_])")
    return any(pattern.search(text) for text in texts)


def _pick(written: list[str], cores: list[str], left: list[str]) -> list[str]:
    """The written forms of the formulas whose cores are among `left`."""
    wanted = Counter(left)
    picked = []
    for item, its_core in zip(written, cores, strict=True):
        if wanted[its_core]:
            wanted[its_core] -= 1
            picked.append(item)
    return picked


def compare(where: str, en: str, zh: str, markdown: bool = False) -> list[Difference]:
    """The differences between an English text and its Chinese translation."""
    return differences(where, items(en, markdown), items(zh, markdown))
