"""PPO with a value function: GAE advantages, whitening, the clipped value and policy losses.

A batch of B rollouts, T steps each (in an LLM: T response tokens). Per step t we have the reward
r_t, the value estimate V_t of the critic that scored the rollout, and done_t: the episode ended
after step t. Generalised advantage estimation (Schulman et al. 2015, "High-Dimensional
Continuous Control Using Generalized Advantage Estimation", section 3) scans backwards:

    delta_t = r_t + gamma * V_{t+1} * (1 - done_t) - V_t          the TD error of step t
    A_t     = delta_t + gamma * lam * (1 - done_t) * A_{t+1}      A_T = 0, V_T = 0
    R_t     = A_t + V_t                                           the value target (returns)

    whiten(x, m)  = (x - mean_m(x)) / sqrt(var_m(x) + 1e-8)       mean, var over x where m
    value loss    = 0.5 * mean_m max((v - R)^2, (clip(v, v_old - c_v, v_old + c_v) - R)^2)
    policy loss   = mean_m max(-A * rho, -A * clip(rho, 1 - c, 1 + c)),  rho = exp(logp - logp_old)

PPO's objective (Schulman et al. 2017, "Proximal Policy Optimization Algorithms", eq. 7) is the
min of the two surrogates; as a loss to minimise it is the max of their negatives.

Conventions (TRL's PPOTrainer, trl/experimental/ppo/ppo_trainer.py of trl 1.8.0: the reverse
scan with `lastgaelam`, `returns = advantages + values`, `masked_whiten`, `vf_loss`, `pg_loss`;
trl 1.15.0 and 1.16.0 ship no PPOTrainer):
- After the last step nothing is bootstrapped: V_T = 0, as TRL's `nextvalues = 0.0`. A done
  step neither bootstraps V_{t+1} nor carries A_{t+1} back across the episode boundary (TRL has
  no dones: one response is one episode, and padding holds reward 0 and value 0).
- gamma = 1 by default, as TRL (a response is short; the discount is rarely needed); lam = 0.95.
- whiten uses the unbiased (Bessel-corrected, n - 1) masked variance, as TRL's
  `masked_var(unbiased=True)`, and adds 1e-8 under the root. shift_mean=False adds the mean
  back (TRL whitens rewards that way). Unselected positions come out as 0 (TRL fills them after).
- Both losses are token means over the whole batch (TRL's `masked_mean`: sum / count), and
  they treat old values, returns, old log-probs and advantages as constants (detached): only
  `values` and `log_probs` receive a gradient.
- The value clip is around the old values (v_old +- c_v), not around the returns; the 0.5 is
  TRL's factor. TRL averages the value loss over `~padding_mask_p1`, one position more than the
  policy loss's `~padding_mask`; here each loss takes the mask its caller passes.
- TRL whitens the advantages (over the response mask) before the policy loss; the returns stay
  unwhitened.

Shapes: every tensor (B, T); dones and mask bool. The losses return 0-d tensors.
"""

import math

import torch


def _check_tensors(names, tensors, bools=()) -> None:
    """Raise ValueError unless all are 2-D non-empty tensors of one shape: finite floats, or bools."""
    shape = tensors[0].shape if isinstance(tensors[0], torch.Tensor) else None
    for name, tensor in zip(names, tensors):
        if not isinstance(tensor, torch.Tensor) or tensor.ndim != 2 or tensor.numel() == 0:
            raise ValueError(f"{name} must be a non-empty 2-D (B, T) tensor")
        if tensor.shape != shape:
            raise ValueError(f"{name} {tuple(tensor.shape)} differs in shape from {names[0]} {tuple(shape)}")
        if name in bools:
            if tensor.dtype != torch.bool:
                raise ValueError(f"{name} must be a bool tensor")
        elif not tensor.is_floating_point() or not bool(torch.isfinite(tensor).all()):
            raise ValueError(f"{name} must be a finite floating-point tensor")


def _check_range(name, value) -> float:
    """Raise ValueError unless value is a finite number >= 0; return it as a float."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def gae_advantages(rewards, values, dones, gamma=1.0, lam=0.95):
    """Generalised advantage estimates and returns by a reverse scan over the steps.

    Args:
        rewards: (B, T) float, the reward of each step (an LLM: usually only at the last token).
        values: (B, T) float, V_t, the critic's value of the state before step t.
        dones: (B, T) bool, True where the episode ended after step t (no bootstrap across it).
        gamma: discount in [0, 1]. lam: GAE's lambda in [0, 1].

    Returns:
        (advantages, returns), both (B, T) like `rewards`: A_t and R_t = A_t + V_t.

    Raises:
        ValueError: for tensors that are not (B, T) of one shape, non-finite, dones not bool,
            or gamma, lam outside [0, 1].
    """
    _check_tensors(("rewards", "values", "dones"), (rewards, values, dones), bools=("dones",))
    gamma, lam = _check_range("gamma", gamma), _check_range("lam", lam)
    if gamma > 1 or lam > 1:
        raise ValueError(f"gamma and lam must lie in [0, 1], got {gamma} and {lam}")
    steps = rewards.shape[1]

    # TODO 1: the reverse scan: TD errors, advantages carried back, returns
    not_done = (~dones).to(rewards.dtype)  # (B, T): 0 where the episode ended after step t
    last_advantage = torch.zeros_like(rewards[:, 0])  # (B,): A_T = 0
    advantages_reversed = []
    for t in reversed(range(steps)):
        next_value = values[:, t + 1] if t < steps - 1 else torch.zeros_like(values[:, t])  # (B,)
        delta = rewards[:, t] + gamma * next_value * not_done[:, t] - values[:, t]  # (B,)
        last_advantage = delta + gamma * lam * not_done[:, t] * last_advantage  # (B,): A_t
        advantages_reversed.append(last_advantage)
    advantages = torch.stack(advantages_reversed[::-1], dim=1)  # (B, T), back in step order
    returns = advantages + values  # (B, T): the value target R_t
    # END TODO 1
    return advantages, returns


def whiten(values, mask, shift_mean=True):
    """Standardise `values` over the positions where `mask` is True (TRL's masked_whiten).

    Args:
        values: (B, T) float, e.g. advantages.
        mask: (B, T) bool, True on real tokens; at least 2 selected (the variance is unbiased).
        shift_mean: True gives mean 0; False adds the mean back (only the scale changes).

    Returns:
        (B, T) like `values`: (values - mean) / sqrt(var + 1e-8) (+ mean if not shift_mean) where
        mask is True, 0 elsewhere. mean and var are taken over the selected positions only;
        var divides by count - 1.

    Raises:
        ValueError: for tensors that are not (B, T) of one shape, non-finite values, a mask
            that is not bool or selects fewer than 2 positions.
    """
    _check_tensors(("values", "mask"), (values, mask), bools=("mask",))
    if int(mask.sum()) < 2:
        raise ValueError("mask must select at least 2 positions (the variance divides by count - 1)")

    # TODO 2: masked mean, unbiased masked variance, then standardise
    count = mask.sum()  # (): number of selected positions
    mean = values.masked_fill(~mask, 0.0).sum() / count  # (): mean over the selected positions
    centered = (values - mean).masked_fill(~mask, 0.0)  # (B, T): 0 outside the mask
    var = centered.square().sum() / (count - 1)  # (): unbiased, as TRL's masked_var
    whitened = (values - mean) * torch.rsqrt(var + 1e-8)  # (B, T)
    if not shift_mean:
        whitened = whitened + mean  # (B, T): only rescaled, the mean kept
    whitened = whitened.masked_fill(~mask, 0.0)  # (B, T): 0 outside the mask
    # END TODO 2
    return whitened


def value_loss(values, old_values, returns, mask, clip_range_value=0.2):
    """PPO's clipped value loss, 0.5 * token mean of the larger squared error.

    Args:
        values: (B, T) float, the critic's new predictions (receive the gradient).
        old_values: (B, T) float, the predictions when the rollout was scored (constants).
        returns: (B, T) float, the targets R_t from gae_advantages (constants).
        mask: (B, T) bool, True on the positions that count; at least one.
        clip_range_value: c_v >= 0, how far the new value may move from the old one.

    Returns:
        0-d tensor: 0.5 * mean over mask of max((v - R)^2, (clip(v, v_old - c_v, v_old + c_v) - R)^2).

    Raises:
        ValueError: for tensors that are not (B, T) of one shape, non-finite, a mask that is not
            bool or selects nothing, or a negative clip_range_value.
    """
    _check_tensors(("values", "old_values", "returns", "mask"), (values, old_values, returns, mask), bools=("mask",))
    clip_range_value = _check_range("clip_range_value", clip_range_value)
    if not bool(mask.any()):
        raise ValueError("mask selects nothing")

    # TODO 3: clip the new values around the old ones, keep the larger squared error
    old_values, returns = old_values.detach(), returns.detach()  # (B, T): constants
    values_clipped = torch.clamp(values, old_values - clip_range_value, old_values + clip_range_value)  # (B, T)
    losses_unclipped = (values - returns).square()  # (B, T)
    losses_clipped = (values_clipped - returns).square()  # (B, T)
    losses = torch.max(losses_unclipped, losses_clipped)  # (B, T): the pessimistic one
    loss = 0.5 * losses.masked_fill(~mask, 0.0).sum() / mask.sum()  # (): 0.5 * token mean
    # END TODO 3
    return loss


def ppo_policy_loss(log_probs, old_log_probs, advantages, mask, clip_range=0.2):
    """PPO's clipped surrogate as a loss: token mean of max(-A * rho, -A * clip(rho)).

    Args:
        log_probs: (B, T) float, log-probs of the taken tokens under the current policy.
        old_log_probs: (B, T) float, the same under the policy that sampled them (constants).
        advantages: (B, T) float, e.g. whitened GAE advantages (constants).
        mask: (B, T) bool, True on the positions that count; at least one.
        clip_range: c >= 0; the ratio is clipped to [1 - c, 1 + c].

    Returns:
        0-d tensor: mean over mask of max(-A * rho, -A * clip(rho, 1 - c, 1 + c)).

    Raises:
        ValueError: for tensors that are not (B, T) of one shape, non-finite, a mask that is not
            bool or selects nothing, or a negative clip_range.
    """
    names = ("log_probs", "old_log_probs", "advantages", "mask")
    _check_tensors(names, (log_probs, old_log_probs, advantages, mask), bools=("mask",))
    clip_range = _check_range("clip_range", clip_range)
    if not bool(mask.any()):
        raise ValueError("mask selects nothing")

    # TODO 4: the probability ratio, both surrogates as losses, the larger one
    advantages = advantages.detach()  # (B, T): constants
    ratio = torch.exp(log_probs - old_log_probs.detach())  # (B, T): rho = pi / pi_old
    losses_unclipped = -advantages * ratio  # (B, T)
    losses_clipped = -advantages * torch.clamp(ratio, 1.0 - clip_range, 1.0 + clip_range)  # (B, T)
    losses = torch.max(losses_unclipped, losses_clipped)  # (B, T): the pessimistic one
    loss = losses.masked_fill(~mask, 0.0).sum() / mask.sum()  # (): token mean over the batch
    # END TODO 4
    return loss
