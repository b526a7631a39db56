"""Fault localisation by transplant: which TODOs hold the difference between a failing file and the
reference.

A learner's file keeps the exercise's markers (`# TODO N: ...` ... `# END TODO N`). A *hybrid* is
that file with the code of some TODOs replaced by the reference's (grader.content.render.transplant).
The smallest set of TODOs whose hybrid passes every check is the fault's location:

- each TODO alone first, then each pair, each triple, and so on up to every TODO at once, so a
  difference in any number of TODOs is located in exactly those; within a size, the sets holding
  more of the failing checks' TODOs first (of two sets that both pass, the one the checks point to);
- each TODO of the location is proven: the location without it is a smaller set, tried, that fails
  (a TODO whose own checks pass is located only so, and the report says how);
- a TODO still raising NotImplementedError is unwritten: it belongs to every set tried;
- when even every TODO at once does not pass, the difference lies in the given code around them
  (method "outside_todos", no TODO);
- when the markers were removed or changed, no hybrid can be built: the failing checks' TODO tags
  locate it instead (method "tags"), and the location says why;
- when a TODO does not assign a name its guidance hands on (grader.judging.seams: `loss_tok` for
  `per_token_loss`), every hybrid that replaces one side of that seam fails at it: the failing checks'
  TODOs locate instead (those TODOs themselves when no check of a TODO fails), and the location
  names what the guidance expects (Location.names).

The search stays within the locator's time (LOCATE_SECONDS check time limits, grader.judging.locating);
past it, the tags locate (note "time").

`locate` is the search only. The session grades hybrids, as contestants (they are learner code):
`first_passing(sources)` returns the index of the first source, in order, that passes every check,
None when none does, and raises OutOfTime when its time is spent.
"""

import re
from collections.abc import Callable, Iterable
from itertools import combinations

from grader.content.render import RenderError, find_regions, transplant
from grader.judging.seams import missing_names
from grader.report.results import Location

TAGS_MARKERS = "markers"  # Location.note: the file's TODO markers were removed or changed
TAGS_TIME = "time"  # Location.note: the hybrids ran out of time
TAGS_PACK = "pack"  # Location.note: a student pack has no reference to build hybrids from
TAGS_NAMES = "names"  # Location.note: a TODO does not assign a name its guidance hands on


class OutOfTime(Exception):
    """Grading the hybrids took longer than the search may."""


def candidate_sets(numbers: list[int], unwritten: set[int], tagged: Iterable[int] = ()) -> list[list[tuple[int, ...]]]:
    """The sets of TODOs to transplant, in waves of equal size: [unwritten], singles, pairs, triples...
    up to all; within a wave, the sets with more of the `tagged` TODOs first, else in order.

    Every set holds the unwritten TODOs; a wave that repeats an earlier set is left out.
    """
    written = [number for number in numbers if number not in unwritten]
    waves = [[()]] if unwritten else []
    waves += [list(combinations(written, size)) for size in range(1, len(written) + 1)]
    seen: set[tuple[int, ...]] = set()
    out = []
    for wave in waves:
        sets = [tuple(sorted(unwritten | set(chosen))) for chosen in wave]
        sets = sorted(dict.fromkeys(sets), key=lambda todos: -len(set(todos) & set(tagged)))
        sets = [todos for todos in sets if todos not in seen]
        seen.update(sets)
        if sets:
            out.append(sets)
    return out


def unwritten_todos(learner: str) -> set[int]:
    """The TODOs of a file whose code still raises the template's NotImplementedError."""
    lines = learner.splitlines()
    return {
        region.number
        for region in find_regions(learner)
        if any(
            re.search(rf"NotImplementedError\(['\"]TODO {region.number}:", line)
            for line in lines[region.start : region.end]
        )
    }


def locate(
    learner: str,
    solution: str,
    tagged: list[int],
    first_passing: Callable[[list[str]], int | None],
) -> Location:
    """Where `learner` differs from `solution`, by grading hybrids; `tagged`: the TODOs of the
    learner's failing checks (the fallback's answer)."""
    try:
        numbers = [region.number for region in find_regions(solution)]
        transplant(learner, solution, set())  # the markers are the exercise's, or RenderError
        unwritten = unwritten_todos(learner)
    except RenderError:
        return Location(tuple(tagged), "tags", TAGS_MARKERS)
    missing = missing_names(learner, solution, unwritten)
    if missing:
        todos = tuple(tagged) or tuple(sorted({todo for todo, _ in missing}))
        return Location(todos, "tags", TAGS_NAMES, tuple(missing))
    try:
        for wave in candidate_sets(numbers, unwritten, tagged):
            found = first_passing([transplant(learner, solution, set(todos)) for todos in wave])
            if found is not None:
                return Location(wave[found], "transplant")
    except OutOfTime:
        return Location(tuple(tagged), "tags", TAGS_TIME)
    return Location((), "outside_todos")
