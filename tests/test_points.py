"""`kata grade --scoring todos`: points depend only on which of the file's own checks fail.

A failing `todo(N)` check withholds TODO N's points, a failing whole-function check the "whole"
points (kata.toml's `whole_points`), a failing input-contract check the contract's point. Where the
mistake was located and which misconception it fits are feedback: a file can tell a hybrid from its
own run, so any rule that let the location set points could be steered.
"""

import csv
from dataclasses import replace

import pytest

from grader.classroom import batch, gradescope, gradesheet
from grader.classroom.gradesheet import earned_points, kata_points
from grader.content import catalogue
from grader.content.catalogue import all_katas, get_kata
from grader.report.results import CheckResult, GradeResult, Location

WEIGHTS = {"todo1": 2, "todo2": 1, "todo3": 1, "whole": 1, "contract": 1}
WHOLE_SLUG = "token_logprobs"  # a kata with whole-function checks
PLAIN_SLUG = "group_advantages"  # a kata without


def result_of(*failing: str, location: Location | None = None, status: str = "failed") -> GradeResult:
    """A file graded by a check per TODO (t1, t2, t3), a whole-function check and the input contract;
    `failing` names the checks that end with `status`."""
    checks = [CheckResult(f"t{n}", "", n, status if f"t{n}" in failing else "passed") for n in (1, 2, 3)]
    checks.append(CheckResult("whole", "", None, status if "whole" in failing else "passed", whole=True))
    checks.append(CheckResult("contract", "", None, status if "contract" in failing else "passed"))
    return GradeResult(WHOLE_SLUG, "x.py", checks, location=location)


LOCATIONS = [
    None,
    Location((), "outside_todos"),
    Location((), "tags", "markers"),
    Location((), "tags", "time"),
    *(Location((todo,), "transplant") for todo in (1, 2, 3)),
    Location((1, 3), "transplant"),
    Location((2,), "tags", "markers"),
]


# -- the rules, on results ------------------------------------------------------------------------


def test_a_mistake_only_whole_checks_catch_loses_the_whole_points_not_the_located_todos():
    result = result_of("whole", location=Location((3,), "transplant"))
    assert earned_points(result, WEIGHTS) == WEIGHTS | {"whole": 0}


@pytest.mark.parametrize(
    "failing", [(), ("whole",), ("t2",), ("t1", "whole"), ("contract",), ("t1", "t2", "t3", "whole", "contract")]
)
@pytest.mark.parametrize("location", LOCATIONS, ids=str)
def test_the_location_never_changes_points(failing, location):
    assert earned_points(result_of(*failing, location=location), WEIGHTS) == earned_points(result_of(*failing), WEIGHTS)


def test_a_file_without_markers_scores_what_its_twin_with_markers_scores():
    """The audit's case: the honest file is located in TODO 3 by transplant; its twin removed the
    markers, so the localiser falls back to the failing checks' TODOs, of which there are none."""
    honest = result_of("whole", location=Location((3,), "transplant"))
    unmarked = result_of("whole", location=Location((), "tags", "markers"))
    assert earned_points(unmarked, WEIGHTS) == earned_points(honest, WEIGHTS) == WEIGHTS | {"whole": 0}


def test_a_failing_contract_check_loses_only_the_contract_point():
    result = result_of("contract", location=Location((1,), "transplant"))
    assert earned_points(result, WEIGHTS) == WEIGHTS | {"contract": 0}


@pytest.mark.parametrize("status", ["failed", "error", "timeout"])
def test_a_whole_check_that_errs_or_times_out_withholds_the_whole_points(status):
    assert earned_points(result_of("whole", status=status), WEIGHTS) == WEIGHTS | {"whole": 0}


def test_the_diagnosis_never_changes_points():
    plain = result_of("t2", "whole")
    diagnosed = result_of("t2", "whole")
    for check in diagnosed.checks:
        if check.status != "passed":
            check.matches, check.misconception = ["a_known_mistake"], "a_known_mistake"
    assert diagnosed.diagnosis == "a_known_mistake"
    assert earned_points(diagnosed, WEIGHTS) == earned_points(plain, WEIGHTS) == WEIGHTS | {"todo2": 0, "whole": 0}


def test_a_file_with_no_checks_keeps_nothing_wherever_it_is_located():
    empty = GradeResult(WHOLE_SLUG, "x.py", [], load_error="SyntaxError", location=Location((1,), "transplant"))
    assert earned_points(empty, WEIGHTS) == dict.fromkeys(WEIGHTS, 0)


# -- kata.toml's whole_points ---------------------------------------------------------------------

HEAD = 'order = 1\ndifficulty = "easy"\nfunctions = ["f"]\ntitle = {en = "x"}\n'
TODO = '[[todo]]\nnumber = 1\ntitle = {en = "x"}\nhints = {en = []}\n'
WHOLE_CHECK = '@pytest.mark.whole\ndef test_values():\n    """Values\n\n    zh: 取值\n    """\n'
PLAIN_CHECK = 'def test_contract():\n    """Says pytest.mark.whole in prose only"""  # pytest.mark.whole\n'


@pytest.fixture
def kata_in(tmp_path, monkeypatch):
    """kata_in(toml, checks): kata "x" of a catalogue in tmp_path, with that kata.toml and checks.py."""
    monkeypatch.setattr(catalogue, "KATAS_DIR", tmp_path)

    def make(toml: str, checks: str) -> catalogue.Kata:
        folder = tmp_path / "x"
        folder.mkdir(exist_ok=True)
        (folder / "kata.toml").write_text(toml)
        (folder / "checks.py").write_text("import pytest\n\n\n" + checks)
        return catalogue._load_kata(folder)

    return make


def test_whole_points_defaults_to_one_and_is_left_out_of_the_kata_digest(kata_in):
    assert kata_in(HEAD + TODO, WHOLE_CHECK).whole_points == 1
    given = "whole_points = 3\n" + HEAD + TODO
    kata = kata_in(given, WHOLE_CHECK)
    assert kata.whole_points == 3 and kata.has_whole_checks and not kata.points_problems()
    assert catalogue.POINTS_LINE.sub(b"", given.encode()) == (HEAD + TODO).encode()


def test_whole_checks_are_read_from_the_decorators_not_the_text(kata_in):
    assert not kata_in(HEAD + TODO, PLAIN_CHECK).has_whole_checks
    assert kata_in(HEAD + TODO, PLAIN_CHECK + "\n\n" + WHOLE_CHECK).has_whole_checks


@pytest.mark.parametrize(("toml", "value"), [("-1", -1), ("1.5", 1.5), ('"2"', "2"), ("true", True)])
def test_a_bad_whole_points_is_one_clear_line(kata_in, toml, value):
    kata = kata_in(f"whole_points = {toml}\n" + HEAD + TODO, WHOLE_CHECK)
    assert kata.points_problems() == [f"katas/x/kata.toml: whole_points must be a whole number >= 0, not {value!r}"]


def test_whole_points_without_a_whole_check_is_a_problem(kata_in):
    kata = kata_in("whole_points = 2\n" + HEAD + TODO + "points = -2\n", PLAIN_CHECK)
    assert kata.points_problems() == [
        "katas/x/kata.toml: TODO 1's points must be a whole number >= 0, not -2",
        "katas/x/kata.toml: whole_points is given, but no check is @pytest.mark.whole",
    ]


# -- the points keys --------------------------------------------------------------------------------


@pytest.mark.parametrize("kata", all_katas(), ids=lambda kata: kata.slug)
def test_the_keys_are_the_todos_then_whole_where_a_check_is_whole_then_the_contract(kata):
    todos = [f"todo{todo.number}" for todo in kata.todos]
    whole = ["whole"] if kata.has_whole_checks else []
    weights = kata_points(kata.slug)
    assert list(weights) == [*todos, *whole, "contract"]
    assert weights.get("whole", kata.whole_points) == kata.whole_points


def test_the_shipped_katas_include_both_kinds():
    assert get_kata(WHOLE_SLUG).has_whole_checks and not get_kata(PLAIN_SLUG).has_whole_checks


def test_points_overrides_accept_whole_where_the_kata_has_it():
    overrides = {WHOLE_SLUG: {"whole": 3, "contract": 0}}
    assert gradesheet.check_points(overrides) == overrides
    assert kata_points(WHOLE_SLUG, overrides[WHOLE_SLUG])["whole"] == 3
    with pytest.raises(gradesheet.PointsError, match=f"{PLAIN_SLUG} has no 'whole'; it has `todo1`, `contract`"):
        gradesheet.check_points({PLAIN_SLUG: {"whole": 1}})
    with pytest.raises(gradesheet.PointsError, match=f"{PLAIN_SLUG} 没有 “whole”；它有的是 `todo1`、`contract`"):
        gradesheet.check_points({PLAIN_SLUG: {"whole": 1}}, "zh")


def whole_fails(slug: str) -> GradeResult:
    """A file of `slug` whose only failing check is a whole-function one, located in TODO 1."""
    checks = [CheckResult(f"t{n.number}", f"todo {n.number} works", n.number, "passed") for n in get_kata(slug).todos]
    checks += [CheckResult("values", "the values", None, "failed", whole=True)]
    checks += [CheckResult("contract", "the contract", None, "passed")]
    return GradeResult(slug, "x.py", checks, location=Location((1,), "transplant"))


def test_the_sheet_and_csv_count_the_whole_points():
    roster = batch.Roster([WHOLE_SLUG], ["ann"], [])
    sheet = gradesheet.build_sheet(roster, {("ann", WHOLE_SLUG): {"grade": whole_fails(WHOLE_SLUG).to_json()}})
    todos = {f"todo{todo.number}": 1 for todo in get_kata(WHOLE_SLUG).todos}
    entry = sheet["students"]["ann"][WHOLE_SLUG]
    assert sheet["points"][WHOLE_SLUG] == todos | {"whole": 1, "contract": 1}
    assert entry["points"] == todos | {"whole": 0, "contract": 1} and entry["max"] == len(todos) + 2
    top = len(todos) + 2
    assert list(csv.reader(gradesheet.grades_csv(sheet).splitlines())) == [
        ["student", f"{WHOLE_SLUG} (of {top})", f"total (of {top})", "mean", "errors"],
        ["ann", str(top - 1), str(top - 1), f"{(top - 1) / top:.4f}", ""],
    ]


@pytest.mark.parametrize(("lang", "name"), [("en", "the whole function"), ("zh", "整个函数")])
def test_gradescope_gives_the_whole_points_a_test_of_their_own(lang, name):
    weights = kata_points(WHOLE_SLUG)
    result = whole_fails(WHOLE_SLUG)
    units = gradescope._units(result, earned_points(result, weights), weights, "todos", None)
    config = gradescope.Autograder((WHOLE_SLUG,), lang=lang, output_format="text")
    tests = [gradescope._test(WHOLE_SLUG, unit, result, "", config) for unit in units]
    whole = [test for test in tests if test["name"] == f"{WHOLE_SLUG}: {name}"]
    assert len(tests) == len(weights) and len(whole) == 1
    assert (whole[0]["score"], whole[0]["max_score"], whole[0]["status"]) == (0, 1, "failed")
    assert "the values" in whole[0]["output"] and "todo 1 works" not in whole[0]["output"]
    assert sum(test["score"] for test in tests) == sum(weights.values()) - 1


# -- every misconception variant, graded --------------------------------------------------------------

SWEPT = ("group_advantages", "token_logprobs", "dapo_gspo")


@pytest.fixture(scope="module")
def variants() -> dict[tuple[str, str], GradeResult]:
    """Every misconception variant of the SWEPT katas, graded as `kata grade` grades a class."""
    from grader.run import sandbox

    targets = [(slug, f"misconception:{item.id}") for slug in SWEPT for item in get_kata(slug).misconceptions]
    return batch.grade_targets(targets, 2, batch.Settings(timeout=10.0, sandboxed=sandbox.choose("auto")))


@pytest.mark.slow
@pytest.mark.parametrize("slug", SWEPT)
def test_a_variants_points_are_the_same_with_its_location_forced_anywhere(variants, slug):
    """Points with the real location equal points with the location forced to every TODO, to the
    code outside them and to none; and every known misconception costs some points."""
    weights = kata_points(slug)
    forced = [None, Location((), "outside_todos"), Location((), "tags", "markers")]
    forced += [Location((todo.number,), "transplant") for todo in get_kata(slug).todos]
    for (kata, target), result in variants.items():
        if kata != slug:
            continue
        assert result.checks and result.location is not None, (target, result.load_error)
        points = earned_points(result, weights)
        for location in forced:
            assert earned_points(replace(result, location=location), weights) == points, (target, location)
        assert points != weights, f"{target} keeps every point"
        assert ("whole" in weights) == any(check.whole for check in result.checks)
