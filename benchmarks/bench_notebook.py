"""`%%kata check` in a notebook kernel against a cold `kata check` of the same file, in the same run.

    python benchmarks/bench_notebook.py [--checks 20] [--only SLUG]

For each row one ipykernel (this environment's Python, started by nbclient) loads the extension
and checks the cell once (its warm judge starts); then each check runs `%%kata check SLUG` with the
file as the cell, timed from the execute request to the cell's last output (nbclient returns once
the kernel is idle again), and between two checks a cold `kata check --file` of the same file runs
on a pseudo-terminal, so both see the same machine.

Target (issue 32): the second and later checks of a kernel ≤ 0.5 × cold; ≤ 0.5 s for a correct
group_advantages.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from timing import bench_env, wall

CASES = [
    ("group_advantages", None),
    ("group_advantages", "sample_std"),
    ("grpo_loss", None),
    ("grpo_loss", "max_instead_of_min"),
]


def kernel_path(root: Path) -> Path:
    """A JUPYTER_PATH whose kernel `kata-bench` is this Python."""
    spec = root / "kernels" / "kata-bench"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "kata", "language": "python"}))
    return root


def row(slug: str, variant: str | None, checks: int, scratch: Path) -> dict:
    import nbformat
    from nbclient import NotebookClient

    from grader.content.catalogue import get_kata

    kata = get_kata(slug)
    source = kata.variant(variant) if variant else kata.solution()
    folder = scratch / f"{slug}-{variant or 'correct'}"
    folder.mkdir()
    path = folder / f"{slug}.py"
    path.write_text(source, encoding="utf-8")
    env = bench_env(KATA_LANG="en", XDG_CACHE_HOME=str(scratch / "cache"), KATA_WORKSPACE=str(folder / "ws"))
    cold_command = [sys.executable, "-m", "grader.cli", "check", slug, "--file", str(path)]
    notebook = nbformat.v4.new_notebook()
    client = NotebookClient(notebook, kernel_name="kata-bench", timeout=600, allow_errors=True)
    timed, cold = [], []
    with client.setup_kernel(env=env, cwd=str(folder)):

        def run(cell_source: str) -> float:
            cell = nbformat.v4.new_code_cell(cell_source)
            notebook.cells.append(cell)
            started = time.perf_counter()
            client.execute_cell(cell, len(notebook.cells) - 1)
            return time.perf_counter() - started

        run("%load_ext grader.notebook")
        first = run(f"%%kata check {slug}\n{source}")
        wall(cold_command, env, tty=True)  # warm-up: the fingerprints are remembered, as for a learner
        for _ in range(checks):
            timed.append(run(f"%%kata check {slug}\n{source}"))
            cold.append(wall(cold_command, env, tty=True))
    return {
        "kata": slug,
        "file": variant or "correct",
        "first": first,
        "notebook": statistics.median(timed),
        "notebook_p90": statistics.quantiles(timed, n=10)[-1],
        "cold": statistics.median(cold),
        "cold_p90": statistics.quantiles(cold, n=10)[-1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=20)
    parser.add_argument("--only", help="a slug: run only its rows")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["JUPYTER_PATH"] = str(kernel_path(Path(scratch) / "jupyter"))
        for slug, variant in CASES:
            if not args.only or slug == args.only:
                rows.append(row(slug, variant, args.checks, Path(scratch)))
    print(f"%%kata check vs cold kata check, {args.checks} checks each, {os.cpu_count()} CPUs (seconds)")
    print(f"{'kata':<17} {'file':<19} {'first':>6} {'cell':>6} {'p90':>6} {'cold':>6} {'p90':>6} {'ratio':>6}")
    for r in rows:
        ratio = r["notebook"] / r["cold"]
        print(f"{r['kata']:<17} {r['file']:<19} {r['first']:6.2f} {r['notebook']:6.3f} {r['notebook_p90']:6.3f} "
              f"{r['cold']:6.3f} {r['cold_p90']:6.3f} {ratio:6.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
