"""The README's first command installs only what learning needs (`pip install torch==2.13.0 -e .`):
the test extra (ruff, nox, import-linter, jsonschema and the labs' peft, gguf, matplotlib,
accelerate) comes with `scripts/test`.

A fresh virtualenv per test run would take minutes, so two cheaper tests stand for it: every
import of grader/ is one of pyproject's base dependencies (the labs and `--against trl` have
extras of their own), and `kata start`, `check` and `hint` work with the extras' modules made
impossible to import (each process the command starts inherits the block).
"""

import ast
import re
import sys
import textwrap
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from cli_support import kata_script

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = ("ruff", "nox", "peft", "matplotlib", "gguf", "accelerate", "jsonschema", "importlinter", "trl")
NEEDS_AN_EXTRA = {  # a file, or a folder ending in /, that only an extra's users import
    "grader/oracles/trl_oracle.py": "conformance",  # `kata check --against trl` only
    "grader/content/notebook.py": "notebook",  # `kata notebook` (nbformat), which says so without it
    "grader/notebook/": "notebook",  # `%load_ext grader.notebook`, in IPython
}
OURS = {"grader", "katas", "reference", "gpu_labs"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level == 0}
    return {name.split(".")[0] for name in names}


def _base_dependencies() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0].lower() for spec in project["dependencies"]}


def test_the_base_dependencies_cover_every_import_of_the_grader_the_katas_and_the_references():
    base, distributions = _base_dependencies(), packages_distributions()
    files = [path for folder in ("grader", "katas", "reference") for path in (ROOT / folder).rglob("*.py")]
    uncovered = {}
    for path in files:
        where = path.relative_to(ROOT).as_posix()
        if any(where == key or (key.endswith("/") and where.startswith(key)) for key in NEEDS_AN_EXTRA):
            continue
        for name in _imports(path) - OURS - set(sys.stdlib_module_names):
            if not {dist.lower() for dist in distributions.get(name, [name])} & base:
                uncovered.setdefault(name, path.relative_to(ROOT).as_posix())
    assert not uncovered, f"imported but not a base dependency in pyproject.toml: {uncovered}"


def test_the_readme_first_command_installs_no_extra_and_scripts_test_installs_the_test_extra():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick = readme.split("## Quick start", 1)[1].split("```bash", 1)[1].split("```", 1)[0].strip().splitlines()
    assert len(quick) == 2 and quick[1] == "scripts/test"
    assert "pip install torch==2.13.0 -e . " in quick[0] + " " and "[" not in quick[0]
    assert 'pip install --quiet --disable-pip-version-check -e ".[test]"' in (ROOT / "scripts/test").read_text()
    ci = (ROOT / ".ci/run").read_text()
    assert "pip install --quiet --disable-pip-version-check torch==2.13.0 -e ." in ci and ci.rstrip().endswith(
        "\nscripts/test"
    )


@pytest.mark.slow
def test_start_check_and_hint_work_without_the_test_extras(tmp_path):
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        textwrap.dedent(
            f"""
            import sys

            class _NoExtras:
                def find_spec(self, name, path=None, target=None):
                    if name.split(".")[0] in {EXTRAS!r}:
                        raise ImportError(f"{{name}} belongs to an extra (tests/test_first_command.py)")
                    return None

            sys.meta_path.insert(0, _NoExtras())
            """
        )
    )
    env = {"PYTHONPATH": str(blocker)}
    ws = tmp_path / "ws"

    start = kata_script("start", "group_advantages", "--workspace", ws, cwd=tmp_path, **env)
    check = kata_script("check", "group_advantages", "--workspace", ws, cwd=tmp_path, **env)
    hint = kata_script("hint", "group_advantages", "--workspace", ws, cwd=tmp_path, **env)

    assert start.status == 0, start.err
    assert check.status == 1 and re.search(r"^0 passed, \d+ failed$", check.out, re.MULTILINE), check.out + check.err
    assert "belongs to an extra" not in check.out + check.err
    assert hint.status == 0 and hint.out.startswith("TODO 1  "), hint.err
