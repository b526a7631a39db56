"""Checks for simpo_loss (TODO 1), log1mexp (TODO 2) and orpo_loss (TODOs 3 and 4).

Fixtures: the lesson's batches, seeded random average log-probs in [-3, -0.2] (float32, the dtype
TRL's ORPO computes in, so `--against trl` agrees to float32 rounding), and hand-built values for
the mechanisms: a SimPO pair exactly at its target margin, margins of +/-1000, the odds of 1/2
against 1/4, and log-probs of -1e-8, where exp rounds to 1 in float32.

TODO 2's checks call log1mexp alone. TODO 3's compare only the returned log_odds, which TODO 4 does
not touch, on log-probs far enough from 0 that every log1mexp of TODO 2's mistakes is accurate
there. TODO 4's compare the loss with the formula applied to the file's own log_odds, so that they
do not depend on TODO 3. Whole-function comparisons are marked whole.
"""

import math

import pytest
import torch

from grader.content import seeds
from grader.content.i18n import say

SIMPO = "simpo_loss"
LOG1MEXP = "log1mexp"
ORPO = "orpo_loss"
PAIR = ("chosen_avg_logps", "rejected_avg_logps")
ORPO_ARGS = (*PAIR, "chosen_nll")


def simpo_lesson():
    """The lesson's SimPO batch: (chosen, rejected) average log-probs."""
    return torch.tensor([-0.62, -1.15, -0.48, -0.91]), torch.tensor([-0.85, -1.02, -1.30, -0.93])


def orpo_lesson():
    """The lesson's ORPO batch: (chosen, rejected) average log-probs and the chosen NLL."""
    return torch.tensor([-0.42, -1.10, -0.65, -0.30]), torch.tensor([-0.95, -0.88, -1.40, -0.33]), torch.tensor(0.62)


def random_pair(seed: int, batch: int = 6, dtype=torch.float32):
    """Seeded average log-probs in [-3, -0.2]: chosen and rejected of each pair drawn apart."""
    generator = seeds.generator(seed)
    draw = lambda: -(0.2 + 2.8 * torch.rand(batch, generator=generator, dtype=torch.float64))  # noqa: E731
    return draw().to(dtype), draw().to(dtype)


def random_orpo(seed: int, batch: int = 6, dtype=torch.float32):
    """random_pair plus a chosen NLL of about 1."""
    chosen, rejected = random_pair(seed, batch, dtype)
    return chosen, rejected, (-chosen.mean()).detach().clone()


def _fail(en: str, zh: str):
    raise AssertionError(say(en, zh))


# -- TODO 1: SimPO ----------------------------------------------------------------------------------


@pytest.mark.todo(1)
def test_simpo_matches_the_lesson_batch(expect):
    """The lesson's batch: the SimPO loss equals the reference's, 0.7710 at beta = 2, gamma = 0.5

    zh: 讲义的批次：SimPO 损失与参考答案相同，beta = 2、gamma = 0.5 时为 0.7710
    """
    loss = expect.matches_reference(SIMPO, *simpo_lesson()).item()
    if not abs(loss - 0.770971) <= 1e-5:  # NaN fails too
        _fail(
            f"{SIMPO}(lesson batch) = {loss:.6f}, expected 0.770971",
            f"讲义批次上 `{SIMPO}(...)` = {loss:.6f}，应为 0.770971",
        )


@pytest.mark.todo(1)
@pytest.mark.parametrize(("seed", "beta", "gamma"), [(0, 2.0, 0.5), (1, 2.5, 1.4), (2, 0.5, 0.0)])
def test_simpo_loss_and_gradients_match_reference(expect, seed, beta, gamma):
    """The SimPO loss value and its gradients match the reference on random pairs

    zh: 在随机偏好对上，SimPO 损失值及其梯度与参考答案一致
    """
    pair = random_pair(seed, dtype=torch.float64)
    expect.matches_reference(SIMPO, *pair, beta=beta, gamma=gamma)
    expect.gradients_match_reference(SIMPO, *pair, beta=beta, gamma=gamma, wrt=PAIR)


@pytest.mark.todo(1)
def test_simpo_is_log_2_at_the_target_margin(expect):
    """A pair whose c - r is exactly gamma / beta sits at the target: its loss is log 2

    zh: c - r 恰好等于 gamma / beta 的偏好对正处在目标上：它的损失为 log 2
    """
    chosen, rejected = torch.tensor([-1.0]), torch.tensor([-1.25])  # c - r = 0.25 = gamma / beta
    loss = expect.shaped_like_reference(SIMPO, chosen, rejected, beta=2.0, gamma=0.5).item()
    if not abs(loss - math.log(2)) <= 1e-6:  # NaN fails too
        _fail(
            f"{SIMPO}(c = -1, r = -1.25, beta=2, gamma=0.5) = {loss:.6f}; beta * (c - r) - gamma = 0 here,"
            " so the loss must be log 2 = 0.693147",
            f"`{SIMPO}(c = -1, r = -1.25, beta=2, gamma=0.5)` = {loss:.6f}；这里 beta * (c - r) - gamma = 0，"
            "所以损失必须等于 log 2 = 0.693147",
        )


@pytest.mark.todo(1)
def test_simpo_is_stable_at_huge_margins(expect):
    """Finite loss and gradients at margins of +1000 and -1000 (log-sigmoid, not log of sigmoid)

    zh: 在间隔为 +1000 与 -1000 处，损失与梯度都有限（用 log-sigmoid，而不是对 sigmoid 取 log）
    """
    chosen, rejected = torch.tensor([-1.0, -500.75]), torch.tensor([-501.25, -1.0])  # margins +1000, -1000
    loss, grads = expect.gradients(SIMPO, chosen, rejected, wrt=PAIR)
    where = say(f"{SIMPO}(margins +1000 and -1000)", f"间隔为 +1000 与 -1000 时的 `{SIMPO}(...)`")
    if not math.isfinite(loss):
        _fail(f"{where}: the loss is {loss}, expected a finite 500.0", f"{where}：损失为 {loss}，应为有限值 500.0")
    for name in PAIR:
        if grads[name] is None or not bool(torch.isfinite(grads[name]).all()):
            _fail(
                f"{where}: the gradient with respect to {name} is not finite", f"{where}：对 `{name}` 的梯度不是有限值"
            )
    expect.matches_reference(SIMPO, chosen, rejected)


@pytest.mark.todo(1)
def test_simpo_is_a_mean_over_pairs(expect):
    """The SimPO loss is the batch mean: repeating the batch leaves it unchanged

    zh: SimPO 损失是批次均值：把批次重复一遍，损失不变
    """
    chosen, rejected = random_pair(3)
    once = expect.shaped_like_reference(SIMPO, chosen, rejected).item()
    twice = expect.call(SIMPO, torch.cat([chosen, chosen]), torch.cat([rejected, rejected])).item()
    if not abs(twice - once) <= 1e-5 * max(1.0, abs(once)):  # NaN fails too
        _fail(
            f"{SIMPO}(random pairs): loss {once:.5f} for the batch but {twice:.5f} for the batch repeated twice;"
            " a mean over pairs does not depend on the batch size",
            f"随机偏好对上的 `{SIMPO}(...)`：该批次的损失为 {once:.5f}，把批次重复一遍后却为 {twice:.5f}；"
            "按偏好对求均值，结果与批次大小无关",
        )


@pytest.mark.todo(1)
def test_simpo_dtype_follows_inputs(expect):
    """float64 log-probs give a float64 SimPO loss (dtype and shape compared, not values)

    zh: float64 对数概率得到 float64 的 SimPO 损失（只比较 dtype 与形状，不比较数值）
    """
    expect.shaped_like_reference(SIMPO, *random_pair(4, dtype=torch.float64), beta=2.5)


# -- TODO 2: log1mexp -------------------------------------------------------------------------------


@pytest.mark.todo(2)
def test_log1mexp_matches_reference_far_from_0(expect):
    """log1mexp matches the reference from x = -40 to x = -0.01, in float64

    zh: 从 x = -40 到 x = -0.01，log1mexp 与参考答案一致（float64）
    """
    expect.matches_reference(LOG1MEXP, -torch.logspace(-2, math.log10(40), 25, dtype=torch.float64))


@pytest.mark.todo(2)
def test_log1mexp_is_accurate_near_0(expect):
    """In float32, log1mexp(-1e-8) is log(1e-8), not -inf: exp(x) rounds to 1 there

    zh: float32 中 log1mexp(-1e-8) 等于 log(1e-8) 而不是 -inf：那里 exp(x) 被舍入为 1
    """
    x = torch.tensor([-1e-8, -1e-6, -1e-4, -0.01, -0.5])
    got = expect.shaped_like_reference(LOG1MEXP, x)
    expected = torch.log(-torch.expm1(x.double()))  # (5,) exact enough in float64
    worst = (got.double() - expected).abs().div(expected.abs()).nan_to_num(nan=math.inf).max().item()
    if not worst <= 1e-5:
        values = ", ".join(f"{value:.4f}" for value in got.tolist())
        _fail(
            f"{LOG1MEXP}([-1e-8, -1e-6, -1e-4, -0.01, -0.5]) in float32 = [{values}], expected about"
            " [-18.4207, -13.8155, -9.2104, -4.6102, -0.9328]: 1 - exp(x) cancels near 0",
            f"float32 中 `{LOG1MEXP}([-1e-8, -1e-6, -1e-4, -0.01, -0.5])` = [{values}]，应约为"
            " [-18.4207, -13.8155, -9.2104, -4.6102, -0.9328]：在 0 附近 1 - exp(x) 发生相消",
        )


@pytest.mark.todo(2)
def test_log1mexp_gradients_are_finite_and_match(expect):
    """The gradient of log1mexp is finite everywhere, -1e8 at x = -1e-8 in float32, and matches

    zh: log1mexp 的梯度处处有限，float32 中 x = -1e-8 处为 -1e8，并与参考答案一致
    """
    x = torch.tensor([-1e-8, -1e-3, -0.5, -0.9, -5.0])
    _, grads = expect.gradients(LOG1MEXP, x, wrt=("x",), cotangent=torch.ones(5))
    gradient = grads["x"]
    if gradient is None or not bool(torch.isfinite(gradient).all()):
        shown = "None" if gradient is None else ", ".join(f"{value:.4g}" for value in gradient.tolist())
        _fail(
            f"{LOG1MEXP}([-1e-8, -1e-3, -0.5, -0.9, -5]) in float32: the gradient is [{shown}], not finite;"
            " torch.where also backpropagates through the branch it did not take",
            f"float32 中 `{LOG1MEXP}([-1e-8, -1e-3, -0.5, -0.9, -5])`：梯度为 [{shown}]，不是有限值；"
            "`torch.where` 也会对没被选中的分支反向传播",
        )
    expect.gradients_match_reference(LOG1MEXP, x, wrt=("x",), cotangent=torch.ones(5))


# -- TODO 3: the log odds ratio ---------------------------------------------------------------------


@pytest.mark.todo(3)
@pytest.mark.parametrize("seed", [5, 6])
def test_log_odds_and_their_gradients_match_reference(expect, seed):
    """The returned log_odds, and their gradients with respect to both log-probs, match the reference

    zh: 返回的 log_odds 及其对两个对数概率的梯度与参考答案一致
    """
    batch = random_orpo(seed)
    got = expect.shaped_like_reference(ORPO, *batch)  # (loss, log_odds), values not compared yet
    where = expect.describe(ORPO, batch, {}) + say(
        "\n  the second returned value, `log_odds`:", "\n  第二个返回值 `log_odds`："
    )
    expect.same(got[1], expect.reference_call(ORPO, *batch)[1], where)
    weights = torch.linspace(-1.0, 1.5, batch[0].shape[0])  # (B,) a cotangent that weighs each pair differently
    expect.gradients_match_reference(ORPO, *batch, wrt=PAIR, pick=(1,), cotangent=weights)


@pytest.mark.todo(3)
def test_odds_of_one_half_against_one_quarter_give_log_3(expect):
    """p = 1/2 against p = 1/4: odds 1 against 1/3, so log_odds = log 3, not the log-prob ratio log 2

    zh: p = 1/2 对 p = 1/4：几率为 1 对 1/3，因此 log_odds = log 3，而不是对数概率之比 log 2
    """
    chosen, rejected = torch.tensor([math.log(0.5)]), torch.tensor([math.log(0.25)])
    _, log_odds = expect.shaped_like_reference(ORPO, chosen, rejected, torch.tensor(0.0))
    got = log_odds.item()
    if not abs(got - math.log(3)) <= 1e-5:  # NaN fails too
        _fail(
            f"{ORPO}(c = log 0.5, r = log 0.25, chosen_nll=0): log_odds = {got:.5f}, expected log 3 = 1.09861",
            f"`{ORPO}(c = log 0.5, r = log 0.25, chosen_nll=0)`：log_odds = {got:.5f}，应为 log 3 = 1.09861",
        )


# -- TODO 4: the ORPO loss --------------------------------------------------------------------------


@pytest.mark.todo(4)
@pytest.mark.parametrize(("seed", "beta"), [(7, 0.1), (8, 0.5)])
def test_loss_is_the_nll_minus_beta_times_the_mean_log_sigmoid_of_its_log_odds(expect, seed, beta):
    """loss = chosen_nll - beta * mean(log sigmoid(log_odds)), with the log_odds the file returns

    zh: loss = chosen_nll - beta * mean(log sigmoid(log_odds))，其中 log_odds 是文件自己返回的
    """
    batch = random_orpo(seed)
    loss, log_odds = expect.shaped_like_reference(ORPO, *batch, beta=beta)
    expected = batch[2].double() - beta * torch.nn.functional.logsigmoid(log_odds.double()).mean()
    if not abs(loss.item() - expected.item()) <= 1e-5:  # NaN fails too
        _fail(
            f"{ORPO}(random pairs, beta={beta}): loss {loss.item():.5f}, but chosen_nll - beta * mean(log"
            f" sigmoid(log_odds)) with the log_odds it returned is {expected.item():.5f}",
            f"随机偏好对上的 `{ORPO}(..., beta={beta})`：损失为 {loss.item():.5f}，而用它返回的 log_odds 计算"
            f" chosen_nll - beta * mean(log sigmoid(log_odds)) 得 {expected.item():.5f}",
        )


@pytest.mark.todo(4)
def test_the_nll_enters_with_weight_1(expect):
    """The gradient of the loss with respect to chosen_nll is 1: the SFT term is not scaled by beta

    zh: 损失对 chosen_nll 的梯度为 1：SFT 项不乘以 beta
    """
    expect.gradients_match_reference(ORPO, *random_orpo(9), beta=0.2, wrt=("chosen_nll",), pick=(0,))


@pytest.mark.todo(4)
def test_orpo_is_a_mean_over_pairs(expect):
    """The ORPO loss is a batch mean: repeating the batch leaves it unchanged

    zh: ORPO 损失是批次均值：把批次重复一遍，损失不变
    """
    chosen, rejected, nll = random_orpo(10)
    once = expect.shaped_like_reference(ORPO, chosen, rejected, nll)[0].item()
    twice = expect.call(ORPO, torch.cat([chosen, chosen]), torch.cat([rejected, rejected]), nll)[0].item()
    if not abs(twice - once) <= 1e-5 * max(1.0, abs(once)):  # NaN fails too
        _fail(
            f"{ORPO}(random pairs): loss {once:.5f} for the batch but {twice:.5f} for the batch repeated twice;"
            " a mean over pairs does not depend on the batch size",
            f"随机偏好对上的 `{ORPO}(...)`：该批次的损失为 {once:.5f}，把批次重复一遍后却为 {twice:.5f}；"
            "按偏好对求均值，结果与批次大小无关",
        )


@pytest.mark.todo(4)
def test_orpo_dtype_follows_inputs(expect):
    """float64 inputs give a float64 loss and log_odds (dtype and shape compared, not values)

    zh: float64 输入得到 float64 的损失与 log_odds（只比较 dtype 与形状，不比较数值）
    """
    expect.shaped_like_reference(ORPO, *random_orpo(11, dtype=torch.float64))


@pytest.mark.whole
def test_orpo_matches_the_lesson_batch(expect):
    """The lesson's batch: the ORPO loss equals the reference's, 0.6717 at beta = 0.1

    zh: 讲义的批次：ORPO 损失与参考答案相同，beta = 0.1 时为 0.6717
    """
    loss = expect.matches_reference(ORPO, *orpo_lesson())[0].item()
    if not abs(loss - 0.671744) <= 1e-5:  # NaN fails too
        _fail(
            f"{ORPO}(lesson batch) = {loss:.6f}, expected 0.671744",
            f"讲义批次上 `{ORPO}(...)` = {loss:.6f}，应为 0.671744",
        )


@pytest.mark.whole
@pytest.mark.parametrize(("seed", "beta"), [(12, 0.1), (13, 0.5)])
def test_orpo_loss_and_gradients_match_reference(expect, seed, beta):
    """The ORPO loss, its log_odds and the loss's gradients for every input match the reference

    zh: ORPO 损失、log_odds 以及损失对每个输入的梯度都与参考答案一致
    """
    batch = random_orpo(seed)
    expect.matches_reference(ORPO, *batch, beta=beta)
    expect.gradients_match_reference(ORPO, *batch, beta=beta, wrt=ORPO_ARGS, pick=(0,))


@pytest.mark.whole
def test_orpo_is_finite_for_a_nearly_certain_chosen_response(expect):
    """A chosen response with average log-prob -1e-8 (float32): finite loss, log_odds and gradients

    zh: 被选回答的平均对数概率为 -1e-8（float32）时，损失、log_odds 与梯度都有限
    """
    chosen, rejected, nll = torch.tensor([-1e-8, -0.7]), torch.tensor([-1.5, -0.9]), torch.tensor(0.3)
    loss, log_odds = expect.shaped_like_reference(ORPO, chosen, rejected, nll)
    _, grads = expect.gradients(ORPO, chosen, rejected, nll, wrt=PAIR, pick=(0,))
    where = say(f"{ORPO}(a chosen log-prob of -1e-8)", f"被选回答对数概率为 -1e-8 时的 `{ORPO}(...)`")
    if not (math.isfinite(loss.item()) and bool(torch.isfinite(log_odds).all())):
        _fail(
            f"{where}: loss {loss.item()}, log_odds {log_odds.tolist()}; both must be finite",
            f"{where}：损失为 {loss.item()}，log_odds 为 {log_odds.tolist()}；两者都必须有限",
        )
    for name in PAIR:
        if grads[name] is None or not bool(torch.isfinite(grads[name]).all()):
            _fail(
                f"{where}: the gradient with respect to {name} is not finite", f"{where}：对 `{name}` 的梯度不是有限值"
            )


def test_rejects_inputs_outside_the_contract(expect):
    """Accepts valid input; rejects bad shapes, non-finite or positive log-probs, bad beta, gamma, NLL

    zh: 接受合法输入；对错误形状、非有限或为正的对数概率、非法的 beta、gamma 与 NLL 抛出 ValueError
    """
    chosen, rejected, nll = orpo_lesson()
    expect.call(SIMPO, chosen, rejected, beta=2.0, gamma=0.0)  # valid calls do not raise
    expect.call(ORPO, chosen, rejected, nll, beta=0.1)
    with_nan, zero, positive = chosen.clone(), chosen.clone(), rejected.clone()
    with_nan[1], zero[0], positive[2] = float("nan"), 0.0, 0.3
    expect.call(SIMPO, zero, rejected)  # a log-prob of 0 is a probability of 1: SimPO allows it
    pair_bad = [
        (say("shapes differ", "形状不一致"), (chosen, rejected[:-1]), {}),
        (say("2-D log-probs", "对数概率是二维的"), (chosen.reshape(2, 2), rejected.reshape(2, 2)), {}),
        (say("0-D log-probs", "对数概率是零维的"), (chosen[0], rejected[0]), {}),
        (say("an empty batch", "批次为空"), (chosen[:0], rejected[:0]), {}),
        (say("a NaN log-prob", "对数概率中有 NaN"), (with_nan, rejected), {}),
        (say("a positive log-prob", "对数概率为正"), (chosen, positive), {}),
        ("beta = 0", (chosen, rejected), {"beta": 0.0}),
        (say("beta is infinite", "beta 为无穷大"), (chosen, rejected), {"beta": float("inf")}),
    ]
    for why, args, kwargs in pair_bad:
        expect.raises_value_error(why, SIMPO, *args, **kwargs)
        expect.raises_value_error(why, ORPO, *args, nll, **kwargs)
    expect.raises_value_error("gamma < 0", SIMPO, chosen, rejected, gamma=-0.5)
    expect.raises_value_error(say("gamma is NaN", "gamma 为 NaN"), SIMPO, chosen, rejected, gamma=float("nan"))
    orpo_bad = [
        (say("a log-prob of 0 (infinite odds)", "对数概率为 0（几率无穷大）"), (zero, rejected, nll)),
        (say("a chosen_nll of shape (B,)", "`chosen_nll` 的形状为 (B,)"), (chosen, rejected, -chosen)),
        (say("a negative chosen_nll", "`chosen_nll` 为负"), (chosen, rejected, torch.tensor(-0.1))),
        (say("an infinite chosen_nll", "`chosen_nll` 为无穷大"), (chosen, rejected, torch.tensor(float("inf")))),
    ]
    for why, args in orpo_bad:
        expect.raises_value_error(why, ORPO, *args)
