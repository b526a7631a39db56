"""The warm judge (grader.judging.warm_judge): the verdicts of a cold `kata check`, a worker that is
started again when what it holds is stale, nothing left behind when its owner ends or is killed,
and `kata watch` on it giving the report of the last of several quick saves."""

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import need_sandbox

from grader.content.catalogue import get_kata
from grader.judging import warm_judge
from grader.judging.warm_judge import WarmJudge, installed_stamp
from grader.run.grading import run_checks

SUMMARY = re.compile(r"^(\d+) passed, (\d+) failed$", re.MULTILINE)


def _verdict(result) -> dict:
    """What a check's --json output says, its timings aside."""
    return {key: value for key, value in result.to_json().items() if key != "timings"}


def _file(folder: Path, kata, variant: str | None) -> Path:
    path = folder / (variant or "reference") / f"{kata.slug}.py"
    path.parent.mkdir(parents=True)
    path.write_text(kata.variant(variant) if variant else kata.solution(), encoding="utf-8")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("slug", ["group_advantages", "grpo_loss"])
def test_the_warm_judge_gives_a_cold_checks_verdict_on_every_misconception_variant(slug, tmp_path):
    need_sandbox()
    kata = get_kata(slug)
    variants = [None, *(m.id for m in kata.misconceptions)]
    with WarmJudge() as judge:
        for variant in variants:
            path = _file(tmp_path, kata, variant)
            warm, cold = judge.check(kata, path, 10.0, "en"), run_checks(kata, path, 10.0, lang="en")
            assert _verdict(warm) == _verdict(cold), variant
            assert warm.sandboxed and (variant is None) == (warm.failed == 0), variant
            assert set(warm.timings) >= {"checks"}, warm.timings


def _worker_pid(judge: WarmJudge) -> int:
    return judge._pool.workers[0].process.pid


@pytest.mark.slow
def test_a_change_to_the_grader_or_a_kata_starts_the_worker_again(tmp_path, monkeypatch):
    kata = get_kata("group_advantages")
    path = _file(tmp_path, kata, None)
    stamp = ("as installed",)
    monkeypatch.setattr(warm_judge, "installed_stamp", lambda: stamp)
    with WarmJudge() as judge:
        judge.check(kata, path)
        first = _worker_pid(judge)
        judge.check(kata, path)
        assert _worker_pid(judge) == first, "nothing changed: the same worker"
        stamp = ("a file changed",)
        result = judge.check(kata, path)
        assert _worker_pid(judge) != first and result.failed == 0
        assert not _alive(first)


@pytest.mark.slow
def test_a_check_interrupted_midway_leaves_the_next_check_its_own_result(tmp_path):
    """Ctrl-C (a kernel's interrupt) during a check: the next check answers for its own file."""
    kata = get_kata("group_advantages")
    correct = _file(tmp_path, kata, None)
    hanging = tmp_path / "hang" / f"{kata.slug}.py"
    hanging.parent.mkdir()
    hanging.write_text(kata.solution().replace("    # TODO 1", "    while True:\n        pass\n    # TODO 1", 1))

    def interrupt(number, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        with WarmJudge() as judge:
            assert judge.check(kata, correct).failed == 0
            signal.setitimer(signal.ITIMER_REAL, 1.0)
            with pytest.raises(KeyboardInterrupt):
                judge.check(kata, hanging, timeout=5.0)
            result = judge.check(kata, correct)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert result.failed == 0 and result.target == str(correct.resolve()), result.target


def test_the_installed_stamp_changes_with_any_file_under_the_grader_the_katas_or_the_references(tmp_path, monkeypatch):
    roots = [tmp_path / name for name in ("grader", "katas", "reference")]
    for root in roots:
        (root / "sub").mkdir(parents=True)
        (root / "sub" / "a.py").write_text("x = 1\n")
    monkeypatch.setattr(warm_judge, "ROOTS", tuple(roots))
    for root in roots:
        before = installed_stamp()
        assert installed_stamp() == before
        (root / "sub" / "a.py").write_text("x = 22\n")
        assert installed_stamp() != before, root
        before = installed_stamp()
        (root / "sub" / "b.toml").write_text("")
        assert installed_stamp() != before, root


def test_no_kata_checks_module_holds_an_assert_for_pytest_to_rewrite():
    """A worker imports a kata's checks before its judges fork (plugin.preload), outside pytest's
    assertion rewriting: only a check with no `assert` statement behaves the same either way."""
    import ast

    from grader.content.catalogue import all_katas

    for kata in all_katas():
        tree = ast.parse(kata.checks_path.read_text(encoding="utf-8"))
        asserts = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Assert)]
        assert not asserts, f"{kata.checks_path}: assert on lines {asserts}"


def test_no_check_needs_a_pytest_plugin_a_judge_leaves_out():
    """A judge runs without pytest's plugins no check uses (grading.UNUSED_PLUGINS: skip and xfail
    marks, captured logs and output, warnings, tmp_path, monkeypatch...): every check is marked
    only with todo, whole or parametrize, and takes only the grading fixtures and its parameters."""
    import importlib
    import inspect

    from grader.content.catalogue import all_katas

    marks, fixtures = {"todo", "whole", "parametrize"}, {"expect", "learner", "reference"}
    for kata in all_katas():
        module = importlib.import_module(f"katas.{kata.slug}.checks")
        checks = [(name, check) for name, check in vars(module).items() if name.startswith("test_")]
        assert checks, kata.slug
        for name, check in checks:
            used = getattr(check, "pytestmark", [])
            parameters = {
                argument.strip()
                for mark in used
                if mark.name == "parametrize"
                for argument in (mark.args[0].split(",") if isinstance(mark.args[0], str) else mark.args[0])
            }
            assert {mark.name for mark in used} <= marks, f"{kata.slug}::{name}: {[m.name for m in used]}"
            taken = set(inspect.signature(check).parameters) - parameters
            assert taken <= fixtures, f"{kata.slug}::{name} takes {sorted(taken - fixtures)}"


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return status.rsplit(")", 1)[1].split()[0] != "Z"


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _resource_tracker(pid: int) -> bool:
    """multiprocessing's own helper process, which lives as long as the owner does."""
    try:
        return b"multiprocessing.resource_tracker" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


OWNER = """
import sys, time
from pathlib import Path
from grader.content.catalogue import get_kata
from grader.judging.warm_judge import WarmJudge

judge = WarmJudge()
judge.check(get_kata("group_advantages"), Path(sys.argv[1]))
print("checked", flush=True)
if sys.argv[2] == "close":
    sys.stdin.readline()
    judge.close()
    print("closed", flush=True)
time.sleep(600)
"""


@pytest.mark.slow
@pytest.mark.parametrize("end", ["killed", "close"])
def test_nothing_of_the_warm_judge_is_left_when_its_owner_closes_it_or_is_killed(end, tmp_path):
    path = _file(tmp_path, get_kata("group_advantages"), None)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(path), end],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, TMPDIR=str(temporary)),
    )
    try:
        assert owner.stdout.readline().strip() == "checked"
        made = {pid for pid in _descendants(owner.pid) if not _resource_tracker(pid)}
        assert made, "the owner has its worker and the worker its warm process"
        assert any(p.name.startswith("kata-worker-") for p in temporary.iterdir())
        if end == "killed":
            owner.send_signal(signal.SIGKILL)
            owner.wait()
        else:
            owner.stdin.write("close\n")
            owner.stdin.flush()
            assert owner.stdout.readline().strip() == "closed"
        deadline = time.monotonic() + 20
        while (any(_alive(pid) for pid in made) or list(temporary.iterdir())) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in made if _alive(pid)], "a process of the warm judge outlived it"
        assert not list(temporary.iterdir()), "a folder of the warm judge outlived it"
    finally:
        owner.kill()
        owner.wait()


@pytest.mark.slow
def test_watch_gives_the_report_of_the_last_of_several_quick_saves(tmp_path):
    """Three saves in quick succession while a check runs: the last report shown is the last save's."""
    kata = get_kata("group_advantages")
    workspace = tmp_path / "ws"
    kata_command = [sys.executable, "-m", "grader.cli"]
    environment = dict(os.environ, KATA_LANG="en", COLUMNS="80")
    subprocess.run([*kata_command, "start", kata.slug, "--workspace", workspace], check=True, env=environment,
                   capture_output=True)  # fmt: skip
    saved = workspace / f"{kata.slug}.py"
    wrong = [m.id for m in kata.misconceptions][:3]
    saved.write_text(kata.variant(wrong[0]), encoding="utf-8")
    watch = subprocess.Popen([*kata_command, "watch", kata.slug, "--workspace", workspace], env=environment,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(watch.stdout), daemon=True)
    reader.start()

    def summaries() -> list[tuple[int, int]]:
        return [(int(p), int(f)) for p, f in SUMMARY.findall("".join(output))]

    def wait_for(condition, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not condition() and time.monotonic() < deadline:
            time.sleep(0.05)

    try:
        wait_for(lambda: summaries(), 120)
        assert summaries() and summaries()[-1][1] > 0, "".join(output)
        for variant in wrong[1:]:
            saved.write_text(kata.variant(variant), encoding="utf-8")
            time.sleep(0.03)
        saved.write_text(kata.solution(), encoding="utf-8")
        wait_for(lambda: summaries() and summaries()[-1][1] == 0, 120)
        time.sleep(3)  # a report of an earlier save would come now
        shown = summaries()
        assert shown[-1][1] == 0 and shown[-1][0] > 0, "".join(output)
        assert len(shown) <= 4, "at most one check per save"
    finally:
        watch.send_signal(signal.SIGINT)
        status = watch.wait(timeout=30)
    assert status == 0
    assert "stopped watching" in "".join(output)
