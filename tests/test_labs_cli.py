"""`kata lab list | run | show` through the CLI: refusals, usage errors, dry-run evidence, summaries.

Runs here are dry runs (no model is loaded) or a cpu_smoke run whose measurement is replaced by
a failing function; the real cpu_smoke runs are in tests/test_lab_grpo_mechanism.py.
"""

import dataclasses
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from cli_support import kata_script, squash
from click.testing import CliRunner
from conftest import flat
from rich.cells import cell_len
from rich.console import Console

from gpu_labs import LABS, grpo_mechanism, models, plots
from gpu_labs.summary import build_summary, model_line
from grader.cli import cli
from grader.report.styles import THEME

ANSI = re.compile(r"\x1b\[")


def lab(*args):
    """`kata lab ARGS` in this process; (status, stdout, stderr)."""
    result = CliRunner().invoke(cli, ["lab", *map(str, args)], standalone_mode=False, catch_exceptions=False)
    return result.return_value, result.stdout, result.stderr


@pytest.fixture(autouse=True)
def scratch_cwd(monkeypatch, tmp_path):
    """Default run folders (runs/LAB/LABEL) land in a scratch directory, never in the repo."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("FORCE_COLOR", raising=False)


def test_lab_list_names_every_lab_with_its_title_and_lesson():
    status, out, _ = lab("list", "--json")
    assert status == 0
    rows = json.loads(out)
    assert [row["name"] for row in rows] == list(LABS)
    mechanism = next(row for row in rows if row["name"] == "grpo_mechanism")
    assert (mechanism["title"], mechanism["lesson"]) == (grpo_mechanism.TITLE, grpo_mechanism.LESSON)
    status, out, _ = lab("list")
    assert status == 0
    assert all(row["name"] in out and row["lesson"] in out for row in rows)
    assert "unavailable" not in out


@pytest.mark.parametrize("args", [["--help"], ["list"], ["run", "--help"], ["show", "--help"]], ids=" ".join)
def test_the_lab_commands_print_lines_of_at_most_80_columns_with_no_padding(tmp_path, args):
    run = kata_script("lab", *args, cwd=tmp_path)  # not a terminal, 80 columns
    assert run.status == 0, run.err
    assert all(cell_len(line) <= 80 and line == line.rstrip() for line in run.out.splitlines()), run.out


def test_every_registered_lab_has_the_interface_and_the_readme_and_noxfile_read_the_registry():
    from gpu_labs.runner import lab_module

    for name in LABS:
        module = lab_module(name)
        assert module.NAME == name
        for attribute in ("TITLE", "LESSON", "Config", "smoke", "workload", "run", "decide"):
            assert hasattr(module, attribute), (name, attribute)
    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text(encoding="utf-8")
    labs_section = readme.split("\n## Labs\n", 1)[1].split("\n## ", 1)[0]
    assert re.findall(r"^\| `(\w+)` \|", labs_section, flags=re.MULTILINE) == list(LABS)
    noxfile = (root / "noxfile.py").read_text(encoding="utf-8")
    assert "gpu_labs.LABS" in noxfile and not any(f'"{name}"' in noxfile for name in LABS)


def test_listing_katas_or_labs_imports_no_torch():
    code = (
        "import sys; from grader.cli import main; main(['list']); main(['lab', 'list']);"
        "heavy = [m for m in ('torch', 'transformers', 'peft') if m in sys.modules]; print('HEAVY', heavy)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "HEAVY []" in done.stdout


def test_an_unknown_lab_is_a_usage_error_with_a_suggestion(kata_main, tmp_path):
    status, out, err = kata_main("lab", "run", "grpo_mechanis")
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "Did you mean 'grpo_mechanism'?" in err
    assert not (tmp_path / "runs").exists()


def test_a_dry_run_records_config_workload_and_the_smollm2_weights_hash(tmp_path):
    status, out, err = lab("run", "grpo_mechanism", "--label", "first")
    assert status == 0, err
    run_dir = tmp_path / "runs" / "grpo_mechanism" / "first"
    evidence = json.loads((run_dir / "evidence.json").read_text(encoding="utf-8"))
    gguf = models.smollm2_gguf_path()
    assert evidence["model"]["weights_sha256"] == hashlib.sha256(gguf.read_bytes()).hexdigest()
    assert evidence["model"]["path"] == str(gguf)
    assert (evidence["lab"], evidence["run_mode"], evidence["label"]) == ("grpo_mechanism", "dry_run", "first")
    assert evidence["decision"] == "not_measured" and evidence["results"] == {} and evidence["failure"] is None
    assert evidence["config"] == json.loads(json.dumps(dataclasses.asdict(grpo_mechanism.Config())))
    assert evidence["workload"]["verifier"]["id"] == "integer-answer-v1"
    assert [s["group_size"] for s in evidence["workload"]["candidate_sets"]] == [2, 4]
    assert evidence["framework"]["torch"] == torch.__version__
    assert evidence["hardware"]["cuda_available"] == torch.cuda.is_available()
    assert "describe_model" in evidence["stages"] and evidence["peak_memory"]["peak_rss_bytes"] > 0
    assert not (run_dir / "curves.png").exists()  # a dry run measures no curve
    assert evidence["model"]["weights_sha256"][:12] in out and "not_measured" in out
    assert "evidence: runs/grpo_mechanism/first" in flat(out)


def test_a_used_label_is_refused_and_the_first_run_is_kept(tmp_path):
    assert lab("run", "grpo_mechanism", "--label", "mine")[0] == 0
    evidence = tmp_path / "runs" / "grpo_mechanism" / "mine" / "evidence.json"
    before = evidence.read_bytes()
    status, out, err = lab("run", "grpo_mechanism", "--label", "mine", "--set", "seed=7")
    assert status == 1 and out == ""
    assert len(err.strip().splitlines()) == 1 and "already exists" in err
    assert evidence.read_bytes() == before


def test_an_out_folder_is_used_and_the_json_flag_prints_the_evidence(tmp_path):
    status, out, _ = lab("run", "grpo_mechanism", "--out", tmp_path / "elsewhere", "--json", "--set", "seed=7")
    assert status == 0
    printed = json.loads(out)
    assert printed == json.loads((tmp_path / "elsewhere" / "evidence.json").read_text(encoding="utf-8"))
    assert printed["config"]["seed"] == 7 and printed["config"]["update_steps"] == 4


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: real_gpu is not refused")
def test_real_gpu_is_refused_without_cuda_before_anything_is_written(kata_main, tmp_path):
    status, out, err = kata_main("lab", "run", "grpo_mechanism", "--run-mode", "real_gpu", "--label", "gpu")
    assert status == 1 and out == ""
    assert len(err.strip().splitlines()) == 1 and "needs CUDA" in err
    assert not (tmp_path / "runs").exists()


def test_real_gpu_without_cuda_says_so_before_it_looks_for_the_model(kata_main, monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(models, "SMOLLM2_FILE", "missing.gguf")
    status, out, err = kata_main("lab", "run", "train_grpo", "--run-mode", "real_gpu")
    assert status == 1 and out == ""
    assert len(err.strip().splitlines()) == 1 and "real_gpu needs CUDA" in err and "gguf" not in err
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("missing", ["peft", "matplotlib"])
def test_a_run_without_the_labs_extra_is_refused_in_one_line_before_any_stage(
    kata_main, monkeypatch, tmp_path, missing
):
    monkeypatch.setitem(sys.modules, missing, None)  # `import peft` now raises ModuleNotFoundError
    status, out, err = kata_main("lab", "run", "grpo_mechanism", "--run-mode", "cpu_smoke", "--label", "x")
    assert status == 1 and out == ""
    assert (
        err.strip()
        == f'kata lab: grpo_mechanism needs {missing}, which cannot be imported here: pip install "post-training-katas[labs]"'
    )
    assert not (tmp_path / "runs").exists()


def test_a_dry_run_needs_no_labs_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "peft", None)
    assert lab("run", "grpo_mechanism", "--model", "tiny", "--label", "dry")[0] == 0


@pytest.fixture
def hub_unreachable(monkeypatch):
    """The hub's address is a closed local port: the probe is refused at once, network or not."""
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    for name in ("HF_HUB_OFFLINE", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)


def test_a_hub_model_neither_cached_nor_reachable_is_refused_at_once(kata_main, hub_unreachable, tmp_path):
    started = time.monotonic()
    model = "post-training-katas/no-such-model"
    status, out, err = kata_main("lab", "run", "grpo_mechanism", "--run-mode", "cpu_smoke", "--model", model)
    assert status == 1 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert f"model '{model}' is not in the local cache and the hub cannot be reached" in err
    assert time.monotonic() - started < 15  # transformers' own retries took ~50 s
    assert not (tmp_path / "runs").exists()


def test_a_cached_hub_model_loads_from_the_cache_alone_when_the_hub_cannot_be_reached(hub_unreachable, monkeypatch):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda repo, name: f"/cache/{repo}/{name}")
    assert models.hub_unreachable_but_cached("org/cached-model") is True
    monkeypatch.setenv("HF_ENDPOINT", "https://huggingface.co")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert models.hub_unreachable_but_cached("org/cached-model") is True
    assert models.hub_unreachable_but_cached("tiny") is False
    with pytest.raises(models.ModelUnavailable, match="no model folder at ./nowhere"):
        models.hub_unreachable_but_cached("./nowhere")


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("lr=1", "unknown config field 'lr'"),
        ("update_steps=four", "update_steps takes int"),
        ("update_steps=0", "update_steps must be > 0"),
        ("candidate_sets=minimal_pair,triples", "candidate_sets takes distinct names"),
        ("ratio_level=word", "ratio_level takes one of token, sequence"),
        ("noequals", "expected field=value"),
    ],
)
def test_a_bad_set_is_a_one_line_usage_error_and_claims_no_folder(kata_main, tmp_path, assignment, message):
    status, out, err = kata_main("lab", "run", "grpo_mechanism", "--run-mode", "cpu_smoke", "--set", assignment)
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "--set" in err and message in err
    assert not (tmp_path / "runs").exists()


def test_a_missing_model_is_refused_before_a_folder_is_claimed(kata_main, monkeypatch, tmp_path):
    monkeypatch.setattr(models, "SMOLLM2_FILE", "missing.gguf")
    status, _, err = kata_main("lab", "run", "grpo_mechanism", "--model", "smollm2", "--label", "x")
    assert status == 1
    assert len(err.strip().splitlines()) == 1 and "missing.gguf is missing" in err
    assert not (tmp_path / "runs").exists()


def test_a_run_that_raises_is_recorded_as_reject_until_fixed_and_exits_1(monkeypatch, tmp_path):
    def broken(config, lab_run):
        with lab_run.stage("load_model"):
            lab_run.curve("minimal_pair/loss", 0.5)
            raise RuntimeError("CUDA out of memory\nsecond line")

    monkeypatch.setattr(grpo_mechanism, "run", broken)
    status, out, err = lab("run", "grpo_mechanism", "--run-mode", "cpu_smoke", "--label", "broken")
    assert status == 1
    run_dir = tmp_path / "runs" / "grpo_mechanism" / "broken"
    evidence = json.loads((run_dir / "evidence.json").read_text(encoding="utf-8"))
    assert evidence["decision"] == "reject_until_fixed"
    assert evidence["failure"]["stage"] == "load_model" and evidence["failure"]["message"] == "CUDA out of memory"
    assert (run_dir / "curves.png").is_file()  # the curve recorded before the failure is drawn
    assert err.count("\n") == 1 and "failed in stage load_model: RuntimeError: CUDA out of memory" in err
    assert "reject_until_fixed" in out and "CUDA out of memory" in out


def test_a_decision_outside_the_vocabulary_is_recorded_as_a_failure(monkeypatch, tmp_path):
    monkeypatch.setattr(grpo_mechanism, "run", lambda config, lab_run: ({"ok": True}, "ship_it"))
    status, _, err = lab("run", "grpo_mechanism", "--run-mode", "cpu_smoke", "--label", "odd")
    assert status == 1 and "'ship_it', which is not one of" in err
    evidence = json.loads((tmp_path / "runs" / "grpo_mechanism" / "odd" / "evidence.json").read_text(encoding="utf-8"))
    assert evidence["decision"] == "reject_until_fixed" and evidence["failure"]["type"] == "ValueError"


def test_show_reprints_a_past_run_from_its_folder_or_its_file(tmp_path):
    lab("run", "grpo_mechanism", "--label", "past")
    run_dir = tmp_path / "runs" / "grpo_mechanism" / "past"
    status, out, _ = lab("show", run_dir)
    assert status == 0
    assert out.startswith("grpo_mechanism · past  dry_run\n") and "not_measured" in out
    status, out_file, _ = lab("show", run_dir / "evidence.json")
    assert status == 0 and out_file == out
    status, printed, _ = lab("show", run_dir, "--json")
    assert json.loads(printed) == json.loads((run_dir / "evidence.json").read_text(encoding="utf-8"))


def test_show_finds_a_run_by_lab_and_label_by_lab_alone_or_by_label_alone():
    for label in ("older", "newer"):
        assert lab("run", "grpo_mechanism", "--model", "tiny", "--label", label)[0] == 0
    older, newer = (Path("runs", "grpo_mechanism", label) for label in ("older", "newer"))  # cwd: tmp_path
    os.utime(older, (1, 1))  # the "newer" run is the lab's newest, whatever the clock's resolution
    by_path = {label: lab("show", folder)[1] for label, folder in (("older", older), ("newer", newer))}
    assert lab("show", "grpo_mechanism", "older") == (0, by_path["older"], "")
    assert lab("show", "grpo_mechanism") == (0, by_path["newer"], "")
    assert lab("show", "older") == (0, by_path["older"], "")
    assert by_path["older"].startswith("grpo_mechanism · older  dry_run\n")


def test_show_names_the_runs_there_are_when_it_finds_none_or_several(kata_main, tmp_path):
    status, _, err = kata_main("lab", "show", "grpo_mechanism", "try1")
    assert (
        status == 1
        and err.strip()
        == "kata lab: no run 'grpo_mechanism try1': runs/ holds no runs yet (kata lab run NAME makes one)"
    )
    for name in ("grpo_mechanism", "grpo_rlvr"):
        assert lab("run", name, "--model", "tiny", "--label", "same")[0] == 0
    status, _, err = kata_main("lab", "show", "try1")
    assert (
        status == 1
        and err.strip() == "kata lab: no run 'try1' in runs/; there are: grpo_mechanism same, grpo_rlvr same"
    )
    status, _, err = kata_main("lab", "show", "same")
    assert (
        status == 1
        and err.strip() == "kata lab: 'same' is a run of grpo_mechanism, grpo_rlvr; say which: kata lab show LAB same"
    )


def test_show_refuses_what_is_not_a_run_in_one_line(kata_main, tmp_path):
    status, _, err = kata_main("lab", "show", tmp_path / "nowhere")
    assert status == 1 and "nowhere does not exist" in err and len(err.strip().splitlines()) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    status, _, err = kata_main("lab", "show", empty)
    assert status == 1 and "no evidence at" in err and len(err.strip().splitlines()) == 1
    (empty / "evidence.json").write_text("{not json", encoding="utf-8")
    status, _, err = kata_main("lab", "show", empty)
    assert status == 1 and "is not valid JSON: line 1" in err
    (empty / "evidence.json").write_text('{"hello": 1}', encoding="utf-8")
    status, _, err = kata_main("lab", "show", empty)
    assert status == 1 and "is not a lab's evidence" in err


# -- the summary, rendered the way `run` and `show` print it ------------------------------------------

RECORD = {
    "lab": "example",
    "title": "An example",
    "run_mode": "cpu_smoke",
    "label": "s1",
    "model": {"spec": "smollm2", "id": "org/model", "weights_sha256": "ab" * 32},
    "framework": {"torch": "2.13.0"},
    "hardware": {},
    "workload": {"id": "w", "version": "v3"},
    "stages": {"load_model": 1.5, "updates": 0.25},
    "peak_memory": {"peak_rss_bytes": 3 * 2**30},
    "decision": "tune",
    "failure": None,
    "results": {
        "held_out_reward": 0.125,
        "adapter": {"sha256": "ff00", "saved": True},
        "sets": [
            {"name": "a", "score": 1.5, "ok": True, "losses": [3.0, 2.0, 1.0]},
            {"name": "b", "score": 2.5, "ok": False},
        ],
        "prompts": [{"id": f"p{i}", "reward": i / 10} for i in range(12)],
        "reward_per_step": [0.0, 0.5, 1.0],
    },
    "curves": {"a/loss": [3.0, 2.0, None, 1.0], "empty": [None]},
}


def render(renderable, terminal: bool, width: int = 120) -> str:
    console = Console(
        file=io.StringIO(),
        width=width,
        theme=THEME,
        force_terminal=terminal,
        color_system="standard" if terminal else "auto",
    )
    console.print(renderable)
    return console.file.getvalue()


def test_the_summary_shows_results_generically_and_curves_as_sparklines():
    text = render(build_summary(RECORD, Path("runs/example/s1")), terminal=False)
    assert not ANSI.search(text)  # plain text when not a terminal
    lines = {line.split()[0]: line.split()[1:] for line in text.splitlines() if line.strip()}
    assert lines["model"][-1] == "abababababab…)"
    assert lines["decision"] == ["tune"] and lines["peak"] == ["rss", "3.00", "GiB"]
    assert lines["held_out_reward"] == ["0.125"] and lines["adapter.sha256"] == ["ff00"]
    assert lines["score"] == ["1.5", "2.5"] and lines["ok"] == ["yes", "no"]  # a column per set
    assert lines["losses"][0] == "█▅▁"
    assert lines["p7"] == ["0.7"] and "p8" not in lines and "… 4 more in evidence.json" in text
    assert lines["a/loss"] == ["█▅", "▁", "3", "1", "1", "3"]  # sparkline (a gap for None), first, last, min, max
    assert "empty" not in lines and lines["reward_per_step"][0] == "▁▅█"
    assert "runs/example/s1" in text


def test_the_summary_fits_80_columns_wrapping_long_text_and_shrinking_long_curves():
    sentence = "diagnostic only, not a configuration choice: " + "a long explanation " * 4
    record = {
        **RECORD,
        "title": "A title long enough to need a line of its own, whatever the width of the terminal",
        "results": {**RECORD["results"], "interpretation": sentence, "adapter_sha256": "cd" * 32},
        "curves": {"a long curve name/with a reward: base→cand": [i % 7 for i in range(200)], "flat": [0.5] * 3},
    }
    text = render(build_summary(record, Path("runs/example/s1")), terminal=False, width=80)

    assert all(cell_len(line) <= 80 and line == line.rstrip() for line in text.splitlines()), text
    assert squash(sentence) in squash(text)  # wrapped, never cut
    assert "cdcdcdcdcdcd…" in text and "cd" * 7 not in text
    assert text.count("…") == 3  # two hashes and "… 4 more in evidence.json": rich cuts nothing
    flat = next(line for line in text.splitlines() if line.startswith("flat "))
    assert flat.split()[1] == "▄▄▄"
    spark = next(word for word in text.split() if set(word) <= set(plots.BARS) and len(word) > 8)
    assert 8 <= len(spark) < 80


def test_the_summary_styles_the_decision_and_names_a_failure_on_a_terminal():
    failed = {
        **RECORD,
        "decision": "reject_until_fixed",
        "failure": {"stage": "rollouts", "type": "OSError", "message": "disk"},
    }
    text = render(build_summary(failed), terminal=True)
    assert ANSI.search(text)
    assert "\x1b[31mreject_until_fixed" in text  # the "failed" style: red
    assert "OSError in stage rollouts: disk" in text


def test_a_local_model_folder_shows_a_short_hash_per_weights_file():
    line = model_line({"spec": "/m", "path": "/m", "weights_sha256": {"model.safetensors": "0123456789abcdef"}})
    assert line == "/m  (sha256 model.safetensors 0123456789ab…)"
