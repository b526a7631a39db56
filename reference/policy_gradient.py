"""The policy-gradient loss and the baselines that turn rewards into advantages.

The score-function (REINFORCE) estimate of the gradient of E[r] is E[A * grad log p(y)], so the
loss whose gradient it is, token by token, is

    loss_{i,t} = -A_i * log p_{i,t}       on response tokens, exactly 0 on padding

(CS336 assignment 5, `compute_naive_policy_gradient_loss`). A_i is the reward minus a baseline;
any baseline that does not depend on the sample keeps the estimate unbiased and lowers its
variance (Williams 1992):

    REINFORCE:  A_i = r_i - b
    RLOO:       A_i = r_i - mean of the other k - 1 rewards of i's group
                    = k / (k - 1) * (r_i - mean_g)                  (Ahmadian et al. 2024)
    GRPO:       A_i = (r_i - mean_g) / divisor                       (Shao et al. 2024)

GRPO's divisor is where implementations differ; `group_normalized_advantages` reproduces each:

    scale="group"   the std of i's group          (TRL scale_rewards="group", the default)
    scale="batch"   the std of all rewards         (TRL scale_rewards="batch")
    scale="none"    no division: centre only       (TRL scale_rewards="none", Dr. GRPO)
    std="population" divides the squared deviations by n, std="sample" by n - 1
    eps_mode="floor" max(std, eps),  eps_mode="add" std + eps

TRL 1.16.0 (GRPOTrainer._generate_and_score_completions) is scale "group" or "batch" with
std="sample", eps=1e-4, eps_mode="add"; katas/group_advantages is scale="group",
std="population", eps=1e-6, eps_mode="floor" (the defaults here). Whatever the scale, the
centre is the group mean: TRL's "batch" divides by the batch std but still subtracts mean_g.

Conventions:
- Groups are given by `group_ids` (any integers, any order, not contiguous), not by position.
- A group of one has no one to compare with: its RLOO and GRPO advantages are exactly 0 (the
  sample std of one reward is 0 / 0; here its n - 1 counts as 1; TRL's RLOOTrainer and
  GRPOTrainer give a group of one 0 through an explicit branch).
- The loss is returned per token (B, T); averaging it over tokens or sequences is the caller's.

Shapes: advantages (B,), token_log_probs and response_mask (B, T); rewards and group_ids (N,).
"""

import math

import torch

SCALES = ("group", "batch", "none")
STDS = ("population", "sample")
EPS_MODES = ("floor", "add")


def _check_finite(name, tensor, ndim):
    """Raise ValueError unless `tensor` is a non-empty finite floating tensor with `ndim` dims."""
    if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor")
    if tensor.ndim != ndim or tensor.numel() == 0:
        raise ValueError(f"{name} must be a non-empty {ndim}-D tensor, got shape {tuple(tensor.shape)}")
    if not bool(tensor.isfinite().all()):
        raise ValueError(f"{name} must be finite")


def _group_index(rewards, group_ids):
    """Check rewards (N,) and group_ids (N,); return (index (N,) 0..G-1, counts (G,) n_g)."""
    _check_finite("rewards", rewards, 1)
    if not isinstance(group_ids, torch.Tensor) or group_ids.shape != rewards.shape:
        raise ValueError("group_ids must be a tensor of the rewards' shape")
    if group_ids.is_floating_point() or group_ids.is_complex():
        raise ValueError("group_ids must be integers")
    _, index = torch.unique(group_ids, return_inverse=True)  # (N,) each candidate's group, 0..G-1
    return index, torch.bincount(index)  # (N,), (G,)


def naive_policy_gradient_loss(advantages, token_log_probs, response_mask):
    """Per-token REINFORCE loss -A_i * log p_{i,t}, zero on padding.

    Args:
        advantages: (B,) finite float, one advantage per response.
        token_log_probs: (B, T) finite float log-probs of the sampled tokens under the policy.
        response_mask: (B, T) bool, True on response tokens, False on padding.

    Returns:
        (B, T) per-token loss; exactly 0 where the mask is False. Its gradient with respect to
        `token_log_probs` is -A_i on response tokens: minimising it raises the log-probs of
        responses with A > 0.

    Raises:
        ValueError: on non-float, non-finite or empty inputs, or shapes that do not fit.
    """
    _check_finite("advantages", advantages, 1)
    _check_finite("token_log_probs", token_log_probs, 2)
    if not isinstance(response_mask, torch.Tensor) or response_mask.dtype != torch.bool:
        raise ValueError("response_mask must be a bool tensor")
    if response_mask.shape != token_log_probs.shape or len(advantages) != len(token_log_probs):
        raise ValueError("advantages (B,), token_log_probs (B, T) and response_mask (B, T) must fit")

    # TODO 1: the per-token loss -A * log p, zero on padding
    per_token = -advantages.unsqueeze(-1) * token_log_probs  # (B, T) A_i broadcast along t
    loss = per_token * response_mask  # (B, T) padding gives exactly 0
    # END TODO 1
    return loss


def reinforce_baseline_advantages(rewards, baseline):
    """REINFORCE with a baseline: A = r - b.

    Args:
        rewards: (N,) finite float rewards.
        baseline: a finite number, or a finite float tensor of shape () or (N,).

    Returns:
        (N,) advantages.

    Raises:
        ValueError: on empty, non-1-D or non-finite rewards, or a baseline that is not finite
            or not of shape () or (N,).
    """
    _check_finite("rewards", rewards, 1)
    baseline = torch.as_tensor(baseline, dtype=rewards.dtype)
    if baseline.shape not in ((), rewards.shape) or not bool(baseline.isfinite().all()):
        raise ValueError("baseline must be a finite number or a finite tensor of shape () or (N,)")

    # TODO 2: the advantage is the reward minus the baseline
    advantages = rewards - baseline  # (N,) r - b
    # END TODO 2
    return advantages


def rloo_advantages(rewards, group_ids):
    """RLOO: each reward minus the mean of the other rewards of its group.

    A_i = r_i - (sum_g - r_i) / (k - 1) = k / (k - 1) * (r_i - mean_g); a group of one gets 0.

    Args:
        rewards: (N,) finite float rewards.
        group_ids: (N,) integer ids; candidates with the same id were sampled for the same prompt.

    Returns:
        (N,) advantages, like `rewards`.

    Raises:
        ValueError: on empty, non-1-D or non-finite rewards, or group_ids of another shape or
            not integers.
    """
    index, counts = _group_index(rewards, group_ids)

    # TODO 3: the leave-one-out baseline: the mean of the other k - 1 rewards of the group
    sums = rewards.new_zeros(len(counts)).scatter_add(0, index, rewards)  # (G,) sum of each group
    others = counts[index] - 1  # (N,) k - 1
    baseline = (sums[index] - rewards) / others.clamp_min(1)  # (N,) mean of the others
    advantages = torch.where(others > 0, rewards - baseline, 0.0)  # (N,) a singleton gets 0
    # END TODO 3
    return advantages


def group_normalized_advantages(rewards, group_ids, scale="group", std="population", eps=1e-6, eps_mode="floor"):
    """GRPO advantages (r_i - mean_g) / divisor, with the divisor of the chosen convention.

    Args:
        rewards: (N,) finite float rewards.
        group_ids: (N,) integer ids; candidates with the same id were sampled for the same prompt.
        scale: "group" (each group's std), "batch" (the std of all rewards) or "none".
        std: "population" (divide by n) or "sample" (by n - 1; a single value's std is 0).
        eps: positive finite guard of the division.
        eps_mode: "floor" (max(std, eps)) or "add" (std + eps).

    Returns:
        (N,) advantages, like `rewards`; each group's have mean 0.

    Raises:
        ValueError: on bad rewards or group_ids (as rloo_advantages), an unknown option, or eps
            that is not a positive finite number.
    """
    index, counts = _group_index(rewards, group_ids)
    if scale not in SCALES or std not in STDS or eps_mode not in EPS_MODES:
        raise ValueError(f"scale must be one of {SCALES}, std one of {STDS}, eps_mode one of {EPS_MODES}")
    eps = float(eps)
    if not math.isfinite(eps) or eps <= 0:
        raise ValueError("eps must be a positive finite number")
    zeros = rewards.new_zeros(len(counts))  # (G,)

    # TODO 4: centre on the group mean; collect the squared deviations the divisor is made of
    means = zeros.scatter_add(0, index, rewards) / counts  # (G,) mean_g
    centered = rewards - means[index]  # (N,) r_i - mean_g
    if scale == "none":
        return centered  # Dr. GRPO: no division
    if scale == "group":
        squares = zeros.scatter_add(0, index, centered.square())[index]  # (N,) sum over i's group
        n = counts[index]  # (N,) n_g
    else:  # "batch": around the batch mean, over all N rewards
        squares = (rewards - rewards.mean()).square().sum().expand_as(rewards)  # (N,)
        n = torch.full_like(index, len(rewards))  # (N,) N
    # END TODO 4

    # TODO 5: the std (population or sample), guarded by eps (floor or add), divides
    dof = n if std == "population" else (n - 1).clamp_min(1)  # (N,) n or n - 1, at least 1
    spread = (squares / dof).sqrt()  # (N,) the std
    divisor = spread.clamp_min(eps) if eps_mode == "floor" else spread + eps  # (N,)
    advantages = centered / divisor  # (N,)
    # END TODO 5
    return advantages
