"""The terminal loop of `kata quiz`: each question asked, its answer graded and explained at
once, the score at the end; text wrapped as the reports wrap it."""

from collections.abc import Callable
from dataclasses import dataclass

from grader.content.catalogue import localized
from grader.content.i18n import joined
from grader.content.quiz import InvalidAnswer, Question, describe, grade, parse_answer
from grader.report.styles import Hanging, Prose

PHRASES = {
    "en": {
        "question": "Question {i} of {n}  ({key})",
        "prompt_choice": "Your answer ({letters}): ",
        "prompt_number": "Your answer (a number): ",
        "not_an_option": "Please answer with one of {letters}.",
        "not_a_number": "Please answer with a number or an expression, e.g. 0.25 or 1 / (1 + math.exp(-2)).",
        "right": "✓ Right.",
        "wrong": "✗ Not quite: you answered {answer}; the answer is {right}.",
        "score": "Score: {right} of {n} right.",
        "stopped": "Quiz stopped after {answered} of {n} questions: {right} right.",
    },
    "zh": {
        "question": "第 {i} 题，共 {n} 题（{key}）",
        "prompt_choice": "你的答案（{letters}）：",
        "prompt_number": "你的答案（一个数）：",
        "not_an_option": "请用以下选项之一作答：{letters}。",
        "not_a_number": "请填一个数或算式，例如 0.25 或 1 / (1 + math.exp(-2))。",
        "right": "✓ 回答正确。",
        "wrong": "✗ 不对：你的答案是 {answer}；正确答案是 {right}。",
        "score": "得分：{n} 题中答对 {right} 题。",
        "stopped": "测验在第 {answered} 题后结束（共 {n} 题）：答对 {right} 题。",
    },
}


@dataclass
class QuizResult:
    total: int
    answered: int = 0
    right: int = 0
    stopped: bool = False  # the learner left early (EOF or Ctrl-C)

    @property
    def perfect(self) -> bool:
        return self.right == self.total and not self.stopped


def ask(questions: list[Question], lang: str, input_fn: Callable[[str], str], console) -> QuizResult:
    """Ask each question, grade it at once and explain it; end with the score.

    `input_fn(prompt)` returns one typed line (EOFError or KeyboardInterrupt end the quiz);
    `console` is a rich Console. Text that is not an answer is asked again.
    """
    result = QuizResult(total=len(questions))
    say = PHRASES.get(lang, PHRASES["en"])
    for number, question in enumerate(questions, start=1):
        console.print(Prose(say["question"].format(i=number, n=len(questions), key=question.key), "todo"))
        console.print(Prose(localized(question.text, lang)))
        for letter, option in zip(question.letters, question.options_in(lang)):
            console.print(Hanging(f"  {letter}) ", Prose(option)))
        try:
            answer = _read_answer(question, lang, input_fn, console)
        except (EOFError, KeyboardInterrupt):
            result.stopped = True
            console.print()
            stopped = say["stopped"].format(answered=result.answered, n=result.total, right=result.right)
            console.print(Prose(stopped, "warning"))
            return result
        right, explanation = grade(question, answer, lang)
        result.answered += 1
        result.right += right
        if right:
            console.print(Prose(say["right"], "passed"))
        else:
            verdict = say["wrong"].format(
                answer=describe(question, answer, lang), right=describe(question, question.answer, lang)
            )
            console.print(Prose(verdict, "failed"))
        console.print(Prose(explanation, "muted"))
        console.print()
    console.print(Prose(say["score"].format(right=result.right, n=result.total), "title"))
    return result


def _read_answer(question: Question, lang: str, input_fn: Callable[[str], str], console) -> str | float:
    """One valid answer typed by the learner; an invalid one is asked again."""
    say = PHRASES.get(lang, PHRASES["en"])
    letters = joined(lang, question.letters)
    prompt = say["prompt_choice"].format(letters=letters) if question.kind == "choice" else say["prompt_number"]
    while True:
        raw = input_fn(prompt)
        try:
            return parse_answer(question, raw)
        except InvalidAnswer:
            note = say["not_an_option"].format(letters=letters) if question.kind == "choice" else say["not_a_number"]
            console.print(Prose(note, "warning"))
