"""`kata check` of a wrong file, with the variants' fingerprints forgotten and remembered.

    python benchmarks/bench_fingerprints.py [--repeat 3]

Naming a mistake runs each failed check on every misconception variant
(grader.judging.fingerprints); the first check of a kata computes those runs, later checks read
them. Each row times `python -m grader.cli check SLUG --file VARIANT` with an empty cache folder
(cold) and with the folder the previous run left (warm), in turn, and reports the medians.
"""

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from statistics import median

from timing import bench_env, wall

CASES = [("toy_grpo", "old_policy_never_synced"), ("grpo_loss", "mask_ignored"), ("dpo_loss", "beta_missing")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from grader.content.catalogue import get_kata

    print("| kata | file | cold (s) | warm (s) | ratio |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        cache = Path(scratch) / "cache"
        env = bench_env(KATA_LANG="en", XDG_CACHE_HOME=str(cache))
        for slug, variant in CASES:
            kata = get_kata(slug)
            variant = variant if variant in {m.id for m in kata.misconceptions} else kata.misconceptions[0].id
            path = Path(scratch) / f"{slug}.py"
            path.write_text(kata.variant(variant), encoding="utf-8")
            command = [sys.executable, "-m", "grader.cli", "check", slug, "--file", str(path)]
            cold, warm = [], []
            for _ in range(args.repeat):
                shutil.rmtree(cache, ignore_errors=True)
                cold.append(wall(command, env))
                warm.append(wall(command, env))
            print(
                f"| `{slug}` | {variant} | {median(cold):.2f} | {median(warm):.2f} | {median(warm) / median(cold):.2f}x |"
            )


if __name__ == "__main__":
    main()
