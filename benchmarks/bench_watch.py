"""`kata watch` (a warm judge) against a cold `kata check` of the same file, in the same run.

    python benchmarks/bench_watch.py [--saves 20] [--only SLUG]

For each row a workspace holds the file (the reference, or a misconception variant); `kata watch`
runs on a pseudo-terminal 80 columns wide, as a learner runs it. Each save writes the file again;
its time is from just before the write to the arrival of the status line that follows the report
(the report's last byte, on the pty), localisation and naming included. Between two saves a cold
`kata check` of the same file runs on a pty of its own, so both see the same machine. The watch's
own log (KATA_TIMINGS_LOG, grader.cli.watch) splits each save's time into the judge's phases:
contestants (the file's checks), naming (the variants), hybrids (localisation), the rest of the
judge (fork, pytest, collection: "judge"), rendering the report, and what is left ("other": the
file event, the worker's round trip, the terminal).

Targets (issue 32): watch ≤ 0.5 × cold for each row; ≤ 0.5 s for a correct group_advantages.
"""

import argparse
import fcntl
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

from timing import NEUTRAL, bench_env, wall

CASES = [
    ("group_advantages", None),
    ("group_advantages", "sample_std"),
    ("grpo_loss", None),
    ("grpo_loss", "max_instead_of_min"),
]
KATA = [sys.executable, "-m", "grader.cli"]
END = b"Ctrl-C"  # in the status line printed after each report (the phrase watch_status), and in the first line


class Pty:
    """A command on a pseudo-terminal of 80 columns; `ends` gets the time each status line arrives."""

    def __init__(self, command: list[str], env: dict):
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 80, 0, 0))
        self.process = subprocess.Popen(command, env=env, cwd=NEUTRAL, stdin=slave, stdout=slave, stderr=slave,
                                        start_new_session=True)  # fmt: skip
        os.close(slave)
        self.master, self.ends, self.text = master, [], b""
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            now = time.perf_counter()
            before = self.text.count(END)
            self.text += chunk
            self.ends.extend([now] * (self.text.count(END) - before))

    def wait_for(self, count: int, seconds: float = 300) -> float:
        deadline = time.monotonic() + seconds
        while len(self.ends) < count:
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"no report came: {self.text[-2000:].decode(errors='replace')}")
            time.sleep(0.002)
        return self.ends[count - 1]

    def stop(self) -> None:
        self.process.send_signal(2)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        os.close(self.master)


def row(slug: str, variant: str | None, saves: int, scratch: Path) -> dict:
    from grader.content.catalogue import get_kata

    kata = get_kata(slug)
    workspace, log = scratch / f"{slug}-{variant or 'correct'}", scratch / f"{slug}-{variant}.jsonl"
    env = bench_env(KATA_LANG="en", COLUMNS="80", XDG_CACHE_HOME=str(scratch / "cache"))
    subprocess.run([*KATA, "start", slug, "--workspace", str(workspace)], env=env, cwd=NEUTRAL,
                   capture_output=True, check=True)  # fmt: skip
    source = kata.variant(variant) if variant else kata.solution()
    path = workspace / f"{slug}.py"
    path.write_text(source, encoding="utf-8")
    cold_command = [*KATA, "check", slug, "--workspace", str(workspace)]
    wall(cold_command, env, tty=True)  # warm-up: the fingerprints are remembered, as for a learner
    watch = Pty([*KATA, "watch", slug, "--workspace", str(workspace)], dict(env, KATA_TIMINGS_LOG=str(log)))
    watched, cold = [], []
    try:
        watch.wait_for(2)  # the first line, then the check on start: the worker starts
        for _ in range(saves):
            seen = len(watch.ends)
            started = time.perf_counter()
            path.write_text(source, encoding="utf-8")
            watched.append(watch.wait_for(seen + 1) - started)
            cold.append(wall(cold_command, env, tty=True))
    finally:
        watch.stop()
    phases = [json.loads(line) for line in log.read_text().splitlines()[1:]]  # the saves', not the start's
    split = {name: statistics.median(p.get(name, 0.0) for p in phases) for name in ("checks", "naming", "hybrids")}
    split["judge"] = statistics.median(p["judged"] - sum(p.get(n, 0.0) for n in ("checks", "naming", "hybrids"))
                                       for p in phases)  # fmt: skip
    split["rendering"] = statistics.median(p["rendering"] for p in phases)
    split["other"] = statistics.median(watched) - sum(split.values())
    return {
        "kata": slug,
        "file": variant or "correct",
        "watch": statistics.median(watched),
        "watch_p90": statistics.quantiles(watched, n=10)[-1],
        "cold": statistics.median(cold),
        "cold_p90": statistics.quantiles(cold, n=10)[-1],
        "split": split,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--saves", type=int, default=20)
    parser.add_argument("--only", help="a slug: run only its rows")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for slug, variant in CASES:
            if not args.only or slug == args.only:
                rows.append(row(slug, variant, args.saves, Path(scratch)))
    print(f"kata watch vs cold kata check, {args.saves} saves each, {os.cpu_count()} CPUs (seconds)")
    print(f"{'kata':<17} {'file':<19} {'watch':>6} {'p90':>6} {'cold':>6} {'p90':>6} {'ratio':>6}")
    for r in rows:
        ratio = r["watch"] / r["cold"]
        print(f"{r['kata']:<17} {r['file']:<19} {r['watch']:6.3f} {r['watch_p90']:6.3f} {r['cold']:6.3f} "
              f"{r['cold_p90']:6.3f} {ratio:6.2f}")  # fmt: skip
    print("\nthe watch's median split (seconds)")
    names = ["checks", "naming", "hybrids", "judge", "rendering", "other"]
    print(f"{'kata':<17} {'file':<19} " + " ".join(f"{name[:9]:>9}" for name in names))
    for r in rows:
        print(f"{r['kata']:<17} {r['file']:<19} " + " ".join(f"{r['split'][name]:9.3f}" for name in names))


if __name__ == "__main__":
    main()
