"""Lab grpo_mechanism: cpu_smoke on the tiny model through the CLI, and on the real SmolLM2 (slow).

The evidence is checked against what the fixtures imply, recomputed here without the lab's code:
verifier rewards from the records' components, advantages from the rewards (population std per
group), the policy separation from the recorded per-response log-prob shifts.
"""

import json
import math
import statistics

import pytest
from click.testing import CliRunner
from conftest import one_torch_thread

from gpu_labs import grpo_mechanism
from gpu_labs.config import ConfigError, override
from gpu_labs.evidence import file_sha256
from gpu_labs.models import smollm2_gguf_path
from gpu_labs.runner import run_lab
from grader.cli import cli

SETS = {"minimal_pair": 2, "expanded_group": 4}


def run_cli(*args):
    result = CliRunner().invoke(cli, ["lab", "run", *map(str, args)], standalone_mode=False, catch_exceptions=False)
    return result.return_value, result.stdout, result.stderr


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """One cpu_smoke run on the tiny model (about 10 s): (evidence as written, run folder, stdout)."""
    out = tmp_path_factory.mktemp("mechanism") / "run"
    with one_torch_thread():
        status, stdout, stderr = run_cli("grpo_mechanism", "--run-mode", "cpu_smoke", "--out", out)
    assert status == 0, stderr
    return json.loads((out / "evidence.json").read_text(encoding="utf-8")), out, stdout


def candidate_sets(evidence) -> dict:
    return {item["candidate_set"]: item for item in evidence["results"]["candidate_sets"]}


def advantages_from(records) -> list[float]:
    """(r - group mean) / max(population std, 1e-6), per group, in record order."""
    by_group = {}
    for record in records:
        by_group.setdefault(record["group"], []).append(record["total_reward"])
    stats = {group: (statistics.fmean(values), statistics.pstdev(values)) for group, values in by_group.items()}
    return [(r["total_reward"] - stats[r["group"]][0]) / max(stats[r["group"]][1], 1e-6) for r in records]


@pytest.mark.slow  # runs the lab's model
def test_both_candidate_sets_are_measured_and_the_decision_follows_the_rule(tiny_run):
    evidence, _, stdout = tiny_run
    sets = candidate_sets(evidence)
    assert {name: item["group_size"] for name, item in sets.items()} == SETS
    assert evidence["failure"] is None
    assert evidence["decision"] in ("accept_mechanism", "tune")
    passed = all(
        s["policy_separation"] > 0 and s["zero_variance_guard_passed"] and s["reward_std_mean"] > 0
        for s in sets.values()
    )
    assert evidence["decision"] == ("accept_mechanism" if passed else "tune")
    assert evidence["model"]["spec"] == "tiny" and evidence["model"]["parameters"] > 0
    assert {"load_model", "candidate_set_minimal_pair", "candidate_set_expanded_group"} <= evidence["stages"].keys()
    assert evidence["decision"] in stdout and "expanded_group" in stdout  # the summary was printed


@pytest.mark.slow  # runs the lab's model
def test_verifier_records_keep_correctness_format_and_unjudgeable_apart(tiny_run):
    sets = candidate_sets(tiny_run[0])
    for name, item in sets.items():
        records = item["verifier_records"]
        assert len(records) == item["responses"] == 2 * SETS[name]
        for record in records:
            assert record["verifier_id"] == "integer-answer-v1"
            assert record["total_reward"] == pytest.approx(1.0 * record["correctness"] + 0.1 * record["format_pass"])
            assert (record["status"] == "unjudgeable") == (record["parsed_answer"] is None)
        assert item["correctness_pass_rate"] == statistics.fmean(r["correctness"] for r in records)
        assert item["format_pass_rate"] == statistics.fmean(r["format_pass"] for r in records)
        assert item["unjudgeable_count"] == sum(r["status"] == "unjudgeable" for r in records)
    # the lesson's fixtures: half the answers are right; prose fails the format; "I do not know." is unjudgeable
    assert (sets["minimal_pair"]["format_pass_rate"], sets["minimal_pair"]["unjudgeable_count"]) == (1.0, 0)
    assert (sets["expanded_group"]["format_pass_rate"], sets["expanded_group"]["unjudgeable_count"]) == (0.625, 1)
    assert all(item["correctness_pass_rate"] == 0.5 for item in sets.values())


@pytest.mark.slow  # runs the lab's model
def test_advantages_and_the_zero_variance_guard_follow_from_the_rewards(tiny_run):
    for item in candidate_sets(tiny_run[0]).values():
        records = item["verifier_records"]
        expected = advantages_from(records)
        assert [r["advantage"] for r in records] == pytest.approx(expected, abs=1e-5)
        assert item["nonzero_advantages"] == sum(abs(a) > 1e-9 for a in expected)
        groups = {r["group"] for r in records}
        spreads = [statistics.pstdev([r["total_reward"] for r in records if r["group"] == g]) for g in groups]
        assert item["reward_std_mean"] == pytest.approx(statistics.fmean(spreads), abs=1e-6)
        assert item["zero_variance_guard_passed"] is True


@pytest.mark.slow  # runs the lab's model
def test_policy_separation_is_the_shift_of_positive_minus_negative_advantages(tiny_run):
    for item in candidate_sets(tiny_run[0]).values():
        records = item["verifier_records"]
        up = [r["log_prob_shift"] for r in records if r["advantage"] > 0]
        down = [r["log_prob_shift"] for r in records if r["advantage"] < 0]
        assert item["policy_separation"] == pytest.approx(statistics.fmean(up) - statistics.fmean(down), abs=1e-5)


@pytest.mark.slow  # runs the lab's model
def test_updates_start_from_the_old_policy_and_are_recorded_per_step(tiny_run):
    evidence, out, _ = tiny_run
    for name, item in candidate_sets(evidence).items():
        steps = evidence["config"]["update_steps"]
        assert len(item["losses"]) == len(item["gradient_norms"]) == len(item["clip_fractions"]) == steps
        assert item["losses"][0] == pytest.approx(0.0, abs=1e-6)  # ratio 1 and zero-mean advantages: loss 0
        assert item["clip_fractions"][0] == 0.0 and all(0 <= c <= 1 for c in item["clip_fractions"])
        assert all(norm > 0 and math.isfinite(norm) for norm in item["gradient_norms"])
        assert item["mean_clip_fraction"] == pytest.approx(statistics.fmean(item["clip_fractions"]))
        assert 0 < item["median_update_ms"] <= item["p95_update_ms"]
        assert item["trainable_parameters"] > 0 and item["truncated_responses"] == 0
        for metric, values in (("loss", item["losses"]), ("separation", item["separations"])):
            assert evidence["curves"][f"{name}/{metric}"] == pytest.approx(values)
        assert item["separations"][-1] == item["policy_separation"]
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_sequence_level_ratio_runs_the_same_path(tmp_path):
    with one_torch_thread():
        evidence, _ = run_lab(
            "grpo_mechanism",
            "cpu_smoke",
            out=tmp_path / "seq",
            overrides={"ratio_level": "sequence", "candidate_sets": "minimal_pair", "update_steps": "2"},
        )
    assert evidence["failure"] is None
    (item,) = evidence["results"]["candidate_sets"]
    assert item["candidate_set"] == "minimal_pair" and len(item["losses"]) == 2
    assert "sequence-level ratio" in evidence["workload"]["objective"]


def test_the_decision_rule_needs_separation_guard_and_spread_in_every_set():
    good = {"policy_separation": 0.3, "zero_variance_guard_passed": True, "reward_std_mean": 0.5}
    assert grpo_mechanism.decide([good, good]) == "accept_mechanism"
    for bad in (
        {"policy_separation": -0.1},
        {"policy_separation": math.nan},
        {"zero_variance_guard_passed": False},
        {"reward_std_mean": 0.0},
    ):
        assert grpo_mechanism.decide([good, {**good, **bad}]) == "tune"


def test_median_and_p95_interpolate_between_ranks():
    assert grpo_mechanism.median_and_p95([4.0, 1.0, 3.0, 2.0]) == pytest.approx((2.5, 3.85))
    assert grpo_mechanism.median_and_p95([7.0]) == (7.0, 7.0)


def test_the_frozen_config_is_the_lesson_s_workload_and_bad_values_are_refused():
    config = grpo_mechanism.Config()
    assert (config.update_steps, config.learning_rate, config.clip_range, config.max_length) == (4, 2e-4, 0.2, 96)
    assert (config.lora_rank, config.lora_alpha, config.lora_targets, config.seed) == (8, 16, ("q_proj", "v_proj"), 42)
    assert grpo_mechanism.smoke(config).chat_template is False
    with pytest.raises(ConfigError, match="candidate_sets"):
        override(config, {"candidate_sets": "minimal_pair,minimal_pair"})
    with pytest.raises(ConfigError, match="clip_range"):
        override(config, {"clip_range": "nan"})


@pytest.mark.slow
def test_smollm2_separates_in_the_direction_of_the_advantages(tmp_path):
    """The real SmolLM2-135M on the CPU (cpu_smoke size): every candidate set moves the right way."""
    out = tmp_path / "smollm2"
    with one_torch_thread():
        status, _, stderr = run_cli("grpo_mechanism", "--run-mode", "cpu_smoke", "--model", "smollm2", "--out", out)
    assert status == 0, stderr
    evidence = json.loads((out / "evidence.json").read_text(encoding="utf-8"))
    assert evidence["model"]["weights_sha256"] == file_sha256(smollm2_gguf_path())
    sets = candidate_sets(evidence)
    assert set(sets) == set(SETS)
    for item in sets.values():
        assert item["policy_separation"] > 0, item["separations"]
        assert item["zero_variance_guard_passed"] and item["nonzero_advantages"] == item["responses"]
    assert evidence["decision"] == "accept_mechanism"
