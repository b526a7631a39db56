"""`kata grade`'s rerun key: a stored verdict is reused only for the same input.

The key (grader.classroom.batch.digest) covers every file a contestant can read of the student's
folder, exactly what staging copies (grader.run.staging.staged_names), and every setting that can
change whether a check passes. The language, the scoring, the points and the feedback's kind
(--feedback) are not in it: a record holds each failed check's message in every language, and a
rerun that changes only those renders the stored records again without grading.
"""

import json
import os
from dataclasses import fields, replace
from xml.etree import ElementTree

import pytest
from conftest import need_sandbox

from grader.classroom import batch, feedback, gradesheet
from grader.content import seeds
from grader.content.catalogue import get_kata
from grader.content.i18n import in_each, phrase, speaking
from grader.report.results import CheckResult, GradeResult
from grader.run import staging

SLUG = "group_advantages"
KATA = get_kata(SLUG)
REFERENCE = KATA.solution()
SIBLING = "kl_estimators"  # another kata's name: a file of that name is staged too, and importable
TIMEOUT = 3.0
WRONG = "def compute_group_advantages(rewards, group_ids, eps=1e-6):\n    return rewards * 0\n"
DEFAULTS = batch.Settings()
GRADING = batch.Settings(timeout=TIMEOUT)
NOT_DATA = "def compute_group_advantages(rewards, group_ids, eps=1e-6):\n    return object()\n"


def digest_of(folder, settings=DEFAULTS) -> str:
    return batch.digest(folder, SLUG, settings, staging.folder_files(folder))


def staged(folder, scratch) -> set[str]:
    """The files staging copies of `folder` for SLUG.py, relative to it."""
    scratch.mkdir()
    staging.copy_folder(folder, scratch, f"{SLUG}.py")
    return {path.relative_to(scratch).as_posix() for path in scratch.rglob("*") if path.is_file()}


# -- the key ------------------------------------------------------------------------------------


def test_the_rerun_key_changes_exactly_when_a_file_staging_copies_changes(tmp_path):
    """Every file of the folder is changed in turn: the key follows the staged ones, and only them."""
    folder = tmp_path / "ann"
    (folder / "sub").mkdir(parents=True)
    (folder / "__pycache__").mkdir()
    (folder / ".git").mkdir()
    odd = os.fsdecode(b"caf\xe9.py")  # not UTF-8: staged all the same
    files = {
        f"{SLUG}.py": REFERENCE,
        f"{SIBLING}.py": "X = 1\n",
        "helper.py": "Y = 1\n",
        odd: "Z = 1\n",
        "sub/data.txt": "1\n",
        ".hidden": "secret\n",
        ".git/config": "[core]\n",
        "__pycache__/helper.cpython-311.pyc": "cache\n",
    }
    for name, text in files.items():
        (folder / name).write_text(text)
    (tmp_path / "elsewhere.txt").write_text("another student's\n")
    (folder / "peek.txt").symlink_to(tmp_path / "elsewhere.txt")
    copied = staged(folder, tmp_path / "scratch")
    assert {f"{SIBLING}.py", odd, "sub/data.txt"} <= copied and ".git/config" not in copied  # both sides
    for name in [*files, "peek.txt"]:
        before = digest_of(folder)
        path = folder / name if name != "peek.txt" else tmp_path / "elsewhere.txt"
        path.write_text(path.read_text() + "# changed\n")
        assert (digest_of(folder) != before) == (name in copied), name


def test_the_rerun_key_holds_file_names_as_bytes_and_no_two_folders_alike(tmp_path):
    """Names that differ only in bytes that are not UTF-8 differ; moving bytes between files changes the key."""
    folder = tmp_path / "ann"
    folder.mkdir()
    (folder / f"{SLUG}.py").write_text(REFERENCE)
    first, second = folder / os.fsdecode(b"a\xe9.py"), folder / os.fsdecode(b"a\xe8.py")
    first.write_text("X = 1\n")
    before = digest_of(folder)
    first.rename(second)
    assert digest_of(folder) != before
    second.write_text("")  # its bytes moved into the kata file's end: the same bytes in all, another folder
    (folder / f"{SLUG}.py").write_text(REFERENCE + "X = 1\n")
    assert digest_of(folder) != before


def test_every_setting_is_in_the_rerun_key(tmp_path):
    """Each field of Settings can change whether a check passes: changing any one changes the key."""
    folder = tmp_path / "ann"
    folder.mkdir()
    (folder / f"{SLUG}.py").write_text(REFERENCE)
    base = batch.Settings()
    course = tmp_path / "course.toml"
    seeds.write_course(course, seeds.new_course())
    keys = {digest_of(folder, base)}
    for item in fields(base):
        value = getattr(base, item.name)
        other = not value if type(value) is bool else f"{value}x" if type(value) is str else value * 2
        other = str(course) if item.name == "course" else other
        keys.add(digest_of(folder, replace(base, **{item.name: other})))
    seeds.write_course(course, seeds.new_course())  # another course, in the same file: graded again
    keys.add(digest_of(folder, replace(base, course=str(course))))
    assert len(keys) == len(fields(base)) + 2
    assert not {"lang", "scoring", "points", "feedback"} & {item.name for item in fields(base)}  # shown, not graded


# -- every language in a record, shown in one ---------------------------------------------------


def test_a_message_worded_from_data_is_written_in_every_language_at_once():
    """A timeout, the learner's line of an exception, a missing function need no second run: each is
    worded when asked."""
    from grader.judging import outcomes
    from grader.judging.expect import NoFunction
    from grader.run.judge import Ending, Stopped, to_exception
    from grader.run.wire import End

    errors = [
        Stopped(Ending(End.TIMEOUT, where="f")),
        to_exception({"type": "ValueError", "message": "no", "where": [3, "f", "x = 1"]}),
        NoFunction("compute_group_advantages"),
    ]
    for error in errors:
        assert outcomes.from_exception(error, TIMEOUT).rewordable
        words = in_each(["en", "zh"], lambda: outcomes.from_exception(error, TIMEOUT).message)  # noqa: B023
        for lang in ("en", "zh"):
            with speaking(lang):
                assert words[lang] == outcomes.from_exception(error, TIMEOUT).message
        assert words["en"] != words["zh"]
    assert not outcomes.from_exception(AssertionError("the check's own words"), TIMEOUT).rewordable


def stored() -> dict:
    """A record like `kata grade`'s: a failed check and a file that did not load, in both languages."""
    check = CheckResult("t1", "title", 1, "failed", "got 1", messages={"en": "got 1", "zh": "实际为 1"})
    loaded = GradeResult(SLUG, "a.py", [check, CheckResult("t2", "other", 1, "passed")])
    broken = GradeResult(
        SLUG, "b.py", [], load_error="SyntaxError on line 1", load_errors={"zh": "第 1 行有 SyntaxError"}
    )
    return {("a", SLUG): {"grade": loaded.to_json()}, ("b", SLUG): {"grade": broken.to_json()}}


@pytest.mark.parametrize(
    ("lang", "message", "load_error"), [("en", "got 1", "on line 1"), ("zh", "实际为 1", "第 1 行")]
)
def test_a_stored_result_is_shown_in_the_language_asked_for(lang, message, load_error):
    records = stored()
    roster = batch.Roster([SLUG], ["a", "b"], [])
    sheet = gradesheet.build_sheet(roster, records, lang=lang)
    assert sheet["students"]["a"][SLUG]["checks"][0]["message"] == message
    assert load_error in sheet["students"]["b"][SLUG]["load_error"]
    suite = ElementTree.fromstring(gradesheet.junit_xml("a", sheet["students"]["a"]))
    assert suite.find("testsuite/testcase/failure").get("message") == message
    assert message in feedback.feedback_text(SLUG, records["a", SLUG], lang)
    assert load_error in feedback.feedback_text(SLUG, records["b", SLUG], lang)


# -- reruns of a class ----------------------------------------------------------------------------


def graded_students(submissions, out, settings=GRADING) -> tuple[list[str], batch.BatchRun]:
    seen = []
    roster = batch.discover(submissions, [SLUG], settings)
    done = batch.run_batch(roster, out, 1, on_done=lambda record: seen.append(record["student"]))
    return seen, done


@pytest.mark.slow
def test_a_rerun_grades_again_after_an_imported_sibling_named_after_another_kata_changed(tmp_path):
    need_sandbox()
    submissions, out = tmp_path / "class", tmp_path / "out"
    (submissions / "a").mkdir(parents=True)
    (submissions / "a" / f"{SLUG}.py").write_text(f"from {SIBLING} import compute_group_advantages  # noqa\n")
    (submissions / "a" / f"{SIBLING}.py").write_text(REFERENCE)

    seen, done = graded_students(submissions, out)
    first = done.records["a", SLUG]["grade"]
    assert seen == ["a"] and first["failed"] == 0 < first["passed"]
    assert graded_students(submissions, out)[0] == []  # unchanged: reused
    (submissions / "a" / f"{SIBLING}.py").write_text(WRONG)
    seen, done = graded_students(submissions, out)
    assert seen == ["a"] and done.records["a", SLUG]["grade"]["failed"] > 0  # the grade follows the sibling


@pytest.mark.slow
def test_a_rerun_with_another_timeout_memory_or_sandbox_grades_again(tmp_path, kata_main):
    need_sandbox()
    submissions, out = tmp_path / "class", tmp_path / "out"
    (submissions / "a").mkdir(parents=True)
    (submissions / "a" / f"{SLUG}.py").write_text(REFERENCE)
    options = ["--timeout", str(TIMEOUT)]
    runs = [([], 1), ([], 0), (["--timeout", str(TIMEOUT + 1)], 1), (["--memory", "512"], 1), (["--no-sandbox"], 1)]
    for change, graded in runs:
        options += change  # each run differs from the one before in one setting, or in none
        run = kata_main("grade", submissions, "--out", out, "--workers", "1", *options)
        assert run.status == 0, run.out + run.err
        assert f"graded {graded}, unchanged {1 - graded}" in run.out, (change, run.out)


@pytest.mark.slow
def test_a_rerun_with_only_lang_scoring_points_or_feedback_grades_nothing_and_speaks_that_language(tmp_path, kata_main):
    """zh after en: the stored failures read in Chinese, as `kata check --lang zh` words them; en again after."""
    from grader.run import wire
    from grader.run.grading import run_checks

    need_sandbox()
    submissions, out = tmp_path / "class", tmp_path / "out"
    files = {"a": REFERENCE, "b": KATA.variant("eps_added"), "c": "def f(:\n", "d": NOT_DATA}
    for student, text in files.items():
        (submissions / student).mkdir(parents=True)
        (submissions / student / f"{SLUG}.py").write_text(text)
    (tmp_path / "points.toml").write_text(f"[{SLUG}]\ntodo1 = 3\n")

    def grade(*options):
        run = kata_main("grade", submissions, "--out", out, "--workers", "2", "--timeout", TIMEOUT, *options)
        assert run.status == 0, run.out + run.err
        sheet = json.loads((out / "grades.json").read_text(encoding="utf-8"))
        return run.out, sheet

    def failures(sheet, student) -> list[str]:
        return [check["message"] for check in sheet["students"][student][SLUG]["checks"] if check["status"] != "passed"]

    def record(student) -> dict:
        return json.loads(batch.record_path(out, student, SLUG).read_text(encoding="utf-8"))["grade"]

    output, sheet = grade()
    assert "graded 4, unchanged 0" in output
    english = failures(sheet, "b")
    output, sheet = grade("--lang", "zh")
    assert phrase("zh", "grade_wrote", graded=0, reused=4, wrote="").split("；")[0] in output
    oracle = run_checks(KATA, submissions / "b" / f"{SLUG}.py", TIMEOUT, lang="zh")  # `kata check --lang zh`
    wanted = [check.message for check in oracle.checks if check.status != "passed"]
    assert failures(sheet, "b") == wanted != english and wanted
    assert all(check.messages == {} for check in oracle.checks)  # one language only: kata check pays for no other
    text = (out / "feedback" / "b" / f"{SLUG}.txt").read_text(encoding="utf-8")
    assert all(line.strip() in text for line in wanted[0].splitlines()[1:3])
    junit = ElementTree.parse(out / "junit" / "b.xml").getroot().find("testsuite/testcase/failure")
    assert junit.text.startswith(wanted[0])
    with speaking("zh"):
        refusal = wire.refusal(object())  # worded by the contestant, in the language of the run that asked
    assert failures(sheet, "d") and all(refusal in message for message in failures(sheet, "d"))
    zh_error = record("c")["load_errors"]["zh"]
    assert zh_error != record("c")["load_errors"]["en"] and zh_error in sheet["students"]["c"][SLUG]["load_error"]
    assert zh_error.split("\n")[0] in (out / "feedback" / "c" / f"{SLUG}.txt").read_text(encoding="utf-8")

    output, sheet = grade(
        "--lang", "en", "--scoring", "checks", "--points", tmp_path / "points.toml", "--feedback", "full"
    )
    assert "graded 0, unchanged 4" in output and sheet["scoring"] == "checks" and sheet["points"][SLUG]["todo1"] == 3
    assert failures(sheet, "b") == english == [m["en"] for m in (c["messages"] for c in record("b")["checks"]) if m]
    text = (out / "feedback" / "b" / f"{SLUG}.txt").read_text(encoding="utf-8")
    assert all(line.strip() in text for line in english[0].splitlines()[1:3]) and "应为" not in text
