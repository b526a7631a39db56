"""A kata as a Jupyter notebook (`kata notebook`): the lesson, the exercise cell that is also its
check, the hints folded, the drill.

The cells, in order, each with `metadata["kata"] = {"role": ROLE, "slug": SLUG}` (`cells` finds them):

- lesson: the lesson's Markdown as it is written (its formulas are fenced plain text and code spans,
  which Jupyter shows as code; `$...$`, were a lesson to write it, MathJax renders);
- setup: `%load_ext grader.notebook`, the IPython extension, below the Colab install, commented;
- check: how to use the cell after it (and, in a student pack, that there is no drill);
- exercise: `%%kata check SLUG` above the file `kata start SLUG` writes: running the cell grades
  its code in contestants, as `kata check` does (the extension's work); the kernel never runs it;
- hints: every hint of every TODO, in the order `kata hint` shows them, each folded in <details>;
- drill (not in a student pack, which has no reference): what a drill is, and `%kata drill SLUG`.

A notebook is in one language: its texts, the lesson, the exercise and the hints, and each magic's
`--lang zh`. nbformat (the `notebook` extra) is imported inside the functions, so importing this
module stays light; cell ids are fixed, so the same kata gives the same file every time.
"""

import html
import re

from grader.content.catalogue import Kata, in_pack, localized
from grader.content.i18n import phrase, say, speaking

ROLES = ("lesson", "setup", "check", "exercise", "hints", "drill")
EXTENSION = "grader.notebook"
INSTALL = "pip install -q post_training_katas-0.1.0-py3-none-any.whl"  # the README's, for Colab (the wheel uploaded)
NEEDS = 'pip install "nbformat>=5.9"'  # what `kata notebook` needs (the `notebook` extra has it)
PACK_INSTALL = "pip install ./pack"  # a student pack, uploaded beside the notebook
CODE_HINT = r"`[^`]*[=(][^`]*`"  # grader.cli.hints.CODE: a last hint with such a span shows the code


def kata_notebook(kata: Kata, lang: str, exercise: str | None = None):
    """The notebook of `kata` in `lang` (an nbformat v4 NotebookNode, valid by its schema).
    `exercise`: the code below the check magic instead of the blank exercise (e.g. a test's
    reference or misconception variant)."""
    import nbformat

    with speaking(lang):
        cells = [
            _cell("markdown", kata.lesson(lang), "lesson", kata.slug),
            _cell("code", setup_source(), "setup", kata.slug),
            _cell("markdown", _how_to_check(kata, lang), "check", kata.slug),
            _cell("code", exercise_source(kata, lang, exercise), "exercise", kata.slug),
            _cell("markdown", _hints(kata, lang), "hints", kata.slug),
        ]
        if not in_pack():
            cells += [
                _cell("markdown", _drill_text(kata, lang), "drill", kata.slug),
                _cell("code", f"%kata drill {kata.slug}{lang_flag(lang)}", "drill", kata.slug, "drill-run"),
            ]
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
        "kata": {"slug": kata.slug, "lang": lang},
    }
    nbformat.validate(notebook)
    return notebook


def notebook_text(notebook) -> str:
    """The notebook as the .ipynb file's text (JSON, UTF-8 as it is, ending in a newline)."""
    import nbformat

    return nbformat.writes(notebook) + "\n"


def cells(notebook, role: str) -> list:
    """The cells of `notebook` with this role, in order."""
    return [cell for cell in notebook.cells if cell.metadata.get("kata", {}).get("role") == role]


def lang_flag(lang: str) -> str:
    """What a magic is given for the notebook's language: nothing in English, ` --lang zh` otherwise."""
    return "" if lang == "en" else f" --lang {lang}"


def check_magic(kata: Kata, lang: str) -> str:
    """The exercise cell's first line: the cell magic that grades the cell."""
    return f"%%kata check {kata.slug}{lang_flag(lang)}"


def exercise_source(kata: Kata, lang: str, exercise: str | None = None) -> str:
    """The exercise cell: the check magic above the file `kata start` writes (or `exercise`)."""
    return check_magic(kata, lang) + "\n" + (kata.template(lang) if exercise is None else exercise)


def setup_source() -> str:
    """The setup cell, in the language being spoken: the Colab install, commented, then the extension."""
    if in_pack():
        install = say(
            "in Colab, upload your course's student pack (its `pack` folder), then uncomment this line",
            "在 Colab 中，先上传课程发给你的学生包（`pack` 文件夹），再取消这一行的注释",
        )
        return f"# !{PACK_INSTALL}   # {install}\n%load_ext {EXTENSION}"
    install = say("in Colab, uncomment this line first", "在 Colab 中，先取消这一行的注释")
    return f"# !{INSTALL}   # {install}\n%load_ext {EXTENSION}"


def _cell(kind: str, source: str, role: str, slug: str, cell_id: str | None = None):
    import nbformat

    make = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
    return make(source, id=cell_id or role, metadata={"kata": {"role": role, "slug": slug}})


def _how_to_check(kata: Kata, lang: str) -> str:
    slug, flag = kata.slug, lang_flag(lang)
    lines = [
        say("## Your exercise", "## 你的练习"),
        "",
        say(
            "Fill in each numbered TODO of the cell below, then run it (Shift-Enter). Its first line,"
            f" `%%kata check {slug}{flag}`, grades the cell's code as `kata check` does: each check in a"
            " process of its own, never in this notebook's kernel. The report appears under the cell:"
            " what passed, what failed, and where the mistake lies.",
            f"填好下面单元格中每个编号的 TODO，然后运行它（Shift-Enter）。它的第一行 `%%kata check {slug}{flag}`"
            " 像 `kata check` 一样为单元格中的代码评分：每项检查都在独立的进程中运行，从不在本笔记本的内核中运行。"
            "报告显示在单元格下方：哪些通过、哪些失败、错误在哪里。",
        ),
        "",
        say(
            f"Stuck? `%kata hint {slug}{flag}` gives one more hint each time; every hint is also folded below.",
            f"卡住了？每次运行 `%kata hint {slug}{flag}` 会多给一条提示；下方也折叠着全部提示。",
        ),
    ]
    if in_pack():
        lines += [
            "",
            say(
                "This is a student pack: it holds no reference solution, so this notebook has no drill.",
                "这是学生包：其中没有参考答案，因此本笔记本没有默写。",
            ),
        ]
    return "\n".join(lines)


def _hints(kata: Kata, lang: str) -> str:
    """Every hint, TODO by TODO, in the order and with the labels `kata hint` gives them, folded."""
    parts = [
        say("## Hints", "## 提示"),
        "",
        say(
            f"Open one at a time. `%kata hint {kata.slug}{lang_flag(lang)}` picks the TODO your last check points to.",
            f"一次打开一条。`%kata hint {kata.slug}{lang_flag(lang)}` 会选出你上次检查所指的 TODO。",
        ),
    ]
    for todo in kata.todos:
        hints = localized(todo.hints, lang)
        parts += ["", f"### TODO {todo.number} · {localized(todo.title, lang)}"]
        for index, text in enumerate(hints, start=1):
            key = "hint_code" if index == len(hints) and re.search(CODE_HINT, text) else "hint_of"
            label = phrase(lang, key, i=index, n=len(hints))
            summary = html.escape(f"{label[:1].upper()}{label[1:]} · TODO {todo.number}", quote=False)
            parts += ["", f"<details><summary>{summary}</summary>", "", text, "", "</details>"]
    return "\n".join(parts)


def _drill_text(kata: Kata, lang: str) -> str:
    return "\n".join(
        [
            say("## Drill", "## 默写"),
            "",
            say(
                "Once the kata passes, come back later to recall it: the cell below puts a drill in a new cell,"
                " the reference with some of its TODO code blanked (`__1__`, `__2__`, ...). Fill in each blank,"
                " then run that cell: it is checked blank by blank and by the kata's own checks.",
                "通过本 kata 之后，隔些时候再回来默写：运行下面的单元格，会在新单元格中给出一份默写，"
                "即参考答案中部分 TODO 代码被挖空（`__1__`、`__2__`……）。填好每个空白，"
                "然后运行那个单元格：它会逐个空白地核对，并运行本 kata 自己的检查。",
            ),
        ]
    )
