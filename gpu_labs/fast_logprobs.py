"""Log-probs of chosen tokens without materialising the (..., V) log-softmax.

`reference/token_logprobs.py` is what learners read: `log_softmax` over the vocabulary, then
`gather`. That writes a tensor as large as the logits (500 MB at 8 x 512 x 32,000 in float32),
and its backward two more. This module computes the same numbers as TRL's
`selective_log_softmax` does (trl.trainer.utils, 1.16.0):

    log p(y) = z_y - logsumexp_v z_v          gathered logit minus a per-row logsumexp

with the logsumexp taken over chunks of `chunk_rows` rows, so that only one chunk's temporaries
exist at a time, and a backward that fills the gradient chunk by chunk in place:

    d log p(y) / d z_v = [v = y] - softmax(z)_v

bfloat16 and float16 logits are reduced in float32 (the result is cast back), since a
logsumexp accumulated in bfloat16 loses the small log-probs. There is no shift and no mask
here: slice `logits[:, :-1]` and `input_ids[:, 1:]` first and mask afterwards, as TRL does; the
logits of every row must then be finite (a NaN row gives NaN, in the value and the gradient).

tests/test_token_logprobs.py holds it to the reference (values and gradients);
benchmarks/bench_token_logprobs.py measures its peak memory against log_softmax + gather.
"""

import torch

CHUNK_ROWS = 256  # rows of V logits per chunk: 32 MB of float32 temporaries at V = 32,000


def selective_log_probs(logits, index, chunk_rows=CHUNK_ROWS):
    """log_softmax(logits, -1) gathered at `index`, one (..., V) row at a time in chunks.

    Args:
        logits: (..., V) float tensor, at least 1-D, finite where the result is used.
        index: (...) int32/int64 ids in [0, V), the logits' shape without the last dimension.
        chunk_rows: rows per chunk, >= 1.

    Returns:
        (...) tensor in the logits' dtype: logits[..., index] - logsumexp(logits, -1).

    Raises:
        ValueError: on non-float logits, an index of another shape or dtype, ids outside [0, V),
            or chunk_rows < 1.
    """
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point() or logits.ndim < 1:
        raise ValueError("logits must be a floating-point tensor of shape (..., V)")
    if not isinstance(index, torch.Tensor) or index.dtype not in (torch.int32, torch.int64):
        raise ValueError("index must be an int32 or int64 tensor")
    if index.shape != logits.shape[:-1]:
        raise ValueError(f"index must have shape {tuple(logits.shape[:-1])}, not {tuple(index.shape)}")
    if bool(((index < 0) | (index >= logits.shape[-1])).any()):
        raise ValueError(f"index must lie in [0, {logits.shape[-1]})")
    if int(chunk_rows) < 1:
        raise ValueError("chunk_rows must be >= 1")
    return _SelectiveLogProbs.apply(logits, index.long(), int(chunk_rows))


def _as_blocks(x):
    """x (..., V) as (M, S, V) without a copy where x's leading dimensions allow it."""
    if x.ndim == 1:
        return x.view(1, 1, -1)
    if x.ndim == 2:
        return x.unsqueeze(0)
    return x.flatten(0, -3)


def _chunks(blocks, chunk_rows):
    """(m, start, stop): every row of blocks (M, S, V), chunk_rows rows of one block at a time."""
    for m in range(blocks.shape[0]):
        for start in range(0, blocks.shape[1], chunk_rows):
            yield m, start, min(start + chunk_rows, blocks.shape[1])


class _SelectiveLogProbs(torch.autograd.Function):
    """Forward: gathered logit minus chunked logsumexp. Backward: one-hot minus softmax, chunked."""

    @staticmethod
    def forward(ctx, logits, index, chunk_rows):
        compute = torch.float64 if logits.dtype == torch.float64 else torch.float32
        blocks = _as_blocks(logits)  # (M, S, V)
        lse = torch.empty(blocks.shape[:2], dtype=compute, device=logits.device)  # (M, S)
        for m, start, stop in _chunks(blocks, chunk_rows):
            lse[m, start:stop] = blocks[m, start:stop].to(compute).logsumexp(dim=-1)
        picked = logits.gather(-1, index.unsqueeze(-1)).squeeze(-1).to(compute)  # (...)
        ctx.save_for_backward(logits, index, lse)
        ctx.chunk_rows = chunk_rows
        return (picked - lse.view(index.shape)).to(logits.dtype)  # (...)

    @staticmethod
    def backward(ctx, grad_out):
        logits, index, lse = ctx.saved_tensors
        blocks = _as_blocks(logits)  # (M, S, V)
        targets = index.reshape(blocks.shape[:2])  # (M, S)
        upstream = grad_out.reshape(blocks.shape[:2]).to(lse.dtype)  # (M, S)
        grad = torch.empty(blocks.shape, dtype=logits.dtype, device=logits.device)  # (M, S, V)
        for m, start, stop in _chunks(blocks, ctx.chunk_rows):
            g = upstream[m, start:stop].unsqueeze(-1)  # (rows, 1)
            chunk = (blocks[m, start:stop].to(lse.dtype) - lse[m, start:stop].unsqueeze(-1)).exp_()  # softmax
            chunk.mul_(-g).scatter_add_(-1, targets[m, start:stop].unsqueeze(-1), g)  # g * (one-hot - p)
            grad[m, start:stop] = chunk
        return grad.view(logits.shape), None, None
