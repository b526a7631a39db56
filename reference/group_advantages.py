"""Group-relative advantages: the baseline GRPO uses instead of a critic.

Each prompt is sampled several times; the candidates that share a prompt form a group, and a
candidate's advantage says how much better its reward is than its group's, in units of the
group's spread:

    A_i = (r_i - mean_g) / max(std_g, eps)        for candidate i in group g

Conventions:
- std_g is the *population* std (divide by n_g, not n_g - 1), and eps is a floor (clamp), not an
  addend. TRL, verl and CS336 use the sample std with eps added; see the lesson for the difference.
- A group of one candidate has nothing to be compared with: its advantage is exactly 0.
- A group whose rewards are all equal has advantage 0 everywhere (0 / eps), never NaN.
- Groups may come in any order and need not be contiguous: `group_ids` says who is with whom.

Shapes: rewards (N,) float, group_ids (N,) integer ids, result (N,) like rewards.
"""

import math

import torch


def _check_rewards(rewards, group_ids, eps):
    """Raise ValueError unless the inputs are non-empty, alike and finite and eps > 0; return eps as a float."""
    if rewards.ndim != 1 or rewards.numel() == 0 or rewards.shape != group_ids.shape:
        raise ValueError("rewards and group_ids must be non-empty 1-D tensors of the same shape")
    lowest, highest = rewards.detach().aminmax()  # a NaN anywhere makes both NaN
    if not (math.isfinite(lowest) and math.isfinite(highest)):
        raise ValueError("rewards must be finite")
    eps = float(eps)
    if not math.isfinite(eps) or eps <= 0:
        raise ValueError("eps must be a positive finite number")
    return eps


def compute_group_advantages(rewards, group_ids, eps=1e-6):
    """Standardise each candidate's reward within its prompt group.

    Args:
        rewards: (N,) finite float rewards, one per candidate.
        group_ids: (N,) ids; candidates with the same id were sampled for the same prompt.
        eps: positive floor for each group's std.

    Returns:
        (N,) advantages, same dtype as `rewards`; each group's advantages have mean 0.

    Raises:
        ValueError: on empty or mismatched inputs, non-finite rewards, or eps that is not a
            positive finite number.
    """
    eps = _check_rewards(rewards, group_ids, eps)

    # TODO 1: centre and scale each reward by its own group's statistics
    _, index = torch.unique(group_ids, return_inverse=True)  # (N,) each candidate's group, 0..G-1
    counts = torch.bincount(index)  # (G,) n_g
    zeros = rewards.new_zeros(len(counts))  # (G,)
    means = zeros.scatter_add(0, index, rewards) / counts  # (G,) mean_g
    centered = rewards - means[index]  # (N,) r_i - mean_g
    variances = zeros.scatter_add(0, index, centered.square()) / counts  # (G,) population variance
    scale = variances.sqrt().clamp_min(eps)  # (G,) max(std_g, eps)
    advantages = centered / scale[index]  # (N,)
    # END TODO 1
    return advantages
