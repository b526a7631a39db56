"""Learner code is untrusted: whatever a file does, grading finishes, reports it as a failed
check with a one-line reason, and never shows a traceback of the grader's own.

The files are graded as `kata grade` grades a class (warm workers that fork a judge per file);
in the full suite, those whose ending involves processes are also graded as `kata check` grades
one (a judge process of its own per file, a torch import each) and must be graded the same.
"""

import textwrap
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from grader.content.catalogue import get_kata
from grader.run.grading import run_checks

KATA = get_kata("group_advantages")
TIMEOUT = 2.0
REFERENCE = KATA.solution()


def body(code: str) -> str:
    """A file whose compute_group_advantages runs `code` first, then the reference computation."""
    first_line = "    eps = _check_rewards(rewards, group_ids, eps)\n"
    assert REFERENCE.count(first_line) == 1
    return REFERENCE.replace(first_line, textwrap.indent(textwrap.dedent(code).strip(), "    ") + "\n" + first_line)


FILES = {
    "hang_at_import": "while True:\n    pass\n",
    "exit_at_import": "import os\nos._exit(0)\n",
    "sys_exit_at_import": "import sys\nsys.exit(3)\n",
    "syntax_error": "def compute_group_advantages(rewards, group_ids, eps=1e-6)\n    return rewards\n",
    "import_error": "import this_module_does_not_exist\n",
    "missing_function": "def group_advantages(rewards, group_ids, eps=1e-6):\n    return rewards\n",
    "hang_in_call": body("while True:\n    pass"),
    "segfault_in_call": body("import ctypes\nctypes.string_at(0)"),
    "sys_exit_in_call": body("import sys\nsys.exit(0)"),
    "os_exit_in_call": body("import os\nos._exit(0)"),
    "wrong_return_type": body("return [0.0] * len(rewards)"),
    "mutates_input": body("rewards -= rewards.mean()"),
    "type_error": body("rewards = rewards + 'oops'"),
    "prints_megabytes_and_passes": body("print('x' * 1_000_000)"),
    "prints_megabytes_and_fails": body("print('y' * 5_000_000)\nreturn rewards * 0"),
    "leaves_a_sleeping_grandchild": body("import os, time\nif os.fork() == 0:\n    time.sleep(60)\n    os._exit(0)"),
}

ENDINGS_WITH_PROCESSES = (  # also graded as `kata check` grades a file (in the full suite)
    "hang_at_import",
    "exit_at_import",
    "hang_in_call",
    "segfault_in_call",
    "os_exit_in_call",
    "prints_megabytes_and_fails",
    "leaves_a_sleeping_grandchild",
)


@pytest.fixture(scope="module")
def results(tmp_path_factory, grade_as_a_class):
    """{case: (GradeResult, seconds)} for every file above."""
    return grade_as_a_class(KATA.slug, FILES, tmp_path_factory.mktemp("untrusted"), TIMEOUT)


def statuses(result):
    return {check.status for check in result.checks}


def no_grader_traceback(result):
    text = (result.load_error or "") + "".join(check.message for check in result.checks)
    return "grader/" not in text and "_pytest" not in text


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("hang_at_import", "did not finish within 2 s"),
        ("exit_at_import", "exited with status 0"),
        ("sys_exit_at_import", "sys.exit(3)"),
        ("syntax_error", "SyntaxError on line 1"),
        ("import_error", "ModuleNotFoundError"),
    ],
)
def test_a_file_that_cannot_load_fails_every_check_once(results, case, words):
    result, seconds = results[case]
    assert result.load_error and words in result.load_error
    assert result.passed == 0 and statuses(result) == {"error"}
    assert seconds < 30
    assert no_grader_traceback(result)


def test_a_missing_function_is_named(results):
    result, _ = results["missing_function"]
    assert result.passed == 0
    assert all("no function `compute_group_advantages`" in check.message for check in result.checks)


def test_an_endless_loop_times_out_once_and_is_not_waited_for_again(results):
    result, seconds = results["hang_in_call"]
    assert result.passed == 0 and statuses(result) == {"timeout"}
    first, *rest = result.checks
    assert "did not finish within 2 s inside `compute_group_advantages`" in first.message
    assert all("not run again" in check.message for check in rest)
    assert seconds < TIMEOUT * 3 + 15


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("segfault_in_call", "crashed (SIGSEGV) inside `compute_group_advantages`"),
        ("sys_exit_in_call", "sys.exit(0)"),
        ("os_exit_in_call", "exited with status 0 inside `compute_group_advantages`"),
        ("type_error", "TypeError"),
    ],
)
def test_a_crash_or_exit_in_a_call_is_an_error_not_a_pass(results, case, words):
    result, _ = results[case]
    assert result.passed == 0
    assert statuses(result) == {"error"}
    assert all(words in check.message for check in result.checks), result.checks[0].message
    assert no_grader_traceback(result)


def test_a_learner_error_points_at_the_learners_line(results):
    result, _ = results["type_error"]
    assert "in compute_group_advantages: `rewards = rewards + 'oops'`" in result.checks[0].message


def test_a_wrong_return_type_is_explained(results):
    result, _ = results["wrong_return_type"]
    assert result.passed == 0
    assert "returned a list" in result.checks[0].message


def test_mutating_an_input_is_reported(results):
    result, _ = results["mutates_input"]
    assert any("changed its input `rewards` in place" in check.message for check in result.checks)


def test_megabytes_of_output_are_cut_and_do_not_change_the_grade(results):
    passing, _ = results["prints_megabytes_and_passes"]
    assert passing.failed == 0
    failing, _ = results["prints_megabytes_and_fails"]
    assert failing.passed < len(failing.checks)
    printed = [check.output for check in failing.checks if check.output]
    assert printed and all(len(text) < 10_000 and "bytes of output cut" in text for text in printed)


def test_a_grandchild_left_behind_does_not_hold_up_grading(results):
    result, seconds = results["leaves_a_sleeping_grandchild"]
    assert result.failed == 0
    assert seconds < 30


@pytest.mark.slow
def test_kata_check_grades_them_as_kata_grade_does(results, tmp_path):
    def check(case):
        path = tmp_path / f"{case}.py"
        path.write_text(FILES[case], encoding="utf-8")
        start = time.perf_counter()
        return case, (run_checks(KATA, path, timeout=TIMEOUT), time.perf_counter() - start)

    with ThreadPoolExecutor(max_workers=2) as pool:
        checked = dict(pool.map(check, ENDINGS_WITH_PROCESSES))
    for case, (result, seconds) in checked.items():
        graded, _ = results[case]
        assert [(c.name, c.status, c.message) for c in result.checks] == [
            (c.name, c.status, c.message) for c in graded.checks
        ], case
        assert result.load_error == graded.load_error, case
        assert seconds < 30 and no_grader_traceback(result)


def test_a_syntax_error_shows_its_line_as_written_with_a_caret_under_the_cause():
    from grader.judging.outcomes import import_failure
    from grader.run.contestant import raised

    source = "def f(x):\n    y = x\n        return y\n"
    try:
        compile(source, "kata.py", "exec")
    except SyntaxError as error:
        account = raised(error, "kata.py")
    shown = import_failure(account)

    heading, line, caret = shown.splitlines()
    assert heading == "IndentationError on line 3: unexpected indent"
    assert line == "            return y"  # its own 8 spaces of indentation kept, under 4 of the message's
    assert caret == "    " + " " * (account["syntax"][3] - 1) + "^"
