"""The checks under a course: every reference passes, every misconception variant is caught and named.

    python benchmarks/course_sweep.py [--course FILE] [--katas A,B] [--workers N]

A course (grader.content.seeds) replaces every seed a check draws its inputs with, so the checks
ask other questions than on their own seeds; this grades each kata's reference and each of its
variants under one (a fresh course unless --course names one), as `kata grade --course` would,
and lists what would mislead a grade: a reference failing a check, a variant no check catches,
or one named as another mistake. Exit status 1 when there is any.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

from grader.classroom import batch
from grader.content import seeds
from grader.content.catalogue import all_katas
from grader.run import sandbox


def problems(results: dict) -> list[str]:
    """What misleads, one line each, for {(slug, target): GradeResult}."""
    found = []
    for (slug, target), result in sorted(results.items()):
        if target == "reference":
            failing = [check.name for check in result.checks if check.status != "passed"]
            if failing or not result.checks:
                found.append(f"{slug}: the reference fails {failing or result.load_error}")
            continue
        variant = target.split(":", 1)[1]
        if result.failed == 0:
            found.append(f"{slug}: no check catches {variant}")
        elif result.diagnosis != variant:
            found.append(f"{slug}: {variant} is named {result.diagnosis}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--course", type=Path, help="a course file (default: a fresh course)")
    parser.add_argument("--katas", help="only these katas (A,B)")
    parser.add_argument("--workers", type=int, default=2)
    options = parser.parse_args()
    katas = [kata for kata in all_katas() if not options.katas or kata.slug in options.katas.split(",")]
    with tempfile.TemporaryDirectory(prefix="kata-course-") as scratch:
        course = options.course or Path(scratch) / "course.toml"
        if not options.course:
            seeds.write_course(course, seeds.new_course())
        targets = [(kata.slug, "reference") for kata in katas]
        targets += [(kata.slug, f"misconception:{item.id}") for kata in katas for item in kata.misconceptions]
        settings = batch.Settings(timeout=30.0, sandboxed=sandbox.choose("auto"), course=str(course.resolve()))
        start = time.monotonic()
        results = batch.grade_targets(targets, options.workers, settings)
    found = problems(results)
    variants = len(targets) - len(katas)
    print(f"{len(katas)} references, {variants} variants under a course, {time.monotonic() - start:.0f} s")
    print("\n".join(found) if found else "every reference passes; every variant is caught and named")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
