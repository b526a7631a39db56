"""grpo_rlvr's delivery: the rollout contract, the candidate gates and decision, the adapter, the manifest.

See gpu_labs.grpo_rlvr for the run this ends.
"""

import hashlib
import json
import statistics

from gpu_labs.grpo_rlvr.rollouts import VERIFIER_VERSION, Rollout, check_contract, per_second

ADAPTER_DIR = "adapter"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
MANIFEST_FILE = "manifest.json"
ROLLOUTS_FILE = "rollouts.jsonl"
MANIFEST_SCHEMA = "post-training-katas/grpo-rlvr-manifest/v1"


def gates(config) -> dict:
    """The gates in the names reference.delivery_decisions.evaluate_grpo_candidate reads."""
    return {
        "minimum_valid_group_ratio": config.min_valid_group_ratio,
        "minimum_effective_trajectories_per_second": config.min_effective_trajectories_per_second,
        "minimum_update_count": config.min_update_count,
        "minimum_reward_gain": config.min_reward_gain,
        "minimum_pass_at_group_gain": config.min_pass_at_group_gain,
        "maximum_max_length_hit_ratio": config.max_length_hit_ratio,
        "maximum_peak_allocated_bytes": config.max_peak_allocated_bytes,
    }


def deliver(config, lab_run, model, training: dict, baseline: dict, candidate: dict) -> tuple[dict, str]:
    """Adapter, results, rollout contract, gates and decision, rollouts.jsonl and manifest.json: (results, decision)."""
    from gpu_labs.evidence import write_json_atomic

    source, final = baseline["version"], candidate["version"]
    artifact = save_adapter(model, lab_run.out_dir, source, final) if training["update_count"] else {}
    results = delivery_results(config, training, baseline["summary"], candidate["summary"], artifact)
    results["rollout_contract"] = rollout_contract(training, baseline, candidate, config.group_size)
    results["policy"] = {"source_version": source, "candidate_version": final, "changed": final != source}
    decision = decide(results)
    everything = training["rollouts"] + baseline["rollouts"] + candidate["rollouts"]
    write_rollouts(lab_run.out_dir / ROLLOUTS_FILE, everything)
    write_json_atomic(lab_run.out_dir / MANIFEST_FILE, build_manifest(config, lab_run, results))
    lab_run.extra["artifacts"] = {
        "manifest": MANIFEST_FILE,
        "rollouts": ROLLOUTS_FILE,
        **({"adapter": ADAPTER_DIR, "adapter_weights": f"{ADAPTER_DIR}/{ADAPTER_WEIGHTS}"} if artifact else {}),
    }
    return results, decision


def rollout_contract(training: dict, baseline: dict, candidate: dict, group_size: int) -> dict:
    """Every rollout batch checked against the policy that should have sampled it; admitted if all are."""
    checks = list(training["contracts"])
    for name, evaluation in (("baseline", baseline), ("candidate", candidate)):
        records = [rollout.contract_record() for rollout in evaluation["rollouts"]]
        checks.append({"rollouts": name, **check_contract(records, evaluation["version"], group_size)})
    everything = training["rollouts"] + baseline["rollouts"] + candidate["rollouts"]
    trace_ids = [trace for rollout in everything for trace in rollout.trace_ids]
    return {
        "admitted": all(check["admitted"] for check in checks),
        "failed_checks": [f"{check['rollouts']}: {name}" for check in checks for name in check["failed_checks"]],
        "checks": checks,
        "verifier_version": VERIFIER_VERSION,
        "trace_count": len(trace_ids),
        "trace_ids_sha256": hashlib.sha256("\n".join(trace_ids).encode()).hexdigest(),
    }


def delivery_results(config, training: dict, baseline: dict, candidate: dict, artifact: dict) -> dict:
    """The results, laid out so that evaluate_grpo_candidate(results, results["gates"]) reads them directly."""
    from gpu_labs.evidence import peak_memory

    rollouts, group_size = training["rollouts"], config.group_size
    train_hits = [hit for rollout in rollouts for hit in rollout.hit_length_cap]
    valid = sum(rollout.valid for rollout in rollouts)
    memory = peak_memory()
    cuda = "peak_allocated_bytes" in memory
    return {
        "status": "ok" if training["update_count"] else "no_effective_update",
        "verifier_version": VERIFIER_VERSION,
        "rollout": {
            "group_size": group_size,
            "groups": len(rollouts),
            "valid_groups": valid,
            "valid_group_ratio": valid / len(rollouts),
            "mean_reward": statistics.fmean(r for rollout in rollouts for r in rollout.rewards),
            "reward_groups": [rollout.rewards for rollout in rollouts],
            "rollout_seconds": training["rollout_seconds"],
            "train_max_length_hit_ratio": sum(train_hits) / len(train_hits),
            "max_length_hit_ratio": max(
                sum(train_hits) / len(train_hits), baseline["max_length_hit_ratio"], candidate["max_length_hit_ratio"]
            ),
            "trajectory_records": [{"rollouts": rollout.split, **rollout.contract_record()} for rollout in rollouts],
        },
        "update": {
            "update_count": training["update_count"],
            "max_updates": len(rollouts),
            "update_seconds": training["update_seconds"],
            "effective_trajectory_count": valid * group_size,
            "effective_trajectories_per_second": per_second(
                valid * group_size, training["rollout_seconds"] + training["update_seconds"]
            ),
            "skipped_batches": training["skipped"],
            "updates": training["updates"],
        },
        "baseline": baseline,
        "candidate": candidate,
        "comparison": {
            "reward_mean_gain": candidate["mean_reward"] - baseline["mean_reward"],
            "pass_at_group_gain": candidate["pass_at_group"] - baseline["pass_at_group"],
            "max_length_hit_ratio_change": candidate["max_length_hit_ratio"] - baseline["max_length_hit_ratio"],
        },
        "resources": {
            "peak_allocated_bytes": memory["peak_allocated_bytes"] if cuda else memory["peak_rss_bytes"],
            "measure": "torch.cuda.max_memory_allocated" if cuda else "peak resident set size (CPU run)",
            **memory,
        },
        "gates": gates(config),
        "artifact": artifact,
    }


def decide(results: dict) -> str:
    """Gate the candidate and decide with the delivery_decisions reference; both go into `results`.

    Returns the decision: "reject", "tune" or "accept" (gpu_labs.decisions).
    """
    from reference.delivery_decisions import decide_grpo_delivery, evaluate_grpo_candidate

    results["candidate_gates"] = evaluate_grpo_candidate(results, results["gates"])
    results["delivery"] = decide_grpo_delivery(
        results["rollout_contract"], results["candidate_gates"], results["artifact"]
    )
    return results["delivery"]["decision"]


def save_adapter(model, out_dir, source_version: str, candidate_version: str) -> dict:
    """peft's save_pretrained into out_dir/adapter; the artifact record names the weights file and its sha256."""
    from gpu_labs.evidence import file_sha256

    folder = out_dir / ADAPTER_DIR
    model.save_pretrained(folder, save_embedding_layers=False)  # LoRA on q/v only
    weights = folder / ADAPTER_WEIGHTS
    return {
        "path": ADAPTER_DIR,
        "weights": f"{ADAPTER_DIR}/{ADAPTER_WEIGHTS}",
        "sha256": file_sha256(weights),
        "bytes": weights.stat().st_size,
        "source_policy_version": source_version,
        "policy_version": candidate_version,
    }


def write_rollouts(path, rollouts: list[Rollout]) -> None:
    """Every trajectory, one JSON line each: which rollouts, prompt, trace, policy, reward, response."""
    with open(path, "w", encoding="utf-8") as handle:
        for rollout in rollouts:
            for trace, text, reward, capped in zip(
                rollout.trace_ids, rollout.responses, rollout.rewards, rollout.hit_length_cap, strict=True
            ):
                line = {
                    "rollouts": rollout.split,
                    "prompt_id": rollout.prompt_id,
                    "trace_id": trace,
                    "policy_version": rollout.policy_version,
                    "verifier_version": VERIFIER_VERSION,
                    "reward": reward,
                    "hit_length_cap": capped,
                    "response": text,
                }
                handle.write(json.dumps(line, ensure_ascii=False) + "\n")


def build_manifest(config, lab_run, results: dict) -> dict:
    """The candidate's manifest: files (bytes, sha256), model and data identity, config, quality and decision."""
    from gpu_labs.config import as_dict
    from gpu_labs.evidence import file_sha256

    out_dir = lab_run.out_dir
    paths = sorted((out_dir / ADAPTER_DIR).rglob("*")) + [out_dir / ROLLOUTS_FILE]
    files = {
        path.relative_to(out_dir).as_posix(): {"bytes": path.stat().st_size, "sha256": file_sha256(path)}
        for path in paths
        if path.is_file()
    }
    return {
        "schema": MANIFEST_SCHEMA,
        "lab": lab_run.lab,
        "label": lab_run.label,
        "run_mode": lab_run.run_mode,
        "decision": results["delivery"]["decision"],
        "decision_details": results["delivery"],
        "candidate_gates": results["candidate_gates"],
        "model": lab_run.extra.get("model", {}),
        "data": lab_run.extra.get("data", {}),
        "config": as_dict(config),
        "verifier_version": VERIFIER_VERSION,
        "policy": results["policy"],
        "quality": {
            name: {key: value for key, value in results[name].items() if key != "per_prompt_reward"}
            for name in ("baseline", "candidate")
        }
        | {"comparison": results["comparison"]},
        "rollout_contract": {
            key: results["rollout_contract"][key]
            for key in ("admitted", "failed_checks", "trace_count", "trace_ids_sha256")
        },
        "artifacts": {"adapter": results["artifact"] or None},
        "files": files,
    }
