"""`kata grade --workers 2` against an earlier grader, on the same class, in the same run.

    git worktree add /tmp/grader-before cd1a1de      # the grader before the judge/contestant split
    python benchmarks/bench_grade_before.py --baseline-tree /tmp/grader-before [--count 60] [--rounds 2]

Builds one synthetic class (bench_grade.make_class: half correct files, 30% misconception
variants, 20% pathological), then grades it with `python -m grader.cli grade --force` under this
tree's grader (in the sandbox) and under the baseline tree's (PYTHONPATH puts it first), taking
turns `--rounds` times, and reports files per second (median) and their ratio.
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_grade import make_class
from timing import NEUTRAL, bench_env


def grade_seconds(root: Path, out: Path, env: dict, workers: int, timeout: float) -> float:
    command = [sys.executable, "-m", "grader.cli", "grade", str(root), "--out", str(out), "--force"]
    command += ["--workers", str(workers), "--timeout", str(timeout)]
    start = time.perf_counter()
    subprocess.run(command, env=env, cwd=NEUTRAL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-tree", required=True, type=Path)
    parser.add_argument("--count", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument(
        "--tree", type=Path, help="a checkout to measure instead of this one (e.g. a clone at a commit)"
    )
    args = parser.parse_args()
    ours = bench_env(**({"PYTHONPATH": str(args.tree.resolve())} if args.tree else {}))
    envs = {"this grader": ours, "before": bench_env(PYTHONPATH=str(args.baseline_tree.resolve()))}
    times: dict[str, list[float]] = {name: [] for name in envs}
    with tempfile.TemporaryDirectory(prefix="bench-grade-") as scratch:
        root = Path(scratch) / "class"
        make_class(root, args.count)
        for _ in range(args.rounds):
            for name, env in envs.items():
                times[name].append(grade_seconds(root, Path(scratch) / name.replace(" ", "_"), env, args.workers,
                                                 args.timeout))  # fmt: skip
    rates = {name: args.count / statistics.median(values) for name, values in times.items()}
    print(f"{args.count} files, --workers {args.workers}, --timeout {args.timeout:g}, median of {args.rounds}\n")
    print("| grader | files/s | vs before |")
    print("|---|---|---|")
    for name, rate in rates.items():
        print(f"| {name} | {rate:.2f} | {rate / rates['before']:.2f}x |")


if __name__ == "__main__":
    main()
