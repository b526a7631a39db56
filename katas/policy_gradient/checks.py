"""Checks for the naive policy-gradient loss (TODO 1), REINFORCE (TODO 2), RLOO (TODO 3) and the
group-normalised advantages: what is centred and whose spread divides (TODO 4), how the std and
eps are taken (TODO 5).

TODO 4 is checked through your own outputs compared with each other (a group alone gives what it
gives in the batch; "batch" divides everyone by what "group" gives all rewards as one group), so a
TODO 5 mistake cannot fail it; TODO 5 is checked on one group, where "group" and "batch" agree, so a
TODO 4 mistake cannot fail it.
"""

import pytest
import torch

from grader.content import seeds
from grader.content.i18n import say
from grader.judging.expect import values_text

LOSS = "naive_policy_gradient_loss"
REINFORCE = "reinforce_baseline_advantages"
RLOO = "rloo_advantages"
GRPO = "group_normalized_advantages"


def _largest(values: torch.Tensor) -> tuple[int, ...]:
    """Where |values| is largest (the first such place)."""
    return (int(values.abs().nan_to_num(nan=float("inf")).argmax()),)


def assert_finite(values: torch.Tensor, what: str) -> None:
    """Checks that compare your outputs with each other still fail NaN and inf."""
    if not bool(values.isfinite().all()):
        raise AssertionError(
            say(
                f"{what} returned non-finite values: {values_text(values)}",
                f"{what} 返回了非有限值：{values_text(values)}",
            )
        )


def loss_batch(seed: int, rows: int = 5, length: int = 7):
    """Advantages of both signs, log-probs < 0, ragged masks (one full row, one single token)."""
    generator = seeds.generator(seed)
    advantages = torch.randn(rows, generator=generator, dtype=torch.float64)  # (B,)
    log_probs = -torch.rand(rows, length, generator=generator, dtype=torch.float64) * 3 - 0.1  # (B, T)
    lengths = torch.randint(1, length + 1, (rows,), generator=generator)
    lengths[0], lengths[1] = length, 1
    mask = torch.arange(length) < lengths.unsqueeze(-1)  # (B, T)
    return advantages, log_probs, mask


def random_groups(seed: int, sizes=(3, 1, 5, 2, 4)):
    """float64 rewards for groups of the given sizes, candidates shuffled, ids not contiguous."""
    generator = seeds.generator(seed)
    ids = torch.cat([torch.full((size,), 7 * g - 3) for g, size in enumerate(sizes)])
    rewards = torch.randn(len(ids), generator=generator, dtype=torch.float64) * 2 + 0.5
    order = torch.randperm(len(ids), generator=generator)
    return rewards[order], ids[order]


# -- TODO 1: the naive loss ---------------------------------------------------------------------


@pytest.mark.todo(1)
@pytest.mark.parametrize("seed", [0, 1])
def test_loss_matches_reference(expect, seed):
    """The per-token loss matches the reference on ragged masks

    zh: 在长短不一的掩码上，逐 token 损失与参考答案一致
    """
    expect.matches_reference(LOSS, *loss_batch(seed))


@pytest.mark.todo(1)
def test_loss_sign_rewards_good_responses(expect):
    """Sign: with A > 0 the loss is +A * |log p|, so minimising it raises log p

    zh: 符号：A > 0 时损失为 +A * |log p|，最小化它会提高 log p
    """
    loss = expect.call(LOSS, torch.tensor([2.0]), torch.tensor([[-0.5]]), torch.tensor([[True]]))
    value = float(loss.reshape(-1)[0])
    if not abs(value - 1.0) <= 1e-6:
        call = f"{LOSS}([2.0], [[-0.5]], [[True]])"
        raise AssertionError(
            say(
                f"{call} gave {value:.4g}; expected -2.0 * -0.5 = 1.0",
                f"{call} 得到 {value:.4g}；应为 -2.0 * -0.5 = 1.0",
            )
        )


@pytest.mark.todo(1)
def test_loss_is_exactly_zero_on_padding_and_sends_it_no_gradient(expect):
    """Padding: the loss is exactly 0 there and its log-probs get no gradient

    zh: 填充（padding）处损失恰好为 0，其对数概率得不到梯度
    """
    advantages, log_probs, mask = loss_batch(2)
    loss = expect.shaped_like_reference(LOSS, advantages, log_probs, mask)
    assert_finite(loss, LOSS)
    if not bool((loss[~mask] == 0).all()):
        raise AssertionError(
            say(
                f"{LOSS}(...) is not 0 on padding: {values_text(loss[~mask], _largest(loss[~mask]))}",
                f"{LOSS}(...) 在填充位置上不为 0：{values_text(loss[~mask], _largest(loss[~mask]))}",
            )
        )
    cotangent = torch.rand(log_probs.shape, generator=seeds.generator(3), dtype=torch.float64)
    expect.gradients_match_reference(LOSS, advantages, log_probs, mask, wrt=("token_log_probs",), cotangent=cotangent)


# -- TODO 2: REINFORCE --------------------------------------------------------------------------


@pytest.mark.todo(2)
def test_reinforce_with_a_number_and_a_tensor_baseline(expect):
    """A = r - b with a number, a 0-D tensor and one baseline per reward

    zh: A = r - b：基线为一个数、0 维张量或每个奖励一个值
    """
    rewards, _ = random_groups(0)
    expect.matches_reference(REINFORCE, rewards, 0.25)
    expect.matches_reference(REINFORCE, rewards, torch.tensor(-1.5, dtype=torch.float64))
    expect.matches_reference(REINFORCE, rewards, torch.linspace(-1, 1, len(rewards), dtype=torch.float64))


@pytest.mark.todo(2)
def test_reinforce_sign(expect):
    """Sign: a reward above the baseline gets a positive advantage

    zh: 符号：高于基线的奖励得到正的优势
    """
    advantages = expect.call(REINFORCE, torch.tensor([3.0, 1.0]), 2.0)
    got = [float(value) for value in advantages.reshape(-1)]
    if not (len(got) == 2 and abs(got[0] - 1.0) <= 1e-6 and abs(got[1] + 1.0) <= 1e-6):
        raise AssertionError(
            say(
                f"{REINFORCE}([3.0, 1.0], 2.0) gave {got}; expected [1.0, -1.0]",
                f"{REINFORCE}([3.0, 1.0], 2.0) 得到 {got}；应为 [1.0, -1.0]",
            )
        )


# -- TODO 3: RLOO -------------------------------------------------------------------------------


@pytest.mark.todo(3)
@pytest.mark.parametrize("seed", [0, 1])
def test_rloo_matches_reference(expect, seed):
    """Matches the reference on shuffled groups of 1 to 5

    zh: 在打乱顺序、大小为 1 到 5 的分组上与参考答案一致
    """
    expect.matches_reference(RLOO, *random_groups(seed))


@pytest.mark.todo(3)
def test_rloo_leaves_only_the_candidate_itself_out(expect):
    """Rewards [1, 2, 6]: each baseline is the mean of the other two, so A = [-3, -1.5, 4.5]

    zh: 奖励 [1, 2, 6]：每个基线是另外两个的均值，所以 A = [-3, -1.5, 4.5]
    """
    expect.matches_reference(RLOO, torch.tensor([1.0, 2.0, 6.0]), torch.tensor([4, 4, 4]))


@pytest.mark.todo(3)
def test_rloo_singleton_gets_zero(expect):
    """A group of one has nobody to leave out: its advantage is exactly 0

    zh: 单元素组没有其他候选：其优势恰好为 0
    """
    expect.matches_reference(RLOO, torch.tensor([5.0, 1.0, 3.0]), torch.tensor([2, 9, 9]))


# -- TODO 4: centring and whose spread ----------------------------------------------------------


@pytest.mark.todo(4)
def test_scale_none_only_centres_on_the_group_mean(expect):
    """scale="none" subtracts the group mean and divides by nothing

    zh: `scale="none"` 只减去组均值，不做除法
    """
    expect.matches_reference(GRPO, *random_groups(3), scale="none")


@pytest.mark.todo(4)
@pytest.mark.parametrize("std", ["population", "sample"])
def test_scale_group_uses_only_the_groups_own_rewards(expect, std):
    """Self-consistency: with scale="group" each group gives what it gives alone

    zh: 自洽：`scale="group"` 时每组的结果与它单独计算时相同
    """
    rewards, ids = random_groups(4, sizes=(4, 3, 5, 2))
    together = expect.shaped_like_reference(GRPO, rewards, ids, std=std)
    assert_finite(together, GRPO)
    for group in ids.unique().tolist():
        alone = expect.call(GRPO, rewards[ids == group], ids[ids == group], std=std)
        call = f"{GRPO}(..., std={std!r})"
        where = say(
            f"{call} of group {group}, in the batch vs alone", f"{call} 中组 {group} 的结果：在批次中与单独计算对比"
        )
        expect.same(together[ids == group], alone, where)


@pytest.mark.todo(4)
@pytest.mark.parametrize("std", ["population", "sample"])
def test_scale_batch_divides_by_the_spread_of_all_rewards(expect, std):
    """Self-consistency: "batch" centres on group means but divides everyone by the std of all rewards

    zh: 自洽：`"batch"` 以组均值中心化，但所有人都除以全部奖励的标准差
    """
    rewards, ids = random_groups(5)
    one_group = torch.zeros_like(ids)
    options = {"std": std}
    batch = expect.shaped_like_reference(GRPO, rewards, ids, scale="batch", **options)
    centred = expect.call(GRPO, rewards, ids, scale="none", **options)
    pooled = expect.call(GRPO, rewards, one_group, **options)  # (r - mean) / divisor of all rewards
    pooled_centred = expect.call(GRPO, rewards, one_group, scale="none", **options)
    for values, what in [(batch, "batch"), (centred, "none"), (pooled, "group, one group")]:
        assert_finite(values, f"{GRPO}(..., scale={what!r})")
    inverse_divisor = pooled[0] / pooled_centred[0]
    expect.same(
        batch,
        centred * inverse_divisor,
        say(
            f"{GRPO}(..., scale='batch', std={std!r}) vs scale='none' divided by the std of all rewards",
            f"{GRPO}(..., scale='batch', std={std!r}) 与 `scale='none'` 的结果除以全部奖励的标准差对比",
        ),
    )


# -- TODO 5: the std and eps --------------------------------------------------------------------


def one_group(seed: int, size: int, spread: float = 2.0):
    generator = seeds.generator(seed)
    rewards = torch.randn(size, generator=generator, dtype=torch.float64) * spread + 0.5
    return rewards, torch.full((size,), 3)


@pytest.mark.todo(5)
@pytest.mark.parametrize("scale", ["group", "batch"])
@pytest.mark.parametrize("std", ["population", "sample"])
@pytest.mark.parametrize("eps_mode", ["floor", "add"])
def test_std_and_eps_conventions_on_one_group(expect, scale, std, eps_mode):
    """On one group: population or sample std, eps as a floor or an addend (TRL: sample, add 1e-4)

    zh: 单组上：总体或样本标准差，eps 作为下限或加数（TRL：样本标准差加 1e-4）
    """
    rewards, ids = one_group(6, 4)
    expect.matches_reference(GRPO, rewards, ids, scale=scale, std=std, eps=1e-4, eps_mode=eps_mode)
    expect.matches_reference(GRPO, rewards, ids, scale=scale, std=std, eps=0.9, eps_mode=eps_mode)


@pytest.mark.todo(5)
@pytest.mark.parametrize("std", ["population", "sample"])
def test_eps_floors_the_std_not_the_variance(expect, std):
    """A spread of about 1e-4 with eps 1e-6 is divided by its own std

    zh: 约 1e-4 的离散度在 eps 为 1e-6 时除以它自己的标准差
    """
    expect.matches_reference(GRPO, *one_group(7, 5, spread=1e-4), std=std)


@pytest.mark.todo(5)
@pytest.mark.parametrize("std", ["population", "sample"])
@pytest.mark.parametrize("eps_mode", ["floor", "add"])
def test_one_reward_or_equal_rewards_give_zero(expect, std, eps_mode):
    """One reward, or all equal: the advantage is 0, not NaN

    zh: 只有一个奖励或奖励全等：优势为 0，而不是 NaN
    """
    expect.matches_reference(GRPO, torch.tensor([0.7]), torch.tensor([1]), std=std, eps_mode=eps_mode)
    expect.matches_reference(GRPO, torch.full((3,), 0.7), torch.tensor([1, 1, 1]), std=std, eps_mode=eps_mode)


# -- the input contract -------------------------------------------------------------------------


def test_rejects_inputs_outside_the_contract(expect):
    """Accepts valid input; rejects bad shapes, dtypes, non-finite values and unknown options with ValueError

    zh: 接受合法输入；对错误的形状、dtype、非有限值和未知选项抛出 ValueError
    """
    advantages, log_probs, mask = loss_batch(8)
    rewards, ids = random_groups(8)
    nan, inf = float("nan"), float("inf")
    expect.call(LOSS, advantages, log_probs, mask)
    expect.call(REINFORCE, rewards, 0.5)
    expect.call(RLOO, rewards, ids)
    expect.call(GRPO, rewards, ids, scale="batch", std="sample", eps=1e-4, eps_mode="add")
    bad_loss = [
        (say("advantages is 2-D", "`advantages` 是二维的"), (advantages[:, None], log_probs, mask)),
        (say("log-probs are 1-D", "对数概率是一维的"), (advantages, log_probs[:, 0], mask[:, 0])),
        (say("one advantage too few", "优势少了一个"), (advantages[:-1], log_probs, mask)),
        (say("the mask's shape differs", "掩码的形状不同"), (advantages, log_probs, mask[:, :-1])),
        (say("the mask is not bool", "掩码不是 `bool` 型"), (advantages, log_probs, mask.double())),
        (say("a NaN log-prob", "对数概率中有 NaN"), (advantages, log_probs.clone().fill_(nan), mask)),
        (say("an infinite advantage", "优势中有无穷大"), (advantages.clone().fill_(inf), log_probs, mask)),
    ]
    for why, args in bad_loss:
        expect.raises_value_error(why, LOSS, *args)
    bad_rewards = [
        (say("rewards is 2-D", "`rewards` 是二维的"), rewards[None], ids[None]),
        (say("empty rewards", "`rewards` 为空"), rewards[:0], ids[:0]),
        (say("integer rewards", "奖励是整数型"), ids, ids),
        (say("a NaN reward", "奖励中有 NaN"), torch.tensor([nan, 1.0]), torch.tensor([0, 0])),
        (say("an infinite reward", "奖励中有无穷大"), torch.tensor([1.0, inf]), torch.tensor([0, 0])),
    ]
    for why, bad, bad_ids in bad_rewards:
        expect.raises_value_error(why, REINFORCE, bad, 0.0)
        expect.raises_value_error(why, RLOO, bad, bad_ids)
        expect.raises_value_error(why, GRPO, bad, bad_ids)
    expect.raises_value_error(say("a NaN baseline", "基线是 NaN"), REINFORCE, rewards, nan)
    expect.raises_value_error(say("a baseline of another length", "基线的长度不同"), REINFORCE, rewards, rewards[:-1])
    for name in (RLOO, GRPO):
        expect.raises_value_error(say("ids of another shape", "分组 id 的形状不同"), name, rewards, ids[:-1])
        expect.raises_value_error(say("float ids", "分组 id 是浮点型"), name, rewards, ids.double())
    for why, options in [
        (say("unknown scale", "未知的 `scale`"), {"scale": "prompt"}),
        (say("unknown std", "未知的 `std`"), {"std": "unbiased"}),
        (say("unknown eps_mode", "未知的 `eps_mode`"), {"eps_mode": "clip"}),
        ("eps = 0", {"eps": 0.0}),
        (say("eps is NaN", "eps 是 NaN"), {"eps": nan}),
        (say("eps is infinite", "eps 为无穷大"), {"eps": inf}),
    ]:
        expect.raises_value_error(why, GRPO, rewards, ids, **options)
