"""Concept quizzes: the questions of a kata, graded one answer at a time.

A quiz kata has `katas/<slug>/questions.toml`: one `[[question]]` per key of the `ANSWERS` dict
in its reference, each with `key`, `todo`, `kind` ("choice" with `options`, lettered a, b, c, ...
in order; or "number" with a `tolerance`), and `text` and `explanation` in en/zh. The right
answers live only in the reference (`reference/<slug>.py`), which is read, never imported.

- `load_questions(slug)` reads the questions and their right answers;
- `parse_answer` turns typed text into an answer (a number may be an expression, as in the kata
  file: `1 / (1 + math.exp(-2))`, through `evaluate`); `grade` says whether an answer is right,
  with the question's explanation; `describe` shows an answer as "b) the option's text" or a number;
- `wrong_answer` is what a check says of a wrong answer, in a given language (the concepts checks
  write it in both: grader.content.i18n.say);
- the terminal loop of `kata quiz` is grader.cli.quiz.ask.

Pure Python: nothing here imports torch.
"""

import ast
import math
import operator
import string
import tomllib
from dataclasses import dataclass

from grader.content import render
from grader.content.catalogue import KATAS_DIR, get_kata, localized
from grader.content.i18n import joined, say

KINDS = ("choice", "number")
OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}
MATH = {name: getattr(math, name) for name in ("exp", "log", "log1p", "expm1", "sqrt", "tanh", "pi", "e")}

WRONG = {  # what a check says of a wrong answer (grader.content.quiz.wrong_answer)
    "en": 'ANSWERS["{key}"]: you answered {answer}; the answer is {right}{within}.\n  why: {why}',
    "zh": 'ANSWERS["{key}"]：你的答案是 {answer}；正确答案是 {right}{within}。\n  原因：{why}',
}
WITHIN = {"en": " (within ±{tolerance:g})", "zh": "（误差 ±{tolerance:g} 以内）"}


class NoQuiz(LookupError):
    """A kata without questions.toml."""


class InvalidAnswer(ValueError):
    """Typed text that is not an option letter (choice) or not a number (number)."""


@dataclass(frozen=True)
class Question:
    key: str
    todo: int
    kind: str  # "choice" or "number"
    text: dict[str, str]
    explanation: dict[str, str]
    options: dict[str, list[str]]  # per language; empty for numbers
    tolerance: float  # numbers only
    answer: str | float  # the reference's: an option letter, or a number

    @property
    def letters(self) -> list[str]:
        return list(string.ascii_lowercase[: len(self.options.get("en", []))])

    @property
    def decimals(self) -> int:
        """Decimals a number is shown with: as many as the tolerance resolves (two answers
        further apart than the tolerance never look the same)."""
        return max(0, math.ceil(-math.log10(self.tolerance))) if self.tolerance > 0 else 6

    def options_in(self, lang: str) -> list[str]:
        """The option texts in `lang` (English when missing); [] for a number."""
        return localized(self.options, lang) if self.options else []


def has_quiz(slug: str) -> bool:
    return (KATAS_DIR / slug / "questions.toml").is_file()


def load_questions(slug: str) -> list[Question]:
    """The questions of kata `slug` in file order, each with the reference's answer."""
    path = KATAS_DIR / slug / "questions.toml"
    if not path.is_file():
        raise NoQuiz(f"{slug} has no quiz questions")
    with path.open("rb") as handle:
        entries = tomllib.load(handle).get("question", [])
    answers = reference_answers(slug)
    return [_question(entry, answers) for entry in entries]


def reference_answers(slug: str) -> dict:
    """The ANSWERS dict the reference of `slug` builds (its source is run, not imported); a student
    pack keeps the answers themselves (a quiz that tells a right answer from a wrong one tells it)."""
    packed = get_kata(slug).packed
    if packed:
        return dict(packed["answers"])
    namespace: dict = {"__name__": f"kata_answers_{slug}"}
    exec(compile(render.solution_source(slug), f"<reference {slug}>", "exec"), namespace)
    return dict(namespace.get("ANSWERS", {}))


def _question(entry: dict, answers: dict) -> Question:
    key = entry["key"]
    if entry["kind"] not in KINDS:
        raise ValueError(f"question {key}: kind must be one of {KINDS}, not {entry['kind']!r}")
    if key not in answers:
        raise ValueError(f"question {key}: the reference does not answer it")
    return Question(
        key=key,
        todo=entry["todo"],
        kind=entry["kind"],
        text=entry["text"],
        explanation=entry["explanation"],
        options=entry.get("options", {}),
        tolerance=float(entry.get("tolerance", 0.0)),
        answer=answers[key],
    )


def parse_answer(question: Question, raw) -> str | float:
    """The answer in `raw` (typed text, or a value from an ANSWERS dict), or InvalidAnswer."""
    if question.kind == "choice":
        letter = raw.strip().lower().rstrip(").").strip() if isinstance(raw, str) else None
        if letter not in question.letters:
            en, zh = joined("en", question.letters), joined("zh", question.letters)
            raise InvalidAnswer(say(f"{raw!r} is not one of {en}", f"{raw!r} 不是 {zh} 之一"))
        return letter
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        raise InvalidAnswer(say(f"{raw!r} is not a number", f"{raw!r} 不是数"))
    try:
        value = float(raw.strip().replace(",", ".")) if isinstance(raw, str) else float(raw)
    except ValueError:
        value = evaluate(raw)
    if not math.isfinite(value):
        raise InvalidAnswer(say(f"{raw!r} is not a finite number", f"{raw!r} 不是有限的数"))
    return value


def evaluate(text: str) -> float:
    """The value of an arithmetic expression, as the kata file computes it: numbers, + - * / **,
    brackets, and math's exp, log, log1p, expm1, sqrt, tanh, pi and e (as `math.exp` or `exp`);
    InvalidAnswer for anything else."""
    try:
        value = _value(ast.parse(text.strip(), mode="eval").body)
    except (SyntaxError, ArithmeticError, ValueError, TypeError, RecursionError, MemoryError):
        raise InvalidAnswer(say(f"{text!r} is not a number", f"{text!r} 不是数")) from None
    if not isinstance(value, float):  # a negative number to a fractional power is complex
        raise InvalidAnswer(say(f"{text!r} is not a real number", f"{text!r} 不是实数"))
    return value


def _value(node: ast.expr):
    """An expression node's value, in floats (so ** overflows instead of building a huge int)."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        return OPERATORS[type(node.op)](_value(node.left), _value(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in OPERATORS:
        return OPERATORS[type(node.op)](_value(node.operand))
    if isinstance(node, ast.Call) and not node.keywords and callable(_math_name(node.func)):
        return _math_name(node.func)(*map(_value, node.args))
    if isinstance(_math_name(node), float):  # pi, e
        return _math_name(node)
    raise InvalidAnswer(say(f"{ast.unparse(node)!r} is not a number", f"{ast.unparse(node)!r} 不是数"))


def _math_name(node: ast.expr):
    """What `math.NAME` or `NAME` is among MATH, else None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "math":
        return MATH.get(node.attr)
    return MATH.get(node.id) if isinstance(node, ast.Name) else None


def is_right(question: Question, answer) -> bool:
    """Whether `answer` (typed or a value) is the reference's: the same letter, or within tolerance."""
    try:
        value = parse_answer(question, answer)
    except InvalidAnswer:
        return False
    if question.kind == "choice":
        return value == question.answer
    return abs(value - float(question.answer)) <= question.tolerance


def grade(question: Question, answer, lang: str = "en") -> tuple[bool, str]:
    """(whether `answer` is right, the question's explanation in `lang`)."""
    return is_right(question, answer), localized(question.explanation, lang)


def describe(question: Question, answer, lang: str = "en") -> str:
    """An answer as the learner should read it: 'b) <option text>', a number, or its repr."""
    try:
        value = parse_answer(question, answer)
    except InvalidAnswer:
        return repr(answer)
    if question.kind == "choice":
        return f"{value}) {question.options_in(lang)[question.letters.index(value)]}"
    return f"{value:.{question.decimals}f}"


def wrong_answer(question: Question, answer, lang: str = "en") -> str:
    """What a check says of a wrong `answer`: what was answered, what is right, and why."""
    within = WITHIN.get(lang, WITHIN["en"]).format(tolerance=question.tolerance) if question.kind == "number" else ""
    right, answered = describe(question, question.answer, lang), describe(question, answer, lang)
    why = localized(question.explanation, lang)
    return WRONG.get(lang, WRONG["en"]).format(key=question.key, answer=answered, right=right, within=within, why=why)
