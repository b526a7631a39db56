"""The distillation reference agrees with TRL 1.16.0: `nox -s conformance`.

generalized_jsd_loss against `GKDTrainer.generalized_jsd_loss` (trl.experimental.gkd, a static
method, called as it is): values and the gradient for both models' logits, to 1e-6 in float64 and
float32, on seeded logits with and without labels, beta 0, 0.1, 0.5, 0.9 and 1, several
temperatures and every reduction. on_policy_distillation_advantages against
`compute_sampled_token_self_distillation_loss` (trl.experimental.sdpo.loss_utils): -A * log pi_S,
averaged over the response mask, has TRL's loss value and its gradient for the student's logits.
"""

import importlib
import warnings

import pytest
import torch

from grader.oracles.against import trl_problem

PROBLEM = trl_problem()
if PROBLEM:
    pytest.exit(f"the conformance tests need the pinned TRL. {PROBLEM}  (or: nox -s conformance)", returncode=1)

from grader.content.catalogue import get_kata  # noqa: E402
from grader.oracles import trl_oracle  # noqa: E402  (imports trl)
from reference import distillation as reference  # noqa: E402

TOL = {"rtol": 1e-6, "atol": 1e-6}


def experimental(module: str):
    with warnings.catch_warnings():  # the notice that trl.experimental is unstable: the pin covers it
        warnings.simplefilter("ignore")
        return importlib.import_module(f"trl.experimental.{module}")


def logits_and_labels(seed: int, dtype, batch: int = 3, length: int = 6, vocab: int = 11):
    """Seeded logits 3 * N(0, 1) for both models, labels with -100 on prompts and padding."""
    generator = torch.Generator().manual_seed(seed)
    student, teacher = (torch.randn(batch, length, vocab, generator=generator, dtype=torch.float64) * 3 for _ in "st")
    labels = torch.randint(0, vocab, (batch, length), generator=generator)
    labels[:, :2] = -100
    labels[0, -1] = -100
    return student.to(dtype), teacher.to(dtype), labels


def value_and_gradients(function, student, teacher, *args, **kwargs):
    student, teacher = student.clone().requires_grad_(True), teacher.clone().requires_grad_(True)
    value = function(student, teacher, *args, **kwargs)
    value.sum().backward()
    return value.detach(), student.grad, teacher.grad


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("beta", [0.0, 0.1, 0.5, 0.9, 1.0])
@pytest.mark.parametrize("temperature", [1.0, 0.5, 2.0])
@pytest.mark.parametrize("labelled", [False, True])
def test_generalized_jsd_loss_matches_trl(dtype, beta, temperature, labelled):
    student, teacher, labels = logits_and_labels(int(beta * 10) + int(temperature * 4), dtype)
    labels = labels if labelled else None
    for reduction in ("batchmean", "sum", "mean", "none"):
        options = {"beta": beta, "temperature": temperature, "reduction": reduction}
        ours = value_and_gradients(reference.generalized_jsd_loss, student, teacher, labels, **options)
        trls = value_and_gradients(trl_oracle.generalized_jsd_loss, student, teacher, labels, **options)
        for mine, theirs in zip(ours, trls):
            assert mine.dtype == theirs.dtype == dtype
            torch.testing.assert_close(mine, theirs, **TOL)


def test_every_position_masked_gives_0_like_trl():
    student, teacher, labels = logits_and_labels(1, torch.float64)
    labels = torch.full_like(labels, -100)
    ours = reference.generalized_jsd_loss(student, teacher, labels)
    trls = trl_oracle.generalized_jsd_loss(student, teacher, labels)
    assert ours.item() == trls.item() == 0.0


def test_jsd_comparison_tells_a_mixture_in_log_space_from_trls():
    """The comparison is sharp enough: the mixture of the log-probs (a misconception) differs from TRL."""
    student, teacher, labels = logits_and_labels(2, torch.float64)
    trls = trl_oracle.generalized_jsd_loss(student, teacher, labels, beta=0.3)
    log_s, log_t = torch.log_softmax(student, -1), torch.log_softmax(teacher, -1)
    log_m = 0.3 * log_t + 0.7 * log_s
    jsd = 0.3 * log_t.exp() * (log_t - log_m) + 0.7 * log_s.exp() * (log_s - log_m)
    mask = labels != -100
    wrong = jsd[mask].sum() / mask.sum()
    torch.testing.assert_close(reference.generalized_jsd_loss(student, teacher, labels, beta=0.3), trls, **TOL)
    assert abs(wrong - trls) > 1e-2


def sampled_tokens(seed: int, dtype, batch: int = 4, length: int = 7, vocab: int = 13):
    """Seeded logits of both models, tokens drawn from the student, ragged response masks."""
    generator = torch.Generator().manual_seed(seed)
    student, teacher = (torch.randn(batch, length, vocab, generator=generator, dtype=torch.float64) * 2 for _ in "st")
    tokens = torch.multinomial(student.softmax(-1).view(-1, vocab), 1, generator=generator).view(batch, length)
    mask = torch.arange(length) < torch.tensor([length, 1, 4, 6])[:batch, None]
    return student.to(dtype), teacher.to(dtype), tokens, mask


def token_log_probs(logits, tokens):
    return torch.log_softmax(logits, -1).gather(-1, tokens[..., None]).squeeze(-1)  # (B, T)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_advantages_give_the_gradient_of_trls_sampled_token_distillation_loss(dtype, seed):
    """-A * log pi_S, averaged over the mask, equals TRL's per-token loss so averaged, value and gradient."""
    loss_utils = experimental("sdpo.loss_utils")
    student, teacher, tokens, mask = sampled_tokens(seed, dtype)

    ours_logits = student.clone().requires_grad_(True)
    student_logprobs = token_log_probs(ours_logits, tokens)
    advantages = reference.on_policy_distillation_advantages(student_logprobs, token_log_probs(teacher, tokens), mask)
    ours = (-advantages * student_logprobs * mask).sum() / mask.sum()
    ours.backward()

    trl_logits = student.clone().requires_grad_(True)
    per_token = loss_utils.compute_sampled_token_self_distillation_loss(
        trl_logits, teacher, tokens, distillation_alpha=1.0
    )
    trls = (per_token * mask).sum() / mask.sum()
    trls.backward()

    assert not advantages.requires_grad
    torch.testing.assert_close(ours.detach(), trls.detach(), **TOL)
    torch.testing.assert_close(ours_logits.grad, trl_logits.grad, **TOL)
    assert ours_logits.grad.abs().max() > 1e-3  # a gradient that could differ


def test_advantage_comparison_tells_an_attached_advantage_from_trls():
    """The comparison is sharp enough: advantages left in the graph give another gradient than TRL's."""
    loss_utils = experimental("sdpo.loss_utils")
    student, teacher, tokens, mask = sampled_tokens(3, torch.float64)
    logits = student.clone().requires_grad_(True)
    logprobs = token_log_probs(logits, tokens)
    attached = (token_log_probs(teacher, tokens) - logprobs) * mask
    (-(attached * logprobs * mask).sum() / mask.sum()).backward()
    trl_logits = student.clone().requires_grad_(True)
    per_token = loss_utils.compute_sampled_token_self_distillation_loss(
        trl_logits, teacher, tokens, distillation_alpha=1.0
    )
    ((per_token * mask).sum() / mask.sum()).backward()
    assert (logits.grad - trl_logits.grad).abs().max() > 1e-3


def test_kata_check_distillation_against_trl_passes_the_reference_solution(check_against_trl):
    status, data = check_against_trl("distillation", get_kata("distillation").solution())
    assert status == 0 and data["failed"] == 0 and data["against"] == "trl"
    assert any(check["expected_from"] == "trl" for check in data["checks"])
    assert any(check["expected_from"] == "reference" for check in data["checks"])  # the advantages, the contract


@pytest.mark.parametrize("misconception", ["mixture_in_log_space", "batchmean_over_all_positions"])
def test_kata_check_distillation_against_trl_fails_a_wrong_file(misconception, check_against_trl):
    status, data = check_against_trl("distillation", get_kata("distillation").variant(misconception))
    failed_by_trl = [c for c in data["checks"] if c["status"] != "passed" and c["expected_from"] == "trl"]
    assert status == 1 and failed_by_trl
