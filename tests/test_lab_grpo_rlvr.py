"""Lab grpo_rlvr in cpu_smoke on the tiny model: evidence, disjoint data, counts, adapter, decision.

A random tiny model almost never writes the right number for a word problem, so the main run
trains on one-digit sums ("What is 2 + 4?"): a random byte now and then is the right digit, which
gives some groups reward variance and so real GRPO updates. The shipped word problems are used by
the run that shows the other path: no variance, no update, no adapter, "reject".
"""

import json
import statistics
from pathlib import Path

import pytest
from conftest import one_torch_thread

from gpu_labs import grpo_rlvr
from gpu_labs.config import ConfigError
from gpu_labs.data import ids_sha256, load_problems
from gpu_labs.evidence import file_sha256
from gpu_labs.runner import REJECT_UNTIL_FIXED, run_lab
from gpu_labs.runs import LabRefusal
from reference.delivery_decisions import check_rollout_contract, decide_grpo_delivery, evaluate_grpo_candidate

DECISIONS = ("reject", "tune", "accept")
TRAIN_PAIRS = [(2, 4), (0, 0), (4, 3), (1, 7), (3, 3), (0, 5), (6, 2), (1, 1)]
HELDOUT_PAIRS = [(2, 2), (5, 3), (0, 9), (4, 1)]
SMOKE = {"train_prompts": "8", "group_size": "8", "prompts_per_rollout": "4", "max_new_tokens": "32"}


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """The tiny model's matrices are so small that a second thread only adds synchronisation."""
    with one_torch_thread():
        yield


def write_sums(path: Path, pairs) -> Path:
    lines = [
        json.dumps({"question": f"What is {a} + {b}?", "answer": f"{a} + {b} = {a + b}\n#### {a + b}"})
        for a, b in pairs
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def sums_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("grpo_rlvr")
    train = write_sums(folder / "train.jsonl", TRAIN_PAIRS)
    heldout = write_sums(folder / "heldout.jsonl", HELDOUT_PAIRS)
    overrides = {**SMOKE, "train_path": str(train), "heldout_path": str(heldout)}
    evidence, out = run_lab("grpo_rlvr", "cpu_smoke", label="sums", out=folder / "run", overrides=overrides)
    assert evidence["failure"] is None, evidence["failure"]
    return json.loads((out / "evidence.json").read_text(encoding="utf-8")), out  # the evidence as recorded


def read_rollouts(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / grpo_rlvr.ROLLOUTS_FILE).read_text(encoding="utf-8").splitlines()]


@pytest.mark.slow  # runs the lab's model
def test_a_smoke_run_records_every_evidence_field(sums_run):
    evidence, out = sums_run
    for field in ("framework", "hardware", "model", "data", "config", "workload", "stages", "peak_memory", "curves"):
        assert evidence[field], field
    assert evidence["model"]["spec"] == "tiny"
    for stage in (
        "inputs",
        "load_model",
        "baseline_rollouts",
        "train_rollouts",
        "updates",
        "candidate_rollouts",
        "delivery",
    ):
        assert evidence["stages"][stage] >= 0, stage
    results = evidence["results"]
    assert results["verifier_version"] == grpo_rlvr.VERIFIER_VERSION
    for policy in ("baseline", "candidate"):
        for metric in (
            "mean_reward",
            "pass_at_group",
            "max_length_hit_ratio",
            "valid_group_ratio",
            "effective_trajectories_per_second",
        ):
            assert isinstance(results[policy][metric], float), (policy, metric)
    assert results["resources"]["peak_allocated_bytes"] > 0
    assert set(evidence["artifacts"]) >= {"evidence", "curves", "manifest", "rollouts", "adapter"}
    assert all((out / name).exists() for name in evidence["artifacts"].values())


@pytest.mark.slow  # runs the lab's model
def test_training_and_heldout_prompts_are_disjoint_and_identified(sums_run):
    evidence, out = sums_run
    data = evidence["data"]
    assert data["overlap"] == []
    assert data["train"]["ids_sha256"] != data["heldout"]["ids_sha256"]
    train = load_problems(data["train"]["path"], evidence["config"]["train_prompts"])
    heldout = load_problems(data["heldout"]["path"], evidence["config"]["heldout_prompts"])
    assert (data["train"]["ids_sha256"], data["heldout"]["ids_sha256"]) == (ids_sha256(train), ids_sha256(heldout))
    prompts = {row["rollouts"]: set() for row in read_rollouts(out)}
    for row in read_rollouts(out):
        prompts[row["rollouts"]].add(row["prompt_id"])
    assert set().union(*(ids for name, ids in prompts.items() if name.startswith("train"))) == {p.id for p in train}
    assert prompts["baseline"] == prompts["candidate"] == {p.id for p in heldout}


@pytest.mark.slow  # runs the lab's model
def test_counts_agree_with_the_recorded_rollouts(sums_run):
    evidence, out = sums_run
    results, config = evidence["results"], evidence["config"]
    groups = results["rollout"]["reward_groups"]
    valid = [rewards for rewards in groups if max(rewards) > min(rewards)]
    assert len(groups) == config["train_prompts"] and all(len(r) == config["group_size"] for r in groups)
    assert results["rollout"]["valid_group_ratio"] == len(valid) / len(groups)
    assert valid, "the one-digit sums should give some group reward variance"
    update = results["update"]
    assert update["update_count"] == len(update["updates"]) == len(valid) <= config["train_prompts"]
    assert update["effective_trajectory_count"] == len(valid) * config["group_size"]
    assert len(evidence["curves"]["update/loss"]) == update["update_count"]
    records = results["rollout"]["trajectory_records"]
    batches = sorted({record["rollouts"] for record in records}, key=lambda name: int(name.split("-")[1]))
    with_variance = {record["rollouts"] for record in records if max(record["rewards"]) > min(record["rewards"])}
    assert {f"train-{item['batch']}" for item in update["skipped_batches"]} == set(batches) - with_variance
    ratios = [
        statistics.fmean(max(r["rewards"]) > min(r["rewards"]) for r in records if r["rollouts"] == b) for b in batches
    ]
    assert evidence["curves"]["rollout/valid_group_ratio"] == ratios

    rows = read_rollouts(out)
    assert len(rows) == (config["train_prompts"] + 2 * config["heldout_prompts"]) * config["group_size"]
    assert len({row["trace_id"] for row in rows}) == len(rows)
    for policy in ("baseline", "candidate"):
        mine = [row for row in rows if row["rollouts"] == policy]
        summary = results[policy]
        assert summary["trajectories"] == len(mine) == config["heldout_prompts"] * config["group_size"]
        assert summary["mean_reward"] == pytest.approx(sum(row["reward"] for row in mine) / len(mine))
        assert summary["max_length_hit_ratio"] == sum(row["hit_length_cap"] for row in mine) / len(mine)
        solved = {row["prompt_id"] for row in mine if row["reward"] >= 1.0}
        assert summary["pass_at_group"] == len(solved) / config["heldout_prompts"]
        assert summary["mean_reward"] == pytest.approx(sum(summary["per_prompt_reward"]) / config["heldout_prompts"])
    for metric, curve in grpo_rlvr.HELDOUT_CURVES.items():
        assert evidence["curves"][curve] == [results["baseline"][metric], results["candidate"][metric]]
    gains = results["comparison"]
    assert gains["reward_mean_gain"] == results["candidate"]["mean_reward"] - results["baseline"]["mean_reward"]
    assert gains["pass_at_group_gain"] == results["candidate"]["pass_at_group"] - results["baseline"]["pass_at_group"]


@pytest.mark.slow  # runs the lab's model
def test_the_adapter_is_saved_and_its_sha256_matches_the_manifest(sums_run):
    evidence, out = sums_run
    artifact = evidence["results"]["artifact"]
    weights = out / artifact["weights"]
    assert weights.is_file() and file_sha256(weights) == artifact["sha256"]
    manifest = json.loads((out / grpo_rlvr.MANIFEST_FILE).read_text(encoding="utf-8"))
    assert manifest["files"][artifact["weights"]]["sha256"] == artifact["sha256"]
    assert manifest["files"][artifact["weights"]]["bytes"] == weights.stat().st_size
    assert manifest["files"][grpo_rlvr.ROLLOUTS_FILE]["sha256"] == file_sha256(out / grpo_rlvr.ROLLOUTS_FILE)
    assert manifest["decision"] == evidence["decision"]
    assert manifest["data"] == evidence["data"] and manifest["config"] == evidence["config"]
    policy = evidence["results"]["policy"]
    assert (
        policy["changed"]
        and artifact["policy_version"] == policy["candidate_version"] != artifact["source_policy_version"]
    )


@pytest.mark.slow  # runs the lab's model
def test_the_decision_is_the_references_for_the_recorded_inputs(sums_run):
    evidence, _ = sums_run
    results = evidence["results"]
    candidate = evaluate_grpo_candidate(results, results["gates"])
    assert candidate == results["candidate_gates"]
    assert candidate["effective_trajectories_per_second"] == results["update"]["effective_trajectories_per_second"]
    decision = decide_grpo_delivery(results["rollout_contract"], candidate, results["artifact"])
    assert evidence["decision"] == decision["decision"] == results["delivery"]["decision"]
    assert evidence["decision"] in DECISIONS
    records = results["rollout"]["trajectory_records"]
    for batch in sorted({record["rollouts"] for record in records}):
        mine = [record for record in records if record["rollouts"] == batch]
        (version,) = {record["source_policy_version"] for record in mine}  # one sampling policy per batch
        assert check_rollout_contract(mine, version, grpo_rlvr.VERIFIER_VERSION, evidence["config"]["group_size"])[
            "admitted"
        ]
    versions = [record["source_policy_version"] for record in records]
    assert versions[0] != versions[-1], "the second batch is sampled by the updated policy"


@pytest.mark.slow  # runs the lab's model
def test_a_label_in_use_is_refused_and_its_evidence_kept(sums_run):
    evidence, out = sums_run
    before = (out / "evidence.json").read_bytes()
    with pytest.raises(LabRefusal, match="never overwritten"):
        run_lab("grpo_rlvr", "cpu_smoke", label="sums", out=out)
    assert (out / "evidence.json").read_bytes() == before


def test_overlapping_prompt_files_end_in_a_recorded_failure(tmp_path):
    train = write_sums(tmp_path / "train.jsonl", [(1, 2), (3, 4)])
    heldout = write_sums(tmp_path / "heldout.jsonl", [(5, 1), (3, 4)])
    overrides = {"train_path": str(train), "heldout_path": str(heldout)}
    evidence, out = run_lab("grpo_rlvr", "cpu_smoke", label="overlap", out=tmp_path / "run", overrides=overrides)
    assert evidence["failure"]["type"] == "LabDataError" and evidence["failure"]["stage"] == "inputs"
    assert "share 1 question" in evidence["failure"]["message"]
    assert evidence["decision"] == REJECT_UNTIL_FIXED and evidence["results"] == {}
    assert evidence["data"]["overlap"] == [load_problems(heldout)[1].id]
    assert "load_model" not in evidence["stages"] and not (out / grpo_rlvr.ADAPTER_DIR).exists()
    assert json.loads((out / "evidence.json").read_text(encoding="utf-8"))["decision"] == REJECT_UNTIL_FIXED


def test_no_reward_variance_means_no_update_no_adapter_and_reject(tmp_path):
    evidence, out = run_lab("grpo_rlvr", "cpu_smoke", label="words", out=tmp_path / "run")
    results = evidence["results"]
    assert all(max(rewards) == min(rewards) for rewards in results["rollout"]["reward_groups"])
    assert results["status"] == "no_effective_update" and results["update"]["update_count"] == 0
    assert len(results["update"]["skipped_batches"]) == evidence["workload"]["rollout_batches"]
    assert results["artifact"] == {} and not (out / grpo_rlvr.ADAPTER_DIR).exists()
    assert evidence["decision"] == "reject" and "artifact" in results["delivery"]["failed_checks"]
    assert not results["policy"]["changed"]
    assert json.loads((out / grpo_rlvr.MANIFEST_FILE).read_text(encoding="utf-8"))["artifacts"]["adapter"] is None


@pytest.mark.parametrize(
    "field, value", [("group_size", "1"), ("top_p", "0"), ("kl_beta", "-1"), ("train_prompts", "0")]
)
def test_a_config_that_cannot_run_is_refused_before_anything_is_written(tmp_path, field, value):
    with pytest.raises(ConfigError, match=field):
        run_lab("grpo_rlvr", "cpu_smoke", label="bad", out=tmp_path / "run", overrides={field: value})
    assert not (tmp_path / "run").exists()
