"""The preference_free kata against TRL 1.16.0's own code: `nox -s conformance`.

simpo_loss is CPOTrainer.cpo_loss with loss_type "simpo", averaged, with no NLL term (cpo_alpha 0):
compared in float64 to 1e-6, value and gradient. orpo_loss is ORPOTrainer.odds_ratio_loss and
`policy_nll_loss - losses.mean()`: TRL casts the log-probs to float32, so the two agree to float32
rounding (1e-5) and, on float64 inputs, to no more than that. Where they differ, the difference
is asserted: TRL's log1mexp takes the same branches as the kata's, but its gradient is NaN where
exp(x) rounds to 1 (x = -1e-8 in float32), because its branch not taken is left unclamped.
"""

import inspect
import math

import pytest
import torch

from grader.oracles.against import trl_problem

PROBLEM = trl_problem()
if PROBLEM:
    pytest.exit(f"the conformance tests need the pinned TRL. {PROBLEM}  (or: nox -s conformance)", returncode=1)

from grader.content.catalogue import get_kata  # noqa: E402
from grader.oracles import trl_oracle  # noqa: E402  (imports trl)
from reference import preference_free as free_reference  # noqa: E402

TOL = {"rtol": 1e-6, "atol": 1e-6}
FLOAT32_TOL = {"rtol": 1e-5, "atol": 1e-5}


def pairs(seed: int, dtype=torch.float64, batch: int = 16):
    """Seeded average log-probs in [-4, -0.05], some pairs favouring the rejected response."""
    generator = torch.Generator().manual_seed(seed)
    draw = lambda: -(0.05 + 3.95 * torch.rand(batch, generator=generator, dtype=torch.float64))  # noqa: E731
    return draw().to(dtype), draw().to(dtype)


def value_and_gradients(function, *inputs, **options):
    """function's first output (or only one) and the gradient each input receives."""
    leaves = [value.clone().requires_grad_(True) for value in inputs]
    output = function(*leaves, **options)
    loss = output[0] if isinstance(output, tuple) else output
    loss.backward()
    return (loss.detach(), *(leaf.grad for leaf in leaves))


@pytest.mark.parametrize(("beta", "gamma"), [(2.0, 0.5), (2.5, 1.4), (0.1, 0.5), (1.0, 0.0)])
@pytest.mark.parametrize("seed", [0, 1])
def test_simpo_loss_and_gradients_match_trls_cpo_loss(seed, beta, gamma):
    batch = pairs(seed)
    ours = value_and_gradients(free_reference.simpo_loss, *batch, beta=beta, gamma=gamma)
    trls = value_and_gradients(trl_oracle.simpo_loss, *batch, beta=beta, gamma=gamma)
    torch.testing.assert_close(ours, trls, **TOL)


def test_trls_default_cpo_alpha_adds_the_nll_cpo_simpo():
    """CPOTrainer's loss is losses.mean() + cpo_alpha * NLL: with TRL's default cpo_alpha = 1 it is
    the SimPO loss plus the NLL (CPO-SimPO), not simpo_loss."""
    trainer = trl_oracle.experimental_trainer("cpo", "CPOTrainer")
    source = inspect.getsource(type(trainer).get_batch_loss_metrics)
    assert trl_oracle.CPO_LOSS_LINE in source
    from trl.experimental.cpo import CPOConfig

    assert CPOConfig.__dataclass_fields__["cpo_alpha"].default == 1.0
    assert CPOConfig.__dataclass_fields__["simpo_gamma"].default == 0.5


@pytest.mark.parametrize("beta", [0.1, 0.5])
@pytest.mark.parametrize("seed", [2, 3])
def test_orpo_loss_log_odds_and_gradients_match_trl_in_float32(seed, beta):
    chosen, rejected = pairs(seed, torch.float32)
    nll = torch.tensor(0.8)
    ours = value_and_gradients(free_reference.orpo_loss, chosen, rejected, nll, beta=beta)
    trls = value_and_gradients(trl_oracle.orpo_loss, chosen, rejected, nll, beta=beta)
    torch.testing.assert_close(ours, trls, **FLOAT32_TOL)
    ours_log_odds = free_reference.orpo_loss(chosen, rejected, nll, beta)[1]
    trls_log_odds = trl_oracle.orpo_loss(chosen, rejected, nll, beta)[1]
    torch.testing.assert_close(ours_log_odds, trls_log_odds, **FLOAT32_TOL)
    assert (ours_log_odds > 0).any() and (ours_log_odds < 0).any()  # both preferences occur


def test_orpo_on_float64_agrees_only_to_trls_float32():
    """TRL computes ORPO in float32 whatever the inputs: on float64 log-probs the log odds agree to
    float32 rounding and no closer; the oracle returns them in float64, as the reference does."""
    chosen, rejected = pairs(4)
    ours = free_reference.orpo_loss(chosen, rejected, torch.tensor(0.8, dtype=torch.float64))[1]
    trls = trl_oracle.orpo_loss(chosen, rejected, torch.tensor(0.8, dtype=torch.float64))[1]
    assert trls.dtype == torch.float64
    torch.testing.assert_close(ours, trls, **FLOAT32_TOL)
    assert (ours - trls).abs().max() > 1e-12


def test_log1mexp_matches_trls_values_and_has_finite_gradients_where_trls_are_nan():
    from trl.experimental.orpo.orpo_trainer import log1mexp as trls_log1mexp

    for dtype in (torch.float32, torch.float64):
        x = -torch.logspace(-6, 1.5, 200, dtype=dtype)
        torch.testing.assert_close(free_reference.log1mexp(x), trls_log1mexp(x), rtol=1e-6, atol=0.0)
    ours, theirs = (torch.tensor([-1e-8, -0.3, -2.0]).requires_grad_(True) for _ in range(2))
    free_reference.log1mexp(ours).sum().backward()
    trls_log1mexp(theirs).sum().backward()
    assert torch.isfinite(ours.grad).all() and math.isclose(ours.grad[0].item(), -1e8, rel_tol=1e-6)
    assert torch.isnan(theirs.grad[0]) and torch.allclose(ours.grad[1:], theirs.grad[1:])


def test_kata_check_preference_free_against_trl(check_against_trl):
    """`kata check preference_free --against trl` passes the reference and fails a wrong SimPO margin
    and a wrong odds ratio in checks whose expected values came from TRL."""
    kata = get_kata("preference_free")
    status, data = check_against_trl("preference_free", kata.solution())
    assert status == 0 and data["failed"] == 0 and data["against"] == "trl"
    assert {check["expected_from"] for check in data["checks"]} == {"trl", "reference"}
    for misconception in ("gamma_scaled_by_beta", "log_prob_ratio_not_odds"):
        status, data = check_against_trl("preference_free", kata.variant(misconception))
        failed_by_trl = [c for c in data["checks"] if c["status"] != "passed" and c["expected_from"] == "trl"]
        assert status == 1 and failed_by_trl and data["diagnosis"] == misconception, misconception
