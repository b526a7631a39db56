"""The structure the run layer's safety rests on, held by tests (grader/ARCHITECTURE.md):

- the layers of grader and the labs, and the torch-free import of the command, content, report and
  labs, as import-linter contracts (pyproject.toml, [tool.importlinter]; `lint-imports`);
- no module-level mutable state in grader.run and grader.judging: what a worker hands its judges
  travels as one object (grader.run.arena), never through a module's globals.
"""

import array
import ast
import collections
import dataclasses
import enum
import importlib
import itertools
import re
import struct
import subprocess
import sys
import threading
import types
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent
SCANNED = ("grader/run", "grader/judging")
MUTABLE = (list, dict, set, bytearray, collections.deque, array.array, itertools.count, type(threading.Lock()))
IMMUTABLE = (str, bytes, int, float, complex, bool, type(None), types.ModuleType, type, types.FunctionType)
IMMUTABLE += (types.BuiltinFunctionType, enum.Enum, re.Pattern, struct.Struct)


def test_the_import_contracts_are_kept():
    done = subprocess.run(
        [Path(sys.executable).with_name("lint-imports")], cwd=PROJECT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def frozen(value) -> bool:
    """Whether a module-level value can never change: a constant, a tuple of them, a read-only mapping,
    a function, a class, an enum member, a compiled pattern, a frozen dataclass of them, or an object
    with no state at all."""
    if isinstance(value, MUTABLE) or hasattr(value, "cache_info"):  # a functools cache is state too
        return False
    if isinstance(value, tuple | frozenset):
        return all(map(frozen, value))
    if isinstance(value, types.MappingProxyType):
        return all(map(frozen, value.values()))
    if isinstance(value, IMMUTABLE):
        return True
    if dataclasses.is_dataclass(value) and value.__dataclass_params__.frozen:
        return all(frozen(getattr(value, field.name)) for field in dataclasses.fields(value))
    return not getattr(value, "__dict__", None)  # a sentinel object(), a stash key, a torch.dtype


def module_names() -> list[str]:
    return sorted(
        ".".join(path.relative_to(PROJECT).with_suffix("").parts).removesuffix(".__init__")
        for folder in SCANNED
        for path in (PROJECT / folder).rglob("*.py")
    )


def assigned_at_module_level(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign | ast.AugAssign)
            else []
        )
        for target in targets:
            names |= {name.id for name in ast.walk(target) if isinstance(name, ast.Name)}
    return names


@pytest.mark.parametrize("name", module_names())
def test_the_run_layer_and_the_judge_keep_no_module_level_mutable_state(name):
    source = (PROJECT / Path(*name.split("."))).with_suffix(".py")
    if not source.exists():
        source = PROJECT / Path(*name.split(".")) / "__init__.py"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    rebinds = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Global)]
    assert rebinds == [], f"{name} rebinds module globals (`global`) on lines {rebinds}"
    module = importlib.import_module(name)
    state = {
        key: type(vars(module)[key]).__name__ for key in assigned_at_module_level(tree) if not frozen(vars(module)[key])
    }
    assert state == {}, f"{name} keeps mutable state at module level: {state}"


def test_the_scan_would_see_mutable_state():
    """The twin: the rule flags what it must (a dict, a counter, a cache, a lock) and lets constants be."""

    @__import__("functools").cache
    def cached():
        return 1

    assert not any(map(frozen, ({}, [], set(), itertools.count(), cached, threading.Lock(), ({},))))
    assert all(map(frozen, ((1, "a"), types.MappingProxyType({"a": len}), object(), re.compile("x"), enum.Enum)))
