"""The GRPO loss: group-relative advantages in a clipped, token-level surrogate.

For candidate i with valid response tokens t (response_mask[i, t] is True):

    A_i        = group advantage of candidate i                  (TODO 1, see group_advantages)
    rho_{i,t}  = exp(logp_new[i,t] - logp_old[i,t])              logp_old is a fixed sample: no gradient
    s_{i,t}    = min(rho * A_i, clip(rho, 1 - clip_range, 1 + clip_range) * A_i)
    kl_{i,t}   = exp(logp_ref - logp_new) - (logp_ref - logp_new) - 1     (k3 estimate of KL(new || ref))
    l_{i,t}    = -s_{i,t} + beta * kl_{i,t}                      the KL term only when beta > 0 and ref given
    L          = mean_i [ sum_t mask[i,t] * l_{i,t} / sum_t mask[i,t] ]     loss_type="grpo" (default)

TRL's other aggregations (`loss_type`):
    "bnpo"     L = sum_{i,t} mask * l / sum_{i,t} mask       a token mean over the whole batch
    "dr_grpo"  L = sum_{i,t} mask * l / (B * T)              a fixed divisor: T = max completion length

Conventions:
- Each response is averaged over its own valid tokens first; then every candidate weighs the same,
  however long it is (TRL's loss_type="grpo"). A token mean over the whole batch is a different
  loss (TRL's "bnpo"/DAPO), and so is dividing by a fixed length ("dr_grpo").
- The old (sampling) policy and the reference policy are fixed snapshots: neither receives a
  gradient. The advantages are constants too.
- The k3 term is non-negative, so adding it never lowers the loss.
- "dr_grpo" divides by B * T where T is the width of the log-prob tensors: pad them to TRL's
  max_completion_length to get TRL's number exactly.

Shapes: log-probs (B, T) float, rewards and group_ids (B,), response_mask (B, T) bool.
Returns (loss, advantages): a scalar and (B,).
"""

import math

import torch

from reference.group_advantages import compute_group_advantages  # kata: include

LOSS_TYPES = ("grpo", "bnpo", "dr_grpo")


def _check_inputs(tensors, response_mask, clip_range, beta, loss_type):
    """Raise ValueError for inputs outside compute_grpo_loss's contract; return (mask, clip_range, beta)."""
    log_probs_new, log_probs_old, log_probs_ref, rewards, group_ids = tensors
    if log_probs_new.ndim != 2 or log_probs_new.numel() == 0 or log_probs_new.shape != log_probs_old.shape:
        raise ValueError("log_probs_new and log_probs_old must be non-empty 2-D tensors of the same shape")
    if rewards.shape != (log_probs_new.shape[0],) or group_ids.shape != rewards.shape:
        raise ValueError("rewards and group_ids must have one entry per candidate (row)")
    clip_range, beta = float(clip_range), float(beta)
    if not all(math.isfinite(value) and value >= 0 for value in (clip_range, beta)):
        raise ValueError("clip_range and beta must be non-negative finite numbers")
    if not (torch.isfinite(log_probs_new).all() and torch.isfinite(log_probs_old).all()):
        raise ValueError("log_probs_new and log_probs_old must be finite")
    if log_probs_ref is not None:
        if log_probs_ref.shape != log_probs_new.shape:
            raise ValueError("log_probs_ref must have the shape of log_probs_new")
        if not torch.isfinite(log_probs_ref).all():
            raise ValueError("log_probs_ref must be finite")
    if response_mask is None:
        response_mask = torch.ones_like(log_probs_new, dtype=torch.bool)
    if response_mask.shape != log_probs_new.shape or response_mask.dtype != torch.bool:
        raise ValueError("response_mask must be a bool tensor of the shape of log_probs_new")
    if not response_mask.any(dim=-1).all():
        raise ValueError("every response needs at least one valid token in response_mask")
    if loss_type not in LOSS_TYPES:
        raise ValueError(f"loss_type must be one of {LOSS_TYPES}, not {loss_type!r}")
    return response_mask, clip_range, beta


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
    """Clipped GRPO surrogate with an optional k3 penalty towards a reference policy.

    Args:
        log_probs_new: (B, T) log-probs of the sampled tokens under the policy being trained.
        log_probs_old: (B, T) log-probs of the same tokens under the policy that sampled them.
        rewards: (B,) one reward per candidate.
        group_ids: (B,) prompt group of each candidate.
        response_mask: (B, T) bool, True on response tokens; every row needs at least one.
            None means every position is valid.
        clip_range: epsilon of the ratio clip, a non-negative finite number.
        eps: floor of each group's std (see compute_group_advantages).
        log_probs_ref: optional (B, T) log-probs under the frozen reference policy.
        beta: non-negative finite weight of the KL penalty; 0 disables it.
        loss_type: how token losses become one number: "grpo" (per response, then per
            candidate), "bnpo" (token mean over the batch) or "dr_grpo" (sum / (B * T)).

    Returns:
        (loss, advantages): scalar loss, and the (B,) advantages it used.

    Raises:
        ValueError: for any input outside that contract.
    """
    tensors = (log_probs_new, log_probs_old, log_probs_ref, rewards, group_ids)
    response_mask, clip_range, beta = _check_inputs(tensors, response_mask, clip_range, beta, loss_type)
    advantages = compute_group_advantages(rewards, group_ids, eps=eps)  # (B,)
    # TODO 2: the token ratio against the frozen sampling policy, and its clipped copy
    ratio = torch.exp(log_probs_new - log_probs_old.detach())  # (B, T)
    clipped_ratio = ratio.clamp(1.0 - clip_range, 1.0 + clip_range)  # (B, T)
    # END TODO 2
    # TODO 3: the pessimistic clipped surrogate per token, plus the optional k3 penalty
    token_advantages = advantages.detach().unsqueeze(-1)  # (B, 1), broadcast over tokens
    surrogate = ratio * token_advantages  # (B, T)
    clipped_surrogate = clipped_ratio * token_advantages  # (B, T)
    per_token_loss = -torch.minimum(surrogate, clipped_surrogate)  # (B, T)
    if log_probs_ref is not None and beta > 0:
        log_ratio_ref = log_probs_ref.detach() - log_probs_new  # (B, T)
        per_token_kl = torch.exp(log_ratio_ref) - log_ratio_ref - 1.0  # (B, T), >= 0
        per_token_loss = per_token_loss + beta * per_token_kl
    # END TODO 3
    # TODO 4: sum each response over its own valid tokens, then aggregate as loss_type says
    token_counts = response_mask.sum(dim=-1)  # (B,) valid tokens of each response
    token_sums = per_token_loss.masked_fill(~response_mask, 0.0).sum(dim=-1)  # (B,)
    if loss_type == "grpo":
        loss = (token_sums / token_counts).mean()  # () each response's mean, candidates weigh the same
    elif loss_type == "bnpo":
        loss = token_sums.sum() / token_counts.sum()  # every valid token weighs the same
    else:  # "dr_grpo"
        loss = token_sums.sum() / response_mask.numel()  # B * T, whatever the lengths
    # END TODO 4
    return loss, advantages
