"""How long an interrupt takes to end everything (issue 27, item 5; target: ≤ 3 s).

    python benchmarks/bench_interrupt.py [--repeat 3]

For each command — `kata grade` (a class of three files that sleep, 2 workers), `kata check` (a
file that sleeps) and run_autograder (a fake Gradescope root, as tests/test_gradescope.py lays it
out, with that file handed in) — and each signal — SIGINT to the whole job, as Ctrl-C sends it, and
SIGTERM to the command alone — it waits until a sandbox has a contestant running the file, sends
the signal, and measures the seconds until the command exits and until nothing it started is
left: no process, temporary folder or cgroup (tests/interrupts.py finds them). Prints the
medians as a table. Run it from a neutral folder (benchmarks/timing.py says why), as root where
cgroups are to be counted.
"""

import argparse
import platform
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

from interrupts import Scene  # noqa: E402
from test_gradescope import fake_root  # noqa: E402
from timing import NEUTRAL  # noqa: E402

from grader.classroom import gradescope  # noqa: E402
from grader.content.catalogue import get_kata  # noqa: E402

SLUG = "group_advantages"
MARKER = "    if rewards.ndim != 1 or rewards.numel() == 0"
SLEEPER = get_kata(SLUG).solution().replace(MARKER, "    import time\n    time.sleep(1000)\n" + MARKER, 1)
SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM}


def kata(*args) -> list[str]:
    return [sys.executable, "-m", "grader.cli", *map(str, args)]


def grade(root: Path) -> tuple[list[str], dict]:
    for student in ("a", "b", "c"):
        (root / "class" / student).mkdir(parents=True)
        (root / "class" / student / f"{SLUG}.py").write_text(SLEEPER)
    return kata("grade", root / "class", "--out", root / "out", "--workers", 2, "--timeout", 60), {}


def check(root: Path) -> tuple[list[str], dict]:
    (root / f"{SLUG}.py").write_text(SLEEPER)
    return kata("check", SLUG, "--file", root / f"{SLUG}.py", "--timeout", 60), {}


def autograder(root: Path) -> tuple[list[str], dict]:
    return fake_root(root / "root", {f"{SLUG}.py": SLEEPER}), {gradescope.ROOT_VARIABLE: str(root / "root")}


COMMANDS = {"kata grade": grade, "kata check": check, "run_autograder": autograder}


def once(make, number: int) -> tuple[int, float, float]:
    """(exit status, seconds to exit, seconds to a clean state) of one interrupted run."""
    with tempfile.TemporaryDirectory(prefix="bench-interrupt-") as folder:
        root = Path(folder)
        command, env = make(root)
        scene = Scene.make(root / "tmp")
        process = scene.start(command, cwd=NEUTRAL, KATA_LANG="en", **env)
        try:
            while not scene.in_flight():
                if process.poll() is not None:
                    raise SystemExit(f"{command[:4]} ended before its sandbox ran: {process.communicate()}")
                time.sleep(0.05)
            start = time.perf_counter()
            scene.interrupt(process, number)
            process.communicate()
            exited = time.perf_counter() - start
            while scene.leftovers():
                time.sleep(0.01)
            return process.returncode, exited, time.perf_counter() - start
        finally:
            scene.clear()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    rows = []
    for name, make in COMMANDS.items():
        for signal_name, number in SIGNALS.items():
            runs = [once(make, number) for _ in range(options.repeat)]
            statuses = ", ".join(str(status) for status in sorted({status for status, _, _ in runs}))
            exited = statistics.median(run[1] for run in runs)
            clean = statistics.median(run[2] for run in runs)
            worst = max(run[2] for run in runs)
            rows.append(f"| `{name}` | {signal_name} | {statuses} | {exited:.2f} | {clean:.2f} | {worst:.2f} |")
            print(rows[-1], file=sys.stderr, flush=True)
    print(f"python {platform.python_version()}, median of {options.repeat}, target: clean ≤ 3 s\n")
    print("| command | signal | exit status | exited (s) | clean (s) | slowest clean (s) |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
