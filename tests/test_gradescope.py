"""`kata gradescope`: the autograder zip, and run_autograder's grading of one submission."""

import json
import os
import re
import stat
import subprocess
import sys
import zipfile

import pytest
from gradescope_schema import check_markdown, check_results

from grader.classroom import gradescope
from grader.cli import main
from grader.content import seeds
from grader.content.catalogue import get_kata

SLUG = "group_advantages"
KATA = get_kata(SLUG)


def test_the_zip_holds_the_source_the_scripts_and_the_config(tmp_path):
    out = tmp_path / "autograder.zip"
    points = tmp_path / "points.toml"
    points.write_text(f"[{SLUG}]\ntodo1 = 3\n")
    argv = ["gradescope", SLUG, "--out", str(out), "--visibility", "after_due_date", "--points", str(points)]
    assert main([*argv, "--stdout-visibility", "visible", "--output-format", "ansi"]) == 0
    with zipfile.ZipFile(out) as archive:
        names = set(archive.namelist())
        assert {"setup.sh", "run_autograder", "gradescope.json", "pyproject.toml", "README.md"} <= names
        assert {f"reference/{SLUG}.py", f"katas/{SLUG}/checks.py", "grader/classroom/gradescope.py"} <= names
        assert "gpu_labs/cli.py" in names and not [name for name in names if "__pycache__" in name]
        for script in ("setup.sh", "run_autograder"):
            assert stat.S_IMODE(archive.getinfo(script).external_attr >> 16) == 0o755
        setup = archive.read("setup.sh").decode()
        assert "torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in setup
        assert "python3.11" in setup and 'pip" install "$ROOT/source"' in setup
        assert "grader.classroom.gradescope run" in archive.read("run_autograder").decode()
        config = json.loads(archive.read("gradescope.json"))
    assert config == {
        "slugs": [SLUG],
        "scoring": "todos",
        "visibility": "after_due_date",
        "stdout_visibility": "visible",
        "output_format": "ansi",
        "points": {SLUG: {"todo1": 3}},
    }
    assert gradescope.Autograder.from_json(config).points == {SLUG: {"todo1": 3}}


BAD = [
    ["gradescope", "group_advantage"],
    ["gradescope", SLUG, "--scoring", "x"],
    ["gradescope", SLUG, "--output-format", "html"],
    ["gradescope", SLUG, "--stdout-visibility", "sometimes"],
    ["gradescope", SLUG, "--points", "no-such-file.toml"],
]


@pytest.mark.parametrize("argv", BAD)
def test_bad_input_is_a_usage_error(argv, tmp_path):
    assert main([*argv, "--out", str(tmp_path / "a.zip")]) == 2 and not (tmp_path / "a.zip").exists()


def test_a_course_goes_into_the_zip_and_its_grading(tmp_path, monkeypatch):
    course = tmp_path / "course.toml"
    secret = seeds.new_course()
    seeds.write_course(course, secret)
    out = tmp_path / "autograder.zip"
    assert main(["gradescope", SLUG, "--out", str(out), "--course", str(course)]) == 0
    root = tmp_path / "root"
    with zipfile.ZipFile(out) as archive:
        assert json.loads(archive.read("gradescope.json"))["course"] == gradescope.COURSE
        archive.extractall(root / "source")
    assert seeds.read_course(root / "source" / gradescope.COURSE) == secret
    graded = []
    monkeypatch.setattr(gradescope, "grade_submission", lambda *args: graded.append(args) or {"score": 0})
    gradescope.run(root)
    assert graded[0][-1] == root / "source" / gradescope.COURSE


@pytest.mark.parametrize("text", [None, "seed = 'short'\n"])
def test_a_bad_course_is_a_usage_error(tmp_path, text):
    course = tmp_path / "course.toml"
    if text:
        course.write_text(text)
    argv = ["gradescope", SLUG, "--course", str(course), "--out", str(tmp_path / "a.zip")]
    assert main(argv) == 2 and not (tmp_path / "a.zip").exists()


def test_points_that_name_no_unit_are_a_usage_error(tmp_path):
    points = tmp_path / "points.toml"
    points.write_text(f"[{SLUG}]\ntodo9 = 1\n")
    argv = ["gradescope", SLUG, "--points", str(points), "--out", str(tmp_path / "a.zip")]
    assert main(argv) == 2 and not (tmp_path / "a.zip").exists()


def run_autograder(root, files: dict[str, str], **settings) -> dict:
    """Unzip an autograder (`settings`: gradescope.Autograder's) into a fake ROOT/source, hand in
    `files`, run its run_autograder with ROOT/venv/bin/python standing for this Python, and read
    ROOT/results/results.json, checked against Gradescope's specification."""
    command = fake_root(root, files, **settings)
    env = os.environ | {gradescope.ROOT_VARIABLE: str(root)}
    subprocess.run(command, env=env, check=True, timeout=300)
    results = json.loads((root / "results" / "results.json").read_text())
    check_results(results)
    return results


def fake_root(root, files: dict[str, str], **settings) -> list[str]:
    """Lay out the fake ROOT that run_autograder grades; the command to run it with, in an
    environment where KATA_AUTOGRADER_ROOT is ROOT."""
    config = gradescope.Autograder((SLUG,), **({"visibility": "hidden"} | settings))
    gradescope.build_zip(config, root.with_suffix(".zip"))
    with zipfile.ZipFile(root.with_suffix(".zip")) as archive:
        archive.extractall(root / "source")
    python = root / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    (root / "submission").mkdir()
    for name, text in files.items():
        (root / "submission" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "submission" / name).write_text(text)
    return ["bash", str(root / "source" / "run_autograder")]


def fenced(output: str) -> str:
    """The text of the one fenced block of an "md" output (the unit's report)."""
    blocks = [token.content for token in check_markdown(output) if token.type == "fence"]
    assert len(blocks) == 1, output
    return blocks[0]


def read(inline) -> str:
    """What an inline token shows: its text, escapes undone."""
    return "".join(child.content for child in inline.children)


def by_unit(results: dict) -> dict[str, dict]:
    """{"todo1": test, ..., "contract": test} for the SLUG's tests of `results`."""
    keys = {gradescope.unit_name(KATA, key, "en"): key for key in gradescope_weights()}
    return {keys[test["name"].removeprefix(f"{SLUG}: ")]: test for test in results["tests"]}


@pytest.mark.slow
def test_run_autograder_grades_right_wrong_nested_bom_misnamed_and_missing(tmp_path):
    weights = gradescope_weights()
    full = sum(weights.values())
    right = run_autograder(tmp_path / "right", {f"{SLUG}.py": KATA.solution()})
    wrong = run_autograder(tmp_path / "wrong", {f"{SLUG}.py": KATA.variant("eps_added")})
    missing = run_autograder(tmp_path / "missing", {"notes.txt": "hello"})
    misnamed = run_autograder(tmp_path / "misnamed", {f"{SLUG} (1).py": KATA.solution()})
    nested = run_autograder(tmp_path / "nested", {f"hw3/{SLUG}.py": KATA.solution(), "hw3/notes.py": "x = 1\n"})
    bom = run_autograder(tmp_path / "bom", {f"{SLUG}.py": "\ufeff" + KATA.solution()})  # as a Windows editor saves it
    for results in (right, wrong, missing, misnamed, nested, bom):
        assert [test["max_score"] for test in results["tests"]] == list(weights.values())
        assert results["visibility"] == "hidden" and results["stdout_visibility"] == "hidden"
        assert results["output_format"] == results["test_output_format"] == "md"
    assert right["score"] == nested["score"] == bom["score"] == full
    assert all(test["status"] == "passed" for test in right["tests"])
    assert missing["score"] == misnamed["score"] == 0 and 0 < wrong["score"] < full

    # each unit's output holds its own checks alone
    wrong_units = by_unit(wrong)
    todo1, contract = wrong_units["todo1"], wrong_units["contract"]
    assert todo1["score"] == 0 and todo1["status"] == "failed" and contract["status"] == "passed"
    assert todo1["output"].startswith("**lost\\: 0 of 1 points**")
    report = fenced(todo1["output"])
    assert report.startswith("✗ TODO 1") and "eps" in report and "Input contract" not in report
    assert "The difference starts in your TODO 1" in report
    assert fenced(contract["output"]).startswith("✓ Input contract") and "eps" not in contract["output"]

    # the whole output: a table of the points per kata
    table = [read(token) for token in check_markdown(wrong["output"]) if token.type == "inline"][1:]
    assert table == [
        "kata",
        "points",
        SLUG,
        f"Points: {wrong['score']:g} of {full} (TODO 1: 0 of 1; the input contract: 1 of 1)",
    ]

    for test in missing["tests"]:
        assert fenced(test["output"]).splitlines() == [f"no {SLUG}.py in your folder: nothing was graded"]
        assert test["output"].startswith("**not handed in\\: 0 of")
    for test in misnamed["tests"]:
        assert fenced(test["output"]).splitlines() == [
            f"no {SLUG}.py in your folder: nothing was graded",
            f"did you mean {SLUG}.py? Not graded, as it is named: {SLUG} (1).py",
        ]
    region = KATA.solution().split("# TODO 1")[1].split("# END TODO 1")[0]
    code = [line.strip() for line in region.splitlines()[1:] if line.strip() and not line.strip().startswith("#")]
    outputs = [test["output"] for results in (wrong, missing) for test in results["tests"]]
    assert code and not [line for line in code for text in outputs if line in text]


@pytest.mark.slow
def test_scoring_by_checks_gives_a_missing_file_everyones_maximum(tmp_path):
    wrong = run_autograder(tmp_path / "wrong", {f"{SLUG}.py": KATA.variant("eps_added")}, scoring="checks")
    missing = run_autograder(tmp_path / "missing", {}, scoring="checks")
    tops = [test["max_score"] for test in wrong["tests"]]
    assert [test["max_score"] for test in missing["tests"]] == tops and sum(tops) > len(tops)
    assert 0 < wrong["score"] < sum(tops) and missing["score"] == 0
    assert len(wrong["tests"]) == len(gradescope_weights())  # one test per unit, not per check


@pytest.mark.slow
@pytest.mark.parametrize("output_format", ["text", "ansi"])
def test_text_and_ansi_outputs_are_the_report_as_a_terminal_shows_it(tmp_path, output_format):
    results = run_autograder(tmp_path / "r", {f"{SLUG}.py": KATA.variant("eps_added")}, output_format=output_format)
    todo1 = by_unit(results)["todo1"]["output"]
    assert results["test_output_format"] == output_format and todo1.startswith("lost: 0 of 1 points\n\n")
    assert ("\x1b[" in todo1) == (output_format == "ansi") and "```" not in todo1
    plain = re.sub(r"\x1b\[[0-9;]*m", "", todo1)
    assert "✗ TODO 1" in plain and max(map(len, plain.splitlines())) <= 80


@pytest.mark.parametrize(
    "text",
    [
        "<script>alert(1)</script> *bold* [a](http://x) `code` | pipe & &amp; # heading",
        "1. not a list\n- nor this\n    nor code\n===",
        "\\ a backslash and <!-- a comment -->",
    ],
)
def test_md_text_reads_as_itself(text):
    tokens = check_markdown(gradescope.md_text(text))
    assert [token.type for token in tokens] == ["paragraph_open", "inline", "paragraph_close"]
    rendered = "".join(
        child.content if child.type == "text" else "\n" for child in tokens[1].children if child.type != "softbreak"
    )
    assert rendered == "\n".join(line.strip() for line in text.splitlines())


def test_md_table_keeps_every_cell_even_with_pipes_and_line_breaks():
    rows = [["a", "b"], ["x | y", "two\nlines"], ["<b>", "*"]]
    tokens = check_markdown(gradescope.md_table(rows))
    rendered = [read(token) for token in tokens if token.type == "inline"]
    assert rendered == ["a", "b", "x | y", "two lines", "<b>", "*"]


def test_without_the_sandbox_the_output_says_so(tmp_path, monkeypatch):
    from grader.run import sandbox

    monkeypatch.setattr(sandbox, "problem", lambda: "no namespaces in this container")
    (tmp_path / "elsewhere.py").write_text("print('not a kata')\n")
    config = gradescope.Autograder((SLUG,), output_format="text")
    results = gradescope.grade_submission(tmp_path, config)  # nothing to run
    check_results(results)
    assert "WITHOUT the OS sandbox: no namespaces in this container" in results["output"]
    assert results["score"] == 0 and len(results["tests"]) == len(gradescope_weights())


def gradescope_weights() -> dict[str, int]:
    from grader.classroom.gradesheet import kata_points

    return kata_points(SLUG)
