"""How fast `kata grade` grades a class, and how much memory it takes.

    python benchmarks/bench_grade.py [--count 200] [--timeout 2] [--baseline 12]

Generates COUNT synthetic kata files in a temporary class (two files per student, katas
group_advantages and kl_estimators): half correct (the rendered reference), three tenths
misconception variants (grader.content.render), one fifth pathological (endless loops, os._exit,
segfaults, memory bombs, megabytes of output, bounded fork bombs, missing functions, syntax
errors). Then grades it, regrading everything each time:
- baseline: the first BASELINE files one by one the way `kata check` does (a fresh
  `python -m pytest` per file, grader.run.grading.run_checks), in this same run;
- the whole class with 1 worker, then with 2 workers (grader.classroom.batch.run_batch).
Reports files per second, the speed-ups as ratios, and the peak memory: the largest resident set
of one file's grading run (wait4), and the peak memory of the whole process tree (the sum of
proportional set sizes, sampled every 0.2 s).
"""

import argparse
import os
import platform
import re
import tempfile
import threading
import time
from pathlib import Path

from grader.classroom import batch
from grader.content.catalogue import get_kata
from grader.run import containment
from grader.run.grading import run_checks

KATAS = ("group_advantages", "kl_estimators")
PATHOLOGIES = {
    "endless_loop": "while True:\n    pass",
    "os_exit": "import os\nos._exit(0)",
    "segfault": "import ctypes\nctypes.string_at(0)",
    "memory_bomb": "blob = bytearray(2 * 2**30)",
    "megabytes_of_output": "print('x' * 5_000_000)",
    "fork_bomb": (
        "import os, time\nfor _ in range(7):\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
        "time.sleep(10)"
    ),
}


def with_code(source: str, code: str) -> str:
    """`source` with `code` run first in its first function's first TODO (indented `# TODO N` line)."""
    match = re.search(r"^([ \t]+)# TODO \d+", source, re.MULTILINE)
    indented = "".join(match[1] + line + "\n" for line in code.splitlines())
    return source[: match.start()] + indented + source[match.start() :]


def submission(index: int, slug: str) -> str:
    """The index-th synthetic file of `slug`: 50% correct, 30% a misconception, 20% pathological."""
    kata = get_kata(slug)
    share = index % 10
    if share < 5:
        return kata.solution()
    if share < 8:
        return kata.variant(kata.misconceptions[index % len(kata.misconceptions)].id)
    kinds = list(PATHOLOGIES) + ["missing_function", "syntax_error"]
    kind = kinds[(index // 10) % len(kinds)]
    if kind == "missing_function":
        return "def something_else():\n    return 0\n"
    if kind == "syntax_error":
        return "def broken(:\n"
    return with_code(kata.solution(), PATHOLOGIES[kind])


def make_class(root: Path, count: int) -> None:
    for index in range(count):
        student = root / f"student{index // len(KATAS):03d}"
        student.mkdir(parents=True, exist_ok=True)
        slug = KATAS[index % len(KATAS)]
        (student / f"{slug}.py").write_text(submission(index // len(KATAS), slug), encoding="utf-8")


class TreeMemory:
    """Samples the memory held by this process and all its descendants (see _tree_pss)."""

    def __init__(self, every: float = 0.2):
        self.every, self.peak, self._stop = every, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _run(self):
        while not self._stop.wait(self.every):
            self.peak = max(self.peak, _tree_pss(os.getpid()))


def _tree_pss(root: int) -> int:
    """Bytes of memory `root` and its descendants hold now: the sum of their proportional set sizes
    (a page shared by N processes, as after fork, counts 1/N in each; summed RSS would count it N times)."""
    parents = {}
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit():
                with open(f"/proc/{entry}/stat") as handle:
                    parents[int(entry)] = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            pass
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += _pss(pid)
        stack.extend(child for child, parent in parents.items() if parent == pid)
    return total


def _pss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def baseline(roster: batch.Roster, count: int, settings: batch.Settings) -> float:
    """Files per second the `kata check` way: a fresh Python and pytest per file."""
    start = time.perf_counter()
    for job in roster.jobs[:count]:
        run_checks(get_kata(job.slug), job.folder / f"{job.slug}.py", settings.timeout)
    return count / (time.perf_counter() - start)


def batch_run(roster: batch.Roster, out: Path, workers: int) -> tuple[float, int, int]:
    """(files per second, peak KiB of one file's run, peak bytes of the whole tree)."""
    with TreeMemory() as memory:
        start = time.perf_counter()
        run = batch.run_batch(roster, out, workers, force=True)
        seconds = time.perf_counter() - start
    peak_file = max(record["peak_kb"] for record in run.records.values())
    return len(roster.jobs) / seconds, peak_file, memory.peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument("--baseline", type=int, default=12, help="files graded the `kata check` way")
    args = parser.parse_args()
    settings = batch.Settings(timeout=args.timeout)
    with tempfile.TemporaryDirectory(prefix="bench-grade-") as scratch:
        root = Path(scratch) / "class"
        make_class(root, args.count)
        roster = batch.discover(root, None, settings)
        assert len(roster.jobs) == args.count, len(roster.jobs)
        cold = baseline(roster, args.baseline, settings)
        one = batch_run(roster, Path(scratch) / "out1", 1)
        two = batch_run(roster, Path(scratch) / "out2", 2)
    import torch

    print(f"{args.count} files ({len(roster.students)} students), per-check timeout {args.timeout:g} s; ")
    print(
        f"python {platform.python_version()}, torch {torch.__version__}, {os.cpu_count()} CPUs, "
        f"pids cgroup: {'yes' if containment.available() else 'no'}\n"
    )
    print("| run | files/s | vs `kata check` per file | peak RSS of one file's run | peak memory, whole tree (PSS) |")
    print("|---|---|---|---|---|")
    print(f"| `kata check` way, {args.baseline} files, 1 at a time | {cold:.2f} | 1.00x | | |")
    for label, (rate, peak_file, peak_tree) in (("kata grade --workers 1", one), ("kata grade --workers 2", two)):
        print(
            f"| {label} | {rate:.2f} | {rate / cold:.2f}x | {peak_file / 1024:.0f} MiB | {peak_tree / 2**20:.0f} MiB |"
        )
    print(f"\n2 workers vs 1: {two[0] / one[0]:.2f}x")


if __name__ == "__main__":
    main()
