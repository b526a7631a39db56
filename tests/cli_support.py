"""Helpers of the `kata` command's tests (tests/test_cli_*.py): the console script, text, listings, progress.

The command itself runs in this process through the `kata_main` fixture (conftest); a few
end-to-end cases run the installed `kata` console script (`kata_script`).
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import Run, flat  # noqa: F401  (flat: for the test files)

from grader.cli.workspace import Workspace
from grader.content.catalogue import all_katas, get_kata
from grader.report.results import CheckResult, GradeResult

KATA_SCRIPT = Path(sys.executable).with_name("kata")
COMMANDS = ("list", "start", "check", "hint", "solution", "reset", "show", "quiz", "watch", "notebook")
CJK = re.compile(r"[\u4e00-\u9fff]")
OLD_DETACHED = "log_probs_old.detach()"


def kata_script(*args, cwd: Path, **env) -> Run:
    """`kata ARGS` through the installed console script, without a terminal and at 80 columns."""
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "KATA_WORKSPACE", "FORCE_COLOR")}
    environ.update({"KATA_LANG": "en"}, **env)
    done = subprocess.run(
        [str(KATA_SCRIPT), *map(str, args)],
        cwd=cwd,
        env=environ,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def squash(text: str) -> str:
    """The text without any whitespace (for Chinese, which rich may wrap between any two characters)."""
    return "".join(text.split())


def all_slugs() -> list[str]:
    """Every kata's slug, in learning order (whatever the catalogue holds today)."""
    return [kata_.slug for kata_ in all_katas()]


def list_table(text: str) -> dict[str, str]:
    """The first line of each kata's block in a plain `kata list` ("N  slug  difficulty  status"), by slug."""
    rows = [line for line in text.split("\n\n")[0].splitlines() if not line.startswith(" ")]
    return {row.split()[1]: row for row in rows}


def list_blocks(text: str) -> dict[str, list[str]]:
    """Each kata's block of a plain `kata list` (its first line, then its indented lines), by slug.

    A block starts with the kata's number, right-aligned to the widest one (" 2  token_logprobs"
    above "11  delivery_decisions"); the first line is returned without that alignment.
    """
    blocks: dict[str, list[str]] = {}
    for line in text.split("\n\n")[0].splitlines():
        if re.match(r" *\d+  \S", line):
            line = line.lstrip()
            slug = line.split()[1]
        blocks.setdefault(slug, []).append(line)
    return blocks


def suggestions(err: str) -> list[str]:
    """The names in the did-you-mean of an unknown-kata error."""
    found = re.search(r"Did you mean (.+?)\?", flat(err))
    assert found, err
    return re.findall(r"'([^']+)'", found.group(1))


def record_check(workspace, slug, passed, failed, failing_todos):
    """Record a grading with these counts, as `kata check` does after grading the workspace file."""
    todos = failing_todos or [1]
    checks = [CheckResult(f"p{i}", "p", todos[0], "passed") for i in range(passed)]
    checks += [CheckResult(f"f{i}", "f", todos[i % len(todos)], "failed", "wrong") for i in range(failed)]
    return Workspace(workspace).record_check(slug, GradeResult(slug, "file", checks))


def list_json(kata_main, workspace: Path, *extra) -> dict:
    """`kata list --json` of `workspace`, which must succeed."""
    run = kata_main("list", "--workspace", workspace, "--json", *extra)
    assert run.status == 0, run.err
    return json.loads(run.out)


def list_rows(kata_main, workspace: Path, *extra) -> dict:
    """The rows of `kata list --json`, by slug."""
    return {row["slug"]: row for row in list_json(kata_main, workspace, *extra)["katas"]}


def grpo_reference() -> str:
    return get_kata("grpo_loss").solution()


def old_not_detached() -> str:
    """The grpo_loss reference with its old log-probs not detached (the `old_not_detached` misconception)."""
    text = grpo_reference()
    assert text.count(OLD_DETACHED) == 1
    return text.replace(OLD_DETACHED, "log_probs_old")
