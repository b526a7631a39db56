"""The `train_grpo` lab as a user meets it: the lab runner, the script's command line, torchrun.

Two cpu_smoke runs on the tiny model are shared by module-scoped fixtures: the smoke config as
shipped (the random tiny model never earns a reward, so there is no learning signal), and one
with a stand-in reward that varies inside each group (answer length parity), so the update path
is exercised with real advantages.
"""

import hashlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import one_torch_thread
from rich.console import Console

from gpu_labs import train_grpo as lab
from gpu_labs.config import as_dict
from gpu_labs.data import ARITHMETIC, WORD_PROBLEMS_TRAIN, load_problems
from gpu_labs.runner import run_lab
from gpu_labs.sequences import SampledGroup
from gpu_labs.train_grpo import trainer
from gpu_labs.train_grpo.script import main
from reference.grpo_loss import compute_grpo_loss

CONFIGS = Path(lab.__file__).parent / "configs"
SMOKE_JSON = CONFIGS / "smoke.json"
LOG_LINE_PREFIX = "iter "


def run_smoke(out: Path, overrides: dict | None = None) -> tuple[dict, Path, str]:
    """One cpu_smoke run; one intra-op thread: the tiny model gains nothing from more, and on a busy
    2-core machine the threads of several processes wait on each other (10x slower)."""
    console = Console(file=io.StringIO(), width=300)
    with one_torch_thread():
        evidence, out_dir = run_lab(lab.NAME, "cpu_smoke", out=out, overrides=overrides, console=console)
    return evidence, out_dir, console.file.getvalue()


def length_parity_reward(text: str, gold: float) -> float:
    return float(len(text) % 2)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """The shipped smoke config through the lab runner, the shipped verifier."""
    return run_smoke(tmp_path_factory.mktemp("train_grpo") / "smoke")


@pytest.fixture(scope="module")
def signal(tmp_path_factory):
    """3 iterations, logged every 2, evaluated every 3, saved every 2; a reward that varies in each group."""
    overrides = {"iterations": "3", "log_every": "2", "eval_every": "3", "save_every": "2"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(trainer, "reward_gsm8k", length_parity_reward)
        return run_smoke(tmp_path_factory.mktemp("train_grpo") / "signal", overrides)


@pytest.fixture(scope="module")
def full_finetune(tmp_path_factory):
    """One iteration of a full fine-tune against a frozen copy, no held-out evaluation."""
    overrides = {"finetune": "full", "iterations": "1", "heldout_size": "0"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(trainer, "reward_gsm8k", length_parity_reward)
        return run_smoke(tmp_path_factory.mktemp("train_grpo") / "full", overrides)


def metrics_lines(out_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (out_dir / lab.METRICS_FILE).read_text(encoding="utf-8").splitlines()]


def test_the_log_lines_fit_80_columns_under_a_header_whose_names_end_where_their_values_end():
    config = lab.Config()  # 200 iterations
    record = {"iteration": 200, "phase": "curriculum", "reward_mean": 1.2, "informative_fraction": 0.5, "kl": 0.0312}
    record |= {"clip_fraction": 0.018, "loss": -0.0124, "heldout_accuracy": 0.125, "seconds": 12.5}
    header, line = trainer.log_header(config), trainer.log_line(record, config)

    assert len(header) == len(line) <= 80 and line.startswith("iter 200/200 curriculum")
    ends = {match.end() for match in re.finditer(r"\S+", line)}
    assert header.split() == ["reward", "inform", "KL", "clip", "loss", "eval", "time"]
    assert all(match.end() in ends for match in re.finditer(r"\S+", header))
    unevaluated = trainer.log_line(record | {"heldout_accuracy": None}, config)
    assert len(unevaluated) == len(line) and "0.125" not in unevaluated


# ---- the smoke run as shipped ----------------------------------------------------------------


@pytest.mark.slow  # runs the lab's model
def test_smoke_run_records_the_smoke_workload_and_a_decision_that_follows_from_its_checks(smoke):
    evidence, out_dir, _ = smoke
    assert evidence["failure"] is None
    assert evidence["config"] == as_dict(lab.smoke(lab.Config()))
    config = evidence["config"]
    assert (config["group_size"], config["iterations"], config["rollout_len"]) == (4, 2, 32)
    assert evidence["workload"]["rollouts_per_iteration"] == config["prompts_per_iter"] * config["group_size"]
    assert evidence["model"]["spec"] == "tiny" and evidence["model"]["finetune"] == "lora"
    results = evidence["results"]
    assert results["iterations"] == 2 and results["world_size"] == 1
    assert results["iterations_by_phase"] == {"curriculum": 1, "main": 1}
    assert results["rollouts"] == 2 * config["prompts_per_iter"] * config["group_size"]
    assert evidence["decision"] == lab.decide(results["checks"]) and evidence["decision"] in lab.DECISIONS
    assert (out_dir / "evidence.json").is_file() and (out_dir / "curves.png").is_file()
    assert {"rollouts", "old_and_reference_log_probs", "updates", "evaluate", "checkpoints"} <= set(evidence["stages"])


@pytest.mark.slow  # runs the lab's model
def test_smoke_metrics_file_console_and_curves_agree(smoke):
    evidence, out_dir, output = smoke
    lines = metrics_lines(out_dir)
    assert [line["iteration"] for line in lines] == [0, 1, 2]  # baseline, then every iteration (log_every 1)
    assert lines[0]["heldout_accuracy"] == evidence["results"]["heldout"]["baseline_accuracy"]
    logged = [line for line in output.splitlines() if line.startswith(LOG_LINE_PREFIX)]
    assert len(logged) == 2 and logged[0].startswith("iter 1/2 curriculum")
    headers = [line for line in output.splitlines() if line.split()[:2] == ["reward", "inform"]]
    assert len(headers) == 1 and output.index(headers[0]) < output.index(logged[0])
    curves = evidence["curves"]
    assert set(curves) == {"reward", "informative_fraction", "kl", "clip_fraction", "loss", "heldout_accuracy"}
    assert curves["reward"] == [line["reward_mean"] for line in lines[1:]]
    assert curves["kl"] == [line["kl"] for line in lines[1:]]
    assert evidence["results"]["final"]["reward_mean"] == lines[-1]["reward_mean"]


@pytest.mark.slow  # runs the lab's model
def test_the_curriculum_iterations_take_arithmetic_prompts_and_the_rest_word_problems(smoke):
    _, out_dir, _ = smoke
    arithmetic = {problem.id for problem in load_problems(ARITHMETIC)}
    word_problems = {problem.id for problem in load_problems(WORD_PROBLEMS_TRAIN)}
    first, second = metrics_lines(out_dir)[1:]
    assert first["phase"] == "curriculum" and set(first["prompt_ids"]) <= arithmetic
    assert second["phase"] == "main" and set(second["prompt_ids"]) <= word_problems
    assert len(first["prompt_ids"]) == len(second["prompt_ids"]) == 2


@pytest.mark.slow  # runs the lab's model
def test_each_batch_is_group_contiguous_with_one_group_per_prompt(smoke):
    _, out_dir, _ = smoke
    for line in metrics_lines(out_dir)[1:]:
        assert line["group_sizes"] == [4] * len(line["prompt_ids"])
        assert line["rollouts"] == sum(line["group_sizes"])


@pytest.mark.slow  # runs the lab's model
def test_checkpoints_hold_weights_config_and_metrics_with_the_recorded_hash(smoke):
    evidence, out_dir, _ = smoke
    checkpoints = evidence["results"]["checkpoints"]
    assert [checkpoint["iteration"] for checkpoint in checkpoints] == [1, 2]  # save_every 1
    for checkpoint in checkpoints:
        folder = out_dir / checkpoint["path"]
        weights = folder / checkpoint["weights_file"]
        assert weights.name == "adapter_model.safetensors" and (folder / "adapter_config.json").is_file()
        assert hashlib.sha256(weights.read_bytes()).hexdigest() == checkpoint["weights_sha256"]
        assert json.loads((folder / lab.CONFIG_FILE).read_text()) == json.loads(json.dumps(evidence["config"]))
        saved = (folder / lab.METRICS_FILE).read_text().splitlines()
        assert [json.loads(line)["iteration"] for line in saved] == list(range(checkpoint["iteration"] + 1))


@pytest.mark.slow  # runs the lab's model
def test_without_any_reward_spread_nothing_is_learned_and_the_decision_is_tune(smoke):
    evidence, _, _ = smoke
    results = evidence["results"]
    if results["checks"]["learning_signal"]:
        pytest.skip("the tiny model earned a reward by chance; this case needs a run without one")
    assert results["max_kl"] == 0.0 and results["checks"]["policy_moved"] is False
    first, second = results["checkpoints"]
    assert first["weights_sha256"] == second["weights_sha256"]  # zero advantages, zero KL gradient: no step
    assert evidence["decision"] == lab.TUNE


@pytest.mark.slow  # runs the lab's model
def test_a_reused_out_folder_is_refused_by_the_script(smoke, capsys):
    _, out_dir, _ = smoke
    before = (out_dir / "evidence.json").read_bytes()
    assert main(["--run-mode", "cpu_smoke", "--out", str(out_dir)]) == 1
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "already exists" in error
    assert (out_dir / "evidence.json").read_bytes() == before


# ---- a run with a learning signal --------------------------------------------------------------


@pytest.mark.slow  # runs the lab's model
def test_with_reward_spread_the_policy_moves_away_from_the_reference(signal):
    evidence, _, _ = signal
    results = evidence["results"]
    assert evidence["failure"] is None
    assert results["checks"]["learning_signal"] and results["checks"]["policy_moved"]
    assert 0 < results["max_kl"] <= lab.Config().max_kl
    second, third = results["checkpoints"]
    assert second["weights_sha256"] != third["weights_sha256"]
    assert evidence["decision"] == lab.decide(results["checks"])


@pytest.mark.slow  # runs the lab's model
def test_logging_evaluation_and_checkpoints_follow_their_schedules(signal):
    evidence, out_dir, output = signal
    lines = metrics_lines(out_dir)
    assert [line["iteration"] for line in lines] == [0, 2, 3]  # baseline, log_every 2, the last
    assert [line.get("heldout_accuracy") is not None for line in lines] == [True, False, True]  # eval_every 3
    assert evidence["results"]["heldout"]["evaluated_at"] == [3]
    assert [checkpoint["iteration"] for checkpoint in evidence["results"]["checkpoints"]] == [2, 3]
    assert len(evidence["curves"]["reward"]) == 2 and evidence["curves"]["heldout_accuracy"][0] is None
    assert sum(line.startswith(LOG_LINE_PREFIX) for line in output.splitlines()) == 2
    assert lines[1]["phase"] == "main" and lines[1]["informative_fraction"] > 0


@pytest.mark.slow  # runs the lab's model
def test_a_full_fine_tune_saves_the_model_and_measures_kl_against_a_frozen_copy(full_finetune):
    evidence, out_dir, _ = full_finetune
    assert evidence["failure"] is None and evidence["model"]["reference"] == "a frozen copy of the initial model"
    (checkpoint,) = evidence["results"]["checkpoints"]
    folder = out_dir / checkpoint["path"]
    assert checkpoint["weights_file"] == "model.safetensors" and (folder / "tokenizer.json").is_file()
    assert evidence["results"]["max_kl"] > 0  # the second of the two updates sees a policy that moved
    assert (
        evidence["results"]["heldout"]["evaluated_at"] == []
        and evidence["results"]["checks"]["heldout_not_worse"] is None
    )
    assert [line["iteration"] for line in metrics_lines(out_dir)] == [1]  # no baseline when evaluation is off


# ---- the pieces --------------------------------------------------------------------------------


def test_rollout_batch_keeps_groups_contiguous_and_gives_back_the_end_token_only_to_finished_answers():
    eos, pad = 9, 0
    groups = [
        SampledGroup("p0", ["a", "b"], [[5, 6], []], [False, False]),
        SampledGroup("p1", ["c", "d"], [[7, 7, 7], [8]], [True, False]),
    ]
    batch = lab.rollout_batch([[1, 2], [3]], groups, eos, pad)
    assert batch["group_ids"].tolist() == [0, 0, 1, 1]
    assert batch["input_ids"].tolist() == [[1, 2, 5, 6, 9], [1, 2, 9, 0, 0], [3, 7, 7, 7, 0], [3, 8, 9, 0, 0]]
    assert batch["response_mask"].tolist() == [[0, 0, 1, 1, 1], [0, 0, 1, 0, 0], [0, 1, 1, 1, 0], [0, 1, 1, 0, 0]]
    assert batch["attention_mask"].sum(dim=1).tolist() == [5, 3, 4, 3]
    assert lab.group_runs(batch["group_ids"].tolist()) == [2, 2]
    assert lab.group_runs([0, 0, 1, 0]) == [2, 1, 1]  # interleaved: more runs than groups


def test_micro_batches_of_whole_groups_add_up_to_the_full_batch_loss():
    torch.manual_seed(0)
    group_size, rows, width = 4, 12, 7
    new, old, ref = (torch.randn(rows, width) * 0.1 for _ in range(3))
    rewards = torch.randint(0, 2, (rows,)).float()
    group_ids = torch.arange(rows) // group_size
    mask = torch.rand(rows, width) > 0.3
    mask[:, 0] = True
    full, _ = compute_grpo_loss(new, old, rewards, group_ids, mask, 0.2, 1e-4, ref, 0.04)
    batch = {
        "input_ids": torch.ones(rows, width + 1, dtype=torch.long),
        "attention_mask": torch.ones(rows, width + 1),
        "rewards": rewards,
        "group_ids": group_ids,
        "index": torch.arange(rows),
    }
    parts = lab.micro_batches(batch, group_size, groups_per_batch=2)
    assert [part["group_ids"].tolist() for part in parts] == [[0] * 4 + [1] * 4, [2] * 4]
    total = 0.0
    for part in parts:
        index = part["index"]
        loss, _ = compute_grpo_loss(
            new[index], old[index], rewards[index], group_ids[index], mask[index], 0.2, 1e-4, ref[index], 0.04
        )
        total += loss * len(index) / rows
    assert torch.allclose(total, full)


def test_prompt_stream_covers_every_problem_once_per_pass():
    stream = lab.PromptStream(list(range(10)), size=4, seed=3)
    first_pass = stream.next() + stream.next() + stream.next()[:2]
    assert sorted(first_pass) == list(range(10))
    again = lab.PromptStream(list(range(10)), size=4, seed=3)
    assert again.next() == first_pass[:4]  # the same order on every rank


CHECK_NAMES = ("finite", "kl_bounded", "learning_signal", "policy_moved", "heldout_not_worse")


@pytest.mark.parametrize(
    ("values", "decision"),
    [
        ((True, True, True, True, True), "continue"),
        ((True, True, True, True, None), "continue"),  # held-out not evaluated
        ((True, True, True, True, False), "tune"),
        ((True, True, False, True, True), "tune"),
        ((True, True, True, False, True), "tune"),
        ((True, False, True, True, True), "reject_until_fixed"),
        ((False, True, False, False, False), "reject_until_fixed"),
    ],
)
def test_decision_rule(values, decision):
    assert lab.decide(dict(zip(CHECK_NAMES, values))) == decision


# ---- the script's command line -----------------------------------------------------------------


def test_shipped_config_files_are_the_defaults_and_the_smoke_config():
    assert json.loads((CONFIGS / "grpo.json").read_text()) == json.loads(json.dumps(as_dict(lab.Config())))
    assert json.loads(SMOKE_JSON.read_text()) == json.loads(json.dumps(as_dict(lab.smoke(lab.Config()))))


def test_help_fits_80_columns_and_names_every_config_field(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(len(line) <= 80 and line == line.rstrip() for line in out.splitlines()), out
    assert set(re.findall(r"--(\w+)", out.split("Config fields:")[1])) == set(as_dict(lab.Config()))


def test_print_config_applies_the_file_then_the_overrides(capsys):
    argv = [
        "--config",
        str(SMOKE_JSON),
        "--learning_rate",
        "1e-5",
        "--group_size",
        "8",
        "--lora-targets=q_proj,k_proj",
        "--print-config",
    ]
    assert main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = as_dict(lab.smoke(lab.Config())) | {
        "learning_rate": 1e-5,
        "group_size": 8,
        "lora_targets": ["q_proj", "k_proj"],
    }
    assert printed == json.loads(json.dumps(expected))


def test_print_config_without_a_file_in_real_gpu_mode_is_the_default_workload(capsys):
    assert main(["--run-mode", "real_gpu", "--print-config"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(as_dict(lab.Config())))


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--group_sise", "8"], "unknown option --group_sise"),
        (["--group_size", "eight"], "group_size takes int"),
        (["--group_size", "1"], "group_size must be at least 2"),
        (["--finetune", "qlora"], "finetune must be one of"),
        (["--learning_rate"], "--learning_rate needs a value"),
        (["--run-mode", "tpu"], "--run-mode must be one of"),
        (["stray"], "unexpected argument 'stray'"),
        (["--prompts_per_iter", "0"], "prompts_per_iter must be a positive number"),
    ],
)
def test_a_bad_override_is_one_line_and_exit_2(argv, words, capsys):
    assert main([*argv, "--print-config"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1 and words in captured.err


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (None, "cannot read config"),
        ("{not json", "is not valid JSON"),
        ("[1, 2]", "must hold a JSON object"),
        ('{"group_size": 4, "warmup": 3}', "unknown config field 'warmup'"),
        ('{"iterations": "many"}', "iterations takes int"),
        ('{"kl_coef": true}', "kl_coef takes float"),
    ],
)
def test_config_file_errors_are_one_line_and_exit_2(tmp_path, content, words, capsys):
    path = tmp_path / "grpo.json"
    if content is not None:
        path.write_text(content)
    assert main(["--config", str(path), "--print-config"]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and words in error


def test_the_module_runs_as_a_script():
    done = subprocess.run(
        [sys.executable, "-m", "gpu_labs.train_grpo", "--run-mode", "cpu_smoke", "--kl_coef", "0.1", "--print-config"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["kl_coef"] == 0.1


def test_python_m_runs_the_package_main_and_loads_no_module_twice(tmp_path):
    """`python -m gpu_labs.train_grpo` imports the lab once and runs __main__.py (no module also run as __main__)."""
    (tmp_path / "sitecustomize.py").write_text(
        "import atexit, sys\n"
        "def report():\n"
        "    files = [getattr(module, '__file__', None) for module in list(sys.modules.values())]\n"
        "    files = [file for file in files if file and 'gpu_labs' in file]\n"
        "    print('LOADED TWICE', sorted({file for file in files if files.count(file) > 1}), file=sys.stderr)\n"
        "atexit.register(report)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
    done = subprocess.run(
        [sys.executable, "-m", "gpu_labs.train_grpo", "--run-mode", "cpu_smoke", "--print-config"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "LOADED TWICE []" in done.stderr


# ---- several processes -------------------------------------------------------------------------


@pytest.mark.slow
def test_torchrun_with_two_cpu_processes_trains_one_policy_on_split_prompts(tmp_path):
    """gloo, 2 ranks, 2 prompts and 2 micro-batches each; single-digit answers give the random tiny
    model the odd correct answer (at temperature 2), so gradients are real and must be all-reduced."""
    digits = tmp_path / "digits.jsonl"
    digits.write_text(
        "".join(json.dumps({"question": f"Say the digit {d}.", "answer": f"#### {d}"}) + "\n" for d in range(1, 9))
    )
    out = tmp_path / "ddp"
    overrides = ["--curriculum_data", digits, "--group_size", 8, "--prompts_per_iter", 4, "--micro_batch_groups", 1]
    overrides += ["--iterations", 2, "--curriculum_iters", 2, "--temperature", 2.0]
    command = [
        Path(sys.executable).with_name("torchrun"),
        "--standalone",
        "--nproc_per_node",
        2,
        "-m",
        "gpu_labs.train_grpo",
    ]
    command += ["--run-mode", "cpu_smoke", "--out", out, *overrides]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run([str(part) for part in command], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    evidence = json.loads((out / "evidence.json").read_text())
    results = evidence["results"]
    assert evidence["failure"] is None and results["world_size"] == evidence["workload"]["world_size"] == 2
    assert results["replicas_identical"] is True
    assert results["max_kl"] > 0 and results["checks"]["learning_signal"]
    lines = metrics_lines(out)[1:]
    first_batch = lab.PromptStream(load_problems(digits), 4, seed=0).next()
    assert lines[0]["prompt_ids"] == [problem.id for problem in first_batch]  # the ranks split one global batch
    assert all(line["group_sizes"] == [8] * 4 and line["rollouts"] == 32 for line in lines)
    assert sum(line.startswith(LOG_LINE_PREFIX) for line in done.stdout.splitlines()) == 2  # rank 0 alone prints
    assert sorted(path.name for path in (out / "checkpoints").iterdir()) == ["iter-1", "iter-2"]
