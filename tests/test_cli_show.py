"""`kata show`: the lesson, in either language, printed as the reports print text (test_wrap.py
holds the wrapping rules for every lesson)."""

import pytest
from cli_support import CJK
from shown import printed_chars, shown_chars

from grader.content.catalogue import KATAS_DIR

pytestmark = pytest.mark.usefixtures("isolated")


def lesson(lang: str) -> str:
    return (KATAS_DIR / "grpo_loss" / f"lesson.{lang}.md").read_text(encoding="utf-8")


def test_show_prints_the_english_lesson_as_text_not_markdown(kata_main):
    run = kata_main("show", "grpo_loss")

    assert run.status == 0
    assert run.out.startswith("The GRPO loss\n═════════════\n")
    assert printed_chars(lesson("en")) - shown_chars(run.out) == {}
    assert not any(line.startswith(("#", "|", "```", "- ")) or "**" in line for line in run.out.splitlines())


def test_show_prints_the_chinese_lesson_with_lang_zh(kata_main):
    english = kata_main("show", "grpo_loss").out

    run = kata_main("show", "grpo_loss", "--lang", "zh")

    assert run.status == 0
    assert printed_chars(lesson("zh")) - shown_chars(run.out) == {}
    assert run.out != english
    assert len(CJK.findall(run.out)) > 100


def test_piped_output_is_plain_and_unpadded(kata_main):
    run = kata_main("show", "ppo_gae", "--lang", "zh")

    assert "\x1b" not in run.out
    assert not any(line != line.rstrip() for line in run.out.splitlines())


def test_lang_before_the_command_applies_to_it_and_the_commands_own_wins(kata_main):
    shown = {lang: kata_main("show", "grpo_loss", "--lang", lang).out for lang in ("en", "zh")}

    chinese = kata_main("--lang", "zh", "show", "grpo_loss")
    english = kata_main("--lang", "zh", "show", "grpo_loss", "--lang", "en")

    assert (chinese.status, chinese.out) == (0, shown["zh"])
    assert (english.status, english.out) == (0, shown["en"])
