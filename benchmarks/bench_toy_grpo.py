"""How long `kata check toy_grpo` takes on a correct file, against the cost of its imports.

    python benchmarks/bench_toy_grpo.py [--repeat 7]

Floors, each alternated with the command in the same run (median of --repeat after one warm-up):
- `python -c "import torch; from transformers import GPT2Config, GPT2LMHeadModel"`: importing
  torch and transformers as the lesson's run does (the issue's floor; target <= 1.5x);
- `python -c "import torch, transformers"`: for information only. `import transformers` is lazy:
  it loads none of the model code, so it is not what any use of GPT-2 costs.

Also prints the CPU time of one `train(seed)` run (40 iterations, no early stop) and of the run
the check makes (`stop_at=0.7`), measured in this process with one intra-op thread, as the
grader uses.
"""

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

from timing import medians, solved_workspace

KATA = [shutil.which("kata") or "kata"]


def training_cpu_seconds() -> tuple[float, float]:
    import torch

    from reference import toy_grpo

    torch.set_num_threads(1)
    toy_grpo.train(0, iterations=2)  # warm-up
    start = time.process_time()
    toy_grpo.train(0)
    full = time.process_time() - start
    start = time.process_time()
    toy_grpo.train(0, stop_at=0.7)
    return full, time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        env = solved_workspace(Path(scratch), "toy_grpo")
        model_floor = [sys.executable, "-c", "import torch; from transformers import GPT2Config, GPT2LMHeadModel"]
        lazy_floor = [sys.executable, "-c", "import torch, transformers"]
        check, model, lazy = medians([KATA + ["check", "toy_grpo"], model_floor, lazy_floor], env, args.repeat)
    full, early = training_cpu_seconds()
    import torch
    import transformers

    print(
        f"python {platform.python_version()}, torch {torch.__version__}, transformers {transformers.__version__}, "
        f"{os.cpu_count()} CPUs, median of {args.repeat}\n"
    )
    print("| command | floor | command (s) | floor (s) | ratio |")
    print("|---|---|---|---|---|")
    for floor, seconds in (
        ("import torch; from transformers import GPT2Config, GPT2LMHeadModel", model),
        ("import torch, transformers (lazy: no model code)", lazy),
    ):
        print(
            f"| `kata check toy_grpo (correct file)` | `{floor}` | {check:.3f} | {seconds:.3f} | {check / seconds:.2f}x |"
        )
    print(f"\ntrain(0): {full:.2f} s CPU for 40 iterations; {early:.2f} s CPU with stop_at=0.7 (as the check runs it)")


if __name__ == "__main__":
    main()
