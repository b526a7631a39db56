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


def test_lang_before_the_command_applies_to_it_and_the_commands_own_wins(kata_main):
    lessons = {
        lang: (KATAS_DIR / "grpo_loss" / f"lesson.{lang}.md").read_text(encoding="utf-8") for lang in ("en", "zh")
    }

    chinese = kata_main("--lang", "zh", "show", "grpo_loss")
    english = kata_main("--lang", "zh", "show", "grpo_loss", "--lang", "en")

    assert (chinese.status, chinese.out) == (0, lessons["zh"])
    assert (english.status, english.out) == (0, lessons["en"])
