"""Graded feedback never gives the fix (issue 28, property 5).

What `kata grade` and Gradescope hand back tells a known mistake by its graded title and explanation
(katas/*/misconceptions.toml: what went wrong, in words, never the corrected code) and never points
to `kata solution`; `--feedback full` gives `kata check`'s text again. The feedback's kind only
changes how stored results are shown: a rerun that changes it grades nothing.
"""

import io
import json
import zipfile

import pytest
from cli_support import squash
from conftest import need_sandbox
from gradescope_schema import check_results
from rich.console import Console

from grader.classroom import batch, gradescope
from grader.content.catalogue import get_kata
from grader.content.i18n import phrase
from grader.report.results import CheckResult, GradeResult
from grader.report.styles import THEME
from grader.report.terminal import build_report

SLUG = "group_advantages"
KATA = get_kata(SLUG)
OTHER = "kl_estimators"  # handed in right, to Gradescope: its feedback is the "all checks pass" one
TIMEOUT = 3.0
STUDENTS = {  # name: (file, the misconception it is, or None)
    "ada": (KATA.solution(), None),
    "bo": (KATA.variant("eps_added"), "eps_added"),
    "cy": (KATA.variant("view_assumes_contiguous_groups"), "view_assumes_contiguous_groups"),  # a graded title
}
SOLUTION = "kata solution"


def told_in_full(lang: str) -> list[str]:
    """What only `kata check`'s text says of the kata's mistakes: every explanation, and each title that
    has a graded one, whitespace removed (rich wraps Chinese between any two characters)."""
    items = KATA.misconceptions
    full = [item.explanation_in(lang) for item in items]
    full += [item.title_in(lang) for item in items if item.title_in(lang) != item.title_in(lang, graded=True)]
    return [squash(text) for text in full]


def assert_graded(text: str, mistake: str | None, lang: str) -> None:
    """`text` tells `mistake` (a misconception's id) by its graded words only, and never `kata solution`."""
    flat = squash(text)
    assert squash(SOLUTION) not in flat, text
    assert not [words for words in told_in_full(lang) if words in flat], text
    if mistake:
        item = KATA.misconception(mistake)
        assert squash(item.explanation_in(lang, graded=True)) in flat, text
        assert squash(item.title_in(lang, graded=True)) in flat, text


def assert_full(text: str, mistake: str | None, lang: str) -> None:
    """`text` is `kata check`'s: the explanation of `mistake`, else the pointer to the reference."""
    if mistake:
        assert squash(KATA.misconception(mistake).explanation_in(lang)) in squash(text), text
    else:
        assert squash(f"{SOLUTION} {SLUG}") in squash(text), text


# -- the report ---------------------------------------------------------------------------------


def result_of(mistake: str | None) -> GradeResult:
    """A result of SLUG: every check passed, or one failed the way `mistake` fails it."""
    checks = [CheckResult("pop_std", "The scale is the population std", 1, "passed")]
    if mistake:
        checks.append(
            CheckResult("eps", "eps floors the std", 1, "failed", "expected 1, got 2", mistake, matches=[mistake])
        )
    return GradeResult(SLUG, f"{SLUG}.py", checks)


def printed(result: GradeResult, lang: str, graded: bool) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=80, theme=THEME, color_system=None).print(
        build_report(result, KATA, lang, f"{SLUG}.py", graded=graded)
    )
    return buffer.getvalue()


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("mistake", [None, "eps_added", "view_assumes_contiguous_groups"])
def test_a_graded_report_tells_a_mistake_in_words_and_never_points_to_the_solution(mistake, lang):
    graded = printed(result_of(mistake), lang, graded=True)
    assert_graded(graded, mistake, lang)
    assert_full(printed(result_of(mistake), lang, graded=False), mistake, lang)
    if not mistake:
        assert phrase(lang, "next_done_graded") in graded


@pytest.mark.parametrize("command", ["grade", "gradescope"])
def test_an_unknown_feedback_is_one_line_and_status_2(command, tmp_path, kata_main):
    (tmp_path / "class" / "ada").mkdir(parents=True)
    what = tmp_path / "class" if command == "grade" else SLUG
    run = kata_main(command, what, "--feedback", "some", "--out", tmp_path / "out")
    assert run.status == 2 and "'some' is not one of 'graded', 'full'" in run.err
    assert len(run.err.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_the_autograder_keeps_the_feedback_asked_for(tmp_path):
    def config(kind: str) -> dict:
        gradescope.build_zip(gradescope.Autograder((SLUG,), feedback=kind), tmp_path / "a.zip")
        with zipfile.ZipFile(tmp_path / "a.zip") as archive:
            return json.loads(archive.read(gradescope.CONFIG))

    assert "feedback" not in config("graded") and config("full")["feedback"] == "full"
    with pytest.raises(gradescope.GradescopeError, match="feedback 'some'"):
        config("some")


# -- kata grade ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory, kata_main):
    """STUDENTS graded once by `kata grade`; `feedback(*options)` runs it again with `options` and
    returns {student: feedback text}, after checking that it graded nothing again."""
    need_sandbox()
    root = tmp_path_factory.mktemp("graded")
    submissions, out = root / "class", root / "out"
    for student, (text, _) in STUDENTS.items():
        (submissions / student).mkdir(parents=True)
        (submissions / student / f"{SLUG}.py").write_text(text, encoding="utf-8")

    def grade(*options) -> str:
        run = kata_main("grade", submissions, "--out", out, "--workers", "2", "--timeout", TIMEOUT, *options)
        assert run.status == 0, run.out + run.err
        return run.out

    assert f"graded {len(STUDENTS)}, unchanged 0" in grade()

    def feedback(*options) -> dict[str, str]:
        lang = "zh" if "zh" in options else "en"
        unchanged = phrase(lang, "grade_wrote", graded=0, reused=len(STUDENTS), wrote="").split(";")[0].split("；")[0]
        assert unchanged in grade(*options)
        files = {student: out / "feedback" / student / f"{SLUG}.txt" for student in STUDENTS}
        return {student: path.read_text(encoding="utf-8") for student, path in files.items()}

    diagnoses = {
        student: GradeResult.from_json(json.loads(batch.record_path(out, student, SLUG).read_text())["grade"]).diagnosis
        for student in STUDENTS
    }
    assert diagnoses == {student: mistake for student, (_, mistake) in STUDENTS.items()}
    return feedback


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_kata_grade_hands_back_graded_feedback_and_full_on_request_grading_nothing_again(graded_class, lang):
    graded = graded_class(
        "--lang", lang, "--feedback", "graded"
    )  # given: the last run, in the other language, was full
    full = graded_class("--lang", lang, "--feedback", "full")
    for student, (_, mistake) in STUDENTS.items():
        assert_graded(graded[student], mistake, lang)
        assert_full(full[student], mistake, lang)
        assert max(map(len, graded[student].splitlines())) <= 80
    assert phrase(lang, "next_done_graded") in graded["ada"]


# -- Gradescope ---------------------------------------------------------------------------------


def results_json(root, lang: str, feedback: str) -> dict:
    """run_autograder's results.json for a submission of bo's SLUG.py and a right OTHER.py."""
    (root / "source").mkdir(parents=True)
    (root / "submission").mkdir()
    (root / "submission" / f"{SLUG}.py").write_text(STUDENTS["bo"][0], encoding="utf-8")
    (root / "submission" / f"{OTHER}.py").write_text(get_kata(OTHER).solution(), encoding="utf-8")
    config = {"slugs": [SLUG, OTHER], "scoring": "todos", "visibility": "hidden", "lang": lang, "feedback": feedback}
    config |= {"output_format": "text"}  # compared as plain text
    (root / "source" / gradescope.CONFIG).write_text(json.dumps(config), encoding="utf-8")
    return json.loads(gradescope.run(root).read_text(encoding="utf-8"))


@pytest.mark.slow
@pytest.mark.parametrize(("lang", "feedback"), [("en", "graded"), ("zh", "graded"), ("en", "full")])
def test_gradescope_results_hold_the_feedback_asked_for(tmp_path, lang, feedback):
    results = results_json(tmp_path / "autograder", lang, feedback)
    check_results(results)
    outputs = {
        slug: [test["output"] for test in results["tests"] if test["name"].startswith(f"{slug}: ")]
        for slug in (SLUG, OTHER)
    }
    assert outputs[SLUG] and outputs[OTHER] and results["score"] > 0
    told = [
        output
        for output in outputs[SLUG]
        if squash(KATA.misconception("eps_added").title_in(lang, True)) in squash(output)
    ]
    assert told, outputs[SLUG]  # the unit of the mistake's TODO tells it
    for output in [*outputs[SLUG], *outputs[OTHER]]:
        if feedback == "graded":
            assert_graded(output, "eps_added" if output in told else None, lang)
    if feedback == "full":
        assert_full(told[0], "eps_added", lang)
