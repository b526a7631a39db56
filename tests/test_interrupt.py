"""Issue 27, item 5: an interrupt ends everything.

SIGINT (Ctrl-C: the signal goes to the whole job) or SIGTERM (to the command's process alone) while
`kata grade`, `kata check` or run_autograder has a sandbox grading a file that sleeps: within 10 s
nothing the command started is left (no process, temporary folder or cgroup; tests/interrupts.py
finds them without knowing their pids), the command exits 130 or 143 with one line and no
traceback, and `kata grade` keeps the result it finished before, which a rerun reuses.
"""

import signal
import subprocess
import sys
import threading

import pytest
from conftest import need_sandbox
from interrupts import Scene
from test_gradescope import fake_root

from grader.classroom import batch, gradescope
from grader.content.catalogue import get_kata
from grader.run.interrupt import Interrupted, deferred, exit_status, interruptible

SLUG = "group_advantages"
REFERENCE = get_kata(SLUG).solution()
SLEEPER = REFERENCE.replace(
    "    if rewards.ndim != 1 or rewards.numel() == 0",
    "    import time\n    time.sleep(1000)\n    if rewards.ndim != 1 or rewards.numel() == 0",
    1,
)
LIMIT = 10.0  # seconds after the signal within which nothing may be left (the poll)
GUARD = 600.0  # seconds a command may take to get its sandbox going before the test gives up
SIGNALS = pytest.mark.parametrize(
    ("number", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"]
)


@pytest.fixture
def scene(tmp_path):
    need_sandbox()
    scene = Scene.make(tmp_path / "tmp")
    yield scene
    scene.clear()


def kata(*args) -> list[str]:
    return [sys.executable, "-m", "grader.cli", *map(str, args)]


def interrupt_when(scene: Scene, process: subprocess.Popen, ready, number: int) -> None:
    """Send signal `number` once `ready()`; fail if the command ends first."""
    waited = threading.Event()
    for _ in range(int(GUARD / 0.05)):
        if ready():
            scene.interrupt(process, number)
            return
        assert process.poll() is None, process.communicate()
        waited.wait(0.05)
    pytest.fail("the command never got a sandbox going")


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


# -- the three commands -----------------------------------------------------------------------


@pytest.mark.slow
@SIGNALS
def test_an_interrupted_kata_grade_ends_everything_and_a_rerun_reuses_what_it_finished(scene, tmp_path, number, status):
    submissions, out = tmp_path / "class", tmp_path / "out"
    for student, text in {"a": REFERENCE, "b": SLEEPER, "c": SLEEPER}.items():
        (submissions / student).mkdir(parents=True)
        (submissions / student / f"{SLUG}.py").write_text(text)
    command = kata("grade", submissions, "--out", out, "--workers", 2, "--timeout", 60)
    process = scene.start(command, cwd=tmp_path, KATA_LANG="en")
    finished = batch.record_path(out, "a", SLUG)
    interrupt_when(scene, process, lambda: finished.exists() and scene.in_flight(), number)
    assert scene.until_clean(process, LIMIT) == []
    assert process.returncode == status, process.err
    assert lines(process.err) == ["interrupted: 1 file graded, rerun to resume"]
    assert finished.exists() and not (out / "grades.csv").exists()
    for student in ("b", "c"):
        (submissions / student / f"{SLUG}.py").write_text(REFERENCE)
    rerun = subprocess.run(command, cwd=tmp_path, env=scene.env(KATA_LANG="en"), capture_output=True, text=True)
    assert rerun.returncode == 0 and "graded 2, unchanged 1" in rerun.stdout, rerun.stdout + rerun.stderr


@pytest.mark.slow
@SIGNALS
def test_an_interrupted_kata_check_ends_its_judge_and_sandbox(scene, tmp_path, number, status):
    (tmp_path / f"{SLUG}.py").write_text(SLEEPER)
    command = kata("check", SLUG, "--file", tmp_path / f"{SLUG}.py", "--timeout", 60)
    process = scene.start(command, cwd=tmp_path, KATA_LANG="en")
    interrupt_when(scene, process, scene.in_flight, number)
    assert scene.until_clean(process, LIMIT) == []
    assert process.returncode == status and lines(process.err) == ["interrupted"], process.err


@pytest.mark.slow
@SIGNALS
def test_an_interrupted_run_autograder_ends_everything(scene, tmp_path, number, status):
    root = tmp_path / "root"
    command = fake_root(root, {f"{SLUG}.py": SLEEPER})
    process = scene.start(command, cwd=root, **{gradescope.ROOT_VARIABLE: str(root)})
    interrupt_when(scene, process, scene.in_flight, number)
    assert scene.until_clean(process, LIMIT) == []
    assert process.returncode == status, process.err
    assert lines(process.err) == ["interrupted: the submission was not graded"]
    assert not (root / "results" / "results.json").exists()


# -- the primitive (grader.run.interrupt) -----------------------------------------------------


def to_main_thread(number: int) -> None:
    signal.pthread_kill(threading.main_thread().ident, number)


def test_sigterm_raises_interrupted_with_status_143_and_the_handler_comes_back():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Interrupted) as caught, interruptible():
        to_main_thread(signal.SIGTERM)
    assert exit_status(caught.value) == 143 and isinstance(caught.value, KeyboardInterrupt)
    assert signal.getsignal(signal.SIGTERM) is before
    assert exit_status(KeyboardInterrupt()) == 130


def test_a_deferred_step_is_not_cut_in_two_and_the_signal_arrives_after_it():
    steps = []
    with pytest.raises(Interrupted), interruptible():
        with deferred():
            to_main_thread(signal.SIGINT)
            steps.append("the whole step")
        steps.append("after it")
    assert steps == ["the whole step"]
