"""`kata pack`: a student pack grades from recorded values, names every variant, holds no reference,
and installs offline into a fresh virtualenv that holds only torch."""

import ast
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from replayer import replayer

from grader.content import catalogue, render
from grader.pack.build import build

pytestmark = pytest.mark.slow
SLUG = "group_advantages"


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("course")
    packed = build(folder, [SLUG])
    assert [item.slug for item in packed] == [SLUG]
    return folder


def test_every_check_is_public_and_every_variant_named(out):
    pack = json.loads((out / "pack" / "katas" / SLUG / "pack.json").read_text(encoding="utf-8"))
    assert len(pack["public"]) == 13 and pack["private"] == []
    report = (out / "report.txt").read_text(encoding="utf-8")
    variants = len(catalogue.get_kata(SLUG).misconceptions)
    assert f"{SLUG}: 13 public checks, 0 only in your grading (none); {variants} of {variants}" in report
    fixed = report.split("the same under your course (")[1].split(")")[0].split(", ")
    assert "test_singleton_group_gets_zero_advantage" in fixed and len(fixed) == 4, fixed
    assert not [name for name in fixed if "random" in name]
    assert tomllib.loads((out / "course.toml").read_text(encoding="utf-8"))["seed"]
    assert not (out / "pack" / "course.toml").exists()


def _statements(source: str) -> set[str]:
    """The reference's statements inside its TODOs, as written, 20 characters or more."""
    lines = source.splitlines()
    found = set()
    for region in render.find_regions(source):
        for line in lines[region.start + 1 : region.end]:
            text = line.strip()
            if len(text) >= 20 and not text.startswith("#"):
                found.add(text)
    return found


def test_no_reference_in_any_form(out):
    kata = catalogue.get_kata(SLUG)
    blank = kata.template("en") + kata.template("zh")
    statements = {text for text in _statements(kata.solution()) if text not in blank}
    assert statements, "the search must have something to look for"
    pack = out / "pack"
    assert not (pack / "reference").exists() and not list(pack.rglob("reference/*.py"))
    for path in pack.rglob("*"):
        if not path.is_file() or path.suffix in (".so", ".bin") or "_vendor" in path.parts:
            continue
        text = path.read_bytes().decode("utf-8", "replace")
        assert not [s for s in statements if s in text], path
    references = [kata.solution()] + [kata.variant(m.id) for m in kata.misconceptions]
    wanted = {code.co_code for source in references for code in _code_objects(compile(source, "r", "exec"))}
    wanted = {code for code in wanted if len(code) > 16}  # longer than a bare `return x`
    for path in pack.rglob("*.py"):
        if "_vendor" in path.parts:
            continue
        compiled = compile(path.read_text(encoding="utf-8"), str(path), "exec")
        assert not [c for c in _code_objects(compiled) if c.co_code in wanted], path


def _code_objects(code):
    yield code
    for constant in code.co_consts:
        if hasattr(constant, "co_code"):
            yield from _code_objects(constant)


def test_installs_offline_and_grades_from_recorded_values(out, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "torch==2.13.0"], check=True)
    subprocess.run([*pip, "--no-index", str(out / "pack")], check=True)
    kata = catalogue.get_kata(SLUG)
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}

    def check(source: str) -> dict:
        (work / "mine.py").write_text(source, encoding="utf-8")
        ran = subprocess.run(
            ["kata", "check", SLUG, "--file", "mine.py", "--json"], cwd=work, env=env, capture_output=True, text=True
        )
        return json.loads(ran.stdout)

    assert check(kata.solution())["failed"] == 0
    assert check(kata.template())["passed"] <= 1  # the input contract at most
    for item in kata.misconceptions:
        result = check(kata.variant(item.id))
        assert result["failed"] and result["diagnosis"] is not None, item.id
    for command in (["start", SLUG], ["hint", SLUG], ["show", SLUG], ["list"]):
        assert subprocess.run(["kata", *command], cwd=work, env=env, capture_output=True).returncode == 0
    for command in (["solution", SLUG, "--force"], ["drill", SLUG]):
        assert subprocess.run(["kata", *command], cwd=work, env=env, capture_output=True).returncode == 2
    assert not list((venv / "lib").rglob("reference/group_advantages.py"))
    assert ast.parse((work / "kata_workspace" / f"{SLUG}.py").read_text(encoding="utf-8"))


def test_recorded_values_cannot_be_replayed_into_a_grade(out, tmp_path):
    """On the checks' own seeds the replaying file passes every check the pack recorded values for
    (the attack is real); graded under the course seed `kata pack` wrote, it fails each that draws
    its inputs at random, while its honest twin passes every check."""
    from cli_support import kata_script
    from conftest import need_sandbox

    need_sandbox()
    submissions = tmp_path / "class"
    for student, source in (
        ("replayer", replayer(out / "pack", SLUG)),
        ("honest", catalogue.get_kata(SLUG).solution()),
    ):
        (submissions / student).mkdir(parents=True)
        (submissions / student / f"{SLUG}.py").write_text(source, encoding="utf-8")

    titles = {}

    def grade(*options) -> dict[str, dict[str, str]]:
        grades = tmp_path / f"grades{len(options)}"
        ran = kata_script("grade", submissions, "--out", grades, "--workers", "2", *options, cwd=tmp_path)
        assert ran.status == 0, ran.err
        sheet = json.loads((grades / "grades.json").read_text(encoding="utf-8"))
        titles.update({check["name"]: check["title"] for check in sheet["students"]["honest"][SLUG]["checks"]})
        return {
            student: {check["name"]: check["status"] for check in sheet["students"][student][SLUG]["checks"]}
            for student in ("replayer", "honest")
        }

    from grader.judging.recorded import Book

    book = Book.load(out / "pack" / "katas" / SLUG / "recorded.bin")
    plain, coursed = grade(), grade("--course", out / "course.toml")
    consistency = {  # these call the learner again on inputs of its own outputs: no recording answers them
        name for name, title in titles.items() if title.startswith("Self-consistency")
    }
    recorded = {name.removeprefix("test_") for name, entries in book.checks.items() if entries} - consistency
    assert set(plain["replayer"]) >= recorded and len(recorded) >= 8 and len(consistency) == 2
    assert not [name for name in recorded if plain["replayer"][name] != "passed"], plain["replayer"]
    assert set(coursed["honest"].values()) == {"passed"}, coursed["honest"]
    drawn = {f"matches_reference_on_random_groups[{seed}]" for seed in range(3)} | {"each_group_has_zero_mean"}
    assert not [name for name in drawn if coursed["replayer"][name] == "passed"], coursed["replayer"]
    assert sum(status != "passed" for status in coursed["replayer"].values()) >= len(recorded) // 2
