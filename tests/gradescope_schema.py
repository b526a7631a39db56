"""results.json as Gradescope's autograder specification describes it, as a JSON Schema, and the
checks every results.json the tests produce must pass (`check_results`).

The specification (gradescope-autograders.readthedocs.io, "Autograder Specifications", the
"Output format" section): a top-level object with an optional score, execution_time, output,
output_format, test_output_format, test_name_format, visibility, stdout_visibility, extra_data,
tests and leaderboard; each test an object with an optional score, max_score, status, name,
name_format, number, output, output_format, tags, visibility and extra_data. Output formats are
text, html, simple_format, md and ansi; visibilities hidden, after_due_date, after_published and
visible; a test's status passed or failed. A score is required at the top or on every test.
Nothing else is allowed here, so that a misspelt key fails rather than being ignored by Gradescope.
"""

import jsonschema
from markdown_it import MarkdownIt

FORMATS = ["text", "html", "simple_format", "md", "ansi"]
VISIBILITIES = ["hidden", "after_due_date", "after_published", "visible"]

TEST = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "score": {"type": "number"},
        "max_score": {"type": "number"},
        "status": {"enum": ["passed", "failed"]},
        "name": {"type": "string"},
        "name_format": {"enum": FORMATS},
        "number": {"type": "string"},
        "output": {"type": "string"},
        "output_format": {"enum": FORMATS},
        "tags": {"type": "array", "items": {"type": "string"}},
        "visibility": {"enum": VISIBILITIES},
        "extra_data": {"type": "object"},
    },
}

RESULTS = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "score": {"type": "number"},
        "execution_time": {"type": "number"},
        "output": {"type": "string"},
        "output_format": {"enum": FORMATS},
        "test_output_format": {"enum": FORMATS},
        "test_name_format": {"enum": FORMATS},
        "visibility": {"enum": VISIBILITIES},
        "stdout_visibility": {"enum": VISIBILITIES},
        "extra_data": {"type": "object"},
        "tests": {"type": "array", "items": TEST},
        "leaderboard": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "value"],
                "properties": {
                    "name": {"type": "string"},
                    "value": {"type": ["number", "string"]},
                    "order": {"enum": ["asc", "desc"]},
                },
            },
        },
    },
    "anyOf": [
        {"required": ["score"]},
        {"required": ["tests"], "properties": {"tests": {"items": {"required": ["score"]}}}},
    ],
}


def check_results(results: dict) -> None:
    """`results` is valid against RESULTS, and as this project writes it: every test scored within
    its maximum, the score their sum, the names unique, every output non-empty, and in format "md"
    every output parses as CommonMark with no raw HTML and every table whole (check_markdown)."""
    jsonschema.validate(results, RESULTS)
    tests = results["tests"]
    assert results["output"].strip() and all(test["output"].strip() for test in tests)
    assert all(0 <= test["score"] <= test["max_score"] for test in tests)
    assert abs(results["score"] - sum(test["score"] for test in tests)) < 1e-9
    names = [test["name"] for test in tests]
    assert len(set(names)) == len(names), f"repeated test names: {names}"
    if results.get("output_format") == "md":
        check_markdown(results["output"])
    if results.get("test_output_format") == "md":
        for test in tests:
            check_markdown(test["output"])


def check_markdown(text: str) -> list:
    """The tokens of `text` as CommonMark with GitHub's tables: no raw HTML among them, and every
    table's rows as wide as its header. Returns the tokens."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    every = [*tokens, *(child for token in tokens for child in token.children or [])]
    assert not [token for token in every if token.type in ("html_block", "html_inline")], text
    widths, header = [], None
    for token in tokens:
        if token.type == "tr_open":
            widths.append(0)
        elif token.type in ("th_open", "td_open"):
            widths[-1] += 1
        elif token.type == "thead_close":
            header = widths[-1]
        elif token.type == "table_close":
            assert header and set(widths) == {header}, f"a table with rows of {widths} cells:\n{text}"
            widths, header = [], None
    return tokens
