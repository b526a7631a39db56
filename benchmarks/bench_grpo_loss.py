"""The GRPO loss, forward + backward: the reference against TRL's GRPOTrainer._compute_loss.

    python benchmarks/bench_grpo_loss.py [--threads 2] [--repeat 5]      (needs trl==1.16.0)

Both run on the same float32 tensors: log-probs (B, T) with ratios on both sides of the clip,
ragged masks, a reference policy with beta 0.04, clip 0.2. TRL takes advantages as an input,
so it gets the reference's; the reference computes them from rewards and group ids inside the
timed call (and checks its inputs); the TRL side computes them with the reference in its timed
call too, so both do the same advantage work.

Time: median of `--repeat` forward + backward passes, the two alternating, after a warm-up.
Memory: each side runs once more in a fresh subprocess, which reports how far its peak resident
memory (VmHWM, reset just before) rose during one forward + backward above the RSS before it
(Linux only): the extra memory the step needs on top of its inputs.
Targets (issue 6): reference time within 1.2x of TRL's, and its memory no higher.
"""

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time

import torch

from grader.oracles.against import trl_problem

SHAPES = ((64, 256), (256, 512), (1024, 1024))
GROUP = 8
OPTIONS = {"clip_range": 0.2, "beta": 0.04}


def batch(rows: int, width: int):
    generator = torch.Generator().manual_seed(rows + width)
    old = -torch.rand(rows, width, generator=generator) * 4 - 0.1  # (B, T)
    new = old + 0.3 * torch.randn(rows, width, generator=generator)  # (B, T)
    ref = old + 0.2 * torch.randn(rows, width, generator=generator)  # (B, T)
    rewards = torch.randn(rows, generator=generator)  # (B,)
    group_ids = torch.arange(rows // GROUP).repeat_interleave(GROUP)  # (B,)
    lengths = torch.randint(1, width + 1, (rows,), generator=generator)
    mask = torch.arange(width) < lengths.unsqueeze(-1)  # (B, T)
    return new, old, ref, rewards, group_ids, mask


def step(side: str, inputs) -> torch.Tensor:
    """One forward + backward of `side` ("reference" or "trl"); returns the gradient."""
    from grader.oracles import trl_oracle
    from reference.group_advantages import compute_group_advantages
    from reference.grpo_loss import compute_grpo_loss

    new, old, ref, rewards, group_ids, mask = inputs
    leaf = new.detach().requires_grad_(True)
    if side == "reference":
        loss, _ = compute_grpo_loss(leaf, old, rewards, group_ids, mask, log_probs_ref=ref, **OPTIONS)
    else:
        advantages = compute_group_advantages(rewards, group_ids)  # TRL takes them made; both sides make them
        loss = trl_oracle.trl_grpo_loss(
            leaf, old, advantages, mask, OPTIONS["clip_range"], ref, OPTIONS["beta"], "grpo"
        )
    loss.backward()
    return leaf.grad


def peak_growth_mb(side: str, rows: int, width: int) -> float:
    """Run one step in a fresh interpreter; how far its peak RSS rose above the RSS before, in MB.

    Linux: writing 5 to /proc/self/clear_refs resets the peak (VmHWM) to the current RSS.
    """
    code = (
        "import sys; sys.path.insert(0, 'benchmarks'); import bench_grpo_loss as b;"
        f" inputs = b.batch({rows}, {width}); b.step({side!r}, b.batch(8, 8));"
        " open('/proc/self/clear_refs', 'w').write('5'); before = b.status_kb('VmRSS');"
        f" b.step({side!r}, inputs); print((b.status_kb('VmHWM') - before) / 1024)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def status_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))


def timed(side: str, inputs) -> float:
    start = time.perf_counter()
    step(side, inputs)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    problem = trl_problem()
    if problem:
        print(f"bench_grpo_loss needs the pinned TRL: {problem}")
        return 1
    torch.set_num_threads(args.threads)
    import trl

    print(
        f"python {platform.python_version()}, torch {torch.__version__}, trl {trl.__version__},"
        f" {args.threads} thread(s) of {os.cpu_count()} CPUs, float32, beta {OPTIONS['beta']},"
        f" median of {args.repeat}\n"
    )
    print("| B x T | reference (ms) | TRL (ms) | time ratio | reference peak +MB | TRL peak +MB |")
    print("|---|---|---|---|---|---|")
    for rows, width in SHAPES:
        inputs = batch(rows, width)
        torch.testing.assert_close(step("reference", inputs), step("trl", inputs), rtol=1e-5, atol=1e-7)
        times = {"reference": [], "trl": []}
        for _ in range(args.repeat):
            for side in times:
                times[side].append(timed(side, inputs))
        ours, theirs = (statistics.median(times[side]) * 1e3 for side in ("reference", "trl"))
        memory = [peak_growth_mb(side, rows, width) for side in ("reference", "trl")]
        print(
            f"| {rows} x {width} | {ours:.1f} | {theirs:.1f} | {ours / theirs:.2f}x | {memory[0]:.0f} | {memory[1]:.0f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
