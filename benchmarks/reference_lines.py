"""How long the reference functions are: every function in reference/*.py, its docstring excluded.

    python benchmarks/reference_lines.py [--longest 10] [--reference DIR]

A function's length is its lines from `def` (the signature included) to its last line, blank and
comment lines included, less the lines of its docstring; nested functions and methods count as
functions of their own (and are also part of the function around them). Targets (issue 14): median
at most 10 lines, none over 40.
"""

import argparse
import ast
import statistics
from pathlib import Path

REFERENCE_DIR = Path(__file__).resolve().parents[1] / "reference"
MEDIAN_TARGET, LONGEST_TARGET = 10, 40


def function_lengths(path: Path) -> dict[str, int]:
    """{qualified name: lines without the docstring} of every function defined in `path`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lengths = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines = node.end_lineno - node.lineno + 1
            docstring = node.body[0]
            if isinstance(docstring, ast.Expr) and isinstance(docstring.value, ast.Constant):
                lines -= docstring.end_lineno - docstring.lineno + 1
            lengths[f"{path.stem}.{node.name}"] = lines
    return lengths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--longest", type=int, default=10, help="how many of the longest functions to list")
    parser.add_argument("--reference", type=Path, default=REFERENCE_DIR, help="folder of reference modules")
    args = parser.parse_args()
    lengths = {}
    for path in sorted(args.reference.glob("*.py")):
        lengths.update(function_lengths(path))
    median, longest = statistics.median(lengths.values()), max(lengths.values())
    print(f"{len(lengths)} functions in reference/: median {median:g} lines (target <= {MEDIAN_TARGET}),")
    print(f"longest {longest} (target <= {LONGEST_TARGET}); docstrings excluded")
    checked = [lines for name, lines in lengths.items() if not name.split(".")[1].startswith("_check")]
    print(f"without the _check_* helpers: {len(checked)} functions, median {statistics.median(checked):g} lines\n")
    for name, lines in sorted(lengths.items(), key=lambda item: -item[1])[: args.longest]:
        print(f"{lines:4d}  {name}")


if __name__ == "__main__":
    main()
