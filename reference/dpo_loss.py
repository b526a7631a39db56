"""The DPO loss: preference pairs scored by how far the policy moved from a frozen reference.

For each pair i (prompt x_i, chosen response y_w, rejected response y_l) the inputs are
sequence-level log-probs, already summed over the response tokens:

    h_i  = (logp_pol(y_w) - logp_ref(y_w)) - (logp_pol(y_l) - logp_ref(y_l))      TODO 1 (TRL: `delta_score`)
    "sigmoid":  l_i = -log sigmoid(beta * h_i)        DPO, Rafailov et al. 2023, eq. 7   TODO 2
    "hinge":    l_i = max(0, 1 - beta * h_i)          SLiC-style hinge                   TODO 3
    "ipo":      l_i = (h_i - 1 / (2 * beta))**2       IPO, Azar et al. 2023, eq. 17      TODO 3
    L = mean_i l_i                                    every pair weighs 1 / B

    implicit rewards:  r_w = beta * (logp_pol(y_w) - logp_ref(y_w)),  r_l likewise      TODO 4

Conventions (TRL 1.16's DPOTrainer._compute_loss):
- The reference model is frozen: its log-probs are constants, detached, and get no gradient.
- -log sigmoid is computed with F.logsigmoid, finite for any margin (log(sigmoid(x)) is -inf
  once sigmoid(x) underflows to 0, at x below about -89 in float32).
- The loss is the mean over the batch, not the sum.
- IPO's target is 1 / (2 * beta) and multiplies h, not beta * h. TRL feeds IPO length-normalised
  (mean per-token) log-probs; here every loss type uses whatever log-probs are passed.
- The implicit rewards are detached: trainers log them, they are not part of the loss.

Shapes: four (B,) float tensors in; dpo_loss returns a scalar, implicit_rewards two (B,) tensors.
"""

import math

import torch
import torch.nn.functional as F

LOSS_TYPES = ("sigmoid", "hinge", "ipo")


def _check_inputs(tensors, beta):
    """Raise ValueError unless the four log-prob tensors are finite, 1-D, non-empty and alike."""
    shape = tensors[0].shape
    if any(t.shape != shape for t in tensors):
        raise ValueError("the four log-prob tensors must have the same shape")
    if len(shape) != 1 or shape[0] == 0:
        raise ValueError("log-probs must be non-empty 1-D tensors of shape (B,)")
    if not all(bool(torch.isfinite(t).all()) for t in tensors):
        raise ValueError("log-probs must be finite")
    beta = float(beta)
    if not math.isfinite(beta) or beta <= 0:
        raise ValueError("beta must be a positive finite number")
    return beta


def dpo_loss(
    policy_chosen_logp,
    policy_rejected_logp,
    ref_chosen_logp,
    ref_rejected_logp,
    beta=0.1,
    loss_type="sigmoid",
):
    """Mean preference loss of a batch of pairs, from sequence-level log-probs.

    Args:
        policy_chosen_logp: (B,) log pi_theta(y_w | x), summed over the chosen response's tokens.
        policy_rejected_logp: (B,) log pi_theta(y_l | x).
        ref_chosen_logp: (B,) log pi_ref(y_w | x); a constant (no gradient reaches it).
        ref_rejected_logp: (B,) log pi_ref(y_l | x); a constant.
        beta: positive finite strength of the pull towards the reference (TRL default 0.1).
        loss_type: "sigmoid" (DPO, the default), "hinge" or "ipo".

    Returns:
        A scalar tensor: the batch mean of the per-pair losses, in the inputs' dtype.

    Raises:
        ValueError: on mismatched, non-1-D, empty or non-finite inputs, beta <= 0 or not
            finite, or an unknown loss_type.
    """
    tensors = (policy_chosen_logp, policy_rejected_logp, ref_chosen_logp, ref_rejected_logp)
    beta = _check_inputs(tensors, beta)
    if loss_type not in LOSS_TYPES:
        raise ValueError(f"loss_type must be one of {LOSS_TYPES}, not {loss_type!r}")

    # TODO 1: the log-ratio margin h (TRL's `delta_score`), with the frozen reference as a constant
    chosen_logratios = policy_chosen_logp - ref_chosen_logp.detach()  # (B,) log pi / pi_ref on y_w
    rejected_logratios = policy_rejected_logp - ref_rejected_logp.detach()  # (B,) on y_l
    margin = chosen_logratios - rejected_logratios  # (B,) h > 0: the policy favours y_w more than ref does
    # END TODO 1

    # TODO 2: the sigmoid (DPO) loss of each pair, averaged over the batch
    if loss_type == "sigmoid":
        losses = -F.logsigmoid(beta * margin)  # (B,) -log sigmoid(beta * h), finite for any h
        return losses.mean()  # () every pair weighs 1 / B
    # END TODO 2

    # TODO 3: the hinge and IPO variants, also averaged over the batch
    if loss_type == "hinge":
        losses = torch.relu(1.0 - beta * margin)  # (B,) zero once beta * h >= 1
    else:  # "ipo"
        losses = (margin - 1.0 / (2.0 * beta)) ** 2  # (B,) pulls h towards 1 / (2 beta)
    return losses.mean()  # ()
    # END TODO 3


def implicit_rewards(policy_chosen_logp, policy_rejected_logp, ref_chosen_logp, ref_rejected_logp, beta=0.1):
    """The rewards DPO implicitly assigns, beta * log(pi / pi_ref), as trainers log them.

    Args:
        policy_chosen_logp, policy_rejected_logp, ref_chosen_logp, ref_rejected_logp: (B,) as
            in `dpo_loss`.
        beta: positive finite, as in `dpo_loss`.

    Returns:
        (chosen_rewards, rejected_rewards): two (B,) tensors, detached from the graph.
        chosen_rewards - rejected_rewards is beta * h, the sigmoid loss's argument.

    Raises:
        ValueError: on the inputs `dpo_loss` rejects (loss_type aside).
    """
    tensors = (policy_chosen_logp, policy_rejected_logp, ref_chosen_logp, ref_rejected_logp)
    beta = _check_inputs(tensors, beta)

    # TODO 4: beta times each response's log-ratio against the reference, detached
    chosen_rewards = (beta * (policy_chosen_logp - ref_chosen_logp)).detach()  # (B,)
    rejected_rewards = (beta * (policy_rejected_logp - ref_rejected_logp)).detach()  # (B,)
    # END TODO 4
    return chosen_rewards, rejected_rewards
