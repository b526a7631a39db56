"""Lab grpo_rlvr (lesson 002, Step 5): real rollouts, verifier rewards, GRPO updates, held-out re-evaluation.

    kata lab run grpo_rlvr --run-mode cpu_smoke                  # tiny local model, seconds
    kata lab run grpo_rlvr --run-mode cpu_smoke --model smollm2  # the real model, small sizes
    kata lab run grpo_rlvr --run-mode real_gpu --label v1        # the frozen workload on CUDA

A GRPO / RLVR candidate is delivered, not just trained. The run:

 1. inputs      training and held-out prompts (GSM8K JSONL; the shipped files by default), each
                set's ids hashed (gpu_labs.data.ids_sha256); a shared question is a failure.
 2. baseline    G fresh samples per held-out prompt from the policy before any update (seeded).
 3. training    for each batch of `prompts_per_rollout` training prompts: sample G responses per
                prompt (group-contiguous), score them with the verifier, keep the groups whose
                rewards differ, then one clipped GRPO update per kept group (a group is a minibatch):

                    r_i   = reward_gsm8k(response_i, gold)           verifier "reward_gsm8k-v1"
                    valid = max_i r_i > min_i r_i                     zero-variance groups: no update
                    L     = compute_grpo_loss(logp_new, logp_old, r, group_ids, response_mask,
                                              clip_range, log_probs_ref, beta)   (reference.grpo_loss)
                    logp_old = the sampling policy (detached), logp_ref = the base model (adapter off)

 4. candidate   the same held-out prompts, same seeds, with the trained adapter.
 5. delivery    the rollout contract (reference.delivery_decisions.check_rollout_contract, per
                rollout batch), the candidate gates (evaluate_grpo_candidate on this run's
                results), the adapter and its sha256, and the three-way decision
                (decide_grpo_delivery): "reject", "tune" or "accept".

Held-out metrics per policy: mean reward, pass@group (the fraction of prompts with at least one
correct answer, reward >= 1.0), length-cap hit ratio, valid-group ratio and effective trajectories
per second (valid groups * G / seconds). The gates' truncation input is the worst hit ratio of the
training, baseline and candidate rollouts; their memory input is the peak CUDA allocation, or the
process's peak resident memory on a CPU run.

Curves (curves.png, sparklines): per rollout batch the training reward and valid-group ratio;
per update the loss, k3 KL to the base model and clip fraction; and two-point held-out series,
baseline then candidate, for mean reward and pass@group (the line's slope is the gain).
Files beside the evidence: adapter/ (peft), rollouts.jsonl (every trajectory with its identity
and reward) and manifest.json (files with bytes and sha256, model, data, config, decision).

No update, no candidate: when no training group has reward variance, nothing is learned, no
adapter is saved and the decision is "reject" (the lesson: generating is not updating). The
random tiny model of cpu_smoke earns no reward on the shipped word problems, so it takes this
path; on one-digit sums (train_path / heldout_path, as tests/test_lab_grpo_rlvr.py does) a random
byte is now and then the right digit, and the update path runs.
"""

import hashlib
import json
import math
import statistics
from dataclasses import dataclass, replace

from gpu_labs.config import ConfigError
from gpu_labs.data import WORD_PROBLEMS_HELDOUT, WORD_PROBLEMS_TRAIN
from gpu_labs.evidence import clock

NAME = "grpo_rlvr"
TITLE = "GRPO / RLVR delivery: real rollouts, verifier rewards, held-out re-evaluation"
LESSON = "002 Step 5"

VERIFIER_VERSION = "reward_gsm8k-v1"
CORRECT_REWARD = 1.0  # reward_gsm8k gives 1.0 for a correct answer, at most 0.2 for the format alone
ADAPTER_DIR = "adapter"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
MANIFEST_FILE = "manifest.json"
ROLLOUTS_FILE = "rollouts.jsonl"
MANIFEST_SCHEMA = "post-training-katas/grpo-rlvr-manifest/v1"
SYSTEM_PROMPT = "Solve the problem step by step. End with the final number alone inside <answer></answer>."
HELDOUT_CURVES = {"mean_reward": "heldout/reward: base→cand", "pass_at_group": "heldout/pass@group: base→cand"}
TRAIN_SEED_OFFSET = 1000  # training batch s samples with seed + 1000 + s; held-out chunk c with seed + c


class LabDataError(ValueError):
    """Training and held-out prompts that cannot give independent evidence (one line)."""


@dataclass(frozen=True)
class Config:
    """The lesson's frozen v7 workload (12 GB card: G = 8, 24 training and 12 held-out prompts, 384 tokens)."""

    train_path: str = str(WORD_PROBLEMS_TRAIN)
    heldout_path: str = str(WORD_PROBLEMS_HELDOUT)
    train_prompts: int = 24
    heldout_prompts: int = 12
    group_size: int = 8
    prompts_per_rollout: int = 4  # prompts sampled in one generate call; each valid group is then one update
    max_prompt_tokens: int = 192
    max_new_tokens: int = 384
    temperature: float = 1.0
    top_p: float = 1.0
    system_prompt: str = SYSTEM_PROMPT
    lora_rank: int = 8
    lora_alpha: int = 16
    lora_targets: tuple[str, ...] = ("q_proj", "v_proj")
    learning_rate: float = 1e-5
    clip_range: float = 0.2
    kl_beta: float = 0.02  # weight of the k3 penalty towards the base model (adapter disabled); 0 turns it off
    grad_clip: float = 1.0
    seed: int = 42
    # gates (inclusive), lesson 002 Step 5.1
    min_valid_group_ratio: float = 0.20
    min_update_count: int = 1
    min_effective_trajectories_per_second: float = 1.0
    min_reward_gain: float = 0.0
    min_pass_at_group_gain: float = 0.0
    max_length_hit_ratio: float = 0.50
    max_peak_allocated_bytes: int = 10 * 1024**3

    def __post_init__(self):
        counts = {
            "train_prompts": self.train_prompts,
            "heldout_prompts": self.heldout_prompts,
            "prompts_per_rollout": self.prompts_per_rollout,
            "max_prompt_tokens": self.max_prompt_tokens,
            "max_new_tokens": self.max_new_tokens,
            "lora_rank": self.lora_rank,
            "lora_alpha": self.lora_alpha,
        }
        for name, value in counts.items():
            if value < 1:
                raise ConfigError(f"{name} must be at least 1, got {value}")
        if self.group_size < 2:
            raise ConfigError(
                f"group_size must be at least 2 (one response has no group to compare with), got {self.group_size}"
            )
        positive = {"learning_rate": self.learning_rate, "temperature": self.temperature, "grad_clip": self.grad_clip}
        for name, value in positive.items():
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(f"{name} must be a finite number > 0, got {value!r}")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"top_p must be in (0, 1], got {self.top_p!r}")
        for name in ("clip_range", "kl_beta"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(f"{name} must be a finite number >= 0, got {value!r}")
        if not self.lora_targets:
            raise ConfigError("lora_targets needs at least one module name")


def smoke(config: Config) -> Config:
    """The same path at the smallest size: 4 + 4 prompts, G = 4, 2 rollout batches, 16 new tokens."""
    return replace(
        config,
        train_prompts=4,
        heldout_prompts=4,
        group_size=4,
        prompts_per_rollout=2,
        max_prompt_tokens=320,
        max_new_tokens=16,
    )


def gates(config: Config) -> dict:
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


def workload(config: Config) -> dict:
    batches = math.ceil(config.train_prompts / config.prompts_per_rollout)
    return {
        "train_data": config.train_path,
        "heldout_data": config.heldout_path,
        "train_prompts": config.train_prompts,
        "heldout_prompts": config.heldout_prompts,
        "group_size": config.group_size,
        "rollout_batches": batches,
        "train_trajectories": config.train_prompts * config.group_size,
        "heldout_trajectories": 2 * config.heldout_prompts * config.group_size,  # baseline + candidate
        "max_updates": config.train_prompts,  # one per valid group
        "max_new_tokens": config.max_new_tokens,
        "verifier": VERIFIER_VERSION,
        "objective": "reference.grpo_loss.compute_grpo_loss (token-level clipped surrogate + k3 KL to the base model)",
        "decision": "reference.delivery_decisions.decide_grpo_delivery (reject / tune / accept)",
        "gates": gates(config),
    }


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


def run(config: Config, lab_run) -> tuple[dict, str]:
    """Inputs, baseline, GRPO training, candidate, delivery (see the module docstring)."""
    import torch

    from gpu_labs.models import add_lora, default_dtype, load_model

    with lab_run.stage("inputs"):
        train, heldout = load_inputs(config, lab_run)
    dtype = default_dtype(lab_run.device)
    with lab_run.stage("load_model"), lab_run.progress(f"loading {lab_run.model_spec}", 1) as advance:
        loaded = load_model(lab_run.model_spec, lab_run.device, dtype, config.seed)
        lab_run.extra["model"] = loaded.identity
        torch.manual_seed(config.seed)  # the adapter's initial weights
        model = add_lora(loaded.model, config.lora_rank, config.lora_alpha, config.lora_targets)
        advance()
    tokenizer, base = loaded.tokenizer, base_identity(loaded.identity)
    with lab_run.stage("prompts"):
        train_prompts = encode_prompts(tokenizer, train, config)
        heldout_prompts = encode_prompts(tokenizer, heldout, config)
    source_version = policy_version(model, base)
    with lab_run.stage("baseline_rollouts"):
        baseline = evaluate(model, tokenizer, heldout, heldout_prompts, config, "baseline", source_version, lab_run)
    training = train_policy(model, tokenizer, train, train_prompts, config, base, lab_run)
    candidate_version = policy_version(model, base)
    with lab_run.stage("candidate_rollouts"):
        candidate = evaluate(
            model, tokenizer, heldout, heldout_prompts, config, "candidate", candidate_version, lab_run
        )
    for metric, curve in HELDOUT_CURVES.items():  # two points each: x = 1 baseline, x = 2 candidate
        lab_run.curve(curve, baseline["summary"][metric])
        lab_run.curve(curve, candidate["summary"][metric])
    with lab_run.stage("delivery"):
        results = deliver(config, lab_run, model, training, baseline, candidate)
    return results, results["delivery"]["decision"]


def deliver(config: Config, lab_run, model, training: dict, baseline: dict, candidate: dict) -> dict:
    """Adapter, results, rollout contract, gates and decision, rollouts.jsonl and manifest.json."""
    from gpu_labs.evidence import write_json_atomic

    source, final = baseline["version"], candidate["version"]
    artifact = save_adapter(model, lab_run.out_dir, source, final) if training["update_count"] else {}
    results = delivery_results(config, training, baseline["summary"], candidate["summary"], artifact)
    results["rollout_contract"] = rollout_contract(training, baseline, candidate, config.group_size)
    results["policy"] = {"source_version": source, "candidate_version": final, "changed": final != source}
    decide(results)
    everything = training["rollouts"] + baseline["rollouts"] + candidate["rollouts"]
    write_rollouts(lab_run.out_dir / ROLLOUTS_FILE, everything)
    write_json_atomic(lab_run.out_dir / MANIFEST_FILE, build_manifest(config, lab_run, results))
    lab_run.extra["artifacts"] = {
        "manifest": MANIFEST_FILE,
        "rollouts": ROLLOUTS_FILE,
        **({"adapter": ADAPTER_DIR, "adapter_weights": f"{ADAPTER_DIR}/{ADAPTER_WEIGHTS}"} if artifact else {}),
    }
    return results


def load_inputs(config: Config, lab_run) -> tuple[list, list]:
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


def encode_prompts(tokenizer, problems, config: Config) -> list[str]:
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


def sample_rollouts(
    model, tokenizer, problems, prompts, config: Config, seed: int, split: str, version: str
) -> list[Rollout]:
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


def evaluate(model, tokenizer, problems, prompts, config: Config, split: str, version: str, lab_run) -> dict:
    """Fresh held-out rollouts in chunks of prompts_per_rollout (chunk c seeded seed + c): rollouts and summary."""
    size = config.prompts_per_rollout
    starts = range(0, len(problems), size)
    rollouts, started = [], clock(lab_run.device)
    with lab_run.progress(f"{split} rollouts on held-out prompts", len(starts)) as advance:
        for chunk, start in enumerate(starts):
            part = slice(start, start + size)
            seed = config.seed + chunk
            rollouts += sample_rollouts(model, tokenizer, problems[part], prompts[part], config, seed, split, version)
            advance()
    seconds = clock(lab_run.device) - started
    return {"version": version, "rollouts": rollouts, "summary": summarize(rollouts, seconds)}


def summarize(rollouts: list[Rollout], seconds: float) -> dict:
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
        "trajectories_per_second": _per_second(len(rewards), seconds),
        "effective_trajectories_per_second": _per_second(valid * group_size, seconds),
        "per_prompt_reward": [statistics.fmean(rollout.rewards) for rollout in rollouts],
    }


def train_policy(model, tokenizer, problems, prompts, config: Config, base: str, lab_run) -> dict:
    """Rollout batches on the training prompts; one GRPO update per group with reward variance."""
    import torch

    parameters = [parameter for parameter in model.parameters() if parameter.requires_grad]
    optimizer = torch.optim.AdamW(parameters, lr=config.learning_rate)
    size = config.prompts_per_rollout
    starts = range(0, len(problems), size)
    rollouts, contracts, updates, skipped = [], [], [], []
    rollout_seconds = update_seconds = 0.0
    with lab_run.progress("GRPO rollouts and updates", len(starts)) as advance:
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


def grpo_updates(model, tokenizer, optimizer, parameters, groups: list[Rollout], config: Config, lab_run) -> list[dict]:
    """One clipped GRPO step per group; old and reference log-probs are fixed before the first step."""
    import torch

    from gpu_labs.sequences import move_batch, token_log_probs
    from reference.grpo_loss import compute_grpo_loss
    from reference.kl_estimators import k3_kl, masked_mean

    device = next(model.parameters()).device
    batches = [move_batch(trajectory_batch(tokenizer, group), device) for group in groups]
    with torch.no_grad():
        olds = [token_log_probs(model, batch)[0] for batch in batches]  # (G, L - 1) each: the sampling policy
        refs = [None] * len(batches)
        if config.kl_beta > 0:
            with model.disable_adapter():
                refs = [token_log_probs(model, batch)[0] for batch in batches]  # the base model
    records = []
    for group, batch, old, ref in zip(groups, batches, olds, refs, strict=True):
        new, mask = token_log_probs(model, batch)  # (G, L - 1) each
        valid = mask.bool()  # (G, L - 1)
        rewards = torch.tensor(group.rewards, dtype=torch.float32, device=device)  # (G,)
        group_ids = torch.zeros_like(rewards, dtype=torch.long)  # (G,): one prompt group
        loss, advantages = compute_grpo_loss(
            new, old, rewards, group_ids, valid, clip_range=config.clip_range, log_probs_ref=ref, beta=config.kl_beta
        )
        optimizer.zero_grad()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(parameters, config.grad_clip)
        optimizer.step()
        ratio = torch.exp(new.detach() - old)  # (G, L - 1)
        record = {
            "prompt_id": group.prompt_id,
            "loss": float(loss.detach()),
            "group_reward": statistics.fmean(group.rewards),
            "nonzero_advantages": int((advantages != 0).sum()),
            "clip_fraction": float(masked_mean(((ratio - 1).abs() > config.clip_range).float(), valid)),
            "kl": float(masked_mean(k3_kl(new.detach(), ref), valid)) if ref is not None else None,
            "grad_norm": float(grad_norm),
        }
        for name in ("loss", "kl", "clip_fraction"):
            lab_run.curve(f"update/{name}", record[name])
        records.append(record)
    return records


def trajectory_batch(tokenizer, group: Rollout) -> dict:
    """The group's sampled token ids laid out as gpu_labs.sequences describes (no re-tokenization).

    A response that ended on its own keeps its end-of-text token, so stopping is learned too.
    """
    import torch

    rows, masks = [], []
    for response, capped in zip(group.response_ids, group.hit_length_cap, strict=True):
        response = response + ([] if capped else [tokenizer.eos_token_id])
        rows.append(group.prompt_ids + response)
        masks.append([0] * len(group.prompt_ids) + [1] * len(response))
    width = max(len(row) for row in rows)
    pad = tokenizer.pad_token_id
    return {
        "input_ids": torch.tensor([row + [pad] * (width - len(row)) for row in rows]),  # (G, L)
        "attention_mask": torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in rows]),  # (G, L)
        "response_mask": torch.tensor([mask + [0] * (width - len(mask)) for mask in masks]),  # (G, L)
    }


def check_contract(records: list[dict], expected_version: str, group_size: int) -> dict:
    from reference.delivery_decisions import check_rollout_contract

    return check_rollout_contract(records, expected_version, VERIFIER_VERSION, group_size)


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


def delivery_results(config: Config, training: dict, baseline: dict, candidate: dict, artifact: dict) -> dict:
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
            "effective_trajectories_per_second": _per_second(
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


def decide(results: dict) -> None:
    """Gate the candidate and decide with the delivery_decisions reference; both go into `results`."""
    from reference.delivery_decisions import decide_grpo_delivery, evaluate_grpo_candidate

    results["candidate_gates"] = evaluate_grpo_candidate(results, results["gates"])
    results["delivery"] = decide_grpo_delivery(
        results["rollout_contract"], results["candidate_gates"], results["artifact"]
    )


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


def build_manifest(config: Config, lab_run, results: dict) -> dict:
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
        "lab": NAME,
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


def _per_second(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else 0.0
