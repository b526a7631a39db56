"""A file cannot steer its own points (issue 27, item 1): points follow which of the file's own
checks fail, never where its mistake was located.

Two kinds of proof, end to end, through the warm workers of `kata grade`:
- steering files, each against its honest twin (a misconception variant): one without the TODO
  markers, one that fails on purpose when it runs as a hybrid, one that sleeps only as a hybrid
  until the localiser's time runs out. A hybrid can tell itself apart: the code being executed
  differs from the file on disk. Each scores exactly its twin's points.
- every hostile and wrong-solution file here (test_hostile's attacks, every misconception variant
  of two katas, the steering files) graded three times: as it is, with every hybrid forced to pass,
  and with every hybrid forced to fail (a sitecustomize.py on the workers' PYTHONPATH replaces
  Locator._passes). Its points are the same all three times, while its location is not.
"""

import textwrap

import pytest
from conftest import need_sandbox
from test_hostile import CASES, learner

from grader.classroom import batch, gradesheet
from grader.content.catalogue import get_kata
from grader.report.results import GradeResult

STEERED = get_kata("token_logprobs")  # a kata with whole-function checks
TWIN = "masked_by_multiplying"
HOSTILE = get_kata("group_advantages")  # test_hostile's kata
TIMEOUT = 5.0

IN_A_HYBRID = f"""
import pathlib as _pathlib
import sys as _sys


def _in_a_hybrid() -> bool:
    \"\"\"Whether the module being executed is not the file on disk (the localiser's hybrid).\"\"\"
    module = _sys._getframe(1).f_code
    try:
        disk = _pathlib.Path("{STEERED.slug}.py").read_text()
    except OSError:
        return True
    return compile(disk, module.co_filename, "exec") != module
"""


def steering_files() -> dict[str, str]:
    """{name: source}: the twin, and the twin steering its location three ways."""
    twin = STEERED.variant(TWIN)
    unmarked = "\n".join(line for line in twin.splitlines() if "TODO" not in line) + "\n"
    return {
        "twin": twin,
        "no_markers": unmarked,
        "fails_in_hybrids": twin + IN_A_HYBRID + "\nif _in_a_hybrid():\n    raise SystemExit(1)\n",
        "slow_in_hybrids": twin + IN_A_HYBRID + "\nif _in_a_hybrid():\n    import time\n    time.sleep(60)\n",
    }


def hostile_files() -> dict[str, str]:
    return {f"hostile_{case}": learner(setup, answer) for case, (setup, answer) in CASES.items()}


def variants(kata) -> dict[str, str]:
    return {f"variant_{item.id}": kata.variant(item.id) for item in kata.misconceptions}


FORCE = """
import os
if os.environ.get("KATA_TEST_HYBRIDS") in ("pass", "fail"):
    from grader.judging import locating
    _verdict = os.environ["KATA_TEST_HYBRIDS"] == "pass"
    locating.Locator._passes = lambda self, source: _verdict
"""


def grade(root, files: dict[str, dict[str, str]]) -> dict[tuple[str, str], GradeResult]:
    """{(slug, name): result} for every file, graded by fresh warm workers (they start now, so they
    read the environment as it is now)."""
    settings = batch.Settings(timeout=TIMEOUT)
    jobs = []
    for slug, texts in files.items():
        for name, text in texts.items():
            folder = root / slug / name
            folder.mkdir(parents=True)
            (folder / f"{slug}.py").write_text(text)
            jobs.append(batch.Job(name, slug, folder, "", settings))
    records = batch.graded_records(jobs, 2)
    return {(record["kata"], record["student"]): GradeResult.from_json(record["grade"]) for record in records}


def points(slug: str, result: GradeResult) -> dict[str, int]:
    return gradesheet.earned_points(result, gradesheet.kata_points(slug))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """{mode: {(slug, name): result}} for mode "as is", "pass" and "fail"."""
    need_sandbox()
    hook = tmp_path_factory.mktemp("force-hybrids")
    (hook / "sitecustomize.py").write_text(textwrap.dedent(FORCE))
    files = {
        STEERED.slug: steering_files() | variants(STEERED),
        HOSTILE.slug: hostile_files() | variants(HOSTILE),
    }
    results = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", str(hook))
        for mode in ("as is", "pass", "fail"):
            patch.setenv("KATA_TEST_HYBRIDS", mode)
            results[mode] = grade(tmp_path_factory.mktemp(mode.replace(" ", "_")), files)
    return results


@pytest.mark.slow
@pytest.mark.parametrize("name", ["no_markers", "fails_in_hybrids", "slow_in_hybrids"])
def test_a_file_steering_its_location_scores_exactly_its_twin(graded, name):
    results = graded["as is"]
    twin, steering = results[STEERED.slug, "twin"], results[STEERED.slug, name]
    assert twin.location is not None and twin.location.method == "transplant", twin.location
    assert [check.status for check in steering.checks] == [check.status for check in twin.checks]
    assert steering.location != twin.location  # it did steer the location ...
    assert points(STEERED.slug, steering) == points(STEERED.slug, twin)  # ... and not its points
    assert points(STEERED.slug, twin) != gradesheet.kata_points(STEERED.slug)


@pytest.mark.slow
def test_forcing_every_hybrid_to_pass_or_to_fail_changes_no_files_points(graded):
    moved = 0
    for (slug, name), result in graded["as is"].items():
        assert result.checks, (name, result.load_error)
        forced = [graded[mode][slug, name] for mode in ("pass", "fail")]
        assert [points(slug, other) for other in forced] == [points(slug, result)] * 2, name
        moved += len({repr(other.location) for other in [result, *forced]}) > 1
    assert moved >= len(graded["as is"]) // 2  # the hook took: the locations did move
