"""grpo_rlvr's rollouts: inputs, prompts, policy versions, sampled and scored groups, GRPO updates.

See gpu_labs.grpo_rlvr for the run these steps make up.
"""

import hashlib
import json
import statistics
from dataclasses import dataclass

from gpu_labs.evidence import clock

VERIFIER_VERSION = "reward_gsm8k-v1"
CORRECT_REWARD = 1.0  # reward_gsm8k gives 1.0 for a correct answer, at most 0.2 for the format alone
TRAIN_SEED_OFFSET = 1000  # training batch s samples with seed + 1000 + s; held-out chunk c with seed + c


class LabDataError(ValueError):
    """Training and held-out prompts that cannot give independent evidence (one line)."""


@dataclass
class Rollout:
    """One prompt's group of G sampled responses, scored by the verifier."""

    split: str  # "train-<batch>", "baseline" or "candidate"
    prompt_id: str
    policy_version: str  # the policy that sampled it
    prompt_ids: list[int]
    response_ids: list[list[int]]
    responses: list[str]
    hit_length_cap: list[bool]
    rewards: list[float]

    @property
    def trace_ids(self) -> list[str]:
        return [f"{self.split}-{self.prompt_id}-{index}" for index in range(len(self.responses))]

    @property
    def valid(self) -> bool:
        return max(self.rewards) > min(self.rewards)

    @property
    def correct(self) -> bool:
        return max(self.rewards) >= CORRECT_REWARD

    def contract_record(self) -> dict:
        """The group as check_rollout_contract reads it, plus its rewards."""
        return {
            "prompt_id": self.prompt_id,
            "source_policy_version": self.policy_version,
            "verifier_version": VERIFIER_VERSION,
            "trace_ids": self.trace_ids,
            "rewards": self.rewards,
            "length_cap_hits": sum(self.hit_length_cap),
        }


def load_inputs(config, lab_run) -> tuple[list, list]:
    """Training and held-out problems; their identities go into the evidence; a shared question fails."""
    from gpu_labs.data import ids_sha256, load_problems, overlap

    train = load_problems(config.train_path, config.train_prompts)
    heldout = load_problems(config.heldout_path, config.heldout_prompts)
    shared = sorted(overlap(train, heldout))
    lab_run.extra["data"] = {
        "train": {"path": config.train_path, "prompts": len(train), "ids_sha256": ids_sha256(train)},
        "heldout": {"path": config.heldout_path, "prompts": len(heldout), "ids_sha256": ids_sha256(heldout)},
        "overlap": shared,
    }
    if shared:
        raise LabDataError(
            f"training and held-out prompts share {len(shared)} question(s) ({', '.join(shared[:3])}); "
            "held-out results would not be independent evidence"
        )
    return train, heldout


def encode_prompts(tokenizer, problems, config) -> list[str]:
    """Each problem's chat prompt; one longer than max_prompt_tokens is an error, not a silent cut."""
    from gpu_labs.sequences import chat_prompt

    prompts = [chat_prompt(tokenizer, problem.question, config.system_prompt or None) for problem in problems]
    for problem, prompt in zip(problems, prompts, strict=True):
        length = len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
        if length > config.max_prompt_tokens:
            raise ValueError(
                f"prompt {problem.id} ({problem.source}) has {length} tokens, "
                f"more than max_prompt_tokens={config.max_prompt_tokens}"
            )
    return prompts


def base_identity(identity: dict) -> str:
    """The frozen base model's identity as one string: its weights hash where there is one."""
    weights = identity.get("weights_sha256")
    return weights if isinstance(weights, str) else json.dumps(identity, sort_keys=True, default=str)


def policy_version(model, base: str) -> str:
    """`policy-<16 hex>`: sha256 over the base identity and the adapter's current weights."""
    from peft import get_peft_model_state_dict

    digest = hashlib.sha256(base.encode())
    for name, tensor in sorted(get_peft_model_state_dict(model, save_embedding_layers=False).items()):
        digest.update(name.encode())
        digest.update(tensor.detach().float().cpu().numpy().tobytes())
    return "policy-" + digest.hexdigest()[:16]


def sample_rollouts(model, tokenizer, problems, prompts, config, seed: int, split: str, version: str) -> list[Rollout]:
    """G samples per prompt (group-contiguous), each scored by reward_gsm8k against the gold value."""
    from gpu_labs.sequences import sample_groups
    from reference.verifier_reward import reward_gsm8k

    groups = sample_groups(
        model, tokenizer, prompts, config.group_size, config.max_new_tokens, config.temperature, config.top_p, seed
    )
    rollouts = []
    for problem, prompt, group in zip(problems, prompts, groups, strict=True):
        rewards = [float(reward_gsm8k(text, problem.answer)) for text in group.responses]
        prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        trajectories = (group.response_ids, group.responses, group.hit_length_cap)
        rollouts.append(Rollout(split, problem.id, version, prompt_ids, *trajectories, rewards))
    return rollouts


def evaluate(model, tokenizer, problems, prompts, config, split: str, version: str, lab_run) -> dict:
    """Fresh held-out rollouts in chunks of prompts_per_rollout (chunk c seeded seed + c): rollouts and summary."""
    size = config.prompts_per_rollout
    starts = range(0, len(problems), size)
    rollouts, started = [], clock(lab_run.device)
    with lab_run.progress(lab_run.say("heldout_rollouts", split=split), len(starts)) as advance:
        for chunk, start in enumerate(starts):
            part = slice(start, start + size)
            seed = config.seed + chunk
            rollouts += sample_rollouts(model, tokenizer, problems[part], prompts[part], config, seed, split, version)
            advance()
    seconds = clock(lab_run.device) - started
    return {"version": version, "rollouts": rollouts, "summary": summarise(rollouts, seconds)}


def summarise(rollouts: list[Rollout], seconds: float) -> dict:
    """Quality and cost of one set of rollouts (one group per prompt)."""
    rewards = [reward for rollout in rollouts for reward in rollout.rewards]
    hits = [hit for rollout in rollouts for hit in rollout.hit_length_cap]
    valid = sum(rollout.valid for rollout in rollouts)
    group_size = len(rollouts[0].rewards)
    return {
        "groups": len(rollouts),
        "trajectories": len(rewards),
        "mean_reward": statistics.fmean(rewards),
        "pass_at_group": sum(rollout.correct for rollout in rollouts) / len(rollouts),
        "correct_ratio": sum(reward >= CORRECT_REWARD for reward in rewards) / len(rewards),
        "max_length_hit_ratio": sum(hits) / len(hits),
        "valid_groups": valid,
        "valid_group_ratio": valid / len(rollouts),
        "mean_response_tokens": statistics.fmean(len(ids) for rollout in rollouts for ids in rollout.response_ids),
        "seconds": seconds,
        "trajectories_per_second": per_second(len(rewards), seconds),
        "effective_trajectories_per_second": per_second(valid * group_size, seconds),
        "per_prompt_reward": [statistics.fmean(rollout.rewards) for rollout in rollouts],
    }


def train_policy(model, tokenizer, problems, prompts, config, base: str, lab_run) -> dict:
    """Rollout batches on the training prompts; one GRPO update per group with reward variance."""
    import torch

    parameters = [parameter for parameter in model.parameters() if parameter.requires_grad]
    optimizer = torch.optim.AdamW(parameters, lr=config.learning_rate)
    size = config.prompts_per_rollout
    starts = range(0, len(problems), size)
    rollouts, contracts, updates, skipped = [], [], [], []
    rollout_seconds = update_seconds = 0.0
    with lab_run.progress(lab_run.say("grpo_rollouts"), len(starts)) as advance:
        for batch, start in enumerate(starts, start=1):
            with lab_run.stage("train_rollouts"):
                started = clock(lab_run.device)
                version = policy_version(model, base)
                part, seed = slice(start, start + size), config.seed + TRAIN_SEED_OFFSET + batch
                groups = sample_rollouts(
                    model, tokenizer, problems[part], prompts[part], config, seed, f"train-{batch}", version
                )
                rollout_seconds += clock(lab_run.device) - started
            rollouts += groups
            valid = [group for group in groups if group.valid]
            lab_run.curve("rollout/reward", statistics.fmean(r for group in groups for r in group.rewards))
            lab_run.curve("rollout/valid_group_ratio", len(valid) / len(groups))
            with lab_run.stage("updates"):
                started = clock(lab_run.device)
                expected = policy_version(model, base)  # the policy about to be updated must be the one that sampled
                contract = check_contract([group.contract_record() for group in groups], expected, config.group_size)
                contracts.append({"rollouts": f"train-{batch}", **contract})
                if not valid:
                    skipped.append({"batch": batch, "reason": "no group with reward variance"})
                else:
                    for record in grpo_updates(model, tokenizer, optimizer, parameters, valid, config, lab_run):
                        updates.append({"batch": batch, **record})
                update_seconds += clock(lab_run.device) - started
            advance()
    return {
        "rollouts": rollouts,
        "contracts": contracts,
        "updates": updates,
        "skipped": skipped,
        "update_count": len(updates),
        "rollout_seconds": rollout_seconds,
        "update_seconds": update_seconds,
    }


def grpo_updates(model, tokenizer, optimizer, parameters, groups: list[Rollout], config, lab_run) -> list[dict]:
    """One clipped GRPO step per group (gpu_labs.grpo_step); old and reference log-probs are fixed before the first."""
    import torch

    from gpu_labs.grpo_step import Objective, update
    from gpu_labs.sequences import move_batch, token_log_probs

    device = next(model.parameters()).device
    batches = [move_batch(trajectory_batch(tokenizer, group), device) for group in groups]
    with torch.no_grad():
        olds = [token_log_probs(model, batch)[0] for batch in batches]  # (G, L - 1) each: the sampling policy
        refs = [None] * len(batches)
        if config.kl_beta > 0:
            with model.disable_adapter():
                refs = [token_log_probs(model, batch)[0] for batch in batches]  # the base model
    settings = Objective(config.clip_range, beta=config.kl_beta)
    records = []
    for group, batch, old, ref in zip(groups, batches, olds, refs, strict=True):
        rewards = torch.tensor(group.rewards, dtype=torch.float32, device=device)  # (G,)
        group_ids = torch.zeros_like(rewards, dtype=torch.long)  # (G,): one prompt group
        step = update(model, batch, old, rewards, group_ids, settings, optimizer, parameters, ref, config.grad_clip)
        record = {
            "prompt_id": group.prompt_id,
            "loss": float(step.loss),
            "group_reward": statistics.fmean(group.rewards),
            "nonzero_advantages": int((step.advantages != 0).sum()),
            "clip_fraction": step.clip_fraction,
            "kl": step.kl,
            "grad_norm": step.grad_norm,
        }
        for name in ("loss", "kl", "clip_fraction"):
            lab_run.curve(f"update/{name}", record[name])
        records.append(record)
    return records


def trajectory_batch(tokenizer, group: Rollout) -> dict:
    """The group's sampled token ids laid out as gpu_labs.sequences describes (no re-tokenization).

    A response that ended on its own keeps its end-of-text token, so stopping is learned too.
    """
    from gpu_labs.sequences import pad_batch, with_end

    responses = [
        with_end(response, capped, tokenizer.eos_token_id)
        for response, capped in zip(group.response_ids, group.hit_length_cap, strict=True)
    ]
    return pad_batch([group.prompt_ids] * len(responses), responses, tokenizer.pad_token_id)  # (G, L) each


def check_contract(records: list[dict], expected_version: str, group_size: int) -> dict:
    from reference.delivery_decisions import check_rollout_contract

    return check_rollout_contract(records, expected_version, VERIFIER_VERSION, group_size)


def per_second(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else 0.0
