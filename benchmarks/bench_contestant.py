"""What one check's contestant costs, and what of it is its world of its own.

    python benchmarks/bench_contestant.py [--checks 60] [--rounds 5]

In one run, in turns: each round times `--checks` contestants started, loaded, called once (a round
trip with a tensor each way) and ended, of each kind below, and as many bare fork-and-exit pairs of
this process (torch imported, nothing else done). Reports the medians per check and their ratios.

- sandboxed, in a cgroup: what `kata grade` pays per check (as root, where cgroups can be made):
  a fork of the file's box (itself a fork of the warm process, put in the file's cgroup once), pid 1 of a pid namespace of its own, mount, IPC and user namespaces,
  three fresh tmpfs and a /proc of its own, the staged folder copied in, every privilege dropped,
  the seccomp filter, then moved into the file's cgroup before it loads anything;
- sandboxed: the same without the cgroup (`kata check` as a learner, not root);
- outside the sandbox: a fork of the warm process in a fresh temporary folder of its own.

Most of a contestant's cost is the kernel copying page tables at the fork, so the warm process
backs its heap with huge pages (grader.run.contestant._huge_pages).
"""

import argparse
import os
import platform
import statistics
import time

import torch

from grader.content.catalogue import get_kata
from grader.run import containment, sandbox
from grader.run.arena import Arena
from grader.run.limits import Limits

LIMITS = Limits(2048, None)


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


def contestant_of(arena: Arena, source: str, values: torch.Tensor, cgroup=None):
    """One check's contestant: spawned by a box of the file (forked once, in `cgroup` if given),
    loaded, called once, ended."""
    staged, work = arena.stage()
    (staged / "kl_estimators.py").write_text(source, encoding="utf-8")
    box = arena.zygote.box(cgroup)

    def contestant() -> None:
        learner = box.spawn({"work": work, "size_mb": 64}, 10.0, limits=LIMITS)
        learner.load(source, "kl_estimators.py")
        learner.call("k3_kl", values, values)
        learner.close()

    return contestant


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    source = get_kata("kl_estimators").solution()
    values = torch.randn(64, 32)
    arenas = {"outside the sandbox": Arena.start(["import torch"], sandboxed=False)}
    cgroup = containment.Box(memory_mb=LIMITS.memory_mb) if sandbox.choose("auto") else None
    if cgroup is not None:
        sandboxed = Arena.start(["import torch"], sandboxed=True)
        arenas["sandboxed"] = sandboxed
        kinds = {"sandboxed, in a cgroup": contestant_of(sandboxed, source, values, cgroup)} if cgroup.paths else {}
        kinds["sandboxed"] = contestant_of(sandboxed, source, values)
    else:
        kinds = {}
    kinds["outside the sandbox"] = contestant_of(arenas["outside the sandbox"], source, values)
    for arena in arenas.values():
        arena.zygote.wait_ready()
    times: dict[str, list[float]] = {kind: [] for kind in [*kinds, "bare fork"]}
    for _ in range(args.rounds):
        for kind, action in kinds.items():
            times[kind].append(per_check(action, args.checks))
        times["bare fork"].append(per_check(bare_fork, args.checks))
    for arena in arenas.values():
        arena.close()
    if cgroup is not None:
        cgroup.close()
    medians = {kind: statistics.median(values) for kind, values in times.items()}
    print(
        f"python {platform.python_version()}, torch {torch.__version__}, {os.cpu_count()} CPUs, "
        f"median of {args.rounds} rounds of {args.checks}\n"
    )
    print("| per check: start, load, one call, end | ms | vs a bare fork |\n|---|---|---|")
    for kind, median in medians.items():
        label = "bare fork and exit (torch imported)" if kind == "bare fork" else f"contestant, {kind}"
        print(f"| {label} | {median:.2f} | {median / medians['bare fork']:.2f}x |")


if __name__ == "__main__":
    main()
