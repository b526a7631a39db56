"""TRL's own code as a grading oracle: the reference functions' signatures, TRL 1.16.0's numbers.

    compute_grpo_loss  GRPOTrainer._compute_loss (loss_type grpo / bnpo / dr_grpo, token-level
                       ratio, two-sided clip at epsilon, k3 KL with beta and no bias correction)
    dpo_loss           DPOTrainer._compute_loss (loss_type sigmoid / hinge / ipo)
    kto_loss           KTOTrainer._compute_loss (loss_type kto; z_0 as the trainer logs it)
    combine_rewards    GRPOTrainer._calculate_rewards (None -> NaN, one column per function) and
                       the weighted nansum of GRPOTrainer._generate_and_score_completions
    response_log_probs trl.trainer.utils.selective_log_softmax on logits[:, :-1] and input_ids[:, 1:]
    token_entropy      trl.trainer.utils.entropy_from_logits
    dapo_loss          GRPOTrainer._compute_loss with loss_type "dapo" and epsilon_high (sum over
                       the valid tokens / num_items_in_batch: here the valid tokens of the batch)
    gspo_loss          GRPOTrainer._compute_loss with importance_sampling_level "sequence" and
                       loss_type "grpo" (one clipped ratio per response, the mean over responses)
    simpo_loss         trl.experimental.cpo's CPOTrainer.cpo_loss with loss_type "simpo", averaged
                       (label_smoothing 0, alpha 0, and cpo_alpha 0: no NLL term)
    orpo_loss          trl.experimental.orpo's ORPOTrainer.odds_ratio_loss, then
                       `policy_nll_loss - losses.mean()` (TRL computes in float32)
    collate            trl.trainer.sft_trainer.DataCollatorForLanguageModeling(pad_token_id,
                       padding_free), TRL's defaults for its other options
    pack_bfd           trl.pack_dataset(Dataset.from_list(examples), seq_length, strategy="bfd"),
                       its rows as a list of dicts
    generalized_jsd_loss  trl.experimental.gkd's GKDTrainer.generalized_jsd_loss, a static method
                       called as it is (no trainer needed)

How, without a model: a trainer is built with `object.__new__` (its __init__ never runs, so no
model, config or accelerator is made) and given exactly the attributes its loss method reads.
The policy's forward is a stub that returns the caller's log-probs, so gradients flow back to
them. TRL computes the old, reference and DPO reference log-probs under no_grad: they are
passed detached. Eval mode, so no gradient-accumulation scaling.

What stays the reference's: the input contract (each function first calls the reference, which
raises ValueError on bad input) and the group advantages, which TRL's loss takes as an input
(the kata's convention, population std clamped at eps, is not TRL's sample std + 1e-4).

Every TRL failure that means its internals moved (an attribute it now reads, a method gone, a
line no longer in its source) becomes one TrlUnavailable naming the pinned version.
"""

import functools
import importlib
import inspect
import logging
import types
import warnings
from collections import defaultdict

import torch

from grader.oracles.against import TRL_FUNCTIONS, TRL_PIP, TRL_VERSION, TrlUnavailable, trl_problem
from reference import dapo_gspo as dapo_gspo_reference
from reference import distillation as distillation_reference
from reference import dpo_loss as dpo_reference
from reference import grpo_loss as grpo_reference
from reference import kto_loss as kto_reference
from reference import preference_free as free_reference
from reference import sft_data as sft_data_reference
from reference import token_logprobs as logprobs_reference
from reference import verifier_reward as reward_reference

# GRPOTrainer._generate_and_score_completions combines the reward columns with these lines
# (trl 1.16.0); combine_rewards runs the same statements after checking they are still there.
COMBINE_LINES = (
    "unscorable_mask = torch.isnan(rewards_per_func).all(dim=1)",
    "rewards = (rewards_per_func * self.reward_weights.to(device).unsqueeze(0)).nansum(dim=1)",
    "rewards[unscorable_mask] = torch.nan",
)


@functools.cache
def trl():
    """The `trl` module, after checking that it is the pinned version."""
    problem = trl_problem()
    if problem:
        raise TrlUnavailable(problem)
    import trl as module
    from accelerate import PartialState

    PartialState(cpu=True)  # TRL logs through accelerate, which needs its (single-process) state
    return module


def internals_changed(where: str, error: Exception) -> TrlUnavailable:
    return TrlUnavailable(
        f"TRL's {where} no longer works as trl {TRL_VERSION} did ({type(error).__name__}: {error});"
        f" the oracle is written for that version: {TRL_PIP}"
    )


def run_trl(where: str, method, *args, **kwargs):
    """Call a TRL method on a bare trainer; a missing attribute or key means TRL changed."""
    try:
        return method(*args, **kwargs)
    except (AttributeError, KeyError, TypeError) as error:
        raise internals_changed(where, error) from None


class _Accelerator:
    """Single process on the CPU: every reduction and gather is the identity."""

    num_processes = 1
    process_index = 0
    is_main_process = True
    sync_gradients = True
    device = torch.device("cpu")

    @staticmethod
    def reduce(value, reduction="sum"):
        return value

    @staticmethod
    def gather(value):
        return value

    gather_for_metrics = gather


def bare_trainer(name: str, **attributes):
    """An instance of trl.<name> whose __init__ never ran, carrying only `attributes`."""
    try:
        cls = getattr(trl(), name)
    except AttributeError as error:
        raise internals_changed(name, error) from None
    trainer = object.__new__(cls)
    trainer.__dict__.update(
        model=types.SimpleNamespace(training=False),  # eval mode: no accumulation scaling
        accelerator=_Accelerator(),
        aux_loss_enabled=False,
        _metrics={"train": defaultdict(list), "eval": defaultdict(list)},
        **attributes,
    )
    return trainer


def compute_grpo_loss(
    log_probs_new,
    log_probs_old,
    rewards,
    group_ids,
    response_mask=None,
    clip_range=0.2,
    eps=1e-6,
    log_probs_ref=None,
    beta=0.0,
    loss_type="grpo",
):
    """(loss, advantages) as reference.grpo_loss.compute_grpo_loss, the loss from GRPOTrainer._compute_loss."""
    with torch.no_grad():  # the input contract, and the advantages TRL receives as an input
        _, advantages = grpo_reference.compute_grpo_loss(
            log_probs_new,
            log_probs_old,
            rewards,
            group_ids,
            response_mask,
            clip_range,
            eps,
            log_probs_ref,
            beta,
            loss_type,
        )
    mask = torch.ones_like(log_probs_new, dtype=torch.bool) if response_mask is None else response_mask  # (B, T)
    loss = trl_grpo_loss(log_probs_new, log_probs_old, advantages, mask, clip_range, log_probs_ref, beta, loss_type)
    return loss, advantages


def trl_grpo_loss(
    log_probs_new, log_probs_old, advantages, response_mask, clip_range, log_probs_ref, beta, loss_type, **settings
):
    """GRPOTrainer._compute_loss on given log-probs (B, T), advantages (B,) and a bool mask (B, T).

    The KL term is on when log_probs_ref is given and beta > 0, as in compute_grpo_loss.
    `settings` replace the trainer's attributes (epsilon_high, importance_sampling_level).
    """
    batch, width = log_probs_new.shape
    with_kl = log_probs_ref is not None and float(beta) > 0
    trainer = bare_trainer(
        "GRPOTrainer",
        _get_per_token_logps_and_entropies=lambda *_, **__: (log_probs_new, torch.zeros_like(log_probs_new), None),
        args=types.SimpleNamespace(use_bias_correction_kl=False, delta=None),
        loss_type=loss_type,
        beta=float(beta) if with_kl else 0.0,
        epsilon_low=float(clip_range),
        epsilon_high=float(clip_range),
        importance_sampling_level="token",
        max_completion_length=width,  # dr_grpo's divisor is B * max_completion_length
        top_entropy_quantile=1.0,
        off_policy_mask_threshold=None,
        use_vllm=False,
        vllm_importance_sampling_correction=False,
        current_gradient_accumulation_steps=1,
        _entropy_bonus_enabled=False,
    )
    trainer.__dict__.update(settings)
    inputs = {
        "prompt_ids": torch.zeros(batch, 1, dtype=torch.long),
        "prompt_mask": torch.ones(batch, 1, dtype=torch.long),
        "completion_ids": torch.zeros(batch, width, dtype=torch.long),
        "completion_mask": response_mask.long(),  # (B, T) as a tokenizer's mask
        "advantages": advantages,  # (B,)
        "old_per_token_logps": log_probs_old.detach(),  # (B, T)
        "num_items_in_batch": response_mask.sum(),  # "dapo"'s divisor: the batch's valid tokens, one process
    }
    if with_kl:
        inputs["ref_per_token_logps"] = log_probs_ref.detach()  # (B, T)
    return run_trl("GRPOTrainer._compute_loss", trainer.__class__._compute_loss, trainer, None, inputs)


def dapo_loss(log_probs_new, log_probs_old, advantages, response_mask, epsilon_low=0.2, epsilon_high=0.28):
    """As reference.dapo_gspo.dapo_loss: GRPOTrainer._compute_loss, loss_type "dapo", two epsilons."""
    args = (log_probs_new, log_probs_old, advantages, response_mask, epsilon_low, epsilon_high)
    return _two_epsilon_loss(dapo_gspo_reference.dapo_loss, args, "dapo")


def gspo_loss(log_probs_new, log_probs_old, advantages, response_mask, epsilon_low=3e-4, epsilon_high=4e-4):
    """As reference.dapo_gspo.gspo_loss: GRPOTrainer._compute_loss, importance_sampling_level "sequence"."""
    args = (log_probs_new, log_probs_old, advantages, response_mask, epsilon_low, epsilon_high)
    return _two_epsilon_loss(dapo_gspo_reference.gspo_loss, args, "grpo", importance_sampling_level="sequence")


def _two_epsilon_loss(reference_fn, args: tuple, loss_type: str, **settings):
    """`reference_fn`'s input contract on `args` (log-probs new and old, advantages, mask, epsilon_low,
    epsilon_high), then GRPOTrainer._compute_loss with those epsilons and no KL term."""
    log_probs_new, log_probs_old, advantages, response_mask, epsilon_low, epsilon_high = args
    with torch.no_grad():  # the input contract
        reference_fn(*args)
    return trl_grpo_loss(
        log_probs_new,
        log_probs_old,
        advantages.detach(),
        response_mask,
        epsilon_low,
        None,
        0.0,
        loss_type,
        epsilon_high=float(epsilon_high),
        **settings,
    )


def dpo_loss(
    policy_chosen_logp, policy_rejected_logp, ref_chosen_logp, ref_rejected_logp, beta=0.1, loss_type="sigmoid"
):
    """As reference.dpo_loss.dpo_loss, computed by DPOTrainer._compute_loss (see trl_dpo_loss).

    Each response's sequence log-prob is presented as a one-token completion, so TRL's sum over
    tokens is that value and IPO's per-token average divides it by 1.
    """
    with torch.no_grad():  # the input contract
        dpo_reference.dpo_loss(
            policy_chosen_logp, policy_rejected_logp, ref_chosen_logp, ref_rejected_logp, beta, loss_type
        )
    token_log_probs = torch.cat([policy_chosen_logp, policy_rejected_logp]).unsqueeze(-1)  # (2B, 1)
    completion_mask = torch.tensor([[0, 1]]).repeat(token_log_probs.shape[0], 1)  # (2B, 2): prompt, completion
    return trl_dpo_loss(token_log_probs, completion_mask, ref_chosen_logp, ref_rejected_logp, beta, loss_type)


def trl_dpo_loss(token_log_probs, completion_mask, ref_chosen_logp, ref_rejected_logp, beta, loss_type):
    """DPOTrainer._compute_loss on per-token policy log-probs and precomputed reference log-probs.

    Args:
        token_log_probs: (2B, T) log-probs of each completion token, the B chosen rows first, 0 on padding.
        completion_mask: (2B, T + 1) 1 on the completion tokens of input_ids (which start with one prompt token).
        ref_chosen_logp, ref_rejected_logp: (B,) sequence log-probs under the reference (made constants).
        beta, loss_type: as in dpo_loss.
    """

    def policy(**_):
        zeros = torch.zeros_like(token_log_probs)
        return types.SimpleNamespace(log_probs=token_log_probs, entropy=zeros, mean_logits=zeros, is_top1=zeros.bool())

    trainer = bare_trainer(
        "DPOTrainer",
        beta=float(beta),
        loss_types=[loss_type],
        loss_weights=[1.0],
        f_divergence_type="reverse_kl",
        label_smoothing=0.0,
        ld_alpha=None,
        precompute_ref_logps=True,
        use_weighting=False,
        _total_train_tokens=0,
    )
    inputs = {
        "input_ids": torch.zeros_like(completion_mask, dtype=torch.long),  # (2B, T + 1)
        "attention_mask": torch.ones_like(completion_mask, dtype=torch.long),
        "completion_mask": completion_mask,
        "ref_chosen_logps": ref_chosen_logp.detach(),  # (B,)
        "ref_rejected_logps": ref_rejected_logp.detach(),  # (B,)
    }
    return run_trl("DPOTrainer._compute_loss", trainer.__class__._compute_loss, trainer, policy, inputs, False)


def kto_loss(
    policy_logps,
    ref_logps,
    desirable,
    policy_kl_logps,
    ref_kl_logps,
    beta=0.1,
    desirable_weight=1.0,
    undesirable_weight=1.0,
):
    """(loss, kl) as reference.kto_loss.kto_loss, both from KTOTrainer._compute_loss (see trl_kto_loss)."""
    args = (policy_logps, ref_logps, desirable, policy_kl_logps, ref_kl_logps)
    with torch.no_grad():  # the input contract
        kto_reference.kto_loss(*args, beta, desirable_weight, undesirable_weight)
    return trl_kto_loss(*args, beta, desirable_weight, undesirable_weight)


def trl_kto_loss(
    policy_logps, ref_logps, desirable, policy_kl_logps, ref_kl_logps, beta, desirable_weight, undesirable_weight
):
    """KTOTrainer._compute_loss (loss_type "kto") on sequence log-probs and precomputed reference ones.

    Each sequence log-prob is presented as a one-token completion (input_ids of width 2: a prompt
    token, then the completion token), the mismatched KL pairs likewise with width 3 (a prompt
    token, the completion token and a 0 log-prob): the stub policy tells the two forwards apart
    by that width. TRL runs the KL forward under no_grad, so z_0 gets no gradient, as in the kata.
    Returns TRL's loss and the z_0 it logs (`_metrics["eval"]["kl"]`), in the inputs' dtype.
    """
    batch, kl_batch = policy_logps.shape[0], policy_kl_logps.shape[0]
    kl_tokens = torch.stack([policy_kl_logps, torch.zeros_like(policy_kl_logps)], -1)  # (K, 2)

    def policy(input_ids, **_):
        log_probs = kl_tokens if input_ids.shape[1] == 3 else policy_logps.unsqueeze(-1)  # (K, 2) or (B, 1)
        zeros = torch.zeros_like(log_probs)
        return types.SimpleNamespace(log_probs=log_probs, entropy=zeros, mean_logits=zeros)

    trainer = bare_trainer(
        "KTOTrainer",
        beta=float(beta),
        loss_type="kto",
        desirable_weight=float(desirable_weight),
        undesirable_weight=float(undesirable_weight),
        calculate_KL=True,
        precompute_ref_logps=True,
        _total_train_tokens=0,
    )
    inputs = {
        "input_ids": torch.zeros(batch, 2, dtype=torch.long),
        "attention_mask": torch.ones(batch, 2, dtype=torch.long),
        "completion_mask": torch.tensor([[0, 1]]).repeat(batch, 1),  # (B, 2): prompt, completion
        "KL_input_ids": torch.zeros(kl_batch, 3, dtype=torch.long),
        "KL_attention_mask": torch.ones(kl_batch, 3, dtype=torch.long),
        "KL_completion_mask": torch.tensor([[0, 1, 1]]).repeat(kl_batch, 1),  # (K, 3)
        "label": desirable,  # (B,) bool
        "ref_logps": ref_logps.detach(),  # (B,)
        "ref_KL_logps": ref_kl_logps.detach(),  # (K,)
    }
    loss = run_trl("KTOTrainer._compute_loss", trainer.__class__._compute_loss, trainer, policy, inputs, False)
    logged = trainer._metrics["eval"]["kl"]
    if not logged:
        raise internals_changed("KTOTrainer._compute_loss", LookupError("no longer logs the metric 'kl'"))
    kl = torch.tensor(logged[-1], dtype=policy_logps.dtype)  # () TRL's z_0, as it logs it
    return loss, kl


def combine_rewards(scores, weights):
    """As reference.verifier_reward.combine_rewards: TRL's reward table, then TRL's combination lines."""
    reward_reference.combine_rewards(scores, weights)  # the input contract
    rewards_per_func = reward_table(scores)  # (N, F), None -> NaN
    reward_weights = torch.as_tensor(weights, dtype=torch.float32)  # (F,) as GRPOTrainer.__init__ makes it
    _check_combine_lines(trl().GRPOTrainer)
    # the lines of GRPOTrainer._generate_and_score_completions (COMBINE_LINES), with self -> trainer
    device = rewards_per_func.device
    unscorable_mask = torch.isnan(rewards_per_func).all(dim=1)  # (N,)
    rewards = (rewards_per_func * reward_weights.to(device).unsqueeze(0)).nansum(dim=1)  # (N,)
    rewards[unscorable_mask] = torch.nan
    return rewards


def response_log_probs(logits, input_ids, response_mask):
    """As reference.token_logprobs.response_log_probs, the log-probs from TRL's selective_log_softmax.

    The kata's contract stays the reference's: masked positions are exactly 0 and send no gradient
    back, whatever their logits hold, so their logits are zeroed before TRL sees them (TRL's GRPO
    never computes them: its fused head leaves them at 0)."""
    logprobs_reference.response_log_probs(logits, input_ids, response_mask)  # the input contract
    kept = response_mask[:, 1:]  # (B, T-1) the scored token's mask
    scoring = torch.where(kept.unsqueeze(-1), logits[:, :-1], torch.zeros((), dtype=logits.dtype))  # (B, T-1, V)
    selective = _trl_utils().selective_log_softmax
    return torch.where(kept, selective(scoring, input_ids[:, 1:]), torch.zeros((), dtype=logits.dtype))


def token_entropy(logits):
    """As reference.token_logprobs.token_entropy, from TRL's entropy_from_logits."""
    logprobs_reference.token_entropy(logits)  # the input contract
    return _trl_utils().entropy_from_logits(logits)


def _trl_utils() -> types.ModuleType:
    """trl.trainer.utils, after checking that TRL is the pinned version."""
    trl()
    import trl.trainer.utils as utils

    return utils


def reward_table(scores):
    """GRPOTrainer._calculate_rewards on F reward functions that return the given columns: (N, F) float32."""
    responses = len(scores[0])
    trainer = bare_trainer(
        "GRPOTrainer",
        reward_funcs=[_reward_function(column) for column in scores],
        reward_processing_classes=[None] * len(scores),
        reward_func_names=[f"reward_{index}" for index in range(len(scores))],
        args=types.SimpleNamespace(report_to=[]),
        state=types.SimpleNamespace(global_step=0),
        environments=None,
        _log_completion_extra=lambda *_, **__: None,
        _log_metric=lambda *_, **__: None,
    )
    examples = [{"prompt": "", "completion": ""}] * responses
    with _quiet("trl.trainer.grpo_trainer"):  # TRL warns about all-None rows
        return run_trl(
            "GRPOTrainer._calculate_rewards",
            trainer.__class__._calculate_rewards,
            trainer,
            examples,
            [""] * responses,
            [""] * responses,
            [[0]] * responses,
        )


def _reward_function(column):
    def reward(prompts, completions, **_):
        return list(column)

    return reward


@functools.cache
def _check_combine_lines(cls) -> None:
    source = inspect.getsource(cls._generate_and_score_completions)
    missing = [line for line in COMBINE_LINES if line not in source]
    if missing:
        raise internals_changed(
            "GRPOTrainer._generate_and_score_completions", LookupError(f"no longer contains {missing[0]!r}")
        )


class _quiet:
    """Silence one logger for a block (TRL's expected warnings are not the learner's output)."""

    def __init__(self, name: str):
        self.logger = logging.getLogger(name)

    def __enter__(self):
        self.level = self.logger.level
        self.logger.setLevel(logging.ERROR)

    def __exit__(self, *_):
        self.logger.setLevel(self.level)


# The lines that turn TRL's per-pair losses into the loss (get_batch_loss_metrics, trl 1.16.0):
# simpo_loss and orpo_loss run them after checking that they are still there.
CPO_LOSS_LINE = "loss = losses.mean() + self.cpo_alpha * policy_nll_loss"  # cpo_alpha = 0: losses.mean()
ORPO_LOSS_LINE = "loss = policy_nll_loss - losses.mean()"


def experimental_trainer(module: str, name: str, **attributes):
    """bare_trainer for trl.experimental.<module>.<name> (TRL 1.16.0 keeps CPO and ORPO there)."""
    trl()
    try:
        with warnings.catch_warnings():  # the notice that trl.experimental is unstable: the pin covers it
            warnings.simplefilter("ignore")
            cls = getattr(importlib.import_module(f"trl.experimental.{module}"), name)
    except (ImportError, AttributeError) as error:
        raise internals_changed(f"trl.experimental.{module}.{name}", error) from None
    trainer = object.__new__(cls)
    trainer.__dict__.update(accelerator=_Accelerator(), **attributes)
    return trainer


def simpo_loss(chosen_avg_logps, rejected_avg_logps, beta=2.0, gamma=0.5):
    """As reference.preference_free.simpo_loss: CPOTrainer.cpo_loss with loss_type "simpo", averaged."""
    with torch.no_grad():  # the input contract
        free_reference.simpo_loss(chosen_avg_logps, rejected_avg_logps, beta, gamma)
    trainer = experimental_trainer(
        "cpo",
        "CPOTrainer",
        beta=float(beta),
        simpo_gamma=float(gamma),
        loss_type="simpo",
        label_smoothing=0.0,
        alpha=0.0,
    )
    _check_source_line(type(trainer), "get_batch_loss_metrics", CPO_LOSS_LINE)
    losses, _, _ = run_trl("CPOTrainer.cpo_loss", type(trainer).cpo_loss, trainer, chosen_avg_logps, rejected_avg_logps)
    return losses.mean()  # () CPO_LOSS_LINE with cpo_alpha = 0


def orpo_loss(chosen_avg_logps, rejected_avg_logps, chosen_nll, beta=0.1):
    """As reference.preference_free.orpo_loss: ORPOTrainer.odds_ratio_loss, then ORPO_LOSS_LINE.

    TRL returns only the batch mean of the log odds ratios, so each pair's comes from a call on that
    pair alone. TRL casts the log-probs to float32; both results are cast back to the dtypes the
    reference returns (the kata's convention), their values staying TRL's.
    """
    with torch.no_grad():  # the input contract
        free_reference.orpo_loss(chosen_avg_logps, rejected_avg_logps, chosen_nll, beta)
    trainer = experimental_trainer("orpo", "ORPOTrainer", beta=float(beta))
    _check_source_line(type(trainer), "get_batch_loss_metrics", ORPO_LOSS_LINE)
    odds_ratio_loss = functools.partial(run_trl, "ORPOTrainer.odds_ratio_loss", type(trainer).odds_ratio_loss, trainer)
    losses, *_ = odds_ratio_loss(chosen_avg_logps, rejected_avg_logps)  # (B,) beta * log sigmoid(log odds)
    policy_nll_loss = chosen_nll
    loss = policy_nll_loss - losses.mean()  # () ORPO_LOSS_LINE
    pairs = range(chosen_avg_logps.shape[0])
    log_odds = torch.stack([odds_ratio_loss(chosen_avg_logps[[i]], rejected_avg_logps[[i]])[4] for i in pairs])  # (B,)
    return loss.to(torch.promote_types(chosen_avg_logps.dtype, chosen_nll.dtype)), log_odds.to(chosen_avg_logps.dtype)


def generalized_jsd_loss(student_logits, teacher_logits, labels=None, beta=0.5, temperature=1.0, reduction="batchmean"):
    """As reference.distillation.generalized_jsd_loss: GKDTrainer.generalized_jsd_loss itself."""
    with torch.no_grad():  # the input contract
        distillation_reference.generalized_jsd_loss(
            student_logits, teacher_logits, labels, beta, temperature, reduction
        )
    trl()
    try:
        with warnings.catch_warnings():  # the notice that trl.experimental is unstable: the pin covers it
            warnings.simplefilter("ignore")
            trainer = importlib.import_module("trl.experimental.gkd").GKDTrainer
    except (ImportError, AttributeError) as error:
        raise internals_changed("trl.experimental.gkd.GKDTrainer", error) from None
    return run_trl(
        "GKDTrainer.generalized_jsd_loss",
        trainer.generalized_jsd_loss,
        student_logits,
        teacher_logits,
        labels=labels,
        beta=beta,
        temperature=temperature,
        reduction=reduction,
    )


@functools.cache
def _check_source_line(cls, method: str, line: str) -> None:
    """Raise TrlUnavailable unless `cls.method`'s source still holds `line`."""
    if line not in inspect.getsource(getattr(cls, method)):
        raise internals_changed(f"{cls.__name__}.{method}", LookupError(f"no longer contains {line!r}"))


def collate(examples, pad_token_id, padding_free=False):
    """As reference.sft_data.collate: TRL's DataCollatorForLanguageModeling(pad_token_id, padding_free)."""
    sft_data_reference.collate(examples, pad_token_id, padding_free)  # the input contract
    trl()
    from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

    collator = DataCollatorForLanguageModeling(pad_token_id=pad_token_id, padding_free=padding_free)
    return run_trl("DataCollatorForLanguageModeling", collator, examples)


def pack_bfd(examples, seq_length):
    """As reference.sft_data.pack_bfd: trl.pack_dataset(..., seq_length, strategy="bfd") on the examples
    as a datasets.Dataset (int64 lists, so that empty sequences have a type), its rows as dicts."""
    sft_data_reference.pack_bfd(examples, seq_length)  # the input contract
    import datasets

    datasets.disable_progress_bars()  # the map's progress bar is not the learner's output
    ids = datasets.Sequence(datasets.Value("int64"))
    dataset = datasets.Dataset.from_list(examples, features=datasets.Features({"input_ids": ids, "labels": ids}))
    packed = run_trl("pack_dataset", trl().pack_dataset, dataset, seq_length, strategy="bfd")
    return packed.to_list()


SMOKE_TESTS = {
    "grpo_loss": lambda: compute_grpo_loss(
        torch.zeros(2, 1),
        torch.zeros(2, 1),
        torch.tensor([0.0, 1.0]),
        torch.tensor([0, 0]),
        log_probs_ref=torch.zeros(2, 1),
        beta=0.1,
        loss_type="dr_grpo",
    ),
    "dpo_loss": lambda: dpo_loss(*torch.zeros(4, 1), loss_type="ipo"),
    "kto_loss": lambda: kto_loss(*torch.zeros(2, 2), torch.tensor([True, False]), *torch.zeros(2, 3)),
    "dapo_gspo": lambda: [
        loss(torch.zeros(2, 2), torch.zeros(2, 2), torch.tensor([1.0, -1.0]), torch.tensor([[True, False]] * 2))
        for loss in (dapo_loss, gspo_loss)
    ],
    "verifier_reward": lambda: combine_rewards([[1.0, None]], [1.0]),
    "token_logprobs": lambda: token_entropy(
        response_log_probs(torch.zeros(1, 2, 3), torch.zeros(1, 2, dtype=torch.long), torch.tensor([[False, True]]))[
            ..., None
        ]
    ),
    "preference_free": lambda: (
        simpo_loss(-torch.ones(2), -torch.full((2,), 2.0)),
        orpo_loss(-torch.ones(2), -torch.full((2,), 2.0), torch.tensor(1.0)),
    ),
    "sft_data": lambda: collate(
        pack_bfd([{"input_ids": [1, 2], "labels": [-100, 2]}, {"input_ids": [], "labels": []}], 4), 0, True
    ),
    "distillation": lambda: generalized_jsd_loss(torch.zeros(1, 2, 3), torch.zeros(1, 2, 3), torch.tensor([[0, -100]])),
}

ORACLE_FUNCTIONS = {
    "compute_grpo_loss": compute_grpo_loss,
    "dpo_loss": dpo_loss,
    "kto_loss": kto_loss,
    "combine_rewards": combine_rewards,
    "response_log_probs": response_log_probs,
    "token_entropy": token_entropy,
    "dapo_loss": dapo_loss,
    "gspo_loss": gspo_loss,
    "simpo_loss": simpo_loss,
    "orpo_loss": orpo_loss,
    "collate": collate,
    "pack_bfd": pack_bfd,
    "generalized_jsd_loss": generalized_jsd_loss,
}


def oracle_module(reference: types.ModuleType, slug: str) -> types.ModuleType:
    """A copy of the loaded reference module whose TRL-covered functions (TRL_FUNCTIONS) are TRL's.

    The copy counts its TRL calls in `trl_calls`, so the grader can tell which checks used TRL.
    Loads and checks TRL here, in the grading process, so that every forked check inherits it.
    """
    _check_combine_lines(trl().GRPOTrainer)
    SMOKE_TESTS[slug]()  # an attribute TRL now reads fails here, once, not in every check
    module = types.ModuleType(reference.__name__ + "_against_trl", reference.__doc__)
    module.__dict__.update({key: value for key, value in vars(reference).items() if not key.startswith("__")})
    module.trl_calls = 0
    for name in TRL_FUNCTIONS[slug]:
        module.__dict__[name] = _counted(module, ORACLE_FUNCTIONS[name])
    return module


def _counted(module: types.ModuleType, function):
    @functools.wraps(function)
    def call(*args, **kwargs):
        module.trl_calls += 1
        return function(*args, **kwargs)

    return call
