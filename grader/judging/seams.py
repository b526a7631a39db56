"""The seams between TODOs: the names one TODO's code hands on to the code after it.

A hybrid (grader.judging.localise) joins the reference's code of some TODOs to the learner's code of
the others; the two meet only through these names, which each TODO's guidance gives (a content test
holds the guidance to it). A learner's TODO that does not assign a name the reference's assigns there
(`loss_tok` for `per_token_loss`) breaks every hybrid that replaces one side of the seam and not the
other: it fails with a NameError at the seam, whatever else is right, and no hybrid can locate.

Only the sources' text is read (parsed, never run).
"""

import ast

from grader.content.render import Region, find_regions


def handed_on(solution: str) -> dict[int, set[str]]:
    """{TODO: the names its code assigns that the code after it, in the same function, reads}."""
    tree = ast.parse(solution)
    functions = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)]
    handed = {}
    for region in find_regions(solution):
        first, last = region.start + 1, region.end + 1  # the markers' 1-based lines
        scope = next((f for f in functions if f.lineno < first and f.end_lineno > last), tree)
        names = [node for node in ast.walk(scope) if isinstance(node, ast.Name)]
        read_later = {node.id for node in names if isinstance(node.ctx, ast.Load) and node.lineno > last}
        handed[region.number] = _assigned(names, region) & read_later
    return handed


def missing_names(learner: str, solution: str, unwritten: set[int]) -> list[tuple[int, str]]:
    """(TODO, name), in order, for each name the solution's TODO hands on that the learner's same TODO
    does not assign (a TODO not written yet excepted); [] when the learner's file does not parse (a
    syntax error is located by transplant like any other mistake)."""
    try:
        tree = ast.parse(learner)
        regions = find_regions(learner)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    names = [node for node in ast.walk(tree) if isinstance(node, ast.Name)]
    handed = handed_on(solution)
    return [
        (region.number, name)
        for region in regions
        if region.number not in unwritten
        for name in sorted(handed.get(region.number, set()) - _assigned(names, region))
    ]


def _assigned(names: list[ast.Name], region: Region) -> set[str]:
    """The names assigned between the region's markers."""
    first, last = region.start + 1, region.end + 1
    return {node.id for node in names if isinstance(node.ctx, ast.Store) and first < node.lineno < last}
