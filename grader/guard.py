"""What learner code can reach through the grader, in the forked child that runs it.

The child is a copy of the grading side, which holds the kata's reference and misconception
variants. Before the learner's file is loaded, `seal()` closes the routes the grader itself
opens: the `reference` and `grader` packages are dropped from `sys.modules` and cannot be
imported again (nor can `katas` modules not loaded yet; pytest re-imports the loaded ones), the
reference and variant modules the grading side made are dropped too, and the cached rendering of
the reference is cleared. The checks keep working: they hold their own references.

Not a sandbox: learner code runs as the grader's user, in the grader's address space, so code
written to cheat can still walk the interpreter's frames and objects or open files by path.
"""

import importlib.abc
import sys

BLOCKED = ("reference", "katas", "grader")  # top-level packages a graded file may not import
DROPPED = ("reference", "grader")  # ... and those dropped from sys.modules
LOADED_PREFIXES = ("kata_reference_", "kata_variant_")  # modules the grading side made from source


class _Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ImportError(f"a graded file cannot import {name!r}", name=name)
        return None


def seal() -> None:
    """Make the grader's packages and the reference unreachable through the import system."""
    from grader import render

    render.solution_source.cache_clear()
    for name in list(sys.modules):
        if name.partition(".")[0] in DROPPED or name.startswith(LOADED_PREFIXES):
            del sys.modules[name]
    if not any(isinstance(finder, _Refuse) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Refuse())
