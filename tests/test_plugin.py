"""The pytest plugin, driven as a user drives it: `pytest --kata SLUG --kata-file PATH`.

Three runs are fresh `pytest` processes, as a user starts one (the plugin found through its entry
point); the others run in this process (pytester's `runpytest_inprocess`), which saves a torch
import each (1-3 s). torch is imported here first, so that pytester's restoring of `sys.modules`
after a run leaves it loaded: a torch imported twice in one process fails.
"""

import json
import re

import pytest
import torch  # noqa: F401  (see above)

from grader.content.catalogue import get_kata

SOLUTION = get_kata("grpo_loss").solution()


def test_the_plugin_is_inert_without_kata_options(pytester):
    pytester.makepyfile(test_plain="def test_one():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1)
    assert "kata:" not in result.stdout.str()


def test_grades_a_learner_file_with_plain_pytest(pytester):
    learner = pytester.makepyfile(grpo_loss=SOLUTION)
    result = pytester.runpytest_subprocess("--kata", "grpo_loss", "--kata-file", str(learner))
    outcomes = result.parseoutcomes()
    assert outcomes["passed"] > 10 and "failed" not in outcomes
    result.stdout.fnmatch_lines([f"kata: {outcomes['passed']} passed, 0 failed"])


def test_names_the_misconception_and_writes_the_json_report(pytester):
    learner = pytester.makepyfile(grpo_loss=SOLUTION.replace("log_probs_old.detach()", "log_probs_old"))
    report = pytester.path / "result.json"
    result = pytester.runpytest_inprocess(
        "--kata", "grpo_loss", "--kata-file", str(learner), "--kata-report", str(report)
    )
    assert result.ret == 1
    result.stdout.fnmatch_lines(["kata: likely misconception: old log-probs not detached (old_not_detached)"])
    data = json.loads(report.read_text())
    failed = [check for check in data["checks"] if check["status"] != "passed"]
    assert failed and {check["misconception"] for check in failed} == {"old_not_detached"}
    assert data["failed"] == len(failed) and data["passed"] == len(data["checks"]) - len(failed)


def test_grades_the_template_and_a_misconception_variant_as_built_in_targets(pytester):
    template = pytester.runpytest_inprocess("--kata", "group_advantages", "--kata-target", "template")
    assert template.ret == 1 and "passed" not in template.parseoutcomes()
    variant = pytester.runpytest_inprocess("--kata", "group_advantages", "--kata-target", "misconception:sample_std")
    variant.stdout.fnmatch_lines(["kata: likely misconception: sample std instead of population std (sample_std)"])


def test_only_the_kata_checks_are_collected_when_no_path_is_given(pytester):
    pytester.makepyfile(test_unrelated="def test_unrelated():\n    raise AssertionError('must not run')\n")
    result = pytester.runpytest_inprocess("--kata", "group_advantages", "--kata-target", "reference")
    assert "failed" not in result.parseoutcomes()
    assert "test_unrelated" not in result.stdout.str()


def test_usage_errors_are_one_line_and_do_not_run_anything(pytester):
    unknown = pytester.runpytest_inprocess("--kata", "grpo_los", "--kata-target", "reference")
    assert unknown.ret == 4
    unknown.stderr.fnmatch_lines(["*unknown kata 'grpo_los'. Did you mean 'grpo_loss'?*"])
    both = pytester.runpytest_inprocess("--kata", "grpo_loss", "--kata-target", "reference", "--kata-file", "x.py")
    both.stderr.fnmatch_lines(["*give exactly one of --kata-file PATH and --kata-target TARGET*"])
    missing = pytester.runpytest_inprocess("--kata", "grpo_loss", "--kata-file", "nowhere.py")
    missing.stderr.fnmatch_lines(["*no such file: nowhere.py*"])
    bad_variant = pytester.runpytest_inprocess("--kata", "grpo_loss", "--kata-target", "misconception:nope")
    bad_variant.stderr.fnmatch_lines(["*grpo_loss has no misconception 'nope'*"])


def test_kata_fixtures_without_kata_options_fail_with_a_clear_message(pytester):
    pytester.makepyfile(test_uses_fixture="def test_it(expect):\n    pass\n")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*kata checks need --kata SLUG and --kata-file PATH (or --kata-target)*"])


def test_the_judge_uses_the_arena_it_is_given(pytester, monkeypatch):
    """`kata check` and `kata grade` start the warm process before the judge; a second one would
    cost a torch import."""
    from grader.judging import plugin
    from grader.run.arena import Arena

    arena = Arena.start(["import torch"], sandboxed=False)
    monkeypatch.setattr(Arena, "start", lambda *args, **kwargs: pytest.fail("the judge started an arena of its own"))
    try:
        result = pytester.runpytest_inprocess(
            "--kata", "group_advantages", "--kata-target", "reference", plugins=[plugin.Given(arena)]
        )
    finally:
        arena.close()
    outcomes = result.parseoutcomes()
    assert outcomes["passed"] > 5 and "failed" not in outcomes and "error" not in outcomes


# -- the messages of `expect` --------------------------------------------------------------------


def loss_and_count(x):
    """The reference of the tests below: two returned values, named by its return statement."""
    total = x.sum()
    count = x.numel()
    return total, count


class Returns:
    """A stand-in for the learner's module whose every call returns `value` and leaves the inputs alone."""

    def __init__(self, value):
        self.value = value

    def call_and_inputs(self, name, *args, **kwargs):
        return self.value, [*args, *kwargs.values()]


def failure(run) -> str:
    from grader.judging.expect import CheckFailed

    with pytest.raises(CheckFailed) as failed:
        run()
    return str(failed.value)


def test_a_wrong_returned_value_is_named_by_its_place_and_the_references_name():
    from types import SimpleNamespace

    from grader.judging.expect import Expect

    expect = Expect(Returns((torch.tensor(6.0), 4)), SimpleNamespace(loss_and_count=loss_and_count))

    message = failure(lambda: expect.matches_reference("loss_and_count", torch.ones(2, 3)))

    assert "\n  the second returned value, `count`:\n  expected: 6\n  got:      4" in message
    assert "returned value 1" not in message


def test_a_large_tensor_difference_shows_the_values_around_it_side_by_side():
    from grader.judging.expect import Expect

    expected = torch.arange(84, dtype=torch.float32).reshape(12, 7)
    got = expected.clone()
    got[3, 4] += 0.5

    message = failure(lambda: Expect(None, None).same(got, expected, "f(x)"))

    lines = message.splitlines()
    assert lines[-1] == "  largest difference 0.5 at [3, 4] (expected 25, got 25.5)"
    assert [line.split() for line in lines[-7:-1]] == [
        ["[3,", "1]", "22", "22"],
        ["[3,", "2]", "23", "23"],
        ["[3,", "3]", "24", "24"],
        [">", "[3,", "4]", "25", "25.5"],
        ["[3,", "5]", "26", "26"],
        ["[3,", "6]", "27", "27"],
    ]
    assert "expected" in lines[-8] and "got" in lines[-8]
    assert max(map(len, lines)) <= 80


def test_a_tensor_a_check_compares_itself_reads_like_expects_at_most_7_values_at_4_digits_or_to_where_they_differ():
    from grader.judging.expect import compared, values_text

    want = torch.linspace(-1.0, 1.0, 21, dtype=torch.float64).reshape(3, 7) / 3
    got = want.clone()
    got[1, 3] += 0.25
    got[2, 5] += 2e-6  # differs in its 6th significant digit

    lines = compared(got, want).splitlines()
    rows = [line for line in lines if re.match(r"^\s+>?\s*\[\d+, \d+\]", line)]

    assert lines[:2] == ["  expected: <float64 tensor of shape (3, 7)>", "  got:      <float64 tensor of shape (3, 7)>"]
    assert len(rows) == 7 and ">" in rows[3] and "[1, 3]" in rows[3]
    assert all(len(re.sub(r"[-.]|e.*", "", number).lstrip("0")) <= 4 for row in rows for number in row.split()[-2:])
    assert lines[-1].startswith("  largest difference 0.25 at [1, 3]")
    assert compared(got, want, atol=1e-9).count("[") > 0 and compared(want, want) == ""
    small = torch.zeros(3, 7, dtype=torch.float64)
    small[2, 5] = 1 / 3
    close = small.clone()
    close[2, 5] += 2e-6
    assert "(expected 0.33333, got 0.33334)" in compared(close, small)
    assert values_text(torch.arange(21.0)).count(":") == 4  # the first value and the WINDOW after it


def split_in_two(x):
    """Halves of x.

    Returns:
        (head, tail): the first half and the rest.
    """
    return tuple(x.chunk(2))


def test_returned_values_are_named_by_the_docstring_when_the_return_statement_does_not_say():
    from grader.judging.expect import returned_names

    assert returned_names(split_in_two) == ("head", "tail")
    assert returned_names(loss_and_count) == ("total", "count")
