"""`kata notebook`: every kata as a notebook valid by nbformat's schema, its cells found by role; the
exercise cell is the file `kata start` writes; the hints all there, folded, in order; Chinese
notebooks in Chinese; `--all`; backups; one line for each bad input; the lessons' formulas through
nbconvert's HTML. No kernel runs here: executing the notebooks is tests/test_notebook.py's."""

import html
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from cli_support import CJK, all_slugs

from grader.cli import hints as kata_hints
from grader.content import notebook
from grader.content.catalogue import all_katas, get_kata, localized
from grader.content.i18n import phrase
from grader.content.notebook import cells, kata_notebook, notebook_text

pytestmark = pytest.mark.usefixtures("isolated")

LANGS = ("en", "zh")
ROLES = ["lesson", "setup", "check", "exercise", "hints", "drill", "drill"]
DETAILS = re.compile(r"<details><summary>(.*?)</summary>\n\n(.*?)\n\n</details>", re.S)
FENCED = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)


@pytest.fixture(scope="module")
def notebooks() -> dict:
    """{(slug, lang): notebook} for every kata in both languages."""
    return {(kata.slug, lang): kata_notebook(kata, lang) for kata in all_katas() for lang in LANGS}


def _only(notebook_, role: str):
    (cell,) = cells(notebook_, role)
    return cell


# -- what a notebook holds ------------------------------------------------------------------------


def test_every_notebook_is_valid_by_the_schema_and_its_cells_are_tagged_in_order(notebooks):
    for (slug, lang), built in notebooks.items():
        read_back = nbformat.reads(notebook_text(built), as_version=4)
        nbformat.validate(read_back)  # raises ValidationError
        assert read_back.nbformat == 4 and read_back.metadata["kata"] == {"slug": slug, "lang": lang}
        assert [cell.metadata["kata"]["role"] for cell in read_back.cells] == ROLES, (slug, lang)
        assert {cell.metadata["kata"]["slug"] for cell in read_back.cells} == {slug}
        kinds = [cell.cell_type for cell in read_back.cells]
        assert kinds == ["markdown", "code", "markdown", "code", "markdown", "markdown", "code"]


def test_the_same_kata_gives_the_same_file_every_time():
    kata = get_kata("grpo_loss")
    assert notebook_text(kata_notebook(kata, "en")) == notebook_text(kata_notebook(kata, "en"))


@pytest.mark.parametrize("lang", LANGS)
def test_the_exercise_cell_is_the_file_kata_start_writes_below_the_check_magic(kata_main, workspace, notebooks, lang):
    for slug in all_slugs():
        assert kata_main("start", slug, "--workspace", workspace, "--lang", lang).status == 0
        written = (workspace / f"{slug}.py").read_text(encoding="utf-8")
        magic = f"%%kata check {slug}" + (" --lang zh" if lang == "zh" else "")
        assert _only(notebooks[slug, lang], "exercise").source == f"{magic}\n{written}", (slug, lang)


def test_a_test_can_put_other_code_below_the_magic():
    kata = get_kata("group_advantages")
    built = kata_notebook(kata, "en", exercise=kata.solution())
    assert _only(built, "exercise").source == "%%kata check group_advantages\n" + kata.solution()


@pytest.mark.parametrize("lang", LANGS)
def test_every_hint_is_folded_in_the_order_kata_hint_gives_them(notebooks, lang):
    assert notebook.CODE_HINT == kata_hints.CODE.pattern  # the label that says a hint shows the code
    for kata in all_katas():
        source = _only(notebooks[kata.slug, lang], "hints").source
        folded = DETAILS.findall(source)
        expected = []
        for todo in kata.todos:
            texts = localized(todo.hints, lang)
            for index in kata_hints.hint_order(kata, {}, todo.number, len(texts)):  # no check yet: in order
                code = index == len(texts) and kata_hints.CODE.search(texts[index - 1])
                label = phrase(lang, "hint_code" if code else "hint_of", i=index, n=len(texts))
                expected.append((f"{label[:1].upper()}{label[1:]} · TODO {todo.number}", texts[index - 1]))
        assert [(html.unescape(summary), body) for summary, body in folded] == expected, kata.slug
        assert source.count("<details>") == len(expected) == source.count("</details>")
        todo_headings = re.findall(r"^### TODO (\d+) · ", source, re.M)
        assert todo_headings == [str(todo.number) for todo in kata.todos]


def test_a_hint_that_shows_the_code_says_so_in_its_fold(notebooks):
    source = _only(notebooks["group_advantages", "en"], "hints").source
    assert "<summary>Hint 3 of 3, which shows the code · TODO 1</summary>" in source
    assert "<summary>Hint 1 of 3 · TODO 1</summary>" in source


def test_a_chinese_notebook_carries_the_chinese_lesson_hints_and_magics(notebooks):
    for kata in all_katas():
        zh, en = notebooks[kata.slug, "zh"], notebooks[kata.slug, "en"]
        lesson = _only(zh, "lesson").source
        assert lesson == kata.lesson("zh") != kata.lesson("en") and CJK.search(lesson)
        bodies = [body for _, body in DETAILS.findall(_only(zh, "hints").source)]
        assert bodies == [hint for todo in kata.todos for hint in todo.hints["zh"]] and any(map(CJK.search, bodies))
        for role in ("check", "hints", "drill"):
            text = cells(zh, role)[0].source
            assert CJK.search(text) and text != cells(en, role)[0].source, (kata.slug, role)
        assert cells(zh, "drill")[1].source == f"%kata drill {kata.slug} --lang zh"
        assert cells(en, "drill")[1].source == f"%kata drill {kata.slug}"
        assert f"`%kata hint {kata.slug} --lang zh`" in _only(zh, "check").source
        assert _only(zh, "exercise").source.startswith(f"%%kata check {kata.slug} --lang zh\n")


def test_the_setup_cell_loads_the_extension_below_the_readmes_install_commented():
    import tomllib

    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert notebook.INSTALL in readme
    version = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert f"post_training_katas-{version}-py3-none-any.whl" in notebook.INSTALL, "the wheel pip wheel builds"
    for lang in LANGS:
        install, load = _only(kata_notebook(get_kata("dpo_loss"), lang), "setup").source.splitlines()
        assert install.startswith(f"# !{notebook.INSTALL}   # ") and load == "%load_ext grader.notebook"


def test_in_a_student_pack_there_is_no_drill_and_the_check_cell_says_so(monkeypatch):
    monkeypatch.setattr(notebook, "in_pack", lambda: True)
    for lang, words in (("en", "no drill"), ("zh", "没有默写")):
        built = kata_notebook(get_kata("grpo_loss"), lang)
        nbformat.validate(built)
        assert [cell.metadata["kata"]["role"] for cell in built.cells] == ROLES[:5]
        assert words in _only(built, "check").source and "%kata drill" not in notebook_text(built)
        assert _only(built, "setup").source.startswith(f"# !{notebook.PACK_INSTALL}   # ")


# -- the lessons' formulas through nbconvert's HTML ---------------------------------------------------


class _CodeText(HTMLParser):
    """The text inside each <pre> and each <code> of an HTML page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.blocks: list[str] = []
        self.depth = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("pre", "code"):
            if self.depth == 0:
                self.blocks.append("")
            self.depth += 1

    def handle_endtag(self, tag):
        if tag in ("pre", "code") and self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            self.blocks[-1] += data


def _html(built) -> str:
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter().from_notebook_node(built)
    return body


def _formulas_missing(lesson: str, page: str) -> list[str]:
    """The lesson's fenced blocks and code spans (where its formulas are) that `page` shows in no
    <pre> or <code>."""
    parser = _CodeText()
    parser.feed(page)
    shown = "\n".join(parser.blocks)
    blocks = FENCED.findall(lesson)  # as they are: their columns line formulas up
    spans = [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", FENCED.sub("", lesson))]
    assert blocks and spans  # every lesson writes formulas: fenced blocks and code spans
    missing = [block for block in blocks if block not in shown]
    return missing + [span for span in spans if span not in " ".join(shown.split())]  # a span may break a line


def test_every_lessons_formulas_survive_nbconvert_s_markdown():
    """nbconvert's HTML exporter renders a markdown cell with this filter (the whole exporter, ~0.4 s a
    notebook, is the next test's, on the kata with the most formulas)."""
    from nbconvert.filters import markdown2html_mistune

    for kata in all_katas():
        for lang in LANGS:
            lesson = kata.lesson(lang)
            assert not _formulas_missing(lesson, markdown2html_mistune(lesson)), (kata.slug, lang)


@pytest.mark.parametrize("lang", LANGS)
def test_a_notebook_converted_to_html_keeps_its_lessons_formulas(notebooks, lang):
    page = _html(notebooks["grpo_loss", lang])
    assert not _formulas_missing(get_kata("grpo_loss").lesson(lang), page)
    assert "A_i     = (r_i - mean_g) / max(std_g, eps)" in page  # the lesson's first formula, as written


def test_no_lesson_prose_holds_a_dollar_pair_that_mathjax_would_read_as_maths():
    for kata in all_katas():
        for lang in LANGS:
            prose = re.sub(r"`[^`\n]*`", "", FENCED.sub("", kata.lesson(lang)))
            for paragraph in prose.split("\n\n"):
                assert len(re.findall(r"(?<!\\)\$", paragraph)) < 2, (kata.slug, lang, paragraph)


def test_maths_a_lesson_writes_in_dollars_reaches_mathjax_intact(monkeypatch):
    formulas = [r"$\rho_{i,t} = \exp(\log \pi_{new} - \log \pi_{old})$", r"$$L = -\frac{1}{G} \sum_i s_i * A_i$$"]
    kata = get_kata("grpo_loss")
    monkeypatch.setattr(type(kata), "lesson", lambda self, lang: "# Maths\n\n" + "\n\n".join(formulas) + "\n")
    page = _html(kata_notebook(kata, "en"))
    assert all(formula in page for formula in formulas)  # not escaped, no <em> from its _ and *
    assert "text/x-mathjax-config" in page and "inlineMath" in page


# -- the command ----------------------------------------------------------------------------------


def test_a_notebook_is_written_where_out_says_and_holds_the_built_one(kata_main, tmp_path):
    run = kata_main("notebook", "kl_estimators", "--out", Path("nb") / "kl.ipynb")  # cwd: tmp_path

    assert run.status == 0 and run.err == ""
    assert "wrote" in run.out and "kl.ipynb" in run.out and "jupyter lab" in run.out
    text = (tmp_path / "nb" / "kl.ipynb").read_text(encoding="utf-8")
    assert text == notebook_text(kata_notebook(get_kata("kl_estimators"), "en"))
    assert all(len(line) <= 80 for line in run.out.splitlines())


def test_a_folder_as_out_gets_slug_ipynb(kata_main, tmp_path):
    assert kata_main("notebook", "sft_loss", "--out", tmp_path, "--lang", "zh").status == 0
    assert nbformat.read(tmp_path / "sft_loss.ipynb", as_version=4).metadata["kata"]["lang"] == "zh"


def test_all_writes_one_notebook_per_kata(kata_main, tmp_path):
    run = kata_main("notebook", "--all", "--lang", "zh", "--out", tmp_path / "notebooks")

    assert run.status == 0 and CJK.search(run.out)
    written = sorted((tmp_path / "notebooks").iterdir())
    assert [path.name for path in written] == sorted(f"{slug}.ipynb" for slug in all_slugs())
    for path in written:
        kata = get_kata(path.stem)
        assert path.read_text(encoding="utf-8") == notebook_text(kata_notebook(kata, "zh"))


def test_an_existing_notebook_is_kept_as_a_backup_before_it_is_replaced(kata_main, tmp_path):
    target = tmp_path / "grpo.ipynb"
    target.write_text('{"my": "filled-in notebook"}', encoding="utf-8")

    run = kata_main("notebook", "grpo_loss", "--out", target)

    assert run.status == 0 and ".backups" in run.out
    (backup,) = (tmp_path / ".backups").iterdir()
    assert backup.name.startswith("grpo.") and backup.suffix == ".ipynb"
    assert backup.read_text(encoding="utf-8") == '{"my": "filled-in notebook"}'
    assert target.read_text(encoding="utf-8") == notebook_text(kata_notebook(get_kata("grpo_loss"), "en"))

    again = kata_main("notebook", "grpo_loss", "--out", target)  # the same notebook: nothing to keep
    assert again.status == 0 and "already" in again.out
    assert len(list((tmp_path / ".backups").iterdir())) == 1

    assert kata_main("notebook", "grpo_loss", "--out", target, "--lang", "zh").status == 0  # another: kept
    assert len(list((tmp_path / ".backups").iterdir())) == 2


@pytest.mark.parametrize(
    ("argv", "status", "words"),
    [
        (["notebook", "--out", "x.ipynb"], 2, "give a SLUG or --all"),
        (["notebook", "grpo_loss", "--all", "--out", "x"], 2, "not both"),
        (["notebook", "--all", "--out", "all.ipynb"], 2, "into a folder"),
        (["notebook", "--all", "--out", "a_file"], 2, "into a folder"),
        (["notebook", "grpo_los", "--out", "x.ipynb"], 2, "Did you mean 'grpo_loss'"),
        (["notebook", "grpo_loss", "--out", "x.txt"], 2, "ends in `.ipynb`"),
        (["notebook", "grpo_loss", "--out", "a_file/x.ipynb"], 2, "a_file is a file, not a folder"),
        (["notebook", "--all", "--out", "a_file/notebooks"], 2, "a_file is a file, not a folder"),
        (["notebook", "grpo_loss"], 2, "Missing option '--out'"),
        (["notebook", "grpo_loss", "--out", "/proc/kata.ipynb"], 1, "cannot write /proc/kata.ipynb: "),
    ],
)
def test_bad_input_is_one_line_and_a_nonzero_status(kata_main, tmp_path, argv, status, words):
    (tmp_path / "a_file").write_text("not a folder", encoding="utf-8")

    run = kata_main(*argv)

    assert (run.status, run.out) == (status, "")
    assert len(run.err.strip().splitlines()) == 1 and words in run.err, run.err
    assert "Traceback" not in run.err
    assert (tmp_path / "a_file").read_text(encoding="utf-8") == "not a folder"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a_file"]


@pytest.mark.parametrize(
    "argv",
    [["notebook", "--out", "x.ipynb"], ["notebook", "--all", "--out", "a_file"], ["notebook", "x", "--out", "y"]],
)
def test_bad_input_in_chinese_is_one_chinese_line(kata_main, tmp_path, argv):
    (tmp_path / "a_file").write_text("", encoding="utf-8")

    run = kata_main(*argv, "--lang", "zh")

    assert run.status == 2 and len(run.err.strip().splitlines()) == 1
    assert "错误" in run.err and "Invalid value" not in run.err and CJK.search(run.err.split("：", 2)[-1])


def test_without_nbformat_it_says_what_to_install(kata_main, monkeypatch, tmp_path):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *rest: None if name == "nbformat" else find_spec(name, *rest)
    )

    run = kata_main("notebook", "grpo_loss", "--out", tmp_path / "g.ipynb")

    assert run.status == 1 and len(run.err.strip().splitlines()) == 1
    assert notebook.NEEDS in run.err and not (tmp_path / "g.ipynb").exists()


def test_importing_the_command_and_the_builder_loads_no_nbformat():
    code = "import sys, grader.cli, grader.content.notebook; assert 'nbformat' not in sys.modules, 'nbformat'"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
