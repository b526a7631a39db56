"""Checks for dapo_loss (TODO 1), overlong_penalty (TODO 2), dynamic_sampling_keep (TODO 3) and
gspo_loss (TODO 4).

Fixtures: seeded random batches with ragged masks and log-ratios spread across the clip on both
sides; one-token batches with a chosen ratio for the clip; hand-built lengths around the soft
zone; shuffled groups whose rewards all agree (0, 1, a singleton) or not. The four functions are
independent, so each TODO's checks call only its own function.
"""

import pytest
import torch

from grader.content import seeds
from grader.content.i18n import say
from grader.judging.expect import assert_no_gradient

DAPO, PENALTY, KEEP, GSPO = "dapo_loss", "overlong_penalty", "dynamic_sampling_keep", "gspo_loss"


def random_batch(seed: int, rows: int = 6, length: int = 7, spread: float = 0.3, dtype=torch.float32):
    """Seeded (new, old, advantages, mask): log-ratios spread * N(0, 1), ragged masks."""
    generator = seeds.generator(seed)
    draw = lambda *shape: torch.randn(*shape, generator=generator, dtype=torch.float64)  # noqa: E731
    old = -draw(rows, length).abs() - 0.5
    new = old + spread * draw(rows, length)
    advantages = draw(rows)
    lengths = torch.randint(1, length + 1, (rows,), generator=generator)
    mask = torch.arange(length) < lengths.unsqueeze(-1)
    return new.to(dtype), old.to(dtype), advantages.to(dtype), mask


def assert_close(got: float, want: float, where: str, tol: float = 1e-6) -> None:
    if not abs(got - want) <= tol:  # NaN fails too
        raise AssertionError(
            say(f"{where}: expected {want:.6g}, got {got:.6g}", f"{where}：应为 {want:.6g}，实际为 {got:.6g}")
        )


def backpropagating(name: str) -> str:
    return say(f"{name}(...), backpropagating the loss", f"{name}(...)，对损失反向传播")


def no_gradient_to_new(name: str) -> str:
    return say(
        f"{name}(...): no gradient reached `log_probs_new`, the policy being trained",
        f"{name}(...)：没有梯度到达 `log_probs_new`，即正在训练的策略",
    )


# -- TODO 1: dapo_loss -----------------------------------------------------------------------------


@pytest.mark.todo(1)
def test_dapo_old_log_probs_receive_no_gradient(expect):
    """dapo_loss: log_probs_new gets a gradient, the sampling policy's log_probs_old does not

    zh: `dapo_loss`：`log_probs_new` 有梯度，采样策略的 `log_probs_old` 没有
    """
    new, old, advantages, mask = random_batch(0)
    _, grads = expect.gradients(DAPO, new, old, advantages, mask, wrt=("log_probs_new", "log_probs_old"))
    assert_no_gradient(grads, "log_probs_old", backpropagating(DAPO))
    if grads["log_probs_new"] is None or not bool((grads["log_probs_new"] != 0).any()):
        raise AssertionError(no_gradient_to_new(DAPO))


@pytest.mark.todo(1)
@pytest.mark.parametrize(
    ("ratio", "sign", "clipped"),
    [(1.25, 1.0, False), (1.35, 1.0, True), (0.75, -1.0, True), (0.85, -1.0, False), (0.75, 1.0, False)],
    ids=["A>0 in (1.2, 1.28)", "A>0 above 1.28", "A<0 below 0.8", "A<0 inside", "A>0 below 0.8"],
)
def test_dapo_clip_is_higher_above_than_below(expect, ratio, sign, clipped):
    """dapo_loss on one token: flat past 1 - 0.2 below or 1 + 0.28 above, where A points; loss value

    zh: `dapo_loss` 单个 token：沿优势方向越过下界 1 - 0.2 或上界 1 + 0.28 后是平的；并比较损失值
    """
    new = torch.log(torch.tensor([[ratio]]))
    args = (new, torch.zeros(1, 1), torch.tensor([sign]), torch.ones(1, 1, dtype=torch.bool))
    loss, grads = expect.gradients(DAPO, *args, wrt=("log_probs_new",))
    gradient = 0.0 if grads["log_probs_new"] is None else grads["log_probs_new"][0, 0].item()
    where = say(
        f"one token with ratio {ratio}, advantage {sign:+g} (epsilon_low 0.2, epsilon_high 0.28)",
        f"单个 token，比率 {ratio}，优势 {sign:+g}（`epsilon_low=0.2`，`epsilon_high=0.28`）",
    )
    if clipped and gradient != 0.0:
        raise AssertionError(
            say(
                f"{where}: this side is clipped and must be flat, but d loss/d log_prob = {gradient:.4g}",
                f"{where}：这一侧被裁剪，梯度应为 0，但 d loss/d log_prob = {gradient:.4g}",
            )
        )
    if not clipped and gradient == 0.0:
        raise AssertionError(
            say(
                f"{where}: this side is not clipped, yet the gradient is 0 (loss {loss:.4g})",
                f"{where}：这一侧没有裁剪，梯度却为 0（损失 {loss:.4g}）",
            )
        )
    want = -min(ratio * sign, min(max(ratio, 0.8), 1.28) * sign)
    assert_close(loss, want, say(f"{where}: the loss", f"{where}：损失"))


@pytest.mark.todo(1)
def test_dapo_every_valid_token_weighs_the_same(expect):
    """dapo_loss with ratios 1, advantages [-1, +1], lengths 3 and 1: the token mean 0.5, not 0

    zh: `dapo_loss` 在比率全为 1、优势 [-1, +1]、长度 3 和 1 时：token 均值 0.5，而不是 0
    """
    new = torch.full((2, 3), -1.0)
    mask = torch.tensor([[True, True, True], [True, False, False]])
    loss = expect.shaped_like_reference(DAPO, new, new.clone(), torch.tensor([-1.0, 1.0]), mask)
    where = say(
        f"{DAPO}(...) where 3 tokens lose +1 and 1 token loses -1 (a mean over 4 tokens)",
        f"{DAPO}(...)，其中 3 个 token 的损失为 +1，1 个 token 的损失为 -1（对 4 个 token 取均值）",
    )
    assert_close(loss.item(), 0.5, where)


@pytest.mark.todo(1)
def test_dapo_masked_positions_change_nothing(expect):
    """Self-consistency: changing log-probs where the mask is False leaves your dapo_loss as it was

    zh: 自洽：修改掩码为 False 位置的对数概率，你的 `dapo_loss` 保持不变
    """
    new, old, advantages, mask = random_batch(1)
    before = expect.shaped_like_reference(DAPO, new, old, advantages, mask)
    if not bool(before.isfinite()):  # NaN would equal NaN below
        raise AssertionError(
            say(
                f"{DAPO}(...) returned a non-finite loss: {before.item()}",
                f"{DAPO}(...) 返回了非有限的损失：{before.item()}",
            )
        )
    noise = torch.where(mask, torch.zeros_like(new), torch.full_like(new, -3.0))
    after = expect.call(DAPO, new + noise, old - noise, advantages, mask)
    expect.same(
        after,
        before,
        say(
            f"{DAPO}(...) after changing only the masked-out positions",
            f"只修改掩码为 `False` 的位置之后的 {DAPO}(...)",
        ),
    )


@pytest.mark.whole
@pytest.mark.parametrize(("seed", "low", "high"), [(2, 0.2, 0.28), (3, 0.1, 0.3)])
def test_dapo_matches_reference(expect, seed, low, high):
    """dapo_loss: loss and gradient vs the reference on random ragged batches

    zh: `dapo_loss`：在随机不等长批次上与参考答案比较损失与梯度
    """
    args = random_batch(seed)
    options = {"epsilon_low": low, "epsilon_high": high}
    expect.matches_reference(DAPO, *args, **options)
    expect.gradients_match_reference(DAPO, *args, wrt=("log_probs_new", "log_probs_old"), **options)


# -- TODO 2: overlong_penalty ----------------------------------------------------------------------


def penalties(expect, lengths: list[int], max_length: int = 20, cache_length: int = 4) -> list[float]:
    got = expect.shaped_like_reference(PENALTY, torch.tensor(lengths), max_length, cache_length)
    return [float(value) for value in got]


def assert_penalties(expect, lengths: list[int], want: list[float]) -> None:
    got = penalties(expect, lengths)
    for length, have, value in zip(lengths, got, want):
        call = f"{PENALTY}(lengths, max_length=20, cache_length=4)"
        assert_close(have, value, say(f"{call} at length {length}", f"{call} 在长度 {length} 处"))


@pytest.mark.todo(2)
def test_penalty_is_zero_up_to_the_soft_zone(expect):
    """overlong_penalty values with L_max 20, L_cache 4: 0 for lengths 0, 5, 15, 16

    zh: `overlong_penalty` 在 `L_max` 20、`L_cache` 4 时的值：长度 0、5、15、16 都为 0
    """
    assert_penalties(expect, [0, 5, 15, 16], [0.0, 0.0, 0.0, 0.0])


@pytest.mark.todo(2)
def test_penalty_falls_linearly_to_minus_one_at_max_length(expect):
    """overlong_penalty values with L_max 20, L_cache 4: -0.25, -0.5, -0.75, -1 for 17..20

    zh: `overlong_penalty` 在 `L_max` 20、`L_cache` 4 时的值：长度 17..20 依次为 -0.25、-0.5、-0.75、-1
    """
    assert_penalties(expect, [17, 18, 19, 20], [-0.25, -0.5, -0.75, -1.0])


@pytest.mark.todo(2)
def test_penalty_is_minus_one_past_max_length(expect):
    """overlong_penalty values with L_max 20, L_cache 4: -1 for lengths 21, 25 and 60

    zh: `overlong_penalty` 在 `L_max` 20、`L_cache` 4 时的值：长度 21、25、60 都为 -1
    """
    assert_penalties(expect, [21, 25, 60], [-1.0, -1.0, -1.0])


@pytest.mark.todo(2)
def test_penalty_matches_reference_on_drawn_lengths_and_zones(expect):
    """overlong_penalty vs the reference on drawn lengths, each side of a drawn soft zone

    zh: `overlong_penalty` 在随机长度、随机软惩罚区两侧与参考答案比较
    """
    generator = seeds.generator(7)
    max_length = int(torch.randint(20, 60, (), generator=generator))
    cache_length = int(torch.randint(1, 16, (), generator=generator))
    lengths = torch.randint(0, max_length + 10, (24,), generator=generator)
    expect.matches_reference(PENALTY, lengths, max_length, cache_length)


@pytest.mark.whole
def test_penalty_matches_reference(expect):
    """overlong_penalty vs the reference on seeded lengths, for several soft zones

    zh: `overlong_penalty` 在随机长度、多种软惩罚区上与参考答案比较
    """
    lengths = torch.randint(0, 80, (40,), generator=seeds.generator(4))
    for max_length, cache_length in [(64, 16), (50, 50), (30, 1)]:
        expect.matches_reference(PENALTY, lengths, max_length, cache_length)


# -- TODO 3: dynamic_sampling_keep -----------------------------------------------------------------


@pytest.mark.todo(3)
def test_groups_whose_rewards_agree_are_dropped(expect):
    """dynamic_sampling_keep on shuffled groups: all-0, all-1 and singleton groups dropped, others kept

    zh: `dynamic_sampling_keep` 在打乱的组上：全 0、全 1 与单元素组被丢弃，其余保留
    """
    group_ids = torch.tensor([3, 0, 1, 2, 0, 3, 1, 4, 2, 3, 0, 1])
    rewards = torch.tensor([1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.5, 1.0, 0.0, 0.0, 1.0])
    # groups: 0 all 0 (drop), 1 all 1 (drop), 2 mixed (keep), 3 mixed (keep), 4 a singleton (drop)
    want = [bool(g in (2, 3)) for g in group_ids.tolist()]
    got = expect.shaped_like_reference(KEEP, rewards, group_ids).tolist()
    if got != want:
        wrong = [i for i, (have, value) in enumerate(zip(got, want)) if have != value]
        raise AssertionError(
            say(
                f"{KEEP}(rewards, group_ids) with groups {group_ids.tolist()}: candidates {wrong} "
                f"are wrong; expected {want}, got {got}",
                f"{KEEP}(rewards, group_ids)，分组为 {group_ids.tolist()}：候选 {wrong} 出错；"
                f"应为 {want}，实际为 {got}",
            )
        )


@pytest.mark.todo(3)
def test_keep_matches_reference_on_drawn_groups(expect):
    """dynamic_sampling_keep vs the reference on drawn 0/1 rewards in drawn groups of 1 to 4

    zh: `dynamic_sampling_keep` 在随机分组（每组 1 到 4 个）、随机 0/1 奖励上与参考答案比较
    """
    generator = seeds.generator(8)
    sizes = torch.randint(1, 5, (8,), generator=generator)
    group_ids = torch.arange(8).repeat_interleave(sizes)
    group_ids = group_ids[torch.randperm(len(group_ids), generator=generator)]
    rewards = torch.randint(0, 2, (len(group_ids),), generator=generator).double()
    expect.matches_reference(KEEP, rewards, group_ids)


@pytest.mark.whole
@pytest.mark.parametrize("seed", [5, 6])
def test_keep_matches_reference(expect, seed):
    """dynamic_sampling_keep vs the reference on seeded 0/1 rewards in shuffled groups of 3

    zh: `dynamic_sampling_keep` 在打乱的三人组、随机 0/1 奖励上与参考答案比较
    """
    generator = seeds.generator(seed)
    rewards = torch.randint(0, 2, (24,), generator=generator).double()
    group_ids = torch.arange(8).repeat_interleave(3)[torch.randperm(24, generator=generator)]
    expect.matches_reference(KEEP, rewards, group_ids)


# -- TODO 4: gspo_loss -----------------------------------------------------------------------------


WIDE = {"epsilon_low": 0.5, "epsilon_high": 0.5}  # no ratio of these checks reaches the clip


@pytest.mark.todo(4)
def test_gspo_old_log_probs_receive_no_gradient(expect):
    """gspo_loss: log_probs_new gets a gradient, the sampling policy's log_probs_old does not

    zh: `gspo_loss`：`log_probs_new` 有梯度，采样策略的 `log_probs_old` 没有
    """
    new, old, advantages, mask = random_batch(7, spread=0.05)
    _, grads = expect.gradients(GSPO, new, old, advantages, mask, wrt=("log_probs_new", "log_probs_old"), **WIDE)
    assert_no_gradient(grads, "log_probs_old", backpropagating(GSPO))
    if grads["log_probs_new"] is None or not bool((grads["log_probs_new"] != 0).any()):
        raise AssertionError(no_gradient_to_new(GSPO))


@pytest.mark.todo(4)
def test_gspo_ratio_is_a_mean_over_the_valid_tokens(expect):
    """gspo_loss value: every token's log-ratio is 0.1, lengths 1 and 4 of 5, A = 1: -exp(0.1)

    zh: `gspo_loss` 的值：每个 token 的对数比率都是 0.1，长度为 5 中的 1 和 4，A = 1：-exp(0.1)
    """
    old = torch.full((2, 5), -1.0)
    mask = torch.tensor([[True, False, False, False, False], [True, True, True, True, False]])
    loss = expect.shaped_like_reference(GSPO, old + 0.1, old, torch.ones(2), mask, **WIDE)
    where = say(
        f"{GSPO}(...) where each response's tokens all have log-ratio 0.1 (so s_i = exp(0.1))",
        f"{GSPO}(...)，其中每个回答的所有 token 的对数比率都是 0.1（因此 s_i = exp(0.1)）",
    )
    assert_close(loss.item(), -torch.tensor(0.1).exp().item(), where)


@pytest.mark.todo(4)
def test_gspo_tokens_of_a_response_share_one_ratio(expect):
    """gspo_loss gradient: equal on every valid token of a response, 0 on padding (inside the clip)

    zh: `gspo_loss` 的梯度：同一回答的每个有效 token 相等，填充位置为 0（在裁剪区间内）
    """
    new, old, advantages, mask = random_batch(8, spread=0.1)
    _, grads = expect.gradients(GSPO, new, old, advantages, mask, wrt=("log_probs_new",), **WIDE)
    gradient = grads["log_probs_new"]
    if gradient is None or not bool(gradient.isfinite().all()):
        raise AssertionError(
            say(
                f"{GSPO}(...): no finite gradient reached `log_probs_new`",
                f"{GSPO}(...)：没有有限的梯度到达 `log_probs_new`",
            )
        )
    for row in range(len(mask)):
        valid, padding = gradient[row][mask[row]], gradient[row][~mask[row]]
        if not bool((padding == 0).all()) or not float(valid.max() - valid.min()) <= 1e-7 or valid[0] == 0:
            valid_count, shown = int(mask[row].sum()), [round(float(g), 5) for g in gradient[row]]
            raise AssertionError(
                say(
                    f"{GSPO}(...): response {row} ({valid_count} valid tokens) gets the gradient "
                    f"{shown}; one sequence ratio gives every valid "
                    "token the same non-zero gradient and padding none",
                    f"{GSPO}(...)：回答 {row}（{valid_count} 个有效 token）得到的梯度为 {shown}；"
                    "同一个序列比率让每个有效 token 得到相同的非零梯度，填充位置则没有梯度",
                )
            )


@pytest.mark.todo(4)
@pytest.mark.parametrize(("sign", "clipped"), [(1.0, True), (-1.0, False)], ids=["A>0", "A<0"])
def test_gspo_clips_the_sequence_ratio(expect, sign, clipped):
    """gspo_loss: token log-ratios [0.3, -0.1, 0.1] make s = exp(0.1) > 1 + 0.05: flat only if A > 0

    zh: `gspo_loss`：token 对数比率 [0.3, -0.1, 0.1] 使 s = exp(0.1) > 1 + 0.05：仅当 A > 0 时是平的
    """
    new = torch.tensor([[0.3, -0.1, 0.1]]) - 1.0
    args = (new, torch.full((1, 3), -1.0), torch.tensor([sign]), torch.ones(1, 3, dtype=torch.bool))
    loss, grads = expect.gradients(GSPO, *args, wrt=("log_probs_new",), epsilon_low=0.05, epsilon_high=0.05)
    gradient = grads["log_probs_new"]
    flat = gradient is None or not bool((gradient != 0).any())
    where = say(
        f"one response, token log-ratios [0.3, -0.1, 0.1], advantage {sign:+g}, epsilons 0.05",
        f"一个回答，token 对数比率 [0.3, -0.1, 0.1]，优势 {sign:+g}，`epsilon_low` 与 `epsilon_high` 都为 0.05",
    )
    if clipped and not flat:
        raise AssertionError(
            say(
                f"{where}: s = exp(0.1) is past 1.05 in A's direction, yet the loss has a gradient",
                f"{where}：s = exp(0.1) 已沿 A 的方向越过 1.05，损失却仍有梯度",
            )
        )
    if not clipped and flat:
        raise AssertionError(
            say(
                f"{where}: the clip does not hold A < 0 above 1, yet the gradient is 0",
                f"{where}：A < 0 时裁剪不会限制高于 1 的比率，梯度却为 0",
            )
        )
    ratio = torch.tensor(0.1).exp().item()
    assert_close(loss, -min(ratio * sign, min(ratio, 1.05) * sign), say(f"{where}: the loss", f"{where}：损失"))


@pytest.mark.whole
@pytest.mark.parametrize(("seed", "spread", "options"), [(9, 0.001, {}), (10, 0.2, {"epsilon_low": 0.1})])
def test_gspo_matches_reference(expect, seed, spread, options):
    """gspo_loss: loss and gradient vs the reference on random ragged batches

    zh: `gspo_loss`：在随机不等长批次上与参考答案比较损失与梯度
    """
    args = random_batch(seed, spread=spread, dtype=torch.float64)
    expect.matches_reference(GSPO, *args, **options)
    expect.gradients_match_reference(GSPO, *args, wrt=("log_probs_new", "log_probs_old"), **options)


# -- the input contract ----------------------------------------------------------------------------


def test_rejects_inputs_outside_the_contract(expect):
    """Accepts valid input; rejects every bad input the lesson lists with ValueError

    zh: 接受合法输入；对讲义列出的每种非法输入抛出 ValueError
    """
    new, old, advantages, mask = random_batch(11)
    lengths = torch.tensor([3, 30, 19])
    for name in (DAPO, GSPO):
        expect.call(name, new, old, advantages, mask)
    expect.call(PENALTY, lengths, 20, 4)
    expect.call(KEEP, advantages, torch.tensor([0, 0, 1, 1, 2, 2]))
    nan = new.clone()
    nan[0, 0] = float("nan")
    empty_row = mask.clone()
    empty_row[1] = False
    bad = [
        (say("old has another shape", "`log_probs_old` 的形状不同"), (new, old[:-1], advantages, mask), {}),
        (say("1-D log-probs", "对数概率是一维的"), (new[:, 0], old[:, 0], advantages, mask[:, 0]), {}),
        (
            say("advantages for another batch size", "`advantages` 的批次大小不同"),
            (new, old, advantages[:-1], mask),
            {},
        ),
        (say("a float mask", "掩码是浮点型"), (new, old, advantages, mask.float()), {}),
        (say("a response with no valid token", "某个回答没有有效 token"), (new, old, advantages, empty_row), {}),
        (say("a NaN log-prob", "对数概率中有 NaN"), (nan, old, advantages, mask), {}),
        (say("epsilon_low = 1", "`epsilon_low` = 1"), (new, old, advantages, mask), {"epsilon_low": 1.0}),
        (say("epsilon_high < 0", "`epsilon_high` < 0"), (new, old, advantages, mask), {"epsilon_high": -0.1}),
    ]
    for name in (DAPO, GSPO):
        for why, args, kwargs in bad:
            expect.raises_value_error(why, name, *args, **kwargs)
    expect.raises_value_error(say("float lengths", "长度是浮点型"), PENALTY, lengths.float(), 20, 4)
    expect.raises_value_error(say("a negative length", "有负的长度"), PENALTY, torch.tensor([3, -1]), 20, 4)
    expect.raises_value_error(say("cache_length = 0", "`cache_length` = 0"), PENALTY, lengths, 20, 0)
    expect.raises_value_error(
        say("cache_length > max_length", "`cache_length` > `max_length`"), PENALTY, lengths, 20, 21
    )
    expect.raises_value_error(
        say("rewards and group_ids differ in shape", "`rewards` 与 `group_ids` 的形状不同"),
        KEEP,
        advantages,
        torch.tensor([0, 1]),
    )
    expect.raises_value_error(
        say("a NaN reward", "奖励中有 NaN"), KEEP, torch.tensor([float("nan"), 1.0]), torch.tensor([0, 0])
    )
