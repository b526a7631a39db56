"""train_grpo's results and decision: per-phase rewards, final metrics, held-out accuracy, checks.

Decision (from lesson 001 §6: reward up, informative groups present, KL bounded, held-out accuracy the goal):
    reject_until_fixed  a metric is not finite, or KL rose above max_kl, or the run failed
    tune                no learning signal at the end, the policy never moved, or held-out accuracy fell
    continue            none of these
"""

import math
import statistics

from gpu_labs.decisions import CONTINUE, REJECT_UNTIL_FIXED, TUNE

DECISIONS = (CONTINUE, TUNE, REJECT_UNTIL_FIXED)


DECISION_RULE = (  # `decide`, in words, as the evidence records it
    "reject_until_fixed unless finite and kl_bounded; tune unless learning_signal, policy_moved "
    "and heldout_not_worse (None = not evaluated); otherwise continue"
)


def summarise(config, history: list[dict], baseline: float | None, trainer) -> dict:
    """The evidence's results: per-phase rewards, final metrics, held-out accuracy, checks, checkpoints."""
    window = history[-max(1, len(history) // 4) :]  # the last quarter of the iterations
    evaluated = [record for record in history if record.get("heldout_accuracy") is not None]
    final_accuracy = evaluated[-1]["heldout_accuracy"] if evaluated else None
    numbers = [record[name] for record in history for name in ("reward_mean", "kl", "clip_fraction", "loss")]
    max_kl = max(record["kl"] for record in history)
    checks = {
        "finite": all(math.isfinite(value) for value in numbers),
        "kl_bounded": max_kl <= config.max_kl,
        "learning_signal": statistics.fmean(record["informative_fraction"] for record in window) > 0,
        "policy_moved": history[-1]["kl"] > 0,
        "heldout_not_worse": None if final_accuracy is None or baseline is None else final_accuracy >= baseline,
    }
    by_phase = {
        phase: [record["reward_mean"] for record in history if record["phase"] == phase]
        for phase in ("curriculum", "main")
    }
    seconds = trainer.seconds
    final = history[-1]
    return {
        "iterations": len(history),
        "world_size": trainer.ranks.world_size,
        "rollouts": sum(record["rollouts"] for record in history),
        "iterations_by_phase": {phase: len(rewards) for phase, rewards in by_phase.items()},
        "reward_mean_by_phase": {phase: statistics.fmean(rewards) for phase, rewards in by_phase.items() if rewards},
        "final": {name: final[name] for name in ("reward_mean", "informative_fraction", "kl", "clip_fraction", "loss")},
        "max_kl": max_kl,
        "length_cap_fraction": statistics.fmean(record["length_cap_fraction"] for record in history),
        "heldout": {
            "size": config.heldout_size,
            "decoding": "greedy",
            "baseline_accuracy": baseline,
            "final_accuracy": final_accuracy,
            "evaluated_at": [record["iteration"] for record in evaluated],
        },
        "seconds_per_iteration": {"median": statistics.median(seconds), "max": max(seconds)},
        "trajectories_per_second": sum(record["rollouts"] for record in history) / sum(seconds),
        "checkpoints": trainer.checkpoints,
        "checks": checks,
        "decision_rule": DECISION_RULE,
    }


def decide(checks: dict) -> str:
    """reject_until_fixed / tune / continue from the checks (see the module docstring)."""
    if not (checks["finite"] and checks["kl_bounded"]):
        return REJECT_UNTIL_FIXED
    if not (checks["learning_signal"] and checks["policy_moved"]) or checks["heldout_not_worse"] is False:
        return TUNE
    return CONTINUE


def weights_checksum(parameters) -> str:
    """sha256 over the trained parameters' bytes: equal on every rank when DDP kept the replicas in sync."""
    import hashlib

    digest = hashlib.sha256()
    for parameter in parameters:
        digest.update(parameter.detach().float().cpu().numpy().tobytes())
    return digest.hexdigest()
