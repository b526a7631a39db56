"""Per-token estimators of KL(policy || reference), and the masked mean that aggregates them.

A sequence's tokens were sampled from the policy pi. For each token x we know two numbers: its
log-prob under the policy (`new_logp`) and under the frozen reference model (`ref_logp`). The
exact KL(pi || pi_ref) = sum_x pi(x) log(pi(x) / pi_ref(x)) needs the whole vocabulary; from the
sampled token alone we can only estimate it (John Schulman, "Approximating KL Divergence"):

    d  = ref_logp - new_logp              log(pi_ref(x) / pi(x)), the log ratio ref / policy
    k1 = -d                               unbiased, one sample can be negative
    k2 = d**2 / 2                         >= 0, biased (exact only to second order in d)
    k3 = exp(d) - d - 1                   >= 0 and unbiased: k1 plus (r - 1), whose mean is 0

    masked_mean(v, m, dim) = sum(v where m) / count(m)   over everything, or along `dim`

Conventions:
- The direction is KL(policy || reference), the tokens are the policy's samples, and d is
  ref minus policy. k3 is TRL's GRPO `per_token_kl`; verl calls it "low_var_kl" (and clamps it),
  OpenRLHF "k3". Flipping d gives a different quantity, not the same KL.
- The functions are pure: they neither detach nor clamp. Gradients reach both inputs; freezing
  the reference is the caller's job (it is computed under torch.no_grad or detached).
- The result has the inputs' shape and dtype (OpenRLHF upcasts to float32; here nothing does).
- masked_mean with dim=None weighs every selected element the same (a token mean: longer rows
  count more); with a dim, each slice is averaged over its own selected elements. Unselected
  positions are ignored whatever they hold, inf and NaN included. A mean over nothing raises
  ValueError, or is NaN with empty="nan" (0 / 0, as CS336's masked_mean), never a silent 0.

Shapes: new_logp and ref_logp any shape, the same; values and mask the same shape, mask bool.
"""

import torch


def _check_log_probs(new_logp, ref_logp) -> None:
    """Raise ValueError unless both are finite floating-point tensors of one shape."""
    if not (isinstance(new_logp, torch.Tensor) and isinstance(ref_logp, torch.Tensor)):
        raise ValueError("new_logp and ref_logp must be tensors")
    if not (new_logp.is_floating_point() and ref_logp.is_floating_point()):
        raise ValueError("new_logp and ref_logp must be floating-point tensors")
    if new_logp.shape != ref_logp.shape:
        raise ValueError(f"new_logp {tuple(new_logp.shape)} and ref_logp {tuple(ref_logp.shape)} differ in shape")
    if not (torch.isfinite(new_logp).all() and torch.isfinite(ref_logp).all()):
        raise ValueError("new_logp and ref_logp must be finite")


def k1_kl(new_logp, ref_logp):
    """k1 = new_logp - ref_logp: the plain log ratio policy / reference, one value per token.

    Args:
        new_logp: log-probs of the sampled tokens under the policy that sampled them, any shape.
        ref_logp: log-probs of the same tokens under the reference, same shape.

    Returns:
        Tensor like `new_logp`. Unbiased for KL(policy || reference); single values can be < 0.

    Raises:
        ValueError: if the inputs are not floating tensors of one shape, or not finite.
    """
    _check_log_probs(new_logp, ref_logp)
    # TODO 1: k1, the log ratio policy / reference
    log_ratio = ref_logp - new_logp  # same shape: d = log(pi_ref / pi)
    kl = -log_ratio  # same shape: log(pi / pi_ref), often negative
    # END TODO 1
    return kl


def k2_kl(new_logp, ref_logp):
    """k2 = (ref_logp - new_logp)**2 / 2: non-negative, but biased.

    Args:
        new_logp: log-probs of the sampled tokens under the policy that sampled them, any shape.
        ref_logp: log-probs of the same tokens under the reference, same shape.

    Returns:
        Tensor like `new_logp`, >= 0. Its mean over policy samples matches KL(policy || reference)
        only to second order in d; for distant policies it is off.

    Raises:
        ValueError: if the inputs are not floating tensors of one shape, or not finite.
    """
    _check_log_probs(new_logp, ref_logp)
    # TODO 2: k2, half the squared log ratio
    log_ratio = ref_logp - new_logp  # same shape: d, its sign does not matter here
    kl = log_ratio.square() / 2  # same shape, >= 0
    # END TODO 2
    return kl


def k3_kl(new_logp, ref_logp):
    """k3 = exp(d) - d - 1 with d = ref_logp - new_logp: non-negative and unbiased.

    Args:
        new_logp: log-probs of the sampled tokens under the policy that sampled them, any shape.
        ref_logp: log-probs of the same tokens under the reference, same shape.

    Returns:
        Tensor like `new_logp`, >= 0, exactly 0 where the two log-probs are equal. Its mean over
        policy samples is KL(policy || reference).

    Raises:
        ValueError: if the inputs are not floating tensors of one shape, or not finite.
    """
    _check_log_probs(new_logp, ref_logp)
    # TODO 3: k3, the ratio ref / policy minus its log minus one
    log_ratio = ref_logp - new_logp  # same shape: d = log r, with r = pi_ref / pi
    kl = torch.exp(log_ratio) - log_ratio - 1.0  # same shape: r - log r - 1 >= 0
    # END TODO 3
    return kl


def _check_values_and_mask(values, mask, dim, empty) -> None:
    """Raise ValueError unless values is a float tensor and mask a bool one of its shape, and,
    with empty="raise", the mask selects something (in every slice along dim)."""
    if not (isinstance(values, torch.Tensor) and isinstance(mask, torch.Tensor)):
        raise ValueError("values and mask must be tensors")
    if not values.is_floating_point():
        raise ValueError("values must be a floating-point tensor")
    if mask.dtype != torch.bool or mask.shape != values.shape:
        raise ValueError("mask must be a bool tensor of the shape of values")
    if empty not in ("raise", "nan"):
        raise ValueError(f'empty must be "raise" or "nan", not {empty!r}')
    selected = mask.sum() if dim is None else mask.sum(dim=dim)
    if empty == "raise" and not bool((selected > 0).all()):
        raise ValueError("mask selects nothing" + ("" if dim is None else f" in some slice along dim={dim}"))


def masked_mean(values, mask, dim=None, empty="raise"):
    """Mean of `values` over the positions where `mask` is True.

    Args:
        values: float tensor, any shape. Unselected positions may hold anything (even inf, NaN).
        mask: bool tensor of the shape of `values`.
        dim: None for one mean over every selected element (a 0-d tensor); an int to average
            along that dimension only, each slice over its own selected elements.
        empty: what a mean over nothing is: "raise" (a ValueError) or "nan" (NaN, 0 / 0, the
            convention of CS336's masked_mean).

    Returns:
        0-d tensor (dim=None) or `values`' shape without `dim`, dtype of `values`.

    Raises:
        ValueError: if mask is not a bool tensor of values' shape, if empty is neither "raise"
            nor "nan", or, with empty="raise", if the mask selects nothing overall (dim=None) or
            in some slice along `dim`.
    """
    _check_values_and_mask(values, mask, dim, empty)

    # TODO 4: sum the selected values, then divide by how many were selected
    kept = values.masked_fill(~mask, 0.0)  # like values; unselected positions hold 0
    if dim is None:
        mean = kept.sum() / mask.sum()  # (): every selected element weighs the same
    else:
        mean = kept.sum(dim=dim) / mask.sum(dim=dim)  # values' shape without dim
    # END TODO 4
    return mean
