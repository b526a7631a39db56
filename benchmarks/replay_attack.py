"""What a file that replays a student pack's recorded values earns, on the checks' own seeds and
under the course: the points of each TODO, kata by kata.

    python benchmarks/replay_attack.py [--pack OUT] [--katas A,B] [--workers N]

Builds a pack of the katas in a scratch folder (`kata pack`, minutes: a pack of every kata takes
about 14 on 2 cores) unless --pack names an OUT `kata pack` wrote, writes one replaying file per
kata (tests/replayer.py), and grades them with `kata grade`, then with `kata grade --course
OUT/course.toml`. Under the course, a point the replaying file keeps is one that rests on fixed
inputs alone, or on the input contract (a ValueError for any input it does not know satisfies
many contracts); exit status 1 when a TODO or the whole-function points are kept.
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from replayer import replayer  # noqa: E402

from grader.content.catalogue import all_katas  # noqa: E402
from grader.pack.build import build  # noqa: E402


def grade(folder: Path, out: Path, workers: int, *options) -> dict:
    """{slug: points} of the one student in `folder`."""
    command = [sys.executable, "-m", "grader.cli", "grade", str(folder), "--out", str(out), "--workers", str(workers)]
    subprocess.run([*command, *options], check=True, capture_output=True)
    sheet = json.loads((out / "grades.json").read_text(encoding="utf-8"))
    return {slug: entry.get("points", {}) for slug, entry in sheet["students"]["replayer"].items()}


def shown(points: dict) -> str:
    return " ".join(f"{key}={value}" for key, value in points.items())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pack", type=Path, help="an OUT folder `kata pack` wrote (default: build one)")
    parser.add_argument("--katas", help="only these katas (A,B)")
    parser.add_argument("--workers", type=int, default=2)
    options = parser.parse_args()
    slugs = [kata.slug for kata in all_katas() if not options.katas or kata.slug in options.katas.split(",")]
    with tempfile.TemporaryDirectory(prefix="kata-replay-") as scratch:
        out = options.pack or Path(scratch) / "course"
        if not options.pack:
            build(out, slugs, workers=options.workers)
        folder = Path(scratch) / "class" / "replayer"
        folder.mkdir(parents=True)
        for slug in slugs:
            try:
                (folder / f"{slug}.py").write_text(replayer(out / "pack", slug), encoding="utf-8")
            except (AssertionError, FileNotFoundError):
                print(f"{slug}: nothing recorded to replay")
        plain = grade(folder.parent, Path(scratch) / "plain", options.workers)
        coursed = grade(folder.parent, Path(scratch) / "coursed", options.workers, "--course", str(out / "course.toml"))
    kept = []
    for slug in sorted(plain):
        print(f"{slug}\n  own seeds: {shown(plain[slug])}\n  course:    {shown(coursed[slug])}")
        kept += [f"{slug}.{key}" for key, value in coursed[slug].items() if value and key != "contract"]
    print("kept under the course: " + (", ".join(kept) or "nothing but input contracts"))
    return 1 if kept else 0


if __name__ == "__main__":
    sys.exit(main())
