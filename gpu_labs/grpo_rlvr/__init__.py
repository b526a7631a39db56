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

The package: this module (config, workload, the run), rollouts.py (inputs, sampling and scoring,
policy versions, the GRPO updates through gpu_labs.grpo_step) and delivery.py (contract, gates,
decision, adapter, rollouts.jsonl, manifest).
"""

import math
from dataclasses import dataclass, replace

from gpu_labs.config import ConfigError
from gpu_labs.data import WORD_PROBLEMS_HELDOUT, WORD_PROBLEMS_TRAIN
from gpu_labs.grpo_rlvr.delivery import (
    ADAPTER_DIR,
    ADAPTER_WEIGHTS,
    MANIFEST_FILE,
    MANIFEST_SCHEMA,
    ROLLOUTS_FILE,
    decide,
    deliver,
    gates,
)
from gpu_labs.grpo_rlvr.rollouts import (
    CORRECT_REWARD,
    TRAIN_SEED_OFFSET,
    VERIFIER_VERSION,
    LabDataError,
    Rollout,
    evaluate,
    summarise,
)
from gpu_labs.phrases import say

NAME = "grpo_rlvr"
TITLE = "GRPO / RLVR delivery: real rollouts, verifier rewards, held-out re-evaluation"
LESSON = "002 Step 5"

SYSTEM_PROMPT = "Solve the problem step by step. End with the final number alone inside <answer></answer>."
HELDOUT_CURVES = {"mean_reward": "heldout/reward: base→cand", "pass_at_group": "heldout/pass@group: base→cand"}
__all__ = [
    "ADAPTER_DIR",
    "ADAPTER_WEIGHTS",
    "CORRECT_REWARD",
    "MANIFEST_FILE",
    "MANIFEST_SCHEMA",
    "ROLLOUTS_FILE",
    "TRAIN_SEED_OFFSET",
    "VERIFIER_VERSION",
    "Config",
    "LabDataError",
    "Rollout",
    "decide",
    "evaluate",
    "gates",
    "run",
    "smoke",
    "summarise",
    "workload",
]


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
                raise ConfigError(say(f"{name} must be at least 1, got {value}", f"{name} 至少为 1，实际为 {value}"))
        if self.group_size < 2:
            got = self.group_size
            raise ConfigError(
                say(
                    f"group_size must be at least 2 (one response has no group to compare with), got {got}",
                    f"group_size 至少为 2（只有一个回答就没有组可供比较），实际为 {got}",
                )
            )
        positive = {"learning_rate": self.learning_rate, "temperature": self.temperature, "grad_clip": self.grad_clip}
        for name, value in positive.items():
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(
                    say(
                        f"{name} must be a finite number > 0, got {value!r}",
                        f"{name} 须为有限且大于 0 的数，实际为 `{value!r}`",
                    )
                )
        if not 0 < self.top_p <= 1:
            got = repr(self.top_p)
            raise ConfigError(say(f"top_p must be in (0, 1], got {got}", f"top_p 须在 (0, 1] 之内，实际为 `{got}`"))
        for name in ("clip_range", "kl_beta"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(
                    say(
                        f"{name} must be a finite number >= 0, got {value!r}",
                        f"{name} 须为有限且 >= 0 的数，实际为 `{value!r}`",
                    )
                )
        if not self.lora_targets:
            raise ConfigError(say("lora_targets needs at least one module name", "lora_targets 至少要有一个模块名"))


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


def run(config: Config, lab_run) -> tuple[dict, str]:
    """Inputs, baseline, GRPO training, candidate, delivery (see the module docstring)."""
    import torch

    from gpu_labs.grpo_rlvr.rollouts import base_identity, encode_prompts, load_inputs, policy_version, train_policy
    from gpu_labs.models import add_lora, default_dtype, load_model

    with lab_run.stage("inputs"):
        train, heldout = load_inputs(config, lab_run)
    dtype = default_dtype(lab_run.device)
    with lab_run.stage("load_model"), lab_run.progress(lab_run.say("loading", model=lab_run.model_spec), 1) as advance:
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
        return deliver(config, lab_run, model, training, baseline, candidate)
