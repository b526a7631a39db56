r"""Every output is inert: what a learner's code controls reaches no terminal and no file raw.

A hostile file's messages, prints and load error carry a clipboard write (OSC 52), a disguised
link (OSC 8), a clear-screen, cursor moves, a fake "\r13 passed, 0 failed", a C1 CSI, bidi
overrides and isolates, a zero-width space and DEL; its students' names look like spreadsheet
formulas. Every output (the terminal report with colour and without, `kata check` and its
`--json`, `kata watch`, the feedback files, grades.json, grades.csv, JUnit, report.html, the stored
results and Gradescope's results.json) holds none of them raw, on the decoded text, and shows each
in its visible form (grader.report.inert). The honest twin, the same file with ordinary text, is
written exactly as without `inert`.
"""

import csv
import html
import io
import json
import re
from pathlib import Path
from xml.etree import ElementTree

import pytest
from conftest import flat
from rich.cells import cell_len
from rich.console import Console

from grader.classroom import batch, feedback, gradescope, gradesheet, report_html
from grader.classroom.names import display_name
from grader.cli.watch import watch_workspace
from grader.cli.workspace import Workspace
from grader.content.catalogue import get_kata
from grader.report import results
from grader.report.inert import inert
from grader.report.results import CheckResult, GradeResult
from grader.report.styles import THEME
from grader.report.terminal import build_report
from grader.run import sandbox

SLUG = "group_advantages"
KATA = get_kata(SLUG)
ATTACKS = {  # what a learner's code writes -> what every output shows instead
    "\x1b]52;c;aGk=\x07": r"\x1b]52;c;aGk=\x07",  # OSC 52: "hi" into the clipboard
    "\x1b]8;;https://evil.example/\x1b\\docs\x1b]8;;\x1b\\": "\\x1b]8;;https://evil.example/\\x1b\\docs\\x1b]8;;\\x1b\\",
    "\x1b[2J\x1b[H": r"\x1b[2J\x1b[H",  # clear the screen, cursor home
    "\x1b[3A\x1b[12C": r"\x1b[3A\x1b[12C",  # cursor up 3, right 12
    "\r13 passed, 0 failed": r"\r13 passed, 0 failed",  # over the line: a fake summary
    "\x9b31m": r"\u009b31m",  # C1 CSI: red on a terminal that reads 8-bit controls
    "\u202eevil\u202c": r"\u202eevil\u202c",  # right-to-left override, pop
    "\u2066iso\u2069": r"\u2066iso\u2069",  # left-to-right isolate, pop
    "zero\u200bwidth": r"zero\u200bwidth",
    "del\x7fete": r"del\x7fete",
}
HONEST = ["clipboard", "https://example.com/docs", "clear", "cursor", "13 passed, 0 failed"]
HONEST += ["csi", "evil", "iso", "zero width", "delete"]
RAW = "\x1b\x07\r\x9b\u202e\u202c\u2066\u2069\u200b\x7f"  # the attacks' characters
FORMULAS = ('=HYPERLINK("evil.example")\x1b[2J\u202e', "+bo\u2066")  # the hostile class's names
MARKUP = "[red]not red[/red] [link=https://evil.example]no link[/link]"
CHINESE = "中文：全角标点，“引号”。\tand a tab"
SGR = re.compile(r"\x1b\[[0-9;]*m")  # the grader's own colours
SINKS = ("results/", "grades.csv", "grades.json", "junit/", "feedback/", "report.html", "terminal, colour", "terminal:")
SINKS += ("kata check:", "kata check --json", "kata watch", "gradescope")  # every output's name starts so
WATCH_CLEAR = "\x1b[2J\x1b[H"  # what `kata watch` writes before each check on a terminal
SPINNER = ("\x1b[?25l", "\x1b[?25h")  # around the spinner `kata watch` shows while a check runs
SPINNER_ERASED = re.compile(r"^\r(?:\x1b\[1A)?(?:\x1b\[2K\x1b\[1A)*\x1b\[2K")  # then its lines erased


def message(words: list[str]) -> str:
    """A failed check's message, and what the code printed: the ten `words` among ordinary lines."""
    first, link, clear, cursor, fake, csi, *rest = words
    lines = [f"{first} {clear} {cursor}", link, f"{fake} {csi}", " ".join(rest), MARKUP, CHINESE]
    return "\n".join(["compute_group_advantages(rewards, group_ids) raised ValueError:", *("  " + x for x in lines)])


def graded(text: str) -> GradeResult:
    """A file failing TODO 1's check with `text` as message and print, and the input contract with it."""
    checks = [
        CheckResult("matches", "Advantages match the reference", 1, "failed", text, output=text),
        CheckResult("rejects", "Rejects bad input", None, "error", text),
    ]
    return GradeResult(SLUG, f"{SLUG}.py", checks)


def terminal(result: GradeResult, colour: bool) -> str:
    """The report as `kata check` prints it on a terminal (`colour`) or into a pipe, 80 columns."""
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=80,
        theme=THEME,
        highlight=False,
        force_terminal=colour,
        color_system="standard" if colour else None,
    )
    console.print(build_report(result, KATA, "en", f"{SLUG}.py"))
    return buffer.getvalue()


def record(student: str, result: GradeResult) -> dict:
    """The record batch keeps for a graded file."""
    return {"version": batch.RECORD_VERSION, "student": student, "kata": SLUG, "digest": "", "grade": result.to_json()}


def every_output(root: Path, students: tuple[str, str], text: str, kata_main, monkeypatch) -> dict[str, str]:
    """{output: its text} of a class of two: the first student's file fails with `text` in its
    messages and prints, the second's does not load with `text` as its load error."""
    graded_ = {students[0]: graded(text), students[1]: GradeResult(SLUG, f"{SLUG}.py", [], load_error=text)}
    out = root / "out"
    records = {(student, SLUG): record(student, result) for student, result in graded_.items()}
    for each in records.values():
        batch.save_record(out, each)
    roster = batch.Roster([SLUG], list(students), [])
    sheet = gradesheet.build_sheet(roster, records)
    gradesheet.write_sheet(sheet, out)
    texts = feedback.feedback_texts(roster, records, "en", "graded", sheet)
    feedback.write_feedback(out, texts)
    report_html.write_report(sheet, out, "en", texts)
    outputs = {path.relative_to(out).as_posix(): path.read_text("utf-8") for path in out.rglob("*") if path.is_file()}
    for student, result in graded_.items():
        outputs[f"terminal, colour: {student}"] = terminal(result, colour=True)
        outputs[f"terminal: {student}"] = terminal(result, colour=False)
        monkeypatch.setattr("grader.run.grading.run_checks", lambda *args, result=result, **kwargs: result)
        monkeypatch.setattr("grader.judging.warm_judge.WarmJudge.check", lambda *args, result=result, **kwargs: result)
        (root / f"{SLUG}.py").write_text("pass\n")
        outputs[f"kata check: {student}"] = kata_main("check", SLUG, "--file", root / f"{SLUG}.py").out
        outputs[f"kata check --json: {student}.json"] = kata_main(
            "check", SLUG, "--file", root / f"{SLUG}.py", "--json"
        ).out
        outputs[f"kata watch, colour: {student}"] = watched(root)
        outputs[f"gradescope: {student}/results.json"] = gradescope_results(root / "gs" / student, result, monkeypatch)
    return outputs


def watched(workspace: Path) -> str:
    """`kata watch` on a terminal, checking the kata once, without the clear-screen it writes first."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=80, theme=THEME, highlight=False, force_terminal=True, color_system="standard")
    watch_workspace(Workspace(workspace), KATA, 10.0, False, "en", console, changes=[])
    before, clear, after = buffer.getvalue().partition(WATCH_CLEAR)
    assert clear, "kata watch clears a terminal before a check"
    head, hidden, rest = after.partition(SPINNER[0])  # the grader's own progress line, cursor hidden
    assert hidden and SPINNER[1] in rest, "kata watch shows its progress while it checks"
    shown = before + head + SPINNER_ERASED.sub("", rest.partition(SPINNER[1])[2], count=1)
    return re.sub(r"\b\d\d:\d\d:\d\d\b", "HH:MM:SS", shown)  # the status line's time of the check


def gradescope_results(root: Path, result: GradeResult, monkeypatch) -> str:
    """ROOT/results/results.json of a Gradescope run whose grading gave `result` (scored per check)."""
    (root / "source").mkdir(parents=True)
    config = {"slugs": [SLUG], "scoring": "checks", "visibility": "visible"}
    (root / "source" / gradescope.CONFIG).write_text(json.dumps(config))
    (root / "submission").mkdir()
    (root / "submission" / f"{SLUG}.py").write_text("pass\n")
    run = batch.BatchRun({(gradescope.STUDENT, SLUG): record(gradescope.STUDENT, result)})
    monkeypatch.setattr(batch, "run_batch", lambda *args, **kwargs: run)
    monkeypatch.setattr(sandbox, "problem", lambda: None)
    return gradescope.run(root).read_text("utf-8")


def read(name: str, text: str) -> list[str]:
    """The output as its reader gets it: itself, and JSON's strings decoded, CSV's cells, XML's texts
    and attributes, HTML with its character references resolved."""
    if name.endswith(".json"):
        return [text, *strings(json.loads(text))]
    if name.endswith(".csv"):
        return [text, *(cell for row in csv.reader(io.StringIO(text)) for cell in row)]
    if name.endswith(".xml"):
        nodes = ElementTree.fromstring(text.encode()).iter()
        return [text, *(part for node in nodes for part in (node.text or "", node.tail or "", *node.attrib.values()))]
    return [text, html.unescape(text)] if name.endswith(".html") else [text]


def strings(data) -> list[str]:
    """Every string in decoded JSON, keys included."""
    if isinstance(data, dict):
        return [*data, *(text for value in data.values() for text in strings(value))]
    if isinstance(data, list):
        return [text for value in data for text in strings(value)]
    return [data] if isinstance(data, str) else []


def shows_messages(name: str) -> bool:
    """Whether the output holds the checks' messages: all but the CSV (names only)."""
    return not name.endswith(".csv")


@pytest.fixture
def hostile(tmp_path, kata_main, monkeypatch, isolated) -> dict[str, str]:
    students = tuple(map(display_name, FORMULAS))
    return every_output(tmp_path / "hostile", students, message(list(ATTACKS)), kata_main, monkeypatch)


@pytest.fixture
def honest(tmp_path, kata_main, monkeypatch, isolated) -> dict[str, str]:
    return every_output(tmp_path / "honest", ("ada", "bo"), message(HONEST), kata_main, monkeypatch)


# -- the escaping ------------------------------------------------------------------------------


def test_inert_replaces_exactly_the_documented_characters_by_their_visible_form():
    ranges = [(0x00, 0x09), (0x0B, 0x20), (0x7F, 0xA0), (0x200B, 0x2010), (0x202A, 0x202F), (0x2066, 0x206A)]
    documented = {chr(code) for low, high in ranges for code in range(low, high)}
    assert {char for char in map(chr, range(0x110000)) if inert(char) != char} == documented
    assert [inert(char) for char in "\x1b\r\x00\x7f\x9b\u200b\u202e\u2069"] == [
        *(r"\x1b", r"\r", r"\x00", r"\x7f", r"\u009b", r"\u200b", r"\u202e", r"\u2069")
    ]
    plain = f"{CHINESE}\n{MARKUP} C:\\temp \\x1b"
    assert inert(plain) == plain
    hostile = message(list(ATTACKS))
    assert inert(hostile) == message(list(ATTACKS.values())) and inert(inert(hostile)) == inert(hostile)


def test_a_result_is_inert_from_the_moment_it_is_built_or_read_back():
    text = message(list(ATTACKS))
    built = GradeResult(SLUG, "x\x1b.py", [CheckResult("c", "T", 1, "failed", text, output=text)], load_error=text)
    data = built.to_json() | {"load_error": text, "checks": [{**built.to_json()["checks"][0], "message": text}]}
    for result in (built, GradeResult.from_json(data)):
        check = result.checks[0]
        assert check.message == check.output == result.load_error == inert(text) and result.target == r"x\x1b.py"
        assert (check.name, check.title) == ("c", "T")


# -- every output ------------------------------------------------------------------------------


def test_no_output_holds_a_control_or_bidi_character_from_the_file(hostile):
    assert [kind for kind in SINKS if not any(name.startswith(kind) for name in hostile)] == []
    for name, text in hostile.items():
        for piece in read(name, SGR.sub("", text) if "colour" in name else text):
            assert not set(piece) & set(RAW), (name, [char for char in RAW if char in piece])


def test_every_output_shows_the_attacks_in_their_visible_form(hostile):
    for name, text in hostile.items():
        read_as = flat("\n".join(read(name, SGR.sub("", text))))
        if shows_messages(name):
            assert [form for form in ATTACKS.values() if form not in read_as] == [], name
            assert "中文：全角标点，“引号”。" in read_as, name
    names = [display_name(name) for name in FORMULAS]
    assert all(name in flat(html.unescape(hostile["report.html"])) for name in names)
    cells = [row[0] for row in csv.reader(io.StringIO(hostile["grades.csv"]))]
    assert cells[0] == "student"  # the rows in natural order (names.natural_key), not the class's
    assert sorted(cells[1:]) == sorted("'" + name for name in names)


def test_no_csv_cell_starts_as_a_formula():
    entry = {"status": "graded", "score": 1, "points": {"todo1": 1}, "max": 1}
    sheet = {
        "katas": ["=evil"],
        "scoring": "checks",
        "points": {"=evil": {"todo1": 1}},
        "students": {"-rf": {"=evil": entry}},
    }
    sheet["roster"] = {"key": "@id", "columns": ["@id", "+mail"], "rows": [["-rf", "=1+1"]], "matched": {"-rf": 0}}
    rows = list(csv.reader(io.StringIO(gradesheet.grades_csv(sheet))))
    assert rows == [
        ["'@id", "'+mail", "student", "'=evil", "total (of 1)", "mean", "errors"],
        ["'-rf", "'=1+1", "'-rf", "1.0000", "1", "1.0000", ""],
    ]


def test_rich_markup_in_a_message_is_printed_as_it_is(hostile, honest):
    for outputs in (hostile, honest):
        for name, text in outputs.items():
            if shows_messages(name):
                assert MARKUP in flat(SGR.sub("", "\n".join(read(name, text)))), name


def test_newline_and_tab_pass_through_where_the_format_keeps_them(hostile, honest):
    for outputs in (hostile, honest):
        for name, text in outputs.items():
            if name.endswith(".json") and not name.startswith("gradescope"):  # messages as data, not as a report
                assert any(f"{MARKUP}\n  {CHINESE}" in piece for piece in read(name, text)), name


def test_only_a_terminal_shows_the_graders_colours(hostile, honest):
    for name, text in honest.items():
        if "colour" in name:
            assert SGR.search(text) and "\x1b" not in SGR.sub("", text), name
        else:
            assert "\x1b" not in text, name
    for outputs in (hostile, honest):  # in colour, the same report: only the grader's codes added
        coloured = [name for name in outputs if name.startswith("terminal, colour")]
        assert coloured and all(
            SGR.sub("", outputs[name]) == outputs[name.replace(", colour", "")] for name in coloured
        )


def test_the_honest_twin_is_written_exactly_as_without_inert(tmp_path, honest, kata_main, monkeypatch):
    monkeypatch.setattr(results, "inert", lambda text: text)
    unchanged = every_output(tmp_path / "before", ("ada", "bo"), message(HONEST), kata_main, monkeypatch)
    assert unchanged.keys() == honest.keys()
    assert [name for name in honest if honest[name] != unchanged[name].replace("before", "honest")] == []


def test_the_reports_fit_80_columns(hostile):
    for name, text in hostile.items():
        if name.startswith(("terminal", "kata watch")) or (name.endswith(".txt") and "could not be graded" not in text):
            assert max(map(cell_len, SGR.sub("", text).splitlines())) <= 80, name


def test_a_grading_error_quoting_the_judge_is_printed_inert_and_as_it_is(tmp_path, kata_main, monkeypatch, isolated):
    from grader.run.grading import GradingError

    def fail(*args, **kwargs):
        raise GradingError("the grader failed: [red]x[/red] \x1b[2J")

    monkeypatch.setattr("grader.run.grading.run_checks", fail)
    monkeypatch.setattr("grader.judging.warm_judge.WarmJudge.check", fail)
    (tmp_path / f"{SLUG}.py").write_text("pass\n")
    run = kata_main("check", SLUG, "--file", tmp_path / f"{SLUG}.py")
    assert run.status == 1 and run.err == "kata: the grader failed: [red]x[/red] \\x1b[2J\n"
    assert "kata: the grader failed: [red]x[/red] \\x1b[2J\x1b[0m\n" in watched(tmp_path)  # then the status line


# -- end to end --------------------------------------------------------------------------------


LEARNER_FILE = """WORDS = {words!r}
print(*WORDS)


def compute_group_advantages(rewards, group_ids, eps=1e-6):
    print(*WORDS)
    raise RuntimeError(" ".join(WORDS))
"""  # prints WORDS when loaded and in each call, and raises them


@pytest.mark.slow
def test_kata_grade_writes_a_hostile_file_inert_and_scores_it_as_its_honest_twin(tmp_path, kata_main):
    submissions, out = tmp_path / "submissions", tmp_path / "out"
    for student, words in ((FORMULAS[0], list(ATTACKS)), ("ada", HONEST)):
        (submissions / student).mkdir(parents=True)
        (submissions / student / f"{SLUG}.py").write_text(LEARNER_FILE.format(words=words))
    unsandboxed = [] if sandbox.problem() is None else ["--no-sandbox"]
    run = kata_main("grade", submissions, "--out", out, "--workers", "1", "--timeout", "5", *unsandboxed)
    assert run.status == 0, run.output
    outputs = {path.relative_to(out).as_posix(): path.read_text("utf-8") for path in out.rglob("*") if path.is_file()}
    for name, text in {**outputs, "the command's output": run.output}.items():
        for piece in read(name, text):
            assert not set(piece) & set(RAW), (name, [char for char in RAW if char in piece])
    sheet = json.loads(outputs["grades.json"])
    student = display_name(FORMULAS[0])
    messages = flat(" ".join(check["message"] for check in sheet["students"][student][SLUG]["checks"]))
    assert [form for form in ATTACKS.values() if form not in messages] == []
    scores = {name: (row[SLUG]["score"], row[SLUG]["passed"]) for name, row in sheet["students"].items()}
    assert scores[student] == scores["ada"] and scores["ada"][0] < 1
    assert run.output.rstrip().endswith("0 missing") and "13 passed, 0 failed" not in run.output
