"""Report wrapping (grader.report.styles.Prose): a formula, a number or a code span never breaks
across lines, in either language; Chinese fills the width; nothing is lost."""

import io
import random

import pytest
from rich.cells import cell_len
from rich.console import Console

from grader.report.styles import Prose, break_offsets

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
