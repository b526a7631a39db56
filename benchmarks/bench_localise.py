"""Does the report point at the right TODO and name the right mistake? And what does it cost?

    python benchmarks/bench_localise.py                                   # accuracy tables
    python benchmarks/bench_localise.py --cost --baseline-tree /tmp/before  # + kata check's time

Two sets of wrong files per tensor kata, each file as a learner holds it (the exercise with code
between its TODO markers):
- hand-written: benchmarks/wrong_solutions/<slug>.toml, mistakes written as learners write them,
  each with the TODO(s) it lies in and the misconception it is an instance of ("" for none);
- variants: every misconception's edit applied to the correct file (a consistency check: 100%).

All are graded the way `kata grade` grades a class (warm workers, the sandbox where it works).
"Located" counts files whose location is exactly their TODOs, found by transplant; "next, by tags"
counts those where the failing checks' first TODO (the rule before localisation) is the first of
them; "named" counts files whose diagnosis is their misconception, or none where they have none.

`--cost` times `kata check` on each kata's first three hand-written files with this tree's grader
and with `--baseline-tree`'s (a checkout of the grader to compare with), run in turn (timing.py).
"""

import argparse
import os
import sys
import tempfile
import tomllib
from dataclasses import replace
from pathlib import Path

from timing import bench_env, medians

HERE = Path(__file__).resolve().parent
KATAS = ["group_advantages", "kl_estimators", "grpo_loss", "dpo_loss", "reward_model", "toy_grpo"]


def wrong_files(slug: str) -> dict[str, list[dict]]:
    """{"hand-written": [...], "variants": [...]}: each {name, todos, named, text}."""
    from grader.content.catalogue import get_kata
    from grader.content.render import apply_edit

    kata = get_kata(slug)
    correct = kata.template(filled=True)
    hand = []
    path = HERE / "wrong_solutions" / f"{slug}.toml"
    for entry in tomllib.loads(path.read_text(encoding="utf-8"))["wrong"] if path.exists() else []:
        text = correct
        for edit in entry["edit"]:
            text = apply_edit(text, edit["find"], edit["replace"])
        todos = entry["todo"] if isinstance(entry["todo"], list) else [entry["todo"]]
        hand.append({"name": entry["name"], "todos": sorted(todos), "named": entry["named"] or None, "text": text})
    variants = [
        {"name": item.id, "todos": [item.todo], "named": item.id, "text": apply_edit(correct, item.find, item.replace)}
        for item in kata.misconceptions
    ]
    return {"hand-written": hand, "variants": variants}


def grade_all(sets: dict[str, dict[str, list[dict]]], root: Path) -> dict[tuple[str, str, str], object]:
    """{(set, slug, name): GradeResult}, graded as a class by two warm workers."""
    from grader.classroom import batch
    from grader.report.results import GradeResult
    from grader.run import sandbox

    settings = batch.Settings(sandboxed=sandbox.choose("auto"))
    jobs = {}
    (root / "drops").mkdir()
    with batch.warm_pool(2, settings, set(sets), root / "drops") as pool:
        for slug, by_set in sets.items():
            for set_name, files in by_set.items():
                for file in files:
                    folder = root / set_name / slug / file["name"]
                    folder.mkdir(parents=True)
                    (folder / f"{slug}.py").write_text(file["text"], encoding="utf-8")
                    job = batch.Job(file["name"], slug, folder, "", replace(settings, timeout=30.0))
                    jobs[set_name, slug, file["name"]] = pool.submit(batch.grade_file, job)
        return {key: GradeResult.from_json(future.result()["grade"]) for key, future in jobs.items()}


def accuracy(sets: dict, results: dict) -> list[tuple]:
    rows = []
    for set_name in ("hand-written", "variants"):
        for slug, by_set in sets.items():
            files = by_set[set_name]
            located = named = by_tags = 0
            for file in files:
                result = results[set_name, slug, file["name"]]
                location = result.location
                located += bool(location and location.method == "transplant" and list(location.todos) == file["todos"])
                by_tags += bool(result.failing_todos and result.failing_todos[0] == file["todos"][0])
                named += result.diagnosis == file["named"]
                if "--verbose" in sys.argv:
                    print(set_name, slug, file["name"], file["todos"], location, result.diagnosis, file["named"])
            rows.append((set_name, slug, len(files), located, by_tags, named))
    return rows


def cost(sets: dict, baseline: Path, repeat: int, scratch: Path) -> list[tuple]:
    rows = []
    for slug, by_set in sets.items():
        for file in by_set["hand-written"][:3]:
            path = scratch / "cost" / slug / f"{file['name']}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(file["text"], encoding="utf-8")
            command = [sys.executable, "-m", "grader.cli", "check", slug, "--file", str(path)]
            ours = bench_env(KATA_LANG="en", XDG_CACHE_HOME=f"{scratch}/cache-ours")
            before = bench_env(KATA_LANG="en", XDG_CACHE_HOME=f"{scratch}/cache-before", PYTHONPATH=str(baseline))
            new, old = medians([command, command], None, repeat, envs=[ours, before])
            rows.append((slug, file["name"], new, old))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cost", action="store_true", help="also time kata check against --baseline-tree")
    parser.add_argument("--baseline-tree", type=Path, help="a checkout of the grader to compare with")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--verbose", action="store_true", help="print every file's location and diagnosis")
    args = parser.parse_args()
    if args.cost and not args.baseline_tree:
        parser.error("--cost needs --baseline-tree")
    sets = {slug: wrong_files(slug) for slug in KATAS}
    with tempfile.TemporaryDirectory(prefix="bench-localise-") as scratch:
        results = grade_all(sets, Path(scratch))
        print("| set | kata | files | located | next, by tags | named |")
        print("|---|---|---|---|---|---|")
        totals: dict[str, list[int]] = {}
        for set_name, slug, n, located, by_tags, named in accuracy(sets, results):
            print(f"| {set_name} | `{slug}` | {n} | {located} | {by_tags} | {named} |")
            total = totals.setdefault(set_name, [0, 0, 0, 0])
            for i, value in enumerate((n, located, by_tags, named)):
                total[i] += value
        for set_name, (n, located, by_tags, named) in totals.items():
            print(f"| {set_name} | all | {n} | {located} ({located / n:.0%}) | {by_tags} ({by_tags / n:.0%}) "
                  f"| {named} ({named / n:.0%}) |")  # fmt: skip
        if args.cost:
            print(f"\n{os.cpu_count()} CPUs, median of {args.repeat}, kata check of a wrong file:\n")
            print("| kata | file | this grader (s) | before (s) | ratio |")
            print("|---|---|---|---|---|")
            for slug, name, new, old in cost(sets, args.baseline_tree.resolve(), args.repeat, Path(scratch)):
                print(f"| `{slug}` | {name} | {new:.2f} | {old:.2f} | {new / old:.2f}x |")


if __name__ == "__main__":
    main()
