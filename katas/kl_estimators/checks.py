"""Checks for k1_kl, k2_kl, k3_kl (TODOs 1-3) and masked_mean (TODO 4).

Fixtures: seeded random log-probs with log ratios on both sides of 0; a grid of log ratios out to
+/-50; 200,000 tokens drawn (seeded) from a 5-way categorical policy p, scored under a nearby and
a distant reference q, so the estimators' sample means can be held against the exact KL(p || q)
within 5 standard errors; ragged masks whose rows have different lengths.
"""

import math

import pytest
import torch

from grader.content import seeds
from grader.content.i18n import say
from grader.judging.expect import values_text

SAMPLES = 200_000
Z = 5.0  # tolerance of the Monte-Carlo checks, in standard errors of the sample mean
P = torch.tensor([0.4, 0.25, 0.2, 0.1, 0.05], dtype=torch.float64)  # the policy
Q = {
    "near": torch.tensor([0.35, 0.25, 0.2, 0.12, 0.08], dtype=torch.float64),
    "far": torch.tensor([0.1, 0.15, 0.2, 0.25, 0.3], dtype=torch.float64),
}
Q_ZH = {"near": "较近的 q", "far": "较远的 q"}  # the references' names in Chinese messages


def random_log_probs(seed: int, shape=(4, 6), dtype=torch.float32):
    """Seeded (new_logp, ref_logp): negative log-probs, log ratios of either sign up to ~2."""
    generator = seeds.generator(seed)
    new = -torch.rand(shape, generator=generator, dtype=torch.float64) * 3 - 0.05
    ref = new + 0.7 * torch.randn(shape, generator=generator, dtype=torch.float64)
    return new.to(dtype), ref.to(dtype)


def policy_samples(q_name: str, seed: int = 0):
    """SAMPLES tokens drawn from P: their log-probs under P (new) and under Q[q_name] (ref)."""
    generator = seeds.generator(seed)
    tokens = torch.multinomial(P, SAMPLES, replacement=True, generator=generator)
    return P.log()[tokens], Q[q_name].log()[tokens]


def exact_kl(q_name: str) -> float:
    """KL(P || Q) summed over the 5 outcomes."""
    return float((P * (P / Q[q_name]).log()).sum())


def mean_and_standard_error(values: torch.Tensor) -> tuple[float, float]:
    values = values.detach().double().reshape(-1)
    return values.mean().item(), values.std().item() / math.sqrt(values.numel())


def seeded_weights(shape, seed: int):
    """A cotangent: the per-token output is backpropagated as sum(output * weights), so every position counts."""
    return torch.rand(shape, generator=seeds.generator(seed), dtype=torch.float64) + 0.5


def assert_unbiased(expect, name: str, q_name: str) -> None:
    new, ref = policy_samples(q_name)
    mean, se = mean_and_standard_error(expect.shaped_like_reference(name, new, ref))
    kl = exact_kl(q_name)
    if not abs(mean - kl) <= Z * se:
        raise AssertionError(
            say(
                f"{name} over {SAMPLES} tokens drawn from p, reference q {q_name}: mean {mean:.5f}, "
                f"but KL(p || q) = {kl:.5f}. The gap {abs(mean - kl):.5f} exceeds {Z:.0f} standard errors "
                f"({Z * se:.5f}); an unbiased estimator lands inside that band.",
                f"{name} 在从 p 抽取的 {SAMPLES} 个 token 上、参考分布为{Q_ZH[q_name]}：均值为 {mean:.5f}，"
                f"但 KL(p || q) = {kl:.5f}。差距 {abs(mean - kl):.5f} 超过了 {Z:.0f} 个标准误"
                f"（{Z * se:.5f}）；无偏估计量会落在这个范围内。",
            )
        )


def ragged_batch(seed: int, rows: int = 4, length: int = 6, dtype=torch.float32):
    """Seeded values and a bool mask whose rows keep different numbers of leading positions."""
    generator = seeds.generator(seed)
    values = torch.randn(rows, length, generator=generator, dtype=torch.float64).to(dtype) * 2 + 1
    lengths = torch.tensor([length, 2, 1, 4][:rows])
    mask = torch.arange(length) < lengths.unsqueeze(-1)  # (rows, length) bool
    return values, mask


# -- TODO 1: k1 ----------------------------------------------------------------------------------


@pytest.mark.todo(1)
@pytest.mark.parametrize("seed", [0, 1])
def test_k1_matches_reference(expect, seed):
    """k1 matches the reference on seeded log-probs, 2-D and 3-D

    zh: 在随机的二维与三维对数概率上，k1 与参考答案一致
    """
    expect.matches_reference("k1_kl", *random_log_probs(seed))
    expect.matches_reference("k1_kl", *random_log_probs(seed + 10, shape=(2, 3, 5), dtype=torch.float64))


@pytest.mark.todo(1)
def test_k1_is_negative_where_the_reference_prefers_the_token(expect):
    """k1 = new - ref is negative on tokens the reference likes more than the policy

    zh: 在参考策略比当前策略更偏好的 token 上，k1 = new - ref 为负
    """
    new = torch.tensor([-2.0, -1.5, -0.7, -3.0])
    ref = torch.tensor([-1.0, -0.5, -0.6, -0.1])
    values = expect.shaped_like_reference("k1_kl", new, ref)
    if not bool((values < 0).all()):
        call = f"k1_kl(new_logp={[round(v, 2) for v in new.tolist()]}, ref_logp={[round(v, 2) for v in ref.tolist()]})"
        got = [round(v, 4) for v in values.tolist()]
        raise AssertionError(
            say(
                f"{call} = {got}; every token here is more likely under the reference, "
                "so k1 = new_logp - ref_logp must be negative on each: one sample of k1 can be below 0",
                f"{call} = {got}；这里每个 token 在参考策略下都更可能出现，"
                "所以 k1 = new_logp - ref_logp 在每个 token 上都必须为负：k1 的单个样本可以小于 0",
            )
        )


@pytest.mark.todo(1)
@pytest.mark.parametrize("q_name", ["near", "far"])
def test_k1_mean_is_the_kl(expect, q_name):
    """k1 is unbiased: its mean over policy samples is KL(p || q) within 5 standard errors

    zh: k1 无偏：在策略样本上的均值与 KL(p || q) 相差不超过 5 个标准误
    """
    assert_unbiased(expect, "k1_kl", q_name)


@pytest.mark.todo(1)
def test_k1_gradients_match_reference(expect):
    """Gradients of k1 with respect to both log-probs match the reference

    zh: k1 对两个对数概率的梯度与参考答案一致
    """
    new, ref = random_log_probs(2, dtype=torch.float64)
    expect.gradients_match_reference(
        "k1_kl", new, ref, wrt=("new_logp", "ref_logp"), cotangent=seeded_weights(new.shape, 3)
    )


# -- TODO 2: k2 ----------------------------------------------------------------------------------


@pytest.mark.todo(2)
@pytest.mark.parametrize("seed", [4, 5])
def test_k2_matches_reference(expect, seed):
    """k2 matches the reference on seeded log-probs, 2-D and 3-D

    zh: 在随机的二维与三维对数概率上，k2 与参考答案一致
    """
    expect.matches_reference("k2_kl", *random_log_probs(seed))
    expect.matches_reference("k2_kl", *random_log_probs(seed + 10, shape=(3, 2, 4), dtype=torch.float64))


@pytest.mark.todo(2)
def test_k2_is_half_the_squared_log_ratio(expect):
    """k2 is d**2 / 2: a log ratio of 2 gives 2, of 1 gives 0.5, and both signs agree

    zh: k2 是 d**2 / 2：对数比率为 2 时得 2，为 1 时得 0.5，正负号结果相同
    """
    new = torch.tensor([-1.0, -3.0, -1.0, -2.0, -0.5], dtype=torch.float64)
    ref = torch.tensor([-3.0, -1.0, -2.0, -1.0, -0.5], dtype=torch.float64)
    values = expect.shaped_like_reference("k2_kl", new, ref)
    want = [2.0, 2.0, 0.5, 0.5, 0.0]
    if any(abs(have - target) > 1e-12 for have, target in zip(values.tolist(), want)):
        got = [round(v, 4) for v in values.tolist()]
        raise AssertionError(
            say(
                f"k2_kl for log ratios d = ref - new = [-2, 2, -1, 1, 0] gave {got}, "
                f"expected {want}: k2 = d**2 / 2, never negative, the same for d and -d",
                f"对数比率 d = ref - new = [-2, 2, -1, 1, 0] 时 k2_kl 给出 {got}，"
                f"应为 {want}：k2 = d**2 / 2，从不为负，d 与 -d 的结果相同",
            )
        )


@pytest.mark.todo(2)
def test_k2_is_biased_for_a_distant_reference(expect):
    """k2's mean is E_p[d**2 / 2], which misses KL(p || q) by far more than 5 standard errors

    zh: k2 的均值是 E_p[d**2 / 2]，与 KL(p || q) 的差距远超 5 个标准误
    """
    new, ref = policy_samples("far")
    mean, se = mean_and_standard_error(expect.shaped_like_reference("k2_kl", new, ref))
    kl = exact_kl("far")
    target = float((P * (Q["far"] / P).log().square() / 2).sum())
    if not abs(mean - target) <= Z * se:
        raise AssertionError(
            say(
                f"k2_kl over {SAMPLES} tokens drawn from p, reference q far: mean {mean:.5f}; "
                f"k2 = d**2 / 2 averages to E_p[d**2 / 2] = {target:.5f} (within {Z * se:.5f})",
                f"k2_kl 在从 p 抽取的 {SAMPLES} 个 token 上、参考分布为较远的 q：均值为 {mean:.5f}；"
                f"k2 = d**2 / 2 的均值应为 E_p[d**2 / 2] = {target:.5f}（误差在 {Z * se:.5f} 以内）",
            )
        )
    if abs(mean - kl) <= Z * se:
        raise AssertionError(
            say(
                f"k2_kl: mean {mean:.5f} is within {Z * se:.5f} of KL(p || q) = {kl:.5f}; "
                "for this distant q k2 should be visibly biased",
                f"k2_kl：均值 {mean:.5f} 与 KL(p || q) = {kl:.5f} 相差不到 {Z * se:.5f}；"
                "对这个较远的 q，k2 应当有明显的偏差",
            )
        )


@pytest.mark.todo(2)
def test_k2_gradients_match_reference(expect):
    """Gradients of k2 with respect to both log-probs match the reference

    zh: k2 对两个对数概率的梯度与参考答案一致
    """
    new, ref = random_log_probs(6, dtype=torch.float64)
    expect.gradients_match_reference(
        "k2_kl", new, ref, wrt=("new_logp", "ref_logp"), cotangent=seeded_weights(new.shape, 7)
    )


# -- TODO 3: k3 ----------------------------------------------------------------------------------

LOG_RATIOS = [-50.0, -20.0, -5.0, -1.0, -0.1, -0.01, 0.0, 0.01, 0.1, 1.0, 5.0, 20.0, 50.0]


@pytest.mark.todo(3)
@pytest.mark.parametrize("seed", [8, 9])
def test_k3_matches_reference(expect, seed):
    """k3 matches the reference on seeded log-probs, 2-D and 3-D

    zh: 在随机的二维与三维对数概率上，k3 与参考答案一致
    """
    expect.matches_reference("k3_kl", *random_log_probs(seed))
    expect.matches_reference("k3_kl", *random_log_probs(seed + 10, shape=(2, 2, 6), dtype=torch.float64))


@pytest.mark.todo(3)
def test_k3_is_exactly_zero_where_the_policies_agree(expect):
    """Where ref_logp equals new_logp, k3 is exactly 0

    zh: 当 `ref_logp` 等于 `new_logp` 时，k3 恰好为 0
    """
    new, _ = random_log_probs(11)
    values = expect.shaped_like_reference("k3_kl", new, new.clone())
    if not bool((values == 0).all()):
        worst = values.abs().max().item()
        raise AssertionError(
            say(
                f"k3_kl(new_logp, ref_logp=new_logp) should be exactly 0 everywhere (d = 0: exp(0) - 0 - 1), "
                f"but reaches {worst:.4g}",
                f"k3_kl(new_logp, ref_logp=new_logp) 应处处恰好为 0（d = 0：exp(0) - 0 - 1），"
                f"但绝对值最大达到 {worst:.4g}",
            )
        )


@pytest.mark.todo(3)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
def test_k3_is_never_negative_even_for_large_log_ratios(expect, dtype):
    """k3 >= 0 for log ratios from -50 to 50, 0 only at d = 0, and its values vs the reference there

    zh: 对数比率在 -50 到 50 之间时 k3 >= 0，且只在 d = 0 处为 0；并与参考答案比较这些值
    """
    d = torch.tensor(LOG_RATIOS, dtype=torch.float64)
    new = torch.full_like(d, -60.0)
    new, ref = new.to(dtype), (new + d).to(dtype)
    values = expect.shaped_like_reference("k3_kl", new, ref)
    bad = [(ratio, have) for ratio, have in zip(LOG_RATIOS, values.tolist()) if have < 0 or (have == 0) != (ratio == 0)]
    if bad:
        listed = ", ".join(f"d={ratio:g}: {have:.6g}" for ratio, have in bad)
        raise AssertionError(
            say(
                f"k3_kl must be > 0 wherever d = ref_logp - new_logp != 0 and 0 at d = 0, but got {listed}",
                f"k3_kl 在 d = ref_logp - new_logp != 0 处必须 > 0，在 d = 0 处必须为 0，但得到 {listed}",
            )
        )
    expect.matches_reference("k3_kl", new, ref)


@pytest.mark.todo(3)
@pytest.mark.parametrize("q_name", ["near", "far"])
def test_k3_mean_is_the_kl(expect, q_name):
    """k3 is unbiased: its mean over policy samples is KL(p || q) within 5 standard errors

    zh: k3 无偏：在策略样本上的均值与 KL(p || q) 相差不超过 5 个标准误
    """
    assert_unbiased(expect, "k3_kl", q_name)


@pytest.mark.todo(3)
def test_k3_varies_less_than_k1_for_a_nearby_reference(expect):
    """For a nearby reference, k3's spread across samples is a fraction of k1's

    zh: 参考策略较接近时，k3 在样本间的波动只有 k1 的一小部分
    """
    new, ref = policy_samples("near")
    k3_std = expect.shaped_like_reference("k3_kl", new, ref).detach().std().item()
    k1_std = expect.reference_call("k1_kl", new, ref).std().item()
    if not k3_std < 0.5 * k1_std:
        raise AssertionError(
            say(
                f"k3_kl over {SAMPLES} samples, reference q near: std {k3_std:.4f}, k1's is {k1_std:.4f}; "
                "k3 = k1 + (r - 1) should cancel most of k1's noise (std below half of k1's)",
                f"k3_kl 在 {SAMPLES} 个样本上、参考分布为较近的 q：标准差为 {k3_std:.4f}，k1 的为 {k1_std:.4f}；"
                "k3 = k1 + (r - 1) 应抵消 k1 的大部分噪声（标准差低于 k1 的一半）",
            )
        )


@pytest.mark.todo(3)
def test_k3_gradients_match_reference(expect):
    """Gradients of k3 with respect to both log-probs match the reference

    zh: k3 对两个对数概率的梯度与参考答案一致
    """
    new, ref = random_log_probs(12, dtype=torch.float64)
    expect.gradients_match_reference(
        "k3_kl", new, ref, wrt=("new_logp", "ref_logp"), cotangent=seeded_weights(new.shape, 13)
    )


@pytest.mark.todo(3)
def test_k3_dtype_follows_inputs(expect):
    """Dtypes only: float64 inputs give float64, bfloat16 inputs give bfloat16

    zh: 只比较 dtype：float64 输入得到 float64，bfloat16 输入得到 bfloat16
    """
    expect.shaped_like_reference("k3_kl", *random_log_probs(14, dtype=torch.float64))
    expect.shaped_like_reference("k3_kl", *random_log_probs(15, dtype=torch.bfloat16))


# -- TODO 4: masked_mean -------------------------------------------------------------------------


@pytest.mark.todo(4)
@pytest.mark.parametrize("seed", [20, 21])
def test_masked_mean_over_everything_matches_reference(expect, seed):
    """With dim=None, the mean over every selected element matches the reference

    zh: dim=None 时，对所有被选中元素的均值与参考答案一致
    """
    expect.matches_reference("masked_mean", *ragged_batch(seed))


@pytest.mark.todo(4)
def test_masked_mean_along_a_dim_matches_reference(expect):
    """With a dim, each slice is averaged over its own selected elements (dim=-1, 0, 1 of 3-D)

    zh: 指定 dim 时，每个切片只在自身被选中的元素上求均值（dim=-1、0，以及三维的 1）
    """
    values, mask = ragged_batch(22)
    expect.matches_reference("masked_mean", values, mask, dim=-1)
    expect.matches_reference("masked_mean", values, mask, dim=0)
    cube = torch.stack([values, values.flip(0) * 0.5 - 1])  # (2, 4, 6)
    expect.matches_reference("masked_mean", cube, torch.stack([mask, mask.flip(0)]), dim=1)


@pytest.mark.todo(4)
def test_global_mean_weighs_every_token_the_same(expect):
    """dim=None is a token mean: rows [1, 1, 1] and [5] give (1 + 1 + 1 + 5) / 4 = 2

    zh: dim=None 是 token 均值：行 [1, 1, 1] 与 [5] 得到 (1 + 1 + 1 + 5) / 4 = 2
    """
    values = torch.tensor([[1.0, 1.0, 1.0], [5.0, 0.3, -7.0]])
    mask = torch.tensor([[True, True, True], [True, False, False]])
    got = expect.shaped_like_reference("masked_mean", values, mask).item()
    if not abs(got - 2.0) <= 1e-6:  # NaN fails too
        raise AssertionError(
            say(
                f"masked_mean(values, mask) = {got:.4g} for selected rows [1, 1, 1] and [5]: "
                "with dim=None every selected element weighs the same, (1 + 1 + 1 + 5) / 4 = 2 "
                "(the mean of the row means would be 3, the mean over all 6 positions 1/3)",
                f"选中的行为 [1, 1, 1] 和 [5] 时 masked_mean(values, mask) = {got:.4g}："
                "dim=None 时每个选中的元素权重相同，(1 + 1 + 1 + 5) / 4 = 2"
                "（各行均值的均值会是 3，对全部 6 个位置求均值会是 1/3）",
            )
        )
    rows = expect.matches_reference("masked_mean", values, mask, dim=-1)
    if rows.tolist() != [1.0, 5.0]:
        raise AssertionError(
            say(
                f"masked_mean(values, mask, dim=-1) = {rows.tolist()}, expected [1.0, 5.0]",
                f"masked_mean(values, mask, dim=-1) = {rows.tolist()}，应为 [1.0, 5.0]",
            )
        )


@pytest.mark.todo(4)
@pytest.mark.parametrize("dim", [None, -1], ids=["dim=None", "dim=-1"])
def test_masked_positions_change_nothing(expect, dim):
    """Self-consistency: inf or NaN in unselected positions (padding) leaves your mean as it was

    zh: 自洽：未被选中的填充（padding）位置是 inf 或 NaN 时，你的均值保持不变
    """
    values, mask = ragged_batch(23)
    before = expect.shaped_like_reference("masked_mean", values, mask, dim=dim)
    if not bool(before.isfinite().all()):  # NaN would equal NaN below
        raise AssertionError(
            say(
                f"masked_mean(values, mask, dim={dim}) returned non-finite values: {values_text(before)}",
                f"masked_mean(values, mask, dim={dim}) 返回了非有限值：{values_text(before)}",
            )
        )
    junk = torch.tensor([float("inf"), float("-inf"), float("nan"), 1e6]).repeat(values.numel() // 4 + 1)
    padded = torch.where(mask, values, junk[: values.numel()].reshape(values.shape))
    after = expect.call("masked_mean", padded, mask, dim=dim)
    expect.same(
        after,
        before,
        say(
            f"masked_mean(values, mask, dim={dim}) after filling the unselected positions with inf/NaN",
            f"masked_mean(values, mask, dim={dim})，把未选中的位置填成 inf/NaN 之后",
        ),
    )


@pytest.mark.todo(4)
def test_a_mean_over_nothing_is_nan_when_asked(expect):
    """With empty="nan", a slice that selects nothing gives NaN (0 / 0); the other slices keep their means

    zh: `empty="nan"` 时，什么也没选中的切片得到 NaN（0 / 0）；其余切片的均值不变
    """
    values, mask = ragged_batch(27)
    mask[1] = False  # row 1 selects nothing
    rows = expect.matches_reference("masked_mean", values, mask, dim=-1, empty="nan")
    overall = expect.shaped_like_reference("masked_mean", values, torch.zeros_like(mask), empty="nan")
    cases = (("dim=-1", "row 1", "第 1 行", rows[1].item()), ("dim=None", "the mask", "掩码", overall.item()))
    for dim, where, where_zh, got in cases:
        if not math.isnan(got):
            raise AssertionError(
                say(
                    f'`masked_mean(values, mask, {dim}, empty="nan")` = {got:.4g} where {where} selects nothing: '
                    "a mean over nothing is 0 / 0 = NaN here, not a silent number (sum / count, count unclamped)",
                    f'{where_zh}什么也没选中时，`masked_mean(values, mask, {dim}, empty="nan")` = {got:.4g}：'
                    "这里对空选择求均值是 0 / 0 = NaN，而不是悄悄给出一个数（和 / 个数，个数不做截断）",
                )
            )


@pytest.mark.todo(4)
def test_masked_mean_gradients_match_reference(expect):
    """Each selected element gets 1 / (its slice's count) of the gradient; unselected ones get 0

    zh: 每个被选中的元素获得 1 /（所在切片的计数）的梯度；未被选中的元素为 0
    """
    values, mask = ragged_batch(24, dtype=torch.float64)
    expect.gradients_match_reference("masked_mean", values, mask, wrt=("values",))
    expect.gradients_match_reference(
        "masked_mean", values, mask, dim=-1, wrt=("values",), cotangent=seeded_weights((4,), 25)
    )


@pytest.mark.todo(4)
@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16], ids=["float64", "bfloat16"])
def test_masked_mean_dtype_follows_values(expect, dtype):
    """Dtypes only: the mean has the dtype of values (float64, bfloat16)

    zh: 只比较 dtype：均值的 dtype 与 values 相同（float64、bfloat16）
    """
    values, mask = ragged_batch(26, dtype=dtype)
    expect.shaped_like_reference("masked_mean", values, mask)
    expect.shaped_like_reference("masked_mean", values, mask, dim=-1)


def test_rejects_inputs_outside_the_contract(expect):
    """Accepts valid input; rejects mismatched shapes, non-finite log-probs, bad masks and an unknown `empty`

    zh: 接受合法输入；对形状不匹配、非有限对数概率、非法掩码和未知的 `empty` 抛出 ValueError
    """
    new, ref = random_log_probs(30)
    for name in ("k1_kl", "k2_kl", "k3_kl"):
        expect.call(name, new, ref)
    values, mask = ragged_batch(31)
    expect.call("masked_mean", values, mask)
    expect.call("masked_mean", values, mask, dim=-1)
    expect.call("masked_mean", values, torch.zeros_like(mask), empty="nan")
    with_nan, with_inf = new.clone(), ref.clone()
    with_nan[1, 2] = float("nan")
    with_inf[0, 0] = float("-inf")
    for name in ("k1_kl", "k2_kl", "k3_kl"):
        expect.raises_value_error(say("ref_logp has another shape", "`ref_logp` 的形状不同"), name, new, ref[:, :-1])
        expect.raises_value_error(say("a NaN log-prob", "对数概率中有 NaN"), name, with_nan, ref)
        expect.raises_value_error(say("an infinite reference log-prob", "参考对数概率中有无穷大"), name, new, with_inf)
        expect.raises_value_error(say("integer log-probs", "对数概率是整数"), name, new.long(), ref.long())
    empty_row = mask.clone()
    empty_row[2] = False
    bad = [
        (say("a float mask", "掩码是浮点数"), (values, mask.float()), {}),
        (say("a mask of another shape", "掩码的形状不同"), (values, mask[:, :-1]), {}),
        (say("a mask that selects nothing", "掩码什么也没选中"), (values, torch.zeros_like(mask)), {}),
        (
            say("a row with nothing selected, averaged along dim=-1", "沿 dim=-1 求均值时，有一行什么也没选中"),
            (values, empty_row),
            {"dim": -1},
        ),
        (say("integer values", "`values` 是整数"), (values.long(), mask), {}),
        (say('empty="zero"', 'empty="zero"'), (values, mask), {"empty": "zero"}),
    ]
    for why, args, kwargs in bad:
        expect.raises_value_error(why, "masked_mean", *args, **kwargs)
