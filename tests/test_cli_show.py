"""`kata show`: the lesson, in either language."""

import pytest
from cli_support import CJK

from grader.content.catalogue import KATAS_DIR

pytestmark = pytest.mark.usefixtures("isolated")


def test_show_prints_the_english_lesson(kata_main):
    run = kata_main("show", "grpo_loss")

    assert run.status == 0
    assert run.out == (KATAS_DIR / "grpo_loss" / "lesson.en.md").read_text(encoding="utf-8")


def test_show_prints_the_chinese_lesson_with_lang_zh(kata_main):
    english = kata_main("show", "grpo_loss").out

    run = kata_main("show", "grpo_loss", "--lang", "zh")

    assert run.status == 0
    assert run.out == (KATAS_DIR / "grpo_loss" / "lesson.zh.md").read_text(encoding="utf-8")
    assert run.out != english
    assert len(CJK.findall(run.out)) > 100
