"""Checks for compute_grpo_loss (TODOs 2-4) and, again, compute_group_advantages (TODO 1).

Fixtures: the lesson's five-candidate batch (three groups, one a singleton, ragged mask), seeded
random batches with ragged masks and log-probs spread wide enough that many ratios fall outside
the clip on both sides, and hand-built tokens for the clipping and weighting mechanisms.

Each TODO's checks fail only for that TODO's mistakes: TODO 2's and 4's use ratio 1, comparisons
of your own outputs and square batches (B == T, see `square`); TODO 3's use full masks, where
every aggregation is the token mean. Whole-function comparisons are marked `whole`.
"""

import pytest
import torch

from grader.content import seeds
from grader.content.i18n import say
from grader.judging.expect import assert_no_gradient
from katas.group_advantages.checks import (  # noqa: F401  (TODO 1 is graded here too)
    test_eps_is_a_floor_not_an_addend,
    test_groups_are_compared_only_within_themselves,
    test_matches_reference_on_random_groups,
    test_singleton_group_gets_zero_advantage,
)

FN = "compute_grpo_loss"
LOSS = 0  # the index of the loss in the returned (loss, advantages)


def lesson_batch():
    """The lesson's fixture: 5 candidates in groups [0, 0, 1, 1, 2], ragged mask, T = 2."""
    new = torch.tensor([[-1.0, -0.5], [-0.5, -0.7], [-1.5, -0.4], [-0.2, -0.9], [-0.8, -1.0]])
    old = torch.tensor([[-1.1, -0.4], [-0.4, -0.8], [-1.6, -0.5], [-0.3, -0.8], [-0.8, -1.1]])
    ref = torch.tensor([[-1.2, -0.7], [-0.8, -0.9], [-1.7, -0.8], [-0.6, -1.1], [-0.9, -1.2]])
    rewards = torch.tensor([1.0, 2.0, 0.5, 1.5, 3.0])
    group_ids = torch.tensor([0, 0, 1, 1, 2])
    mask = torch.tensor([[True, True], [True, False], [True, True], [True, True], [True, False]])
    return new, old, ref, rewards, group_ids, mask


def random_batch(seed: int, groups: int = 3, size: int = 4, length: int = 7, dtype=torch.float32, spread=0.4):
    """Seeded log-probs (log-ratios spread * N(0, 1): 0.4 puts many ratios outside [0.8, 1.2]),
    shuffled groups, ragged masks."""
    generator = seeds.generator(seed)
    rows = groups * size
    draw = lambda *shape: torch.randn(*shape, generator=generator, dtype=torch.float64)  # noqa: E731
    old = -draw(rows, length).abs() - 0.5
    new = old + spread * draw(rows, length)
    ref = old + 0.3 * draw(rows, length)
    rewards = draw(rows).round(decimals=1)
    group_ids = torch.arange(groups).repeat_interleave(size)[torch.randperm(rows, generator=generator)]
    lengths = torch.randint(1, length + 1, (rows,), generator=generator)
    mask = torch.arange(length) < lengths.unsqueeze(-1)
    return [t.to(dtype) if t.is_floating_point() else t for t in (new, old, ref, rewards, group_ids)] + [mask]


def square_batch(seed: int, **options):
    """A random batch with B == T == 9 (see `square`)."""
    return random_batch(seed, groups=3, size=3, length=9, **options)


def square(batch):
    """The batch padded with masked-out positions to width T == B.

    (B,) advantages multiplied into (B, T) tensors without unsqueeze raise unless B == T, and then
    give token t candidate t's advantage. The checks outside TODO 3 use square batches, so that
    mistake fails TODO 3's checks only.
    """
    new, old, ref, rewards, group_ids, mask = batch
    pad = (len(rewards), len(rewards) - new.shape[1])
    widen = lambda t: torch.cat([t, torch.zeros(pad, dtype=t.dtype)], dim=1)  # noqa: E731
    return widen(new), widen(old), widen(ref), rewards, group_ids, widen(mask)


def loss_args(batch, **options):
    new, old, ref, rewards, group_ids, mask = batch
    return (new, old, rewards, group_ids, mask), options | ({"log_probs_ref": ref} if "beta" in options else {})


def loss_matches_reference(expect, *args, **options) -> float:
    """The learner's loss equals the reference's; returns it. The advantages (TODO 1) are not compared."""
    expected = expect.reference_call(FN, *args, **options)
    got = expect.call(FN, *args, **options)
    call = expect.describe(FN, args, options)
    expect.same(got, expected, call, values=False)
    expect.same(got[LOSS], expected[LOSS], say(f"{call}  [the loss]", f"{call}  [损失]"))
    return got[LOSS].item()


# -- TODO 1, through compute_grpo_loss -------------------------------------------------------------


@pytest.mark.todo(1)
def test_returned_advantages_are_the_group_advantages(expect):
    """compute_grpo_loss returns the group advantages it used: values vs the reference (singleton 0)

    zh: `compute_grpo_loss` 返回它使用的组内优势：与参考答案比较数值（单元素组为 0）
    """
    args, options = loss_args(square(lesson_batch()))
    expected = expect.reference_call(FN, *args, **options)
    got = expect.call(FN, *args, **options)
    call = expect.describe(FN, args, options)
    expect.same(got, expected, call, values=False)
    expect.same(got[1], expected[1], say(f"{call}  [the advantages]", f"{call}  [优势]"))


# -- TODO 2: ratio ---------------------------------------------------------------------------------


@pytest.mark.todo(2)
def test_old_log_probs_receive_no_gradient(expect):
    """Which inputs get a gradient: log_probs_new does, the sampling policy's log_probs_old does not

    zh: 哪些输入得到梯度：`log_probs_new` 有，采样策略的 `log_probs_old` 没有
    """
    args, options = loss_args(square_batch(0))
    _, grads = expect.gradients(FN, *args, wrt=("log_probs_new", "log_probs_old"), pick=LOSS, **options)
    where = say(f"{FN}(...), backpropagating the loss", f"{FN}(...)，对损失反向传播")
    assert_no_gradient(grads, "log_probs_old", where)
    if grads["log_probs_new"] is None or not bool((grads["log_probs_new"] != 0).any()):
        raise AssertionError(
            say(
                f"{where}: no gradient reached `log_probs_new`, the policy being trained",
                f"{where}：没有梯度到达 `log_probs_new`，即正在训练的策略",
            )
        )


@pytest.mark.todo(2)
def test_ratio_is_one_when_policies_agree(expect):
    """Loss value vs the reference with new == old on a full mask: every ratio is 1, the loss 0

    zh: 在全有效掩码上 new == old 时与参考答案比较损失：每个比率都是 1，损失为 0
    """
    new, _, _, rewards, group_ids, mask = square_batch(1)
    loss_matches_reference(expect, new, new.clone(), rewards, group_ids, torch.ones_like(mask))


# -- TODO 3: clipped surrogate and KL ------------------------------------------------------------------


def _one_token_loss(expect, ratio: float, advantage_sign: float):
    """Loss and d loss / d new for one token with a chosen ratio and the sign of its advantage."""
    new = torch.tensor([[torch.log(torch.tensor(ratio)).item()], [0.0]])
    rewards = torch.tensor([advantage_sign, -advantage_sign])
    loss, grads = expect.gradients(
        FN, new, torch.zeros(2, 1), rewards, torch.tensor([0, 0]), clip_range=0.2, wrt=("log_probs_new",), pick=LOSS
    )
    gradient = grads["log_probs_new"]
    return loss, 0.0 if gradient is None else gradient[0, 0].item()


@pytest.mark.todo(3)
@pytest.mark.parametrize(
    ("ratio", "sign", "clipped"),
    [(1.5, 1.0, True), (0.5, -1.0, True), (0.5, 1.0, False), (1.5, -1.0, False), (1.1, 1.0, False)],
    ids=[
        "A>0 above 1+clip_range",
        "A<0 below 1-clip_range",
        "A>0 below 1-clip_range",
        "A<0 above 1+clip_range",
        "A>0 inside",
    ],
)
def test_clip_is_flat_only_on_the_side_the_advantage_points(expect, ratio, sign, clipped):
    """Past 1 +/- clip_range in the advantage's direction the loss is flat; elsewhere it has a gradient

    zh: 沿优势方向越过 1 ± `clip_range` 后损失是平的；其他位置保留梯度
    """
    loss, gradient = _one_token_loss(expect, ratio, sign)
    advantage, partner = ("+1", "-1") if sign > 0 else ("-1", "+1")
    where = say(
        f"one group of two one-token candidates, clip_range 0.2: candidate 0 at ratio {ratio} with "
        f"advantage {advantage}, candidate 1 at ratio 1 with advantage {partner}",
        f"一组两个候选、各一个 token，`clip_range=0.2`：候选 0 的比率为 {ratio}、优势为 {advantage}，"
        f"候选 1 的比率为 1、优势为 {partner}",
    )
    if clipped and gradient != 0.0:
        raise AssertionError(
            say(
                f"{where}: candidate 0 is on the clipped side and must be flat, but d loss/d log_prob of its "
                f"token = {gradient:.4g}",
                f"{where}：候选 0 在裁剪一侧，梯度应为 0，但它那个 token 的 d loss/d log_prob = {gradient:.4g}",
            )
        )
    if not clipped and gradient == 0.0:
        raise AssertionError(
            say(
                f"{where}: candidate 0 is not clipped, yet the gradient of its token is 0 (loss {loss:.4g})",
                f"{where}：候选 0 没有被裁剪，它那个 token 的梯度却为 0（损失 {loss:.4g}）",
            )
        )
    other = sign  # the second candidate: ratio 1, advantage -sign, so its loss is +sign
    expected = (-min(ratio * sign, min(max(ratio, 0.8), 1.2) * sign) + other) / 2
    if not abs(loss - expected) <= 1e-5:  # NaN fails too
        raise AssertionError(
            say(
                f"{where}: loss expected {expected:.6g} (the mean of the two candidates' losses), got {loss:.6g}",
                f"{where}：损失应为 {expected:.6g}（两个候选损失的均值），实际为 {loss:.6g}",
            )
        )


@pytest.mark.todo(3)
def test_each_advantage_scales_its_own_candidates_tokens(expect):
    """Loss and gradient vs the reference with B == T: candidate i's tokens all use A_i

    zh: B == T 时与参考答案比较损失和梯度：候选 i 的所有 token 都使用 A_i
    """
    new, old, _, _, group_ids, mask = random_batch(12, groups=1, size=4, length=4, spread=0.05)
    rewards = torch.tensor([0.0, 1.0, 3.0, 7.0])  # one group, four different advantages
    args = (new, old, rewards, group_ids, torch.ones_like(mask))
    loss_matches_reference(expect, *args)
    expect.gradients_match_reference(FN, *args, wrt=("log_probs_new",), pick=LOSS)


@pytest.mark.todo(3)
def test_reference_policy_receives_no_gradient(expect):
    """Which inputs get a gradient: the frozen reference policy's log_probs_ref does not

    zh: 哪些输入得到梯度：冻结的参考策略的 `log_probs_ref` 没有
    """
    args, options = loss_args(lesson_batch(), beta=0.1)
    _, grads = expect.gradients(FN, *args, wrt=("log_probs_ref",), pick=LOSS, **options)
    where = say(f"{FN}(..., beta=0.1), backpropagating the loss", f"{FN}(..., beta=0.1)，对损失反向传播")
    assert_no_gradient(grads, "log_probs_ref", where)


@pytest.mark.todo(3)
def test_kl_penalty_never_lowers_the_loss(expect):
    """Adding the non-negative k3 term never lowers the loss, and adds nothing when ref == new

    zh: 加入非负的 k3 项不会降低损失；ref == new 时不增加任何值
    """
    new, old, ref, rewards, group_ids, mask = random_batch(4)
    ref = new + 0.5  # the reference likes every sampled token more than the policy does
    without = expect.shaped_like_reference(FN, new, old, rewards, group_ids, mask)[0].item()
    penalised = expect.call(FN, new, old, rewards, group_ids, mask, log_probs_ref=ref, beta=0.5)[0].item()
    if penalised < without - 1e-6:
        raise AssertionError(
            say(
                f"loss with beta=0.5 is {penalised:.6g}, lower than {without:.6g} without the KL term",
                f"beta=0.5 时损失为 {penalised:.6g}，低于不加 KL 项时的 {without:.6g}",
            )
        )
    same = expect.call(FN, new, old, rewards, group_ids, mask, log_probs_ref=new.clone(), beta=0.5)[0].item()
    if not abs(same - without) <= 1e-6:  # NaN fails too
        raise AssertionError(
            say(
                f"with log_probs_ref == log_probs_new the KL term must be 0, but the loss moved by {same - without:.4g}",
                f"`log_probs_ref == log_probs_new` 时 KL 项应为 0，但损失变化了 {same - without:.4g}",
            )
        )


@pytest.mark.todo(3)
def test_kl_is_k3_of_new_against_reference(expect):
    """Loss value vs the reference with equal rewards (A = 0) on a full mask: beta * mean k3(new, ref)

    zh: 奖励全等（A = 0）且掩码全有效时与参考答案比较损失：beta * k3(new, ref) 的均值
    """
    new, old, ref, _, group_ids, mask = random_batch(5)
    rewards = torch.ones_like(new[:, 0])
    loss_matches_reference(expect, new, old, rewards, group_ids, torch.ones_like(mask), log_probs_ref=ref, beta=0.3)


# -- TODO 4: aggregation ---------------------------------------------------------------------------


@pytest.mark.todo(4)
def test_candidates_weigh_equally_whatever_their_length(expect):
    """Loss value with ratios 1, advantages [-1, 1, -1, 1], lengths 4, 2, 2, 2: 0 (token mean: 0.2)

    zh: 比率全为 1、优势 [-1, 1, -1, 1]、长度 4、2、2、2 时的损失值：0（token 均值为 0.2）
    """
    new = torch.full((4, 4), -1.0)
    mask = torch.tensor([[True] * 4] + [[True, True, False, False]] * 3)
    args = (new, new.clone(), torch.tensor([0.0, 2.0, 0.0, 2.0]), torch.tensor([0, 0, 1, 1]), mask)
    loss = expect.shaped_like_reference(FN, *args)[LOSS].item()
    if not abs(loss) <= 1e-6:  # NaN fails too
        raise AssertionError(
            say(
                f"{FN}(...) = {loss:.6g} where each response's per-token loss is minus its advantage "
                "(-1 or +1): the mean of the response means is 0, whatever the lengths",
                f"每个回答的逐 token 损失都是其优势的相反数（-1 或 +1），而 {FN}(...) = {loss:.6g}："
                "各回答均值的均值是 0，与长度无关",
            )
        )


@pytest.mark.todo(4)
def test_masked_positions_change_nothing(expect):
    """Self-consistency: changing log-probs where the mask is False leaves your loss as it was

    zh: 自洽：修改掩码为 False 位置的对数概率，你的损失保持不变
    """
    new, old, ref, rewards, group_ids, mask = square_batch(6)
    before = expect.shaped_like_reference(FN, new, old, rewards, group_ids, mask, log_probs_ref=ref, beta=0.1)[LOSS]
    if not bool(before.isfinite()):  # NaN would equal NaN below
        raise AssertionError(
            say(
                f"{FN}(...) returned a non-finite loss: {before.item()}",
                f"{FN}(...) 返回了非有限的损失：{before.item()}",
            )
        )
    noise = torch.where(mask, torch.zeros_like(new), torch.full_like(new, -3.0))
    after = expect.call(FN, new + noise, old - noise, rewards, group_ids, mask, log_probs_ref=ref + noise, beta=0.1)
    expect.same(
        after[LOSS],
        before,
        say(f"{FN}(...) after changing only the masked-out positions", f"只修改掩码为 `False` 的位置之后的 {FN}(...)"),
    )


@pytest.mark.todo(4)
def test_loss_types_agree_where_they_must(expect):
    """Self-consistency of loss_types: equal on a full mask; ragged, bnpo * valid == dr_grpo * B * T

    zh: 各 `loss_type` 自洽：掩码全有效时相等；不等长时 `"bnpo"` 损失 * 有效数 == `"dr_grpo"` 损失 * B * T
    """
    new, old, ref, rewards, group_ids, mask = square_batch(10)
    kinds = ("grpo", "bnpo", "dr_grpo")

    def losses(mask):
        args = (new, old, rewards, group_ids, mask)
        return {
            kind: expect.call(FN, *args, log_probs_ref=ref, beta=0.05, loss_type=kind)[LOSS].item() for kind in kinds
        }

    full = losses(torch.ones_like(mask))
    if not max(full.values()) - min(full.values()) <= 1e-6:  # NaN fails too
        shown = ", ".join(f"{kind} {value:.6f}" for kind, value in full.items())
        shown_zh = "，".join(f"`{kind}` {value:.6f}" for kind, value in full.items())
        raise AssertionError(
            say(
                f"on a full mask every loss_type is the token mean, but: {shown}",
                f"掩码全有效时，每种 `loss_type` 都是 token 均值，但实际为：{shown_zh}",
            )
        )
    ragged = losses(mask)
    valid, size = mask.sum().item(), mask.numel()
    if not abs(ragged["bnpo"] * valid - ragged["dr_grpo"] * size) <= 1e-5:  # NaN fails too
        raise AssertionError(
            say(
                f"on a ragged mask ({valid} of {size} tokens valid) bnpo = {ragged['bnpo']:.6f} and "
                f"dr_grpo = {ragged['dr_grpo']:.6f}: both sum the same token losses, bnpo divides by "
                f"the {valid} valid tokens and dr_grpo by B * T = {size}",
                f"在不等长掩码上（{size} 个 token 中 {valid} 个有效），`bnpo` = {ragged['bnpo']:.6f}，"
                f"`dr_grpo` = {ragged['dr_grpo']:.6f}：两者对同样的 token 损失求和，`bnpo` 除以 "
                f"{valid} 个有效 token，`dr_grpo` 除以 B * T = {size}",
            )
        )


@pytest.mark.todo(4)
def test_dtype_follows_inputs(expect):
    """Dtypes only: float64 inputs give a float64 loss

    zh: 只比较 dtype：float64 输入得到 float64 损失
    """
    args, options = loss_args(square_batch(9, dtype=torch.float64), beta=0.2)
    expect.shaped_like_reference(FN, *args, **options)


# -- the whole function ----------------------------------------------------------------------------


@pytest.mark.whole
def test_loss_matches_reference_on_the_lesson_batch(expect):
    """Loss and advantages vs the reference on the lesson's batch

    zh: 在讲义的样例批次上，与参考答案比较损失与优势
    """
    args, options = loss_args(lesson_batch())
    expect.matches_reference(FN, *args, **options)


@pytest.mark.whole
@pytest.mark.parametrize("seed", [2, 3])
def test_loss_and_gradient_match_reference_with_kl(expect, seed):
    """Loss and gradients vs the reference, with a reference policy and beta > 0

    zh: 提供参考策略且 beta > 0 时，与参考答案比较损失与梯度
    """
    args, options = loss_args(random_batch(seed), beta=0.1, clip_range=0.2)
    expect.matches_reference(FN, *args, **options)
    expect.gradients_match_reference(
        FN, *args, wrt=("log_probs_new", "log_probs_old", "log_probs_ref"), pick=LOSS, **options
    )


@pytest.mark.whole
@pytest.mark.parametrize("seed", [7, 8])
def test_loss_and_gradient_match_reference_on_ragged_masks(expect, seed):
    """Loss and gradient vs the reference on random ragged masks (no KL)

    zh: 在随机的不等长掩码上（无 KL），与参考答案比较损失与梯度
    """
    args, options = loss_args(random_batch(seed, groups=4, size=3, length=9), clip_range=0.1)
    expect.matches_reference(FN, *args, **options)
    expect.gradients_match_reference(FN, *args, wrt=("log_probs_new",), pick=LOSS, **options)


@pytest.mark.whole
@pytest.mark.parametrize("loss_type", ["bnpo", "dr_grpo"])
def test_other_aggregations_match_reference(expect, loss_type):
    """bnpo and dr_grpo: loss and gradient vs the reference on ragged masks with KL

    zh: `"bnpo"` 与 `"dr_grpo"`：在带 KL 的不等长掩码上，与参考答案比较损失与梯度
    """
    args, options = loss_args(random_batch(10, groups=3, size=4, length=8), beta=0.05, loss_type=loss_type)
    expect.matches_reference(FN, *args, **options)
    expect.gradients_match_reference(FN, *args, wrt=("log_probs_new",), pick=LOSS, **options)


def test_rejects_inputs_outside_the_contract(expect):
    """Accepts valid input; rejects every bad input the lesson lists with ValueError

    zh: 接受合法输入；对讲义列出的每种非法输入抛出 ValueError
    """
    new, old, ref, rewards, group_ids, mask = square(lesson_batch())
    expect.call(FN, new, old, rewards, group_ids, mask, log_probs_ref=ref, beta=0.1)
    nan, inf = float("nan"), float("inf")
    with_nan = new.clone()
    with_nan[1, 0] = nan
    empty_row = mask.clone()
    empty_row[2] = False
    bad = [
        (say("old has another shape", "`log_probs_old` 的形状不同"), (new, old[:-1], rewards, group_ids, mask), {}),
        (say("1-D log-probs", "对数概率是一维的"), (new[:, 0], old[:, 0], rewards, group_ids, mask[:, 0]), {}),
        (
            say("rewards for another batch size", "`rewards` 的批次大小不同"),
            (new, old, rewards[:-1], group_ids[:-1], mask),
            {},
        ),
        (say("group_ids of another shape", "`group_ids` 的形状不同"), (new, old, rewards, group_ids[:-1], mask), {}),
        (
            say("ref has another shape", "`log_probs_ref` 的形状不同"),
            (new, old, rewards, group_ids, mask),
            {"log_probs_ref": ref[:-1], "beta": 0.1},
        ),
        (say("mask has another shape", "掩码的形状不同"), (new, old, rewards, group_ids, mask[:, :1]), {}),
        ("eps = 0", (new, old, rewards, group_ids, mask), {"eps": 0.0}),
        ("beta < 0", (new, old, rewards, group_ids, mask), {"log_probs_ref": ref, "beta": -0.1}),
        (
            say("beta is infinite", "beta 为无穷大"),
            (new, old, rewards, group_ids, mask),
            {"log_probs_ref": ref, "beta": inf},
        ),
        (say("clip_range < 0", "`clip_range` < 0"), (new, old, rewards, group_ids, mask), {"clip_range": -0.2}),
        (
            say("clip_range is infinite", "`clip_range` 为无穷大"),
            (new, old, rewards, group_ids, mask),
            {"clip_range": inf},
        ),
        (say("a float mask", "掩码是浮点型"), (new, old, rewards, group_ids, mask.float()), {}),
        (
            say("a response with no valid token", "某个回答没有有效 token"),
            (new, old, rewards, group_ids, empty_row),
            {},
        ),
        (say("a NaN reward", "奖励中有 NaN"), (new, old, torch.tensor([nan, 2.0, 0.5, 1.5, 3.0]), group_ids, mask), {}),
        (say("a NaN log-prob", "对数概率中有 NaN"), (with_nan, old, rewards, group_ids, mask), {}),
        (
            say("an infinite old log-prob", "旧策略的对数概率中有无穷大"),
            (new, old.clone().fill_(-inf), rewards, group_ids, mask),
            {},
        ),
        (
            say("a NaN reference log-prob", "参考策略的对数概率中有 NaN"),
            (new, old, rewards, group_ids, mask),
            {"log_probs_ref": with_nan, "beta": 0.1},
        ),
        (
            say("an unknown loss_type", "未知的 `loss_type`"),
            (new, old, rewards, group_ids, mask),
            {"loss_type": "dapo"},
        ),
    ]
    for why, args, kwargs in bad:
        expect.raises_value_error(why, FN, *args, **kwargs)
