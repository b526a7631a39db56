"""Preference losses without a reference model: SimPO and ORPO.

DPO scores a pair by how far the policy moved from a frozen reference. SimPO and ORPO drop the
reference: their inputs are the policy's own length-normalised (average per-token) log-probs of
the chosen and rejected responses, c_i = log pi(y_w | x) / |y_w| and r_i likewise.

    SimPO (Meng et al. 2024, eq. 6):
        l_i = -log sigmoid(beta * (c_i - r_i) - gamma)       gamma: an absolute target margin   TODO 1
        L   = mean_i l_i

    log1mexp(x) = log(1 - exp(x)) for x < 0, computed stably                                    TODO 2

    ORPO (Hong et al. 2024, eqs. 4-7), odds(y) = p / (1 - p) with log p = c:
        log_odds_i = (c_i - r_i) - (log1mexp(c_i) - log1mexp(r_i))                               TODO 3
        L = chosen_nll - beta * mean_i log sigmoid(log_odds_i)                                     TODO 4

Conventions (TRL 1.16's CPOTrainer.cpo_loss with loss_type "simpo", and ORPOTrainer):
- SimPO's gamma is subtracted after beta multiplies the margin; TRL writes the same thing as
  beta * (c - r - gamma / beta). TRL's CPOTrainer adds cpo_alpha * NLL (default 1: CPO-SimPO);
  simpo_loss is the pure SimPO loss, cpo_alpha = 0.
- log1mexp switches at x = -log 2 (Maechler 2012): log(-expm1(x)) near 0, log1p(-exp(x)) below.
  TRL's odds_ratio_loss writes log1p(-exp(x)), which is -inf once exp(x) rounds to 1.
- chosen_nll is the language-modelling loss on the chosen responses (a scalar, >= 0), as the
  trainer computes it; ORPO adds it, with weight 1, to -beta times the odds-ratio term.
- The losses are means over the batch; log_odds is returned per pair, with its graph.

Shapes: (B,) float log-probs in; simpo_loss returns a scalar, orpo_loss a scalar and (B,).
"""

import math

import torch
import torch.nn.functional as F

LOG_2 = math.log(2.0)


def _check_pair(chosen_avg_logps, rejected_avg_logps, beta, strictly_negative):
    """Raise ValueError unless the two log-prob tensors are alike, 1-D, non-empty, finite and <= 0
    (< 0 when `strictly_negative`), and beta is positive and finite; return beta as a float."""
    if chosen_avg_logps.shape != rejected_avg_logps.shape:
        raise ValueError("chosen and rejected log-probs must have the same shape")
    if chosen_avg_logps.ndim != 1 or chosen_avg_logps.shape[0] == 0:
        raise ValueError("log-probs must be non-empty 1-D tensors of shape (B,)")
    for logps in (chosen_avg_logps, rejected_avg_logps):
        if not bool(torch.isfinite(logps).all()):
            raise ValueError("log-probs must be finite")
        if bool((logps > 0).any()) or (strictly_negative and bool((logps == 0).any())):
            bound = "negative (a probability of 1 has infinite odds)" if strictly_negative else "at most 0"
            raise ValueError(f"average log-probs must be {bound}")
    beta = float(beta)
    if not math.isfinite(beta) or beta <= 0:
        raise ValueError("beta must be a positive finite number")
    return beta


def simpo_loss(chosen_avg_logps, rejected_avg_logps, beta=2.0, gamma=0.5):
    """The SimPO loss: a Bradley-Terry loss on length-normalised log-probs, with a target margin.

    Args:
        chosen_avg_logps: (B,) log pi(y_w | x) / |y_w|, the chosen response's mean token log-prob.
        rejected_avg_logps: (B,) the same for the rejected response.
        beta: positive finite scale of the margin (SimPO's default 2.0).
        gamma: finite target reward margin >= 0 (0.5 here, as TRL's simpo_gamma).

    Returns:
        A scalar tensor: the batch mean of -log sigmoid(beta * (c - r) - gamma).

    Raises:
        ValueError: on mismatched, non-1-D, empty, non-finite or positive log-probs, beta <= 0
            or not finite, gamma < 0 or not finite.
    """
    beta = _check_pair(chosen_avg_logps, rejected_avg_logps, beta, strictly_negative=False)
    gamma = float(gamma)
    if not math.isfinite(gamma) or gamma < 0:
        raise ValueError("gamma must be a finite number >= 0")

    # TODO 1: the SimPO loss: beta times the margin, minus gamma, through -log sigmoid; the batch mean
    margin = beta * (chosen_avg_logps - rejected_avg_logps) - gamma  # (B,) > 0 once c - r exceeds gamma / beta
    losses = -F.logsigmoid(margin)  # (B,) finite for any margin
    return losses.mean()  # () every pair weighs 1 / B
    # END TODO 1


def log1mexp(x):
    """log(1 - exp(x)) for x < 0, accurate near 0 and far from it, with finite gradients.

    Args:
        x: a float tensor of log-probabilities, every value < 0 (log1mexp(0) is -inf).

    Returns:
        A tensor of x's shape and dtype: log(1 - exp(x)), the log-probability of "not this".
    """
    # TODO 2: log(-expm1(x)) above -log 2, log1p(-exp(x)) below; the branch not taken kept finite
    near_zero = x > -LOG_2  # where exp(x) > 1/2 and 1 - exp(x) would cancel
    far = torch.clamp(x, max=-LOG_2)  # the other branch's input, so its gradient stays finite
    return torch.where(near_zero, torch.log(-torch.expm1(x)), torch.log1p(-torch.exp(far)))
    # END TODO 2


def orpo_loss(chosen_avg_logps, rejected_avg_logps, chosen_nll, beta=0.1):
    """The ORPO loss: the chosen responses' NLL plus beta times an odds-ratio preference term.

    Args:
        chosen_avg_logps: (B,) mean token log-prob of each chosen response, every value < 0.
        rejected_avg_logps: (B,) the same for the rejected responses.
        chosen_nll: () the language-modelling loss on the chosen responses, finite and >= 0.
        beta: positive finite weight of the odds-ratio term (TRL's default 0.1).

    Returns:
        (loss, log_odds): the scalar loss, chosen_nll - beta * mean(log sigmoid(log_odds)), and
        the (B,) log odds ratios log(odds(y_w) / odds(y_l)), still attached to the graph.

    Raises:
        ValueError: on mismatched, non-1-D, empty, non-finite or non-negative log-probs, a
            chosen_nll that is not a finite 0-D tensor >= 0, beta <= 0 or not finite.
    """
    beta = _check_pair(chosen_avg_logps, rejected_avg_logps, beta, strictly_negative=True)
    if not isinstance(chosen_nll, torch.Tensor) or chosen_nll.ndim != 0:
        raise ValueError("chosen_nll must be a 0-D tensor (the trainer's NLL loss)")
    if not bool(torch.isfinite(chosen_nll)) or bool(chosen_nll < 0):
        raise ValueError("chosen_nll must be finite and >= 0")

    # TODO 3: the log odds ratio of chosen over rejected, through log1mexp
    log_odds = (chosen_avg_logps - rejected_avg_logps) - (
        log1mexp(chosen_avg_logps) - log1mexp(rejected_avg_logps)
    )  # (B,) log(p_w / (1 - p_w)) - log(p_l / (1 - p_l))
    # END TODO 3

    # TODO 4: the NLL minus beta times the batch mean of log sigmoid(log_odds)
    ratio = F.logsigmoid(log_odds)  # (B,) log sigmoid(log odds); ORPO's L_OR is its negative
    loss = chosen_nll - beta * ratio.mean()  # () SFT loss + beta * L_OR
    # END TODO 4
    return loss, log_odds
