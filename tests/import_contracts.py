"""An import-linter contract type of this project's (pyproject.toml, [tool.importlinter]):
`import_time_forbidden`, a forbidden contract that counts only the imports that run when a module
is imported.

grimp's graph holds every import statement, those inside functions too; `kata list` must stay
instant, so what matters for "the command loads no torch" is what importing it runs: the imports at
module level (in `if`, `try` or a class body too) and the packages every imported module lives in.
An import inside a function runs when the function is called (`kata check` spawns a judge that
imports torch; the `kata` process itself never does). Everything else is the forbidden contract's.
"""

import ast
import copy
from pathlib import Path

from importlinter.contracts.forbidden import ForbiddenContract

PROJECT = Path(__file__).resolve().parent.parent


class ImportTimeForbiddenContract(ForbiddenContract):
    def check(self, graph, verbose):
        graph = copy.deepcopy(graph)  # the other contracts see every import
        for importer in sorted(graph.modules):
            lines = _import_time_lines(importer)
            if lines is None:  # not one of ours: its imports are all counted
                continue
            for imported in graph.find_modules_directly_imported_by(importer):
                details = graph.get_import_details(importer=importer, imported=imported)
                if details and not any(detail["line_number"] in lines for detail in details):
                    graph.remove_import(importer=importer, imported=imported)
            package = importer.rpartition(".")[0]
            if package:  # importing a module runs its package's __init__ first
                graph.add_import(importer=importer, imported=package, line_number=0, line_contents="its package")
        return super().check(graph, verbose)


def _import_time_lines(module: str) -> set[int] | None:
    """Line numbers of the imports that run when `module` is imported; None when its source is not
    in this project."""
    base = PROJECT.joinpath(*module.split("."))
    package = base / "__init__.py"  # as Python finds it: a package, else a module (gpu_labs/evidence/ holds runs)
    path = package if package.is_file() else base.with_suffix(".py")
    if not path.is_file():
        return None
    lines: set[int] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue  # runs when called, not when imported
            if isinstance(child, ast.Import | ast.ImportFrom):
                lines.add(child.lineno)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return lines
