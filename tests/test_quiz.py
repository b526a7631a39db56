"""`kata quiz` and grader.content.quiz: the questions of a concept kata, asked and graded one by one.

The command runs in this process through the `kata_main` fixture (conftest), with the typed answers given as
`input=`; the pure functions are tested directly, the terminal loop with a rich Console that
writes into a string.
"""

import ast
import io
import math
import re
import subprocess
import sys

import pytest
from conftest import flat
from rich.console import Console

from grader.cli.quiz import QuizResult, ask
from grader.content import quiz, render
from grader.content.catalogue import get_kata
from grader.content.i18n import speaking
from grader.report.styles import THEME

SLUG = "concepts"
CJK = re.compile(r"[\u4e00-\u9fff]")
QUESTIONS = quiz.load_questions(SLUG)


def lines_typed(lines: list[str]) -> str:
    """These lines typed at the prompts, then end of input."""
    return "".join(f"{line}\n" for line in lines)


def right_answers() -> list[str]:
    return [q.answer if q.kind == "choice" else f"{q.answer:.4f}" for q in QUESTIONS]


def a_wrong_answer(question: quiz.Question) -> str:
    if question.kind == "choice":
        return next(letter for letter in question.letters if letter != question.answer)
    return f"{question.answer + 10 * question.tolerance:.4f}"


@pytest.fixture(autouse=True)
def english_wide_terminal(monkeypatch):
    monkeypatch.setenv("KATA_LANG", "en")
    monkeypatch.setenv("COLUMNS", "200")


# -- the questions ---------------------------------------------------------------------------------


def test_every_question_has_a_valid_answer_in_the_reference():
    assert 8 <= len(QUESTIONS) <= 16
    assert len({q.key for q in QUESTIONS}) == len(QUESTIONS)
    assert {q.key for q in QUESTIONS} == set(quiz.reference_answers(SLUG))
    for question in QUESTIONS:
        assert question.kind in quiz.KINDS
        assert quiz.is_right(question, question.answer), question.key
        assert question.text["en"] and CJK.search(question.text["zh"]), question.key
        assert question.explanation["en"] and CJK.search(question.explanation["zh"]), question.key
        if question.kind == "choice":
            assert len(question.options["en"]) == len(question.options["zh"]) >= 2, question.key
            assert question.answer in question.letters, question.key
        else:
            assert question.tolerance > 0 and not question.options, question.key


def test_each_question_is_listed_under_its_todo_in_both_languages():
    kata = get_kata(SLUG)
    assert {q.todo for q in QUESTIONS} == {todo.number for todo in kata.todos}
    for question in QUESTIONS:
        for lang in ("en", "zh"):
            guidance = "\n".join(kata.todo(question.todo).guidance[lang])
            assert f'ANSWERS["{question.key}"]' in guidance, (question.key, lang)


def test_a_kata_without_questions_has_no_quiz():
    assert quiz.has_quiz(SLUG) and not quiz.has_quiz("group_advantages")
    with pytest.raises(quiz.NoQuiz):
        quiz.load_questions("group_advantages")


# -- grading one answer ----------------------------------------------------------------------------


def _question(kind: str) -> quiz.Question:
    return next(q for q in QUESTIONS if q.kind == kind)


def test_a_choice_is_graded_by_its_letter_in_any_case():
    question = _question("choice")
    for typed in (question.answer, question.answer.upper(), f" {question.answer}) "):
        assert quiz.grade(question, typed) == (True, question.explanation["en"])
    right, explanation = quiz.grade(question, a_wrong_answer(question), "zh")
    assert not right and explanation == question.explanation["zh"]


def test_a_number_is_graded_within_its_tolerance():
    question = _question("number")
    answer = float(question.answer)
    assert quiz.is_right(question, answer + 0.9 * question.tolerance)
    assert quiz.is_right(question, f"{answer - 0.9 * question.tolerance}")
    assert not quiz.is_right(question, answer + 1.5 * question.tolerance)
    assert not quiz.is_right(question, "not a number") and not quiz.is_right(question, True)


@pytest.mark.parametrize(
    ("kind", "typed"), [("choice", "z"), ("choice", ""), ("choice", 1), ("number", "abc"), ("number", "nan")]
)
def test_text_that_is_no_answer_is_refused(kind, typed):
    with pytest.raises(quiz.InvalidAnswer):
        quiz.parse_answer(_question(kind), typed)


def reference_expressions() -> dict[str, str]:
    """The source text of each numeric answer in the reference's ANSWERS["key"] = EXPRESSION lines."""
    source = render.solution_source(SLUG)
    found = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript):
            if not isinstance(node.value, ast.Constant):
                found[node.targets[0].slice.value] = ast.get_source_segment(source, node.value)
    return found


def test_the_quiz_takes_the_expressions_the_kata_file_takes():
    expressions = reference_expressions()
    numbers = [q for q in QUESTIONS if q.kind == "number"]
    assert numbers and sorted(expressions) == sorted(q.key for q in numbers)
    for question in numbers:
        assert quiz.is_right(question, expressions[question.key]), expressions[question.key]
    k3 = next(q for q in numbers if q.key == "k3_value")
    assert quiz.parse_answer(k3, "math.exp(-0.5) + 0.5 - 1") == math.exp(-0.5) + 0.5 - 1
    assert quiz.parse_answer(k3, "exp(-0.5) + 0.5 - 1 ") == math.exp(-0.5) + 0.5 - 1


@pytest.mark.parametrize("typed", ["__import__('os')", "math.exp(1000)", "10 ** 10 ** 10", "(-8) ** (1 / 3)", "x + 1"])
def test_an_expression_that_is_no_finite_number_or_not_arithmetic_is_refused(typed):
    with pytest.raises(quiz.InvalidAnswer):
        quiz.parse_answer(_question("number"), typed)


def test_answers_are_described_with_their_option_or_at_the_tolerance_precision():
    choice, number = _question("choice"), _question("number")
    assert (
        quiz.describe(choice, choice.answer)
        == f"{choice.answer}) {choice.options['en'][choice.letters.index(choice.answer)]}"
    )
    assert quiz.describe(choice, choice.answer, "zh").endswith(
        choice.options["zh"][choice.letters.index(choice.answer)]
    )
    assert quiz.describe(number, number.answer) == f"{float(number.answer):.{number.decimals}f}"


# -- the terminal loop -----------------------------------------------------------------------------


def _ask(typed, lang="en") -> tuple[QuizResult, str]:
    lines = iter(typed)

    def input_fn(prompt: str) -> str:
        item = next(lines)
        if isinstance(item, BaseException):
            raise item
        return item

    out = io.StringIO()
    result = ask(QUESTIONS, lang, input_fn, Console(file=out, width=200, theme=THEME))
    return result, out.getvalue()


def test_ask_grades_each_answer_at_once_and_ends_with_the_score():
    typed = right_answers()
    typed[0] = a_wrong_answer(QUESTIONS[0])
    result, out = _ask(typed)
    assert (result.total, result.answered, result.right, result.perfect) == (
        len(QUESTIONS),
        len(QUESTIONS),
        len(QUESTIONS) - 1,
        False,
    )
    first, second = out.index(QUESTIONS[0].text["en"]), out.index(QUESTIONS[1].text["en"])
    assert "Not quite" in out[first:second] and flat(QUESTIONS[0].explanation["en"]) in flat(out[first:second])
    assert out.rstrip().endswith(f"Score: {len(QUESTIONS) - 1} of {len(QUESTIONS)} right.")


def test_ask_stops_cleanly_on_ctrl_c():
    result, out = _ask(
        [QUESTIONS[0].answer if QUESTIONS[0].kind == "choice" else str(QUESTIONS[0].answer), KeyboardInterrupt()]
    )
    assert result.stopped and result.answered == 1 and not result.perfect
    assert f"Quiz stopped after 1 of {len(QUESTIONS)} questions" in out


# -- kata quiz -------------------------------------------------------------------------------------


def test_all_answers_right_exit_0_with_the_score(kata_main):
    run = kata_main("quiz", SLUG, input=lines_typed(right_answers()))

    assert run.status == 0, run.out
    assert f"Score: {len(QUESTIONS)} of {len(QUESTIONS)} right." in run.out
    assert run.out.count("✓ Right.") == len(QUESTIONS) and "Not quite" not in run.out
    for question in QUESTIONS:
        assert flat(question.text["en"]) in flat(run.out)


def test_a_wrong_answer_shows_the_right_one_and_why_and_exits_1(kata_main):
    question = next(q for q in QUESTIONS if q.key == "dpo_removes")
    typed = right_answers()
    typed[QUESTIONS.index(question)] = "a"

    run = kata_main("quiz", SLUG, input=lines_typed(typed))

    assert run.status == 1
    assert f"Score: {len(QUESTIONS) - 1} of {len(QUESTIONS)} right." in run.out
    assert f"you answered a) {question.options['en'][0]}; the answer is b) {question.options['en'][1]}." in flat(
        run.out
    )
    assert flat(question.explanation["en"]) in flat(run.out)


def test_text_that_is_no_answer_is_asked_again(kata_main):
    run = kata_main("quiz", SLUG, input=lines_typed(["not a number", *right_answers()]))

    assert run.status == 0
    assert "Please answer with a number" in run.out


def test_end_of_input_midway_ends_cleanly_with_status_1(kata_main):
    run = kata_main("quiz", SLUG, input=lines_typed(right_answers()[:3]))

    assert run.status == 1
    assert f"Quiz stopped after 3 of {len(QUESTIONS)} questions: 3 right." in run.out
    assert "Traceback" not in run.out + run.err


def test_a_kata_without_questions_is_refused_in_one_line(kata_main):
    run = kata_main("quiz", "group_advantages", input=lines_typed([]))

    assert run.status == 1
    assert run.out == ""
    assert run.err.strip().splitlines() == [
        f"kata: group_advantages has no quiz questions (katas with a quiz: {SLUG})."
    ]


def test_lang_zh_asks_in_chinese(kata_main):
    run = kata_main("quiz", SLUG, "--lang", "zh", input=lines_typed(right_answers()))

    assert run.status == 0
    assert "".join(QUESTIONS[0].text["zh"].split()) in "".join(run.out.split())
    assert f"得分：{len(QUESTIONS)} 题中答对 {len(QUESTIONS)} 题。" in run.out
    assert "Score" not in run.out


def test_an_unknown_kata_is_a_usage_error(kata_main):
    run = kata_main("quiz", "no_such_kata")
    assert run.status == 2
    assert "unknown kata" in run.err


def test_quiz_never_imports_torch():
    code = (
        "import sys; from grader.cli import main; status = main(['quiz', 'concepts']); "
        "assert 'torch' not in sys.modules, 'torch was imported'; sys.exit(status)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input="".join(f"{line}\n" for line in right_answers()),
        capture_output=True,
        text=True,
        timeout=60,
        env={"KATA_LANG": "en", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert f"Score: {len(QUESTIONS)} of {len(QUESTIONS)} right." in done.stdout


def test_an_expression_typed_at_the_prompt_is_graded_like_its_value(kata_main):
    typed = right_answers()
    typed[[q.key for q in QUESTIONS].index("k3_value")] = "math.exp(-0.5) + 0.5 - 1"

    run = kata_main("quiz", SLUG, input=lines_typed(typed))

    assert run.status == 0, run.out
    assert "Please answer" not in run.out


# -- the concepts checks' messages, in the learner's language --------------------------------------

ENGLISH = ("you answered", "why:", "is not one of", "it takes", "numeric question", "unknown key", "must be a dict")


class Answers:
    """A stand-in for the learner's module whose ANSWERS is `answers`."""

    def __init__(self, answers):
        self.answers = answers

    def value(self, name):
        return self.answers


def failure_of(check, *args) -> str:
    with pytest.raises(AssertionError) as failed:
        check(*args)
    return str(failed.value)


def test_every_message_of_the_concepts_checks_reads_in_chinese():
    """The checks write each message in both languages (grader.content.i18n.say); a run keeps its own."""
    from katas.concepts import checks

    contract = checks.test_answers_are_known_keys_with_valid_values
    others = [{"bt_probabilty": 0.9}, {"zzz": 1}, {"k3_value": "0.1"}, {"bt_shift": "z"}, {"k3_value": math.inf}]
    for lang in ("en", "zh"):
        with speaking(lang):
            for question in QUESTIONS:
                answer = a_wrong_answer(question)
                answer = answer if question.kind == "choice" else float(answer)
                message = failure_of(checks.check_answer, Answers({question.key: answer}), question.key)
                assert message == quiz.wrong_answer(question, answer, lang)
            messages = [failure_of(contract, Answers(answers)) for answers in others]
            messages.append(failure_of(contract, Answers([])))
        for message in messages:
            english = any(words in message for words in ENGLISH)
            assert (CJK.search(message) and not english) if lang == "zh" else english, message


def test_check_in_chinese_explains_a_wrong_answer_in_chinese(kata_main, tmp_path):
    question = next(q for q in QUESTIONS if q.key == "bt_shift")
    text = get_kata(SLUG).solution().replace('ANSWERS["bt_shift"] = "c"', 'ANSWERS["bt_shift"] = "a"')
    (tmp_path / "mine.py").write_text(text, encoding="utf-8")

    run = kata_main("check", SLUG, "--file", tmp_path / "mine.py", "--lang", "zh")

    squashed = "".join(run.out.split())
    assert run.status == 1
    assert "".join(question.explanation["zh"].split()) in squashed
    assert not any("".join(words.split()) in squashed for words in ENGLISH)
