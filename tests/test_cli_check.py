"""`kata check` and `kata solution`: grading a file, its report in text and JSON, the progress it records,
and the solution that opens once the kata is passed.

Each `kata check` spawns a pytest child that imports torch (a few seconds), so the grading runs
are few and shared through module-scoped fixtures.
"""

import io
import json
import re

import pytest
from cli_support import flat, grpo_reference, kata_script, list_rows, list_table, old_not_detached
from conftest import isolate
from rich.console import Console

from grader.content.catalogue import get_kata
from grader.report.results import STATUSES, CheckResult, GradeResult
from grader.report.styles import THEME
from grader.report.terminal import build_report

CHECK_KEYS = {"name", "todo", "status", "message", "misconception"}

pytestmark = pytest.mark.usefixtures("isolated")


# -- shared grading runs (module scope: each costs a pytest child that imports torch) ---------------


@pytest.fixture(scope="module")
def passed_run(kata_main, tmp_path_factory):
    """The reference solution in the workspace file, graded by `kata check grpo_loss`."""
    root = tmp_path_factory.mktemp("passed")
    workspace = root / "ws"
    workspace.mkdir()
    (workspace / "grpo_loss.py").write_text(grpo_reference(), encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        isolate(patch, root)
        run = kata_main("check", "grpo_loss", "--workspace", workspace)
    return workspace, run


@pytest.fixture(scope="module")
def misconception_run(kata_main, tmp_path_factory):
    """A started workspace, then `kata check --file --json` on a copy whose old log-probs are not detached."""
    root = tmp_path_factory.mktemp("misconception")
    workspace = root / "ws"
    with pytest.MonkeyPatch.context() as patch:
        isolate(patch, root)
        assert kata_main("start", "grpo_loss", "--workspace", workspace).status == 0
        before = {path.name: path.read_bytes() for path in workspace.iterdir()}
        target = root / "mine.py"
        target.write_text(old_not_detached(), encoding="utf-8")
        run = kata_main("check", "grpo_loss", "--workspace", workspace, "--file", target, "--json")
    return workspace, before, target, run


# -- kata check ------------------------------------------------------------------------------------


def test_check_without_a_file_exits_1_and_says_to_start(kata_main, workspace):
    run = kata_main("check", "grpo_loss", "--workspace", workspace)

    assert run.status == 1
    assert f"no file to grade at {workspace / 'grpo_loss.py'}. Run `kata start grpo_loss` first." in flat(run.err)
    assert not workspace.exists()


def test_check_of_a_missing_file_option_exits_1_without_suggesting_start(kata_main, tmp_path):
    run = kata_main("check", "grpo_loss", "--file", tmp_path / "nowhere.py")

    assert run.status == 1
    assert "no file to grade at" in flat(run.err) and "kata start" not in run.err


def test_a_file_saved_with_a_utf8_bom_is_graded_as_python_reads_it(kata_main, tmp_path):
    """Editors on Windows save a BOM first; Python runs such a file, so the grader reads it too."""
    path = tmp_path / "group_advantages.py"
    path.write_bytes(b"\xef\xbb\xbf" + get_kata("group_advantages").solution().encode("utf-8"))
    run = kata_main("check", "group_advantages", "--file", path, "--json")
    result = json.loads(run.out)
    assert run.status == 0 and result["failed"] == 0 and result["passed"] > 0, run.out + run.err
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")  # the learner's file is left as it was


def test_a_kata_whose_reference_needs_a_missing_package_says_which_in_one_line(kata_main, tmp_path, monkeypatch):
    """A student pack brings the grader's dependencies, not toy_grpo's transformers: checking such a
    kata where a package is missing names it and the command that installs it."""
    kata = get_kata("toy_grpo")
    assert kata.missing_packages() == []  # here, transformers is installed
    monkeypatch.setitem(kata.__dict__, "warm_imports", (*kata.warm_imports, "from no_such_package.models import X"))
    (tmp_path / "toy_grpo.py").write_text("x = 1\n")
    for lang, words in (("en", "needs no_such_package, which is not installed"), ("zh", "需要 no_such_package")):
        run = kata_main("check", "toy_grpo", "--file", tmp_path / "toy_grpo.py", "--lang", lang)
        assert run.status == 1 and words in run.err and "pip install no_such_package" in run.err
        assert len(run.err.strip().splitlines()) == 1


def test_check_passes_the_reference_and_ends_with_the_summary(passed_run, misconception_run):
    _, run = passed_run
    total = len(json.loads(misconception_run[3].out)["checks"])

    assert run.status == 0, run.out + run.err
    assert run.out.rstrip("\n").splitlines()[-1] == f"{total} passed, 0 failed"
    assert "kata solution grpo_loss" in flat(run.out)


def test_a_passing_check_records_progress(kata_main, passed_run):
    workspace, _ = passed_run

    row = list_rows(kata_main, workspace)["grpo_loss"]

    assert row["status"] == "passed"
    assert row["last_check"]["failed"] == 0 and row["last_check"]["failing_todos"] == []
    assert row["last_check"]["passed"] > 0


def test_solution_opens_once_the_kata_is_passed(kata_main, passed_run):
    workspace, _ = passed_run

    run = kata_main("solution", "grpo_loss", "--workspace", workspace)

    assert run.status == 0
    assert run.out == grpo_reference()
    assert "def compute_grpo_loss" in run.out


def test_solution_is_refused_before_the_kata_is_passed_unless_forced(kata_main, workspace):
    assert kata_main("start", "grpo_loss", "--workspace", workspace).status == 0

    refused = kata_main("solution", "grpo_loss", "--workspace", workspace)
    forced = kata_main("solution", "grpo_loss", "--workspace", workspace, "--force")

    assert refused.status == 1 and refused.out == ""
    assert "grpo_loss is not passed yet" in flat(refused.err)
    assert forced.status == 0
    assert "def compute_grpo_loss" in forced.out


def test_check_json_is_one_object_with_the_documented_fields(misconception_run):
    _, _, target, run = misconception_run

    data = json.loads(run.out)

    assert run.status == 1
    assert {"kata", "passed", "failed", "score", "checks"} <= set(data)
    assert "matches" not in data
    assert data["kata"] == "grpo_loss"
    assert data["target"] == str(target.resolve())
    assert data["passed"] + data["failed"] == len(data["checks"])
    assert data["failed"] > 0
    assert data["score"] == round(data["passed"] / len(data["checks"]), 4)
    for check in data["checks"]:
        assert CHECK_KEYS <= set(check)
        assert check["status"] in STATUSES
    assert data["passed"] == sum(check["status"] == "passed" for check in data["checks"])


def test_check_json_names_the_misconception_on_every_failing_check(misconception_run):
    data = json.loads(misconception_run[3].out)

    failing = [check for check in data["checks"] if check["status"] != "passed"]

    assert failing
    assert {check["misconception"] for check in failing} == {"old_not_detached"}
    assert {check["todo"] for check in failing} >= {get_kata("grpo_loss").misconception("old_not_detached").todo}
    assert all(check["misconception"] is None for check in data["checks"] if check["status"] == "passed")
    assert data["diagnosis"] == "old_not_detached"


def test_check_with_a_file_option_writes_no_progress(misconception_run):
    workspace, before, _, _ = misconception_run

    assert {path.name: path.read_bytes() for path in workspace.iterdir()} == before


def test_check_of_the_blank_template_fails_and_records_the_failing_todos(kata_main, workspace):
    assert kata_main("start", "grpo_loss", "--workspace", workspace).status == 0

    run = kata_main("check", "grpo_loss", "--workspace", workspace, "--json")

    data = json.loads(run.out)
    row = list_rows(kata_main, workspace)["grpo_loss"]
    total = len(data["checks"])
    assert run.status == 1
    assert data["passed"] == 0 and data["failed"] == total > 0
    assert all(check["status"] in STATUSES for check in data["checks"])
    assert row["status"] == "in progress"
    assert row["last_check"]["passed"] == 0 and row["last_check"]["failed"] == total
    first_todo = get_kata("grpo_loss").todos[0].number
    assert row["last_check"]["failing_todos"][0] == first_todo
    listed = kata_main("list", "--workspace", workspace).out
    assert list_table(listed)["grpo_loss"].endswith(f"in progress (0/{total} checks)")
    assert listed.splitlines()[-1] == f"Next: kata hint grpo_loss --todo {first_todo}"


def test_check_names_the_misconception_in_the_text_report_from_the_console_script(kata_main, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "grpo_loss.py").write_text(old_not_detached(), encoding="utf-8")

    run = kata_script("check", "grpo_loss", "--workspace", "ws", cwd=tmp_path)

    assert run.status == 1
    assert "⚑ Likely misconception: old log-probs not detached" in flat(run.out)
    assert re.fullmatch(r"\d+ passed, [1-9]\d* failed", run.out.rstrip("\n").splitlines()[-1])
    todo = get_kata("grpo_loss").misconception("old_not_detached").todo
    assert f"Next: TODO {todo} first. Hint: kata hint grpo_loss --todo {todo}" in flat(run.out)
    assert list_rows(kata_main, workspace)["grpo_loss"]["last_check"]["failing_todos"][0] == todo


def test_check_grades_a_file_named_reference_not_the_builtin_reference(kata_main, tmp_path):
    (tmp_path / "reference").write_text(get_kata("grpo_loss").template("en"), encoding="utf-8")

    run = kata_main("check", "grpo_loss", "--file", "reference", "--json")

    data = json.loads(run.out)
    assert data["target"] == str((tmp_path / "reference").resolve())
    assert run.status == 1 and data["passed"] == 0 < data["failed"]


def learner_file_with(find: str, replace: str) -> str:
    """The grpo_loss exercise filled with the reference's code, as a learner holds it, with one edit."""
    text = get_kata("grpo_loss").template(filled=True)
    assert text.count(find) == 1
    return text.replace(find, replace)


def test_check_points_at_the_todo_that_holds_the_mistake(kata_main, workspace):
    """max for min is a TODO 3 mistake that also fails checks of other TODOs: the transplant finds TODO 3."""
    mistake = learner_file_with(
        "-torch.minimum(surrogate, clipped_surrogate)", "-torch.maximum(surrogate, clipped_surrogate)"
    )
    workspace.mkdir(exist_ok=True)
    (workspace / "grpo_loss.py").write_text(mistake, encoding="utf-8")

    run = kata_main("check", "grpo_loss", "--workspace", workspace)

    text = flat(run.out)
    assert (
        "⌖ The difference starts in your TODO 3: with the reference's TODO 3 in its place, every check passes." in text
    )
    assert "Next: TODO 3 first. Hint: kata hint grpo_loss --todo 3" in text
    assert kata_main("list", "--workspace", workspace).out.splitlines()[-1] == "Next: kata hint grpo_loss --todo 3"


def test_check_locates_a_mistake_no_misconception_names_in_chinese(kata_main, tmp_path):
    mistake = learner_file_with("ratio.clamp(1.0 - clip_range, 1.0 + clip_range)", "ratio.clamp(1.0 - clip_range, 1.0)")
    target = tmp_path / "mine.py"
    target.write_text(mistake, encoding="utf-8")

    run = kata_main("check", "grpo_loss", "--file", target, "--lang", "zh")
    data = json.loads(kata_main("check", "grpo_loss", "--file", target, "--json").out)

    assert "差异始于你的 TODO 2" in flat(run.out) and "不是已知的错误" in flat(run.out)
    assert data["location"] == {"todos": [2], "method": "transplant"} and data["diagnosis"] is None


def test_after_a_passing_check_of_another_file_a_suggested_solution_command_works(kata_main, tmp_path, workspace):
    assert kata_main("start", "grpo_loss", "--workspace", workspace).status == 0
    mine = tmp_path / "mine.py"
    mine.write_text(grpo_reference(), encoding="utf-8")

    run = kata_main("check", "grpo_loss", "--workspace", workspace, "--file", mine)

    assert run.status == 0, run.out + run.err
    suggested = re.findall(r"kata (solution grpo_loss(?: --[a-z]+)*)", flat(run.out))
    shown = [kata_main(*command.split(), "--workspace", workspace) for command in suggested]
    assert any(show.status == 0 and show.out == grpo_reference() for show in shown), suggested


# -- the report, built from results ----------------------------------------------------------------


def report(checks: list[CheckResult], lang: str = "en") -> str:
    """The plain text report of `checks` as grpo_loss's, at 80 columns."""
    out = io.StringIO()
    result = GradeResult("grpo_loss", "mine.py", checks)
    Console(file=out, width=80, theme=THEME).print(build_report(result, get_kata("grpo_loss"), lang, "mine.py"))
    return out.getvalue()


def test_the_cases_of_a_parametrized_check_fold_into_one_line_with_the_reason():
    title = "Loss and gradients match the reference"
    cases = [
        CheckResult(f"kl[{i}]", title, 3, "failed", f"f(x)\n  largest difference 0.{i} at [{i}]") for i in range(4)
    ]
    other = CheckResult("ratio", "Ratio matches", 3, "failed", "g(x)\n  expected: 1\n  got:      2")

    lines = report([*cases, other]).splitlines()

    assert sum(title in line for line in lines) == 2  # in full, then the other cases in one line
    folded = next(i for i, line in enumerate(lines) if title in line and i > lines.index(f"  ✗ {title}"))
    assert lines[folded + 1].strip() == "3 more cases: largest difference 0.1 at [1]"
    assert max(map(len, lines)) <= 80


def test_the_checks_of_no_todo_are_the_whole_function_when_marked_whole_else_the_input_contract():
    def untagged(whole: bool) -> list[CheckResult]:
        return [CheckResult("c", "Rejects bad input", None, "passed", whole=whole)]

    assert "✓ Input contract  1/1" in report(untagged(False))
    assert "✓ Whole function  1/1" in report(untagged(True))
    assert "✓ 输入约定  1/1" in report(untagged(False), "zh")
    both = report(untagged(False) + untagged(True)).splitlines()
    assert both.index("✓ Whole function  1/1") < both.index("✓ Input contract  1/1")  # two sections


def test_a_report_has_no_padding_at_line_ends_and_fits_80_columns():
    failing = CheckResult("kl", "A title " * 12, 3, "failed", "f(x)\n  expected: 1\n  got:      2")
    lines = report([failing, CheckResult("c", "Rejects bad input", None, "passed")]).splitlines()
    assert lines and not [line for line in lines if line != line.rstrip()]
    assert max(map(len, lines)) <= 80


def test_the_solution_advice_with_force_appears_only_where_the_check_opens_no_solution():
    result = GradeResult("grpo_loss", "mine.py", [CheckResult("p", "p", 1, "passed")])

    def shown(own_file: bool, lang: str) -> str:
        out = io.StringIO()
        report = build_report(result, get_kata("grpo_loss"), lang, "mine.py", own_file=own_file)
        Console(file=out, width=80, theme=THEME).print(report)
        return flat(out.getvalue())

    for lang in ("en", "zh"):
        own, other = shown(True, lang), shown(False, lang)
        assert "kata solution grpo_loss" in own and "--force" not in own
        assert other.count("kata solution grpo_loss --force") == 1
