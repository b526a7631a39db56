"""DAPO and GSPO: two changes to the GRPO loss, and DAPO's reward shaping and batch filter.

DAPO (Yu et al. 2025, "DAPO: an open-source LLM reinforcement learning system at scale"),
for candidate i with valid response tokens t (response_mask[i, t] is True):

    rho_{i,t} = exp(logp_new[i,t] - logp_old[i,t])                    one ratio per token
    s_{i,t}   = min(rho * A_i, clip(rho, 1 - eps_low, 1 + eps_high) * A_i)    clip-higher
    L_DAPO    = -sum_{i,t} mask * s / sum_{i,t} mask                  token-level: every valid
                                                                      token of the batch weighs 1
    R_length(|y|) = 0                               |y| <= L_max - L_cache     (paper eq. 13)
                    (L_max - L_cache - |y|) / L_cache    L_max - L_cache < |y| <= L_max
                    -1                              L_max < |y|
    dynamic sampling: keep a group only if its rewards are not all equal
                      (all equal: every advantage is 0, the group teaches nothing)

GSPO (Zheng et al. 2025, "Group sequence policy optimization"): one ratio per response,

    s_i      = exp( mean over the valid tokens t of (logp_new[i,t] - logp_old[i,t]) )
    L_GSPO   = -mean_i min(s_i * A_i, clip(s_i, 1 - eps_low, 1 + eps_high) * A_i)

TRL 1.16.0 (GRPOTrainer._compute_loss): `epsilon` and `epsilon_high` are eps_low and eps_high;
loss_type="dapo" sums the masked token losses and divides, on each process, by
num_items_in_batch / num_processes * gradient_accumulation_steps / steps_per_generation
(`num_items_in_batch`: the valid tokens of the whole generation batch, all processes counted), so
the token mean over the batch holds only once DDP has averaged the gradients of the processes (on
one batch and one process: the token mean here); importance_sampling_level="sequence" forms the masked mean
log-ratio per response, exponentiates it, and broadcasts that (B, 1) ratio over the tokens, so
with loss_type="grpo" each response's loss is its one clipped term and the loss their mean.
The overlong penalty and dynamic sampling happen outside the loss (TRL: the reward function
trl.rewards.get_soft_overlong_punishment; verl: overlong_buffer and algorithm.filter_groups).
verl's GSPO writes the ratio in GSPO-token form, sg[s_i] * pi / sg[pi] per token, then averages
per response: the same value and, with one advantage per response, the same gradient.

Conventions: logp_old is a fixed sample and the advantages are constants (neither gets a
gradient); eps_high > eps_low leaves more room to raise unlikely tokens. The GSPO paper clips
at 3e-4 / 4e-4: a mean log-ratio per token moves far less than a single token's.

Shapes: log-probs (B, T) float, response_mask (B, T) bool with a valid token in every row,
advantages, rewards, group_ids and lengths (B,). The losses are scalars.
"""

import math

import torch


def _check_loss_inputs(log_probs_new, log_probs_old, advantages, response_mask, epsilon_low, epsilon_high):
    """Raise ValueError for inputs outside dapo_loss's and gspo_loss's contract."""
    if log_probs_new.ndim != 2 or log_probs_new.numel() == 0 or log_probs_new.shape != log_probs_old.shape:
        raise ValueError("log_probs_new and log_probs_old must be non-empty 2-D tensors of the same shape")
    if advantages.shape != (log_probs_new.shape[0],):
        raise ValueError("advantages must have one entry per candidate (row)")
    if response_mask.shape != log_probs_new.shape or response_mask.dtype != torch.bool:
        raise ValueError("response_mask must be a bool tensor of the shape of log_probs_new")
    if not response_mask.any(dim=-1).all():
        raise ValueError("every response needs at least one valid token in response_mask")
    tensors = (log_probs_new, log_probs_old, advantages)
    if not all(torch.isfinite(tensor).all() for tensor in tensors):
        raise ValueError("log-probs and advantages must be finite")
    epsilons = (float(epsilon_low), float(epsilon_high))
    if not all(math.isfinite(value) and value >= 0 for value in epsilons) or epsilons[0] >= 1:
        raise ValueError("epsilon_low must be in [0, 1) and epsilon_high a non-negative finite number")


def dapo_loss(log_probs_new, log_probs_old, advantages, response_mask, epsilon_low=0.2, epsilon_high=0.28):
    """DAPO's clipped surrogate: asymmetric clip, one token mean over the whole batch.

    Args:
        log_probs_new: (B, T) log-probs of the sampled tokens under the policy being trained.
        log_probs_old: (B, T) log-probs of the same tokens under the policy that sampled them.
        advantages: (B,) one advantage per candidate, a constant.
        response_mask: (B, T) bool, True on response tokens; every row needs at least one.
        epsilon_low: the ratio is clipped below at 1 - epsilon_low, in [0, 1).
        epsilon_high: the ratio is clipped above at 1 + epsilon_high, non-negative.

    Returns:
        The scalar loss: minus the clipped surrogate summed over the valid tokens, divided by
        their number.

    Raises:
        ValueError: for any input outside that contract.
    """
    _check_loss_inputs(log_probs_new, log_probs_old, advantages, response_mask, epsilon_low, epsilon_high)
    # TODO 1: clip-higher surrogate per token, then one token mean over the batch
    ratio = torch.exp(log_probs_new - log_probs_old.detach())  # (B, T)
    clipped_ratio = ratio.clamp(1.0 - epsilon_low, 1.0 + epsilon_high)  # (B, T), asymmetric
    token_advantages = advantages.detach().unsqueeze(-1)  # (B, 1), broadcast over tokens
    surrogate = torch.minimum(ratio * token_advantages, clipped_ratio * token_advantages)  # (B, T)
    token_losses = (-surrogate).masked_fill(~response_mask, 0.0)  # (B, T), padding set to 0
    loss = token_losses.sum() / response_mask.sum()  # () every valid token weighs the same
    # END TODO 1
    return loss


def overlong_penalty(lengths, max_length, cache_length):
    """DAPO's soft overlong punishment (paper eq. 13), a reward added to the task reward.

    Args:
        lengths: (B,) integer response lengths |y|, non-negative.
        max_length: L_max, a positive integer.
        cache_length: L_cache, the soft zone's width: an integer in [1, max_length].

    Returns:
        (B,) float32: 0 up to L_max - L_cache, then falling linearly to -1 at L_max, -1 beyond.

    Raises:
        ValueError: for any input outside that contract.
    """
    if lengths.ndim != 1 or lengths.is_floating_point() or lengths.dtype == torch.bool:
        raise ValueError("lengths must be a 1-D integer tensor")
    if bool((lengths < 0).any()):
        raise ValueError("lengths must be non-negative")
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in (max_length, cache_length)):
        raise ValueError("max_length and cache_length must be integers")
    if not 1 <= cache_length <= max_length:
        raise ValueError("cache_length must be in [1, max_length]")
    # TODO 2: 0 before the soft zone, a linear ramp inside it, -1 past max_length
    start = max_length - cache_length  # the soft zone is (start, max_length]
    penalty = (start - lengths.float()) / cache_length  # (B,), positive before the zone
    penalty = penalty.clamp(min=-1.0, max=0.0)  # (B,) 0 before the zone, -1 past max_length
    # END TODO 2
    return penalty


def dynamic_sampling_keep(rewards, group_ids):
    """DAPO's dynamic sampling filter: which candidates belong to a group worth training on.

    Args:
        rewards: (B,) finite rewards, one per candidate.
        group_ids: (B,) prompt group of each candidate, in any order.

    Returns:
        (B,) bool: True for the candidates whose group's rewards are not all equal.

    Raises:
        ValueError: for any input outside that contract.
    """
    if rewards.ndim != 1 or rewards.numel() == 0 or group_ids.shape != rewards.shape:
        raise ValueError("rewards and group_ids must be non-empty 1-D tensors of the same shape")
    if not bool(torch.isfinite(rewards).all()):
        raise ValueError("rewards must be finite")
    # TODO 3: a group is kept when some reward in it differs from the others
    keep = torch.zeros_like(rewards, dtype=torch.bool)  # (B,)
    for group in group_ids.unique():
        members = group_ids == group  # (B,) bool
        group_rewards = rewards[members]  # (n,)
        keep[members] = bool((group_rewards != group_rewards[0]).any())  # not all equal
    # END TODO 3
    return keep


def gspo_loss(log_probs_new, log_probs_old, advantages, response_mask, epsilon_low=3e-4, epsilon_high=4e-4):
    """GSPO's clipped surrogate with one sequence-level ratio per response.

    Args:
        log_probs_new: (B, T) log-probs of the sampled tokens under the policy being trained.
        log_probs_old: (B, T) log-probs of the same tokens under the policy that sampled them.
        advantages: (B,) one advantage per candidate, a constant.
        response_mask: (B, T) bool, True on response tokens; every row needs at least one.
        epsilon_low: the sequence ratio is clipped below at 1 - epsilon_low, in [0, 1).
        epsilon_high: the sequence ratio is clipped above at 1 + epsilon_high, non-negative.

    Returns:
        The scalar loss: minus the mean over responses of their clipped surrogate.

    Raises:
        ValueError: for any input outside that contract.
    """
    _check_loss_inputs(log_probs_new, log_probs_old, advantages, response_mask, epsilon_low, epsilon_high)
    # TODO 4: the sequence ratio s_i from the mean token log-ratio, clipped per response
    log_ratio = (log_probs_new - log_probs_old.detach()).masked_fill(~response_mask, 0.0)  # (B, T)
    sequence_log_ratio = log_ratio.sum(dim=-1) / response_mask.sum(dim=-1)  # (B,) mean over valid tokens
    ratio = torch.exp(sequence_log_ratio)  # (B,) s_i, one per response
    clipped_ratio = ratio.clamp(1.0 - epsilon_low, 1.0 + epsilon_high)  # (B,)
    constant_advantages = advantages.detach()  # (B,)
    surrogate = torch.minimum(ratio * constant_advantages, clipped_ratio * constant_advantages)  # (B,)
    loss = -surrogate.mean()  # () every response weighs the same
    # END TODO 4
    return loss
