"""OUT/report.html: one self-contained page, every name escaped, its numbers those of grades.json.

The sheets are built as `kata grade` builds them (gradesheet.build_sheet from records of results;
batch.discover for the files graded nowhere). The page's sections are read back from the page as
written and, in the slow tier, from the DOM headless Chromium builds of it.
"""

import os
import re
import shutil
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from grader.classroom import batch, feedback, gradesheet
from grader.classroom.names import file_name
from grader.classroom.report_html import (
    REASONS,
    misconception_students,
    report_html,
    todo_pass_rates,
    unknown_mistakes,
    write_report,
    zero_reason,
)
from grader.content.i18n import phrase
from grader.content.interface import PHRASES
from grader.report.results import CheckResult, GradeResult

EVIL = "<script>alert(1)</script>"
ODD = 'Zoë 李 "q" & #?% \\x01'  # a display name (names.display_name): never a "/"
KATAS = ["grpo_loss", "dpo_loss"]
SLUG = "grpo_loss"  # TODOs 1 to 4, whole-function checks, the input contract: a point each
HOSTILE = "got <img src=x onerror=alert(2)>"
MISTAKE = "old_not_detached"  # a misconception of grpo_loss's TODO 2


def _check(name: str, todo: int | None, status: str, misconception: str | None = None, **more) -> CheckResult:
    message = more.pop("message", HOSTILE if status != "passed" else "")
    matches = [misconception] if misconception else []
    return CheckResult(name, f"{name} <b>", todo, status, message, misconception, matches=matches, **more)


def _result(checks: list[CheckResult], **more) -> GradeResult:
    return GradeResult(SLUG, f"{SLUG}.py", checks, **more)


def _records(results: dict) -> dict:
    return {key: {"grade": result.to_json(), "seconds": 1.0} for key, result in results.items()}


# -- a class with hostile names ---------------------------------------------------------------

WRONG = [_check("a", 1, "passed"), _check("b", 2, "failed", MISTAKE), _check("c", 2, "passed")]
RIGHT = [_check("a", 1, "passed"), _check("b", 2, "passed"), _check("c", 2, "passed")]


def _sheet() -> dict:
    """EVIL and ann fail TODO 2 by MISTAKE and miss dpo_loss; ODD passes grpo_loss, crashes in dpo_loss."""
    results = {
        (EVIL, SLUG): _result(WRONG),
        (ODD, SLUG): _result(RIGHT),
        (ODD, "dpo_loss"): GradeResult("dpo_loss", "dpo_loss.py", [_check("z", None, "error")]),
        ("ann", SLUG): _result(WRONG),
    }
    return gradesheet.build_sheet(batch.Roster(KATAS, [EVIL, ODD, "ann"], []), _records(results))


class Node:
    """An element of a page: its tag, attributes and children (nodes and text)."""

    def __init__(self, tag: str, attrs: dict):
        self.tag, self.attrs, self.children = tag, attrs, []

    def text(self) -> str:
        return "".join(child if isinstance(child, str) else child.text() for child in self.children)

    def all(self, tag: str | None = None, **attrs: str) -> list["Node"]:
        """Every element below this one with that tag and those attributes (class_ for class)."""
        wanted = {name.rstrip("_").replace("_", "-"): value for name, value in attrs.items()}
        found = []
        for child in self.children:
            if isinstance(child, Node):
                if (tag is None or child.tag == tag) and all(child.attrs.get(k) == v for k, v in wanted.items()):
                    found.append(child)
                found += child.all(tag, **attrs)
        return found

    def one(self, tag: str | None = None, **attrs: str) -> "Node":
        (found,) = self.all(tag, **attrs)
        return found


VOID = {"meta", "br", "hr", "img", "input", "link", "area", "base", "col", "embed", "source", "track", "wbr"}


class Page(HTMLParser):
    """The tags, attributes and text of a page, and its tree (`root`)."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.root = Node("", {})
        self._open = [self.root]
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        node = Node(tag, dict(attrs))
        self._open[-1].children.append(node)
        if tag not in VOID:
            self._open.append(node)

    def handle_endtag(self, tag):
        tags = [node.tag for node in self._open]
        if tag in tags[1:]:
            del self._open[len(tags) - 1 - tags[::-1].index(tag) :]

    def handle_data(self, data):
        self.text.append(data)
        self._open[-1].children.append(data)

    def values(self, attribute: str) -> list[str]:
        return [attrs[attribute] for _, attrs in self.tags if attribute in attrs]


def _expected_scores(sheet: dict) -> list[float]:
    rows = sheet["students"].values()
    return [row[slug]["score"] for row in rows for slug in sheet["katas"] if row[slug]["status"] != "error"]


def _assert_page_matches(page: Page, sheet: dict) -> None:
    assert "script" not in {tag for tag, _ in page.tags}
    assert not [attrs for _, attrs in page.tags if any(name.startswith("on") for name in attrs)]
    assert EVIL in page.text and ODD in page.text  # shown as text: the scores and the student's section
    assert [float(value) for value in page.values("data-score")] == _expected_scores(sheet)
    assert sum(map(int, page.values("data-students"))) == len(sheet["students"])
    assert [float(value) for value in page.values("data-pass-rate")] == [1.0, 0.3333]


def test_the_page_escapes_every_name_and_carries_the_sheets_numbers():
    sheet = _sheet()
    page = Page(report_html(sheet))
    _assert_page_matches(page, sheet)
    assert "old log-probs not detached" in "".join(page.text)  # the catalogue's title
    assert [g.attrs["data-files"] for g in page.root.all("g", data_misconception=MISTAKE)] == ["2"]
    assert "&lt;script&gt;" in report_html(sheet)
    assert not [attrs for tag, attrs in page.tags if tag in ("link", "img", "iframe") or "src" in attrs]


def test_todo_pass_rates_count_files_whose_every_check_of_the_todo_passed():
    # grpo_loss TODO 2: ODD's file passed both checks, the two others failed one; dpo_loss: no TODO
    assert todo_pass_rates(_sheet()) == {"grpo_loss": {1: (3, 3), 2: (1, 3)}, "dpo_loss": {}}


def test_feedback_links_lead_to_the_files_kata_grade_writes_and_names_to_their_sections(tmp_path):
    sheet = _sheet()
    feedback.write_feedback(
        tmp_path, feedback.feedback_texts(batch.Roster(KATAS, list(sheet["students"]), []), {}, "en")
    )
    page = Page(report_html(sheet))
    hrefs = [attrs["href"] for tag, attrs in page.tags if tag == "a"]
    files = [href for href in hrefs if not href.startswith("#")]
    assert len(files) == len(sheet["students"]) * len(KATAS)
    assert all(" " not in href and '"' not in href and "#" not in href for href in files)
    for href in files:
        assert (tmp_path / unquote(href)).is_file(), href
    assert unquote(files[0]) == f"feedback/{file_name(EVIL)}/grpo_loss.txt"
    ids = {attrs["id"]: attrs.get("data-student") for _, attrs in page.tags if "id" in attrs}
    links = [
        (attrs["href"][1:], attrs["data-student"]) for tag, attrs in page.tags if tag == "a" and "data-student" in attrs
    ]
    assert links and all(ids[anchor] == student for anchor, student in links)  # each name: its own section


def need_browser() -> str:
    """Chromium's path; skip where it is missing, saying why, or fail with KATA_REQUIRE_BROWSER
    set (scripts/test sets it under CI, where it installs chromium)."""
    path = shutil.which("chromium")
    if path is None:
        if os.environ.get("KATA_REQUIRE_BROWSER"):
            pytest.fail("chromium must be installed in CI (scripts/test installs it with apt)")
        pytest.skip("no chromium here: `apt-get install chromium` to open the report in a browser")
    return path


def _chromium(path: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    command = [path, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=True)


def _dom(page: Path, profile: Path) -> str:
    """The page's DOM as headless Chromium builds it."""
    return _chromium(need_browser(), profile, "--dump-dom", page.resolve().as_uri()).stdout


@pytest.mark.slow
def test_a_headless_browser_renders_the_report_without_errors(tmp_path):
    chromium = need_browser()
    sheet = _sheet()
    page = write_report(sheet, tmp_path)
    url = page.resolve().as_uri()
    shot = tmp_path / "report.png"
    shown = _chromium(
        chromium, tmp_path / "profile", "--enable-logging=stderr", "--v=0", "--window-size=1200,2000",
        f"--screenshot={shot}", url,
    )  # fmt: skip
    console = [line for line in shown.stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
    assert not console  # the page has no script: any console line (error, failed load) is a fault
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24]) == (1200, 2000)
    _assert_page_matches(Page(_dom(page, tmp_path / "profile")), sheet)


def test_the_page_lists_the_files_graded_nowhere_and_why(tmp_path):
    """A misnamed file (did you mean), several of one kata, a file named after no kata and an entry
    that is no student folder each get a row of "Files not graded"; a class with none gets no such
    section."""
    for student, name in (
        ("ann", "Group_Advantages.py"),
        ("bob", "group_advantages.py"),
        ("bob", "old/group_advantages.py"),
        ("cy", "notes.py"),
    ):
        (tmp_path / student / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / student / name).write_text("x = 1\n")
    (tmp_path / "README.txt").write_text("not a student")
    sheet = gradesheet.build_sheet(batch.discover(tmp_path, None, batch.Settings()), {})
    page = report_html(sheet)
    rows = re.findall(r'<tr class="not-graded"><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td></tr>', page)
    assert rows == [
        ("ann", "Group_Advantages.py", "did you mean group_advantages.py?"),
        ("bob", "group_advantages.py, old/group_advantages.py", "several group_advantages.py: none graded"),
        ("cy", "notes.py", "named after no kata"),
        ("", "README.txt", "not a student folder: ignored"),
    ]
    assert "Files not graded" in page
    assert "Files not graded" not in report_html(gradesheet.build_sheet(batch.Roster([], [], []), {}))
    reasons = {student: cell.attrs.get("data-reason") for (student, _), cell in cells_of(Page(page)).items()}
    assert reasons == {"ann": "misnamed", "bob": "several", "cy": "missing"}


# -- a class with every kind of 0 -------------------------------------------------------------


def _every_unit(status: str, **more) -> list[CheckResult]:
    """A check of each TODO, a whole-function check and an input-contract check, all with `status`."""
    checks = [_check(f"t{number}", number, status, **more) for number in range(1, 5)]
    return checks + [_check("w", None, status, whole=True, **more), _check("k", None, status, **more)]


LOAD = "memory limit exceeded while loading the file"  # said by the load error and by every check
CLASS = {  # student: what their grpo_loss gives (None: not handed in) and why it scores 0
    "ada": (_result(_every_unit("passed")), None),
    "bo": (_result([_check("t1b", 1, "failed"), *_every_unit("passed")]), None),  # TODO 1: an unknown mistake
    "kim": (_result([_check("t2b", 2, "failed", MISTAKE), *_every_unit("passed")]), None),  # TODO 2: MISTAKE
    "cy": (None, "missing"),
    EVIL: (None, "misnamed"),
    "eve": (None, "several"),
    "fay": ("the warm process did not start <b>", "error"),
    "gus": (_result([], load_error="SyntaxError: invalid syntax <i> (line 3)\nwhat it printed"), "load"),
    "lee": (_result(_every_unit("error", message=f"your file could not be loaded: {LOAD}"), load_error=LOAD), "load"),
    "hal": (_result(_every_unit("timeout", message="did not finish within 2 s <u>\nits output")), "timeout"),
    "ian": (_result(_every_unit("error", message="crashed (SIGSEGV) <s>")), "crashed"),
    "jo": (_result([_check("x", 1, "passed"), *_every_unit("failed")]), "wrong"),  # 1 of 7 checks passed, no point
}
NAMES = {EVIL: {SLUG: ["GRPO_loss.py", "<b>.py"]}}  # Roster.misnamed
SEVERAL = {"eve": {SLUG: ["a/grpo_loss.py", "b/grpo_loss.py"]}}  # Roster.several


def _class() -> tuple[batch.Roster, dict]:
    """CLASS as `kata grade` would hold it: the roster, and the records of the files graded."""
    roster = batch.Roster([SLUG], list(CLASS), [], {"fay": ["notes.py"]}, ["README.txt"], NAMES, SEVERAL)
    records = _records({(student, SLUG): got for student, (got, _) in CLASS.items() if isinstance(got, GradeResult)})
    records[("fay", SLUG)] = batch.error_record(batch.Job("fay", SLUG, None, "", batch.Settings()), CLASS["fay"][0])
    return roster, records


def cells_of(page: Page) -> dict[tuple[str, str], Node]:
    """{(student, slug): its cell of the summary}."""
    cells = {}
    for row in page.root.one("table", class_="scores").all("tr"):
        for link in row.all("a")[:1]:  # the student's name (the header row has none)
            student = link.attrs["data-student"]
            cells |= {(student, cell.attrs["data-kata"]): cell for cell in row.all("td") if "data-kata" in cell.attrs}
    return cells


def _section(page: Page, student: str) -> Node:
    return page.root.one("section", data_student=student)


@pytest.fixture(scope="module", params=["written", pytest.param("chromium", marks=pytest.mark.slow)])
def pages(request, tmp_path_factory) -> dict:
    """{(scoring, lang): (sheet, feedback texts, the page of CLASS)}: as written, or Chromium's DOM of it."""
    roster, records = _class()
    folder = tmp_path_factory.mktemp("report")
    found = {}
    for scoring, lang in (("todos", "en"), ("checks", "en"), ("todos", "zh")):
        sheet = gradesheet.build_sheet(roster, records, scoring, None, lang)
        texts = feedback.feedback_texts(roster, records, lang, "graded", sheet)
        path = write_report(sheet, folder / f"{scoring}-{lang}", lang, texts)
        text = path.read_text(encoding="utf-8") if request.param == "written" else _dom(path, folder / "profile")
        found[scoring, lang] = sheet, texts, Page(text)
    return found


def test_zero_reason_says_why_each_entry_scores_nothing():
    roster, records = _class()
    sheet = gradesheet.build_sheet(roster, records)
    assert {student: zero_reason(row[SLUG]) for student, row in sheet["students"].items()} == {
        student: why for student, (_, why) in CLASS.items()
    }
    by_checks = gradesheet.build_sheet(roster, records, "checks")
    assert zero_reason(by_checks["students"]["jo"][SLUG]) is None  # 1 of 7 checks: not a 0
    assert {why for _, why in CLASS.values()} == {None, *REASONS}  # each reason has its student here
    for lang in ("en", "zh"):
        assert {f"why_{code}{long}" for code in REASONS for long in ("", "_long")} <= PHRASES[lang].keys()


def test_the_caption_says_what_the_numbers_are_for_each_scoring(pages):
    for scoring in ("todos", "checks"):
        sheet, _, page = pages[scoring, "en"]
        table = page.root.one("table", class_="scores")
        assert table.one("caption").text() == phrase("en", f"html_caption_{scoring}")
        assert table.attrs["data-scoring"] == scoring
    assert "points the file kept" in phrase("en", "html_caption_todos")
    assert "checks passed / checks" in phrase("en", "html_caption_checks")
    _, _, zh = pages["todos", "zh"]
    assert zh.root.one("caption").text() == phrase("zh", "html_caption_todos") != phrase("en", "html_caption_todos")


def test_each_cell_holds_the_sheets_points_and_a_0_says_why(pages):
    sheet, _, page = pages["todos", "en"]
    cells = cells_of(page)
    assert set(cells) == {(student, SLUG) for student in CLASS}
    for (student, _), cell in cells.items():
        entry = sheet["students"][student][SLUG]
        assert cell.attrs.get("data-reason") == CLASS[student][1], student
        if entry["status"] != "error":
            assert float(cell.attrs["data-score"]) == entry["score"]
            assert (int(cell.attrs["data-points"]), int(cell.attrs["data-max"])) == (sum(entry["points"].values()), 6)
        if entry["status"] == "graded":
            assert cell.text().startswith(f"{sum(entry['points'].values())} of 6"), cell.text()
    titles = {student: cells[student, SLUG].attrs.get("title") for student in CLASS}
    assert titles["ada"] is None and titles["bo"] is None
    assert titles["cy"] == "not handed in: no grpo_loss.py in the folder"
    assert titles[EVIL] == "not graded: did you mean grpo_loss.py? Handed in as GRPO_loss.py, <b>.py"
    assert titles["eve"] == "several grpo_loss.py (a/grpo_loss.py, b/grpo_loss.py), so none was graded"
    assert titles["fay"] == "the grader failed on it, not a grade: the warm process did not start <b>"
    assert titles["gus"] == "the file did not load: SyntaxError: invalid syntax <i> (line 3)"
    assert titles["lee"] == f"the file did not load: {LOAD}"
    assert titles["hal"] == "every check ran out of time: did not finish within 2 s <u>"
    assert titles["ian"] == "every check crashed: crashed (SIGSEGV) <s>"
    assert titles["jo"] == "graded: 6 of 7 checks failed"
    shown = {student: cells[student, SLUG].text() for student in CLASS}
    assert (shown["cy"], shown["fay"], shown["hal"], shown["jo"]) == (
        "missing",
        "grader error",
        "0 of 6 timed out",
        "0 of 6 checks failed",
    )


def test_with_scoring_checks_a_cell_is_the_fraction_of_checks_passed(pages):
    sheet, _, page = pages["checks", "en"]
    cells = cells_of(page)
    for student in ("ada", "bo", "jo"):
        entry = sheet["students"][student][SLUG]
        cell = cells[student, SLUG]
        assert float(cell.attrs["data-score"]) == entry["score"] and "data-points" not in cell.attrs
        checks = len(CLASS[student][0].checks)
        assert (int(cell.attrs["data-passed"]), int(cell.attrs["data-checks"])) == (entry["passed"], checks)
        assert cell.text() == f"{entry['score']:.2f} ({entry['passed']}/{entry['passed'] + entry['failed']})"
    assert "data-reason" not in cells["jo", SLUG].attrs and cells["hal", SLUG].attrs["data-reason"] == "timeout"


def test_each_student_has_a_section_with_points_per_unit_and_the_feedback_inline(pages):
    sheet, texts, page = pages["todos", "en"]
    assert [section.attrs["data-student"] for section in page.root.all("section")] == list(CLASS)
    for student in CLASS:
        kata = _section(page, student).one("div", data_kata=SLUG)
        entry = sheet["students"][student][SLUG]
        units = {
            row.attrs["data-unit"]: (int(row.attrs["data-got"]), int(row.attrs["data-top"]))
            for row in kata.all("tr", class_="unit")
        }
        if entry["status"] == "graded":
            assert units == {key: (entry["points"][key], top) for key, top in sheet["points"][SLUG].items()}
        else:
            assert units == {}
        assert kata.one("pre", class_="feedback").text() == texts[student, SLUG]
        reasons = [p.attrs["data-reason"] for p in kata.all("p", class_="reason")]
        assert reasons == ([CLASS[student][1]] if CLASS[student][1] else [])
    bo = _section(page, "bo").one("div", data_kata=SLUG)
    assert [[cell.text() for cell in row.all("td")] for row in bo.all("tr", class_="unit")][::5] == [
        ["TODO 1", "0 of 1"],
        ["the input contract", "1 of 1"],
    ]
    assert "Points: 5 of 6 (TODO 1: 0 of 1;" in bo.one("pre").text()
    assert "did you mean grpo_loss.py?" in _section(page, EVIL).one("pre").text()


def test_each_misconception_lists_the_students_who_made_it(pages):
    sheet, _, page = pages["todos", "en"]
    assert misconception_students(sheet) == {(SLUG, MISTAKE): ["kim"]}
    made = page.root.one("li", class_="made", data_kata=SLUG, data_misconception=MISTAKE)
    assert [link.attrs["data-student"] for link in made.all("a")] == ["kim"]
    assert made.text() == "grpo_loss: old log-probs not detached: kim"
    assert misconception_students(_sheet()) == {(SLUG, MISTAKE): [EVIL, "ann"]}


def test_each_todo_lists_the_files_whose_mistake_there_is_not_a_known_one(pages):
    sheet, _, page = pages["todos", "en"]
    expected = {1: ["bo", "jo"], 2: ["jo"], 3: ["jo"], 4: ["jo"]}  # kim's is known; lee, hal, ian stop alike
    assert unknown_mistakes(sheet) == {SLUG: expected}
    shown = {
        int(p.attrs["data-todo"]): [link.attrs["data-student"] for link in p.all("a")]
        for p in page.root.all("p", class_="unknown", data_kata=SLUG)
    }
    assert shown == expected
    assert page.root.one("p", class_="unknown", data_todo="1").text() == "TODO 1, not a known mistake: bo, jo"


def test_the_misnamed_several_stray_and_ignored_files_are_listed(pages):
    _, _, page = pages["todos", "en"]
    rows = [[cell.text() for cell in row.all("td")] for row in page.root.all("tr", class_="not-graded")]
    assert rows == [
        [EVIL, "GRPO_loss.py, <b>.py", "did you mean grpo_loss.py?"],
        ["eve", "a/grpo_loss.py, b/grpo_loss.py", "several grpo_loss.py: none graded"],
        ["fay", "notes.py", "named after no kata"],
        ["", "README.txt", "not a student folder: ignored"],
    ]
    assert "script" not in {tag for tag, _ in page.tags} and EVIL in page.text


def test_the_chinese_page_says_why_in_chinese(pages):
    sheet, texts, page = pages["todos", "zh"]
    cells = cells_of(page)
    assert {student: cell.attrs.get("data-reason") for (student, _), cell in cells.items()} == {
        student: why for student, (_, why) in CLASS.items()
    }
    assert cells["cy", SLUG].text() == "缺交" and cells["hal", SLUG].text() == "0 / 6 超时"
    assert cells["ian", SLUG].attrs["title"] == "每项检查都崩溃了：crashed (SIGSEGV) <s>"
    assert page.root.one("p", class_="unknown", data_todo="2").text() == "TODO 2，错误不属于任何已知误区：jo"
    assert _section(page, "bo").one("pre").text() == texts["bo", SLUG] and texts["bo", SLUG].startswith("得分：5 / 6")
