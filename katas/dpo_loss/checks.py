"""Checks for dpo_loss (TODOs 1-3) and implicit_rewards (TODO 4).

Fixtures: the lesson's four-pair batch (margins h = [0.97, -0.06, 0.01, 1.93]), seeded random
pairs whose margins spread over roughly -20..20 so that beta * h falls on both sides of 0 and of 1
(the hinge's knee) and far from IPO's targets 1 / (2 beta) and 1 / beta, and hand-built pairs with
margins of exactly 0, 2 and +/-1e4 for the mechanisms.

Each TODO's checks use inputs where the other TODOs' mistakes cannot matter: TODO 1 single pairs
at beta = 1 (no batch mean, no beta); TODOs 2 and 3 mirrored pairs (each pair also listed with
chosen and rejected exchanged, equal reference log-probs), whose mean loss does not depend on how
h is signed or on the reference, and only loss values. Whole-function comparisons are marked whole.
"""

import math

import pytest
import torch

from grader.content import seeds
from grader.content.i18n import say

FN = "dpo_loss"
REWARDS = "implicit_rewards"
ARGS = ("policy_chosen_logp", "policy_rejected_logp", "ref_chosen_logp", "ref_rejected_logp")
POLICY = ARGS[:2]


def lesson_batch():
    """The lesson's sequence-level log-probs: (policy chosen, policy rejected, ref chosen, ref rejected)."""
    return (
        torch.tensor([-23.41, -9.85, -17.62, -12.07]),
        torch.tensor([-25.30, -8.71, -16.94, -13.85]),
        torch.tensor([-22.96, -10.12, -17.40, -12.45]),
        torch.tensor([-23.88, -9.04, -16.71, -12.30]),
    )


def random_pairs(seed: int, batch: int = 6, dtype=torch.float32):
    """Seeded sequence-level log-probs; the policy sits a few nats away from the reference."""
    generator = seeds.generator(seed)
    draw = lambda: torch.randn(batch, generator=generator, dtype=torch.float64)  # noqa: E731
    ref_chosen, ref_rejected = -(draw().abs() * 20 + 5), -(draw().abs() * 20 + 5)
    policy_chosen, policy_rejected = ref_chosen + 4 * draw(), ref_rejected + 4 * draw()
    return tuple(t.to(dtype) for t in (policy_chosen, policy_rejected, ref_chosen, ref_rejected))


def mirrored_pairs(seed: int, batch: int = 3):
    """Seeded pairs listed both ways round, with equal reference log-probs for chosen and rejected.

    The batch holds each pair and its mirror (chosen and rejected exchanged), so the batch mean of
    any per-pair loss of h is unchanged when h is negated; and with ref chosen == ref rejected the
    reference cancels out of h. The margin's own mistakes (TODO 1) then cannot change the loss.
    """
    pc, pr, rc, _ = random_pairs(seed, batch)
    return torch.cat([pc, pr]), torch.cat([pr, pc]), torch.cat([rc, rc]), torch.cat([rc, rc])


def margins(batch):
    """h = (policy chosen - ref chosen) - (policy rejected - ref rejected), in float64."""
    pc, pr, rc, rr = (t.double() for t in batch)
    return (pc - rc) - (pr - rr)


# -- TODO 1: the margin --------------------------------------------------------------------------


@pytest.mark.whole
def test_matches_the_lesson_batch(expect):
    """The lesson's batch: the loss value equals the reference's, 0.6590 at beta = 0.1

    zh: 讲义的批次：损失值与参考答案相同，beta = 0.1 时为 0.6590
    """
    loss = expect.matches_reference(FN, *lesson_batch(), beta=0.1).item()
    if not abs(loss - 0.658979) <= 1e-5:  # NaN fails too
        raise AssertionError(
            say(
                f"{FN}(lesson batch, beta=0.1) = {loss:.6f}, expected 0.658979",
                f"讲义批次上 `{FN}(..., beta=0.1)` = {loss:.6f}，应为 0.658979",
            )
        )


@pytest.mark.whole
@pytest.mark.parametrize(("seed", "beta"), [(0, 0.1), (1, 0.5)])
def test_loss_and_gradients_match_reference(expect, seed, beta):
    """The sigmoid loss value and gradients for every input match the reference on random pairs

    zh: 在随机偏好对上，sigmoid 损失值及每个输入的梯度与参考答案一致
    """
    batch = random_pairs(seed)
    expect.matches_reference(FN, *batch, beta=beta)
    expect.gradients_match_reference(FN, *batch, beta=beta, wrt=ARGS)


@pytest.mark.todo(1)
def test_swapping_chosen_and_rejected_flips_the_margin(expect):
    """One pair at beta = 1: exchanging chosen and rejected negates h, so loss(swapped) - loss = h

    zh: 单个偏好对、beta = 1：交换被选回答与被拒回答会使 h 变号，因此交换后的损失减去原损失等于 h
    """
    for index, (pc, pr, rc, rr) in enumerate(zip(*random_pairs(10, batch=3))):
        pair = tuple(t.reshape(1) for t in (pc, pr, rc, rr))
        loss = expect.shaped_like_reference(FN, *pair, beta=1.0).item()
        swapped = expect.call(FN, pair[1], pair[0], pair[3], pair[2], beta=1.0).item()
        # -log sigmoid(-h) - (-log sigmoid(h)) = h; one pair and beta = 1 leave the loss's own steps out
        expected = margins(pair).item()
        if not abs((swapped - loss) - expected) <= 1e-4:  # NaN fails too
            raise AssertionError(
                say(
                    f"{FN}(random pair {index}, beta=1): loss {loss:.5f}, with chosen and rejected exchanged"
                    f" {swapped:.5f}; their difference should be h = {expected:.5f}, got {swapped - loss:.5f}",
                    f"随机偏好对 {index} 上的 `{FN}(..., beta=1)`：损失为 {loss:.5f}，交换被选回答与被拒回答后为"
                    f" {swapped:.5f}；两者之差应为 h = {expected:.5f}，实际为 {swapped - loss:.5f}",
                )
            )


@pytest.mark.todo(1)
@pytest.mark.parametrize("seed", [0, 1])
def test_single_pair_loss_value_and_gradients_match_reference(expect, seed):
    """One pair at beta = 1, where the loss is -log sigmoid(h): its value and gradients match

    zh: 单个偏好对、beta = 1 时损失为 -log sigmoid(h)：其值与梯度和参考答案一致
    """
    for pc, pr, rc, rr in zip(*random_pairs(seed, batch=3)):
        pair = tuple(t.reshape(1) for t in (pc, pr, rc, rr))
        expect.matches_reference(FN, *pair, beta=1.0)
        expect.gradients_match_reference(FN, *pair, beta=1.0, wrt=ARGS)


@pytest.mark.todo(1)
def test_reference_log_probs_receive_no_gradient(expect):
    """The reference model is frozen: no gradient reaches its log-probs, even when they require grad

    zh: 参考模型是冻结的：即使其对数概率 `requires_grad`，梯度也不会传到它们
    """
    expect.gradients_match_reference(FN, *lesson_batch(), wrt=ARGS[2:])


# -- TODO 2: the sigmoid loss ----------------------------------------------------------------------


@pytest.mark.todo(2)
@pytest.mark.parametrize(("seed", "beta"), [(2, 0.1), (3, 0.5)])
def test_sigmoid_loss_value_matches_reference_on_mirrored_pairs(expect, seed, beta):
    """The sigmoid loss value matches the reference on pairs listed both ways round

    zh: 偏好对按正反两种顺序各列一次时，sigmoid 损失值与参考答案一致
    """
    expect.matches_reference(FN, *mirrored_pairs(seed), beta=beta, loss_type="sigmoid")


@pytest.mark.todo(2)
def test_loss_is_log_2_when_every_margin_is_0(expect):
    """With chosen and rejected log-probs equal every margin is 0 and the loss is log 2, whatever beta

    zh: 被选回答与被拒回答的对数概率相等时所有间隔为 0，损失为 log 2，与 beta 无关
    """
    pc, _, rc, _ = random_pairs(4)
    for beta in (0.1, 2.0):
        loss = expect.shaped_like_reference(FN, pc, pc.clone(), rc, rc.clone(), beta=beta).item()
        if not abs(loss - math.log(2)) <= 1e-5:  # NaN fails too
            raise AssertionError(
                say(
                    f"{FN}(chosen == rejected, beta={beta}) = {loss:.6f}; with h = 0 it must be log 2 = 0.693147",
                    f"被选回答与被拒回答的对数概率相同时，`{FN}(..., beta={beta})` = {loss:.6f}；h = 0 时它必须等于 log 2 = 0.693147",
                )
            )


@pytest.mark.todo(2)
def test_stable_at_huge_margins(expect):
    """Finite loss and gradients at margins h = +1e4 and -1e4 (log-sigmoid, not log of sigmoid)

    zh: 在间隔 h = +1e4 与 -1e4 处，损失与梯度都有限（用 log-sigmoid，而不是对 sigmoid 取 log）
    """
    batch = (
        torch.tensor([-1.0, -10001.0]),
        torch.tensor([-10001.0, -1.0]),
        torch.tensor([-5.0, -5.0]),
        torch.tensor([-5.0, -5.0]),
    )
    loss, grads = expect.gradients(FN, *batch, beta=0.1, wrt=POLICY)
    where = say(f"{FN}(pairs with h = +1e4 and -1e4, beta=0.1)", f"h = +1e4 与 -1e4 的偏好对上的 `{FN}(..., beta=0.1)`")
    if not math.isfinite(loss):
        raise AssertionError(
            say(f"{where}: the loss is {loss}, expected a finite 500.0", f"{where}：损失为 {loss}，应为有限值 500.0")
        )
    for name in POLICY:
        gradient = grads[name]
        if gradient is None or not bool(torch.isfinite(gradient).all()):
            raise AssertionError(
                say(
                    f"{where}: the gradient with respect to {name} is not finite",
                    f"{where}：对 `{name}` 的梯度不是有限值",
                )
            )
    expect.matches_reference(FN, *batch, beta=0.1)


@pytest.mark.todo(2)
def test_loss_is_a_mean_over_pairs(expect):
    """The loss is the batch mean: repeating the batch leaves it unchanged

    zh: 损失是批次均值：把批次重复一遍，损失不变
    """
    batch = random_pairs(5)
    once = expect.shaped_like_reference(FN, *batch).item()
    twice = expect.call(FN, *(torch.cat([t, t]) for t in batch)).item()
    if not abs(twice - once) <= 1e-5 * max(1.0, abs(once)):  # NaN fails too
        raise AssertionError(
            say(
                f"{FN}(random pairs): loss {once:.5f} for the batch but {twice:.5f} for the batch repeated twice;"
                " a mean over pairs does not depend on the batch size",
                f"随机偏好对上的 `{FN}(...)`：该批次的损失为 {once:.5f}，把批次重复一遍后却为 {twice:.5f}；"
                "按偏好对求均值，结果与批次大小无关",
            )
        )


@pytest.mark.todo(2)
def test_dtype_follows_inputs(expect):
    """float64 log-probs give a float64 loss (dtype and shape compared, not values)

    zh: float64 对数概率得到 float64 损失（只比较 dtype 与形状，不比较数值）
    """
    expect.shaped_like_reference(FN, *random_pairs(6, dtype=torch.float64), beta=0.3)


# -- TODO 3: hinge and IPO -------------------------------------------------------------------------


@pytest.mark.todo(3)
@pytest.mark.parametrize("loss_type", ["hinge", "ipo"])
@pytest.mark.parametrize(("seed", "beta"), [(7, 0.5), (8, 0.1)])
def test_variant_loss_value_matches_reference_on_mirrored_pairs(expect, loss_type, seed, beta):
    """The hinge and IPO loss values match the reference on pairs listed both ways round

    zh: 偏好对按正反两种顺序各列一次时，hinge 与 IPO 的损失值与参考答案一致
    """
    expect.matches_reference(FN, *mirrored_pairs(seed), beta=beta, loss_type=loss_type)


@pytest.mark.whole
@pytest.mark.parametrize("loss_type", ["hinge", "ipo"])
@pytest.mark.parametrize(("seed", "beta"), [(7, 0.5), (8, 0.1)])
def test_variant_loss_and_gradients_match_reference(expect, loss_type, seed, beta):
    """The hinge and IPO loss values and gradients for every input match the reference

    zh: hinge 与 IPO 的损失值及每个输入的梯度与参考答案一致
    """
    batch = random_pairs(seed)
    expect.matches_reference(FN, *batch, beta=beta, loss_type=loss_type)
    expect.gradients_match_reference(FN, *batch, beta=beta, loss_type=loss_type, wrt=ARGS)


@pytest.mark.whole
def test_hinge_is_flat_once_beta_h_reaches_1(expect):
    """Hinge: a pair with beta * h = 1.5 costs 0 and gets no gradient; beta * h = 0.5 costs 0.5

    zh: hinge：beta * h = 1.5 的偏好对损失为 0 且无梯度；beta * h = 0.5 的损失为 0.5
    """
    for h, expected in ((3.0, 0.0), (1.0, 0.5)):
        batch = (torch.tensor([-2.0 + h]), torch.tensor([-2.0]), torch.tensor([-2.0]), torch.tensor([-2.0]))
        loss, grads = expect.gradients(FN, *batch, beta=0.5, loss_type="hinge", wrt=POLICY[:1])
        gradient = 0.0 if grads[POLICY[0]] is None else grads[POLICY[0]].item()
        expected_gradient = -0.5 if expected > 0 else 0.0
        if not (abs(loss - expected) <= 1e-6 and abs(gradient - expected_gradient) <= 1e-6):  # NaN fails too
            raise AssertionError(
                say(
                    f"{FN}(one pair with h = {h:.1f}, beta=0.5, loss_type='hinge'): loss {loss:.4f} and"
                    f" d loss / d policy_chosen_logp {gradient:.4f}; expected {expected:.4f} and {expected_gradient:.4f}",
                    f"h = {h:.1f} 的偏好对上的 `{FN}(..., beta=0.5, loss_type='hinge')`：损失为 {loss:.4f}，"
                    f"d loss / d policy_chosen_logp = {gradient:.4f}；应分别为 {expected:.4f} 和 {expected_gradient:.4f}",
                )
            )


@pytest.mark.whole
def test_ipo_is_zero_at_its_target(expect):
    """IPO: the loss and its gradient are 0 exactly when h = 1 / (2 beta)

    zh: IPO：当 h = 1 / (2 beta) 时，损失及其梯度恰好为 0
    """
    batch = (torch.tensor([-3.0]), torch.tensor([-5.0]), torch.tensor([0.0]), torch.tensor([0.0]))  # h = 2
    loss, grads = expect.gradients(FN, *batch, beta=0.25, loss_type="ipo", wrt=POLICY[:1])
    gradient = 0.0 if grads[POLICY[0]] is None else grads[POLICY[0]].item()
    if not (abs(loss) <= 1e-6 and abs(gradient) <= 1e-6):  # NaN fails too
        raise AssertionError(
            say(
                f"{FN}(one pair with h = 2, beta=0.25, loss_type='ipo'): loss {loss:.4f}, gradient {gradient:.4f};"
                " the target 1 / (2 beta) is 2 here, so both should be 0",
                f"h = 2 的偏好对上的 `{FN}(..., beta=0.25, loss_type='ipo')`：损失为 {loss:.4f}，梯度为 {gradient:.4f}；"
                "这里的目标 1 / (2 beta) 等于 2，所以两者都应为 0",
            )
        )


# -- TODO 4: implicit rewards -----------------------------------------------------------------------


@pytest.mark.todo(4)
@pytest.mark.parametrize("beta", [0.1, 0.5])
def test_implicit_rewards_match_reference(expect, beta):
    """Implicit rewards equal beta * (policy - reference) for chosen and rejected

    zh: 隐式奖励等于 `beta * (policy_logp - ref_logp)`，被选回答与被拒回答各一份
    """
    expect.matches_reference(REWARDS, *random_pairs(9), beta=beta)
    expect.matches_reference(REWARDS, *lesson_batch())


@pytest.mark.todo(4)
def test_implicit_rewards_are_detached(expect):
    """The rewards are for logging: they carry no graph, even when the policy log-probs require grad

    zh: 奖励只用于日志：即使策略对数概率 `requires_grad`，它们也不带计算图
    """
    pc, pr, rc, rr = lesson_batch()
    rewards = expect.call(REWARDS, pc.requires_grad_(), pr.requires_grad_(), rc, rr)
    where = say(f"{REWARDS}(lesson batch)", f"讲义批次上的 `{REWARDS}(...)`")
    expect.same(rewards, expect.reference_call(REWARDS, pc, pr, rc, rr), where)
    for name, reward in zip(("chosen_rewards", "rejected_rewards"), rewards):
        if reward.requires_grad or reward.grad_fn is not None:
            raise AssertionError(
                say(
                    f"{where}: {name} is still attached to the graph: a reward for logging carries no gradient",
                    f"{where}：`{name}` 仍连在计算图上：用于日志的奖励不带梯度",
                )
            )


@pytest.mark.todo(4)
def test_reward_margin_is_beta_h(expect):
    """chosen_rewards - rejected_rewards is beta * h, the argument of the sigmoid loss

    zh: `chosen_rewards - rejected_rewards` 等于 beta * h，即 sigmoid 损失的自变量
    """
    batch = random_pairs(11)
    chosen, rejected = expect.shaped_like_reference(REWARDS, *batch, beta=0.2)
    got = (chosen - rejected).double()
    expected = 0.2 * margins(batch)
    worst = (got - expected).abs().max().item()
    if not worst <= 1e-4:  # NaN fails too
        raise AssertionError(
            say(
                f"{REWARDS}(random pairs, beta=0.2): chosen - rejected differs from beta * h by up to {worst:.4f}",
                f"随机偏好对上的 `{REWARDS}(..., beta=0.2)`：`chosen_rewards - rejected_rewards` 与 beta * h 最多相差 {worst:.4f}",
            )
        )


def test_rejects_inputs_outside_the_contract(expect):
    """Accepts valid input; rejects bad shapes, empty or non-finite log-probs, bad beta and loss_type

    zh: 接受合法输入；对错误形状、空或非有限的对数概率、非法 beta 与 `loss_type` 抛出 ValueError
    """
    pc, pr, rc, rr = lesson_batch()
    expect.call(FN, pc, pr, rc, rr, beta=0.1, loss_type="ipo")  # a valid call does not raise
    expect.call(REWARDS, pc, pr, rc, rr, beta=0.1)
    nan, inf = float("nan"), float("inf")
    with_nan, with_inf = pc.clone(), rr.clone()
    with_nan[1] = nan
    with_inf[2] = -inf
    bad = [
        (say("shapes differ", "形状不一致"), (pc, pr[:-1], rc, rr), {}),
        (say("a reference of another shape", "参考对数概率的形状不同"), (pc, pr, rc, rr[:-1]), {}),
        (say("2-D log-probs", "对数概率是二维的"), tuple(t.reshape(2, 2) for t in (pc, pr, rc, rr)), {}),
        (say("0-D log-probs", "对数概率是零维的"), tuple(t[0] for t in (pc, pr, rc, rr)), {}),
        (say("an empty batch", "批次为空"), tuple(t[:0] for t in (pc, pr, rc, rr)), {}),
        (say("a NaN policy log-prob", "策略对数概率中有 NaN"), (with_nan, pr, rc, rr), {}),
        (say("an infinite reference log-prob", "参考对数概率中有无穷大"), (pc, pr, rc, with_inf), {}),
        ("beta = 0", (pc, pr, rc, rr), {"beta": 0.0}),
        ("beta < 0", (pc, pr, rc, rr), {"beta": -0.1}),
        (say("beta is NaN", "beta 为 NaN"), (pc, pr, rc, rr), {"beta": nan}),
        (say("beta is infinite", "beta 为无穷大"), (pc, pr, rc, rr), {"beta": inf}),
    ]
    for why, args, kwargs in bad:
        expect.raises_value_error(why, FN, *args, **kwargs)
        expect.raises_value_error(why, REWARDS, *args, **kwargs)
    for loss_type in ("dpo", "SIGMOID", "kto"):
        expect.raises_value_error(
            say("an unknown loss_type", "未知的 `loss_type`"), FN, pc, pr, rc, rr, loss_type=loss_type
        )
