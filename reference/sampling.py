"""Sampling the next token as transformers' `generate` does: temperature, top-k, top-p, min-p.

A language model's logits z (..., V) become a sampling distribution in four steps, each optional,
always in this order (transformers 5, GenerationMixin._get_logits_processor; its warpers in
generation/logits_process.py), and each removed token's logit becomes -inf:

    temperature  z / T                                       (TemperatureLogitsWarper)
    top-k        keep z_v >= the k-th largest logit          (TopKLogitsWarper: ties all kept)
    top-p        keep the smallest set of most likely tokens whose probability reaches p:
                 a token stays if the tokens more likely than it hold less than p together, so
                 the token that crosses p is kept                           (TopPLogitsWarper)
    min-p        keep p_v >= min_p * max_u p_u              (MinPLogitsWarper: scaled by the top)

Then `_sample` draws `torch.multinomial(softmax(filtered), num_samples=1)`. The log-prob of the
sampled token under the distribution it was drawn from is log_softmax(filtered)[token]: that is
what an inference engine reports, and it is not the trainer's log-prob of the same token (the
trainer's softmax has no temperature and no filter).

Conventions (transformers 5.x, min_tokens_to_keep = 1 as in `generate` without beams):
- top_k = 0, top_p = 1.0 and min_p = 0.0 switch their step off (`generate` then adds no warper;
  but its own default top_k is 50: unset in the generation config, top-k 50 is applied).
- top-k keeps every logit equal to the k-th largest (`scores < kth` removed), so ties can keep
  more than k tokens; k larger than V keeps all.
- top-p sorts ascending, as transformers does, and removes the tokens whose cumulative probability
  from the least likely up (their own included) is <= 1 - top_p; the most likely token always
  stays. Top-p and min-p read the softmax of the logits left by the steps before them.
- min-p compares each probability with min_p times the top probability; the top token always stays.

Shapes: logits (..., V) float, no NaN or +inf, at least one finite logit per row (-inf entries,
tokens already ruled out, are allowed); filter_logits returns (..., V) in the logits' dtype.
sample_tokens returns tokens (...) int64 and log_probs (...) in the logits' dtype.
"""

import math

import torch


def _check_filters(logits, temperature, top_k, top_p, min_p) -> None:
    """Raise ValueError unless the logits and every filter parameter are in range."""
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point():
        raise ValueError("logits must be a floating-point tensor")
    if logits.ndim < 1 or logits.shape[-1] < 1:
        raise ValueError("logits must have a last (vocabulary) dimension of size >= 1")
    if bool(logits.isnan().any()) or bool((logits == math.inf).any()):
        raise ValueError("logits must hold no NaN and no +inf")
    if not bool((logits > -math.inf).any(dim=-1).all()):
        raise ValueError("every row of logits needs at least one finite logit")
    numbers = {"temperature": temperature, "top_p": top_p, "min_p": min_p}
    for name, value in numbers.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            raise ValueError(f"{name} must be a number, got {value!r}")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature} (greedy decoding is argmax, not T = 0)")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise ValueError(f"top_k must be an integer >= 0 (0: off), got {top_k!r}")
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must lie in (0, 1] (1: off), got {top_p}")
    if not 0 <= min_p <= 1:
        raise ValueError(f"min_p must lie in [0, 1] (0: off), got {min_p}")


def filter_logits(logits, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0):
    """The logits `generate` samples from: divided by the temperature, -inf outside what it keeps.

    Args:
        logits: (..., V) float; no NaN or +inf; -inf entries allowed, at least one finite per row.
        temperature: > 0; the logits are divided by it (below 1 sharper, above 1 flatter).
        top_k: >= 0; keep the logits >= the k-th largest (ties all kept); 0 keeps all.
        top_p: in (0, 1]; keep the most likely tokens until their probability reaches top_p, the
            one that crosses it included; 1.0 keeps all.
        min_p: in [0, 1]; keep the tokens whose probability is >= min_p times the top one's;
            0.0 keeps all.

    Returns:
        (..., V) tensor in the logits' dtype: logits / temperature where kept, -inf elsewhere;
        at least one token (the most likely) is kept in every row.

    Raises:
        ValueError: on a non-float or empty logits tensor, NaN or +inf logits, a row without a
            finite logit, temperature <= 0, top_k < 0, top_p outside (0, 1], min_p outside [0, 1].
    """
    _check_filters(logits, temperature, top_k, top_p, min_p)

    # TODO 1: temperature: divide the logits by it
    scores = logits / temperature  # (..., V)
    # END TODO 1

    # TODO 2: top-k: remove the logits below the k-th largest, so that ties with it stay
    if top_k > 0:
        k = min(top_k, scores.shape[-1])
        kth = scores.topk(k, dim=-1).values[..., -1:]  # (..., 1) the k-th largest logit
        scores = scores.masked_fill(scores < kth, -math.inf)  # (..., V) ties with the k-th kept
    # END TODO 2

    # TODO 3: top-p: sorted ascending, remove the tokens whose mass from the bottom is <= 1 - top_p
    if top_p < 1.0:
        sorted_scores, order = scores.sort(dim=-1)  # (..., V) least likely first, as transformers sorts
        cumulative = sorted_scores.softmax(dim=-1).cumsum(dim=-1)  # (..., V) mass up to each, from the bottom
        remove_sorted = cumulative <= 1 - top_p  # (..., V) the crossing token's mass is above 1 - top_p: kept
        remove_sorted[..., -1] = False  # the most likely token always stays
        remove = remove_sorted.scatter(-1, order, remove_sorted)  # (..., V) back in vocabulary order
        scores = scores.masked_fill(remove, -math.inf)  # (..., V)
    # END TODO 3

    # TODO 4: min-p: remove the tokens less likely than min_p times the most likely one
    if min_p > 0.0:
        probs = scores.softmax(dim=-1)  # (..., V) after temperature, top-k and top-p
        threshold = min_p * probs.amax(dim=-1, keepdim=True)  # (..., 1) the top token always passes
        scores = scores.masked_fill(probs < threshold, -math.inf)  # (..., V)
    # END TODO 4
    return scores


def sample_tokens(logits, generator=None, **filters):
    """One token per row drawn as `generate` draws it, and its log-prob under that distribution.

    Args:
        logits: (..., V) float, as for filter_logits.
        generator: a CPU torch.Generator every draw comes from, or None (torch's global one).
        **filters: temperature, top_k, top_p, min_p, passed to filter_logits.

    Returns:
        (tokens, log_probs): tokens (...) int64 in [0, V), drawn by torch.multinomial from the
        softmax of the filtered logits; log_probs (...) in the logits' dtype, each token's
        log-prob under that filtered, temperature-scaled distribution.

    Raises:
        ValueError: as filter_logits, or if generator is neither None nor a torch.Generator.
    """
    if generator is not None and not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    filtered = filter_logits(logits, **filters)  # (..., V)

    # TODO 5: draw one token per row with torch.multinomial from the filtered softmax
    probs = filtered.softmax(dim=-1)  # (..., V) zero where filtered out
    rows = probs.reshape(-1, probs.shape[-1])  # (N, V) multinomial takes one row per draw
    drawn = torch.multinomial(rows, num_samples=1, generator=generator)  # (N, 1)
    tokens = drawn.reshape(probs.shape[:-1])  # (...)
    # END TODO 5

    # TODO 6: the log-prob of each sampled token under the filtered distribution
    log_probs_all = filtered.log_softmax(dim=-1)  # (..., V) -inf where filtered out
    log_probs = log_probs_all.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)  # (...) finite: kept tokens only
    # END TODO 6
    return tokens, log_probs
