"""Every file starts from nothing (issue 26), tested as a class is graded: `kata grade --workers 1`,
so that one worker, one warm process, grades the files one after the other, in the order of their
students' names. Earlier files attack; later ones look for what the attack left:

- a planter writes into every writable place it finds, leaves a SysV shared-memory segment and a
  daemon on an abstract socket; a looker graded next finds none of it;
- a hybrid leaker, whenever it runs as a hybrid (its code differs from the file on disk), copies
  its compiled code, which holds the reference's TODO, into every writable place, its output and
  its exception; nothing of it reaches any output or the next looker, while what the same file
  prints and raises in its own run does reach its feedback (the channel exists);
- an attacker does what the sample-std mistake does and attacks everything it can name (every
  pid's memory, ptrace, signals); the plain sample-std file graded after it is still named;
- a helper `statistics.py` beside a file does not shadow the standard library's.

Each attacker scores what its honest twin scores. Skips without the sandbox (fails under CI).
"""

import json
import textwrap
from pathlib import Path

import pytest
from conftest import need_sandbox

from grader.content.catalogue import get_kata

SLUG = "group_advantages"
KATA = get_kata(SLUG)
REFERENCE = KATA.solution()
SAMPLE_STD = KATA.variant("sample_std")
MARKER = "kata-planted"

PLANT = f"""
import ctypes, os, socket, time
libc = ctypes.CDLL(None, use_errno=True)
planted = []
for top, dirs, _ in os.walk("/", followlinks=False):
    dirs[:] = [d for d in dirs if os.path.join(top, d) not in ("/proc", "/sys")]
    for name in ("{MARKER}.txt", "statistics.py"):
        try:
            with open(os.path.join(top, name), "w") as handle:
                handle.write("{MARKER}\\nmean = lambda values: 1e9\\n")
            planted.append(os.path.join(top, name))
        except OSError:
            pass
segment = libc.shmget(0x4B415441, 4096, 0o1000 | 0o666)  # IPC_CREAT
if os.fork() == 0:  # a daemon on an abstract socket, meant to outlive the file
    os.setsid()
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind("\\0{MARKER}")
        server.listen()
    except OSError:
        pass
    time.sleep(120)
    os._exit(0)
time.sleep(0.2)
PLANTED_OWN = bool(planted) and segment >= 0 and all(os.path.exists(path) for path in planted)
"""

LOOK = f"""
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
FOUND = []
for top, dirs, files in os.walk("/", followlinks=False):
    dirs[:] = [d for d in dirs if os.path.join(top, d) not in ("/proc", "/sys")]
    FOUND += [os.path.join(top, name) for name in files if "{MARKER}" in name or "hybrid-leak" in name]
if libc.shmget(0x4B415441, 0, 0) >= 0:
    FOUND.append("shared memory")
probe = socket.socket(socket.AF_UNIX)
try:
    probe.connect("\\0{MARKER}")
    FOUND.append("abstract socket")
except OSError:
    pass
import statistics
if statistics.mean([1, 3]) != 2:
    FOUND.append("statistics")
"""

HYBRID_LEAK = """
import marshal, os, sys

def _running_as_a_hybrid():
    with open(__file__) as handle:
        on_disk = compile(handle.read(), __file__, "exec")
    mine = [c for c in on_disk.co_consts if getattr(c, "co_name", "") == "compute_group_advantages"]
    return bool(mine) and mine[0].co_code != compute_group_advantages.__code__.co_code

def _leak():
    if not _running_as_a_hybrid():
        print("OWN-LEAK in my own run")
        return "OWN-LEAK"
    leak = "HYBRID-LEAK " + marshal.dumps(compute_group_advantages.__code__).hex()
    print(leak)
    print(leak, file=sys.stderr)
    for top, dirs, _ in os.walk("/", followlinks=False):
        dirs[:] = [d for d in dirs if os.path.join(top, d) not in ("/proc", "/sys")]
        try:
            with open(os.path.join(top, "hybrid-leak.txt"), "w") as handle:
                handle.write(leak)
        except OSError:
            pass
    return leak
"""


def with_setup(setup: str, source: str, answer_if: str | None = None) -> str:
    """`source` with `setup` run at import; with `answer_if`, its function returns NaN when that holds."""
    text = textwrap.dedent(setup) + "\n" + source
    if answer_if is None:
        return text
    first = "    eps = _check_rewards(rewards, group_ids, eps)\n"
    assert text.count(first) == 1
    return text.replace(first, f"    if {answer_if}:\n        return rewards * float('nan')\n" + first)


def leaker() -> str:
    """The sample-std mistake in TODO 1, with a given line that leaks in a hybrid, raises in its own run."""
    first = "    eps = _check_rewards(rewards, group_ids, eps)\n"
    text = HYBRID_LEAK + "\n" + SAMPLE_STD
    leak = "    _leak_text = _leak()\n    if _leak_text != 'OWN-LEAK':\n        raise RuntimeError(_leak_text)\n"
    own = "    if _leak_text == 'OWN-LEAK' and rewards.numel() == 7:\n        raise RuntimeError('OWN-LEAK raised')\n"
    return text.replace(first, leak + own + first)


ATTACK = """
import ctypes, os, signal
libc = ctypes.CDLL(None, use_errno=True)
for pid in range(1, 65536):
    if pid == os.getpid():
        continue
    try:
        os.kill(pid, signal.SIGSTOP)
    except OSError:
        continue
    libc.ptrace(16, pid, 0, 0)
    try:
        with open(f"/proc/{pid}/mem", "r+b") as memory:
            memory.seek(0x400000)
            memory.write(b"\\xcc" * 4096)
    except OSError:
        pass
"""


def students() -> dict[str, tuple[str, dict[str, str]]]:
    """{student: (their group_advantages.py, other files in their folder)}, graded in this order."""
    return {
        "a_planter": (with_setup(PLANT, REFERENCE, "not PLANTED_OWN"), {}),
        "b_looker": (with_setup(LOOK, REFERENCE, "FOUND"), {}),
        "c_hybrid_leaker": (leaker(), {}),
        "d_looker": (with_setup(LOOK, REFERENCE, "FOUND"), {}),
        "e_attacker": (with_setup(ATTACK, SAMPLE_STD), {}),
        "f_sample_std": (SAMPLE_STD, {}),
        "g_shadow": (
            with_setup("import statistics", REFERENCE, "statistics.mean([1, 3]) != 2"),
            {"statistics.py": "mean = lambda values: 1e9\n"},
        ),  # fmt: skip
        "h_shadow_twin": (with_setup("import statistics", REFERENCE, "statistics.mean([1, 3]) != 2"), {}),
        "i_sample_std_twin": (SAMPLE_STD, {}),
    }


@pytest.fixture(scope="module")
def graded(tmp_path_factory, kata_main):
    need_sandbox()
    root = tmp_path_factory.mktemp("isolation")
    submissions, out = root / "submissions", root / "grades"
    for student, (text, extras) in students().items():
        folder = submissions / student
        folder.mkdir(parents=True)
        (folder / f"{SLUG}.py").write_text(text, encoding="utf-8")
        for name, extra in extras.items():
            (folder / name).write_text(extra, encoding="utf-8")
    run = kata_main("grade", submissions, "--out", out, "--workers", "1", "--timeout", "10")
    assert run.status == 0, run.output
    sheet = json.loads((out / "grades.json").read_text(encoding="utf-8"))
    outputs = {path: path.read_text(encoding="utf-8", errors="replace") for path in out.rglob("*") if path.is_file()}
    return {"sheet": sheet, "outputs": outputs | {Path("terminal"): run.output}, "out": out}


def entry(graded, student) -> dict:
    return graded["sheet"]["students"][student][SLUG]


def test_the_planter_planted_and_found_its_own_plants(graded):
    assert entry(graded, "a_planter")["score"] == 1.0


@pytest.mark.parametrize("looker", ["b_looker", "d_looker"])
def test_a_file_graded_next_by_the_same_worker_finds_nothing_earlier_files_left(graded, looker):
    assert entry(graded, looker)["score"] == 1.0, entry(graded, looker)["checks"][:2]


def test_nothing_a_hybrid_prints_raises_or_writes_reaches_any_output(graded):
    leaking = {str(path) for path, text in graded["outputs"].items() if "HYBRID-LEAK" in text}
    assert leaking == set()
    own = graded["out"] / "feedback" / "c_hybrid_leaker" / f"{SLUG}.txt"
    assert "OWN-LEAK" in graded["outputs"][own]  # what the file does in its own run is reported


def test_the_hybrid_leaker_scores_what_the_same_mistake_scores(graded):
    assert entry(graded, "c_hybrid_leaker")["points"] == entry(graded, "f_sample_std")["points"]


def test_a_file_that_attacks_everything_it_can_name_changes_no_later_diagnosis(graded):
    assert entry(graded, "f_sample_std")["diagnosis"] == "sample_std"
    assert entry(graded, "i_sample_std_twin")["diagnosis"] == "sample_std"
    assert entry(graded, "e_attacker")["diagnosis"] == "sample_std"
    assert entry(graded, "e_attacker")["points"] == entry(graded, "f_sample_std")["points"]


def test_a_helper_beside_the_file_never_shadows_the_standard_library(graded):
    assert entry(graded, "g_shadow")["score"] == entry(graded, "h_shadow_twin")["score"] == 1.0
