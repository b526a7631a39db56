"""Delivery decisions for a GRPO run: admit the rollouts, gate the candidate, decide.

A GRPO / RLVR run is delivered in three steps, each a pure function of plain dicts:

    check_rollout_contract   -> {"admitted", "failed_checks"}
    evaluate_grpo_candidate  -> {"eligible", "valid_group_ratio", "effective_trajectory_count",
                                 "effective_trajectories_per_second", "failed_checks"}
    decide_grpo_delivery     -> {"decision": "reject" | "tune" | "accept", "failed_checks"}

Effective update evidence. With G groups of fixed size n:

    complete group   = a group with exactly n rewards
    valid group      = a complete group whose rewards are not all equal (max > min)
    valid_group_ratio               = valid groups / all G groups          (0.0 when G = 0)
    effective_trajectory_count      = valid groups * n
    elapsed_seconds                 = rollout_seconds + update_seconds     (sample + verify + update)
    effective_trajectories_per_second = effective_trajectory_count / elapsed_seconds
                                        (0.0 when elapsed_seconds == 0: no time, no evidence)

Conventions:
- Gates are inclusive: a value exactly at a minimum or a maximum passes (>= and <=). A reward or
  pass@group gain of exactly 0 passes a 0 gate: "not worse" is enough there.
- Incomplete and zero-variance groups cost time but give no update; they stay in the denominator.
- Trace ids are unique across the whole rollout, not only inside each group. A trace id that is
  None or "" is missing. An empty rollout is not admitted and names "non_empty" as the reason.
- failed_checks lists the names of the failed checks in the fixed order of each checks dict.
- Decision: a broken rollout or a missing artifact (path and sha256) rejects; otherwise a
  candidate that misses a gate is sent back to tune; only when all three hold, accept.
"""

import math

GATE_NAMES = (
    "minimum_valid_group_ratio",
    "minimum_effective_trajectories_per_second",
    "minimum_update_count",
    "minimum_reward_gain",
    "minimum_pass_at_group_gain",
    "maximum_max_length_hit_ratio",
    "maximum_peak_allocated_bytes",
)


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_count(value, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _check_rollout(groups, expected_policy_version, expected_verifier_version, expected_group_size) -> None:
    """Raise ValueError unless groups are dicts with a list of trace ids and the expectations are sane."""
    if not isinstance(groups, list) or not all(isinstance(group, dict) for group in groups):
        raise ValueError("groups must be a list of dicts")
    for group in groups:
        ids = group.get("trace_ids")
        if not isinstance(ids, list) or not all(isinstance(trace, str) or trace is None for trace in ids):
            raise ValueError("every group needs a list of trace_ids (str, or None for a missing one)")
    if not all(isinstance(v, str) and v for v in (expected_policy_version, expected_verifier_version)):
        raise ValueError("the expected policy and verifier versions must be non-empty strings")
    if not _is_count(expected_group_size, 1):
        raise ValueError("expected_group_size must be an int >= 1")


def check_rollout_contract(groups, expected_policy_version, expected_verifier_version, expected_group_size):
    """Admit a rollout only if every group is identified, current, complete and unduplicated.

    Args:
        groups: list of dicts, one per prompt group, with "prompt_id", "source_policy_version",
            "verifier_version" and "trace_ids" (a list of str; None or "" is a missing id).
        expected_policy_version: non-empty str, the policy that must have sampled every group.
        expected_verifier_version: non-empty str, the verifier that must have scored every group.
        expected_group_size: int >= 1, the number of traces every group must hold.

    Returns:
        {"admitted": bool, "failed_checks": [names]}, names in this order: non_empty,
        prompt_identity, policy_version, verifier_version, group_size, trace_identity,
        unique_traces (unique across all groups).

    Raises:
        ValueError: if groups is not a list of dicts with a list of str/None "trace_ids", an
            expected version is not a non-empty str, or expected_group_size is not an int >= 1.
    """
    _check_rollout(groups, expected_policy_version, expected_verifier_version, expected_group_size)

    # TODO 1: name each contract check, then admit only if all of them pass
    trace_ids = [trace_id for group in groups for trace_id in group["trace_ids"]]
    checks = {
        "non_empty": len(groups) > 0,
        "prompt_identity": all(bool(group.get("prompt_id")) for group in groups),
        "policy_version": all(group.get("source_policy_version") == expected_policy_version for group in groups),
        "verifier_version": all(group.get("verifier_version") == expected_verifier_version for group in groups),
        "group_size": all(len(group["trace_ids"]) == expected_group_size for group in groups),
        "trace_identity": all(bool(trace_id) for trace_id in trace_ids),
        "unique_traces": len(trace_ids) == len(set(trace_ids)),
    }
    admitted = all(checks.values())
    # END TODO 1
    return {"admitted": admitted, "failed_checks": [name for name, passed in checks.items() if not passed]}


def _check_evidence(evidence, gates) -> None:
    """Raise ValueError unless evidence and gates have every field, with sane values."""
    if not isinstance(gates, dict) or not all(_is_number(gates.get(name)) for name in GATE_NAMES):
        raise ValueError(f"gates must give a finite number for each of {', '.join(GATE_NAMES)}")
    try:
        rollout, update = evidence["rollout"], evidence["update"]
        fields = (
            evidence["status"],
            rollout["group_size"],
            rollout["reward_groups"],
            rollout["rollout_seconds"],
            rollout["max_length_hit_ratio"],
            update["update_count"],
            update["update_seconds"],
            evidence["comparison"]["reward_mean_gain"],
            evidence["comparison"]["pass_at_group_gain"],
            evidence["resources"]["peak_allocated_bytes"],
        )
    except (KeyError, TypeError) as error:
        raise ValueError(f"evidence lacks a field: {error}") from None
    status, group_size, reward_groups, rollout_s, hit_ratio, count, update_s, *rest = fields
    if not isinstance(status, str) or not _is_count(group_size, 1) or not _is_count(count, 0):
        raise ValueError("status must be a str, group_size an int >= 1 and update_count an int >= 0")
    if not isinstance(reward_groups, list) or not all(
        isinstance(rewards, list) and all(_is_number(r) for r in rewards) for rewards in reward_groups
    ):
        raise ValueError("reward_groups must be a list of lists of finite numbers")
    if not all(_is_number(v) for v in (rollout_s, update_s, hit_ratio, *rest)):
        raise ValueError("times, ratios, gains and bytes must be finite numbers")
    if rollout_s < 0 or update_s < 0 or rest[-1] < 0 or not 0 <= hit_ratio <= 1:
        raise ValueError("times and bytes must be >= 0 and max_length_hit_ratio within [0, 1]")


def evaluate_grpo_candidate(evidence, gates):
    """Gate a GRPO candidate on its effective updates, fresh-rollout quality, truncation and memory.

    Args:
        evidence: {"status": str ("ok" when the run finished as planned),
            "rollout": {"group_size": int >= 1, "reward_groups": list of lists of rewards,
                        "rollout_seconds": >= 0 (sampling and verifying), "max_length_hit_ratio": [0, 1]},
            "update": {"update_count": int >= 0, "update_seconds": >= 0},
            "comparison": {"reward_mean_gain": float, "pass_at_group_gain": float},
            "resources": {"peak_allocated_bytes": >= 0}}
        gates: a finite number for each name in GATE_NAMES; every gate is inclusive.

    Returns:
        {"eligible": bool, "valid_group_ratio": float, "effective_trajectory_count": int,
         "effective_trajectories_per_second": float, "failed_checks": [names]}, names in this
        order: execution, effective_groups, effective_throughput, updates, reward, pass_at_group,
        truncation, memory.

    Raises:
        ValueError: if a field is missing or out of range (see _check_evidence).
    """
    _check_evidence(evidence, gates)
    rollout, update, comparison = evidence["rollout"], evidence["update"], evidence["comparison"]
    reward_groups, group_size = rollout["reward_groups"], rollout["group_size"]

    # TODO 2: effective update evidence: valid groups, their ratio, trajectories and throughput
    elapsed_seconds = rollout["rollout_seconds"] + update["update_seconds"]  # sample + verify + update
    complete_groups = [rewards for rewards in reward_groups if len(rewards) == group_size]
    valid_groups = [rewards for rewards in complete_groups if max(rewards) > min(rewards)]
    valid_group_ratio = len(valid_groups) / len(reward_groups) if reward_groups else 0.0
    effective_trajectory_count = len(valid_groups) * group_size
    effective_trajectories_per_second = effective_trajectory_count / elapsed_seconds if elapsed_seconds > 0 else 0.0
    # END TODO 2

    # TODO 3: check every gate (inclusive), then the candidate is eligible only if all pass
    checks = {
        "execution": evidence["status"] == "ok",
        "effective_groups": valid_group_ratio >= gates["minimum_valid_group_ratio"],
        "effective_throughput": effective_trajectories_per_second >= gates["minimum_effective_trajectories_per_second"],
        "updates": update["update_count"] >= gates["minimum_update_count"],
        "reward": comparison["reward_mean_gain"] >= gates["minimum_reward_gain"],
        "pass_at_group": comparison["pass_at_group_gain"] >= gates["minimum_pass_at_group_gain"],
        "truncation": rollout["max_length_hit_ratio"] <= gates["maximum_max_length_hit_ratio"],
        "memory": evidence["resources"]["peak_allocated_bytes"] <= gates["maximum_peak_allocated_bytes"],
    }
    eligible = all(checks.values())
    # END TODO 3
    return dict(
        eligible=eligible,
        valid_group_ratio=valid_group_ratio,
        effective_trajectory_count=effective_trajectory_count,
        effective_trajectories_per_second=effective_trajectories_per_second,
        failed_checks=[name for name, passed in checks.items() if not passed],
    )


def _check_decision_inputs(rollout, candidate, artifact) -> None:
    """Raise ValueError unless rollout and candidate carry their bool verdicts and artifact is a dict."""
    if not isinstance(rollout, dict) or not isinstance(rollout.get("admitted"), bool):
        raise ValueError("rollout must be a dict with a bool 'admitted'")
    if not isinstance(candidate, dict) or not isinstance(candidate.get("eligible"), bool):
        raise ValueError("candidate must be a dict with a bool 'eligible'")
    if not isinstance(artifact, dict):
        raise ValueError("artifact must be a dict")


def decide_grpo_delivery(rollout, candidate, artifact):
    """Three-way delivery decision from the rollout contract, the candidate gates and the artifact.

    Args:
        rollout: the result of check_rollout_contract (needs a bool "admitted").
        candidate: the result of evaluate_grpo_candidate (needs a bool "eligible").
        artifact: dict; the adapter is traceable only with a non-empty "path" and "sha256".

    Returns:
        {"decision": "reject" | "tune" | "accept", "failed_checks": [names]}, names in this order:
        rollout, candidate, artifact. reject if the rollout or the artifact fails (whatever the
        candidate), else tune if the candidate fails, else accept.

    Raises:
        ValueError: if "admitted" or "eligible" is missing or not a bool, or artifact is not a dict.
    """
    _check_decision_inputs(rollout, candidate, artifact)

    # TODO 4: the three hard checks, then reject / tune / accept in that order of precedence
    checks = {
        "rollout": rollout["admitted"],
        "candidate": candidate["eligible"],
        "artifact": bool(artifact.get("path")) and bool(artifact.get("sha256")),
    }
    if not checks["rollout"] or not checks["artifact"]:
        decision = "reject"
    elif not checks["candidate"]:
        decision = "tune"
    else:
        decision = "accept"
    # END TODO 4
    return {"decision": decision, "failed_checks": [name for name, passed in checks.items() if not passed]}
