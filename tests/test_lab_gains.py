"""The learning run's held-out measure: paired-bootstrap gains, the choice of held-out problems, CPU evidence."""

import json
import math
import statistics
from pathlib import Path

import pytest
import torch
from conftest import one_torch_thread

from gpu_labs import evidence as ev
from gpu_labs import train_grpo as lab
from gpu_labs.bootstrap import paired_gain
from gpu_labs.data import ARITHMETIC, ARITHMETIC_HELDOUT, ARITHMETIC_POOL, load_problems, overlap
from gpu_labs.models import build_tiny
from gpu_labs.train_grpo.heldout import choose, pass_rates
from gpu_labs.train_grpo.results import heldout_gains

CPU_LEARN = Path(lab.__file__).parent / "configs" / "cpu_learn.json"


def test_a_gain_every_problem_shows_has_an_interval_of_that_gain_alone():
    gain = paired_gain([0] * 50 + [1] * 50, [1] * 100)
    assert (gain["before"], gain["after"], gain["gain"]) == (0.5, 1.0, 0.5)
    assert gain["low"] < 0.5 < gain["high"]  # half the problems gained 1, half 0: the resamples vary
    same = paired_gain([0, 1, 1, 0], [1, 2, 2, 1])
    assert same["low"] == same["high"] == same["gain"] == 1.0  # every difference is 1: nothing varies


def test_pairing_removes_the_spread_of_difficulty():
    """Problems of very different scores that all gain 0.1: a tight interval around 0.1, which an
    unpaired comparison of the two means would not give."""
    before = [index / 100 for index in range(100)]
    after = [score + 0.1 + (0.01 if index % 2 else -0.01) for index, score in enumerate(before)]
    gain = paired_gain(before, after)
    assert gain["low"] > 0.09 and gain["high"] < 0.11
    assert statistics.stdev(before) > 0.25  # the unpaired spread, 25 times the paired one


def test_the_interval_is_the_normal_one_for_a_large_sample():
    generator = torch.Generator().manual_seed(3)
    before = (torch.rand(400, generator=generator) < 0.4).float().tolist()
    after = (torch.rand(400, generator=generator) < 0.6).float().tolist()
    gain = paired_gain(before, after)
    differences = [a - b for a, b in zip(after, before)]
    half = 1.96 * statistics.stdev(differences) / math.sqrt(len(differences))
    assert gain["high"] - gain["low"] == pytest.approx(2 * half, rel=0.1)
    assert (gain["low"] + gain["high"]) / 2 == pytest.approx(gain["gain"], abs=0.01)


def test_a_gain_needs_the_same_problems_before_and_after():
    with pytest.raises(ValueError, match="same problems"):
        paired_gain([1, 0], [1])


def test_learned_means_the_accuracy_interval_lies_above_zero():
    worse = {"correct": [1] * 60 + [0] * 60, "formatted": [0] * 120}
    better = {"correct": [1] * 100 + [0] * 20, "formatted": [1] * 120}
    learned = heldout_gains({0: worse, 50: better})
    assert learned["learned"] and learned["gains"]["accuracy"]["low"] > 0
    assert learned["gains"]["format"]["gain"] == 1.0
    assert learned["gains"]["reward"]["gain"] == pytest.approx(40 / 120 + 0.2)
    flat = heldout_gains({0: worse, 50: dict(worse, correct=worse["correct"][::-1])})
    assert not flat["learned"] and flat["gains"]["accuracy"]["gain"] == 0
    assert heldout_gains({0: worse}) == {}  # one evaluation: nothing to compare


def test_held_out_choice_keeps_rates_inside_the_bounds_in_file_order():
    problems = load_problems(ARITHMETIC_POOL)[:6]
    chosen = choose(problems, [0.0, 0.25, 0.9, 0.5, 0.8, 1.0], 0.2, 0.8, 2)
    assert chosen == [problems[1], problems[3]]
    assert choose(problems, [0.0, 0.25, 0.9, 0.5, 0.8, 1.0], 0.2, 0.8, 9) == [problems[i] for i in (1, 3, 4)]


@pytest.mark.slow  # samples from a model
def test_pass_rates_do_not_depend_on_how_far_they_are_read():
    tiny = build_tiny()
    problems = load_problems(ARITHMETIC_POOL)[:6]
    config = lab.Config(rollout_len=4, seed=5)
    with one_torch_thread():
        rates = list(pass_rates(tiny.model, tiny.tokenizer, problems, config, samples=2, prompts_per_batch=4))
        first = next(pass_rates(tiny.model, tiny.tokenizer, problems, config, samples=2, prompts_per_batch=4))
    assert len(rates) == 6 and first == rates[0]
    assert all(rate in (0.0, 0.5, 1.0) for rate in rates)


def test_the_pool_and_the_chosen_held_out_problems_were_never_training_prompts():
    curriculum, pool, chosen = (
        load_problems(ARITHMETIC),
        load_problems(ARITHMETIC_POOL),
        load_problems(ARITHMETIC_HELDOUT),
    )
    assert overlap(curriculum, pool) == set() and len({problem.id for problem in pool}) == len(pool)
    assert overlap(chosen, curriculum) == set()
    assert {problem.id for problem in chosen} <= {problem.id for problem in pool}
    record = json.loads(ARITHMETIC_HELDOUT.with_suffix(".selection.json").read_text(encoding="utf-8"))
    rates = {row["id"]: row["rate"] for row in record["examined"]}
    assert len(chosen) >= 100 and all(0.2 <= rates[problem.id] <= 0.8 for problem in chosen)
    config = json.loads(CPU_LEARN.read_text(encoding="utf-8"))
    assert config["heldout_size"] <= len(chosen) and config["curriculum_iters"] >= config["iterations"]
    assert record["settings"]["system_prompt"] == config["system_prompt"]


def test_a_run_records_its_cpu_time_and_the_load_around_it():
    start = ev.cpu_snapshot()
    sum(index * index for index in range(2_000_000))
    usage = ev.cpu_usage(start)
    assert usage["cpu_seconds"] > 0 and usage["wall_seconds"] > 0
    assert len(usage["load_average_start"]) == len(usage["load_average_end"]) == 3
    assert 1 <= usage["cores_available"]


@pytest.mark.slow  # runs the lab's model
def test_the_cpu_learning_config_runs_its_path_on_the_tiny_model(tmp_path):
    """cpu_learn.json's path at a handful of steps: arithmetic only, the chosen held-out problems
    evaluated before and after, their paired gains and the CPU record in the evidence."""
    import io

    from rich.console import Console

    from gpu_labs.runner import run_lab

    shrink = {"iterations": 2, "curriculum_iters": 2, "eval_every": 2, "save_every": 2, "heldout_size": 4}
    shrink |= {"rollout_len": 8, "group_size": 4, "prompts_per_iter": 2, "eval_batch_size": 4}
    overrides = json.loads(CPU_LEARN.read_text(encoding="utf-8")) | shrink
    with one_torch_thread():
        evidence, out_dir = run_lab(
            lab.NAME, "cpu_smoke", out=tmp_path / "run", overrides=overrides, console=Console(file=io.StringIO())
        )
    assert evidence["failure"] is None
    heldout = evidence["results"]["heldout"]
    assert heldout["evaluated_at"] == [2] and set(heldout["gains"]) == {"accuracy", "format", "reward"}
    assert heldout["gains"]["accuracy"]["before"] == heldout["baseline_accuracy"]
    assert heldout["gains"]["accuracy"]["after"] == heldout["final_accuracy"]
    assert len(heldout["per_problem"]["before"]["correct"]) == heldout["gains"]["accuracy"]["n"] == 4
    assert heldout["learned"] == (heldout["gains"]["accuracy"]["low"] > 0)
    assert evidence["results"]["iterations_by_phase"] == {"curriculum": 2, "main": 0}
    assert evidence["data"]["heldout"]["source"] == "arithmetic_heldout"
    assert evidence["cpu"]["cpu_seconds"] > 0 and len(evidence["cpu"]["load_average_end"]) == 3


@pytest.mark.parametrize(("lang", "title"), [("en", "held-out gains"), ("zh", "留出集上的提升")])
def test_the_summary_shows_each_gain_with_its_interval(lang, title):
    import io

    from rich.cells import cell_len
    from rich.console import Console

    from gpu_labs.summary import build_summary
    from grader.report.styles import THEME

    worse = {"correct": [1] * 30 + [0] * 70, "formatted": [0] * 100}
    better = {"correct": [1] * 50 + [0] * 50, "formatted": [0] * 100}
    gains = heldout_gains({0: worse, 45: better})
    console = Console(file=io.StringIO(), width=80, theme=THEME)
    console.print(build_summary({"lab": lab.NAME, "results": {"heldout": gains}}, lang=lang))
    lines = console.file.getvalue().splitlines()
    accuracy = gains["gains"]["accuracy"]
    row = next(line for line in lines if line.startswith("accuracy "))
    assert row.split() == [
        "accuracy",
        "0.300",
        "0.500",
        "+0.200",
        f"[{accuracy['low']:+.3f},",
        f"{accuracy['high']:+.3f}]",
    ]
    assert any(line.startswith(title) for line in lines) and max(map(cell_len, lines)) <= 80


RECORDED = sorted((Path(lab.__file__).parents[1] / "evidence" / "train_grpo").glob("cpu-learn-seed*/evidence.json"))


@pytest.mark.parametrize("path", RECORDED, ids=lambda path: path.parent.name)
def test_a_recorded_learning_run_holds_its_gains_and_the_readme_shows_them(path):
    """A committed run's gains follow from its per-problem scores (recomputed here, the same
    bootstrap), its config is cpu_learn.json's, and the README shows its numbers and its command."""
    recorded = json.loads(path.read_text(encoding="utf-8"))
    heldout = recorded["results"]["heldout"]
    evaluations = {0: heldout["per_problem"]["before"], heldout["evaluated_at"][-1]: heldout["per_problem"]["after"]}
    again = heldout_gains(evaluations)
    assert again["gains"] == heldout["gains"] and again["learned"] == heldout["learned"]
    config = json.loads(CPU_LEARN.read_text(encoding="utf-8"))
    assert {key: recorded["config"][key] for key in config if key != "seed"} == {
        key: value for key, value in config.items() if key != "seed"
    }
    accuracy = heldout["gains"]["accuracy"]
    shown = f"| {accuracy['after']:.2f} | {accuracy['gain']:+.2f} [{accuracy['low']:+.2f}, {accuracy['high']:+.2f}] |"
    readme = (Path(lab.__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    assert shown in readme, shown
    seed = f"--seed {recorded['config']['seed']} " if recorded["config"]["seed"] else ""
    assert f"cpu_learn.json {seed}--label {path.parent.name}" in readme  # the command that reproduces it


def test_two_seeds_of_the_learning_run_are_recorded():
    assert len({json.loads(path.read_text(encoding="utf-8"))["config"]["seed"] for path in RECORDED}) >= 2
