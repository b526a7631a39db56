"""Per-token log-probs of a sequence under a language model, and the entropy of each prediction.

A causal LM reads input_ids (B, T) and returns logits (B, T, V): the logits at position t are its
prediction of the NEXT token, input_ids[:, t + 1]. Scoring a response is one shift, a log-softmax
over the vocabulary and a gather of the taken token:

    logp[b, t] = log_softmax(logits[b, t])[input_ids[b, t + 1]]
               = logits[b, t, y] - logsumexp_v logits[b, t, v],    y = input_ids[b, t + 1]
    kept where response_mask[b, t + 1] (token t + 1 is a response token), exactly 0 elsewhere

    H[..] = -sum_v p_v log p_v = -sum_v exp(log p_v) * log p_v,   log p = log_softmax(logits)

Conventions (TRL 1.16.0, trl.trainer.utils: GRPOTrainer scores completions with
`add_fused_lm_head`, which pairs `last_hidden_state[:, :-1]` with `labels[:, 1:]`, labels being
input_ids with -100 outside the completion, and fills 0 where the label is -100;
`selective_log_softmax(logits, index)` and `entropy_from_logits(logits)` compute the same on
given logits):
- The result has T - 1 columns: column t scores token t + 1 with the logits at t. Token 0 has no
  logits scoring it, so response_mask[:, 0] must be False; the logits at T - 1 score nothing.
- The mask is the scored token's: response_mask[:, 1:]. The result is exactly 0 where it is
  False, whatever the logits there hold (padding may hold -inf or NaN), and no NaN gradient comes
  back from there: those logits are replaced by 0 before the log-softmax (torch.where on the
  inputs), because multiplying a NaN by 0 afterwards is still NaN, in the value or the gradient.
- log_softmax, never log(softmax): softmax underflows to 0 for logits ~104 below the row's max in
  float32, and log(0) = -inf. verl's `logprobs_from_logits` and OpenRLHF's
  `log_probs_from_logits` compute the same gather and leave the mask to the loss.
- The entropy sums over V (it is log V for uniform logits, 0 for a one-hot distribution).

Shapes: logits (B, T, V) float, input_ids (B, T) integer in [0, V), response_mask (B, T) bool;
response_log_probs returns (B, T - 1) in the logits' dtype. token_entropy: logits (..., V) finite,
returns (...).
"""

import torch


def _check_sequences(logits, input_ids, response_mask) -> None:
    """Raise ValueError unless logits (B, T, V), input_ids (B, T) and response_mask (B, T) fit."""
    if not all(isinstance(t, torch.Tensor) for t in (logits, input_ids, response_mask)):
        raise ValueError("logits, input_ids and response_mask must be tensors")
    if not logits.is_floating_point() or logits.ndim != 3:
        raise ValueError("logits must be a floating-point tensor of shape (B, T, V)")
    batch, length, vocab = logits.shape
    if length < 2 or vocab < 1:
        raise ValueError("logits need T >= 2 positions and V >= 1 vocabulary entries")
    if input_ids.dtype not in (torch.int32, torch.int64) or input_ids.shape != (batch, length):
        raise ValueError(f"input_ids must be an integer tensor of shape {(batch, length)}")
    if response_mask.dtype != torch.bool or response_mask.shape != (batch, length):
        raise ValueError(f"response_mask must be a bool tensor of shape {(batch, length)}")
    if bool(((input_ids < 0) | (input_ids >= vocab)).any()):
        raise ValueError(f"input_ids must lie in [0, {vocab})")
    if bool(response_mask[:, 0].any()):
        raise ValueError("response_mask[:, 0] must be False: no logits score the first token")


def response_log_probs(logits, input_ids, response_mask):
    """Log-prob of each taken response token: column t scores input_ids[:, t + 1].

    Args:
        logits: (B, T, V) float; logits[:, t] predict token t + 1. Where the scored token is not
            a response token they may hold anything (-inf, NaN).
        input_ids: (B, T) int32/int64 token ids in [0, V).
        response_mask: (B, T) bool, True on response tokens; False at column 0.

    Returns:
        (B, T - 1) tensor in the logits' dtype: log p(input_ids[:, t + 1] | logits[:, t]) where
        response_mask[:, t + 1], exactly 0 elsewhere (and no gradient from there).

    Raises:
        ValueError: on wrong types or shapes, T < 2, ids outside [0, V), or a True in column 0.
    """
    _check_sequences(logits, input_ids, response_mask)

    # TODO 1: the shift: the logits at t score the token at t + 1
    next_logits = logits[:, :-1]  # (B, T-1, V) the last position predicts nothing we have
    targets = input_ids[:, 1:]  # (B, T-1) the token each position predicts
    mask = response_mask[:, 1:]  # (B, T-1) is that token a response token?
    # END TODO 1

    # TODO 2: replace the logits of masked positions before anything reads them
    safe_logits = torch.where(mask.unsqueeze(-1), next_logits, 0.0)  # (B, T-1, V) padding -> 0
    # END TODO 2

    # TODO 3: log_softmax over the vocabulary, gather the taken token, exact zeros where masked
    log_probs = safe_logits.log_softmax(dim=-1)  # (B, T-1, V)
    taken = log_probs.gather(dim=-1, index=targets.unsqueeze(-1)).squeeze(-1)  # (B, T-1)
    token_logp = taken.masked_fill(~mask, 0.0)  # (B, T-1) 0 where not a response token
    # END TODO 3
    return token_logp


def token_entropy(logits):
    """Entropy of the softmax over the last dimension, per position: -sum_v p_v log p_v.

    Args:
        logits: (..., V) finite float tensor, V >= 1.

    Returns:
        (...) tensor in the logits' dtype, in nats, between 0 (one-hot) and log V (uniform).

    Raises:
        ValueError: unless logits is a finite floating-point tensor with at least one dimension.
    """
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point():
        raise ValueError("logits must be a floating-point tensor")
    if logits.ndim < 1 or logits.shape[-1] < 1:
        raise ValueError("logits must have a last (vocabulary) dimension of size >= 1")
    if not bool(torch.isfinite(logits).all()):
        raise ValueError("logits must be finite")

    # TODO 4: the entropy from log_softmax, summed over the vocabulary
    log_p = logits.log_softmax(dim=-1)  # (..., V) finite, even where p underflows to 0
    entropy = -(log_p.exp() * log_p).sum(dim=-1)  # (...) >= 0
    # END TODO 4
    return entropy
