"""Trusted fixture builders both sides may read: the judge builds a model here to compute the
expected values, and asks a contestant to build the same one there (`learner.build("toy_grpo.
tiny_policy", 3)`), so that the learner's code gets an object of its own process.

One module per kata that needs objects (models, backbones); no learner code, no reference.
"""
