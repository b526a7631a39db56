"""Checks for gae_advantages (TODO 1), whiten (TODO 2), value_loss (TODO 3), ppo_policy_loss (TODO 4).

Fixtures: seeded (B, T) rewards, values and dones with episodes that end mid-row; a plain float64
loop over each row as the GAE oracle; ragged masks; hand-made cases where the clipped and the
unclipped terms disagree, so a min where a max belongs shows.
"""

import pytest
import torch

from grader.content import seeds
from grader.content.i18n import say
from grader.judging.expect import compared

TOL = 1e-9  # float64 comparisons with the oracle and hand-computed values


def rollout(seed: int, rows: int = 3, steps: int = 7, dtype=torch.float64):
    """Seeded rewards, values (B, T) and dones (B, T) bool: each row ends an episode mid-way."""
    generator = seeds.generator(seed)
    rewards = torch.randn(rows, steps, generator=generator, dtype=torch.float64)
    values = torch.randn(rows, steps, generator=generator, dtype=torch.float64)
    dones = torch.zeros(rows, steps, dtype=torch.bool)
    for row in range(rows):
        dones[row, (2 + 2 * row) % (steps - 1)] = True
    return rewards.to(dtype), values.to(dtype), dones


def gae_oracle(rewards, values, dones, gamma, lam):
    """The plainest loop: per row, backwards, in Python floats. Returns (advantages, returns)."""
    advantages = torch.zeros_like(rewards, dtype=torch.float64)
    for row in range(rewards.shape[0]):
        carried, next_value = 0.0, 0.0
        for t in reversed(range(rewards.shape[1])):
            if dones[row, t]:
                carried, next_value = 0.0, 0.0
            delta = float(rewards[row, t]) + gamma * next_value - float(values[row, t])
            carried = delta + gamma * lam * carried
            advantages[row, t] = carried
            next_value = float(values[row, t])
    return advantages, advantages + values.double()


def close(got, want, what: str) -> None:
    """Raise AssertionError unless the float64 tensors agree within TOL everywhere (NaN fails)."""
    gap = (got.detach().double() - want.double()).abs()
    if not bool((gap <= TOL).all()):
        raise AssertionError(f"{what}\n{compared(got, want, atol=TOL) or compared(got, want)}")


def ragged_mask(rows: int = 3, steps: int = 7):
    """A bool mask whose rows keep 7, 3 and 5 leading positions."""
    lengths = torch.tensor([steps, 3, 5][:rows])
    return torch.arange(steps) < lengths.unsqueeze(-1)


def seeded(shape, seed: int, scale=1.0, shift=0.0):
    generator = seeds.generator(seed)
    return torch.randn(shape, generator=generator, dtype=torch.float64) * scale + shift


# -- TODO 1: gae_advantages ----------------------------------------------------------------------


@pytest.mark.todo(1)
@pytest.mark.parametrize("gamma,lam", [(1.0, 0.95), (0.9, 0.8), (0.99, 1.0)])
def test_gae_matches_a_float64_loop(expect, gamma, lam):
    """Advantages and returns match a plain float64 loop, episodes ending mid-row

    zh: 优势与回报和一个朴素的 float64 循环一致，回合在行中间结束
    """
    rewards, values, dones = rollout(0)
    advantages, returns = expect.shaped_like_reference("gae_advantages", rewards, values, dones, gamma, lam)
    want_advantages, want_returns = gae_oracle(rewards, values, dones, gamma, lam)
    call = f"gae_advantages(gamma={gamma}, lam={lam})"
    close(advantages, want_advantages, say(f"{call} advantages", f"{call} 的优势"))
    close(returns, want_returns, say(f"{call} returns", f"{call} 的回报"))


def trl_gae(rewards, values, gamma, lam):
    """TRL PPOTrainer's own loop (trl 1.8.0, experimental/ppo/ppo_trainer.py): no dones, V_T = 0."""
    lastgaelam = 0
    advantages_reversed = []
    gen_length = rewards.shape[1]
    for t in reversed(range(gen_length)):
        nextvalues = values[:, t + 1] if t < gen_length - 1 else 0.0
        delta = rewards[:, t] + gamma * nextvalues - values[:, t]
        lastgaelam = delta + gamma * lam * lastgaelam
        advantages_reversed.append(lastgaelam)
    advantages = torch.stack(advantages_reversed[::-1], axis=1)
    return advantages, advantages + values


@pytest.mark.todo(1)
def test_gae_without_dones_is_trls_loop(expect):
    """Without dones, advantages and returns equal TRL PPOTrainer's lastgaelam loop

    zh: 没有终止时，优势与回报和 TRL `PPOTrainer` 的 `lastgaelam` 循环一致
    """
    rewards, values, dones = rollout(4, rows=2, steps=6)
    dones[:] = False
    advantages, returns = expect.shaped_like_reference("gae_advantages", rewards, values, dones, 0.9, 0.95)
    want_advantages, want_returns = trl_gae(rewards, values, 0.9, 0.95)
    call = "gae_advantages(gamma=0.9, lam=0.95)"
    close(advantages, want_advantages, say(f"{call}, no dones: advantages", f"{call}，`dones` 全为 `False`：优势"))
    close(returns, want_returns, say(f"{call}, no dones: returns", f"{call}，`dones` 全为 `False`：回报"))


@pytest.mark.todo(1)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_gae_matches_reference(expect, dtype):
    """Advantages and returns match the reference (float32 and float64, default gamma and lam)

    zh: 优势与回报和参考答案一致（float32 与 float64，默认的 gamma 与 lam）
    """
    expect.matches_reference("gae_advantages", *rollout(1, rows=4, steps=9, dtype=dtype))


@pytest.mark.todo(1)
def test_lam_zero_gives_the_td_error(expect):
    """With lam = 0 each advantage is its one-step TD error r_t + gamma * V_{t+1} - V_t

    zh: lam = 0 时，每个优势就是单步 TD 误差 r_t + gamma * V_{t+1} - V_t
    """
    rewards = torch.tensor([[1.0, 0.0, 2.0]], dtype=torch.float64)
    values = torch.tensor([[0.5, 1.0, 4.0]], dtype=torch.float64)
    dones = torch.zeros(1, 3, dtype=torch.bool)
    advantages, _ = expect.shaped_like_reference("gae_advantages", rewards, values, dones, 0.5, 0.0)
    want = torch.tensor([[1.0 + 0.5 * 1.0 - 0.5, 0.0 + 0.5 * 4.0 - 1.0, 2.0 - 4.0]], dtype=torch.float64)
    close(
        advantages,
        want,
        say(
            "gae_advantages(gamma=0.5, lam=0) advantages (the TD errors; V after the last step is 0)",
            "gae_advantages(gamma=0.5, lam=0) 的优势（即 TD 误差；最后一步之后的 V 为 0）",
        ),
    )


@pytest.mark.todo(1)
def test_lam_one_gives_the_discounted_return_minus_value(expect):
    """With lam = 1 the advantage is the discounted reward-to-go minus V_t

    zh: lam = 1 时，优势是折扣后的剩余回报减去 V_t
    """
    rewards = torch.tensor([[1.0, 2.0, 4.0]], dtype=torch.float64)
    values = torch.tensor([[0.3, -0.7, 1.1]], dtype=torch.float64)
    dones = torch.zeros(1, 3, dtype=torch.bool)
    advantages, _ = expect.shaped_like_reference("gae_advantages", rewards, values, dones, 0.5, 1.0)
    want = torch.tensor([[1.0 + 1.0 + 1.0 - 0.3, 2.0 + 2.0 + 0.7, 4.0 - 1.1]], dtype=torch.float64)
    close(
        advantages,
        want,
        say(
            "gae_advantages(gamma=0.5, lam=1) advantages (sum_k gamma^k r_{t+k} - V_t)",
            "gae_advantages(gamma=0.5, lam=1) 的优势（`sum_k gamma^k r_{t+k} - V_t`）",
        ),
    )


@pytest.mark.todo(1)
def test_nothing_crosses_a_done(expect):
    """Self-consistency: changing rewards and values after a done leaves earlier advantages as they were

    zh: 自洽：改变终止步之后的奖励和价值，不影响之前的优势
    """
    rewards, values, dones = rollout(2, rows=1, steps=8)
    dones[:] = False
    dones[0, 3] = True  # the episode ends after step 3
    before, _ = expect.shaped_like_reference("gae_advantages", rewards, values, dones, 0.9, 0.9)
    later_rewards, later_values = rewards.clone(), values.clone()
    later_rewards[0, 4:] += 5.0
    later_values[0, 4:] -= 3.0
    after, _ = expect.shaped_like_reference("gae_advantages", later_rewards, later_values, dones, 0.9, 0.9)
    gap = (after[0, :4] - before[0, :4]).abs().max().item()
    if not gap <= TOL:
        raise AssertionError(
            say(
                f"gae_advantages with dones[0, 3] = True: changing rewards and values of steps 4-7 moved "
                f"the advantages of steps 0-3 by up to {gap:.4g}; a done step neither bootstraps V_{{t+1}} "
                "nor carries A_{t+1} back across the episode boundary",
                f"`dones[0, 3] = True` 时的 gae_advantages：改变第 4-7 步的奖励和价值，第 0-3 步的优势"
                f"最多变化了 {gap:.4g}；`dones` 为 `True` 的一步既不用 V_{{t+1}} 自举，"
                "也不把 A_{t+1} 跨过回合边界传回来",
            )
        )


@pytest.mark.todo(1)
def test_returns_are_advantages_plus_values(expect):
    """returns - advantages equals the values: R_t = A_t + V_t

    zh: `returns - advantages` 等于 `values`：R_t = A_t + V_t
    """
    rewards, values, dones = rollout(3)
    advantages, returns = expect.shaped_like_reference("gae_advantages", rewards, values, dones)
    close(
        returns - advantages,
        values,
        say(
            "gae_advantages: returns - advantages (should be the values, R = A + V)",
            "gae_advantages：`returns - advantages`（应等于 `values`，R = A + V）",
        ),
    )


# -- TODO 2: whiten ------------------------------------------------------------------------------


@pytest.mark.todo(2)
@pytest.mark.parametrize("shift_mean", [True, False], ids=["shift_mean", "keep_mean"])
def test_whiten_matches_reference(expect, shift_mean):
    """Whitened values over a ragged mask match the reference

    zh: 在参差的掩码上，白化结果与参考答案一致
    """
    expect.matches_reference("whiten", seeded((3, 7), 10, 2.0, 1.5), ragged_mask(), shift_mean=shift_mean)
    expect.matches_reference("whiten", seeded((3, 7), 11).float(), ragged_mask(), shift_mean=shift_mean)


@pytest.mark.todo(2)
def test_whitened_values_have_mean_zero_and_unbiased_std_one(expect):
    """Over the mask the result has mean 0 and unbiased (n - 1) variance 1, as TRL's masked_var

    zh: 在掩码内，结果均值为 0，无偏（n - 1）方差为 1，与 TRL 的 `masked_var` 相同
    """
    values, mask = seeded((3, 7), 12, 3.0, -2.0), ragged_mask()
    whitened = expect.shaped_like_reference("whiten", values, mask)[mask]
    mean = whitened.mean().item()
    var = whitened.var(correction=1).item()
    if not (abs(mean) <= 1e-6 and abs(var - 1.0) <= 1e-6):
        raise AssertionError(
            say(
                f"whiten(values, mask) over the {int(mask.sum())} selected positions: mean {mean:.6f}, "
                f"unbiased variance {var:.6f}; expected 0 and 1 (the variance divides by count - 1)",
                f"whiten(values, mask) 在 {int(mask.sum())} 个选中位置上：均值 {mean:.6f}，"
                f"无偏方差 {var:.6f}；应为 0 和 1（方差的分母是个数减 1）",
            )
        )


@pytest.mark.todo(2)
def test_padding_does_not_change_whitening(expect):
    """Self-consistency: other numbers in the padding leave the result as it was, and it is 0 there

    zh: 自洽：填充（padding）位置换成别的数，结果不变，且那里为 0
    """
    values, mask = seeded((3, 7), 13), ragged_mask()
    before = expect.shaped_like_reference("whiten", values, mask)
    padded = torch.where(mask, values, torch.full_like(values, 50.0))
    after = expect.call("whiten", padded, mask)
    gap = (after - before).abs().max().item()
    outside = before[~mask].abs().max().item()
    if not (gap <= TOL and outside == 0):
        raise AssertionError(
            say(
                f"whiten(values, mask): setting the unselected positions to 50 moved the result by up to "
                f"{gap:.4g}, and the unselected positions hold up to {outside:.4g}; mean and variance "
                "are taken over the mask only, and the padding comes out as 0",
                f"whiten(values, mask)：把未选中的位置设为 50 后，结果最多变化了 {gap:.4g}，"
                f"未选中位置的绝对值最大为 {outside:.4g}；均值和方差只在掩码内计算，填充位置输出 0",
            )
        )


@pytest.mark.todo(2)
def test_keeping_the_mean_only_rescales(expect):
    """shift_mean=False equals the shift_mean=True result plus the masked mean

    zh: `shift_mean=False` 的结果等于 `shift_mean=True` 的结果加上掩码均值
    """
    values, mask = seeded((3, 7), 14, 1.0, 4.0), ragged_mask()
    centred = expect.shaped_like_reference("whiten", values, mask)
    kept = expect.shaped_like_reference("whiten", values, mask, shift_mean=False)
    mean = values[mask].mean().expand(int(mask.sum()))  # the masked mean, once per selected position
    close(
        (kept - centred)[mask],
        mean,
        say(
            "whiten(shift_mean=False) - whiten(shift_mean=True) over the mask",
            "掩码内的 whiten(shift_mean=False) - whiten(shift_mean=True)",
        ),
    )


# -- TODO 3: value_loss --------------------------------------------------------------------------


def value_batch(seed: int):
    """Seeded values, old values (within +-0.5 of them), returns, and a ragged mask."""
    values = seeded((3, 7), seed)
    old_values = values + seeded((3, 7), seed + 1, 0.3)
    returns = seeded((3, 7), seed + 2)
    return values, old_values, returns, ragged_mask()


@pytest.mark.todo(3)
@pytest.mark.parametrize("clip", [0.2, 0.05, 10.0])
def test_value_loss_matches_reference(expect, clip):
    """The clipped value loss matches the reference for several clip ranges

    zh: 在几个裁剪范围下，裁剪的价值损失与参考答案一致
    """
    expect.matches_reference("value_loss", *value_batch(20), clip_range_value=clip)


@pytest.mark.todo(3)
def test_value_loss_without_clipping_is_half_the_mse(expect):
    """When nothing is clipped the loss is 0.5 * mean (v - R)^2: [1, 3] vs [0, 0] gives 2.5

    zh: 没有裁剪时，损失是 0.5 * mean (v - R)^2：[1, 3] 对 [0, 0] 得 2.5
    """
    values = torch.tensor([[1.0, 3.0, 7.0]], dtype=torch.float64)
    mask = torch.tensor([[True, True, False]])
    got = expect.shaped_like_reference("value_loss", values, values.clone(), torch.zeros_like(values), mask).item()
    if not abs(got - 2.5) <= TOL:
        raise AssertionError(
            say(
                f"value_loss(values=[1, 3, pad], old_values=values, returns=0) = {got:.6g}; expected "
                "0.5 * (1 + 9) / 2 = 2.5 (the mean over the mask, with TRL's factor 0.5)",
                f"value_loss(values=[1, 3, 填充], old_values=values, returns=0) = {got:.6g}；应为 "
                "0.5 * (1 + 9) / 2 = 2.5（掩码内的均值，再乘以 TRL 的系数 0.5）",
            )
        )


@pytest.mark.todo(3)
def test_value_loss_keeps_the_larger_error(expect):
    """Pessimism: a clip that would lower the error is ignored, one that raises it counts

    zh: 悲观原则：能降低误差的裁剪被忽略，会增大误差的裁剪才计入
    """
    # step 0: v moved from 0 to 1 towards R = 1: the clip (0.2) would leave error 0.64 > 0: 0.64
    # step 1: v moved from 0 to 1 past R = 0.1: clipped error 0.01 < 0.81 unclipped: 0.81
    values = torch.tensor([[1.0, 1.0]], dtype=torch.float64)
    returns = torch.tensor([[1.0, 0.1]], dtype=torch.float64)
    mask = torch.ones(1, 2, dtype=torch.bool)
    got = expect.shaped_like_reference("value_loss", values, torch.zeros_like(values), returns, mask).item()
    if not abs(got - 0.5 * (0.64 + 0.81) / 2) <= TOL:
        raise AssertionError(
            say(
                f"value_loss(values=[1, 1], old_values=[0, 0], returns=[1, 0.1], clip 0.2) = {got:.6g}; "
                "expected 0.5 * (0.64 + 0.81) / 2 = 0.3625: per step the larger of (v - R)^2 and "
                "(clip(v, v_old - 0.2, v_old + 0.2) - R)^2",
                f"value_loss(values=[1, 1], old_values=[0, 0], returns=[1, 0.1], clip_range_value=0.2) = {got:.6g}；"
                "应为 0.5 * (0.64 + 0.81) / 2 = 0.3625：每一步取 (v - R)^2 与 "
                "`(clip(v, v_old - 0.2, v_old + 0.2) - R)^2` 中较大的一个",
            )
        )


@pytest.mark.todo(3)
def test_value_loss_gradient_reaches_only_the_values(expect):
    """The gradient reaches values as the reference's does; none reaches old values or returns

    zh: 梯度与参考答案一样到达 values；不到达旧值和 returns
    """
    expect.gradients_match_reference("value_loss", *value_batch(21), wrt=("values", "old_values", "returns"))


# -- TODO 4: ppo_policy_loss ---------------------------------------------------------------------


def policy_batch(seed: int):
    """Seeded log-probs, old log-probs (ratios within about exp(+-0.6)), advantages, ragged mask."""
    log_probs = -seeded((3, 7), seed).abs() - 0.1
    old_log_probs = log_probs + seeded((3, 7), seed + 1, 0.3)
    return log_probs, old_log_probs, seeded((3, 7), seed + 2), ragged_mask()


@pytest.mark.todo(4)
@pytest.mark.parametrize("clip", [0.2, 0.05, 10.0])
def test_policy_loss_matches_reference(expect, clip):
    """The clipped policy loss matches the reference for several clip ranges

    zh: 在几个裁剪范围下，裁剪的策略损失与参考答案一致
    """
    expect.matches_reference("ppo_policy_loss", *policy_batch(30), clip_range=clip)


@pytest.mark.todo(4)
def test_policy_loss_at_ratio_one_is_minus_the_mean_advantage(expect):
    """On-policy (log_probs = old_log_probs) the loss is -mean A over the mask: [2, -1] gives -0.5

    zh: 同策略（`log_probs = old_log_probs`）时，损失是掩码内 -mean A：[2, -1] 得 -0.5
    """
    log_probs = torch.tensor([[-1.0, -2.0, -0.5]], dtype=torch.float64)
    advantages = torch.tensor([[2.0, -1.0, 9.0]], dtype=torch.float64)
    mask = torch.tensor([[True, True, False]])
    got = expect.shaped_like_reference("ppo_policy_loss", log_probs, log_probs.clone(), advantages, mask).item()
    if not abs(got + 0.5) <= TOL:
        raise AssertionError(
            say(
                f"ppo_policy_loss at ratio 1, advantages [2, -1, pad] = {got:.6g}; expected "
                "-(2 - 1) / 2 = -0.5 (the loss is minus the surrogate, averaged over the mask)",
                f"比率为 1、优势为 [2, -1, 填充] 时 ppo_policy_loss = {got:.6g}；应为 "
                "-(2 - 1) / 2 = -0.5（损失是代理目标的相反数，在掩码内取均值）",
            )
        )


@pytest.mark.todo(4)
def test_policy_loss_is_pessimistic(expect):
    """Pessimism: a clip that would lower the loss is ignored, one that raises it counts

    zh: 悲观原则：能降低损失的裁剪被忽略，会增大损失的裁剪才计入
    """
    # ratio e^0.5 ~ 1.6487 on both steps, clip 0.2:
    # A = +1: losses -1.6487 and -1.2 -> -1.2 (clipped); A = -1: 1.6487 and 1.2 -> 1.6487
    log_probs = torch.tensor([[0.0, 0.0]], dtype=torch.float64) - 1.0
    old_log_probs = log_probs - 0.5
    advantages = torch.tensor([[1.0, -1.0]], dtype=torch.float64)
    mask = torch.ones(1, 2, dtype=torch.bool)
    got = expect.shaped_like_reference("ppo_policy_loss", log_probs, old_log_probs, advantages, mask).item()
    want = (-1.2 + torch.tensor(0.5, dtype=torch.float64).exp().item()) / 2
    if not abs(got - want) <= TOL:
        raise AssertionError(
            say(
                f"ppo_policy_loss(ratio e^0.5 on both steps, advantages [1, -1], clip 0.2) = {got:.6g}; "
                f"expected (-1.2 + 1.6487) / 2 = {want:.6g}: per step the larger of -A * ratio and "
                "-A * clip(ratio, 0.8, 1.2)",
                f"两步的比率都是 e^0.5、优势为 [1, -1]、`clip_range=0.2` 时 ppo_policy_loss = {got:.6g}；"
                f"应为 (-1.2 + 1.6487) / 2 = {want:.6g}：每一步取 `-A * ratio` 与 "
                "`-A * clip(ratio, 0.8, 1.2)` 中较大的一个",
            )
        )


@pytest.mark.todo(4)
def test_policy_loss_gradient_reaches_only_the_log_probs(expect):
    """The gradient reaches log_probs as the reference's does; none reaches old log-probs or advantages

    zh: 梯度与参考答案一样到达 `log_probs`；不到达旧策略的对数概率和优势
    """
    expect.gradients_match_reference(
        "ppo_policy_loss", *policy_batch(31), wrt=("log_probs", "old_log_probs", "advantages")
    )


def test_rejects_inputs_outside_the_contract(expect):
    """Accepts valid input; rejects mismatched shapes, non-finite numbers, bad masks and ranges with ValueError

    zh: 接受合法输入；对形状不匹配、非有限数、非法掩码和非法范围抛出 ValueError
    """
    rewards, values, dones = rollout(40)
    expect.call("gae_advantages", rewards, values, dones)
    expect.raises_value_error(
        say("values of another shape", "`values` 的形状不同"), "gae_advantages", rewards, values[:, :-1], dones
    )
    expect.raises_value_error(say("float dones", "`dones` 是浮点型"), "gae_advantages", rewards, values, dones.double())
    expect.raises_value_error(
        say("gamma above 1", "`gamma` 大于 1"), "gae_advantages", rewards, values, dones, gamma=1.5
    )
    expect.raises_value_error(say("a negative lam", "`lam` 为负"), "gae_advantages", rewards, values, dones, lam=-0.1)
    with_nan = rewards.clone()
    with_nan[0, 1] = float("nan")
    expect.raises_value_error(say("a NaN reward", "奖励中有 NaN"), "gae_advantages", with_nan, values, dones)
    expect.raises_value_error(
        say("1-D rewards", "`rewards` 是一维的"), "gae_advantages", rewards[0], values[0], dones[0]
    )

    mask = ragged_mask()
    expect.call("whiten", values, mask)
    expect.raises_value_error(say("a float mask", "掩码是浮点型"), "whiten", values, mask.double())
    expect.raises_value_error(say("a mask of another shape", "掩码的形状不同"), "whiten", values, mask[:, :-1])
    one = torch.zeros_like(mask)
    one[0, 0] = True
    expect.raises_value_error(say("a mask selecting one position", "掩码只选中一个位置"), "whiten", values, one)

    batch = value_batch(41)
    expect.call("value_loss", *batch)
    expect.raises_value_error(
        say("a negative clip_range_value", "`clip_range_value` 为负"), "value_loss", *batch, clip_range_value=-0.1
    )
    expect.raises_value_error(
        say("a mask that selects nothing", "掩码没有选中任何位置"), "value_loss", *batch[:3], torch.zeros_like(mask)
    )
    expect.raises_value_error(
        say("returns of another shape", "`returns` 的形状不同"), "value_loss", batch[0], batch[1], batch[2][:2], mask
    )

    batch = policy_batch(42)
    expect.call("ppo_policy_loss", *batch)
    expect.raises_value_error(
        say("a negative clip_range", "`clip_range` 为负"), "ppo_policy_loss", *batch, clip_range=-0.2
    )
    expect.raises_value_error(
        say("a mask that selects nothing", "掩码没有选中任何位置"),
        "ppo_policy_loss",
        *batch[:3],
        torch.zeros_like(mask),
    )
    inf_old = batch[1].clone()
    inf_old[1, 1] = float("-inf")
    expect.raises_value_error(
        say("an infinite old log-prob", "旧策略的对数概率中有无穷大"), "ppo_policy_loss", batch[0], inf_old, *batch[2:]
    )
