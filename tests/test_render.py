"""Rendering from the one source of truth: regions, includes, templates and edits."""

import pytest

from grader.content import render
from grader.content.catalogue import get_kata

SOURCE = '''"""Doc."""

import torch


def f(x):
    y = x + 1
    # TODO 1: add one
    z = y * 2
    # END TODO 1
    return z
'''


def test_a_region_becomes_title_guidance_and_not_implemented():
    template = render.template_source(SOURCE, {1: ("Double it", ["z = 2 y"])}, ["header"])
    assert template.splitlines()[0] == "# header"
    blank = "    # TODO 1: Double it\n    #   z = 2 y\n    raise NotImplementedError('TODO 1: Double it')\n    # END TODO 1\n"
    assert blank in template
    assert "z = y * 2" not in template and "y = x + 1" in template
    compile(template, "t", "exec")


def test_a_filled_template_keeps_the_code_between_the_markers():
    filled = render.template_source(SOURCE, {1: ("Double it", ["z = 2 y"])}, [], filled=True)
    assert "    #   z = 2 y\n    z = y * 2\n    # END TODO 1\n" in filled and "NotImplementedError" not in filled


def test_transplant_puts_the_reference_step_between_the_learners_markers():
    learner = SOURCE.replace("    z = y * 2\n", "    # my own note\n    z = y * 3\n").replace("    ", "  ")
    hybrid = render.transplant(learner, SOURCE, {1})
    assert "  # TODO 1: add one\n  z = y * 2\n  # END TODO 1\n" in hybrid and "y * 3" not in hybrid
    assert render.transplant(learner, SOURCE, set()) == learner
    namespace = {}
    exec(compile(hybrid.replace('"""Doc."""\n\nimport torch\n', ""), "hybrid", "exec"), namespace)
    assert namespace["f"](1) == 4


@pytest.mark.parametrize(
    "edit", [("# END TODO 1", "# the end"), ("# TODO 1:", "# TODO 2:"), ("# TODO 1: add one\n", "")]
)
def test_transplant_refuses_markers_that_are_not_the_exercises(edit):
    with pytest.raises(render.RenderError, match="markers"):
        render.transplant(SOURCE.replace(*edit), SOURCE, {1})


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("# TODO 1\n# TODO 2\n# END TODO 2\n", "starts inside TODO 1"),
        ("# TODO 1\nx = 1\n", "never closed"),
        ("# END TODO 3\n", "no matching start"),
        ("# TODO 1\n# END TODO 1\n# TODO 1\n# END TODO 1\n", "repeat"),
    ],
)
def test_broken_markers_are_refused(source, words):
    with pytest.raises(render.RenderError, match=words):
        render.find_regions(source)


def test_a_region_without_metadata_is_refused():
    with pytest.raises(render.RenderError, match="no title"):
        render.template_source(SOURCE, {}, [])


@pytest.mark.parametrize("count", [0, 2])
def test_an_edit_must_match_exactly_once(count):
    source = "a = 1\n" * count
    with pytest.raises(render.RenderError, match=f"occurs {count} times"):
        render.apply_edit(source, "a = 1", "a = 2")


def test_an_include_inlines_the_other_reference_once_with_its_imports():
    solution = render.solution_source("grpo_loss")
    assert "# kata: include" not in solution
    assert solution.count("def compute_group_advantages(") == 1
    assert solution.count("import torch") == 1 and solution.count("import math") == 1
    namespace: dict = {}
    exec(compile(solution, "grpo_loss", "exec"), namespace)
    assert callable(namespace["compute_group_advantages"]) and callable(namespace["compute_grpo_loss"])


def test_the_template_speaks_the_chosen_language():
    kata = get_kata("grpo_loss")
    assert "# TODO 2: " + kata.todo(2).title["zh"] in kata.template("zh")
    assert "# TODO 2: " + kata.todo(2).title["en"] in kata.template("en")
