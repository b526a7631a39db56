"""The sampling kata against transformers' own logits warpers: `nox -s conformance`.

filter_logits is compared with a LogitsProcessorList built as GenerationMixin._get_logits_processor
builds it (temperature, top-k, top-p, min-p; min_tokens_to_keep 1), from the same explicit
parameters: the same -inf positions and the same finite values, exactly, on seeded logits with
ties, in float32 and float64. sample_tokens draws what torch.multinomial draws on the softmax of
the warped logits with the same generator, as GenerationMixin._sample does. A misconception
variant, loaded from the kata, disagrees.
"""

import importlib.util
import types

import pytest
import torch

if importlib.util.find_spec("transformers") is None:
    pytest.exit("the conformance tests need transformers (installed with the pinned trl: nox -s conformance)", 1)

import transformers  # noqa: E402
from transformers.generation import logits_process as warpers  # noqa: E402

from grader.content.catalogue import get_kata  # noqa: E402
from reference import sampling  # noqa: E402

PARAMETERS = [
    {"temperature": 0.7, "top_k": 10, "top_p": 0.9, "min_p": 0.05},
    {"temperature": 1.3, "top_k": 0, "top_p": 0.5, "min_p": 0.0},
    {"temperature": 1.0, "top_k": 5, "top_p": 1.0, "min_p": 0.1},
    {"temperature": 0.5, "top_k": 0, "top_p": 1.0, "min_p": 0.3},
    {"temperature": 1.0, "top_k": 3, "top_p": 0.3, "min_p": 0.0},
    {"temperature": 2.0, "top_k": 1, "top_p": 1e-9, "min_p": 1.0},
]


def transformers_warpers(temperature, top_k, top_p, min_p):
    """generate's warpers for these parameters, in its order (transformers 5, do_sample, no beams)."""
    chain = warpers.LogitsProcessorList()
    if temperature != 1.0:
        chain.append(warpers.TemperatureLogitsWarper(float(temperature)))
    if top_k != 0:
        chain.append(warpers.TopKLogitsWarper(top_k=top_k, min_tokens_to_keep=1))
    if top_p < 1.0:
        chain.append(warpers.TopPLogitsWarper(top_p=top_p, min_tokens_to_keep=1))
    chain.append(warpers.MinPLogitsWarper(min_p=min_p, min_tokens_to_keep=1))  # min_p 0 removes nothing
    return chain


def warped(logits, **parameters):
    """transformers' warped scores for 2-D logits (the warpers take (B, V))."""
    return transformers_warpers(**parameters)(None, logits.clone())


def seeded_logits(seed: int, dtype, tied: bool):
    """(64, 40) logits, spread ~4 nats; `tied`: rounded to halves, so rows have ties."""
    logits = 2.0 * torch.randn(64, 40, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return (logits * 2).round().div(2).to(dtype) if tied else logits.to(dtype)


@pytest.mark.parametrize("tied", [False, True], ids=["distinct", "tied"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("parameters", PARAMETERS, ids=lambda p: "-".join(str(v) for v in p.values()))
@pytest.mark.parametrize("seed", [0, 1])
def test_filter_logits_equals_generates_warpers(seed, parameters, dtype, tied):
    logits = seeded_logits(seed, dtype, tied)
    ours, theirs = sampling.filter_logits(logits, **parameters), warped(logits, **parameters)
    assert torch.equal(ours.isinf(), theirs.isinf())
    assert torch.equal(ours, theirs)
    assert bool(ours.isfinite().any(dim=-1).all())  # at least one token kept in every row


def test_the_tied_fixture_has_ties_at_the_kth_place_and_top_k_keeps_them():
    """More than k tokens kept somewhere: the tie convention is exercised, not assumed."""
    logits = seeded_logits(0, torch.float64, tied=True)
    kept = warped(logits, temperature=1.0, top_k=5, top_p=1.0, min_p=0.0).isfinite().sum(dim=-1)
    assert bool((kept > 5).any())
    assert torch.equal(sampling.filter_logits(logits, top_k=5).isfinite().sum(dim=-1), kept)


def test_generates_default_top_k_is_50():
    """Unset, generate's top_k is 50 (the lesson says so): a warper that filter_logits only applies if asked."""
    config = transformers.GenerationConfig()
    assert config._get_default_generation_params()["top_k"] == 50


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("parameters", PARAMETERS[:3], ids=lambda p: "-".join(str(v) for v in p.values()))
def test_sample_tokens_draws_what_multinomial_draws_on_the_warped_softmax(parameters, dtype):
    logits = seeded_logits(2, dtype, tied=False)
    theirs = warped(logits, **parameters)
    probs = torch.nn.functional.softmax(theirs, dim=-1)  # as GenerationMixin._sample
    expected = torch.multinomial(probs, num_samples=1, generator=torch.Generator().manual_seed(5)).squeeze(1)
    tokens, log_probs = sampling.sample_tokens(logits, torch.Generator().manual_seed(5), **parameters)
    assert torch.equal(tokens, expected)
    assert torch.equal(log_probs, theirs.log_softmax(dim=-1).gather(-1, expected.unsqueeze(-1)).squeeze(-1))
    assert bool(log_probs.isfinite().all())


def variant_module(misconception: str) -> types.ModuleType:
    """The reference with one misconception's edit, executed into a fresh module."""
    module = types.ModuleType(f"sampling_{misconception}")
    exec(compile(get_kata("sampling").variant(misconception), module.__name__, "exec"), module.__dict__)
    return module


@pytest.mark.parametrize(
    ("misconception", "parameters"),
    [
        ("top_k_ties_dropped", {"temperature": 1.0, "top_k": 5, "top_p": 1.0, "min_p": 0.0}),
        ("top_p_crossing_token_dropped", {"temperature": 1.0, "top_k": 0, "top_p": 0.5, "min_p": 0.0}),
        ("top_p_before_top_k", {"temperature": 1.0, "top_k": 6, "top_p": 0.6, "min_p": 0.0}),
        ("min_p_before_temperature", {"temperature": 2.0, "top_k": 0, "top_p": 1.0, "min_p": 0.2}),
    ],
)
def test_a_misconception_variant_disagrees_with_transformers(misconception, parameters):
    logits = seeded_logits(3, torch.float64, tied=True)
    variant = variant_module(misconception)
    assert not torch.equal(variant.filter_logits(logits, **parameters), warped(logits, **parameters))
    assert torch.equal(sampling.filter_logits(logits, **parameters), warped(logits, **parameters))
