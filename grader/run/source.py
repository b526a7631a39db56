"""Load a module from source text: the one way the judge loads the reference and a contestant
loads the module under test."""

import linecache
import sys
import types
from pathlib import Path


def load_module(source: str, filename: str, name: str) -> types.ModuleType:
    """Execute `source` as a fresh module named `name` (tracebacks point into `filename`).

    A real file's folder goes first on sys.path, so that a helper module beside it imports.
    """
    module = types.ModuleType(name)
    module.__file__ = filename
    if filename.startswith("<"):
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    else:
        sys.path.insert(0, str(Path(filename).parent))
    sys.modules[name] = module
    exec(compile(source, filename, "exec"), module.__dict__)
    return module
