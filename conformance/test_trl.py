"""The references agree with TRL 1.16.0's own code: `nox -s conformance`.

Each test runs a TRL trainer method on a trainer built without __init__ (grader.oracles.trl_oracle) and
the reference on the same seeded random inputs with ragged masks, and compares value and
gradient. Tolerance 1e-6 (absolute and relative); float64 inputs, where the two sides agree to
about 1e-15, so 1e-6 is far above rounding and far below any convention difference; the GRPO
loss is also compared in float32, the dtype trainers use, at the same tolerance. Per-token
log-probs come from float32 logits far apart (a logsumexp loop against log_softmax): 1e-5.

Where the reference deliberately follows another convention than TRL, the test compares the
quantity both share and asserts the difference, so that it stays visible:
- group advantages: the kata uses the population std clamped at eps, TRL the sample std + 1e-4;
  both centre on the group mean, and each side's advantage times its own divisor is the same
  centred reward;
- an all-None reward row: both combinations give NaN (TRL 1.16 marks it unscorable after its
  nansum); TRL then gives that row advantage 0, while the reference's compute_group_advantages
  refuses a NaN reward, leaving the choice to the caller.

policy_gradient's group_normalized_advantages has TRL's conventions as options: with std="sample",
eps=1e-4, eps_mode="add" it must give TRL's advantages exactly for scale_rewards "group", "batch"
and "none"; its rloo_advantages must give RLOOTrainer's leave-one-out advantages.
"""

import math

import pytest
import torch

from grader.oracles.against import TRL_VERSION, trl_problem

PROBLEM = trl_problem()
if PROBLEM:
    pytest.exit(f"the conformance tests need the pinned TRL. {PROBLEM}  (or: nox -s conformance)", returncode=1)

from gpu_labs.fast_logprobs import selective_log_probs  # noqa: E402
from grader.content.catalogue import get_kata  # noqa: E402
from grader.oracles import trl_oracle  # noqa: E402  (imports trl)
from reference import dpo_loss as dpo_reference  # noqa: E402
from reference import grpo_loss as grpo_reference  # noqa: E402
from reference import policy_gradient as pg_reference  # noqa: E402
from reference import token_logprobs as logprob_reference  # noqa: E402
from reference import verifier_reward as reward_reference  # noqa: E402
from reference.group_advantages import compute_group_advantages  # noqa: E402

TOL = {"rtol": 1e-6, "atol": 1e-6}

# GRPOTrainer._generate_and_score_completions (trl 1.16.0, scale_rewards="group"): trl_group_advantages
# runs these statements after checking that the installed source still has them
ADVANTAGE_LINES = (
    "mean_grouped_rewards = torch.nanmean(rewards.view(-1, num_generations), dim=1)",
    "std_rewards = nanstd(rewards.view(-1, num_generations), dim=1)",
    "advantages = rewards - mean_grouped_rewards",
    "advantages = advantages / (std_rewards + 1e-4)",
    "advantages = torch.nan_to_num(advantages, nan=0.0)",
)


def test_the_pinned_version_is_installed():
    import trl

    assert trl.__version__ == TRL_VERSION


# -- GRPO loss --------------------------------------------------------------------------------------


def grpo_batch(seed: int, dtype=torch.float64, groups: int = 5, size: int = 4, length: int = 9):
    """Seeded log-probs with ratios outside [0.7, 1.3] on both sides, shuffled groups, ragged masks."""
    generator = torch.Generator().manual_seed(seed)
    rows = groups * size
    draw = lambda *shape: torch.randn(*shape, generator=generator, dtype=torch.float64)  # noqa: E731
    old = -draw(rows, length).abs() - 0.3  # (B, T)
    new = old + 0.5 * draw(rows, length)  # (B, T)
    ref = old + 0.3 * draw(rows, length)  # (B, T)
    rewards = draw(rows).round(decimals=1)  # (B,) ties within a group happen
    group_ids = torch.arange(groups).repeat_interleave(size)[torch.randperm(rows, generator=generator)]
    lengths = torch.randint(1, length + 1, (rows,), generator=generator)
    lengths[0] = length  # one full row, one single-token row
    lengths[1] = 1
    mask = torch.arange(length) < lengths.unsqueeze(-1)  # (B, T)
    return new.to(dtype), old.to(dtype), rewards.to(dtype), group_ids, mask, ref.to(dtype)


def loss_and_gradient(function, batch, **options):
    new, old, rewards, group_ids, mask, ref = batch
    new = new.clone().requires_grad_(True)
    loss, advantages = function(new, old, rewards, group_ids, mask, log_probs_ref=ref, **options)
    loss.backward()
    return loss.detach(), new.grad, advantages


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("loss_type", grpo_reference.LOSS_TYPES)
@pytest.mark.parametrize("beta", [0.0, 0.04, 0.3])
@pytest.mark.parametrize("clip_range", [0.1, 0.2, 0.28])
def test_grpo_loss_and_gradient_match_trl(dtype, loss_type, beta, clip_range):
    batch = grpo_batch(seed=int(100 * clip_range + 10 * beta), dtype=dtype)
    options = {"loss_type": loss_type, "beta": beta, "clip_range": clip_range}
    ours = loss_and_gradient(grpo_reference.compute_grpo_loss, batch, **options)
    trls = loss_and_gradient(trl_oracle.compute_grpo_loss, batch, **options)
    torch.testing.assert_close(ours[0], trls[0], **TOL)
    torch.testing.assert_close(ours[1], trls[1], **TOL)
    assert ours[1].abs().sum() > 0 and (ours[1][~batch[4]] == 0).all()  # a real gradient, none on padding


def test_grpo_comparison_tells_the_loss_types_apart():
    """The harness can fail: on ragged masks TRL's bnpo is not the reference's grpo, nor eps 0.1 eps 0.2."""
    batch = grpo_batch(seed=1)
    grpo = loss_and_gradient(grpo_reference.compute_grpo_loss, batch, beta=0.04)[0]
    assert not torch.isclose(
        grpo, loss_and_gradient(trl_oracle.compute_grpo_loss, batch, beta=0.04, loss_type="bnpo")[0]
    )
    wider = loss_and_gradient(trl_oracle.compute_grpo_loss, batch, beta=0.04, clip_range=0.1)[0]
    assert not torch.isclose(grpo, wider)


def test_grpo_matches_trl_on_the_lessons_framework_check():
    """Lesson 000's fixture: 2 groups of 2, one response of one token, beta 0.1, clip 0.2."""
    new = torch.tensor([[-1.0, -0.5], [-0.5, -0.7], [-1.5, -0.4], [-0.2, -0.9]])
    old = torch.tensor([[-1.1, -0.4], [-0.4, -0.8], [-1.6, -0.5], [-0.3, -0.8]])
    ref = torch.tensor([[-1.2, -0.7], [-0.8, -0.9], [-1.7, -0.8], [-0.6, -1.1]])
    rewards, group_ids = torch.tensor([1.0, 2.0, 0.5, 1.5]), torch.tensor([0, 0, 1, 1])
    mask = torch.tensor([[True, True], [True, False], [True, True], [True, True]])
    args = (new, old, rewards, group_ids, mask)
    ours, advantages = grpo_reference.compute_grpo_loss(*args, clip_range=0.2, log_probs_ref=ref, beta=0.1)
    trls, _ = trl_oracle.compute_grpo_loss(*args, clip_range=0.2, log_probs_ref=ref, beta=0.1)
    torch.testing.assert_close(advantages, torch.tensor([-1.0, 1.0, -1.0, 1.0]))
    torch.testing.assert_close(ours, trls, **TOL)


# -- group advantages -------------------------------------------------------------------------------


def trl_group_advantages(rewards: torch.Tensor, num_generations: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(advantages, std_rewards) by the statements of GRPOTrainer (scale_rewards="group"), contiguous groups."""
    from trl.trainer import grpo_trainer

    source = grpo_trainer.inspect.getsource(grpo_trainer.GRPOTrainer._generate_and_score_completions)
    missing = [line for line in ADVANTAGE_LINES if line not in source]
    assert not missing, f"TRL's advantage code changed since trl {TRL_VERSION}: {missing}"
    nanstd = grpo_trainer.nanstd
    mean_grouped_rewards = torch.nanmean(rewards.view(-1, num_generations), dim=1)
    mean_grouped_rewards = mean_grouped_rewards.repeat_interleave(num_generations, dim=0)
    std_rewards = nanstd(rewards.view(-1, num_generations), dim=1)
    std_rewards = std_rewards.repeat_interleave(num_generations, dim=0)
    advantages = rewards - mean_grouped_rewards
    advantages = advantages / (std_rewards + 1e-4)
    advantages = torch.nan_to_num(advantages, nan=0.0)
    return advantages, std_rewards


@pytest.mark.parametrize("size", [2, 3, 8, 16])
def test_group_advantages_centre_like_trl_and_scale_by_the_population_std(size):
    """Shared: each side's advantage times its own divisor is r - mean_g. Differs: the divisor."""
    generator = torch.Generator().manual_seed(size)
    groups = 6
    rewards = torch.randn(groups * size, generator=generator, dtype=torch.float64).round(decimals=1)  # (N,)
    rewards[:size] = 0.5  # one group with no spread
    trl_advantages, sample_std = trl_group_advantages(rewards, size)  # TRL needs contiguous groups
    order = torch.randperm(groups * size, generator=generator)  # the reference takes them in any order
    ours = torch.empty_like(rewards)
    ours[order] = compute_group_advantages(rewards[order], torch.arange(groups).repeat_interleave(size)[order])
    population_std = sample_std * math.sqrt((size - 1) / size)  # (N,) same data, divided by n, not n - 1
    centred_ours = ours * population_std.clamp_min(1e-6)
    centred_trl = trl_advantages * (sample_std + 1e-4)
    torch.testing.assert_close(centred_ours, centred_trl, **TOL)
    assert (ours[:size] == 0).all() and (trl_advantages[:size] == 0).all()
    assert not torch.allclose(ours, trl_advantages, **TOL)  # the conventions do differ


def test_group_advantages_of_the_lesson_pair_differ_by_the_std_convention():
    """Rewards [1, 2]: population std 0.5 gives -1, 1; TRL's sample std 0.7071 + 1e-4 gives -0.7070, 0.7070."""
    rewards = torch.tensor([1.0, 2.0], dtype=torch.float64)
    trl_advantages, _ = trl_group_advantages(rewards, 2)
    torch.testing.assert_close(
        compute_group_advantages(rewards, torch.tensor([0, 0])), torch.tensor([-1.0, 1.0]).double()
    )
    torch.testing.assert_close(trl_advantages, torch.tensor([-1.0, 1.0]).double() * 0.5 / (math.sqrt(0.5) + 1e-4))


# GRPOTrainer._generate_and_score_completions (trl 1.16.0, sum_then_normalize): every scale_rewards
SCALE_LINES = (
    "mean_grouped_rewards = torch.nanmean(rewards.view(-1, num_generations), dim=1)",
    "mean_grouped_rewards = mean_grouped_rewards.repeat_interleave(num_generations, dim=0)",
    'if self.scale_rewards in ["group", "none"]:',
    "std_rewards = nanstd(rewards.view(-1, num_generations), dim=1)",
    "std_rewards = std_rewards.repeat_interleave(num_generations, dim=0)",
    'elif self.scale_rewards == "batch":',
    "std_rewards = nanstd(rewards).expand_as(rewards)",
    "advantages = rewards - mean_grouped_rewards",
    'if self.scale_rewards != "none":',
    "advantages = advantages / (std_rewards + 1e-4)",
    "advantages = torch.nan_to_num(advantages, nan=0.0)",
)

# RLOOTrainer._generate_and_score_completions (trl 1.16.0, num_generations > 1)
RLOO_LINES = (
    "grouped_rewards = rewards.view(-1, num_generations)",
    "scorable_counts = (~torch.isnan(grouped_rewards)).sum(dim=1, keepdim=True)",
    "grouped_sum = torch.nansum(grouped_rewards, dim=1, keepdim=True)",
    "baselines = (grouped_sum - grouped_rewards) / (scorable_counts - 1)",
    "baselines = baselines.view(-1)",
    "advantages = rewards - baselines",
    "advantages = torch.nan_to_num(advantages, nan=0.0)",
)


def trl_source_has(trainer: str, lines: tuple[str, ...]):
    """The trainer module, after checking that its _generate_and_score_completions still has `lines`."""
    import importlib
    import inspect

    module = importlib.import_module(f"trl.trainer.{trainer.lower().removesuffix('trainer')}_trainer")
    source = inspect.getsource(getattr(module, trainer)._generate_and_score_completions)
    missing = [line for line in lines if line not in source]
    assert not missing, f"TRL's {trainer} advantage code changed since trl {TRL_VERSION}: {missing}"
    return module


def trl_scaled_advantages(rewards: torch.Tensor, num_generations: int, scale_rewards: str) -> torch.Tensor:
    """GRPOTrainer's advantages for one scale_rewards, by its own statements (SCALE_LINES), contiguous groups."""
    nanstd = trl_source_has("GRPOTrainer", SCALE_LINES).nanstd
    mean_grouped_rewards = torch.nanmean(rewards.view(-1, num_generations), dim=1)
    mean_grouped_rewards = mean_grouped_rewards.repeat_interleave(num_generations, dim=0)
    if scale_rewards in ["group", "none"]:
        std_rewards = nanstd(rewards.view(-1, num_generations), dim=1)
        std_rewards = std_rewards.repeat_interleave(num_generations, dim=0)
    elif scale_rewards == "batch":
        std_rewards = nanstd(rewards).expand_as(rewards)
    advantages = rewards - mean_grouped_rewards
    if scale_rewards != "none":
        advantages = advantages / (std_rewards + 1e-4)
    return torch.nan_to_num(advantages, nan=0.0)


def trl_rloo_advantages(rewards: torch.Tensor, num_generations: int) -> torch.Tensor:
    """RLOOTrainer's leave-one-out advantages by its own statements (RLOO_LINES), contiguous groups."""
    trl_source_has("RLOOTrainer", RLOO_LINES)
    grouped_rewards = rewards.view(-1, num_generations)
    scorable_counts = (~torch.isnan(grouped_rewards)).sum(dim=1, keepdim=True)
    grouped_sum = torch.nansum(grouped_rewards, dim=1, keepdim=True)
    baselines = (grouped_sum - grouped_rewards) / (scorable_counts - 1)
    baselines = baselines.view(-1)
    advantages = rewards - baselines
    return torch.nan_to_num(advantages, nan=0.0)


def shuffled_groups(size: int, groups: int = 6):
    """Rewards of `groups` contiguous groups (the first with no spread) and a permutation of them."""
    generator = torch.Generator().manual_seed(size)
    rewards = torch.randn(groups * size, generator=generator, dtype=torch.float64).round(decimals=1)  # (N,)
    rewards[:size] = 0.5
    ids = torch.arange(groups).repeat_interleave(size)  # (N,) contiguous, as TRL needs
    return rewards, ids, torch.randperm(groups * size, generator=generator)


def in_any_order(function, rewards, ids, order, **options):
    """`function` on the candidates shuffled by `order`, put back in the original order."""
    ours = torch.empty_like(rewards)
    ours[order] = function(rewards[order], ids[order], **options)
    return ours


@pytest.mark.parametrize("size", [2, 3, 8, 16])
@pytest.mark.parametrize("scale", ["group", "batch", "none"])
def test_group_normalized_advantages_with_trls_options_equal_trls(scale, size):
    rewards, ids, order = shuffled_groups(size)
    trls = trl_scaled_advantages(rewards, size, scale)
    options = {"scale": scale, "std": "sample", "eps": 1e-4, "eps_mode": "add"}
    ours = in_any_order(pg_reference.group_normalized_advantages, rewards, ids, order, **options)
    torch.testing.assert_close(ours, trls, **TOL)
    assert (trls[:size] == 0).all() and trls.abs().sum() > 0
    if scale != "none":  # the harness can fail: the project's own convention is not TRL's
        default = in_any_order(pg_reference.group_normalized_advantages, rewards, ids, order, scale=scale)
        assert not torch.allclose(default, trls, **TOL)


@pytest.mark.parametrize("size", [2, 3, 8, 16])
def test_rloo_advantages_equal_trls(size):
    rewards, ids, order = shuffled_groups(size)
    trls = trl_rloo_advantages(rewards, size)
    torch.testing.assert_close(in_any_order(pg_reference.rloo_advantages, rewards, ids, order), trls, **TOL)
    grpo_centred = in_any_order(pg_reference.group_normalized_advantages, rewards, ids, order, scale="none")
    torch.testing.assert_close(trls, grpo_centred * size / (size - 1), **TOL)  # k / (k - 1) (r - mean_g)
    assert not torch.allclose(trls, grpo_centred, **TOL)


# -- reward combination -----------------------------------------------------------------------------


def random_scores(seed: int, functions: int = 3, responses: int = 12):
    """F columns of N scores, about a third None; response 0 has none at all, response 1 only one."""
    generator = torch.Generator().manual_seed(seed)
    values = torch.randn(functions, responses, generator=generator).round(decimals=2).tolist()
    absent = torch.rand(functions, responses, generator=generator) < 0.35
    absent[:, 0] = True
    absent[:, 1] = True
    absent[seed % functions, 1] = False
    scores = [[None if absent[f, n] else values[f][n] for n in range(responses)] for f in range(functions)]
    weights = torch.rand(functions, generator=generator).add(0.1).tolist()
    return scores, weights


@pytest.mark.parametrize("seed", range(5))
def test_reward_table_turns_none_into_nan_column_by_column(seed):
    scores, _ = random_scores(seed)
    table = trl_oracle.reward_table(scores)  # (N, F)
    expected = torch.tensor([[math.nan if s is None else s for s in column] for column in scores]).T
    assert table.dtype == torch.float32
    torch.testing.assert_close(table, expected, equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize("seed", range(5))
def test_reward_combination_matches_trl(seed):
    scores, weights = random_scores(seed)
    ours = reward_reference.combine_rewards(scores, weights)
    trls = trl_oracle.combine_rewards(scores, weights)
    torch.testing.assert_close(ours, trls, equal_nan=True, **TOL)
    unscorable = torch.tensor([all(column[n] is None for column in scores) for n in range(len(scores[0]))])
    assert torch.equal(ours.isnan(), unscorable) and unscorable[0] and not unscorable[1]


def test_an_all_none_row_is_unscorable_in_both_and_only_its_advantage_differs():
    """TRL's nansum alone would give the row 0; TRL 1.16 marks it NaN, as the reference does.

    Downstream TRL gives it advantage 0 and leaves it out of its group's mean and std; the
    reference's compute_group_advantages refuses a NaN reward (the caller must decide).
    """
    scores = [[1.0, 0.0, 1.0, None], [1.0, None, 1.0, None]]  # the lesson's two reward functions
    table = trl_oracle.reward_table(scores)
    assert table.nansum(dim=1)[3] == 0  # what a bare nansum would say
    trls = trl_oracle.combine_rewards(scores, [0.9, 0.1])
    torch.testing.assert_close(trls, reward_reference.combine_rewards(scores, [0.9, 0.1]), equal_nan=True)
    torch.testing.assert_close(trls, torch.tensor([1.0, 0.0, 1.0, math.nan]), equal_nan=True)
    advantages, _ = trl_group_advantages(trls, 2)
    assert advantages[3] == 0 and advantages[2] == 0  # NaN -> 0; its group mate is alone in the baseline
    with pytest.raises(ValueError):
        compute_group_advantages(trls, torch.tensor([0, 0, 1, 1]))


# -- DPO loss ---------------------------------------------------------------------------------------


def dpo_batch(seed: int, pairs: int = 6, length: int = 7):
    """Per-token policy log-probs (2B, T), chosen rows first, zero past each ragged length; reference sums (B,)."""
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, length + 1, (2 * pairs,), generator=generator)  # (2B,)
    lengths[0], lengths[pairs] = length, 1
    mask = torch.arange(length) < lengths.unsqueeze(-1)  # (2B, T)
    tokens = -torch.rand(2 * pairs, length, generator=generator, dtype=torch.float64) * 3 * mask  # (2B, T)
    ref = tokens.sum(-1) + 2 * torch.randn(2 * pairs, generator=generator, dtype=torch.float64)  # (2B,)
    return tokens, lengths, ref[:pairs], ref[pairs:]


@pytest.mark.parametrize("loss_type", dpo_reference.LOSS_TYPES)
@pytest.mark.parametrize("beta", [0.1, 0.5])
@pytest.mark.parametrize("seed", [0, 1])
def test_dpo_loss_and_gradient_match_trl_on_ragged_completions(loss_type, beta, seed):
    """TRL sums each completion's tokens; for IPO it then divides by the completion's length.

    The reference takes sequence log-probs as given, so it gets sums, or for IPO length-normalised
    sums (policy and reference both divided by the policy completion's length, as TRL does).
    """
    tokens, lengths, ref_chosen, ref_rejected = dpo_batch(seed)
    pairs = ref_chosen.shape[0]
    completion_mask = torch.cat([torch.zeros(2 * pairs, 1), (torch.arange(tokens.shape[1]) < lengths[:, None])], 1)

    ours_tokens = tokens.clone().requires_grad_(True)
    sums = ours_tokens.sum(-1)  # (2B,)
    refs = torch.cat([ref_chosen, ref_rejected])  # (2B,)
    if loss_type == "ipo":
        sums, refs = sums / lengths, refs / lengths
    ours = dpo_reference.dpo_loss(sums[:pairs], sums[pairs:], refs[:pairs], refs[pairs:], beta, loss_type)
    ours.backward()

    trl_tokens = tokens.clone().requires_grad_(True)
    trls = trl_oracle.trl_dpo_loss(trl_tokens, completion_mask.long(), ref_chosen, ref_rejected, beta, loss_type)
    trls.backward()
    torch.testing.assert_close(ours, trls, **TOL)
    torch.testing.assert_close(ours_tokens.grad, trl_tokens.grad, **TOL)


@pytest.mark.parametrize("loss_type", dpo_reference.LOSS_TYPES)
def test_dpo_oracle_with_sequence_log_probs_matches_the_reference(loss_type):
    """The oracle `kata check dpo_loss --against trl` uses: one-token completions."""
    generator = torch.Generator().manual_seed(3)
    batch = [-(torch.rand(8, generator=generator, dtype=torch.float64) * 30) for _ in range(4)]
    policy = [batch[0].clone().requires_grad_(True), batch[1].clone().requires_grad_(True)]
    ours = dpo_reference.dpo_loss(*policy, *batch[2:], 0.2, loss_type)
    ours.backward()
    grads = [p.grad for p in policy]
    policy = [batch[0].clone().requires_grad_(True), batch[1].clone().requires_grad_(True)]
    trls = trl_oracle.dpo_loss(*policy, *batch[2:], 0.2, loss_type)
    trls.backward()
    torch.testing.assert_close(ours, trls, **TOL)
    for mine, theirs in zip(grads, (p.grad for p in policy)):
        torch.testing.assert_close(mine, theirs, **TOL)


# -- per-token log-probs -----------------------------------------------------------------------------


LOGPROB_TOL = {"rtol": 1e-5, "atol": 1e-5}  # float32 logits, 150 nats apart: a logsumexp loop vs log_softmax


def logprob_batch(seed: int, dtype, batch: int = 4, length: int = 10, vocab: int = 33):
    """Seeded logits (B, T, V) with entries 150 below the rest, ids, a ragged response mask."""
    generator = torch.Generator().manual_seed(seed)
    logits = 4 * torch.randn(batch, length, vocab, generator=generator, dtype=torch.float64)  # (B, T, V)
    logits[..., :2] -= 150.0
    ids = torch.randint(0, vocab, (batch, length), generator=generator)  # (B, T)
    ids[:, ::3] = 0  # some taken tokens far below the best
    ends = torch.randint(3, length + 1, (batch, 1), generator=generator)  # (B, 1)
    mask = (torch.arange(length) >= 2) & (torch.arange(length) < ends)  # (B, T): prompt of 2, padding
    return logits.to(dtype), ids, mask


def logprobs_and_gradient(function, logits, weights):
    leaf = logits.clone().requires_grad_(True)
    out = function(leaf)
    (out * weights).sum().backward()
    return out.detach(), leaf.grad


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16], ids=str)
def test_response_logprobs_match_trl_selective_log_softmax(dtype):
    """TRL's GRPO pairs last_hidden_state[:, :-1] with labels[:, 1:]: on logits, this shift; 0 off the response."""
    from trl.trainer.utils import selective_log_softmax

    logits, ids, mask = logprob_batch(5, dtype)
    weights = torch.rand(ids.shape[0], ids.shape[1] - 1, generator=torch.Generator().manual_seed(6)).to(dtype)
    kept = mask[:, 1:]  # (B, T-1) the scored token's mask
    trls = logprobs_and_gradient(
        lambda x: selective_log_softmax(x[:, :-1], ids[:, 1:]).masked_fill(~kept, 0.0), logits, weights
    )
    ours = logprobs_and_gradient(lambda x: logprob_reference.response_log_probs(x, ids, mask), logits, weights)
    fast = logprobs_and_gradient(
        lambda x: selective_log_probs(x[:, :-1], ids[:, 1:], chunk_rows=3).masked_fill(~kept, 0.0), logits, weights
    )
    tol = {"rtol": 1.6e-2, "atol": 1e-2} if dtype == torch.bfloat16 else LOGPROB_TOL
    for mine in (ours, fast):
        torch.testing.assert_close(mine[0], trls[0], **tol)
        torch.testing.assert_close(mine[1], trls[1], **tol)
    assert bool((trls[0] < -100).any()) and bool((trls[0][~kept] == 0).all())


def test_token_logprobs_entropy_matches_trl_entropy_from_logits():
    from trl.trainer.utils import entropy_from_logits

    logits, _, _ = logprob_batch(7, torch.float32)
    torch.testing.assert_close(logprob_reference.token_entropy(logits), entropy_from_logits(logits), **LOGPROB_TOL)


# -- TRL's internals ----------------------------------------------------------------------------------


def test_a_changed_trl_internal_fails_with_one_line_naming_the_pinned_version(monkeypatch):
    from trl import GRPOTrainer

    def reads_a_new_attribute(self, model, inputs):
        return self.new_setting

    monkeypatch.setattr(GRPOTrainer, "_compute_loss", reads_a_new_attribute)
    batch = grpo_batch(seed=0)
    with pytest.raises(trl_oracle.TrlUnavailable, match=f"trl {TRL_VERSION}") as raised:
        trl_oracle.compute_grpo_loss(*batch[:5])
    assert "\n" not in str(raised.value) and "new_setting" in str(raised.value)


def test_a_changed_combination_line_is_detected(monkeypatch):
    monkeypatch.setattr(trl_oracle, "COMBINE_LINES", ("rewards = something_else(rewards_per_func)",))
    trl_oracle._check_combine_lines.cache_clear()
    try:
        with pytest.raises(trl_oracle.TrlUnavailable, match="no longer contains"):
            trl_oracle.combine_rewards([[1.0]], [1.0])
    finally:
        trl_oracle._check_combine_lines.cache_clear()


# -- kata check SLUG --against trl ---------------------------------------------------------------------


@pytest.mark.parametrize("slug", ["grpo_loss", "dpo_loss", "verifier_reward", "token_logprobs"])
def test_kata_check_against_trl_passes_the_reference_solution(slug, check_against_trl):
    status, data = check_against_trl(slug, get_kata(slug).solution())
    assert status == 0 and data["failed"] == 0 and data["against"] == "trl"
    assert any(check["expected_from"] == "trl" for check in data["checks"])
    assert any(check["expected_from"] == "reference" for check in data["checks"])  # the input contract


@pytest.mark.parametrize(
    ("slug", "misconception"),
    [("grpo_loss", "batch_token_mean"), ("verifier_reward", "unscorable_gives_zero"), ("token_logprobs", "no_shift")],
)
def test_kata_check_against_trl_fails_a_wrong_file(slug, misconception, check_against_trl):
    status, data = check_against_trl(slug, get_kata(slug).variant(misconception))
    failed_by_trl = [c for c in data["checks"] if c["status"] != "passed" and c["expected_from"] == "trl"]
    assert status == 1 and failed_by_trl


# -- DAPO and GSPO (the dapo_gspo kata) ----------------------------------------------------------------

from reference import dapo_gspo as dapo_gspo_reference  # noqa: E402


def dapo_gspo_batch(seed: int, spread: float, dtype=torch.float64, rows: int = 12, length: int = 9):
    """Seeded (new, old, advantages, mask): log-ratios spread * N(0, 1), ragged masks (one full row,
    one single-token row)."""
    generator = torch.Generator().manual_seed(seed)
    draw = lambda *shape: torch.randn(*shape, generator=generator, dtype=torch.float64)  # noqa: E731
    old = -draw(rows, length).abs() - 0.3  # (B, T)
    new = old + spread * draw(rows, length)  # (B, T)
    advantages = draw(rows)  # (B,)
    lengths = torch.randint(1, length + 1, (rows,), generator=generator)
    lengths[0], lengths[1] = length, 1
    mask = torch.arange(length) < lengths.unsqueeze(-1)  # (B, T)
    return new.to(dtype), old.to(dtype), advantages.to(dtype), mask


def dapo_gspo_loss_and_gradient(function, batch, **options):
    new, old, advantages, mask = batch
    new = new.clone().requires_grad_(True)
    loss = function(new, old, advantages, mask, **options)
    loss.backward()
    return loss.detach(), new.grad


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
@pytest.mark.parametrize(("epsilon_low", "epsilon_high"), [(0.2, 0.28), (0.1, 0.3), (0.2, 0.2)])
@pytest.mark.parametrize("seed", [0, 1])
def test_dapo_loss_matches_trl(seed, epsilon_low, epsilon_high, dtype):
    """dapo_loss is GRPOTrainer._compute_loss with loss_type="dapo", epsilon and epsilon_high."""
    batch = dapo_gspo_batch(seed, spread=0.4, dtype=dtype)
    new, old, _, mask = batch
    ratio = (new - old).exp()[mask]
    assert (ratio > 1 + epsilon_high).any() and (ratio < 1 - epsilon_low).any()  # both clips are reached
    options = {"epsilon_low": epsilon_low, "epsilon_high": epsilon_high}
    ours = dapo_gspo_loss_and_gradient(dapo_gspo_reference.dapo_loss, batch, **options)
    trls = dapo_gspo_loss_and_gradient(trl_oracle.dapo_loss, batch, **options)
    torch.testing.assert_close(ours, trls, **TOL)


def test_dapo_loss_is_a_token_mean_not_trls_grpo_mean():
    """On ragged masks TRL's "dapo" and "grpo" aggregations differ, and dapo_loss is the first."""
    new, old, advantages, mask = dapo_gspo_batch(2, spread=0.4)
    dapo = trl_oracle.dapo_loss(new, old, advantages, mask, epsilon_low=0.2, epsilon_high=0.2)
    grpo = trl_oracle.trl_grpo_loss(new, old, advantages, mask, 0.2, None, 0.0, "grpo")
    assert not torch.isclose(dapo, grpo, **TOL)
    ours = dapo_gspo_reference.dapo_loss(new, old, advantages, mask, epsilon_low=0.2, epsilon_high=0.2)
    torch.testing.assert_close(ours, dapo, **TOL)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
@pytest.mark.parametrize(
    ("epsilon_low", "epsilon_high", "spread"), [(3e-4, 4e-4, 0.002), (0.1, 0.2, 0.5), (0.05, 0.05, 0.3)]
)
@pytest.mark.parametrize("seed", [3, 4])
def test_gspo_loss_matches_trl(seed, epsilon_low, epsilon_high, spread, dtype):
    """gspo_loss is GRPOTrainer._compute_loss with importance_sampling_level="sequence" (loss_type "grpo")."""
    batch = dapo_gspo_batch(seed, spread=spread, dtype=dtype)
    new, old, _, mask = batch
    sequence_ratio = (((new - old) * mask).sum(-1) / mask.sum(-1)).exp()
    inside = (sequence_ratio > 1 - epsilon_low) & (sequence_ratio < 1 + epsilon_high)
    assert inside.any() and not inside.all()  # some responses are clipped, some are not
    options = {"epsilon_low": epsilon_low, "epsilon_high": epsilon_high}
    ours = dapo_gspo_loss_and_gradient(dapo_gspo_reference.gspo_loss, batch, **options)
    trls = dapo_gspo_loss_and_gradient(trl_oracle.gspo_loss, batch, **options)
    torch.testing.assert_close(ours, trls, **TOL)


def test_overlong_penalty_matches_trls_soft_overlong_punishment():
    """overlong_penalty is trl.rewards.get_soft_overlong_punishment (DAPO eq. 13) on every length."""
    from trl.rewards import get_soft_overlong_punishment

    lengths = torch.arange(0, 90)
    for max_length, cache_length in [(64, 16), (50, 50), (30, 1), (20, 4)]:
        trls = get_soft_overlong_punishment(max_length, cache_length)([[0] * n for n in lengths.tolist()])
        ours = dapo_gspo_reference.overlong_penalty(lengths, max_length, cache_length)
        torch.testing.assert_close(ours, torch.tensor(trls, dtype=torch.float32), **TOL)


def test_kata_check_dapo_gspo_against_trl(check_against_trl):
    """`kata check dapo_gspo --against trl` passes the reference and fails a wrong GSPO ratio."""
    kata = get_kata("dapo_gspo")
    status, data = check_against_trl("dapo_gspo", kata.solution())
    assert status == 0 and data["failed"] == 0 and data["against"] == "trl"
    assert any(check["expected_from"] == "trl" for check in data["checks"])
    for misconception in ("per_sequence_mean", "sequence_ratio_sum"):
        status, data = check_against_trl("dapo_gspo", kata.variant(misconception))
        failed_by_trl = [c for c in data["checks"] if c["status"] != "passed" and c["expected_from"] == "trl"]
        assert status == 1 and failed_by_trl, misconception
