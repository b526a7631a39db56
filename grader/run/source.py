"""Load a module from source text: the one way the judge loads the reference and a contestant
loads the module under test."""

import linecache
import sys
import types


def load_module(source: str, filename: str, name: str, folder: str | None = None) -> types.ModuleType:
    """Execute `source` as a fresh module named `name` (tracebacks point into `filename`).

    `folder` (a contestant's work folder) goes last on sys.path, after the standard library,
    site-packages and grader: a helper module beside the file imports, but never shadows them.
    """
    module = types.ModuleType(name)
    module.__file__ = filename
    if filename.startswith("<"):
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    if folder is not None:
        sys.path.append(folder)
    sys.modules[name] = module
    exec(compile(source, filename, "exec"), module.__dict__)
    return module
