"""`kata gradescope`: the autograder zip, and run_autograder's grading of one submission."""

import json
import os
import stat
import subprocess
import sys
import zipfile

import pytest

from grader.classroom import gradescope
from grader.cli import main
from grader.content import seeds
from grader.content.catalogue import get_kata

SLUG = "group_advantages"
KATA = get_kata(SLUG)


def test_the_zip_holds_the_source_the_scripts_and_the_config(tmp_path):
    out = tmp_path / "autograder.zip"
    assert main(["gradescope", SLUG, "--out", str(out), "--visibility", "after_due_date"]) == 0
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
    assert config == {"slugs": [SLUG], "scoring": "todos", "visibility": "after_due_date"}


@pytest.mark.parametrize("argv", [["gradescope", "group_advantage"], ["gradescope", SLUG, "--scoring", "x"]])
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


def run_autograder(root, files: dict[str, str], scoring: str = "todos") -> dict:
    """Unzip an autograder into a fake ROOT/source, hand in `files`, run its run_autograder with
    ROOT/venv/bin/python standing for this Python, and read ROOT/results/results.json."""
    command = fake_root(root, files, scoring)
    env = os.environ | {gradescope.ROOT_VARIABLE: str(root)}
    subprocess.run(command, env=env, check=True, timeout=300)
    return json.loads((root / "results" / "results.json").read_text())


def fake_root(root, files: dict[str, str], scoring: str = "todos") -> list[str]:
    """Lay out the fake ROOT that run_autograder grades; the command to run it with, in an
    environment where KATA_AUTOGRADER_ROOT is ROOT."""
    gradescope.build_zip([SLUG], root.with_suffix(".zip"), scoring, "hidden")
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


def check_schema(results: dict) -> None:
    assert set(results) == {"score", "tests", "output"} and results["output"].strip()
    for test in results["tests"]:
        assert set(test) == {"name", "score", "max_score", "output", "visibility"}
        assert test["visibility"] == "hidden" and test["output"].strip() and 0 <= test["score"] <= test["max_score"]
    assert results["score"] == pytest.approx(sum(test["score"] for test in results["tests"]))


@pytest.mark.slow
def test_run_autograder_grades_right_wrong_and_missing(tmp_path):
    full = sum(gradescope_weights().values())
    right = run_autograder(tmp_path / "right", {f"{SLUG}.py": KATA.solution()})
    wrong = run_autograder(tmp_path / "wrong", {f"{SLUG}.py": KATA.variant("eps_added")})
    missing = run_autograder(tmp_path / "missing", {"notes.txt": "hello", "Group_Advantages.py": KATA.solution()})
    by_check = run_autograder(tmp_path / "checks", {f"{SLUG}.py": KATA.variant("eps_added")}, "checks")
    nested = run_autograder(tmp_path / "nested", {f"hw3/{SLUG}.py": KATA.solution(), "hw3/notes.py": "x = 1\n"})
    bom = run_autograder(tmp_path / "bom", {f"{SLUG}.py": "\ufeff" + KATA.solution()})  # as a Windows editor saves it
    for results in (right, wrong, missing, by_check, nested, bom):
        check_schema(results)
    assert nested["score"] == bom["score"] == full
    assert [test["max_score"] for test in right["tests"]] == list(gradescope_weights().values())
    assert right["score"] == full and 0 < wrong["score"] < full and missing["score"] == 0
    assert "TODO 1" in wrong["tests"][0]["name"] and wrong["tests"][0]["score"] == 0
    assert "eps" in wrong["tests"][0]["output"]
    assert all(f"no {SLUG}.py" in test["output"] for test in missing["tests"])
    assert all(f"did you mean {SLUG}.py?" in test["output"] for test in missing["tests"])  # graded nowhere
    assert len(by_check["tests"]) > 2 and 0 < by_check["score"] < len(by_check["tests"])
    region = KATA.solution().split("# TODO 1")[1].split("# END TODO 1")[0]
    code = [line.strip() for line in region.splitlines()[1:] if line.strip() and not line.strip().startswith("#")]
    outputs = [test["output"] for results in (wrong, missing, by_check) for test in results["tests"]]
    assert code and not [line for line in code for text in outputs if line in text]


def test_without_the_sandbox_the_output_says_so(tmp_path, monkeypatch):
    from grader.run import sandbox

    monkeypatch.setattr(sandbox, "problem", lambda: "no namespaces in this container")
    (tmp_path / "elsewhere.py").write_text("print('not a kata')\n")
    results = gradescope.grade_submission(tmp_path, [SLUG], "todos", "visible")  # nothing to run
    assert "WITHOUT the OS sandbox: no namespaces in this container" in results["output"]
    assert results["score"] == 0 and len(results["tests"]) == len(gradescope_weights())


def gradescope_weights() -> dict[str, int]:
    from grader.classroom.gradesheet import kata_points

    return kata_points(SLUG)
