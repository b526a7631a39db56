"""What one check's contestant costs, against a bare fork of a process that imported torch.

    python benchmarks/bench_contestant.py [--checks 60] [--rounds 5]

In one run: a warm process (in the sandbox where it works) opens a file's box; each round times
`--checks` contestants started, called once (a round trip with a tensor each way) and ended, and
as many bare fork-and-exit pairs of this process (torch imported, nothing else done). Reports the
medians per check and their ratio. A contestant is a fork of the box, which is a fork of the warm
process: its cost is mostly the kernel copying page tables, so the warm process backs its heap
with huge pages (grader.run.contestant._huge_pages).
"""

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from grader.content.catalogue import get_kata
from grader.run import sandbox
from grader.run.judge import Zygote
from grader.run.limits import Limits


def per_check(action, count: int) -> float:
    start = time.perf_counter()
    for _ in range(count):
        action()
    return (time.perf_counter() - start) / count * 1000


def bare_fork() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    source = get_kata("kl_estimators").solution()
    values = torch.randn(64, 32)
    with tempfile.TemporaryDirectory() as scratch:
        drop = Path(scratch) if sandbox.choose("auto") else None
        zygote = Zygote.start(["import torch"], Limits(2048, None), drop)
        work = Path(scratch) / "file"
        work.mkdir()
        box = zygote.open_file(work)

        def contestant() -> None:
            learner = box.spawn(source, "kl_estimators.py", 10.0)
            learner.call("k3_kl", values, values)
            learner.close()

        ours, bare = [], []
        for _ in range(args.rounds):
            ours.append(per_check(contestant, args.checks))
            bare.append(per_check(bare_fork, args.checks))
        box.close()
        zygote.close()
    new, old = statistics.median(ours), statistics.median(bare)
    print(
        f"python {platform.python_version()}, torch {torch.__version__}, {os.cpu_count()} CPUs, "
        f"sandbox {'on' if drop else 'off'}, median of {args.rounds} rounds of {args.checks}\n"
    )
    print("| per check | ms | vs a bare fork |\n|---|---|---|")
    print(f"| contestant: start, one call, end | {new:.2f} | {new / old:.2f}x |")
    print(f"| bare fork and exit (torch imported) | {old:.2f} | 1.00x |")


if __name__ == "__main__":
    sys.exit(main())
