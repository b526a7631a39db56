"""`kata grade` keeps how it showed the grades (OUT/view.json) and a rerun that leaves an option out
uses the kept one, said in one line; none of them is graded again (grader.classroom.view)."""

import json

import pytest
from conftest import need_sandbox

from grader.classroom import view
from grader.classroom.view import View, ViewError, read_view, resolve, write_view
from grader.content.catalogue import get_kata
from grader.content.i18n import phrase

SLUG = "group_advantages"
POINTS = {SLUG: {"todo1": 3}}
ROSTER = {"key": "login", "columns": ["login", "email"], "rows": [["ann", "ann@example.org"]]}
KEPT = View(
    lang="zh",
    scoring="checks",
    feedback="full",
    points=POINTS,
    points_from="p.toml",
    roster=ROSTER,
    roster_from="class.csv",
    excel=True,
)


# -- the rule -------------------------------------------------------------------------------------


def test_with_nothing_kept_the_options_given_and_the_defaults_make_the_view():
    shown, reused = resolve({"scoring": "checks"}, None, "zh")
    assert shown == View(lang="zh", scoring="checks") and reused == []


def test_an_option_left_out_comes_from_the_kept_view_and_is_named():
    shown, reused = resolve({}, KEPT, "en")
    assert shown == KEPT and reused == ["lang", "scoring", "feedback", "points", "roster", "excel"]


def test_an_option_given_wins_over_the_kept_one_and_is_not_named():
    given = {"scoring": "todos", "points": {SLUG: {"todo1": 1}}, "points_from": "q.toml"}
    shown, reused = resolve(given, KEPT, "en")
    assert (shown.scoring, shown.points, shown.points_from) == ("todos", {SLUG: {"todo1": 1}}, "q.toml")
    assert (shown.lang, shown.feedback) == ("zh", "full") and reused == ["lang", "feedback", "roster", "excel"]


def test_a_kept_option_equal_to_its_default_is_not_named():
    shown, reused = resolve({}, View(lang="en"), "en")
    assert shown == View() and reused == []


def test_the_kept_options_are_said_as_a_command_line_gives_them():
    assert (
        KEPT.options(["lang", "points", "roster", "excel"]) == "--lang zh, --points p.toml, --roster class.csv, --excel"
    )


# -- the file -------------------------------------------------------------------------------------


def test_a_view_kept_is_read_back_as_it_was(tmp_path):
    assert read_view(tmp_path) is None  # no run kept one
    write_view(tmp_path, KEPT)
    assert read_view(tmp_path) == KEPT


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        "[]",
        json.dumps({"colour": "red"}),
        json.dumps({"lang": "fr"}),
        json.dumps({"scoring": "vibes"}),
        json.dumps({"points": {"no_such_kata": {"todo1": 1}}}),
        json.dumps({"points": {SLUG: {"todo1": -1}}}),
        json.dumps({"points": [1]}),
        json.dumps({"roster": "everyone"}),
        json.dumps({"roster": {"key": "id", "columns": ["login"], "rows": []}}),
        json.dumps({"roster": ROSTER | {"rows": [["ann"]]}}),
        json.dumps({"roster": ROSTER | {"rows": [["ann", 3]]}}),
        json.dumps({"excel": "yes"}),
        json.dumps({"points_from": 3}),
    ],
)
def test_a_view_file_no_run_could_have_written_is_refused(tmp_path, text):
    (tmp_path / view.VIEW_FILE).write_text(text, encoding="utf-8")
    with pytest.raises(ViewError):
        read_view(tmp_path)


# -- kata grade -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_rerun_without_the_options_shows_the_grades_as_the_last_run_did(tmp_path, kata_main):
    need_sandbox()
    submissions, out = tmp_path / "class", tmp_path / "out"
    (submissions / "ann").mkdir(parents=True)
    (submissions / "ann" / f"{SLUG}.py").write_text(get_kata(SLUG).variant("eps_added"))
    points = tmp_path / "points.toml"
    points.write_text(f"[{SLUG}]\ntodo1 = 3\n")
    roster = tmp_path / "class.csv"
    roster.write_text("login,email\nANN,ann@example.org\nbob,bob@example.org\n", encoding="utf-8")

    def header() -> str:
        return (out / "grades.csv").read_text(encoding="utf-8").splitlines()[0]

    def grade(*options):
        run = kata_main("grade", submissions, "--out", out, "--workers", "1", *options)
        assert run.status == 0, run.out + run.err
        return run, json.loads((out / "grades.json").read_text(encoding="utf-8"))

    options = ("--lang", "zh", "--scoring", "checks", "--points", points, "--feedback", "full", "--roster", roster)
    run, first = grade(*options, "--excel")
    assert "view.json" not in run.out  # nothing kept yet
    kept = read_view(out)
    assert (kept.lang, kept.scoring, kept.feedback, kept.points) == ("zh", "checks", "full", {SLUG: {"todo1": 3}})

    points.unlink()  # the points and the roster were kept as read: their files need not stay
    roster.unlink()
    run, again = grade()  # KATA_LANG=en (conftest), yet the class's language is kept
    said = " ".join(run.out.split())  # one line, wrapped as wide as the terminal
    assert (
        said.count("view.json") == 1 and "--lang zh、--scoring checks、--feedback full" in said
    )  # joined as Chinese joins
    assert f"--points{points}、--roster{roster}、--excel" in "".join(said.split())  # wrapped at any 、
    assert header().startswith("login,email,student,") and (out / "grades-excel.csv").is_file()
    assert phrase("zh", "grade_wrote", graded=0, reused=1, wrote="").split("；")[0] in run.out  # nothing graded
    assert again == first and again["points"][SLUG]["todo1"] == 3 and again["scoring"] == "checks"

    run, plain = grade("--defaults")
    assert "view.json" not in run.out and "graded 0, unchanged 1" in run.out  # English again, by KATA_LANG
    assert plain["scoring"] == "todos" and plain["points"][SLUG]["todo1"] == get_kata(SLUG).todos[0].points
    assert read_view(out) == View()  # and that is what the next run keeps
    assert header().startswith("student,") and not (out / "grades-excel.csv").exists()

    (out / view.VIEW_FILE).write_text("{broken", encoding="utf-8")
    run, _ = grade("--scoring", "checks")
    assert "view.json could not be read" in run.err and len(run.err.strip().splitlines()) == 1
    assert read_view(out).scoring == "checks"  # written anew
