"""The group-advantages reference and its fast variant, against a float64 loop and each other.

The kata checks compare a learner with the reference; these tests pin the reference to an
independent computation, and hold the fast variant (gpu_labs/fast_advantages.py: sort-free group
numbering, a reciprocal multiplied in place) to both, so that neither can pass by agreeing with
itself.
"""

import pytest
import torch

from gpu_labs.fast_advantages import fast_group_advantages, number_groups
from reference.group_advantages import compute_group_advantages

VERSIONS = {"reference": compute_group_advantages, "fast": fast_group_advantages}


def loop_advantages(rewards, group_ids, eps=1e-6):
    """One group at a time in float64: (r - mean) / max(population std, eps)."""
    values = rewards.double()
    advantages = torch.empty_like(values)
    for group in group_ids.unique():
        members = group_ids == group
        group_values = values[members]
        scale = group_values.std(correction=0).clamp_min(eps)
        advantages[members] = (group_values - group_values.mean()) / scale
    return advantages


def shuffled_groups(ids: list, seed: int, dtype=torch.float32):
    """Rewards for the given ids, candidates in a seeded random order."""
    generator = torch.Generator().manual_seed(seed)
    rewards = (torch.randn(len(ids), generator=generator, dtype=torch.float64) * 3 + 1).to(dtype)
    order = torch.randperm(len(ids), generator=generator)
    return rewards[order], torch.tensor(ids)[order]


IDS = {
    "prompt indices": [g for g in range(6) for _ in range(4)],
    "offset": [100 + g % 5 for g in range(23)],
    "gaps": [0] * 3 + [2] * 4 + [7] * 5,
    "negative": [-4] * 3 + [-1] * 2 + [1] * 6,
    "wide span": [10**12] * 3 + [5] * 4 + [-(10**9)] * 2,
    "singletons": [3, 1, 4, 1, 5, 9, 2, 6],
}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("kind", IDS)
def test_matches_a_float64_loop_whatever_the_ids(kind, dtype, version):
    rewards, group_ids = shuffled_groups(IDS[kind], seed=len(kind))
    rewards = rewards.to(dtype)
    expected = loop_advantages(rewards, group_ids).to(dtype)
    torch.testing.assert_close(VERSIONS[version](rewards, group_ids), expected)


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.bfloat16], ids=["float32", "float64", "bfloat16"]
)
@pytest.mark.parametrize("kind", IDS)
def test_fast_variant_matches_the_reference(kind, dtype):
    rewards, group_ids = shuffled_groups(IDS[kind], seed=len(kind) + 1, dtype=dtype)
    expected = compute_group_advantages(rewards, group_ids)
    fast = fast_group_advantages(rewards, group_ids)
    assert fast.dtype == expected.dtype == dtype
    torch.testing.assert_close(fast, expected)


@pytest.mark.parametrize("eps", [0.0, -1.0, float("nan"), float("inf")])
def test_fast_variant_rejects_what_the_reference_rejects(eps):
    rewards, group_ids = shuffled_groups(IDS["gaps"], seed=2)
    bad = [((rewards, group_ids), {"eps": eps}), ((rewards[:0], group_ids[:0]), {})]
    bad.append(((torch.tensor([float("nan"), 1.0]), torch.tensor([0, 0])), {}))
    for args, kwargs in bad:
        for version in VERSIONS.values():
            with pytest.raises(ValueError):
                version(*args, **kwargs)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("id_dtype", [torch.int32, torch.uint8, torch.float32], ids=["int32", "uint8", "float32"])
def test_id_dtype_does_not_change_the_result(id_dtype, version):
    rewards, group_ids = shuffled_groups(IDS["gaps"], seed=3)
    expected = VERSIONS[version](rewards, group_ids)
    torch.testing.assert_close(VERSIONS[version](rewards, group_ids.to(id_dtype)), expected, rtol=0, atol=0)


def test_small_integer_ids_are_used_as_they_are():
    index, count = number_groups(torch.tensor([5, 3, 5, 4, 3]))
    assert count == 3
    assert index.tolist() == [2, 0, 2, 1, 0]
    index, count = number_groups(torch.tensor([0, 2, 2, 0]))
    assert count == 3, "the unused number 1 is an empty group"
    assert index.tolist() == [0, 2, 2, 0]


def test_wide_float_and_bool_ids_are_numbered_in_sorted_order():
    for ids, expected in [
        ([10**12, 5, 5, -7], [2, 1, 1, 0]),
        ([0.5, 2.0, 0.5], [0, 1, 0]),
        ([True, False, True], [1, 0, 1]),
    ]:
        index, count = number_groups(torch.tensor(ids))
        assert (index.tolist(), count) == (expected, max(expected) + 1)
        assert index.dtype == torch.int64


@pytest.mark.parametrize("version", VERSIONS)
def test_bfloat16_stays_accurate_in_groups_larger_than_256(version):
    """Counts and sums are not accumulated one bfloat16 addition at a time (that stalls at 256)."""
    rewards, group_ids = shuffled_groups([0] * 600 + [1] * 40, seed=8, dtype=torch.bfloat16)
    expected = loop_advantages(rewards, group_ids)
    error = (VERSIONS[version](rewards, group_ids).double() - expected).abs().max().item()
    assert error < 0.05, f"largest error {error:.3g} against float64"


@pytest.mark.parametrize("version", VERSIONS)
def test_inputs_are_not_modified(version):
    rewards, group_ids = shuffled_groups(IDS["offset"], seed=4)
    before = rewards.clone(), group_ids.clone()
    VERSIONS[version](rewards, group_ids)
    assert torch.equal(rewards, before[0]) and torch.equal(group_ids, before[1])
