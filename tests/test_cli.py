"""The `kata` command as a learner meets it: exit statuses, files on disk, progress, output.

Most commands run in this process through click's `CliRunner` on `grader.cli.cli`; usage errors go
through `grader.cli.main` (which turns them into one line and status 2); a few end-to-end cases
run the installed `kata` console script. Every workspace lives under `tmp_path`.

Each `kata check` spawns a pytest child that imports torch (a few seconds), so the grading runs
are few and shared through module-scoped fixtures.
"""

import io
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from grader.cli import cli
from grader.cli.watch import watch_workspace
from grader.cli.workspace import Workspace
from grader.content.catalogue import DIFFICULTIES, KATAS_DIR, all_katas, get_kata
from grader.report.results import STATUSES, CheckResult, GradeResult
from grader.report.styles import THEME

KATA_SCRIPT = Path(sys.executable).with_name("kata")
COMMANDS = ("list", "start", "check", "hint", "solution", "reset", "show", "quiz", "watch")
ROW_KEYS = {"slug", "order", "title", "difficulty", "status", "prerequisites", "file", "last_check"}
CHECK_KEYS = {"name", "todo", "status", "message", "misconception"}
CJK = re.compile(r"[\u4e00-\u9fff]")
SUMMARY = re.compile(r"^\d+ passed, \d+ failed$", re.MULTILINE)
OLD_DETACHED = "log_probs_old.detach()"


@dataclass
class Run:
    status: int
    out: str
    err: str


def kata(*args) -> Run:
    """`kata ARGS` in this process (click's CliRunner); the status is what the command returned."""
    result = CliRunner().invoke(cli, [str(arg) for arg in args], standalone_mode=False, catch_exceptions=False)
    return Run(result.return_value, result.stdout, result.stderr)


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


def flat(text: str) -> str:
    """The text with every run of whitespace made one space (rich wraps long lines at 80 columns)."""
    return " ".join(text.split())


def squash(text: str) -> str:
    """The text without any whitespace (for Chinese, which rich may wrap between any two characters)."""
    return "".join(text.split())


def _slugs() -> list[str]:
    """Every kata's slug, in learning order (whatever the catalogue holds today)."""
    return [kata_.slug for kata_ in all_katas()]


def _table(text: str) -> dict[str, str]:
    """The rows of a plain `kata list`, by slug (the second cell of each row)."""
    rows = text.split("\n\n")[0].splitlines()[1:]
    return {row.split()[1]: row for row in rows}


def _suggestions(err: str) -> list[str]:
    """The names in the did-you-mean of an unknown-kata error."""
    found = re.search(r"Did you mean (.+?)\?", flat(err))
    assert found, err
    return re.findall(r"'([^']+)'", found.group(1))


def _isolate(patch: pytest.MonkeyPatch, cwd: Path) -> None:
    """English, 200 columns (in this process; the console script runs at 80), no KATA_WORKSPACE, cwd elsewhere."""
    patch.setenv("KATA_LANG", "en")
    patch.setenv("COLUMNS", "200")
    for name in ("KATA_WORKSPACE", "FORCE_COLOR"):
        patch.delenv(name, raising=False)
    patch.chdir(cwd)


def _record_check(workspace, slug, passed, failed, failing_todos):
    """Record a grading with these counts, as `kata check` does after grading the workspace file."""
    todos = failing_todos or [1]
    checks = [CheckResult(f"p{i}", "p", todos[0], "passed") for i in range(passed)]
    checks += [CheckResult(f"f{i}", "f", todos[i % len(todos)], "failed", "wrong") for i in range(failed)]
    return Workspace(workspace).record_check(slug, GradeResult(slug, "file", checks))


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    """A scratch working directory: the default workspace never lands in the repo."""
    _isolate(monkeypatch, tmp_path)


@pytest.fixture
def workspace(tmp_path) -> Path:
    return tmp_path / "ws"


def _listing(workspace: Path, *extra) -> dict:
    run = kata("list", "--workspace", workspace, "--json", *extra)
    assert run.status == 0, run.err
    return json.loads(run.out)


def _rows(workspace: Path, *extra) -> dict:
    return {row["slug"]: row for row in _listing(workspace, *extra)["katas"]}


def _reference() -> str:
    return get_kata("grpo_loss").solution()


def _old_not_detached() -> str:
    text = _reference()
    assert text.count(OLD_DETACHED) == 1
    return text.replace(OLD_DETACHED, "log_probs_old")


# -- shared grading runs (module scope: each costs a pytest child that imports torch) ---------------


@pytest.fixture(scope="module")
def passed_run(tmp_path_factory):
    """The reference solution in the workspace file, graded by `kata check grpo_loss`."""
    root = tmp_path_factory.mktemp("passed")
    workspace = root / "ws"
    workspace.mkdir()
    (workspace / "grpo_loss.py").write_text(_reference(), encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        _isolate(patch, root)
        run = kata("check", "grpo_loss", "--workspace", workspace)
    return workspace, run


@pytest.fixture(scope="module")
def misconception_run(tmp_path_factory):
    """A started workspace, then `kata check --file --json` on a copy whose old log-probs are not detached."""
    root = tmp_path_factory.mktemp("misconception")
    workspace = root / "ws"
    with pytest.MonkeyPatch.context() as patch:
        _isolate(patch, root)
        assert kata("start", "grpo_loss", "--workspace", workspace).status == 0
        before = {path.name: path.read_bytes() for path in workspace.iterdir()}
        target = root / "mine.py"
        target.write_text(_old_not_detached(), encoding="utf-8")
        run = kata("check", "grpo_loss", "--workspace", workspace, "--file", target, "--json")
    return workspace, before, target, run


# -- kata list -------------------------------------------------------------------------------------


def test_list_shows_the_katas_in_learning_order_with_the_first_one_next(workspace):
    katas = all_katas()
    run = kata("list", "--workspace", workspace)

    assert run.status == 0
    lines = run.out.splitlines()
    rows = lines[1 : len(katas) + 1]
    assert lines[0].split() == ["#", "kata", "title", "difficulty", "after", "status"]
    assert [row.split()[:2] for row in rows] == [[str(kata_.order), kata_.slug] for kata_ in katas]
    orders = [kata_.order for kata_ in katas]
    assert orders == sorted(orders)
    for kata_, row in zip(katas, rows):
        after = ", ".join(kata_.prerequisites) or "-"
        assert f"  {kata_.title['en']}  " in row and f"  {kata_.difficulty}  " in row and f"  {after}  " in row
        assert row.endswith("not started")
    assert _slugs().index("group_advantages") < _slugs().index("grpo_loss")
    assert lines[len(katas) + 1 :] == ["", f"Next: kata start {katas[0].slug}"]
    assert not workspace.exists(), "listing must not create the workspace"


def test_list_json_has_one_row_per_kata_with_every_field_and_the_next_command(workspace):
    listing = _listing(workspace)

    assert set(listing) == {"katas", "next"}
    assert [row["slug"] for row in listing["katas"]] == _slugs()
    seen = set()
    for row in listing["katas"]:
        expected = get_kata(row["slug"])
        assert set(row) == ROW_KEYS
        assert row["status"] == "not started"
        assert row["last_check"] is None
        assert row["order"] == expected.order
        assert row["title"] == expected.title["en"]
        assert row["difficulty"] == expected.difficulty and row["difficulty"] in DIFFICULTIES
        assert row["prerequisites"] == list(expected.prerequisites)
        assert set(row["prerequisites"]) <= seen, "a kata comes after every kata it builds on"
        assert row["file"] == str(workspace / f"{row['slug']}.py")
        seen.add(row["slug"])
    orders = [row["order"] for row in listing["katas"]]
    assert orders == sorted(orders)
    assert "group_advantages" in _rows(workspace)["grpo_loss"]["prerequisites"]
    assert listing["next"] == f"kata start {_slugs()[0]}"


def test_list_reports_passed_in_progress_and_points_at_the_kata_in_progress(workspace):
    _record_check(workspace, "group_advantages", 7, 0, [])
    assert kata("start", "grpo_loss", "--workspace", workspace).status == 0

    listing = _listing(workspace)
    text = kata("list", "--workspace", workspace).out

    expected = {"group_advantages": "passed", "grpo_loss": "in progress"}
    assert {row["slug"]: row["status"] for row in listing["katas"]} == {
        slug: expected.get(slug, "not started") for slug in _slugs()
    }
    assert listing["next"] == "kata check grpo_loss"
    assert _table(text)["group_advantages"].endswith("passed")
    assert _table(text)["grpo_loss"].endswith("in progress")
    assert text.splitlines()[-1] == "Next: kata check grpo_loss"


def test_list_sends_a_learner_with_failing_checks_to_the_hint_of_the_first_failing_todo(workspace):
    assert kata("start", "grpo_loss", "--workspace", workspace).status == 0
    _record_check(workspace, "grpo_loss", 20, 6, [3, 4])

    text = kata("list", "--workspace", workspace).out
    row = _rows(workspace)["grpo_loss"]

    assert row["last_check"]["passed"] == 20 and row["last_check"]["failing_todos"] == [3, 4]
    assert _table(text)["grpo_loss"].endswith("in progress (20/26 checks)")
    assert text.splitlines()[-1] == "Next: kata hint grpo_loss --todo 3"


def test_list_says_every_kata_passed_when_there_is_nothing_left(workspace):
    for slug in _slugs():
        _record_check(workspace, slug, 5, 0, [])

    assert {row["status"] for row in _listing(workspace)["katas"]} == {"passed"}
    assert _listing(workspace)["next"] is None
    assert kata("list", "--workspace", workspace).out.splitlines()[-1] == "Every kata passed."


def test_list_shows_chinese_titles_with_lang_zh(workspace):
    rows = _rows(workspace, "--lang", "zh")
    text = kata("list", "--workspace", workspace, "--lang", "zh").out

    for slug in ("group_advantages", "grpo_loss"):
        title = get_kata(slug).title["zh"]
        assert rows[slug]["title"] == title
        assert CJK.search(title) and title != get_kata(slug).title["en"]
        assert title in text


def test_list_shows_chinese_titles_when_kata_lang_is_zh(monkeypatch, workspace):
    monkeypatch.setenv("KATA_LANG", "zh")

    rows = _rows(workspace)

    assert rows["grpo_loss"]["title"] == get_kata("grpo_loss").title["zh"]


def test_list_falls_back_to_the_locale_when_kata_lang_is_not_a_known_language(monkeypatch, kata_main, workspace):
    monkeypatch.setenv("KATA_LANG", "zh_CN")
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_MESSAGES", raising=False)
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")

    run = kata_main("list", "--workspace", workspace, "--json")

    assert run.status == 0, run.err
    rows = {row["slug"]: row for row in json.loads(run.out)["katas"]}
    assert rows["grpo_loss"]["title"] == get_kata("grpo_loss").title["zh"]


def test_list_does_not_count_a_kata_as_started_when_only_a_hint_was_read(workspace):
    assert kata("hint", "group_advantages", "--workspace", workspace).status == 0

    listing = _listing(workspace)

    assert {row["status"] for row in listing["katas"]} == {"not started"}
    assert listing["next"] == f"kata start {_slugs()[0]}"


# -- no torch (and no rich for a piped list) --------------------------------------------------------

LIGHT_COMMANDS = [
    ["list", "--workspace", "ws"],
    ["start", "grpo_loss", "--workspace", "ws"],
    ["hint", "grpo_loss", "--workspace", "ws"],
    ["show", "grpo_loss"],
    ["solution", "grpo_loss", "--force", "--workspace", "ws"],
    ["reset", "grpo_loss", "--workspace", "ws"],
]


@pytest.mark.parametrize("argv", LIGHT_COMMANDS, ids=lambda argv: argv[0])
def test_light_commands_never_import_torch(tmp_path, argv):
    code = f"import sys; from grader.cli import main; status = main({argv!r}); assert 'torch' not in sys.modules; sys.exit(status)"

    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True
    )

    assert done.returncode == 0, done.stderr


def test_list_piped_to_a_file_never_imports_rich(tmp_path):
    code = (
        "import sys; from grader.cli import main; main(['list', '--workspace', 'ws']); assert 'rich' not in sys.modules"
    )

    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True
    )

    assert done.returncode == 0, done.stderr


# -- kata start ------------------------------------------------------------------------------------


def test_start_writes_the_blank_exercise_with_every_todo(workspace):
    run = kata("start", "grpo_loss", "--workspace", workspace)

    path = workspace / "grpo_loss.py"
    text = path.read_text(encoding="utf-8")
    assert run.status == 0
    assert f"wrote {path} ({len(get_kata('grpo_loss').todos)} TODOs)" in flat(run.out)
    assert text == get_kata("grpo_loss").template("en")
    assert "raise NotImplementedError" in text
    for todo in get_kata("grpo_loss").todos:
        assert f"# TODO {todo.number}: {todo.title['en']}" in text
    compile(text, str(path), "exec")
    assert _rows(workspace)["grpo_loss"]["status"] == "in progress"


def test_start_reminds_the_learner_of_a_prerequisite_not_passed_yet(workspace):
    prerequisites = get_kata("grpo_loss").prerequisites
    assert "group_advantages" in prerequisites

    run = kata("start", "grpo_loss", "--workspace", workspace)

    assert f"builds on {', '.join(prerequisites)}, not passed yet" in flat(run.out)


def test_start_refuses_to_overwrite_and_leaves_the_file_unchanged(workspace):
    workspace.mkdir()
    path = workspace / "grpo_loss.py"
    mine = b"# my work in progress\nx = 1\n"
    path.write_bytes(mine)

    run = kata("start", "grpo_loss", "--workspace", workspace)

    assert run.status == 1
    assert "already exists; nothing was changed" in flat(run.err)
    assert path.read_bytes() == mine
    assert not (workspace / ".backups").exists()


def test_start_twice_exits_1_as_the_console_script(tmp_path):
    assert kata_script("start", "grpo_loss", "--workspace", "ws", cwd=tmp_path).status == 0
    first = (tmp_path / "ws" / "grpo_loss.py").read_bytes()

    again = kata_script("start", "grpo_loss", "--workspace", "ws", cwd=tmp_path)

    assert again.status == 1
    assert (tmp_path / "ws" / "grpo_loss.py").read_bytes() == first
    assert "Traceback" not in again.err


def test_start_honours_kata_workspace(monkeypatch, tmp_path):
    target = tmp_path / "from-env"
    monkeypatch.setenv("KATA_WORKSPACE", str(target))

    run = kata("start", "group_advantages")

    assert run.status == 0
    assert (target / "group_advantages.py").is_file()
    assert not (tmp_path / "kata_workspace").exists()


def test_start_without_a_workspace_option_uses_kata_workspace_in_the_current_folder(tmp_path):
    assert kata("start", "group_advantages").status == 0

    assert (tmp_path / "kata_workspace" / "group_advantages.py").is_file()


def test_start_in_chinese_writes_chinese_todo_titles(workspace):
    assert kata("start", "grpo_loss", "--workspace", workspace, "--lang", "zh").status == 0

    text = (workspace / "grpo_loss.py").read_text(encoding="utf-8")
    assert get_kata("grpo_loss").title["zh"] in text.splitlines()[0]
    for todo in get_kata("grpo_loss").todos:
        assert f"# TODO {todo.number}: {todo.title['zh']}" in text
        assert todo.title["en"] not in text
    compile(text, "grpo_loss.py", "exec")


def test_start_in_a_workspace_that_cannot_be_created_gives_a_message_not_a_traceback(tmp_path):
    (tmp_path / "afile").write_text("not a folder\n")

    run = kata_script("start", "grpo_loss", "--workspace", "afile/sub", cwd=tmp_path)

    assert "Traceback" not in run.err
    assert run.status in (1, 2)
    assert run.err.startswith("kata")


# -- usage errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["start", "check", "hint", "solution", "reset", "show"])
def test_an_unknown_kata_is_a_usage_error_with_a_suggestion(kata_main, workspace, command):
    extra = [] if command == "show" else ["--workspace", workspace]

    run = kata_main(command, "grpo_los", *extra)

    assert run.status == 2
    assert run.out == ""
    assert flat(run.err).startswith(f"kata {command}: error: ")
    assert "unknown kata 'grpo_los'. Did you mean '" in flat(run.err)
    assert "grpo_loss" in _suggestions(run.err) and set(_suggestions(run.err)) <= set(_slugs())
    assert "Traceback" not in run.err
    assert not workspace.exists()


def test_an_unknown_kata_is_reported_on_exactly_one_line_by_the_console_script(tmp_path):
    run = kata_script("start", "grpo_los", "--workspace", "ws", cwd=tmp_path)

    assert run.status == 2
    assert len(run.err.splitlines()) == 1
    assert "grpo_loss" in _suggestions(run.err)


def test_an_unknown_kata_exits_2_without_a_traceback_from_the_console_script(tmp_path):
    run = kata_script("check", "grpo_los", cwd=tmp_path)

    assert run.status == 2
    assert run.out == ""
    assert "Traceback" not in run.out + run.err
    assert "grpo_loss" in _suggestions(run.err)


@pytest.mark.parametrize("command", ["start", "check", "hint", "solution", "reset", "show"])
def test_a_missing_kata_argument_exits_2(kata_main, command):
    run = kata_main(command)

    assert run.status == 2
    assert "Missing argument 'KATA'" in flat(run.err)
    assert "Traceback" not in run.err


def test_an_unknown_command_exits_2(kata_main):
    run = kata_main("lis")

    assert run.status == 2
    assert "No such command 'lis'" in flat(run.err)


def test_a_check_timeout_below_the_minimum_exits_2(kata_main, workspace):
    assert kata_main("check", "grpo_loss", "--workspace", workspace, "--timeout", "0").status == 2


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(kata_main, command):
    run = kata_main(command, "--help")

    assert run.status == 0
    assert run.out.startswith(f"Usage: kata {command} ")
    assert run.err == ""


def test_kata_alone_and_kata_help_print_the_commands(kata_main):
    for argv in ([], ["--help"]):
        run = kata_main(*argv)
        assert run.status == 0
        assert run.out.startswith("Usage: kata ")
        assert all(f"  {command} " in run.out for command in COMMANDS)


def test_version_exits_0(kata_main):
    run = kata_main("--version")

    assert run.status == 0
    assert run.out.startswith("kata, version ")


# -- kata check ------------------------------------------------------------------------------------


def test_check_without_a_file_exits_1_and_says_to_start(kata_main, workspace):
    run = kata_main("check", "grpo_loss", "--workspace", workspace)

    assert run.status == 1
    assert f"no file to grade at {workspace / 'grpo_loss.py'}. Run `kata start grpo_loss` first." in flat(run.err)
    assert not workspace.exists()


def test_check_of_a_missing_file_option_exits_1_without_suggesting_start(kata_main, tmp_path):
    run = kata_main("check", "grpo_loss", "--file", tmp_path / "nowhere.py")

    assert run.status == 1
    assert "no file to grade at" in flat(run.err) and "kata start" not in run.err


def test_check_passes_the_reference_and_ends_with_the_summary(passed_run, misconception_run):
    _, run = passed_run
    total = len(json.loads(misconception_run[3].out)["checks"])

    assert run.status == 0, run.out + run.err
    assert run.out.rstrip("\n").splitlines()[-1] == f"{total} passed, 0 failed"
    assert "kata solution grpo_loss" in flat(run.out)


def test_a_passing_check_records_progress(passed_run):
    workspace, _ = passed_run

    row = _rows(workspace)["grpo_loss"]

    assert row["status"] == "passed"
    assert row["last_check"]["failed"] == 0 and row["last_check"]["failing_todos"] == []
    assert row["last_check"]["passed"] > 0


def test_solution_opens_once_the_kata_is_passed(passed_run):
    workspace, _ = passed_run

    run = kata("solution", "grpo_loss", "--workspace", workspace)

    assert run.status == 0
    assert run.out == _reference()
    assert "def compute_grpo_loss" in run.out


def test_solution_is_refused_before_the_kata_is_passed_unless_forced(workspace):
    assert kata("start", "grpo_loss", "--workspace", workspace).status == 0

    refused = kata("solution", "grpo_loss", "--workspace", workspace)
    forced = kata("solution", "grpo_loss", "--workspace", workspace, "--force")

    assert refused.status == 1 and refused.out == ""
    assert "grpo_loss is not passed yet" in flat(refused.err)
    assert forced.status == 0
    assert "def compute_grpo_loss" in forced.out


def test_check_json_is_one_object_with_the_documented_fields(misconception_run):
    _, _, target, run = misconception_run

    data = json.loads(run.out)

    assert run.status == 1
    assert {"kata", "passed", "failed", "score", "checks"} <= set(data)
    assert "matches" not in data
    assert data["kata"] == "grpo_loss"
    assert data["target"] == str(target.resolve())
    assert data["passed"] + data["failed"] == len(data["checks"])
    assert data["failed"] > 0
    assert data["score"] == round(data["passed"] / len(data["checks"]), 4)
    for check in data["checks"]:
        assert CHECK_KEYS <= set(check)
        assert check["status"] in STATUSES
    assert data["passed"] == sum(check["status"] == "passed" for check in data["checks"])


def test_check_json_names_the_misconception_on_every_failing_check(misconception_run):
    data = json.loads(misconception_run[3].out)

    failing = [check for check in data["checks"] if check["status"] != "passed"]

    assert failing
    assert {check["misconception"] for check in failing} == {"old_not_detached"}
    assert {check["todo"] for check in failing} >= {get_kata("grpo_loss").misconception("old_not_detached").todo}
    assert all(check["misconception"] is None for check in data["checks"] if check["status"] == "passed")
    assert data["diagnosis"] == "old_not_detached"


def test_check_with_a_file_option_writes_no_progress(misconception_run):
    workspace, before, _, _ = misconception_run

    assert {path.name: path.read_bytes() for path in workspace.iterdir()} == before


def test_check_of_the_blank_template_fails_and_records_the_failing_todos(workspace):
    assert kata("start", "grpo_loss", "--workspace", workspace).status == 0

    run = kata("check", "grpo_loss", "--workspace", workspace, "--json")

    data = json.loads(run.out)
    row = _rows(workspace)["grpo_loss"]
    total = len(data["checks"])
    assert run.status == 1
    assert data["passed"] == 0 and data["failed"] == total > 0
    assert all(check["status"] in STATUSES for check in data["checks"])
    assert row["status"] == "in progress"
    assert row["last_check"]["passed"] == 0 and row["last_check"]["failed"] == total
    first_todo = get_kata("grpo_loss").todos[0].number
    assert row["last_check"]["failing_todos"][0] == first_todo
    listed = kata("list", "--workspace", workspace).out
    assert _table(listed)["grpo_loss"].endswith(f"in progress (0/{total} checks)")
    assert listed.splitlines()[-1] == f"Next: kata hint grpo_loss --todo {first_todo}"


def test_check_names_the_misconception_in_the_text_report_from_the_console_script(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "grpo_loss.py").write_text(_old_not_detached(), encoding="utf-8")

    run = kata_script("check", "grpo_loss", "--workspace", "ws", cwd=tmp_path)

    assert run.status == 1
    assert "⚑ Likely misconception: old log-probs not detached" in flat(run.out)
    assert re.fullmatch(r"\d+ passed, [1-9]\d* failed", run.out.rstrip("\n").splitlines()[-1])
    todo = get_kata("grpo_loss").misconception("old_not_detached").todo
    assert f"Next: TODO {todo} first. Hint: kata hint grpo_loss --todo {todo}" in flat(run.out)
    assert _rows(workspace)["grpo_loss"]["last_check"]["failing_todos"][0] == todo


def test_check_grades_a_file_named_reference_not_the_builtin_reference(tmp_path):
    (tmp_path / "reference").write_text(get_kata("grpo_loss").template("en"), encoding="utf-8")

    run = kata("check", "grpo_loss", "--file", "reference", "--json")

    data = json.loads(run.out)
    assert data["target"] == str((tmp_path / "reference").resolve())
    assert run.status == 1 and data["passed"] == 0


# -- kata hint -------------------------------------------------------------------------------------


def test_hint_reveals_one_more_hint_each_time_and_stops_at_the_last(workspace):
    todo = get_kata("group_advantages").todos[0]
    hints = todo.hints["en"]
    n = len(hints)
    assert n >= 2
    shown = [kata("hint", "group_advantages", "--workspace", workspace) for _ in range(n + 1)]

    assert all(run.status == 0 for run in shown)
    assert all(run.out.startswith(f"TODO {todo.number}  ") for run in shown)
    texts = [flat(run.out) for run in shown]
    first, second, last, after_last = texts[0], texts[1], texts[n - 1], texts[n]
    assert f"hint 1 of {n}" in first and f"hint 2 of {n}" not in first
    assert flat(hints[0]) in first and flat(hints[1]) not in first
    assert "Run the same command again for the next hint." in first
    assert f"hint 1 of {n}" in second and f"hint 2 of {n}" in second
    assert flat(hints[1]) in second
    assert (f"hint 3 of {n}" not in second) if n > 2 else ("That was the last hint for this TODO." in second)
    assert f"hint {n} of {n}" in last and "That was the last hint for this TODO." in last
    assert all(flat(hint) in last for hint in hints)
    assert after_last == last
    assert f"hint {n + 1}" not in after_last


def test_hint_counts_each_todo_separately(workspace):
    kata("hint", "grpo_loss", "--workspace", workspace, "--todo", "2")
    kata("hint", "grpo_loss", "--workspace", workspace, "--todo", "2")

    run = kata("hint", "grpo_loss", "--workspace", workspace, "--todo", "3")

    n = len(get_kata("grpo_loss").todo(3).hints["en"])
    assert run.out.startswith("TODO 3  ")
    assert f"hint 1 of {n}" in run.out and f"hint 2 of {n}" not in run.out


def test_hint_for_a_todo_that_does_not_exist_exits_2_and_records_nothing(kata_main, workspace):
    numbers = [todo.number for todo in get_kata("grpo_loss").todos]

    run = kata_main("hint", "grpo_loss", "--workspace", workspace, "--todo", max(numbers) + 1)

    assert run.status == 2
    assert "--todo" in run.err and f"grpo_loss has TODOs {', '.join(map(str, numbers))} " in flat(run.err)
    assert not workspace.exists()


def test_hint_defaults_to_the_first_todo_without_a_check(workspace):
    first = get_kata("grpo_loss").todos[0]

    run = kata("hint", "grpo_loss", "--workspace", workspace)

    assert run.out.startswith(f"TODO {first.number}  {first.title['en']}")


def test_hint_defaults_to_the_first_failing_todo_of_the_last_check(workspace):
    _record_check(workspace, "grpo_loss", 20, 6, [3, 4])

    run = kata("hint", "grpo_loss", "--workspace", workspace)

    assert run.status == 0
    assert run.out.startswith(f"TODO 3  {get_kata('grpo_loss').todo(3).title['en']}")
    assert flat(get_kata("grpo_loss").todo(3).hints["en"][0]) in flat(run.out)


def test_hint_speaks_chinese_with_lang_zh(workspace):
    todo = get_kata("group_advantages").todos[0]

    run = kata("hint", "group_advantages", "--workspace", workspace, "--lang", "zh")

    assert run.status == 0
    assert run.out.startswith(f"TODO {todo.number}  {todo.title['zh']}")
    assert f"第 1 条提示，共 {len(todo.hints['zh'])} 条" in run.out
    assert squash(todo.hints["zh"][0]) in squash(run.out)
    assert todo.hints["en"][0][:20] not in run.out


# -- kata reset ------------------------------------------------------------------------------------


def test_reset_keeps_the_old_file_as_a_backup_and_writes_the_template(workspace):
    assert kata("start", "grpo_loss", "--workspace", workspace).status == 0
    path = workspace / "grpo_loss.py"
    mine = "# halfway there\nratio = 1.0  # ünïcödé\n".encode()
    path.write_bytes(mine)

    run = kata("reset", "grpo_loss", "--workspace", workspace)

    backups = list((workspace / ".backups").iterdir())
    assert run.status == 0
    assert len(backups) == 1
    assert backups[0].read_bytes() == mine
    assert backups[0].name.startswith("grpo_loss.") and backups[0].suffix == ".py"
    assert str(backups[0]) in flat(run.out)
    assert path.read_text(encoding="utf-8") == get_kata("grpo_loss").template("en")


def test_two_resets_in_a_row_keep_two_distinct_backups(workspace):
    assert kata("start", "grpo_loss", "--workspace", workspace).status == 0
    path = workspace / "grpo_loss.py"
    path.write_bytes(b"first = 1\n")

    assert kata("reset", "grpo_loss", "--workspace", workspace).status == 0
    assert kata("reset", "grpo_loss", "--workspace", workspace).status == 0

    backups = sorted((workspace / ".backups").iterdir())
    assert len(backups) == 2
    assert sorted(backup.read_bytes() for backup in backups) == sorted(
        [b"first = 1\n", get_kata("grpo_loss").template("en").encode()]
    )


def test_reset_without_a_file_writes_a_blank_one_and_no_backup(workspace):
    run = kata("reset", "group_advantages", "--workspace", workspace)

    assert run.status == 0
    assert (workspace / "group_advantages.py").read_text(encoding="utf-8") == get_kata("group_advantages").template()
    assert not (workspace / ".backups").exists()


def test_reset_forgets_the_last_check(workspace):
    assert kata("start", "grpo_loss", "--workspace", workspace).status == 0
    _record_check(workspace, "grpo_loss", 20, 6, [3])

    assert kata("reset", "grpo_loss", "--workspace", workspace).status == 0

    assert _rows(workspace)["grpo_loss"]["last_check"] is None
    first = get_kata("grpo_loss").todos[0].number
    assert first != 3
    assert kata("hint", "grpo_loss", "--workspace", workspace).out.startswith(f"TODO {first}  ")


# -- kata show -------------------------------------------------------------------------------------


def test_show_prints_the_english_lesson():
    run = kata("show", "grpo_loss")

    assert run.status == 0
    assert run.out == (KATAS_DIR / "grpo_loss" / "lesson.en.md").read_text(encoding="utf-8")


def test_show_prints_the_chinese_lesson_with_lang_zh():
    english = kata("show", "grpo_loss").out

    run = kata("show", "grpo_loss", "--lang", "zh")

    assert run.status == 0
    assert run.out == (KATAS_DIR / "grpo_loss" / "lesson.zh.md").read_text(encoding="utf-8")
    assert run.out != english
    assert len(CJK.findall(run.out)) > 100


# -- a corrupt progress file ---------------------------------------------------------------------


def test_a_corrupt_progress_file_is_set_aside_with_a_warning_and_replaced(workspace):
    workspace.mkdir()
    garbage = b"{not json at all\x00\n"
    (workspace / ".progress.json").write_bytes(garbage)

    listed = kata("list", "--workspace", workspace)

    asides = list(workspace.glob(".progress.json.corrupt-*"))
    assert listed.status == 0
    assert flat(listed.err).startswith("warning: progress file was unreadable")
    assert asides and asides[0].name in flat(listed.err)
    assert len(asides) == 1 and asides[0].read_bytes() == garbage
    assert not (workspace / ".progress.json").exists()
    assert [row["status"] for row in _listing(workspace)["katas"]] == ["not started"] * len(all_katas())

    assert kata("start", "grpo_loss", "--workspace", workspace).status == 0
    progress = json.loads((workspace / ".progress.json").read_text(encoding="utf-8"))
    assert progress["version"] == 1 and "started_at" in progress["katas"]["grpo_loss"]


def test_a_progress_file_of_the_wrong_shape_is_set_aside_too(workspace):
    workspace.mkdir()
    (workspace / ".progress.json").write_text('["a", "list"]', encoding="utf-8")

    listed = kata("list", "--workspace", workspace)

    assert listed.status == 0
    assert "progress file was unreadable" in flat(listed.err)
    assert len(list(workspace.glob(".progress.json.corrupt-*"))) == 1


def test_a_progress_record_of_the_wrong_shape_is_set_aside_not_a_crash(workspace):
    workspace.mkdir()
    (workspace / ".progress.json").write_text('{"version": 1, "katas": {"grpo_loss": []}}', encoding="utf-8")

    listed = kata("list", "--workspace", workspace)

    assert listed.status == 0
    assert "progress file was unreadable" in flat(listed.err)


def test_a_refused_solution_still_warns_that_the_progress_file_was_set_aside(workspace):
    workspace.mkdir()
    (workspace / ".progress.json").write_bytes(b"garbage")

    run = kata("solution", "grpo_loss", "--workspace", workspace)

    assert run.status == 1
    assert list(workspace.glob(".progress.json.corrupt-*"))
    assert "progress file was unreadable" in flat(run.err)


def test_two_corrupt_progress_files_in_the_same_second_are_both_kept(monkeypatch, workspace):
    monkeypatch.setattr(time, "time", lambda: 1_700_000_000.25)
    workspace.mkdir()
    for garbage in (b"first garbage", b"second garbage"):
        (workspace / ".progress.json").write_bytes(garbage)
        assert kata("list", "--workspace", workspace).status == 0

    kept = sorted(path.read_bytes() for path in workspace.glob(".progress.json.corrupt-*"))

    assert kept == [b"first garbage", b"second garbage"]


# -- kata watch ------------------------------------------------------------------------------------


def _watch(workspace: Path, slug: str | None, changes: list) -> tuple[int, str]:
    output = io.StringIO()
    kata_ = get_kata(slug) if slug else None
    status = watch_workspace(
        Workspace(workspace),
        kata_,
        10.0,
        poll=False,
        lang="en",
        console=Console(file=output, width=200, theme=THEME),
        changes=changes,
    )
    return status, output.getvalue()


@pytest.fixture
def fake_grade(monkeypatch):
    """Replace the grading run in `kata watch` by a record of what it was asked to grade."""
    calls = []

    def grade(kata, target, timeout):
        calls.append((kata.slug, str(target)))
        return GradeResult(kata.slug, str(target), [CheckResult("stub", "stub", 1, "passed")])

    monkeypatch.setattr("grader.cli.watch.run_checks", grade)
    return calls


def test_watch_grades_once_per_batch_that_saves_a_kata_file_and_ignores_other_files(workspace):
    workspace.mkdir()
    (workspace / "grpo_loss.py").write_text(_reference(), encoding="utf-8")
    (workspace / "notes.txt").write_text("notes\n")
    saved = str(workspace / "grpo_loss.py")
    changes = [
        {(2, str(workspace / "notes.txt"))},
        {(1, saved), (2, saved)},
        {(2, str(workspace / "group_advantages.py"))},
        {(2, str(workspace / "grpo_loss.txt"))},
    ]

    status, output = _watch(workspace, None, changes)

    assert status == 0
    assert output.startswith(f"watching every kata in {workspace}")
    assert len(SUMMARY.findall(output)) == 1
    assert re.search(r"^(\d+) passed, 0 failed$", output, re.MULTILINE)
    assert _rows(workspace)["grpo_loss"]["status"] == "passed"


def test_watch_of_one_kata_checks_it_on_start_and_ignores_the_other_katas(workspace, fake_grade):
    workspace.mkdir()
    for slug in ("group_advantages", "grpo_loss"):
        (workspace / f"{slug}.py").write_text("x = 1\n")

    status, output = _watch(workspace, "grpo_loss", [{(2, str(workspace / "group_advantages.py"))}])

    assert status == 0
    assert fake_grade == [("grpo_loss", str(workspace / "grpo_loss.py"))]
    assert output.startswith("watching grpo_loss")


def test_watch_does_not_check_a_deleted_kata_file(workspace, fake_grade):
    workspace.mkdir()

    _watch(workspace, None, [{(3, str(workspace / "grpo_loss.py"))}])

    assert fake_grade == []


def test_watch_ignores_a_file_of_the_same_name_in_a_subfolder(workspace, fake_grade):
    (workspace / "attic").mkdir(parents=True)
    (workspace / "grpo_loss.py").write_text("x = 1\n")
    (workspace / "attic" / "grpo_loss.py").write_text("old = 1\n")

    _watch(workspace, None, [{(2, str(workspace / "attic" / "grpo_loss.py"))}])

    assert fake_grade == []


def test_watch_without_a_workspace_exits_1(kata_main, workspace):
    run = kata_main("watch", "--workspace", workspace)

    assert run.status == 1
    assert "no workspace at" in flat(run.err)
