"""run_forked: a time limit, bounded output and a post-mortem for work done in a child."""

import ctypes
import os
import sys
import time

from grader.isolation import OUTPUT_KEEP, run_forked, traced


def test_returns_the_childs_value():
    outcome = run_forked(lambda: {"answer": 42}, timeout=5)
    assert outcome.finished and outcome.value == {"answer": 42} and outcome.exit_code == 0


def test_kills_a_child_that_runs_out_of_time_and_names_the_traced_call():
    def spin():
        while True:
            pass

    start = time.perf_counter()
    outcome = run_forked(traced("spin_forever", spin), timeout=0.5)
    assert outcome.timed_out and not outcome.finished
    assert outcome.where == "spin_forever"
    assert time.perf_counter() - start < 3
    again = run_forked(traced("spin_forever", spin), timeout=5)
    assert not again.finished and "KnownHang" in again.output


def test_reports_a_crash_by_signal():
    outcome = run_forked(lambda: ctypes.string_at(0), timeout=5)
    assert outcome.signal_name == "SIGSEGV" and not outcome.finished


def test_an_early_exit_is_not_a_result():
    outcome = run_forked(lambda: os._exit(0), timeout=5)
    assert not outcome.finished and outcome.exit_code == 0


def test_keeps_only_the_head_and_tail_of_a_flood_of_output():
    def flood():
        for _ in range(100_000):
            print("z" * 99)
        return "done"

    outcome = run_forked(flood, timeout=20)
    assert outcome.finished and outcome.value == "done"
    assert outcome.output_bytes == 100_000 * 100
    assert len(outcome.output) < 2 * OUTPUT_KEEP + 100 and "bytes of output cut" in outcome.output


def test_stdin_is_closed_to_the_child():
    outcome = run_forked(lambda: sys.stdin.read(), timeout=5)
    assert outcome.finished and outcome.value == ""
