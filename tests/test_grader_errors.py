"""A failure of the grader is never a grade (issue 27, item 4).

A file whose grading gave no result, or a check of which crashed, is the file's doing only if the
same worker then grades the control file (the kata's reference) cleanly; otherwise it is an
`error`: no grade, an empty cell and an `errors` column in the CSV, said in the summary and on the
class page, `kata grade` exits 3, run_autograder writes no results.json. A rerun grades it again.

The grader is broken on purpose through a sitecustomize.py put on PYTHONPATH for the command: every
Python process started with it (the workers, not this one) loads it first. The hostile files whose
crashes stay their own are graded in test_grade (the class fixture exits 0) and test_hostile (its
fixture refuses an error record).
"""

import csv
import json
import os
import subprocess
import textwrap

import pytest
from conftest import need_sandbox
from test_gradescope import fake_root

from grader.classroom import batch, gradescope, gradesheet, report_html
from grader.content.catalogue import get_kata
from grader.report.results import CheckResult, GradeResult

SLUG = "group_advantages"
KATA = get_kata(SLUG)
BREAKS = {
    # the worker's warm process cannot start: every task it is given comes back as the grader's failure
    "warm": """
        from grader.run import warm
        def start(*args, **kwargs):
            raise OSError("the test broke the warm process's start")
        warm.start = start
    """,
    # the worker dies in every judge it would fork, the control file's too
    "die": """
        import os
        from grader.classroom import batch
        batch._judge = lambda *args: os._exit(70)
    """,
}


def breaking(tmp_path, monkeypatch, how: str) -> None:
    """Break the grader `how` (BREAKS) in every Python process started from now on."""
    hook = tmp_path / f"break-{how}"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import os\nif os.environ.get('KATA_TEST_BREAK') == " + repr(how) + ":\n" + textwrap.indent(
            textwrap.dedent(BREAKS[how]).strip(), "    "
        ) + "\n"
    )  # fmt: skip
    monkeypatch.setenv("PYTHONPATH", str(hook))
    monkeypatch.setenv("KATA_TEST_BREAK", how)


def a_class(root):
    for student, text in {"ada": KATA.solution(), "bo": KATA.variant("eps_added")}.items():
        (root / student).mkdir(parents=True)
        (root / student / f"{SLUG}.py").write_text(text)
    return root


def csv_rows(out) -> dict[str, dict]:
    return {row["student"]: row for row in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}


@pytest.mark.slow
@pytest.mark.parametrize("how", sorted(BREAKS))
def test_a_broken_grader_gives_errors_not_grades_and_a_rerun_grades_them(tmp_path, monkeypatch, kata_main, how):
    need_sandbox()
    submissions, out = a_class(tmp_path / "class"), tmp_path / "grades"
    breaking(tmp_path, monkeypatch, how)
    broken = kata_main("grade", submissions, "--out", out, "--workers", "1")
    assert broken.status == 3, broken.output
    assert "the grader failed on ada/group_advantages.py, not a grade" in broken.err
    sheet = json.loads((out / "grades.json").read_text())
    assert {student: row[SLUG]["status"] for student, row in sheet["students"].items()} == {
        "ada": "error",
        "bo": "error",
    }
    rows = csv_rows(out)
    assert rows["ada"][f"{SLUG} (of 2)"] == "" and rows["ada"]["errors"] == SLUG
    assert " ".join("the grader failed on 2 files (not graded)".split()) in " ".join(broken.output.split())
    assert "grader error" in (out / "report.html").read_text()
    assert "ada" in [path.name for path in (out / "results").iterdir()]  # stored, and not reused:

    monkeypatch.delenv("KATA_TEST_BREAK")
    mended = kata_main("grade", submissions, "--out", out, "--workers", "1")
    assert mended.status == 0, mended.output
    assert "graded 2, unchanged 0" in mended.output
    rows = csv_rows(out)
    assert rows["ada"][f"{SLUG} (of 2)"] == "2" and rows["ada"]["errors"] == "" and rows["bo"]["errors"] == ""


@pytest.mark.slow
def test_run_autograder_writes_no_results_when_the_grader_fails(tmp_path, monkeypatch):
    need_sandbox()
    breaking(tmp_path, monkeypatch, "warm")
    root = tmp_path / "root"
    command = fake_root(root, {f"{SLUG}.py": KATA.solution()})
    env = os.environ | {gradescope.ROOT_VARIABLE: str(root)}
    ran = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 3, ran.stderr
    assert not (root / "results" / "results.json").exists()
    assert "the grader failed on group_advantages.py (not a grade)" in ran.stderr


# -- the sheet, from records ------------------------------------------------------------------


def job(student: str) -> batch.Job:
    return batch.Job(student, SLUG, None, "digest", batch.Settings())


def passing() -> GradeResult:
    return GradeResult(SLUG, f"{SLUG}.py", [CheckResult("values", "Values", 1, "passed")])


def sheet_of(records: dict) -> dict:
    roster = batch.Roster([SLUG, "dpo_loss"], sorted({student for student, _ in records}), [])
    return gradesheet.build_sheet(roster, records)


def test_an_error_is_an_empty_cell_an_errors_column_and_no_part_of_the_mean():
    ada = batch._record(job("ada"), passing(), 1.0)
    bo = batch.error_record(job("bo"), "the warm process did not start")
    sheet = sheet_of({("ada", SLUG): ada, ("bo", SLUG): bo})
    assert sheet["students"]["bo"][SLUG]["status"] == "error"
    assert gradesheet.errors(sheet) == [("bo", SLUG, "the warm process did not start")]
    rows = {row[0]: row for row in csv.reader(gradesheet.grades_csv(sheet).splitlines())}
    assert rows["student"][-1] == "errors"
    assert rows["bo"][1] == "" and rows["bo"][-1] == SLUG and rows["ada"][-1] == ""
    assert gradesheet.student_mean(sheet["students"]["bo"]) == 0.0  # dpo_loss missing: 0, the error left out
    # each kata weighs its points: group_advantages 2 of 2, dpo_loss (worth 6) missing: 2 / 8, not (1 + 0) / 2
    assert gradesheet.student_mean(sheet["students"]["ada"]) == 0.25
    assert "the grader failed on 1 file (not graded)" in gradesheet.summary_line(sheet)
    assert 'class="error"' in report_html.report_html(sheet, "en")
    junit = gradesheet.junit_xml("bo", sheet["students"]["bo"])
    assert "the grader failed (not a grade): the warm process did not start" in junit


def test_an_error_record_is_never_reused(tmp_path):
    folder = tmp_path / "ada"
    folder.mkdir()
    (folder / f"{SLUG}.py").write_text("x = 1\n")
    settings = batch.Settings()
    graded = batch.Job("ada", SLUG, folder, batch.digest(folder, SLUG, settings, []), settings)
    batch.save_record(tmp_path, batch.failed_record(graded, "crashed", 0.0))
    assert batch.load_record(tmp_path, graded) is not None
    batch.save_record(tmp_path, batch.error_record(graded, "the grader failed"))
    assert batch.load_record(tmp_path, graded) is None
