"""The `kata` command's usage errors, help and version, and the commands that must stay light (no torch, no rich)."""

import subprocess
import sys

import pytest
from cli_support import COMMANDS, all_slugs, flat, kata_script, suggestions

pytestmark = pytest.mark.usefixtures("isolated")


# -- usage errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["start", "check", "hint", "solution", "reset", "show"])
def test_an_unknown_kata_is_a_usage_error_with_a_suggestion(kata_main, workspace, command):
    extra = [] if command == "show" else ["--workspace", workspace]

    run = kata_main(command, "grpo_los", *extra)

    assert run.status == 2
    assert run.out == ""
    assert flat(run.err).startswith(f"kata {command}: error: ")
    assert "unknown kata 'grpo_los'. Did you mean '" in flat(run.err)
    assert "grpo_loss" in suggestions(run.err) and set(suggestions(run.err)) <= set(all_slugs())
    assert "Traceback" not in run.err
    assert not workspace.exists()


def test_an_unknown_kata_is_reported_on_exactly_one_line_by_the_console_script(tmp_path):
    run = kata_script("start", "grpo_los", "--workspace", "ws", cwd=tmp_path)

    assert run.status == 2
    assert len(run.err.splitlines()) == 1
    assert "grpo_loss" in suggestions(run.err)


def test_an_unknown_kata_exits_2_without_a_traceback_from_the_console_script(tmp_path):
    run = kata_script("check", "grpo_los", cwd=tmp_path)

    assert run.status == 2
    assert run.out == ""
    assert "Traceback" not in run.out + run.err
    assert "grpo_loss" in suggestions(run.err)


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


# -- no torch (and no rich for a piped list) --------------------------------------------------------

LIGHT_COMMANDS = [
    ["list", "--workspace", "ws"],
    ["start", "grpo_loss", "--workspace", "ws"],
    ["hint", "grpo_loss", "--workspace", "ws"],
    ["show", "grpo_loss"],
    ["solution", "grpo_loss", "--force", "--workspace", "ws"],
    ["reset", "grpo_loss", "--workspace", "ws"],
    ["notebook", "grpo_loss", "--out", "grpo_loss.ipynb"],
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
