"""Hostile submissions: code written to raise its own grade. Each attack is graded twice, with
and without the attack, and must score exactly what the file scores without it (or, for an answer
that is not plain data, no check may pass that the honest file does not pass).

The judge holds the reference and the expected values; learner code runs only in contestant
processes that hold neither, and answers as data (grader.run). These files try every route the
old single-process design left open.
"""

import textwrap

import pytest

from grader.content.catalogue import get_kata

KATA = get_kata("group_advantages")
TIMEOUT = 5.0
REFERENCE = KATA.solution()
HONEST_WRONG = (
    "return rewards - torch.stack([rewards[group_ids.eq(g)].mean() for g in group_ids])"  # centred, not scaled
)


def learner(setup: str, answer: str = HONEST_WRONG) -> str:
    """A file whose compute_group_advantages runs `setup` (an attack) and then returns `answer`."""
    return textwrap.dedent("""
        import torch

        def compute_group_advantages(rewards, group_ids, eps=1e-6):
        {setup}
            {answer}
    """).format(setup=textwrap.indent(textwrap.dedent(setup).strip(), "    "), answer=answer)


WALK_FRAMES = """
    import sys
    frame, stolen = sys._getframe(), None
    while frame is not None and stolen is None:  # the callers' locals and globals, up to the check's
        for scope in (frame.f_locals, frame.f_globals):
            for value in list(scope.values()):
                if getattr(value, "__name__", "") == "compute_group_advantages" and value is not compute_group_advantages:
                    stolen = value
        frame = frame.f_back
    if callable(stolen):
        return stolen(rewards, group_ids, eps)
"""

SEARCH_MODULES = """
    import sys
    for module in list(sys.modules.values()):  # the reference, or a variant, among loaded modules
        fn = getattr(module, "compute_group_advantages", None)
        if callable(fn) and fn is not compute_group_advantages:
            return fn(rewards, group_ids, eps)
"""

PYTEST_CONFIG = """
    import sys
    for finder in sys.meta_path:  # pytest's config (and its stash, and the session) through the import system
        config = getattr(finder, "config", None)
        session = getattr(getattr(config, "stash", None), "_storage", {})
        for value in dict(session).values():
            reference = getattr(value, "reference", None)
            if reference is not None:
                return reference.compute_group_advantages(rewards, group_ids, eps)
"""

SEARCH_GC = """
    import gc
    for thing in gc.get_objects():  # any function of that name the collector knows
        if getattr(thing, "__name__", None) == "compute_group_advantages" and thing is not compute_group_advantages:
            return thing(rewards, group_ids, eps)
"""

PATCH_COMPARISONS = """
    for name in ("__eq__", "__ne__", "__gt__", "__lt__", "__ge__", "__le__"):
        setattr(torch.Tensor, name, lambda *args, **kwargs: torch.tensor(False))
    torch.allclose = torch.equal = lambda *args, **kwargs: True
    torch.isclose = lambda a, b, *args, **kwargs: torch.ones_like(a, dtype=torch.bool)
"""

LYING_FLOAT = """
    class LyingFloat(float):
        def __eq__(self, other):
            return True

        def __sub__(self, other):
            return 0.0
"""

FORGE_AN_ANSWER = """
    import json, os, socket, stat, struct
    forged = json.dumps({"value": {"result": {"$tuple": []}, "after": []}}).encode()
    for fd in range(3, 64):  # its own answer channel: a forged "everything matches" answer, then leave
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                os.write(fd, struct.pack(">I", len(forged)) + forged + struct.pack(">Q", 0))
        except OSError:
            pass
    os._exit(0)
"""

LIAR = """
    class Liar(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func in (torch.Tensor.__sub__, torch.sub):
                return torch.zeros(())
            return super().__torch_function__(func, types, args, kwargs or {})
"""

WRITE_EVERY_FD = """
    import os, pickle, struct, json
    class Payload:
        def __reduce__(self):
            return (os.system, ("touch MARKER",))
    forged = json.dumps({"value": {"passed": 13, "failed": 0}}).encode()
    blobs = [pickle.dumps(Payload()), struct.pack(">I", len(forged)) + forged + struct.pack(">Q", 0), b"\\x80\\x04garbage"]
    for fd in range(3, 1024):
        for blob in blobs:
            try:
                os.write(fd, blob)
            except OSError:
                pass
"""

CASES = {
    "walk_frames": (WALK_FRAMES, HONEST_WRONG),
    "search_modules": (SEARCH_MODULES, HONEST_WRONG),
    "pytest_config": (PYTEST_CONFIG, HONEST_WRONG),
    "search_gc": (SEARCH_GC, HONEST_WRONG),
    "patch_comparisons": (PATCH_COMPARISONS, HONEST_WRONG),
    "liar_tensor": (LIAR, f"return ({HONEST_WRONG.removeprefix('return ')}).as_subclass(Liar)"),
    "lying_float": (LYING_FLOAT, "return LyingFloat(0.5)"),
    "forge_an_answer": (FORGE_AN_ANSWER, HONEST_WRONG),
    "write_every_fd": (WRITE_EVERY_FD, HONEST_WRONG),
    "nan_answer": ("pass", "return rewards * float('nan')"),  # every comparison with NaN is False
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory, grade_as_a_class):
    """({case: GradeResult}, the marker a payload would create), graded as `kata grade` grades a class."""
    folder = tmp_path_factory.mktemp("hostile")
    marker = folder / "pwned"
    files = {"honest": learner("pass")}
    for case, (setup, answer) in CASES.items():
        files[case] = learner(setup.replace("MARKER", str(marker)), answer)
    results = grade_as_a_class(KATA.slug, files, folder / "class", TIMEOUT)
    return {case: result for case, (result, _) in results.items()}, marker


def passing(result) -> set[str]:
    return {check.name for check in result.checks if check.status == "passed"}


def test_the_honest_file_passes_the_mean_zero_check_and_fails_most(graded):
    results, _ = graded
    assert "each_group_has_zero_mean" in passing(results["honest"])
    assert len(passing(results["honest"])) <= 4


@pytest.mark.parametrize("case", ["walk_frames", "search_modules", "pytest_config", "search_gc", "patch_comparisons"])
def test_an_attack_scores_exactly_what_the_file_scores_without_it(graded, case):
    results, _ = graded
    assert results[case].load_error is None
    assert passing(results[case]) == passing(results["honest"]), [c.message for c in results[case].checks][:3]


def test_a_lying_tensor_subclass_passes_nothing_and_is_named(graded):
    results, _ = graded
    assert passing(results["liar_tensor"]) <= passing(results["honest"])
    messages = [check.message for check in results["liar_tensor"].checks if check.status != "passed"]
    assert any("returned a `Liar`, not a plain `torch.Tensor`" in message for message in messages)


def test_a_lying_float_passes_nothing_and_is_named(graded):
    results, _ = graded
    assert passing(results["lying_float"]) == set()
    assert any("`LyingFloat`, not a plain `float`" in check.message for check in results["lying_float"].checks)


def test_an_answer_of_nan_passes_no_check(graded):
    """A check written `if abs(mean) > tol: fail` passes NaN; every check must fail it."""
    results, _ = graded
    assert passing(results["nan_answer"]) == set()


def test_a_forged_answer_in_the_wire_format_passes_nothing(graded):
    """It knows the format but not the expected values: a forged answer is an answer, and wrong."""
    results, _ = graded
    assert passing(results["forge_an_answer"]) <= passing(results["honest"])


def test_bytes_and_pickles_written_to_every_descriptor_are_never_unpickled(graded):
    """The only descriptor it can reach is its own answer channel: it can spoil its answers, never forge them."""
    results, marker = graded
    assert not marker.exists()
    assert passing(results["write_every_fd"]) <= passing(results["honest"])
    assert all(
        "not in the grading format" in c.message for c in results["write_every_fd"].checks if c.status != "passed"
    )
