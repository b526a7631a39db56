"""Base layers for the lora checks (no downloads): seeded nn.Linear layers, and one module that is not.

`make_linear(in_features, out_features, seed)` builds an nn.Linear with seeded weight and bias and
leaves the global RNG as it was, so the judge (for the reference) and a contestant (for the
learner) build identical ones: `learner.build("lora.make_linear", 6, 5, 0)`.
"""

import torch
import torch.nn as nn


def make_linear(in_features: int, out_features: int, seed: int) -> nn.Linear:
    """A fresh nn.Linear(in_features, out_features) with seeded weights; the global RNG is left as it was."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return nn.Linear(in_features, out_features)


def not_a_linear(in_features: int, out_features: int) -> nn.Module:
    """A module that computes like a linear layer but is not an nn.Linear (LoRALinear rejects it)."""
    return nn.Sequential(nn.Linear(in_features, out_features))
