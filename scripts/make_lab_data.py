"""Generate the labs' shipped problem files (gpu_labs/data/*.jsonl) with a fixed seed.

    python scripts/make_lab_data.py            # rewrites the four files; same seed -> same bytes
    python scripts/make_lab_data.py --check    # exit 1 if the shipped files differ from a fresh run

The word problems are written from templates here (GSM8K's style: a short story, a few
arithmetic steps, "#### N" at the end); no GSM8K text is used. Licence: Apache-2.0, as the project.
"""

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gpu_labs.data import ARITHMETIC, ARITHMETIC_POOL, WORD_PROBLEMS_HELDOUT, WORD_PROBLEMS_TRAIN, problem_id  # noqa: E402

SEED = 20261129
NAMES = [
    "Ava",
    "Ben",
    "Chen",
    "Dara",
    "Eli",
    "Fatima",
    "Gus",
    "Hana",
    "Ivan",
    "Jia",
    "Kofi",
    "Lena",
    "Mei",
    "Noor",
    "Omar",
    "Priya",
]
ITEMS = ["apples", "stickers", "marbles", "books", "pencils", "cookies", "stamps", "shells", "cards", "plants"]


def _buy_and_give(r):
    name, item = r.choice(NAMES), r.choice(ITEMS)
    have, bought, given = r.randint(5, 40), r.randint(2, 30), r.randint(1, 20)
    total = have + bought - given
    question = f"{name} has {have} {item}. {name} buys {bought} more and then gives {given} to a friend. How many {item} does {name} have now?"
    steps = f"After buying, {name} has {have} + {bought} = {have + bought} {item}.\nAfter giving some away: {have + bought} - {given} = {total}."
    return question, steps, total


def _boxes(r):
    name, item = r.choice(NAMES), r.choice(ITEMS)
    boxes, per_box, extra = r.randint(2, 12), r.randint(3, 15), r.randint(0, 9)
    total = boxes * per_box + extra
    question = f"{name} packs {boxes} boxes with {per_box} {item} in each box, and has {extra} {item} left over. How many {item} did {name} start with?"
    steps = f"The boxes hold {boxes} * {per_box} = {boxes * per_box} {item}.\nWith the leftovers: {boxes * per_box} + {extra} = {total}."
    return question, steps, total


def _share(r):
    first, second = r.sample(NAMES, 2)
    item = r.choice(ITEMS)
    people, each = r.randint(2, 9), r.randint(2, 12)
    kept = r.randint(1, 10)
    total = people * each + kept
    question = f"{first} shares some {item} equally among {people} children, giving each child {each}, and keeps {kept}. {second} asks how many {item} {first} had. What is the answer?"
    steps = f"The children get {people} * {each} = {people * each} {item}.\n{first} kept {kept}, so {people * each} + {kept} = {total}."
    return question, steps, total


def _wages(r):
    name = r.choice(NAMES)
    rate, hours, days = r.randint(8, 25), r.randint(2, 8), r.randint(2, 6)
    total = rate * hours * days
    question = f"{name} earns {rate} dollars an hour and works {hours} hours a day for {days} days. How many dollars does {name} earn?"
    steps = f"Each day {name} earns {rate} * {hours} = {rate * hours} dollars.\nOver {days} days: {rate * hours} * {days} = {total}."
    return question, steps, total


def _difference(r):
    first, second = r.sample(NAMES, 2)
    item = r.choice(ITEMS)
    a = r.randint(10, 60)
    more = r.randint(2, 25)
    total = a + a + more
    question = (
        f"{first} has {a} {item}. {second} has {more} more {item} than {first}. How many {item} do they have together?"
    )
    steps = f"{second} has {a} + {more} = {a + more} {item}.\nTogether: {a} + {a + more} = {total}."
    return question, steps, total


def _spend(r):
    name = r.choice(NAMES)
    money, price, count = r.randint(40, 120), r.randint(2, 9), r.randint(2, 6)
    left = money - price * count
    question = f"{name} has {money} dollars and buys {count} notebooks that cost {price} dollars each. How many dollars are left?"
    steps = (
        f"The notebooks cost {count} * {price} = {price * count} dollars.\nLeft: {money} - {price * count} = {left}."
    )
    return question, steps, left


TEMPLATES = [_buy_and_give, _boxes, _share, _wages, _difference, _spend]


def arithmetic(r, count: int, taken: set[str] | None = None) -> list[dict]:
    """Easy one-step sums, differences and products: the curriculum before the word problems.

    With `taken`, every question is new (not in `taken`, which it joins): the pool's problems.
    """
    rows = []
    while len(rows) < count:
        a, b = r.randint(1, 50), r.randint(1, 50)
        op = r.choice(["+", "-", "*"])
        if op == "*":
            a, b = r.randint(2, 12), r.randint(2, 12)
        value = {"+": a + b, "-": a - b, "*": a * b}[op]
        question = f"What is {a} {op} {b}?"
        if taken is not None:
            if problem_id(question) in taken:
                continue
            taken.add(problem_id(question))
        rows.append({"question": question, "answer": f"{a} {op} {b} = {value}\n#### {value}"})
    return rows


def word_problems(r, count: int, taken: set[str]) -> list[dict]:
    rows = []
    while len(rows) < count:
        question, steps, value = r.choice(TEMPLATES)(r)
        if problem_id(question) in taken:
            continue
        taken.add(problem_id(question))
        rows.append({"question": question, "answer": f"{steps}\n#### {value}"})
    return rows


def build() -> dict[Path, str]:
    r = random.Random(SEED)
    taken: set[str] = set()
    files = {
        ARITHMETIC: arithmetic(r, 200),
        WORD_PROBLEMS_TRAIN: word_problems(r, 256, taken),
        WORD_PROBLEMS_HELDOUT: word_problems(r, 64, taken),
    }
    curriculum = {problem_id(row["question"]) for row in files[ARITHMETIC]}
    files[ARITHMETIC_POOL] = arithmetic(r, 600, curriculum)  # candidates for held-out arithmetic (select_heldout.py)
    return {path: "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows) for path, rows in files.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped files instead of writing")
    args = parser.parse_args()
    stale = []
    for path, text in build().items():
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(path.name)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path} ({text.count(chr(10))} problems)")
    if stale:
        print(f"stale: {', '.join(stale)} (run python scripts/make_lab_data.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
