"""Checks for kto_loss (TODOs 1-3).

Fixtures: the lesson's four-example batch (two desirable, two undesirable, z_0 = 0.3375), seeded
random batches whose log-ratios spread over a few nats on both sides of z_0, with KL batches of
either sign, and hand-built examples for the mechanisms.

Each TODO's checks use inputs or outputs where the other TODOs' mistakes cannot matter: TODO 1
looks only at the returned reference point; TODO 2 scores single examples (no batch mean, no
weights) against the reference point the function itself returned; TODO 3 uses log-probs that are
all 0, where every example's loss is the same number whatever the reference point and the loss
formula, so only the weights and the mean can change the result. Whole-function comparisons are
marked whole.
"""

import math

import pytest
import torch

from grader.content import seeds
from grader.content.i18n import say

FN = "kto_loss"
ARGS = ("policy_logps", "ref_logps", "desirable", "policy_kl_logps", "ref_kl_logps")
LOG_PROBS = ("policy_logps", "ref_logps", "policy_kl_logps", "ref_kl_logps")
LOSS = 0  # the index of the loss in the returned (loss, kl)
KL = 1


def lesson_batch():
    """The lesson's batch: (policy, reference, desirable, policy on the KL pairs, reference on them)."""
    return (
        torch.tensor([-14.20, -22.85, -9.60, -31.40]),
        torch.tensor([-15.05, -21.90, -9.95, -29.80]),
        torch.tensor([True, False, True, False]),
        torch.tensor([-41.30, -37.75, -45.10, -39.20]),
        torch.tensor([-41.90, -37.45, -45.80, -39.55]),
    )


def random_batch(seed: int, batch: int = 8, kl_batch: int = 6, kl_shift: float = 0.5, dtype=torch.float32):
    """Seeded log-probs: log-ratios 3 * N(0, 1), both labels present, KL log-ratios kl_shift + N(0, 1)."""
    generator = seeds.generator(seed)
    draw = lambda size: torch.randn(size, generator=generator, dtype=torch.float64)  # noqa: E731
    ref = -(draw(batch).abs() * 20 + 5)
    policy = ref + 3 * draw(batch)
    desirable = torch.rand(batch, generator=generator) < 0.5
    desirable[0], desirable[1] = True, False
    ref_kl = -(draw(kl_batch).abs() * 20 + 5)
    policy_kl = ref_kl + kl_shift + draw(kl_batch)
    cast = (t.to(dtype) for t in (policy, ref, policy_kl, ref_kl))
    policy, ref, policy_kl, ref_kl = cast
    return policy, ref, desirable, policy_kl, ref_kl


def zero_batch(desirable: list[bool]):
    """Every log-prob 0: each example's log-ratio and the reference point are 0, so every example's
    loss is the same number, however the reference point and the loss are computed."""
    zeros = torch.zeros(len(desirable))
    return zeros, zeros.clone(), torch.tensor(desirable), zeros.clone(), zeros.clone()


def reference_point(expect, *batch, **options) -> float:
    """The reference point the learner's kto_loss returns for `batch`, as a float."""
    kl = expect.call(FN, *batch, **options)[KL]
    if not (isinstance(kl, torch.Tensor) and kl.numel() == 1):
        raise AssertionError(
            say(
                f"{FN}(...) returned the reference point {kl!r}; expected a scalar tensor",
                f"`{FN}(...)` 返回的参考点为 {kl!r}；应为标量张量",
            )
        )
    return kl.double().item()


# -- whole function --------------------------------------------------------------------------------


@pytest.mark.whole
def test_matches_the_lesson_batch(expect):
    """The lesson's batch: the loss equals the reference's, 0.4766 at beta = 0.1, and z_0 = 0.3375

    zh: 讲义的批次：损失与参考答案相同，beta = 0.1 时为 0.4766，z_0 = 0.3375
    """
    loss, kl = expect.matches_reference(FN, *lesson_batch(), beta=0.1)
    loss, kl = loss.item(), kl.item()
    if not (abs(loss - 0.476612) <= 1e-5 and abs(kl - 0.3375) <= 1e-5):  # NaN fails too
        raise AssertionError(
            say(
                f"{FN}(lesson batch, beta=0.1) = ({loss:.6f}, {kl:.6f}), expected (0.476612, 0.3375)",
                f"讲义批次上 `{FN}(..., beta=0.1)` = ({loss:.6f}, {kl:.6f})，应为 (0.476612, 0.3375)",
            )
        )


@pytest.mark.whole
@pytest.mark.parametrize(
    ("seed", "beta", "weights"), [(0, 0.1, (1.0, 1.0)), (1, 0.5, (1.0, 1.33)), (2, 1.0, (0.75, 1.0))]
)
def test_loss_and_gradients_match_reference(expect, seed, beta, weights):
    """The loss, z_0 and the gradients for every log-prob match the reference on random batches

    zh: 在随机批次上，损失、z_0 以及对每个对数概率的梯度都与参考答案一致
    """
    batch = random_batch(seed)
    options = {"beta": beta, "desirable_weight": weights[0], "undesirable_weight": weights[1]}
    expect.matches_reference(FN, *batch, **options)
    expect.gradients_match_reference(FN, *batch, wrt=LOG_PROBS, pick=LOSS, **options)


@pytest.mark.whole
def test_all_desirable_and_all_undesirable_batches_match_reference(expect):
    """A batch of one label only (KTO needs no pairs) matches the reference, in float64

    zh: 只含一种标签的批次（KTO 不需要成对数据）与参考答案一致，使用 float64
    """
    policy, ref, _, policy_kl, ref_kl = random_batch(3, dtype=torch.float64)
    for label in (True, False):
        desirable = torch.full(policy.shape, label)
        expect.matches_reference(FN, policy, ref, desirable, policy_kl, ref_kl, beta=0.5)


# -- TODO 1: the reference point -------------------------------------------------------------------


@pytest.mark.todo(1)
@pytest.mark.parametrize(("seed", "kl_shift"), [(4, 0.5), (5, 2.0)])
def test_reference_point_matches_reference(expect, seed, kl_shift):
    """The returned reference point z_0 equals the reference's on random KL batches

    zh: 在随机 KL 批次上，返回的参考点 z_0 与参考答案相同
    """
    batch = random_batch(seed, kl_shift=kl_shift)
    where = say(f"{FN}(random batch {seed}): the reference point z_0", f"随机批次 {seed} 上 `{FN}(...)` 的参考点 z_0")
    expect.same(expect.call(FN, *batch)[KL], expect.reference_call(FN, *batch)[KL], where)


@pytest.mark.todo(1)
def test_reference_point_is_clamped_at_0(expect):
    """A KL batch where the policy sits below the reference gives z_0 = 0, not a negative value

    zh: KL 批次上策略的对数概率低于参考模型时，z_0 = 0，而不是负值
    """
    policy, ref, desirable, _, ref_kl = random_batch(6)
    policy_kl = ref_kl - torch.tensor([0.5, 1.5, 0.25, 1.0, 2.0, 0.75])  # mean log-ratio -1.0
    kl = reference_point(expect, policy, ref, desirable, policy_kl, ref_kl)
    if not kl == 0.0:  # NaN fails too
        raise AssertionError(
            say(
                f"{FN}(KL pairs with mean log-ratio -1.0): z_0 = {kl:.4f}; an estimate of a KL below 0 counts as 0",
                f"KL 对的平均对数比率为 -1.0 时 `{FN}(...)` 的 z_0 = {kl:.4f}；低于 0 的 KL 估计按 0 计",
            )
        )


@pytest.mark.todo(1)
def test_reference_point_is_a_constant(expect):
    """z_0 carries no graph, and no gradient of the loss reaches the KL log-probs through it

    zh: z_0 不带计算图，损失的梯度也不会经由它传到 KL 对数概率
    """
    policy, ref, desirable, policy_kl, ref_kl = random_batch(7, kl_shift=1.0)
    kl = expect.call(FN, policy, ref, desirable, policy_kl.requires_grad_(), ref_kl.requires_grad_())[KL]
    if not isinstance(kl, torch.Tensor) or kl.requires_grad or kl.grad_fn is not None:
        raise AssertionError(
            say(
                f"{FN}(random batch, KL log-probs requiring grad): z_0 is still attached to the graph;"
                " the reference point is a constant",
                f"KL 对数概率 `requires_grad` 时 `{FN}(...)` 的 z_0 仍连在计算图上；参考点是常数",
            )
        )
    expect.gradients_match_reference(FN, policy, ref, desirable, policy_kl, ref_kl, wrt=LOG_PROBS[2:], pick=LOSS)


@pytest.mark.todo(1)
def test_reference_point_comes_from_the_kl_pairs_only(expect):
    """z_0 depends on the mismatched pairs only: moving the examples' log-probs leaves it unchanged

    zh: z_0 只取决于错配对：改变样本自己的对数概率，它保持不变
    """
    policy, ref, desirable, policy_kl, ref_kl = random_batch(8, kl_shift=1.0)
    before = reference_point(expect, policy, ref, desirable, policy_kl, ref_kl)
    after = reference_point(expect, policy + 4.0, ref, desirable, policy_kl, ref_kl)
    expected = max(0.0, (policy_kl.double() - ref_kl.double()).mean().item())
    if not (abs(before - expected) <= 1e-5 and abs(after - expected) <= 1e-5):  # NaN fails too
        raise AssertionError(
            say(
                f"{FN}(random batch): z_0 = {before:.5f}, and {after:.5f} with every policy_logps 4 higher;"
                f" both should be {expected:.5f}, the mean log-ratio of the KL pairs",
                f"随机批次上 `{FN}(...)` 的 z_0 = {before:.5f}，把每个 `policy_logps` 加 4 后为 {after:.5f}；"
                f"两者都应为 {expected:.5f}，即 KL 对的平均对数比率",
            )
        )


@pytest.mark.todo(1)
def test_reference_point_is_a_mean_over_the_kl_batch(expect):
    """Repeating the KL batch leaves z_0 unchanged: it is a mean, not a sum

    zh: 把 KL 批次重复一遍，z_0 不变：它是均值，不是总和
    """
    policy, ref, desirable, policy_kl, ref_kl = random_batch(9, kl_shift=1.0)
    once = reference_point(expect, policy, ref, desirable, policy_kl, ref_kl)
    twice = reference_point(expect, policy, ref, desirable, torch.cat([policy_kl] * 2), torch.cat([ref_kl] * 2))
    if not abs(twice - once) <= 1e-5 * max(1.0, abs(once)):  # NaN fails too
        raise AssertionError(
            say(
                f"{FN}(random batch): z_0 = {once:.5f} for the KL batch but {twice:.5f} for it repeated twice;"
                " an estimate of the KL does not grow with the batch",
                f"随机批次上 `{FN}(...)`：该 KL 批次的 z_0 = {once:.5f}，重复一遍后却为 {twice:.5f}；"
                "KL 的估计不随批次大小增长",
            )
        )


# -- TODO 2: each example's loss -------------------------------------------------------------------


def single_examples(seed: int, label: bool):
    """Each example of a random batch alone, labelled `label`, with the batch's KL pairs (z_0 > 0)."""
    policy, ref, _, policy_kl, ref_kl = random_batch(seed, kl_shift=1.5)
    for index in range(policy.shape[0]):
        yield index, (policy[index : index + 1], ref[index : index + 1], torch.tensor([label]), policy_kl, ref_kl)


def _check_single_losses(expect, examples, beta: float, why: str = "") -> None:
    """Each (index, example) alone: its loss is 1 - sigmoid(beta * s * (r - z_0)), s = +1 for a
    desirable example and -1 for an undesirable one, z_0 being the reference point the function
    returned (so that TODO 1's mistakes cannot matter). `why` ends the message."""
    for index, example in examples:
        label = bool(example[2].item())
        sign, name = (1.0, say("desirable", "可取")) if label else (-1.0, say("undesirable", "不可取"))
        loss = expect.shaped_like_reference(FN, *example, beta=beta)[LOSS].item()
        kl = reference_point(expect, *example, beta=beta)
        logratio = (example[0].double() - example[1].double()).item()
        argument = torch.tensor(beta * sign * (logratio - kl), dtype=torch.float64)  # overflows no float
        expected = 1.0 - torch.sigmoid(argument).item()
        if not abs(loss - expected) <= 1e-5:  # NaN fails too
            raise AssertionError(
                say(
                    f"{FN}(one {name} example {index}, r = {logratio:.4f}, beta={beta}): loss {loss:.6g};"
                    f" with the z_0 = {kl:.4f} it returned, the loss should be {expected:.6f}{why}",
                    f"单个{name}样本 {index}（r = {logratio:.4f}，beta={beta}）上的 `{FN}(...)`：损失为 {loss:.6g}；"
                    f"按它返回的 z_0 = {kl:.4f}，损失应为 {expected:.6f}{why}",
                )
            )


@pytest.mark.todo(2)
@pytest.mark.parametrize(("seed", "beta"), [(10, 0.1), (11, 0.5)])
def test_a_desirable_example_is_scored_above_the_reference_point(expect, seed, beta):
    """One desirable example: its loss is 1 - sigmoid(beta * (r - z_0)), with the z_0 returned

    zh: 单个可取样本：损失为 1 - sigmoid(beta * (r - z_0))，z_0 用函数返回的值
    """
    _check_single_losses(expect, single_examples(seed, True), beta)


@pytest.mark.todo(2)
@pytest.mark.parametrize(("seed", "beta"), [(12, 0.1), (13, 0.5)])
def test_an_undesirable_example_is_scored_below_the_reference_point(expect, seed, beta):
    """One undesirable example: its loss is 1 - sigmoid(beta * (z_0 - r)), with the z_0 returned

    zh: 单个不可取样本：损失为 1 - sigmoid(beta * (z_0 - r))，z_0 用函数返回的值
    """
    _check_single_losses(expect, single_examples(seed, False), beta)


@pytest.mark.todo(2)
def test_reference_log_probs_receive_no_gradient(expect):
    """The reference model is frozen: no gradient reaches ref_logps, even when it requires grad

    zh: 参考模型是冻结的：即使 `ref_logps` 需要梯度，梯度也不会传到它
    """
    for _, example in single_examples(14, True):
        expect.gradients_match_reference(FN, *example, wrt=("ref_logps",), pick=LOSS)


@pytest.mark.todo(2)
def test_the_loss_is_bounded_far_from_the_reference_point(expect):
    """An example 1000 nats on the wrong side costs 1 (not 1000) at beta = 1, on the right side 0

    zh: beta = 1 时，偏离参考点 1000 奈特、站错一边的样本损失为 1（而不是 1000），站对一边的为 0
    """
    zero = torch.zeros(1)
    examples = [
        (index, (zero + shift, zero.clone(), torch.tensor([label]), zero.clone(), zero.clone()))
        for index, (label, shift) in enumerate(((True, -1000.0), (False, 1000.0), (True, 1000.0), (False, -1000.0)))
    ]
    why = say(
        "; 1 - sigmoid is bounded: far past the reference point an example stops pulling",
        "；1 - sigmoid 有界：远离参考点之后，样本就不再拉动策略",
    )
    _check_single_losses(expect, examples, 1.0, why)


# -- TODO 3: weights and the mean ------------------------------------------------------------------


def _unit_loss(expect, desirable: list[bool]) -> float:
    """The learner's loss on the all-zero batch with both weights 1: the one loss every example has."""
    unit = expect.shaped_like_reference(FN, *zero_batch(desirable))[LOSS].item()
    if not (math.isfinite(unit) and unit > 0):
        raise AssertionError(
            say(
                f"{FN}(every log-prob 0, both weights 1) = {unit:.4g}; expected 0.5, 1 - sigmoid(0)",
                f"所有对数概率为 0、两个权重都为 1 时 `{FN}(...)` = {unit:.4g}；应为 0.5，即 1 - sigmoid(0)",
            )
        )
    return unit


@pytest.mark.todo(3)
@pytest.mark.parametrize(("desirable_weight", "undesirable_weight"), [(2.0, 0.5), (1.0, 0.0), (0.0, 3.0)])
def test_each_example_is_weighted_by_its_label(expect, desirable_weight, undesirable_weight):
    """Three desirable, one undesirable, all log-probs 0: the loss is (the loss with weights 1) * mean(w)

    zh: 三个可取、一个不可取样本，所有对数概率为 0：损失等于（权重都为 1 时的损失）* mean(w)
    """
    labels = [True, False, True, True]
    unit = _unit_loss(expect, labels)
    options = {"desirable_weight": desirable_weight, "undesirable_weight": undesirable_weight}
    loss = expect.shaped_like_reference(FN, *zero_batch(labels), **options)[LOSS].item()
    mean_weight = (3 * desirable_weight + undesirable_weight) / 4
    if not abs(loss - unit * mean_weight) <= 1e-6:  # NaN fails too
        raise AssertionError(
            say(
                f"{FN}(three desirable and one undesirable example, every log-prob 0, desirable_weight="
                f"{desirable_weight}, undesirable_weight={undesirable_weight}): loss {loss:.6f}; every example's"
                f" loss is {unit:.6f} here, so the mean of the weighted losses is {unit * mean_weight:.6f}",
                f"三个可取、一个不可取样本且所有对数概率为 0 时 `{FN}(..., desirable_weight={desirable_weight},"
                f" undesirable_weight={undesirable_weight})`：损失为 {loss:.6f}；这里每个样本的损失都是 {unit:.6f}，"
                f"加权损失的均值应为 {unit * mean_weight:.6f}",
            )
        )


@pytest.mark.todo(3)
def test_the_loss_is_a_mean_over_examples(expect):
    """All log-probs 0: the loss does not change when the batch is repeated (a mean, not a sum)

    zh: 所有对数概率为 0：把批次重复一遍，损失不变（是均值，不是总和）
    """
    labels = [True, False, False]
    once = expect.shaped_like_reference(FN, *zero_batch(labels), desirable_weight=1.5)[LOSS].item()
    twice = expect.call(FN, *zero_batch(labels * 2), desirable_weight=1.5)[LOSS].item()
    if not abs(twice - once) <= 1e-6:  # NaN fails too
        raise AssertionError(
            say(
                f"{FN}(three examples, every log-prob 0): loss {once:.5f}, but {twice:.5f} for them repeated twice;"
                " a mean over examples does not depend on the batch size",
                f"三个样本、所有对数概率为 0 时 `{FN}(...)` 的损失为 {once:.5f}，重复一遍后却为 {twice:.5f}；"
                "按样本求均值，结果与批次大小无关",
            )
        )


@pytest.mark.todo(3)
def test_dtype_follows_inputs(expect):
    """float64 log-probs give a float64 loss and z_0 (dtype and shape compared, not values)

    zh: float64 对数概率得到 float64 的损失与 z_0（只比较 dtype 与形状，不比较数值）
    """
    expect.shaped_like_reference(FN, *random_batch(15, dtype=torch.float64), undesirable_weight=1.2)


def test_rejects_inputs_outside_the_contract(expect):
    """Accepts valid input; rejects bad shapes, empty or non-finite log-probs, a bad mask, beta, weights

    zh: 接受合法输入；对错误形状、空或非有限的对数概率、错误的掩码、非法 beta 与权重抛出 ValueError
    """
    policy, ref, desirable, policy_kl, ref_kl = lesson_batch()
    expect.call(FN, policy, ref, desirable, policy_kl, ref_kl, beta=0.1, undesirable_weight=0.0)  # valid
    expect.call(FN, policy, ref, desirable, policy_kl[:2], ref_kl[:2])  # a KL batch of another size is valid
    nan, inf = float("nan"), float("inf")
    with_nan, with_inf = policy.clone(), ref_kl.clone()
    with_nan[1] = nan
    with_inf[2] = -inf
    batch = (policy, ref, desirable, policy_kl, ref_kl)
    bad = [
        (say("shapes differ", "形状不一致"), (policy, ref[:-1], desirable, policy_kl, ref_kl), {}),
        (
            say("KL log-probs of two shapes", "两个 KL 对数概率形状不同"),
            (policy, ref, desirable, policy_kl, ref_kl[:-1]),
            {},
        ),
        (say("2-D log-probs", "对数概率是二维的"), (policy[None], ref[None], desirable[None], policy_kl, ref_kl), {}),
        (say("0-D log-probs", "对数概率是零维的"), (policy[0], ref[0], desirable[0], policy_kl, ref_kl), {}),
        (say("an empty batch", "批次为空"), (policy[:0], ref[:0], desirable[:0], policy_kl, ref_kl), {}),
        (say("an empty KL batch", "KL 批次为空"), (policy, ref, desirable, policy_kl[:0], ref_kl[:0]), {}),
        (say("a NaN policy log-prob", "策略对数概率中有 NaN"), (with_nan, ref, desirable, policy_kl, ref_kl), {}),
        (say("an infinite KL log-prob", "KL 对数概率中有无穷大"), (policy, ref, desirable, policy_kl, with_inf), {}),
        (say("a mask that is not bool", "掩码不是 bool"), (policy, ref, desirable.long(), policy_kl, ref_kl), {}),
        (say("a mask of another shape", "掩码形状不同"), (policy, ref, desirable[:-1], policy_kl, ref_kl), {}),
        ("beta = 0", batch, {"beta": 0.0}),
        ("beta < 0", batch, {"beta": -0.1}),
        (say("beta is NaN", "beta 为 NaN"), batch, {"beta": nan}),
        (say("beta is infinite", "beta 为无穷大"), batch, {"beta": inf}),
        (say("a negative weight", "权重为负"), batch, {"desirable_weight": -1.0}),
        (say("a NaN weight", "权重为 NaN"), batch, {"undesirable_weight": nan}),
    ]
    for why, args, kwargs in bad:
        expect.raises_value_error(why, FN, *args, **kwargs)
