"""The kto_loss reference agrees with TRL 1.16.0's KTOTrainer._compute_loss: `nox -s conformance`.

TRL's loss runs on a trainer built without __init__ (grader.oracles.trl_oracle.trl_kto_loss),
with precomputed reference log-probs and a stub policy that returns the given sequence
log-probs. Compared: the loss, the reference point z_0 (TRL's logged `kl`) and the gradient with
respect to the policy log-probs, to 1e-6 in float64 and float32, on seeded batches with both
labels, one label only, and KL pairs of either sign (z_0 clamped at 0 in both).
"""

import pytest
import torch

from grader.oracles.against import trl_problem

PROBLEM = trl_problem()
if PROBLEM:
    pytest.exit(f"the conformance tests need the pinned TRL. {PROBLEM}  (or: nox -s conformance)", returncode=1)

from grader.content.catalogue import get_kata  # noqa: E402
from grader.oracles import trl_oracle  # noqa: E402  (imports trl)
from reference import kto_loss as kto_reference  # noqa: E402

TOL = {"rtol": 1e-6, "atol": 1e-6}


def kto_batch(seed: int, dtype, batch: int = 10, kl_shift: float = 0.5, labels=None):
    """Seeded sequence log-probs: log-ratios 3 * N(0, 1), KL log-ratios kl_shift + N(0, 1), K = B as in TRL."""
    generator = torch.Generator().manual_seed(seed)
    draw = lambda: torch.randn(batch, generator=generator, dtype=torch.float64)  # noqa: E731
    ref = -(draw().abs() * 20 + 5)
    policy = ref + 3 * draw()
    desirable = torch.rand(batch, generator=generator) < 0.4 if labels is None else torch.full((batch,), labels)
    ref_kl = -(draw().abs() * 20 + 5)
    policy_kl = ref_kl + kl_shift + draw()
    policy, ref, policy_kl, ref_kl = (t.to(dtype) for t in (policy, ref, policy_kl, ref_kl))
    return policy, ref, desirable, policy_kl, ref_kl


def loss_kl_and_gradient(function, batch, *options):
    policy = batch[0].clone().requires_grad_(True)
    loss, kl = function(policy, *batch[1:], *options)
    loss.backward()
    return loss.detach(), kl, policy.grad


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize(("beta", "weights"), [(0.1, (1.0, 1.0)), (0.5, (1.0, 1.33)), (2.0, (0.7, 1.0))])
@pytest.mark.parametrize(("seed", "kl_shift"), [(0, 0.5), (1, -2.0)])
def test_kto_loss_z0_and_gradient_match_trl(dtype, beta, weights, seed, kl_shift):
    batch = kto_batch(seed, dtype, kl_shift=kl_shift)
    ours = loss_kl_and_gradient(kto_reference.kto_loss, batch, beta, *weights)
    trls = loss_kl_and_gradient(trl_oracle.trl_kto_loss, batch, beta, *weights)
    for mine, theirs in zip(ours, trls):
        torch.testing.assert_close(mine, theirs, **TOL)
    assert (ours[1] == 0) == (kl_shift < 0)  # a negative KL estimate is clamped to 0 on both sides


@pytest.mark.parametrize("labels", [True, False])
def test_kto_loss_of_one_label_only_matches_trl(labels):
    batch = kto_batch(2, torch.float64, labels=labels)
    ours = loss_kl_and_gradient(kto_reference.kto_loss, batch, 0.3, 1.2, 0.8)
    trls = loss_kl_and_gradient(trl_oracle.trl_kto_loss, batch, 0.3, 1.2, 0.8)
    for mine, theirs in zip(ours, trls):
        torch.testing.assert_close(mine, theirs, **TOL)


def test_kto_comparison_tells_a_weighted_average_from_trls_mean():
    """The comparison is sharp enough: dividing by the weights' sum (a misconception) differs from TRL."""
    policy, ref, desirable, policy_kl, ref_kl = kto_batch(3, torch.float64)
    loss, _ = trl_oracle.trl_kto_loss(policy, ref, desirable, policy_kl, ref_kl, 0.5, 2.0, 1.0)
    reference_loss, kl = kto_reference.kto_loss(policy, ref, desirable, policy_kl, ref_kl, 0.5, 2.0, 1.0)
    logratios = policy - ref
    losses = torch.where(
        desirable, 1 - torch.sigmoid(0.5 * (logratios - kl)), 1 - torch.sigmoid(0.5 * (kl - logratios))
    )
    weights = torch.where(desirable, 2.0, 1.0).double()
    torch.testing.assert_close(loss, reference_loss, **TOL)
    assert abs((weights * losses).sum() / weights.sum() - loss) > 1e-3


def test_kata_check_kto_loss_against_trl_passes_the_reference_solution(check_against_trl):
    status, data = check_against_trl("kto_loss", get_kata("kto_loss").solution())
    assert status == 0 and data["failed"] == 0 and data["against"] == "trl"
    assert any(check["expected_from"] == "trl" for check in data["checks"])
    assert any(check["expected_from"] == "reference" for check in data["checks"])  # the input contract


@pytest.mark.parametrize("misconception", ["divided_by_weight_sum", "kl_not_clamped"])
def test_kata_check_kto_loss_against_trl_fails_a_wrong_file(misconception, check_against_trl):
    status, data = check_against_trl("kto_loss", get_kata("kto_loss").variant(misconception))
    failed_by_trl = [c for c in data["checks"] if c["status"] != "passed" and c["expected_from"] == "trl"]
    assert status == 1 and failed_by_trl
