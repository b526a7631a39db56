"""How fast the `kata` command answers, as ratios against floors measured in the same run.

    python benchmarks/bench_cli.py [--repeat 7]

- `kata check grpo_loss` on a correct solution vs `python -c "import torch"` (target <= 2x);
- `kata list` vs `python -c "pass"` (target <= 3x), piped and under a pseudo-terminal (where the
  rich table is drawn);
- `kata start` / `kata hint` / `kata show` vs `python -c "pass"`, for information.

Each command runs `--repeat` times, alternating with its floor, after one warm-up; the median
wall time is reported (see timing.py). Prints a Markdown table (paste it into the README).
"""

import argparse
import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path

from timing import medians, solved_workspace

KATA = [shutil.which("kata") or "kata"]


def compare(name: str, command: list[str], floor: list[str], env: dict, repeat: int, tty: bool = False) -> tuple:
    ours, base = medians([command, floor], env, repeat, tty)
    return name, " ".join(floor[2:] if floor[0] == sys.executable else floor), ours, base


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        env = solved_workspace(Path(scratch), "grpo_loss")
        bare = [sys.executable, "-c", "pass"]
        torch_floor = [sys.executable, "-c", "import torch"]
        rows = [
            compare(
                "kata check grpo_loss (correct file)", KATA + ["check", "grpo_loss"], torch_floor, env, args.repeat
            ),
            compare("kata list (piped)", KATA + ["list"], bare, env, args.repeat),
        ]
        if shutil.which("script"):
            rows.append(compare("kata list (terminal)", KATA + ["list"], bare, env, args.repeat, tty=True))
        rows += [
            compare(
                "kata start group_advantages",
                KATA + ["start", "group_advantages", "--workspace", str(Path(scratch) / "w2")],
                bare,
                env,
                args.repeat,
            ),
            compare("kata hint grpo_loss", KATA + ["hint", "grpo_loss"], bare, env, args.repeat),
            compare("kata show grpo_loss (piped)", KATA + ["show", "grpo_loss"], bare, env, args.repeat),
        ]
    import torch

    print(
        f"python {platform.python_version()}, torch {torch.__version__}, {os.cpu_count()} CPUs, median of {args.repeat}\n"
    )
    print("| command | floor | command (s) | floor (s) | ratio |")
    print("|---|---|---|---|---|")
    for name, floor, ours, base in rows:
        print(f"| `{name}` | `{floor}` | {ours:.3f} | {base:.3f} | {ours / base:.2f}x |")


if __name__ == "__main__":
    main()
