"""Supervised fine-tuning (SFT): the negative log-likelihood of the response tokens only.

A batch holds B sequences of T tokens: a prompt, then the response the model should learn, then
padding. `token_log_probs[b, t]` is log pi(x_t | x_<t) under the policy being trained (a token
logprobs step gives it); `response_mask[b, t]` is True on response tokens, False on prompt and
padding. SFT maximises the likelihood of the response tokens, so it minimises their NLL:

    masked_normalize(v, m, c, dim) = sum(v where m) / c              over everything, or along dim
    sft_loss(lp, m)                = -sum(lp where m) / count(m)      one token mean over the batch
    microbatch loss                = mean_b( -sum_t(lp[b] where m[b]) / c ) / k   then .backward()

Conventions:
- Completion-only loss, as TRL 1.16.0's SFTTrainer (`completion_only_loss`, loss_type "nll"):
  prompt and padding get label -100, and `compute_loss` returns `per_token_loss.sum() /
  num_tokens`, a token mean over the batch's completion tokens (a sequence with more response
  tokens counts more). Under gradient accumulation TRL passes `num_items_in_batch`, the count of
  all k microbatches together, and does not divide by k. Prompt and padding positions may hold
  anything, -inf included: they are selected out, not multiplied by 0.
- masked_normalize, sft_microbatch_step and normalize_constant follow the Stanford CS336
  assignment 5 handout (`masked_normalize`, `sft_microbatch_train_step`): each sequence's NLL is
  summed over its response tokens and divided by a constant c (1.0 by default: not a token
  count), then averaged over the microbatch's sequences and divided by k, the gradient
  accumulation steps. A fixed c makes the microbatch losses add up: with k microbatches of
  equal size, the gradients that k backward calls accumulate equal the whole batch's gradient.
  A per-microbatch token count would not (each microbatch would divide by its own count).
- sft_microbatch_step calls `loss.backward()` itself: the gradient lands in the `.grad` of the
  leaves upstream (here `token_log_probs`, which must require grad), and the returned loss is
  detached, for logging only.
- sft_loss and sft_microbatch_step write their masked sums out rather than call
  masked_normalize, so that each step can be written and checked on its own.

Shapes: values and mask the same shape; token_log_probs and response_mask (B, T), mask bool.
"""

import math
import numbers

import torch


def _check_values_and_mask(values, mask, name: str) -> None:
    """Raise ValueError unless values is a float tensor and mask a bool tensor of its shape."""
    if not (isinstance(values, torch.Tensor) and isinstance(mask, torch.Tensor)):
        raise ValueError(f"{name} and its mask must be tensors")
    if not values.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor")
    if mask.dtype != torch.bool or mask.shape != values.shape:
        raise ValueError(f"the mask must be a bool tensor of the shape of {name} {tuple(values.shape)}")


def _check_positive(value, name: str) -> None:
    """Raise ValueError unless value is a finite number > 0 (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, got {type(value).__name__}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be finite and > 0, got {value}")


def _check_batch(token_log_probs, response_mask) -> None:
    """Raise ValueError unless (B, T) float log-probs, a bool mask with a response token, finite there."""
    _check_values_and_mask(token_log_probs, response_mask, "token_log_probs")
    if token_log_probs.ndim != 2:
        raise ValueError(f"token_log_probs must be (B, T), got shape {tuple(token_log_probs.shape)}")
    if not bool(response_mask.any()):
        raise ValueError("response_mask selects no response token")
    if not bool(token_log_probs.detach()[response_mask].isfinite().all()):
        raise ValueError("token_log_probs must be finite on response tokens")


def masked_normalize(values, mask, normalize_constant, dim=None):
    """Sum of `values` where `mask` is True, divided by `normalize_constant`.

    Args:
        values: float tensor, any shape. Unselected positions may hold anything (even inf, NaN).
        mask: bool tensor of the shape of `values`.
        normalize_constant: a finite number > 0; the divisor, whatever the mask selects.
        dim: None to sum every selected element (a 0-d tensor); an int to sum along that
            dimension only.

    Returns:
        0-d tensor (dim=None) or `values`' shape without `dim`, dtype of `values`.

    Raises:
        ValueError: if mask is not a bool tensor of values' shape, or the constant is not > 0.
    """
    _check_values_and_mask(values, mask, "values")
    _check_positive(normalize_constant, "normalize_constant")

    # TODO 1: sum the selected values, then divide by the constant
    kept = values.masked_fill(~mask, 0.0)  # like values; unselected positions hold 0
    if dim is None:
        total = kept.sum()  # (): every selected element
    else:
        total = kept.sum(dim=dim)  # values' shape without dim
    normalized = total / normalize_constant  # like total: a constant, not a count
    # END TODO 1
    return normalized


def sft_loss(token_log_probs, response_mask):
    """The NLL of the response tokens: one token mean over the batch's response tokens (TRL).

    Args:
        token_log_probs: (B, T) float, log pi(x_t | x_<t); prompt and padding may hold anything.
        response_mask: (B, T) bool, True on response tokens.

    Returns:
        0-d tensor, dtype of token_log_probs: -sum(log-probs of response tokens) / their count.

    Raises:
        ValueError: if the shapes or dtypes are wrong, no token is selected, or a selected
            log-prob is not finite.
    """
    _check_batch(token_log_probs, response_mask)

    # TODO 2: the negative log-likelihood of the response tokens, averaged over those tokens
    nll = -token_log_probs.masked_fill(~response_mask, 0.0)  # (B, T): 0 on prompt and padding
    loss = nll.sum() / response_mask.sum()  # (): every response token of the batch weighs the same
    # END TODO 2
    return loss


def sft_microbatch_step(token_log_probs, response_mask, gradient_accumulation_steps, normalize_constant=1.0):
    """One microbatch of gradient accumulation (CS336): scaled NLL, then loss.backward().

    Args:
        token_log_probs: (B, T) float leaf or graph output that requires grad.
        response_mask: (B, T) bool, True on response tokens.
        gradient_accumulation_steps: k, an int >= 1: the microbatches per optimizer step.
        normalize_constant: c, a finite number > 0 dividing each sequence's summed NLL.

    Returns:
        (loss, metadata): loss the 0-d detached microbatch loss, already divided by k;
        metadata {"unscaled_loss": the loss before dividing by k, "response_tokens": their count}.
        Side effect: the loss's gradient is added into the `.grad` of token_log_probs' leaves.

    Raises:
        ValueError: if the batch is invalid (as sft_loss), token_log_probs does not require
            grad, k is not an int >= 1, or c is not a finite number > 0.
    """
    _check_batch(token_log_probs, response_mask)
    if not token_log_probs.requires_grad:
        raise ValueError("token_log_probs must require grad: sft_microbatch_step calls backward")
    k = gradient_accumulation_steps
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValueError(f"gradient_accumulation_steps must be an int >= 1, got {k!r}")
    _check_positive(normalize_constant, "normalize_constant")

    # TODO 3: sum each response's NLL over c, average the sequences, divide by k, backpropagate
    nll = -token_log_probs.masked_fill(~response_mask, 0.0)  # (B, T): response tokens only
    per_sequence = nll.sum(dim=-1) / normalize_constant  # (B,): a constant, not a token count
    loss = per_sequence.mean() / gradient_accumulation_steps  # (): this microbatch's share
    loss.backward()  # adds d loss / d token_log_probs into the leaves' .grad
    # END TODO 3
    metadata = {"unscaled_loss": per_sequence.detach().mean(), "response_tokens": response_mask.sum()}
    return loss.detach(), metadata
