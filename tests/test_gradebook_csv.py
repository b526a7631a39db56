"""grades.csv ready for a gradebook: `--roster FILE.csv` (the class list's columns first, matched to
the folders ignoring case, names on one side only reported), `total (of MAX)`, a mean in which each
kata weighs its points (one worth 0 lowers nothing), natural order, and `--excel`'s copy with a BOM.

Sheets are built from hand-made records (no grading); the one `kata grade` run below replaces the
grading itself (batch.graded_records) with those records, so it costs no worker.
"""

import csv
import io
import json
import os

import pytest

from grader.classroom import batch, class_list, gradesheet, report_html
from grader.classroom.gradesheet import kata_points
from grader.classroom.names import natural_key
from grader.report.results import CheckResult, GradeResult

SMALL = "group_advantages"  # worth 2: todo1, contract
BIG = "dpo_loss"  # worth 6: todo1-4, whole, contract
KATAS = [SMALL, BIG]


def result(slug: str, failing: tuple[str, ...] = ()) -> GradeResult:
    """A file of `slug` with one check per points key (todo1, ..., whole, contract); those in `failing` fail."""
    checks = []
    for key in kata_points(slug):
        status = "failed" if key in failing else "passed"
        todo = int(key.removeprefix("todo")) if key.startswith("todo") else None
        checks.append(CheckResult(key, key, todo, status, "wrong" if status == "failed" else "", whole=key == "whole"))
    return GradeResult(slug, f"{slug}.py", checks)


def sheet_of(results: dict[tuple[str, str], GradeResult], students: list[str], **options) -> dict:
    roster = batch.Roster(KATAS, students, [])
    records = {key: {"grade": graded.to_json()} for key, graded in results.items()}
    return gradesheet.build_sheet(roster, records, **options)


def rows_of(sheet: dict) -> list[list[str]]:
    return list(csv.reader(io.StringIO(gradesheet.grades_csv(sheet))))


def write_roster(path, text: str, bom: bool = False):
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode())
    return path


# -- the class list ---------------------------------------------------------------------------------


def test_a_roster_with_a_bom_reads_its_first_header_without_it(tmp_path):
    path = write_roster(
        tmp_path / "class.csv", "Login,Name,Email\r\nada,Ada L,ada@x.org\r\n,,\r\nbob,Bob\r\n", bom=True
    )
    read = class_list.read_class_list(path)
    assert read == {
        "key": "Login",  # not "\ufeffLogin": the BOM is no part of the header
        "columns": ["Login", "Name", "Email"],
        "rows": [["ada", "Ada L", "ada@x.org"], ["bob", "Bob", ""]],  # the blank row skipped, the short one padded
    }
    assert json.loads(json.dumps(read)) == read  # plain data, to store as it is
    assert class_list.read_class_list(path, "NAME")["key"] == "Name"  # by its header, in any case


def test_a_roster_exported_with_semicolons_is_split_on_them(tmp_path):
    path = write_roster(tmp_path / "class.csv", "Login;Name\nada;Ada L\n")
    assert class_list.read_class_list(path)["rows"] == [["ada", "Ada L"]]


@pytest.mark.parametrize(
    ("content", "options", "words"),
    [
        (None, (), "no roster file"),
        (b"Login\n\xe9\n", (), "is not UTF-8 text"),
        (b"", (), "is empty: a roster starts with a header row"),
        (b"Login,Name\nada,Ada\n", ("--roster-key", "mail"), 'has no column "mail"; its columns: Login, Name'),
        (b"Login,Name\nada,Ada\n ADA ,Ada again\n", (), '"ADA" is on line 2 already (ignoring case)'),
        (b"Login,Name\nada,Ada\n,Nobody\n", (), 'line 3: the key column "Login" is empty'),
        (b"Login,Name\nada,Ada,extra\n", (), "line 2: 3 cells, but the header has 2"),
        (b"Login,login\nada,ada\n", (), 'two columns are headed "Login"'),
    ],
    ids=["missing", "not-utf8", "empty", "no-column", "twice", "blank-key", "long-row", "key-twice"],
)
def test_a_bad_roster_is_one_line_and_status_2_before_any_grading(tmp_path, kata_main, content, options, words):
    path = tmp_path / "class.csv"
    if content is not None:
        path.write_bytes(content)
    (tmp_path / "class" / "ada").mkdir(parents=True)
    status, out, err = kata_main("grade", tmp_path / "class", "--out", tmp_path / "out", "--roster", path, *options)
    assert status == 2 and "--roster" in err
    assert words in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()  # nothing graded, nothing written


def test_a_roster_error_is_in_chinese_with_lang_zh(tmp_path, kata_main):
    path = write_roster(tmp_path / "class.csv", "Login,Name\nada,Ada\n")
    status, _, err = kata_main("grade", tmp_path, "--roster", path, "--roster-key", "mail", "--lang", "zh")
    assert status == 2 and "没有名为“mail”的列；现有的列：Login、Name" in err
    assert len(err.strip().splitlines()) == 1


def test_roster_key_without_a_roster_is_an_error(tmp_path, kata_main):
    status, _, err = kata_main("grade", tmp_path, "--roster-key", "Login")
    assert status == 2 and "pass --roster FILE.csv too" in err and len(err.strip().splitlines()) == 1


def test_a_roster_file_name_is_shown_as_data(tmp_path):
    path = tmp_path / os.fsdecode(b"cla\xffss\n.csv")
    with pytest.raises(class_list.ClassListError) as raised:
        class_list.read_class_list(path)
    assert "cla\\xffss\\n.csv" in str(raised.value) and "\n" not in str(raised.value)


# -- the CSV ----------------------------------------------------------------------------------------

CLASS = {
    "key": "Login",
    "columns": ["ID", "Login", "Email"],
    "rows": [["1", "Ada", "ada@x.org"], ["2", "zoe", "zoe@x.org"], ["3", "carl", "carl@x.org"]],
}


def test_the_roster_columns_lead_and_names_on_one_side_only_are_rows_and_reported():
    results = {("ada", SMALL): result(SMALL), ("bob", SMALL): result(SMALL), ("carl", BIG): result(BIG)}
    sheet = sheet_of(results, ["ada", "bob", "carl"], class_list=CLASS)
    assert rows_of(sheet) == [
        ["ID", "Login", "Email", "student", f"{SMALL} (of 2)", f"{BIG} (of 6)", "total (of 8)", "mean", "errors"],
        ["1", "Ada", "ada@x.org", "ada", "2", "", "2", "0.2500", ""],  # matched ignoring case
        ["", "", "", "bob", "2", "", "2", "0.2500", ""],  # a folder not in the roster: still a row
        ["3", "carl", "carl@x.org", "carl", "", "6", "6", "0.7500", ""],
        ["2", "zoe", "zoe@x.org", "", "", "", "0", "0.0000", ""],  # in the roster, handed in nothing
    ]
    roster = sheet["roster"]
    assert roster["matched"] == {"ada": 0, "carl": 2}
    assert roster["unmatched"] == {"roster": ["zoe"], "folders": ["bob"]}
    assert gradesheet.roster_warnings(sheet) == [
        "in the roster, with no folder (nothing handed in): zoe",
        "folders not in the roster: bob",
    ]
    assert json.loads(json.dumps(sheet))["roster"] == roster  # grades.json holds it as it is
    zh = gradesheet.roster_warnings(sheet, "zh")
    assert zh == ["名单中有、但没有文件夹（什么都没交）：zoe", "不在名单中的文件夹：bob"]


def test_a_roster_row_several_folders_match_is_said():
    sheet = sheet_of({}, ["Ada", "ada"], class_list=CLASS)
    assert sheet["roster"]["several"] == {"Ada": ["Ada", "ada"]}
    assert 'several folders match the roster\'s "Ada": Ada, ada' in gradesheet.roster_warnings(sheet)


def test_each_kata_weighs_its_points_in_the_mean_and_the_total():
    """SMALL full (2 of 2), BIG half (3 of 6): 5 / 8 = 0.625; the mean of fractions would say 0.75."""
    results = {("ann", SMALL): result(SMALL), ("ann", BIG): result(BIG, ("todo1", "todo2", "whole"))}
    sheet = sheet_of(results, ["ann"])
    assert rows_of(sheet)[1] == ["ann", "2", "3", "5", "0.6250", ""]
    assert gradesheet.student_mean(sheet["students"]["ann"]) == 0.625  # what the histogram and the page show
    assert gradesheet.score_histogram(sheet) == [0, 0, 0, 1, 0]
    assert 'data-mean="0.6250"' in report_html.report_html(sheet, "en")
    checks = sheet_of(results, ["ann"], scoring="checks")  # weighted the same with scoring "checks"
    assert rows_of(checks)[1] == ["ann", "1.0000", "0.5000", "5", "0.6250", ""]


def test_a_kata_worth_0_points_is_out_of_the_total_and_the_mean():
    results = {("ann", SMALL): result(SMALL, ("todo1", "contract")), ("ann", BIG): result(BIG)}
    free = sheet_of(results, ["ann"], points={SMALL: {"todo1": 0, "contract": 0}})
    assert rows_of(free)[0][1:4] == [f"{SMALL} (of 0)", f"{BIG} (of 6)", "total (of 6)"]
    assert rows_of(free)[1] == ["ann", "0", "6", "6", "1.0000", ""]  # not (0 + 1) / 2
    assert rows_of(sheet_of(results, ["ann"]))[1] == ["ann", "0", "6", "6", "0.7500", ""]  # worth 2, it counts


def test_a_kata_in_error_stays_out_of_the_mean():
    ann = batch.Job("ann", SMALL, None, "", batch.Settings())
    records = {("ann", SMALL): batch.error_record(ann, "the warm process did not start")}
    records["ann", BIG] = {"grade": result(BIG).to_json()}
    sheet = gradesheet.build_sheet(batch.Roster(KATAS, ["ann"], []), records)
    assert rows_of(sheet)[1] == ["ann", "", "6", "6", "1.0000", SMALL]


def test_rows_are_in_natural_case_insensitive_order(tmp_path):
    names = ["student10", "Carl", "student2", "bob", "Student3"]
    order = ["bob", "Carl", "student2", "Student3", "student10"]
    assert sorted(names, key=natural_key) == order
    assert [row[0] for row in rows_of(sheet_of({}, names))[1:]] == order
    for name in names:
        (tmp_path / name).mkdir()
    assert batch.discover(tmp_path, None, batch.Settings()).students == order  # grades.json and the page too


def test_unmatched_roster_rows_fall_into_the_natural_order():
    listed = {"key": "Login", "columns": ["Login"], "rows": [["s10"], ["S2"], ["s1"]]}
    sheet = sheet_of({}, ["s3", "s1"], class_list=listed)
    assert [(row[0], row[1]) for row in rows_of(sheet)[1:]] == [("s1", "s1"), ("S2", ""), ("", "s3"), ("s10", "")]


def test_every_cell_is_defused_roster_columns_too():
    hostile = {"key": "@id", "columns": ["@id", "=cmd"], "rows": [["-ada", "+1"], ["=zed", "\tx"]]}
    sheet = sheet_of({}, ["-ada"], class_list=hostile)
    rows = rows_of(sheet)
    assert rows[0][:3] == ["'@id", "'=cmd", "student"]
    assert rows[1][:3] == ["'-ada", "'+1", "'-ada"] and rows[2][:3] == ["'=zed", "'\tx", ""]


def test_excel_writes_the_same_rows_with_a_bom_and_a_stale_copy_goes(tmp_path):
    listed = {"key": "Login", "columns": ["Login", "Name"], "rows": [["jose", "José"]]}
    sheet = sheet_of({("jose", SMALL): result(SMALL)}, ["jose"], class_list=listed)
    written = gradesheet.write_sheet(sheet, tmp_path, excel=True)
    excel = tmp_path / "grades-excel.csv"
    assert excel in written
    data = excel.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") and not (tmp_path / "grades.csv").read_bytes().startswith(b"\xef")
    assert data.decode("utf-8-sig") == (tmp_path / "grades.csv").read_text(encoding="utf-8")
    assert list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))[1][:2] == ["jose", "José"]
    gradesheet.write_sheet(sheet, tmp_path)
    assert not excel.exists()  # no stale grades beside fresh ones


# -- one `kata grade` run -----------------------------------------------------------------------------


def test_kata_grade_with_a_roster_and_excel(tmp_path, kata_main, monkeypatch, isolated):
    """Folders ada, Bob, cy; a roster (with a BOM, keyed by its second column) of ADA, bob and dan;
    SMALL made worth 0 by --points. Grading is replaced by fixed results, so no worker runs."""
    submissions, out = tmp_path / "class", tmp_path / "out"
    for student in ("ada", "Bob", "cy"):
        (submissions / student).mkdir(parents=True)
        (submissions / student / f"{SMALL}.py").write_text("x = 1\n")
    (submissions / "ada" / f"{BIG}.py").write_text("x = 1\n")
    fixed = {("ada", SMALL): result(SMALL), ("ada", BIG): result(BIG, ("whole",))}
    fixed |= {("Bob", SMALL): result(SMALL, ("todo1",)), ("cy", SMALL): result(SMALL)}

    def graded_records(jobs, workers):
        yield from (batch._record(job, fixed[job.student, job.slug], 0.1) for job in jobs)

    monkeypatch.setattr(batch, "graded_records", graded_records)
    monkeypatch.setattr("grader.run.sandbox.problem", lambda: None)
    roster = write_roster(tmp_path / "class.csv", "Name,Login\r\nAda L,ADA\r\nBob B,bob\r\nDan D,dan\r\n", bom=True)
    (tmp_path / "points.toml").write_text(f"[{SMALL}]\ntodo1 = 0\ncontract = 0\n")
    options = ("--roster", roster, "--roster-key", "login", "--excel", "--points", tmp_path / "points.toml")
    run = kata_main("grade", submissions, "--out", out, "--workers", "1", *options)

    assert run.status == 0, run.err
    assert "in the roster, with no folder (nothing handed in): dan" in run.out
    assert "folders not in the roster: cy" in run.out and "grades-excel.csv" in run.out
    rows = list(csv.reader((out / "grades-excel.csv").read_text(encoding="utf-8-sig").splitlines()))
    assert rows == [
        ["Name", "Login", "student", f"{BIG} (of 6)", f"{SMALL} (of 0)", "total (of 6)", "mean", "errors"],
        ["Ada L", "ADA", "ada", "5", "0", "5", "0.8333", ""],
        ["Bob B", "bob", "Bob", "", "0", "0", "0.0000", ""],
        ["", "", "cy", "", "0", "0", "0.0000", ""],
        ["Dan D", "dan", "", "", "", "0", "0.0000", ""],
    ]
    sheet = json.loads((out / "grades.json").read_text(encoding="utf-8"))
    assert sheet["roster"]["key"] == "Login" and sheet["roster"]["columns"] == ["Name", "Login"]
    assert sheet["roster"]["unmatched"] == {"roster": ["dan"], "folders": ["cy"]}
