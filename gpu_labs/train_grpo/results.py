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
            **heldout_gains(trainer.evaluations),
        },
        "seconds_per_iteration": {"median": statistics.median(seconds), "max": max(seconds)},
        "trajectories_per_second": sum(record["rollouts"] for record in history) / sum(seconds),
        "checkpoints": trainer.checkpoints,
        "checks": checks,
        "decision_rule": DECISION_RULE,
    }


def heldout_gains(evaluations: dict) -> dict:
    """The held-out problems' scores before training and at the last evaluation, and each gain with
    its 95% paired-bootstrap interval (gpu_labs.bootstrap): accuracy (the answer is correct: the
    reward's 1.0 part), format (exactly one well-formed tag: its 0.2 part) and the reward they make
    (1.0 * correct + 0.2 * formatted). `learned` is True when the accuracy gain's interval lies
    entirely above 0. Empty without both evaluations."""
    from gpu_labs.bootstrap import paired_gain

    last = max(evaluations, default=0)
    if not last or 0 not in evaluations:
        return {}
    before, after = evaluations[0], evaluations[last]
    gains = {
        part: paired_gain(before[key], after[key]) for part, key in (("accuracy", "correct"), ("format", "formatted"))
    }
    gains["reward"] = paired_gain(_rewards(before), _rewards(after))
    return {
        "gains": gains,
        "gains_compare": f"iteration 0 against iteration {last}, the same {gains['accuracy']['n']} problems",
        "learned": gains["accuracy"]["low"] > 0,
        "per_problem": {"before": before, "after": after},
    }


def _rewards(scores: dict) -> list[float]:
    """Per problem, reward_gsm8k from its two parts: 1.0 * correct + 0.2 * formatted."""
    from reference.verifier_reward import CORRECT_BONUS, FORMAT_BONUS

    return [
        CORRECT_BONUS * correct + FORMAT_BONUS * formatted
        for correct, formatted in zip(scores["correct"], scores["formatted"])
    ]


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
