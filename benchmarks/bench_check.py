"""`kata check` against an earlier grader, in the same run: correct and wrong files.

    git worktree add /tmp/grader-before cd1a1de      # the grader before the judge/contestant split
    python benchmarks/bench_check.py --baseline-tree /tmp/grader-before [--repeat 5]

Each row runs `python -m grader.cli check SLUG` with this tree's grader and with the baseline
tree's (PYTHONPATH puts it first, for the `kata` process and the pytest process it starts), in
turn, `--repeat` times after a warm-up each, and reports the median wall times and their ratio
(see timing.py). Files: the reference solution (a correct file) and a misconception variant (a
wrong file, which also pays for naming the misconception; this grader remembers the variants'
fingerprints from its warm-up on, in a cache folder of the run's own, as for a learner who checks
again: bench_fingerprints.py measures both).
"""

import argparse
import os
import platform
import sys
import tempfile
from pathlib import Path

from timing import bench_env, medians

CASES = [
    ("grpo_loss", None),
    ("toy_grpo", None),
    ("grpo_loss", "max_instead_of_min"),
    ("group_advantages", "sample_std"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-tree", required=True, type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", help="a slug: run only its rows")
    parser.add_argument(
        "--tree", type=Path, help="a checkout to measure instead of this one (e.g. a clone at a commit)"
    )
    args = parser.parse_args()
    from grader.content.catalogue import get_kata

    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for slug, variant in CASES:
            if args.only and slug != args.only:
                continue
            kata = get_kata(slug)
            known = {m.id for m in kata.misconceptions}
            if variant and variant not in known:
                variant = sorted(known)[0]
            path = Path(scratch) / f"{variant or 'correct'}_{slug}.py"
            path.write_text(kata.variant(variant) if variant else kata.solution(), encoding="utf-8")
            command = [sys.executable, "-m", "grader.cli", "check", slug, "--file", str(path)]
            tree = {"PYTHONPATH": str(args.tree.resolve())} if args.tree else {}
            ours = bench_env(KATA_LANG="en", XDG_CACHE_HOME=f"{scratch}/cache", **tree)
            before = bench_env(KATA_LANG="en", PYTHONPATH=str(args.baseline_tree.resolve()))
            new, old = medians_pair(command, ours, before, args.repeat)
            rows.append((slug, variant or "correct", new, old))
    import torch

    print(
        f"python {platform.python_version()}, torch {torch.__version__}, {os.cpu_count()} CPUs, median of {args.repeat}\n"
    )
    print("| kata | file | this grader (s) | before (s) | ratio |")
    print("|---|---|---|---|---|")
    for slug, file, new, old in rows:
        print(f"| `{slug}` | {file} | {new:.2f} | {old:.2f} | {new / old:.2f}x |")


def medians_pair(command, ours: dict, before: dict, repeat: int) -> tuple[float, float]:
    """Median wall times of the same command under two environments, run in turn."""
    return tuple(medians([command, command], None, repeat, envs=[ours, before]))


if __name__ == "__main__":
    main()
