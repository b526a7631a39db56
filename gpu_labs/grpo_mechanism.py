"""Lab grpo_mechanism (lesson 000, Step 5): verifier rewards -> group advantages -> a real policy moves.

    kata lab run grpo_mechanism --run-mode cpu_smoke            # tiny local model, seconds
    kata lab run grpo_mechanism --run-mode cpu_smoke --model smollm2
    kata lab run grpo_mechanism --run-mode real_gpu --label try1

Fixed candidate responses (no sampling noise) are scored by the deterministic verifier
`integer-answer-v1` (reference.verifier_reward.verify_integer_response: correctness and format
recorded separately, a response without an integer recorded as "unjudgeable" and given 0). For
each candidate set the same fresh model gets a LoRA adapter and a few clipped GRPO updates:

    r_i      = 1.0 * correct_i + 0.1 * format_i                    verifier reward     (B,)
    A_i      = (r_i - mean_g) / max(std_g, eps)                    reference.group_advantages
    L        = compute_grpo_loss(logp_new, logp_old, r, groups)    reference.grpo_loss, loss_type "grpo"
    shift_i  = mean_t logp_final[i, t] - mean_t logp_old[i, t]     length-normalised log-prob shift
    separation = mean(shift_i | A_i > 0) - mean(shift_i | A_i < 0)

The ratio is per token by default (logp (B, T) with the response mask: the grpo_loss kata's
objective, TRL's); `ratio_level="sequence"` feeds the length-normalised log-probs as (B, 1), one
ratio per response, as the lesson's notebook does. "old" is the policy before the first update
(the first forward pass, detached). Curves per update step and set: loss, clip fraction (share
of ratios outside [1 - clip, 1 + clip]), gradient norm (L2 over the adapter), separation.

Candidate sets (they change the group size *and* which edge cases are covered, so a difference
between them is not a group-size effect):
    minimal_pair    G = 2: one correct integer, one wrong integer per prompt
    expanded_group  G = 4: adds a correct answer in prose (format fails) and a wrong or unjudgeable one

Decision (the lesson's rule): accept_mechanism when every candidate set separates (> 0), passes
the zero-variance guard (all-equal rewards give all-zero advantages) and has reward spread
(> 0); otherwise tune. A run that raises is recorded as reject_until_fixed by the runner.
"""

import copy
import dataclasses
import gc
import json
import math
import statistics
from dataclasses import dataclass

from gpu_labs.config import ConfigError
from gpu_labs.decisions import ACCEPT_MECHANISM, TUNE
from gpu_labs.evidence import clock, text_sha256
from gpu_labs.grpo_step import RATIO_LEVELS, sequence_mean
from gpu_labs.phrases import listing, say

NAME = "grpo_mechanism"
TITLE = "Verifier rewards, group advantages and clipped LoRA updates on a real model"
LESSON = "000 Step 5"

WORKLOAD_ID = "pt-grpo-real-model-update"
WORKLOAD_VERSION = "v3"


@dataclass(frozen=True)
class Fixture:
    prompt: str
    expected_answer: int
    responses: tuple[str, ...]  # in order: correct integer, wrong integer, correct prose, wrong/unjudgeable


FIXTURES = (
    Fixture("Return only the integer result of 2 + 2.", 4, ("4", "5", "The answer is 4.", "I do not know.")),
    Fixture("Return only the integer result of 3 * 3.", 9, ("9", "6", "The answer is 9.", "10")),
)
CANDIDATE_SETS = {"minimal_pair": 2, "expanded_group": 4}  # name -> group size (first G responses of each fixture)


@dataclass(frozen=True)
class Config:
    """The lesson's frozen workload (v3). `ratio_level="sequence"` uses the lesson's sequence ratio instead."""

    candidate_sets: tuple[str, ...] = ("minimal_pair", "expanded_group")
    update_steps: int = 4
    learning_rate: float = 2e-4
    clip_range: float = 0.2
    max_length: int = 96
    lora_rank: int = 8
    lora_alpha: int = 16
    lora_targets: tuple[str, ...] = ("q_proj", "v_proj")
    ratio_level: str = "token"  # "token": per-token ratio (the grpo_loss kata); "sequence": one ratio per response
    chat_template: bool = True  # prompts through the model's chat template (False: the bare question and a newline)
    eps: float = 1e-6
    seed: int = 42

    def __post_init__(self):
        unknown = [name for name in self.candidate_sets if name not in CANDIDATE_SETS]
        if not self.candidate_sets or unknown or len(set(self.candidate_sets)) != len(self.candidate_sets):
            names = listing(CANDIDATE_SETS)
            raise ConfigError(
                say(
                    f"candidate_sets takes distinct names from {names}", f"candidate_sets 须为 {names} 中互不相同的名字"
                )
            )
        if self.ratio_level not in RATIO_LEVELS:
            levels, got = listing(RATIO_LEVELS), repr(self.ratio_level)
            raise ConfigError(
                say(f"ratio_level takes one of {levels}, got {got}", f"ratio_level 须为 {levels} 之一，实际为 `{got}`")
            )
        positive = {"update_steps": self.update_steps, "learning_rate": self.learning_rate, "eps": self.eps}
        positive |= {"lora_rank": self.lora_rank, "lora_alpha": self.lora_alpha}
        for name, value in positive.items():
            if not value > 0:
                raise ConfigError(say(f"{name} must be > 0, got {value!r}", f"{name} 须大于 0，实际为 `{value!r}`"))
        if not (math.isfinite(self.clip_range) and self.clip_range >= 0):
            got = repr(self.clip_range)
            raise ConfigError(
                say(
                    f"clip_range must be a finite number >= 0, got {got}",
                    f"clip_range 须为有限且 >= 0 的数，实际为 `{got}`",
                )
            )
        if self.max_length < 16:
            got = self.max_length
            raise ConfigError(say(f"max_length must be at least 16, got {got}", f"max_length 至少为 16，实际为 {got}"))


def smoke(config: Config) -> Config:
    """The same fixtures, sets and updates, with bare prompts: about a third of the tokens on SmolLM2.

    The fixtures are already the smallest workload (2 prompts, at most 8 short responses); what
    costs on a CPU is the chat template's system prompt, which triples every row's length.
    """
    return dataclasses.replace(config, chat_template=False)


def workload(config: Config) -> dict:
    fixtures = [
        json.dumps({"prompt": f.prompt, "answer": f.expected_answer, "responses": f.responses}) for f in FIXTURES
    ]
    return {
        "id": WORKLOAD_ID,
        "version": WORKLOAD_VERSION,
        "dataset": {
            "source": "embedded fixed candidate groups",
            "groups": len(FIXTURES),
            "sha256": text_sha256(fixtures),
        },
        "verifier": {
            "id": "integer-answer-v1",
            "correctness_weight": 1.0,
            "format_weight": 0.1,
            "failure_policy": "unjudgeable_receives_zero",
        },
        "candidate_sets": [{"name": name, "group_size": CANDIDATE_SETS[name]} for name in config.candidate_sets],
        "comparison_scope": "candidate_coverage_not_group_size_causality",
        "objective": f"reference.grpo_loss.compute_grpo_loss (loss_type=grpo, {config.ratio_level}-level ratio)",
        "advantages": "reference.group_advantages.compute_group_advantages (population std, eps floor)",
        "update_steps": config.update_steps,
        "prompt_format": "chat template" if config.chat_template else "bare question",
    }


def run(config: Config, lab_run) -> tuple[dict, str]:
    """Score the fixtures, then train a fresh LoRA copy of the model on each candidate set."""

    from gpu_labs.models import default_dtype, load_model

    dtype = default_dtype(lab_run.device)
    with lab_run.stage("load_model"), lab_run.progress(lab_run.say("loading", model=lab_run.model_spec), 1) as advance:
        loaded = load_model(lab_run.model_spec, "cpu", dtype, config.seed)  # each set copies it to the device
        advance()
    lab_run.extra["model"] = {**loaded.identity, "device": lab_run.device}
    sets = []
    for name in config.candidate_sets:
        with lab_run.stage(f"candidate_set_{name}"):
            sets.append(run_candidate_set(name, config, loaded, lab_run))
    best = max(sets, key=lambda item: item["policy_separation"])
    results = {
        "candidate_sets": sets,
        "highest_separation": {
            "candidate_set": best["candidate_set"],
            "policy_separation": best["policy_separation"],
            "interpretation": "diagnostic only, not a configuration choice",
        },
    }
    return results, decide(sets)


def decide(sets: list[dict]) -> str:
    """accept_mechanism when every set separates, passes the zero-variance guard and has reward spread."""
    passed = all(
        item["policy_separation"] > 0 and item["zero_variance_guard_passed"] and item["reward_std_mean"] > 0
        for item in sets
    )
    return ACCEPT_MECHANISM if passed else TUNE


def score_candidates(group_size: int) -> tuple[list[str], list[str], list[int], list[dict]]:
    """The first `group_size` responses of each fixture: questions, responses, group ids, verifier records."""
    from reference.verifier_reward import verify_integer_response

    questions, responses, group_ids, records = [], [], [], []
    for group_id, fixture in enumerate(FIXTURES):
        for response in fixture.responses[:group_size]:
            questions.append(fixture.prompt)
            responses.append(response)
            group_ids.append(group_id)
            records.append(
                {"group": group_id, "response": response, **verify_integer_response(response, fixture.expected_answer)}
            )
    return questions, responses, group_ids, records


def run_candidate_set(name: str, config: Config, loaded, lab_run) -> dict:
    """Fresh LoRA copy of the model, `update_steps` clipped GRPO updates on one candidate set; its evidence."""
    import torch

    from gpu_labs.grpo_step import Objective, update
    from gpu_labs.models import add_lora
    from gpu_labs.sequences import build_response_batch, chat_prompt, move_batch
    from reference.group_advantages import compute_group_advantages

    device = lab_run.device
    questions, responses, group_list, records = score_candidates(CANDIDATE_SETS[name])
    prompts = [
        chat_prompt(loaded.tokenizer, question) if config.chat_template else question + "\n" for question in questions
    ]
    batch = move_batch(build_response_batch(loaded.tokenizer, prompts, responses, config.max_length), device)
    rewards = torch.tensor([record["total_reward"] for record in records], device=device)  # (B,)
    group_ids = torch.tensor(group_list, device=device)  # (B,)
    advantages = compute_group_advantages(rewards, group_ids, eps=config.eps)  # (B,)
    collapsed = compute_group_advantages(torch.ones_like(rewards), group_ids, eps=config.eps)  # (B,)

    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    torch.manual_seed(config.seed)  # every candidate set starts from the same adapter
    fresh = copy.deepcopy(loaded.model).to(device)  # one model on the device at a time, as if loaded anew
    model = add_lora(fresh, config.lora_rank, config.lora_alpha, config.lora_targets)
    trainable = [parameter for parameter in model.parameters() if parameter.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=config.learning_rate)
    settings = Objective(config.clip_range, config.eps, ratio_level=config.ratio_level)
    losses, gradient_norms, clip_fractions, update_ms, separations = [], [], [], [], []
    old = old_sequence = None
    with lab_run.progress(lab_run.say("updates", name=name), config.update_steps) as advance:
        for _ in range(config.update_steps):
            started = clock(device)
            model.train()
            step = update(model, batch, old, rewards, group_ids, settings, optimizer, trainable)
            sequence = sequence_mean(step.new, step.mask)  # (B,)
            if old is None:  # the policy before any update is the sampling ("old") policy: a fixed snapshot
                old, old_sequence = step.new, sequence
            else:  # this forward pass saw the policy after the previous update
                separations.append(policy_separation(sequence - old_sequence, advantages))
            update_ms.append((clock(device) - started) * 1000)
            losses.append(float(step.loss))
            gradient_norms.append(step.grad_norm)
            clip_fractions.append(step.clip_fraction)
            advance()
    final_shift = _final_sequence(model, batch) - old_sequence  # (B,)
    separations.append(policy_separation(final_shift, advantages))
    curves = {
        "loss": losses,
        "clip_fraction": clip_fractions,
        "gradient_norm": gradient_norms,
        "separation": separations,
    }
    for metric, values in curves.items():
        for value in values:  # one point per update: separation k is measured after update k
            lab_run.curve(f"{name}/{metric}", value)
    for record, advantage, shift in zip(records, advantages.tolist(), final_shift.tolist()):
        record.update(advantage=advantage, log_prob_shift=shift)
    median_ms, p95_ms = median_and_p95(update_ms)
    result = {
        "candidate_set": name,
        "group_size": CANDIDATE_SETS[name],
        "responses": len(records),
        "correctness_pass_rate": statistics.fmean(record["correctness"] for record in records),
        "format_pass_rate": statistics.fmean(record["format_pass"] for record in records),
        "unjudgeable_count": sum(record["status"] == "unjudgeable" for record in records),
        "reward_std_mean": _reward_std_mean(rewards, group_ids),
        "nonzero_advantages": int(advantages.ne(0).sum()),
        "zero_variance_guard_passed": bool(collapsed.eq(0).all()),
        "policy_separation": separations[-1],
        "mean_clip_fraction": statistics.fmean(clip_fractions),
        "median_update_ms": median_ms,
        "p95_update_ms": p95_ms,
        "peak_allocated_bytes": torch.cuda.max_memory_allocated() if device == "cuda" else None,
        "trainable_parameters": sum(parameter.numel() for parameter in trainable),
        "truncated_responses": int(batch["truncated"].sum()),
        "losses": losses,
        "gradient_norms": gradient_norms,
        "clip_fractions": clip_fractions,
        "separations": separations,
        "verifier_records": records,
    }
    del optimizer, model, fresh
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()
    return result


def _final_sequence(model, batch: dict):
    """(B,) length-normalised response log-probs after the last update (eval mode, no gradient)."""
    import torch

    from gpu_labs.sequences import token_log_probs

    model.eval()
    with torch.no_grad():
        tokens, mask = token_log_probs(model, batch)  # (B, T) each
    model.train()
    return sequence_mean(tokens, mask)


def policy_separation(shifts, advantages) -> float:
    """mean log-prob shift of the positive-advantage responses minus that of the negative ones (NaN if a side is empty)."""
    positive, negative = shifts[advantages > 0], shifts[advantages < 0]
    if positive.numel() == 0 or negative.numel() == 0:
        return math.nan
    return float(positive.mean() - negative.mean())


def median_and_p95(values: list[float]) -> tuple[float, float]:
    """Median and 95th percentile (linear interpolation between the closest ranks)."""
    ordered = sorted(values)
    position = 0.95 * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    p95 = ordered[low] + (ordered[high] - ordered[low]) * (position - low)
    return statistics.median(ordered), p95


def _reward_std_mean(rewards, group_ids) -> float:
    """Mean over groups of the population std of the group's rewards."""
    import torch

    stds = [rewards[group_ids == group].std(unbiased=False) for group in group_ids.unique()]
    return float(torch.stack(stds).mean())
