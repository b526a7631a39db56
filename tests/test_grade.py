"""`kata grade`: a class folder graded in parallel, resumably, whatever a submission does.

The class fixture grades one small class once (two workers) and the tests read its results;
the resume tests grade a second, cheaper class (an interrupted run and its rerun:
tests/test_interrupt.py). Grading spawns processes that run torch, so the class is small and uses
the cheapest kata.
"""

import csv
import json
import textwrap
from xml.etree import ElementTree

import pytest
from conftest import need_sandbox, processes_named

from grader.classroom import batch, gradesheet
from grader.content import catalogue
from grader.content.catalogue import get_kata
from grader.report.results import CheckResult, GradeResult, Location
from grader.run import containment, staging

SLUG = "group_advantages"
KATA = get_kata(SLUG)
REFERENCE = KATA.solution()
COLUMN = f"{SLUG} (of 2)"  # grades.csv's column: points of TODO 1 and the input contract
TIMEOUT = 3.0
MEMORY_MB = 256  # each bomb below asks for 1 GiB: over the limit, and harmless if the limit failed
BOMB_NAME = "katabomb"  # what the fork bomb's processes call themselves (/proc/PID/comm)


def body(code: str) -> str:
    """The reference, with `code` run first inside compute_group_advantages."""
    marker = "    if rewards.ndim != 1 or rewards.numel() == 0"
    return REFERENCE.replace(marker, textwrap.indent(textwrap.dedent(code).strip(), "    ") + "\n" + marker, 1)


FORK_BOMB = body(f"""
    import ctypes, os, time
    for _ in range(9):  # at most 2**9 processes even where nothing caps them
        try:
            pid = os.fork()
        except OSError:
            continue
        if pid == 0:
            os.setsid()  # out of the check's process group: only the box can find it
            ctypes.CDLL(None).prctl(15, b"{BOMB_NAME}", 0, 0, 0)
    time.sleep(20)  # bounded: even unkilled, every process is gone after 20 s
""")


WRONG = """
def compute_group_advantages(rewards, group_ids, eps=1e-6):
    return rewards * 0
"""


def forger(out) -> str:
    """WRONG, plus trying to pass anyway: prints a passing report, writes result files everywhere."""
    fake = json.dumps({"kata": SLUG, "target": "x", "checks": [], "load_error": None})
    return (
        f"""
import json, os, pathlib
FAKE = {fake!r}
print("13 passed, 0 failed")
print(FAKE)
for place in ("result.json", "../result.json", os.path.expanduser("~/result.json")):
    try:
        pathlib.Path(place).write_text(FAKE)
    except OSError:
        pass
OUT = pathlib.Path({str(out)!r})
for place in (OUT / "grades.csv", OUT / "results" / "ada" / "{SLUG}.json"):
    try:
        place.parent.mkdir(parents=True, exist_ok=True)
        place.write_text("forged")
    except OSError:
        pass
"""
        + WRONG
    )


def make_class(root, out):
    """A class: each student's folder as {file name: text}; plus a stray file at the top."""
    students = {
        "ada": {f"{SLUG}.py": REFERENCE, "notes.txt": "my notes"},
        "bo": {f"{SLUG}.py": KATA.variant("eps_added")},
        "cy": {f"{SLUG}.py": "x = bytearray(2**30)\n"},  # a memory bomb at import (MEMORY_MB is the limit)
        "dee": {f"{SLUG}.py": FORK_BOMB},
        "eli": {f"{SLUG}.py": WRONG},
        "eve": {f"{SLUG}.py": forger(out)},
        "fay": {"group_advantage.py": REFERENCE, "notakata.py": "pass\n"},  # wrong names
        "gus": {},  # an empty folder
        "hal": {f"{SLUG}.py": body("import os\nos.kill(os.getppid(), 9)")},  # kills the warm process
        "ian": {f"{SLUG}.py": body("print('x' * 3_000_000)\nwhile True:\n    pass")},
        "jo": {
            f"{SLUG}.py": body(
                "from reference.group_advantages import compute_group_advantages as f\nreturn f(rewards, group_ids, eps)"
            )
        },
        "kim": {f"{SLUG}.py": body("import ctypes\nctypes.string_at(0)")},
        "lee": {f"{SLUG}.py": body("blob = bytearray(2**30)")},  # a memory bomb in a call
        "mo": {f"{SLUG}.py": "def group_advantages(rewards, group_ids):\n    return rewards\n"},
    }
    for student, files in students.items():
        folder = root / student
        folder.mkdir(parents=True)
        for name, text in files.items():
            (folder / name).write_text(text, encoding="utf-8")
    (root / "README.txt").write_text("not a student")
    return students


def bomb_processes() -> list[int]:
    return processes_named(BOMB_NAME)


@pytest.fixture(scope="module")
def graded(tmp_path_factory, kata_main):
    """The class above graded once through `kata grade`: (exit status, output, out folder, sheet)."""
    need_sandbox()
    root = tmp_path_factory.mktemp("class")
    submissions, out = root / "submissions", root / "grades"
    make_class(submissions, out)
    result = kata_main(
        "grade", submissions, "--out", out, "--workers", "2", "--timeout", TIMEOUT, "--memory", MEMORY_MB
    )
    sheet = json.loads((out / "grades.json").read_text(encoding="utf-8"))
    return result, out, sheet, bomb_processes()


def entry(sheet, student):
    return sheet["students"][student][SLUG]


def messages(sheet, student) -> str:
    item = entry(sheet, student)
    return (item["load_error"] or "") + " ".join(check["message"] for check in item["checks"])


@pytest.mark.slow
def test_a_correct_file_gets_full_marks_and_a_misconception_is_named(graded):
    result, _, sheet, _ = graded
    assert result.status == 0, result.output
    assert entry(sheet, "ada")["score"] == 1.0
    bo = entry(sheet, "bo")
    assert 0 < bo["score"] < 1 and bo["diagnosis"] == "eps_added"
    assert any(check["misconception"] == "eps_added" for check in bo["checks"])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("student", "words"),
    [
        ("cy", "memory limit exceeded while loading the file"),
        ("ian", f"did not finish within {TIMEOUT:g} s"),
        ("kim", "crashed (SIGSEGV)"),
        ("lee", "memory limit exceeded (line"),
        ("mo", "no function `compute_group_advantages`"),
        ("jo", "No module named 'reference"),  # in the sandbox the package is not there
    ],
)
def test_each_pathological_file_is_a_failure_with_its_reason(graded, student, words):
    _, _, sheet, _ = graded
    assert entry(sheet, student)["score"] == 0.0
    assert words in messages(sheet, student)


@pytest.mark.slow
def test_killing_the_process_that_forks_contestants_changes_no_grade(graded):
    """hal kills its contestant's parent, the warm process: a fresh one takes over; hal's code is correct."""
    _, _, sheet, _ = graded
    assert entry(sheet, "hal")["score"] == 1.0 and entry(sheet, "ada")["score"] == 1.0


@pytest.mark.slow
def test_a_fork_bomb_is_capped_and_ended_and_nobody_else_is_affected(graded):
    _, _, sheet, leftovers = graded
    assert entry(sheet, "dee")["score"] == 0.0
    assert entry(sheet, "ada")["score"] == 1.0
    if not containment.available():
        pytest.skip("no writable pids cgroup here: processes that left their group live until they exit")
    assert leftovers == []


@pytest.mark.slow
def test_printing_or_writing_result_files_does_not_change_a_score(graded):
    _, out, sheet, _ = graded
    assert entry(sheet, "eve")["score"] == entry(sheet, "eli")["score"] < 1
    rows = {row["student"]: row for row in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}
    assert rows["ada"][COLUMN] == "2" and rows["eve"][COLUMN] == rows["eli"][COLUMN]
    assert json.loads(batch.record_path(out, "ada", SLUG).read_text())["grade"]["score"] == 1.0


@pytest.mark.slow
def test_wrong_names_empty_folders_and_stray_files_are_reported_not_graded(graded):
    result, out, sheet, _ = graded
    assert sheet["strays"]["fay"] == ["notakata.py"]
    assert sheet["misnamed"]["fay"] == {SLUG: ["group_advantage.py"]} and entry(sheet, "fay")["misnamed"]
    assert f"did you mean {SLUG}.py?" in (out / "feedback" / "fay" / f"{SLUG}.txt").read_text(encoding="utf-8")
    assert entry(sheet, "fay")["status"] == "missing" and entry(sheet, "gus")["status"] == "missing"
    assert sheet["ignored"] == ["README.txt"]
    rows = {row["student"]: row for row in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}
    assert rows["gus"][COLUMN] == "" and rows["gus"]["mean"] == "0.0000"
    assert "named after no kata" in result.output and f"did you mean {SLUG}.py?" in result.output


@pytest.mark.slow
def test_the_junit_files_have_a_suite_per_kata_and_a_case_per_check(graded):
    _, out, sheet, _ = graded
    suites = ElementTree.parse(out / "junit" / "bo.xml").getroot()
    (suite,) = suites.findall("testsuite")
    cases = suite.findall("testcase")
    assert suite.get("name") == SLUG and len(cases) == len(entry(sheet, "bo")["checks"])
    failed = [case for case in cases if case.find("failure") is not None]
    assert len(failed) == entry(sheet, "bo")["failed"] == int(suite.get("failures"))
    assert "eps_added" in failed[0].find("failure").text
    gus = ElementTree.parse(out / "junit" / "gus.xml").getroot()
    assert gus.find("testsuite/testcase/failure").get("message") == f"no {SLUG}.py in the folder"


@pytest.mark.slow
def test_the_summary_gives_pass_rates_distribution_misconceptions_and_a_last_line(graded):
    result, _, sheet, _ = graded
    assert "Per kata" in result.output and "Score distribution" in result.output
    assert "eps" in result.output.split("Most common misconceptions")[1]
    assert result.output.strip().splitlines()[-1] == "14 students, 12 files: 2 passed, 10 failed, 2 missing"
    # points (TODO 1 and the contract): ada and hal on top; bo's mistake in TODO 1 costs its point
    # (1 of 2) though it passes 11 of 13 checks; eli's and eve's zeros fail TODO 1 and the contract
    assert gradesheet.score_histogram(sheet) == [11, 0, 1, 0, 2]


@pytest.mark.slow
def test_the_class_report_page_holds_the_sheets_scores_why_each_0_and_the_feedback(graded):
    from test_report_html import Page, cells_of

    from grader.classroom.names import file_name
    from grader.classroom.report_html import zero_reason

    _, out, sheet, _ = graded
    page = Page((out / "report.html").read_text(encoding="utf-8"))
    scores = [entry["score"] for row in sheet["students"].values() for entry in row.values()]
    assert [float(value) for value in page.values("data-score")] == scores  # both rounded to 4 places
    assert sum(map(int, page.values("data-students"))) == len(sheet["students"]) == 14
    reasons = {student: cell.attrs.get("data-reason") for (student, _), cell in cells_of(page).items()}
    assert reasons == {student: zero_reason(entry(sheet, student)) for student in sheet["students"]}
    named = ("ada", "gus", "fay", "cy", "ian", "kim", "eli")  # cy: a memory bomb at import; kim: a segfault
    assert [reasons[student] for student in named] == [
        None,
        "missing",
        "misnamed",
        "load",
        "timeout",
        "crashed",
        "wrong",
    ]
    for student in sheet["students"]:
        section = page.root.one("section", data_student=student)
        said = (out / "feedback" / file_name(student) / f"{SLUG}.txt").read_text(encoding="utf-8")
        assert section.one("pre", class_="feedback").text() == said
        units = {row.attrs["data-unit"]: int(row.attrs["data-got"]) for row in section.all("tr", class_="unit")}
        assert units == (entry(sheet, student)["points"] if entry(sheet, student)["status"] == "graded" else {})
    made = page.root.one("li", class_="made", data_misconception="eps_added")
    assert [link.attrs["data-student"] for link in made.all("a")] == ["bo"]


@pytest.mark.slow
def test_each_student_gets_the_report_kata_check_would_show_and_never_reference_code(graded):
    _, out, sheet, _ = graded
    feedback = out / "feedback"
    bo = (feedback / "bo" / f"{SLUG}.txt").read_text(encoding="utf-8")
    assert "Likely misconception" in bo and "eps" in bo and "Next: TODO 1 first." in bo
    assert bo.splitlines()[-1] == f"{entry(sheet, 'bo')['passed']} passed, {entry(sheet, 'bo')['failed']} failed"
    assert (feedback / "bo" / f"{SLUG}.md").read_text(encoding="utf-8").startswith(f"# {SLUG}: bo\n\n```text\n{bo}")
    assert bo.startswith(f"Points: {sum(entry(sheet, 'bo')['points'].values())} of 2 (TODO 1: ")
    ian = (feedback / "ian" / f"{SLUG}.txt").read_text(encoding="utf-8")
    points, said = ian.split("\n\n", 1)
    assert points == "Points: 0 of 2 (TODO 1: 0 of 1; the input contract: 0 of 1)"
    assert said.count("\n") == 1 and "did not finish within" in said  # hung: one line
    assert (feedback / "gus" / f"{SLUG}.txt").read_text(encoding="utf-8") == (
        f"{points}\n\nno {SLUG}.py in your folder: nothing was graded\n"
    )
    region = KATA.solution().split("# TODO 1")[1].split("# END TODO 1")[0]
    code = [line.strip() for line in region.splitlines()[1:] if line.strip() and not line.strip().startswith("#")]
    texts = [path.read_text(encoding="utf-8") for path in feedback.rglob("*.txt")]
    assert len(texts) == len(sheet["students"]) and code
    assert not [line for line in code for text in texts if line in text]  # the reference's step, nowhere
    reports = [text for text in texts if text.count("\n") > 3]  # the one-line ones say why in one line
    assert reports and all(max(map(len, text.splitlines())) <= 80 for text in reports)


def test_feedback_in_markdown_survives_backticks_in_the_report():
    from grader.classroom.feedback import markdown

    text = "your code printed:\n````\n"
    block = markdown("ada", SLUG, text)
    assert block.startswith(f"# {SLUG}: ada\n\n`````text\n") and block.endswith("\n`````\n")


# -- resuming -----------------------------------------------------------------------------------


def small_class(root):
    for student, text in {"a": REFERENCE, "b": "import os\nos._exit(3)\n", "c": "def f(:\n"}.items():
        (root / student).mkdir(parents=True)
        (root / student / f"{SLUG}.py").write_text(text)


@pytest.mark.slow
def test_a_rerun_grades_only_what_is_missing_or_changed_and_force_regrades(tmp_path):
    submissions, out = tmp_path / "class", tmp_path / "out"
    small_class(submissions)
    settings = batch.Settings(timeout=TIMEOUT)

    def run(force=False):
        seen = []
        roster = batch.discover(submissions, [SLUG], settings)
        done = batch.run_batch(roster, out, 2, force, on_done=lambda record: seen.append(record["student"]))
        return sorted(seen), done

    first, done = run()
    assert first == ["a", "b", "c"] and done.records["a", SLUG]["grade"]["score"] == 1.0
    assert run()[0] == []
    (submissions / "b" / f"{SLUG}.py").write_text(REFERENCE)  # changed
    batch.record_path(out, "c", SLUG).unlink()  # lost in an interruption
    batch.record_path(out, "a", SLUG).write_text("{half a fil")  # torn: not trusted
    again, done = run()
    assert again == ["a", "b", "c"] and done.records["b", SLUG]["grade"]["score"] == 1.0
    assert run()[0] == []
    assert run(force=True)[0] == ["a", "b", "c"]


# -- no grading needed --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        (["grade", "no/such/folder"], "does not exist"),
        (["grade", "{file}"], "is a file"),
        (["grade", "{folder}", "--katas", "group_advantage"], "Did you mean 'group_advantages'"),
        (["grade", "{folder}", "--katas", ","], "name at least one kata"),
        (["grade", "{folder}", "--workers", "0"], "--workers"),
        (["grade", "{folder}", "--course", "{file}"], "is not a course file"),
        (["grade", "{folder}", "--course", "{folder}/none.toml"], "no course file"),
    ],
)
def test_bad_input_is_one_line_and_status_2(tmp_path, kata_main, arguments, words):
    (tmp_path / "file.txt").write_text("x")
    arguments = [a.format(file=tmp_path / "file.txt", folder=tmp_path) for a in arguments]
    status, _, err = kata_main(*arguments)
    assert status == 2
    err = err.strip()
    assert words in err and len(err.splitlines()) == 1


def test_a_folder_without_student_folders_is_refused(tmp_path, kata_main):
    (tmp_path / "stray.py").write_text("x")
    status, _, err = kata_main("grade", tmp_path, "--out", tmp_path / "out")
    assert status == 1
    assert "no student folders" in err


def test_discovery_copies_no_links_and_the_digest_follows_the_file_and_its_siblings(tmp_path):
    folder = tmp_path / "class" / "ann"
    folder.mkdir(parents=True)
    (folder / f"{SLUG}.py").write_text(REFERENCE)
    (folder / "helper.py").write_text("X = 1\n")
    (tmp_path / "secret.txt").write_text("another student's work")
    (folder / "peek.txt").symlink_to(tmp_path / "secret.txt")
    settings = batch.Settings()
    (job,) = batch.discover(tmp_path / "class", None, settings).jobs
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    staging.copy_folder(folder, scratch, f"{SLUG}.py")
    assert sorted(p.name for p in scratch.iterdir()) == [f"{SLUG}.py", "helper.py"]
    (folder / "helper.py").write_text("X = 2\n")
    changed = batch.discover(tmp_path / "class", None, settings).jobs[0].digest
    assert changed != job.digest
    (folder / "dpo_loss.py").write_text("")  # another kata's file is staged too: importable, in the digest
    jobs = {j.slug: j for j in batch.discover(tmp_path / "class", None, settings).jobs}
    assert sorted(jobs) == ["dpo_loss", SLUG] and jobs[SLUG].digest != changed
    assert batch.discover(tmp_path / "class", None, batch.Settings(memory_mb=64)).jobs[0].digest != jobs[SLUG].digest


def test_the_csv_keeps_names_from_running_as_formulas():
    entry = {"status": "graded", "score": 0.5, "points": {"todo1": 1}, "max": 2}
    sheet = {"katas": [SLUG], "points": {SLUG: {"todo1": 1, "contract": 1}}, "students": {"=cmd()": {SLUG: entry}}}
    rows = list(csv.reader(gradesheet.grades_csv(sheet).splitlines()))
    assert rows[1] == ["'=cmd()", "0.5000", "1", "0.5000", ""]


def test_a_file_that_vanishes_while_the_folder_is_copied_is_left_out(tmp_path, monkeypatch):
    """A learner's file in a shared folder (/tmp): other programs' files come and go meanwhile."""
    folder, scratch = tmp_path / "shared", tmp_path / "scratch"
    folder.mkdir()
    scratch.mkdir()
    (folder / "grpo_loss.py").write_text("x = 1\n")
    (folder / "data.txt").write_text("kept\n")
    monkeypatch.setattr(staging, "folder_files", lambda _: ["data.txt", "gone.tmp", "grpo_loss.py"])

    staging.copy_folder(folder, scratch, "grpo_loss.py")

    assert sorted(path.name for path in scratch.iterdir()) == ["data.txt", "grpo_loss.py"]
    (folder / "grpo_loss.py").unlink()
    with pytest.raises(FileNotFoundError):
        staging.copy_folder(folder, tmp_path / "again", "grpo_loss.py")


# -- points per TODO ----------------------------------------------------------------------------

WEIGHTS = {"todo1": 2, "todo2": 1, "todo3": 1, "whole": 1, "contract": 1}


def result_of(failing=(), location=None, whole_fails=False) -> GradeResult:
    """A file graded by a check per TODO, a whole-function check and the contract; `failing` names them."""
    checks = [CheckResult(f"t{n}", "", n, "failed" if f"t{n}" in failing else "passed") for n in (1, 2, 3)]
    checks.append(CheckResult("whole", "", None, "failed" if whole_fails else "passed", whole=True))
    checks.append(CheckResult("contract", "", None, "failed" if "contract" in failing else "passed"))
    return GradeResult(SLUG, "x.py", checks, location=location)


@pytest.mark.parametrize(
    ("result", "kept"),
    [
        (result_of(), WEIGHTS),
        (result_of(["t2"], Location((2,), "transplant")), WEIGHTS | {"todo2": 0}),
        (result_of(["t3"], Location((1, 3), "transplant"), True), WEIGHTS | {"todo3": 0, "whole": 0}),
        (result_of(["t1"], Location((1,), "tags")), WEIGHTS | {"todo1": 0}),
        (result_of(["t1", "t3"], Location((), "outside_todos"), True), WEIGHTS | {"todo1": 0, "todo3": 0, "whole": 0}),
        (result_of(["contract"], Location((), "outside_todos")), WEIGHTS | {"contract": 0}),
        (GradeResult(SLUG, "x.py", [], load_error="SyntaxError"), dict.fromkeys(WEIGHTS, 0)),
    ],
    ids=["passes", "located", "two-todos", "tags", "outside", "contract", "no-checks"],
)
def test_a_todo_loses_its_points_when_one_of_its_checks_fails(result, kept):
    """Its checks only: TODO 1 of "two-todos" is located but keeps its points (tests/test_points.py)."""
    assert gradesheet.earned_points(result, WEIGHTS) == kept


def sheet_of(results: dict, scoring="todos", points=None) -> dict:
    roster = batch.Roster([SLUG], [*results, "zed"], [])
    records = {(student, SLUG): {"grade": result.to_json()} for student, result in results.items()}
    return gradesheet.build_sheet(roster, records, scoring, points)


def test_the_sheet_gives_points_per_todo_and_the_csv_points_of_the_max():
    wrong = result_of(["t1"], Location((1,), "transplant"))
    results = {"ann": result_of(), "bob": wrong}
    sheet = sheet_of(results)
    assert sheet["scoring"] == "todos" and sheet["points"][SLUG] == {"todo1": 1, "contract": 1}
    bob = entry(sheet, "bob")
    assert (bob["points"], bob["max"], bob["score"], bob["scoring"]) == ({"todo1": 0, "contract": 1}, 2, 0.5, "todos")
    rows = list(csv.reader(gradesheet.grades_csv(sheet).splitlines()))
    assert rows == [
        ["student", f"{SLUG} (of 2)", "total (of 2)", "mean", "errors"],
        ["ann", "2", "2", "1.0000", ""],
        ["bob", "1", "1", "0.5000", ""],
        ["zed", "", "0", "0.0000", ""],
    ]
    heavy = sheet_of(results, points={SLUG: {"todo1": 3}})
    assert entry(heavy, "bob")["points"] == {"todo1": 0, "contract": 1} and entry(heavy, "bob")["max"] == 4
    assert list(csv.reader(gradesheet.grades_csv(heavy).splitlines()))[2] == ["bob", "1", "1", "0.2500", ""]
    checks = list(csv.reader(gradesheet.grades_csv(sheet_of(results, "checks")).splitlines()))
    assert checks[:3] == [  # the total is the points earned whatever the scoring
        ["student", SLUG, "total (of 2)", "mean", "errors"],
        ["ann", "1.0000", "2", "1.0000", ""],
        ["bob", "0.8000", "1", "0.8000", ""],
    ]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[group_advantage]\ntodo1 = 2\n", "'group_advantage' names no kata"),
        (f"[{SLUG}]\ntodo2 = 2\n", f"{SLUG} has no 'todo2'; it has `todo1`, `contract`"),
        (f"[{SLUG}]\ntodo1 = -1\n", "must be a whole number >= 0"),
        (f"[{SLUG}]\ntodo1 = 1.5\n", "must be a whole number >= 0"),
        (f"{SLUG} = 3\n", "must be a table"),
        ("[x\n", "--points"),
    ],
)
def test_a_bad_points_file_is_one_line_and_status_2(tmp_path, kata_main, text, words):
    (tmp_path / "points.toml").write_text(text)
    status, _, err = kata_main("grade", tmp_path, "--points", tmp_path / "points.toml")
    assert status == 2
    assert words in err and len(err.strip().splitlines()) == 1


def test_kata_toml_gives_a_todos_points_default_one_and_not_in_the_kata_digest(tmp_path):
    todo = '[[todo]]\nnumber = {}\ntitle = {{en = "x"}}\nhints = {{en = []}}\n'
    head = 'order = 1\ndifficulty = "easy"\nfunctions = ["f"]\ntitle = {en = "x"}\n'
    toml = head + todo.format(1) + "points = 3\n" + todo.format(2)
    (tmp_path / "kata.toml").write_text(toml)
    assert [todo.points for todo in catalogue._load_kata(tmp_path).own_todos] == [3, 1]
    assert catalogue.POINTS_LINE.sub(b"", toml.encode()) == (head + todo.format(1) + todo.format(2)).encode()


@pytest.mark.slow
def test_a_rerun_with_other_points_or_scoring_grades_nothing_and_rescores(tmp_path, kata_main):
    need_sandbox()
    submissions, out = tmp_path / "class", tmp_path / "out"
    small_class(submissions)
    (submissions / "b" / f"{SLUG}.py").write_text(KATA.variant("sample_std"))
    (tmp_path / "points.toml").write_text(f"[{SLUG}]\ntodo1 = 3\n")

    def run(*options):
        result = kata_main("grade", submissions, "--out", out, "--timeout", TIMEOUT, *options)
        return result.out, list(csv.reader((out / "grades.csv").read_text().splitlines()))

    output, rows = run()
    assert "graded 3, unchanged 0" in output and rows[1:] == [
        ["a", "2", "2", "1.0000", ""],
        ["b", "1", "1", "0.5000", ""],
        ["c", "0", "0", "0.0000", ""],
    ]
    output, rows = run("--points", tmp_path / "points.toml")
    assert "graded 0, unchanged 3" in output and rows[0][1] == f"{SLUG} (of 4)"
    assert rows[2] == ["b", "1", "1", "0.2500", ""]
    output, rows = run("--scoring", "checks")
    stored = json.loads(batch.record_path(out, "b", SLUG).read_text())["grade"]["score"]  # 2 of 13 checks
    assert "graded 0, unchanged 3" in output and rows[0][1] == SLUG and rows[2][1] == f"{stored:.4f}" != "0.5000"
