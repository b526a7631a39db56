"""Backbones for the reward_model checks (no downloads). Token id 0 is the padding token.

"lesson" is the lesson's embedding -> linear -> GELU, which reads each position on its own;
"causal" is an embedding and a one-layer GRU, where position t summarises tokens 0..t like a
causal LM. `make_backbone(kind, seed)` builds one with seeded weights and leaves the global RNG
as it was, so the judge (for the reference) and a contestant (for the learner) build identical
ones: `learner.build("reward_model.make_backbone", "causal", 0)`.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, WIDTH, PAD = 16, 6, 0


class LessonBackbone(nn.Module):
    """The lesson's backbone: embedding, linear, GELU; each position is read on its own."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.linear = nn.Linear(WIDTH, WIDTH)

    def forward(self, input_ids):
        return F.gelu(self.linear(self.embed(input_ids)))  # (B, T, H)


class CausalBackbone(nn.Module):
    """Embedding and a one-layer GRU: position t summarises tokens 0..t, like a causal LM."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 5)
        self.gru = nn.GRU(5, WIDTH, batch_first=True)

    def forward(self, input_ids):
        return self.gru(self.embed(input_ids))[0]  # (B, T, H)


BACKBONES = {"lesson": LessonBackbone, "causal": CausalBackbone}


def make_backbone(kind: str, seed: int) -> nn.Module:
    """A fresh backbone with seeded weights; the global RNG is left as it was."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return BACKBONES[kind]()


def identity(input_ids):
    """A plain function from ids to ids: callable like a backbone, but not an nn.Module."""
    return input_ids


def not_a_module():
    """`identity`, for the check that RewardModel rejects a backbone that is not an nn.Module."""
    return identity
