"""`kata check SLUG --against trl` where TRL is not needed: its errors, options and report.

The comparisons with TRL itself are in conformance/ (`nox -s conformance`), which installs it.
"""

import io
import subprocess
import sys
from importlib import metadata

import pytest
from conftest import flat
from rich.console import Console

from grader.content.catalogue import get_kata
from grader.oracles import against
from grader.report.results import CheckResult, GradeResult
from grader.report.styles import THEME
from grader.report.terminal import build_report
from grader.run.grading import pytest_arguments


@pytest.fixture
def trl_missing(monkeypatch):
    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(against.metadata, "version", not_installed)


def test_a_kata_without_a_trl_counterpart_is_a_usage_error_listing_the_supported_ones(kata_main, tmp_path):
    status, out, err = kata_main("check", "group_advantages", "--against", "trl", "--workspace", tmp_path / "ws")

    assert status == 2 and out == ""
    assert flat(err).startswith("kata check: error: --against trl grades only the katas with a TRL counterpart:")
    assert "grpo_loss, dpo_loss, verifier_reward" in flat(err)
    assert "Traceback" not in err and not (tmp_path / "ws").exists()


def test_without_trl_the_error_is_one_line_with_the_pip_command(kata_main, trl_missing, tmp_path):
    status, out, err = kata_main("check", "grpo_loss", "--against", "trl", "--workspace", tmp_path)

    assert status == 1 and out == ""
    assert flat(err) == 'kata: --against trl: TRL is not installed: pip install "trl==1.16.0"'


def test_another_trl_version_is_refused_naming_both(kata_main, monkeypatch, tmp_path):
    monkeypatch.setattr(against.metadata, "version", lambda name: "0.19.1")

    status, _, err = kata_main("check", "dpo_loss", "--against", "trl", "--workspace", tmp_path)

    assert status == 1
    assert "pinned to trl 1.16.0, found 0.19.1" in flat(err) and 'pip install "trl==1.16.0"' in flat(err)


def test_only_trl_is_an_oracle(kata_main, tmp_path):
    status, _, err = kata_main("check", "grpo_loss", "--against", "verl", "--workspace", tmp_path)

    assert status == 2 and "'verl' is not 'trl'" in flat(err)


def test_the_against_errors_need_neither_torch_nor_trl_in_the_kata_process(tmp_path):
    code = (
        "import sys; from grader.cli import main; status = main(['check', 'group_advantages', '--against', 'trl']);"
        " assert status == 2, status; assert 'torch' not in sys.modules and 'trl' not in sys.modules"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_require_says_which_exit_status_each_problem_gets(trl_missing):
    with pytest.raises(against.AgainstError) as unsupported:
        against.require("trl", "kl_estimators")
    with pytest.raises(against.AgainstError) as missing:
        against.require("trl", "grpo_loss")
    assert (unsupported.value.status, missing.value.status) == (2, 1)


def test_the_option_reaches_the_plugin_only_when_given(tmp_path):
    kata = get_kata("grpo_loss")
    plain = pytest_arguments(kata, tmp_path / "f.py", 10.0, tmp_path / "r.json")
    with_trl = pytest_arguments(kata, tmp_path / "f.py", 10.0, tmp_path / "r.json", against="trl")

    assert "--kata-against" not in plain
    assert with_trl[with_trl.index("--kata-against") + 1] == "trl"
    assert [arg for arg in with_trl if arg not in ("--kata-against", "trl")] == plain


def test_the_plugin_refuses_a_kata_without_a_trl_counterpart(pytester):
    result = pytester.runpytest_subprocess(
        "--kata", "kl_estimators", "--kata-target", "reference", "--kata-against", "trl"
    )

    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--against trl grades only the katas with a TRL counterpart: grpo_loss*"])


def test_the_pinned_version_is_the_conformance_extra(tmp_path):
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text(encoding="utf-8"))
    extra = project["project"]["optional-dependencies"]["conformance"]
    assert f"trl=={against.TRL_VERSION}" in extra
    assert all("==" in requirement for requirement in extra)  # every oracle pinned, peft too


def test_the_oracle_module_fails_in_one_line_when_trl_is_missing(monkeypatch):
    from grader.oracles import trl_oracle

    monkeypatch.setattr(trl_oracle, "trl_problem", lambda: "TRL is not installed: pip ...")
    trl_oracle.trl.cache_clear()
    try:
        with pytest.raises(against.TrlUnavailable, match="TRL is not installed"):
            trl_oracle.oracle_module(object(), "grpo_loss")
    finally:
        trl_oracle.trl.cache_clear()


def graded_against_trl() -> GradeResult:
    checks = [
        CheckResult("loss_matches", "Loss matches", 2, "failed", "expected 1, got 2", expected_from="trl"),
        CheckResult("rejects_bad_input", "Rejects bad input", None, "passed"),
    ]
    return GradeResult("grpo_loss", "f.py", checks, against="trl")


def test_the_json_says_what_gave_each_check_its_expected_values():
    data = graded_against_trl().to_json()

    assert data["against"] == "trl"
    assert [check["expected_from"] for check in data["checks"]] == ["trl", "reference"]
    again = GradeResult.from_json(data)
    assert again.against == "trl" and again.checks[0].expected_from == "trl"
    assert GradeResult.from_json({**data, "against": None}).against is None


def test_the_report_counts_the_checks_trl_graded_and_marks_failures_it_graded():
    console = Console(file=io.StringIO(), width=200, theme=THEME, color_system=None)
    console.print(build_report(graded_against_trl(), get_kata("grpo_loss"), "en", "f.py"))
    text = console.file.getvalue()

    assert "against TRL 1.16.0: 1 of 2 checks took their expected values from TRL's code" in text
    assert "Loss matches  (expected values from TRL)" in text


def test_a_plain_report_says_nothing_about_trl():
    result = graded_against_trl()
    result.against = None
    result.checks[0].expected_from = "reference"
    console = Console(file=io.StringIO(), width=200, theme=THEME, color_system=None)
    console.print(build_report(result, get_kata("grpo_loss"), "en", "f.py"))

    assert "TRL" not in console.file.getvalue()


@pytest.mark.parametrize("slug", sorted(against.TRL_FUNCTIONS))
def test_each_trl_backed_function_is_its_katas_with_the_references_signature(slug):
    """Without TRL: the functions --against trl replaces are the kata's own, each has an oracle with
    the reference's signature, and the kata has a smoke test (run once before grading)."""
    import inspect

    from grader.oracles import trl_oracle

    kata = get_kata(slug)
    reference = __import__(f"reference.{slug}", fromlist=["_"])
    assert slug in trl_oracle.SMOKE_TESTS
    for name in against.TRL_FUNCTIONS[slug]:
        assert name in kata.functions
        oracle = trl_oracle.ORACLE_FUNCTIONS[name]
        assert inspect.signature(oracle) == inspect.signature(getattr(reference, name)), name
