"""The KTO loss: single responses labelled good or bad, scored against a shared reference point.

KTO (Ethayarajh et al. 2024, "KTO: Model Alignment as Prospect Theoretic Optimization", eq. 7)
needs no preference pairs: each example is one response with a label, desirable or not. Its
inputs are sequence-level log-probs, summed over each response's tokens:

    r_i  = logp_pol(y_i | x_i) - logp_ref(y_i | x_i)          the log-ratio (implied reward / beta)
    z_0  = max(0, mean_j (logp_pol(y'_j | x_j) - logp_ref(y'_j | x_j)))                   TODO 1
           the reference point: a batch estimate of KL(pi || pi_ref) from mismatched pairs
           (x_j with the response y'_j of another prompt), detached
    desirable:    l_i = 1 - sigmoid(beta * (r_i - z_0))                                     TODO 2
    undesirable:  l_i = 1 - sigmoid(beta * (z_0 - r_i))                                     TODO 2
    L = mean_i w_i * l_i,  w_i = desirable_weight or undesirable_weight                     TODO 3

Conventions (TRL 1.16's KTOTrainer._compute_loss, loss_type "kto"):
- The reference model is frozen: its log-probs are constants, detached, and get no gradient.
- z_0 comes from the mismatched (KL) pairs, not from the examples themselves, and is a constant
  too: detached, then clamped at 0 (a KL is never negative; its estimate can be).
- The loss is 1 - sigmoid, bounded in [0, 1], not DPO's -log sigmoid: a response far past the
  reference point stops pulling, whichever way it is labelled.
- The weights multiply each example's loss and the mean is over all examples: it is not divided
  by the weights' sum (TRL concatenates the weighted losses and takes their mean).

Shapes: policy_logps, ref_logps, desirable (bool) (B,); policy_kl_logps, ref_kl_logps (K,);
kto_loss returns the loss () and z_0 (), both in the inputs' dtype.
"""

import math

import torch


def _check_inputs(logps, desirable, beta, weights):
    """Raise ValueError unless the log-probs are finite non-empty 1-D pairs and the numbers valid."""
    policy_logps, ref_logps, policy_kl_logps, ref_kl_logps = logps
    for name, first, second in (
        ("policy_logps and ref_logps", policy_logps, ref_logps),
        ("policy_kl_logps and ref_kl_logps", policy_kl_logps, ref_kl_logps),
    ):
        if first.shape != second.shape:
            raise ValueError(f"{name} must have the same shape")
        if first.ndim != 1 or first.shape[0] == 0:
            raise ValueError(f"{name} must be non-empty 1-D tensors")
        if not (first.is_floating_point() and bool(torch.isfinite(first).all() & torch.isfinite(second).all())):
            raise ValueError(f"{name} must be finite floating-point tensors")
    if desirable.dtype != torch.bool or desirable.shape != policy_logps.shape:
        raise ValueError("desirable must be a bool tensor of the shape of policy_logps")
    beta = float(beta)
    if not math.isfinite(beta) or beta <= 0:
        raise ValueError("beta must be a positive finite number")
    weights = tuple(float(weight) for weight in weights)
    if not all(math.isfinite(weight) and weight >= 0 for weight in weights):
        raise ValueError("desirable_weight and undesirable_weight must be finite and >= 0")
    return (beta, *weights)


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
    """Mean KTO loss of a batch of unpaired examples, and the reference point it used.

    Args:
        policy_logps: (B,) log pi_theta(y_i | x_i), summed over each response's tokens.
        ref_logps: (B,) log pi_ref(y_i | x_i); a constant (no gradient reaches it).
        desirable: (B,) bool, True where the response is labelled desirable.
        policy_kl_logps: (K,) log pi_theta(y'_j | x_j) on mismatched pairs (a response of
            another prompt), for the reference point.
        ref_kl_logps: (K,) log pi_ref(y'_j | x_j) on the same mismatched pairs.
        beta: positive finite, the scale of the log-ratios (TRL default 0.1).
        desirable_weight, undesirable_weight: finite >= 0, each example's weight by its label
            (TRL: both 1.0).

    Returns:
        (loss, kl): the scalar batch mean of the weighted losses, and the scalar reference
        point z_0 (detached, >= 0), both in the inputs' dtype.

    Raises:
        ValueError: on mismatched, non-1-D, empty or non-finite log-probs, a desirable mask
            that is not bool or not (B,), beta <= 0 or not finite, or a negative or non-finite
            weight.
    """
    logps = (policy_logps, ref_logps, policy_kl_logps, ref_kl_logps)
    beta, desirable_weight, undesirable_weight = _check_inputs(
        logps, desirable, beta, (desirable_weight, undesirable_weight)
    )

    # TODO 1: the reference point z_0 from the mismatched pairs, a constant clamped at 0
    kl = (policy_kl_logps - ref_kl_logps).mean()  # () batch estimate of KL(pi || pi_ref)
    kl = kl.detach().clamp(min=0)  # () no gradient; a KL is never below 0
    # END TODO 1

    # TODO 2: each example's loss against the reference point, by its label
    logratios = policy_logps - ref_logps.detach()  # (B,) r = log pi / pi_ref
    desirable_losses = 1 - torch.sigmoid(beta * (logratios - kl))  # (B,) small once r is above z_0
    undesirable_losses = 1 - torch.sigmoid(beta * (kl - logratios))  # (B,) small once r is below z_0
    losses = torch.where(desirable, desirable_losses, undesirable_losses)  # (B,) in [0, 1]
    # END TODO 2

    # TODO 3: each loss weighted by its label, then the mean over every example
    weights = torch.where(desirable, desirable_weight, undesirable_weight).to(losses.dtype)  # (B,)
    loss = (weights * losses).mean()  # () divided by B, not by the weights' sum
    # END TODO 3
    return loss, kl
