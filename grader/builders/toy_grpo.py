"""Fixture policies of the toy_grpo checks, built the same way in the judge and in a contestant.

    learner.build("toy_grpo.tiny_policy", 5)        # a handle to the learner's copy, in the contestant
    tiny_policy(5)                                  # the same weights here, for the reference

`build_policy` repeats the reference's given code (reference/toy_grpo.py): the learner's file must
stay self-contained, and the checks only need the fixtures to be identical on both sides, which
building both from this module guarantees. A tiny policy's weights are moved by seeded noise so
that its next-token distribution is peaked (answers repeat, ratios fall on both sides of the clip);
`nearby_policy` moves one once more, to serve as a reference policy that differs.
"""

import copy

import torch
from transformers import GPT2Config, GPT2LMHeadModel

VOCAB_SIZE = 10


class TinyGPT2(GPT2LMHeadModel):
    """The reference's model, with a one-line repr (for messages that print it)."""

    def __repr__(self) -> str:
        return "<tiny GPT-2>"


def build_policy(vocab_size: int, seed: int) -> GPT2LMHeadModel:
    """A freshly initialised tiny GPT-2 (1 layer, 2 heads, width 16, no dropout); the global RNG is left as it was."""
    config = GPT2Config(
        vocab_size=int(vocab_size),
        n_positions=4,
        n_embd=16,
        n_layer=1,
        n_head=2,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=int(vocab_size) - 1,
        eos_token_id=int(vocab_size) - 1,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return GPT2LMHeadModel(config)


def perturb(model: torch.nn.Module, scale: float, generator: torch.Generator) -> torch.nn.Module:
    """Add `scale` * noise drawn from `generator` to every parameter, in place; returns `model`."""
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(scale * torch.randn(parameter.shape, generator=generator))
    return model


def tiny_policy(seed: int, spread: float = 0.5) -> TinyGPT2:
    """`build_policy(10, seed)`, its weights moved by `spread` * noise seeded with 1000 + seed."""
    policy = build_policy(VOCAB_SIZE, seed)
    policy.__class__ = TinyGPT2
    return perturb(policy, spread, torch.Generator().manual_seed(1000 + seed))


def nearby_policy(seed: int) -> tuple[TinyGPT2, torch.Generator]:
    """`tiny_policy(seed)` moved once more by 0.3 * noise from a generator seeded with `seed`.

    Returns the policy and that generator, which the checks go on drawing their fixtures from.
    """
    generator = torch.Generator().manual_seed(seed)
    return perturb(tiny_policy(seed), 0.3, generator), generator


def reference_policy(seed: int) -> TinyGPT2:
    """The policy of `nearby_policy(seed)` (what a contestant builds: one object per handle)."""
    return nearby_policy(seed)[0]


def frozen_copy(policy: torch.nn.Module) -> torch.nn.Module:
    """A deep copy whose parameters require no gradient (the reference's `frozen_copy`)."""
    return copy.deepcopy(policy).requires_grad_(False)


def old_policy(seed: int) -> TinyGPT2:
    """`frozen_copy(tiny_policy(seed))`: an old policy whose weights differ from the policy's."""
    return frozen_copy(tiny_policy(seed))
