"""Group advantages: the reference and its fast variant against the lesson's loop and a contiguous view(-1, G).

    python benchmarks/bench_group_advantages.py [--threads 1] [--rounds 9] [--block 0.02] [--groups 8 64 ...]

All versions compute A_i = (r_i - mean_g) / max(std_g, eps) (population std) and are checked to
agree before timing. The reference (reference/group_advantages.py) is the plain version learners
read; the fast variant (gpu_labs/fast_advantages.py) numbers groups without a sort and saves one
buffer. The contiguous version only works when each group is G consecutive rows; the fast
variant accepts groups in any order, so it is also timed on the same groups shuffled. The
contiguous version preceded by the reference's input checks (shapes, finite rewards, eps) shows
how much of the gap at small sizes is the checks rather than the grouping.

Timing: the versions take turns, `--rounds` times; each turn runs one version for about `--block`
seconds (at least one call) and records its time per call. Each ratio is the median over rounds of
the two versions' times in the same round, so a slow spell of the machine hits both sides. The
loop is O(groups x N) and runs up to 4,096 groups only.
Targets (issue 14): the reference at least 50x faster than the loop at 4,096 groups of 8; the fast
variant's ratio to the contiguous version at most 1.05 from 512 groups up. Prints a Markdown table
(paste it into the README).
"""

import argparse
import math
import os
import platform
import statistics
import time

import torch

from gpu_labs.fast_advantages import fast_group_advantages
from reference.group_advantages import compute_group_advantages

GROUPS = (8, 64, 512, 4096, 65536)
SIZES = (8, 16)
LOOP_MAX_GROUPS = 4096
EPS = 1e-6


def per_group_loop(rewards, group_ids, eps=EPS):
    """The lesson's loop: one boolean mask and one standardisation per group."""
    advantages = torch.empty_like(rewards)  # (N,)
    for group in torch.unique(group_ids):
        members = group_ids == group  # (N,) bool
        group_rewards = rewards[members]  # (n_g,)
        advantages[members] = (group_rewards - group_rewards.mean()) / group_rewards.std(correction=0).clamp_min(eps)
    return advantages


def contiguous(rewards, group_size, eps=EPS):
    """Groups of `group_size` consecutive rows: one reshape, row statistics."""
    grouped = rewards.view(-1, group_size)  # (G, n)
    mean = grouped.mean(dim=1, keepdim=True)  # (G, 1)
    std = grouped.std(dim=1, correction=0, keepdim=True).clamp_min(eps)  # (G, 1)
    return ((grouped - mean) / std).view(-1)  # (N,)


def contiguous_checked(rewards, group_size, eps=EPS):
    """`contiguous` behind the reference's input checks: same contract, groups must be consecutive."""
    if rewards.ndim != 1 or rewards.numel() == 0 or rewards.numel() % group_size:
        raise ValueError("rewards must be a non-empty 1-D tensor of whole groups")
    lowest, highest = rewards.detach().aminmax()
    if not (math.isfinite(lowest) and math.isfinite(highest)):
        raise ValueError("rewards must be finite")
    if not math.isfinite(eps) or eps <= 0:
        raise ValueError("eps must be a positive finite number")
    return contiguous(rewards, group_size, eps)


def calls_per_block(call, block: float) -> int:
    """How many calls fill about `block` seconds (at least one), from one timed call after a warm-up."""
    call()
    start = time.perf_counter()
    call()
    return max(1, round(block / max(time.perf_counter() - start, 1e-9)))


def taking_turns(calls: dict, rounds: int, block: float) -> dict[str, list[float]]:
    """Seconds per call of each named call, one sample per round; the calls alternate within a round."""
    repeats = {name: calls_per_block(call, block) for name, call in calls.items()}
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            start = time.perf_counter()
            for _ in range(repeats[name]):
                call()
            samples[name].append((time.perf_counter() - start) / repeats[name])
    return samples


def paired_ratio(numerator: list[float], denominator: list[float]) -> float:
    return statistics.median(a / b for a, b in zip(numerator, denominator, strict=True))


def row(groups: int, size: int, rounds: int, block: float) -> dict[str, float | None]:
    generator = torch.Generator().manual_seed(groups * size)
    rewards = torch.randn(groups * size, generator=generator)  # (N,)
    group_ids = torch.arange(groups).repeat_interleave(size)  # (N,) contiguous
    order = torch.randperm(groups * size, generator=generator)
    shuffled_rewards, shuffled_ids = rewards[order], group_ids[order]
    expected = contiguous(rewards, size)
    torch.testing.assert_close(compute_group_advantages(rewards, group_ids), expected)
    torch.testing.assert_close(fast_group_advantages(rewards, group_ids), expected)
    torch.testing.assert_close(fast_group_advantages(shuffled_rewards, shuffled_ids), expected[order])
    torch.testing.assert_close(contiguous_checked(rewards, size), expected)
    calls = {
        "contiguous": lambda: contiguous(rewards, size),
        "checked": lambda: contiguous_checked(rewards, size),
        "reference": lambda: compute_group_advantages(rewards, group_ids),
        "fast": lambda: fast_group_advantages(rewards, group_ids),
        "shuffled": lambda: fast_group_advantages(shuffled_rewards, shuffled_ids),
    }
    if groups <= LOOP_MAX_GROUPS:
        torch.testing.assert_close(per_group_loop(rewards, group_ids), expected)
        calls["loop"] = lambda: per_group_loop(rewards, group_ids)
    samples = taking_turns(calls, rounds, block)
    result: dict[str, float | None] = {name: statistics.median(times) * 1e3 for name, times in samples.items()}
    result["reference / contiguous"] = paired_ratio(samples["reference"], samples["contiguous"])
    result["fast / contiguous"] = paired_ratio(samples["fast"], samples["contiguous"])
    result["shuffled / contiguous"] = paired_ratio(samples["shuffled"], samples["contiguous"])
    result["checked / contiguous"] = paired_ratio(samples["checked"], samples["contiguous"])
    result["loop / reference"] = paired_ratio(samples["loop"], samples["reference"]) if "loop" in samples else None
    result.setdefault("loop", None)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1: steadier)")
    parser.add_argument("--rounds", type=int, default=9, help="turns each version takes (default 9)")
    parser.add_argument("--block", type=float, default=0.02, help="seconds of calls per turn (default 0.02)")
    parser.add_argument("--groups", type=int, nargs="+", default=GROUPS, help="numbers of groups (default: all)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(
        f"python {platform.python_version()}, torch {torch.__version__}, {args.threads} thread(s) of"
        f" {os.cpu_count()} CPUs, float32, median of {args.rounds} rounds, times in ms\n"
    )
    print(
        "| groups x size | loop | contiguous | reference | fast | fast, shuffled | reference / contiguous"
        " | fast / contiguous | fast shuffled / contiguous | contiguous + checks / contiguous | loop / reference |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for groups in args.groups:
        for size in SIZES:
            t = row(groups, size, args.rounds, args.block)
            loop = f"{t['loop']:.3f}" if t["loop"] else "—"
            speedup = f"{t['loop / reference']:.0f}x" if t["loop / reference"] else "—"
            print(
                f"| {groups:,} x {size} | {loop} | {t['contiguous']:.3f} | {t['reference']:.3f} | {t['fast']:.3f}"
                f" | {t['shuffled']:.3f} | {t['reference / contiguous']:.2f}x | {t['fast / contiguous']:.2f}x"
                f" | {t['shuffled / contiguous']:.2f}x"
                f" | {t['checked / contiguous']:.2f}x | {speedup} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
