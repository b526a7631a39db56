"""The memory-aware log-probs (gpu_labs/fast_logprobs.py) against the kata's reference."""

import pytest
import torch

from gpu_labs.fast_logprobs import selective_log_probs
from reference.token_logprobs import response_log_probs

B, T, V = 3, 9, 50


def batch(seed: int, dtype=torch.float32):
    """Seeded logits (B, T, V) with a few entries 150 below the rest, ids, and a ragged mask."""
    generator = torch.Generator().manual_seed(seed)
    logits = 3.0 * torch.randn(B, T, V, generator=generator, dtype=torch.float64)
    logits[..., :3] -= 150.0  # ids 0..2: softmax underflows to 0 in float32
    ids = torch.randint(0, V, (B, T), generator=generator)
    ids[:, ::4] = 1
    lengths = torch.tensor([T, 4, 6]).unsqueeze(-1)  # (B, 1)
    mask = (torch.arange(T) >= 2) & (torch.arange(T) < lengths)  # (B, T): prompt of 2, then padding
    return logits.to(dtype), ids, mask


def fast_response_log_probs(logits, ids, mask, chunk_rows):
    """The kata's contract from the fast function: TRL's shift, then the mask."""
    picked = selective_log_probs(logits[:, :-1], ids[:, 1:], chunk_rows=chunk_rows)  # (B, T-1)
    return picked.masked_fill(~mask[:, 1:], 0.0)


@pytest.mark.parametrize("chunk_rows", [1, 4, 256])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_values_and_gradients_match_the_reference(chunk_rows, dtype):
    logits, ids, mask = batch(0, dtype)
    weights = torch.rand(B, T - 1, generator=torch.Generator().manual_seed(1), dtype=dtype)
    results = []
    for version in (response_log_probs, lambda *a: fast_response_log_probs(*a, chunk_rows)):
        leaf = logits.clone().requires_grad_(True)
        out = version(leaf, ids, mask)
        (out * weights).sum().backward()
        results.append((out.detach(), leaf.grad))
    (want, want_grad), (got, got_grad) = results
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == torch.float32 else {"rtol": 1e-12, "atol": 1e-12}
    assert got.dtype == dtype and got_grad.dtype == dtype
    torch.testing.assert_close(got, want, **tol)
    torch.testing.assert_close(got_grad, want_grad, **tol)
    assert bool((want < -100).any())  # the fixture reaches the underflow range


def test_bfloat16_stays_within_bfloat16_rounding_of_float64():
    logits, ids, _ = batch(2, torch.bfloat16)
    exact = torch.log_softmax(logits.double(), -1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)  # (B, T)
    leaf = logits.clone().requires_grad_(True)
    got = selective_log_probs(leaf, ids, chunk_rows=5)
    got.sum().backward()
    assert got.dtype == torch.bfloat16 and leaf.grad.dtype == torch.bfloat16
    torch.testing.assert_close(got.double(), exact, rtol=8e-3, atol=1e-2)  # one bf16 rounding of the result
    exact_grad = torch.nn.functional.one_hot(ids, V) - torch.softmax(logits.double(), -1)
    torch.testing.assert_close(leaf.grad.double(), exact_grad, rtol=8e-3, atol=4e-3)


def test_one_and_two_dimensional_logits_and_int32_ids():
    logits, ids, _ = batch(3)
    want = torch.log_softmax(logits, -1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)  # (B, T)
    torch.testing.assert_close(selective_log_probs(logits[0], ids[0].int()), want[0])
    torch.testing.assert_close(selective_log_probs(logits[0, 0], ids[0, 0]), want[0, 0])


def test_strided_logits_are_not_copied_whole():
    """logits[:, :-1] of a contiguous tensor is not contiguous; each batch row still is, and is read in place."""
    logits, ids, _ = batch(4)
    sliced = logits[:, :-1]
    assert not sliced.is_contiguous()
    want = torch.log_softmax(sliced, -1).gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    torch.testing.assert_close(selective_log_probs(sliced, ids[:, 1:], chunk_rows=3), want)


@pytest.mark.parametrize(
    ("why", "args"),
    [
        ("integer logits", (torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, dtype=torch.long))),
        ("float index", (torch.zeros(2, 3), torch.zeros(2))),
        ("index of another shape", (torch.zeros(2, 3), torch.zeros(3, dtype=torch.long))),
        ("an id equal to V", (torch.zeros(2, 3), torch.tensor([0, 3]))),
        ("a negative id", (torch.zeros(2, 3), torch.tensor([0, -1]))),
    ],
)
def test_bad_input_raises_value_error(why, args):
    with pytest.raises(ValueError):
        selective_log_probs(*args)


def test_chunk_rows_below_one_raises_value_error():
    with pytest.raises(ValueError, match="chunk_rows"):
        selective_log_probs(torch.zeros(2, 3), torch.zeros(2, dtype=torch.long), chunk_rows=0)
