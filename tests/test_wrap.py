"""Wrapping (grader.report.styles.Prose), for the reports, the lessons and the quiz alike: a
formula, a number or a code span never breaks across lines, in either language; Chinese fills the
width; nothing is lost."""

import io
import random
import re

import pytest
from rich.cells import cell_len
from rich.console import Console
from shown import code_lines, code_spans, printed_chars, problems, shown_chars

from grader.cli.quiz import PHRASES
from grader.content.catalogue import all_katas
from grader.content.quiz import load_questions
from grader.report.lesson import lesson
from grader.report.styles import THEME, Prose, break_offsets

CHINESE = "把优势除以组内标准差时，单元素组的标准差为 0，所以用 eps 作下限。"
ENGLISH = "the clipped side must be flat, but the gradient was found to be nonzero here"


def printed(text: str, width: int) -> list[str]:
    console = Console(width=width, file=io.StringIO(), color_system=None, record=True)
    console.print(Prose(text))
    return console.export_text().splitlines()


def pieces(text: str, width: int) -> list[str]:
    offsets = [0, *break_offsets(text, width), len(text)]
    return [text[a:b] for a, b in zip(offsets, offsets[1:])]


@pytest.mark.parametrize("width", range(12, 60))
def test_nothing_is_lost_and_every_line_fits(width):
    text = f"{CHINESE} {ENGLISH} `d loss/d log_prob = -0.75` {'9' * 70}"
    lines = printed(text, width)
    assert all(cell_len(line) <= width for line in lines)
    assert "".join(line.strip() for line in lines).replace(" ", "") == text.replace(" ", "")


@pytest.mark.parametrize("width", range(28, 60))  # the code span is 27 cells
def test_code_spans_numbers_and_equations_stay_whole(width):
    whole = ["`d loss/d log_prob = -0.75`", "-2.20171", "1.45188", "k1 = new - ref", "[1, 2]"]
    text = f"{CHINESE}{whole[0]}，最大差异 {whole[1]}，应为 {whole[2]}；这里 {whole[3]} 为负，位于 {whole[4][:2]}"
    lines = [piece.strip() for piece in pieces(text, width)]
    for unit in whole[:4]:
        assert any(unit in line for line in lines), (unit, lines)


def test_chinese_fills_the_line_and_keeps_closing_punctuation_off_its_start():
    random.seed(0)
    text = "".join(
        random.choice("优势裁剪策略比率参考旧代理目标掩码填充间隔") + random.choice(["", "", "，", "。"])
        for _ in range(300)
    )
    lines = pieces(text, 30)
    # a character is 2 cells, and one that punctuation follows moves down with it: at most 4 left over
    assert all(cell_len(line) >= 26 for line in lines[:-1])
    assert not any(line[0] in "，。" for line in lines[1:])


def test_english_breaks_only_at_spaces():
    for line in pieces(ENGLISH, 20):
        assert cell_len(line.rstrip()) <= 20
        assert line == ENGLISH[ENGLISH.index(line) :][: len(line)]
    assert {word for line in pieces(ENGLISH, 20) for word in line.split()} == set(ENGLISH.split())


@pytest.mark.parametrize("width", range(20, 40))
def test_a_short_bracketed_group_stays_on_one_line(width):
    text = "原因：Bradley-Terry：P(a 优于 b) = sigmoid(r_a - r_b)，形状 (4, 6) 的张量"
    lines = [piece.strip() for piece in pieces(text, width)]
    assert any("P(a 优于 b)" in line for line in lines) and any("(4, 6)" in line for line in lines), lines


# -- lessons and the quiz, as `kata show` and `kata quiz` print them --------------------------------

LESSONS = [(kata.slug, lang) for kata in all_katas() for lang in ("en", "zh")]


@pytest.fixture
def eighty_columns(isolated, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")


@pytest.mark.usefixtures("eighty_columns")
@pytest.mark.parametrize(("slug", "lang"), LESSONS, ids=[f"{slug}-{lang}" for slug, lang in LESSONS])
def test_a_piped_lesson_wraps_like_the_reports(kata_main, slug, lang):
    """Every line within 80 columns but code; Chinese breaks between characters and never before
    closing punctuation; formulas and code spans whole; no source line break turned into a space
    between Chinese characters; every character of the lesson printed."""
    source = next(kata for kata in all_katas() if kata.slug == slug).lesson(lang)
    run = kata_main("show", slug, "--lang", lang)

    assert run.status == 0
    lines = run.out.splitlines()
    assert problems(lines, 80, code_lines(source)) == []
    whole = [span for span in code_spans(source) if cell_len(span) <= 40]
    assert [span for span in whole if not any(span in line for line in lines)] == []
    assert printed_chars(source) - shown_chars(run.out) == {}  # nothing lost (a record repeats its headers)


@pytest.mark.usefixtures("eighty_columns")
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_quiz_wraps_like_the_reports_and_indents_its_options(kata_main, lang):
    questions = load_questions("concepts")
    answers = "".join("a\n" if question.kind == "choice" else "0\n" for question in questions)
    run = kata_main("quiz", "concepts", "--lang", lang, input=answers)

    say = PHRASES[lang]
    prompts = {say["prompt_number"]} | {
        say["prompt_choice"].format(letters=sep.join(q.letters)) for q in questions for sep in (", ", "、")
    }
    typed = re.sub(
        "|".join(map(re.escape, sorted(prompts, key=len, reverse=True))), lambda m: m.group() + "\n", run.out
    )
    lines = typed.splitlines()  # as on a terminal, where the typed answer ends the prompt's line
    assert problems(lines, 80) == []
    options = [i for i, line in enumerate(lines) if re.match(r"  [a-z]\) ", line)]
    continued = [
        lines[i + 1] for i in options if lines[i + 1].startswith(" ") and not re.match(r"  [a-z]\) ", lines[i + 1])
    ]
    assert continued, "no option is long enough to wrap: the test would not see an indent"
    assert all(line.startswith("     ") and not line.startswith("      ") for line in continued)
    for question in questions:
        for option in question.options_in(lang):
            assert option.split()[0] in run.out


def test_a_table_wider_than_the_page_wraps_inside_its_cells():
    markdown = "| a | b |\n|---|---|\n| " + "甲乙丙丁" * 12 + " | `f(x) = y` and " + "word " * 12 + "|\n"
    console = Console(width=60, file=io.StringIO(), color_system=None, theme=THEME)
    console.print(lesson(markdown), crop=False)
    lines = console.file.getvalue().splitlines()

    assert all(cell_len(line) <= 60 for line in lines)
    assert any("`f(x) = y`" in line for line in lines)
    assert printed_chars(markdown) - shown_chars(console.file.getvalue()) == {}
    assert problems(lines, 60) == []


def test_a_soft_line_break_is_a_space_only_beside_latin_text():
    markdown = "价值函数\n估计回报，\nPPO 用它\nbut English\nwords keep one"
    console = Console(width=80, file=io.StringIO(), color_system=None, theme=THEME)
    console.print(lesson(markdown))

    assert console.file.getvalue().strip() == "价值函数估计回报，PPO 用它 but English words keep one"
