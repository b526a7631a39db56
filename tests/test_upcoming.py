"""The next check's contestant, started while a check runs (grader.judging.boxes.Upcoming), is
handed out only as an on-demand one would be: loaded without an error and untouched since. A
module that dies, writes on its channel or fails to load after it was started gets no such
contestant (`take` gives None and has ended it), so the session starts a fresh one; the honest
twin of each gets its contestant, which answers.
"""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import need_sandbox

from grader.judging.boxes import Boxes
from grader.run.arena import Arena
from grader.run.judge import Stopped
from grader.run.limits import Limits

HONEST = "def answer():\n    return 42\n"

# each starts, at load, a thread that does one thing a moment later (after the load's answer)
LATER = """
import os, socket, stat, threading, time

def _channel():
    for fd in range(3, 64):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                return socket.socket(fileno=fd)
        except OSError:
            pass

def _later():
    time.sleep(1.0)
    {action}

threading.Thread(target=_later, daemon=True).start()

def answer():
    return 42
"""
HOSTILE = {
    "writes on its channel": LATER.format(action="_channel().send(b'{}')"),
    "exits": LATER.format(action="os._exit(0)"),
    "crashes": LATER.format(action="__import__('ctypes').string_at(0)"),
}


@pytest.fixture(scope="module")
def arena():
    need_sandbox()
    arena = Arena.start(["import torch"], sandboxed=True)
    yield arena
    arena.close()


@pytest.fixture
def boxes(arena, tmp_path):
    path = tmp_path / "module.py"
    path.write_text(HONEST, encoding="utf-8")
    boxes = Boxes(arena, path, Limits())
    yield boxes
    boxes.close()


def upcoming_after(boxes: Boxes, source: str, wait: float = 2.0):
    upcoming = boxes.upcoming(source, "module", 30.0, set())
    time.sleep(wait)  # a check runs meanwhile
    return upcoming.take()


def test_an_honest_upcoming_contestant_is_handed_out_loaded(boxes):
    contestant = upcoming_after(boxes, HONEST)
    try:
        assert contestant is not None and contestant.load_error is None
        assert contestant.call("answer") == 42
    finally:
        contestant.close()


@pytest.mark.parametrize("what", sorted(HOSTILE))
def test_an_upcoming_contestant_that_changed_since_it_loaded_is_not_handed_out(boxes, what):
    """The twin: the same module taken at once, before its thread acts, is handed out and answers."""
    twin = upcoming_after(boxes, HOSTILE[what], wait=0.0)
    try:
        assert twin is not None and twin.call("answer") == 42
    finally:
        twin.close()
    assert upcoming_after(boxes, HOSTILE[what]) is None


def test_an_upcoming_contestant_whose_module_raised_is_not_handed_out(boxes):
    assert upcoming_after(boxes, "raise RuntimeError('not today')\n") is None


def test_an_upcoming_contestant_never_taken_ends_with_close(boxes):
    upcoming = boxes.upcoming(HONEST, "module", 30.0, set())
    upcoming.thread.join()
    contestant = upcoming.contestant
    upcoming.close()
    assert contestant is not None and contestant.pid is None  # ended: its box was told


def test_hybrids_that_find_the_warm_process_dead_start_one_new_one(tmp_path, monkeypatch):
    """Hybrids ask for boxes from threads (grader.judging.locating): when the warm process has died,
    the first to ask starts a new one and the others use it. Unordered, each of the four started
    one (importing torch again) and closed whichever another had just started."""
    need_sandbox()
    arena = Arena.start(["import torch"], sandboxed=True)  # its own: this test ends its warm process
    path = tmp_path / "module.py"
    path.write_text(HONEST, encoding="utf-8")
    boxes = Boxes(arena, path, Limits())
    restarts, restart = [], arena.restart
    monkeypatch.setattr(arena, "restart", lambda: (restarts.append(1), restart()))
    try:
        arena.zygote.close()  # the warm process ends; the next request finds it gone
        with pytest.raises(Stopped):
            arena.zygote.box()
        assert not arena.zygote.alive
        start = threading.Barrier(4)

        def hybrid():
            start.wait()
            box = boxes.box()
            contestant = boxes.learner(HONEST, "<hybrid>", 30.0, set(), box)
            try:
                return contestant.call("answer")
            finally:
                contestant.close()
                box.close()

        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda _: hybrid(), range(4)))
        assert answers == [42] * 4 and len(restarts) == 1
    finally:
        boxes.close()
        arena.close()
