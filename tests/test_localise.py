"""Fault localisation by transplant: the search (pure), and learner files graded as a class is graded,
including files that try to tell a hybrid from their own run."""

import json

import pytest
import torch  # noqa: F401  (imported before pytester's in-process runs: see test_plugin)

from grader.content.catalogue import get_kata
from grader.content.render import apply_edit
from grader.judging import localise
from grader.report.results import Location

KATA = get_kata("grpo_loss")
CORRECT = KATA.template(filled=True)
MAX_FOR_MIN = ("-torch.minimum(surrogate, clipped_surrogate)", "-torch.maximum(surrogate, clipped_surrogate)")
MASK_IGNORED = (
    "token_sums = per_token_loss.masked_fill(~response_mask, 0.0).sum(dim=-1)",
    "token_sums = per_token_loss.sum(dim=-1)",
)
GIVEN_CODE = ("advantages = compute_group_advantages(rewards, group_ids, eps=eps)  # (B,)",
              "advantages = 2 * compute_group_advantages(rewards, group_ids, eps=eps)  # (B,)")  # fmt: skip


def edited(*edits: tuple[str, str], text: str = CORRECT) -> str:
    for find, replace in edits:
        text = apply_edit(text, find, replace)
    return text


# -- the search -----------------------------------------------------------------------------------


def test_candidates_come_in_waves_singles_then_pairs_then_all():
    assert localise.candidate_sets([1, 2, 3], set()) == [[(1,), (2,), (3,)], [(1, 2), (1, 3), (2, 3)], [(1, 2, 3)]]
    assert localise.candidate_sets([1], set()) == [[(1,)]]
    assert localise.candidate_sets([1, 2], set()) == [[(1,), (2,)], [(1, 2)]]


def test_every_size_of_set_is_tried_those_the_checks_point_to_first():
    """Issue 31: triples too (with TODOs 2, 3 and 4 wrong, not every TODO), and within a size the sets
    holding more of the failing checks' TODOs first."""
    waves = localise.candidate_sets([1, 2, 3, 4], set(), [2, 3, 4])
    assert [len(wave[0]) for wave in waves] == [1, 2, 3, 4]
    assert waves[2] == [(2, 3, 4), (1, 2, 3), (1, 2, 4), (1, 3, 4)]
    assert waves[0] == [(2,), (3,), (4,), (1,)]


def test_unwritten_todos_belong_to_every_candidate():
    assert localise.candidate_sets([1, 2, 3], {2}) == [[(2,)], [(1, 2), (2, 3)], [(1, 2, 3)]]
    assert localise.candidate_sets([1, 2], {1, 2}) == [[(1, 2)]]
    assert localise.unwritten_todos(KATA.template()) == {1, 2, 3, 4}
    assert localise.unwritten_todos(CORRECT) == set()


def passing_when(needed: set[int]):
    """A stand-in for grading hybrids: a hybrid passes when the reference's code is in every TODO of `needed`
    (seen by the reference's TODO 2 and TODO 4 lines being in it)."""
    lines = {2: "ratio = torch.exp(log_probs_new - log_probs_old.detach())", 4: MASK_IGNORED[0]}

    def first_passing(sources: list[str]) -> int | None:
        passing = [all(lines.get(todo, "no such line") in source for todo in needed) for source in sources]
        return passing.index(True) if True in passing else None

    return first_passing


def test_the_smallest_set_that_passes_is_the_location():
    wrong = edited(("torch.exp(log_probs_new - log_probs_old.detach())", "torch.exp(log_probs_new)"), MASK_IGNORED)
    assert localise.locate(wrong, KATA.solution(), [1], passing_when({2, 4})) == Location((2, 4), "transplant")
    assert localise.locate(wrong, KATA.solution(), [1], passing_when({9})) == Location((), "outside_todos")


@pytest.mark.parametrize("markers", ["    # END TODO 4\n", "    # TODO 3: "])
def test_without_the_exercises_markers_the_tags_locate_it(markers):
    wrong = edited(MAX_FOR_MIN, (markers, "    # "))
    assert localise.locate(wrong, KATA.solution(), [2, 3], passing_when(set())) == Location((2, 3), "tags", "markers")


def test_three_wrong_todos_are_located_in_those_three():
    wrong = edited(("torch.exp(log_probs_new - log_probs_old.detach())", "torch.exp(log_probs_new)"), MAX_FOR_MIN,
                   MASK_IGNORED)  # fmt: skip
    lines = {2: "log_probs_old.detach())", 3: MAX_FOR_MIN[0], 4: MASK_IGNORED[0]}

    def first_passing(sources):
        passing = [all(line in source for line in lines.values()) for source in sources]
        return passing.index(True) if True in passing else None

    assert localise.locate(wrong, KATA.solution(), [2, 3, 4], first_passing) == Location((2, 3, 4), "transplant")


RENAMED = CORRECT.replace("per_token_loss", "loss_tok")  # TODO 3 and TODO 4 agree on another name


def test_a_name_the_guidance_hands_on_but_not_assigned_locates_by_the_tags_and_is_said():
    """Issue 31: `loss_tok` for `per_token_loss` makes every hybrid that replaces TODO 3 or TODO 4 alone
    fail at the seam: the failing checks' TODOs locate, and the location names what the guidance expects."""
    wrong = edited(MAX_FOR_MIN, text=RENAMED)
    location = localise.locate(wrong, KATA.solution(), [3], passing_when({3, 4}))
    assert location == Location((3,), "tags", "names", ((3, "per_token_loss"),))
    assert location.to_json()["names"] == [[3, "per_token_loss"]]
    assert Location.from_json(location.to_json()) == location
    assert localise.locate(edited(MAX_FOR_MIN), KATA.solution(), [3], passing_when(set())) == Location(
        (3,), "transplant"
    )


def test_out_of_time_falls_back_to_the_tags():
    def out_of_time(sources):
        raise localise.OutOfTime

    assert localise.locate(edited(MAX_FOR_MIN), KATA.solution(), [2], out_of_time) == Location((2,), "tags", "time")


VARIANTS = ("old_not_detached", "max_instead_of_min", "mask_ignored")  # TODOs 2, 3 and 4

# -- learner files, graded as kata grade grades a class ------------------------------------------

# Learner code that could tell its own run from a hybrid's would steer the blame. Here TODO 3 (wrong)
# leaves a file behind when it runs, and the file's given code exits at load when it finds one. The
# hybrid with the reference's TODO 3 never writes it: it passes only if it starts in a fresh folder.
LEAVES_A_TRACE = edited(
    (MAX_FOR_MIN[0], f"{MAX_FOR_MIN[1]}\n    open('trace', 'w').close()"),
    ("LOSS_TYPES = (", "import os\n\nif os.path.exists('trace'):\n    raise SystemExit(3)\n\nLOSS_TYPES = ("),
)
FILES = {
    "correct": CORRECT,
    "max_for_min": edited(MAX_FOR_MIN),
    "two_todos": edited(MAX_FOR_MIN, MASK_IGNORED),
    "given_code": edited(GIVEN_CODE),
    "no_markers": edited(MAX_FOR_MIN, ("    # END TODO 4\n", "")),
    "blank": KATA.template(),
    "syntax_error_in_todo_2": edited(("clipped_ratio = ratio.clamp(", "clipped_ratio = ratio.clamp((")),
    "leaves_a_trace": LEAVES_A_TRACE,
    "three_todos": edited(*[(KATA.misconception(m).find, KATA.misconception(m).replace) for m in VARIANTS]),
    "renamed": edited(MAX_FOR_MIN, text=RENAMED),
}


@pytest.fixture(scope="module")
def located(tmp_path_factory, grade_as_a_class):
    results = grade_as_a_class(KATA.slug, FILES, tmp_path_factory.mktemp("localise"), 10.0)
    return {name: result for name, (result, _) in results.items()}


@pytest.mark.parametrize(
    ("name", "location"),
    [
        ("correct", None),
        ("max_for_min", Location((3,), "transplant")),
        ("two_todos", Location((3, 4), "transplant")),
        ("given_code", Location((), "outside_todos")),
        ("blank", Location((1, 2, 3, 4), "transplant")),
        ("syntax_error_in_todo_2", Location((2,), "transplant")),
    ],
)
def test_a_files_mistake_is_located(located, name, location):
    assert located[name].location == location
    assert (located[name].failed == 0) == (location is None)


def test_three_wrong_todos_each_get_their_own_diagnosis(located):
    """Issue 31: located in exactly TODOs 2, 3 and 4, each named (TODO 2's from its mistake alone: the
    file's gradient check prints another value with TODOs 3 and 4 wrong too); the headline, `Next:` and
    the JSON agree."""
    result = located["three_todos"]
    assert result.location == Location((2, 3, 4), "transplant")
    named = [(d.todo, d.misconception) for d in result.diagnoses]
    assert named == list(zip((2, 3, 4), VARIANTS, strict=True))
    assert result.next_todo == 2 and result.diagnosis == "old_not_detached"
    assert [d["todo"] for d in result.to_json()["diagnoses"]] == [2, 3, 4]


def test_a_renamed_variable_is_located_by_the_checks_tags(located):
    result = located["renamed"]
    assert result.location == Location((3,), "tags", "names", ((3, "per_token_loss"),))
    assert result.diagnosis == "max_instead_of_min"


def test_without_the_markers_the_failing_checks_tags_locate_it(located):
    result = located["no_markers"]
    assert result.location == Location(tuple(result.failing_todos), "tags", "markers")
    assert 3 in result.failing_todos


def test_the_json_says_where_and_how(located):
    assert located["two_todos"].to_json()["location"] == {"todos": [3, 4], "method": "transplant"}
    assert located["given_code"].to_json()["location"] == {"todos": [], "method": "outside_todos"}
    assert located["correct"].to_json()["location"] is None
    assert located["max_for_min"].todos_to_fix == [3]


def test_every_check_and_every_hybrid_starts_in_a_fresh_folder(located):
    """A trace one check leaves is not there for the next, nor for a hybrid: the file fails exactly
    as its twin without the trace does, and TODO 3 is located."""
    result, twin = located["leaves_a_trace"], located["max_for_min"]
    assert [(check.name, check.status) for check in result.checks] == [(c.name, c.status) for c in twin.checks]
    assert result.location == twin.location == Location((3,), "transplant")


@pytest.mark.slow
def test_without_the_sandbox_every_contestant_starts_in_a_fresh_folder_too(pytester):
    """`kata check` where bwrap does not work: every contestant works in a new copy of the
    learner's folder, never in the run's own folder; the file fails as its twin without the trace."""
    statuses = {}
    for name, text in (("leaves", LEAVES_A_TRACE), ("twin", FILES["max_for_min"])):
        learner = pytester.mkdir(name) / "grpo_loss.py"
        learner.write_text(text, encoding="utf-8")
        report = pytester.path / f"{name}.json"
        arguments = ["--kata", "grpo_loss", "--kata-file", str(learner), "--kata-report", str(report)]
        pytester.runpytest_inprocess(*arguments, "--kata-sandbox", "off")
        data = json.loads(report.read_text())
        assert not data["sandboxed"] and data["location"] == {"todos": [3], "method": "transplant"}
        statuses[name] = [(check["name"], check["status"]) for check in data["checks"]]
    assert not (pytester.path / "trace").exists() and not (pytester.path / "leaves" / "trace").exists()
    assert statuses["leaves"] == statuses["twin"]


def test_a_misconception_of_another_todo_is_not_the_diagnosis(tmp_path, grade_as_a_class):
    """beta folded into dpo_loss's margin (TODO 1) and applied again by the loss fails some checks as IPO
    written with beta * h (a TODO 3 misconception) does; transplanting TODO 1 alone fixes the file."""
    kata = get_kata("dpo_loss")
    text = edited(
        ("margin = chosen_logratios - rejected_logratios", "margin = beta * (chosen_logratios - rejected_logratios)"),
        text=kata.template(filled=True),
    )
    ((result, _),) = grade_as_a_class(kata.slug, {"beta_twice": text}, tmp_path, 10.0).values()
    assert result.location == Location((1,), "transplant")
    assert all(kata.misconception(match).todo == 1 for check in result.checks for match in check.matches)
    assert result.diagnosis is None or kata.misconception(result.diagnosis).todo == 1
