"""Checks for compute_grpo_loss (TODOs 2-4) and, again, compute_group_advantages (TODO 1).

Fixtures: the lesson's five-candidate batch (three groups, one a singleton, ragged mask), seeded
random batches with ragged masks and log-probs spread wide enough that many ratios fall outside
the clip on both sides, and hand-built tokens for the clipping and weighting mechanisms.
"""

import pytest
import torch

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


def random_batch(seed: int, groups: int = 3, size: int = 4, length: int = 7, dtype=torch.float32):
    """Seeded log-probs with ratios well outside [0.8, 1.2], shuffled groups, ragged masks."""
    generator = torch.Generator().manual_seed(seed)
    rows = groups * size
    draw = lambda *shape: torch.randn(*shape, generator=generator, dtype=torch.float64)  # noqa: E731
    old = -draw(rows, length).abs() - 0.5
    new = old + 0.4 * draw(rows, length)
    ref = old + 0.3 * draw(rows, length)
    rewards = draw(rows).round(decimals=1)
    group_ids = torch.arange(groups).repeat_interleave(size)[torch.randperm(rows, generator=generator)]
    lengths = torch.randint(1, length + 1, (rows,), generator=generator)
    mask = torch.arange(length) < lengths.unsqueeze(-1)
    return [t.to(dtype) if t.is_floating_point() else t for t in (new, old, ref, rewards, group_ids)] + [mask]


def loss_args(batch, **options):
    new, old, ref, rewards, group_ids, mask = batch
    return (new, old, rewards, group_ids, mask), options | ({"log_probs_ref": ref} if "beta" in options else {})


# -- TODO 1, through compute_grpo_loss -------------------------------------------------------------


@pytest.mark.todo(1)
def test_returned_advantages_are_the_group_advantages(expect):
    """compute_grpo_loss returns the group advantages it used (singleton gets 0)

    zh: compute_grpo_loss 返回它使用的组内优势（单元素组为 0）
    """
    args, options = loss_args(lesson_batch())
    _, advantages = expect.matches_reference(FN, *args, **options)
    if advantages[-1].item() != 0.0:
        raise AssertionError(f"the singleton group's advantage is {advantages[-1].item():.4g}, expected exactly 0")


# -- TODO 2: ratio ---------------------------------------------------------------------------------


@pytest.mark.todo(2)
def test_loss_matches_reference_on_the_lesson_batch(expect):
    """Loss and advantages match the reference on the lesson's batch

    zh: 在课文的样例批次上，损失与优势和参考答案一致
    """
    args, options = loss_args(lesson_batch())
    expect.matches_reference(FN, *args, **options)


@pytest.mark.todo(2)
def test_old_log_probs_receive_no_gradient(expect):
    """The sampling policy's log-probs are data: no gradient reaches them

    zh: 采样策略的对数概率是数据：梯度不会传到它们
    """
    args, options = loss_args(random_batch(0))
    expect.gradients_match_reference(FN, *args, wrt=("log_probs_new", "log_probs_old"), pick=LOSS, **options)


@pytest.mark.todo(2)
def test_ratio_is_one_when_policies_agree(expect):
    """With new == old every ratio is 1: the loss is minus the mean advantage, i.e. 0

    zh: 当 new == old 时每个比率都是 1：损失为负的平均优势，即 0
    """
    new, _, _, rewards, group_ids, mask = random_batch(1)
    expect.matches_reference(FN, new, new.clone(), rewards, group_ids, mask)


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
    ids=["A>0 above 1+eps", "A<0 below 1-eps", "A>0 below 1-eps", "A<0 above 1+eps", "A>0 inside"],
)
def test_clip_is_flat_only_on_the_side_the_advantage_points(expect, ratio, sign, clipped):
    """Past 1 +/- eps in the advantage's direction the loss is flat; elsewhere it keeps its gradient

    zh: 沿优势方向越过 1 ± eps 后损失是平的；其他位置保留梯度
    """
    loss, gradient = _one_token_loss(expect, ratio, sign)
    where = f"one token with ratio {ratio} and advantage {'+1' if sign > 0 else '-1'} (clip_range 0.2)"
    if clipped and gradient != 0.0:
        raise AssertionError(f"{where}: the clipped side must be flat, but d loss/d log_prob = {gradient:.4g}")
    if not clipped and gradient == 0.0:
        raise AssertionError(f"{where}: this side is not clipped, yet the gradient is 0 (loss {loss:.4g})")
    other = sign  # the second candidate: ratio 1, advantage -sign, so its loss is +sign
    expected = (-min(ratio * sign, min(max(ratio, 0.8), 1.2) * sign) + other) / 2
    if not abs(loss - expected) <= 1e-5:  # NaN fails too
        raise AssertionError(f"{where}: loss expected {expected:.6g}, got {loss:.6g}")


@pytest.mark.todo(3)
@pytest.mark.parametrize("seed", [2, 3])
def test_loss_and_gradient_match_reference_with_kl(expect, seed):
    """With a reference policy and beta > 0, loss and gradients match the reference

    zh: 提供参考策略且 beta > 0 时，损失与梯度和参考答案一致
    """
    args, options = loss_args(random_batch(seed), beta=0.1, clip_range=0.2)
    expect.matches_reference(FN, *args, **options)
    expect.gradients_match_reference(
        FN, *args, wrt=("log_probs_new", "log_probs_old", "log_probs_ref"), pick=LOSS, **options
    )


@pytest.mark.todo(3)
def test_reference_policy_receives_no_gradient(expect):
    """The reference policy is a frozen anchor: no gradient reaches it

    zh: 参考策略是冻结的锚点：梯度不会传到它
    """
    args, options = loss_args(lesson_batch(), beta=0.1)
    expect.gradients_match_reference(FN, *args, wrt=("log_probs_ref",), pick=LOSS, **options)


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
        raise AssertionError(f"loss with beta=0.5 is {penalised:.6g}, lower than {without:.6g} without the KL term")
    same = expect.call(FN, new, old, rewards, group_ids, mask, log_probs_ref=new.clone(), beta=0.5)[0].item()
    if not abs(same - without) <= 1e-6:  # NaN fails too
        raise AssertionError(
            f"with log_probs_ref == log_probs_new the KL term must be 0, but the loss moved by {same - without:.4g}"
        )


@pytest.mark.todo(3)
def test_kl_is_k3_of_new_against_reference(expect):
    """With equal rewards (A = 0) the loss is beta * k3(new, ref) averaged per response

    zh: 奖励全等（A = 0）时，损失是按回答平均的 beta * k3(new, ref)
    """
    new, old, ref, _, group_ids, mask = random_batch(5)
    rewards = torch.ones_like(new[:, 0])
    expect.matches_reference(FN, new, old, rewards, group_ids, mask, log_probs_ref=ref, beta=0.3)


# -- TODO 4: aggregation ---------------------------------------------------------------------------


@pytest.mark.todo(4)
def test_candidates_weigh_equally_whatever_their_length(expect):
    """Each response is averaged over its own tokens first: the lesson's 2-candidate fixture gives 0

    zh: 每条回答先在自身 token 上求均值：课文中两个候选的样例得到 0
    """
    new = torch.zeros(2, 2)
    mask = torch.tensor([[True, True], [True, False]])
    expect.matches_reference(FN, new, new.clone(), torch.tensor([0.0, 2.0]), torch.tensor([0, 0]), mask)


@pytest.mark.todo(4)
def test_masked_positions_change_nothing(expect):
    """Changing log-probs where the mask is False changes neither the loss nor any gradient

    zh: 修改 mask 为 False 位置的对数概率，不改变损失和任何梯度
    """
    new, old, ref, rewards, group_ids, mask = random_batch(6)
    before = expect.matches_reference(FN, new, old, rewards, group_ids, mask, log_probs_ref=ref, beta=0.1)[0]
    noise = torch.where(mask, torch.zeros_like(new), torch.full_like(new, -3.0))
    after = expect.call(FN, new + noise, old - noise, rewards, group_ids, mask, log_probs_ref=ref + noise, beta=0.1)[0]
    expect.same(after, before, f"{FN}(...) after changing only the masked-out positions")


@pytest.mark.todo(4)
@pytest.mark.parametrize("seed", [7, 8])
def test_loss_and_gradient_match_reference_on_ragged_masks(expect, seed):
    """Loss and gradient match the reference on random ragged masks (no KL)

    zh: 在随机的不等长 mask 上（无 KL），损失与梯度和参考答案一致
    """
    args, options = loss_args(random_batch(seed, groups=4, size=3, length=9), clip_range=0.1)
    expect.matches_reference(FN, *args, **options)
    expect.gradients_match_reference(FN, *args, wrt=("log_probs_new",), pick=LOSS, **options)


@pytest.mark.todo(4)
def test_dtype_follows_inputs(expect):
    """float64 inputs give a float64 loss

    zh: float64 输入得到 float64 损失
    """
    args, options = loss_args(random_batch(9, dtype=torch.float64), beta=0.2)
    expect.matches_reference(FN, *args, **options)


# -- TODO 4, continued: TRL's loss_type ---------------------------------------------------------


@pytest.mark.todo(4)
@pytest.mark.parametrize("loss_type", ["bnpo", "dr_grpo"])
def test_other_aggregations_match_reference(expect, loss_type):
    """bnpo and dr_grpo: loss and gradient match the reference on ragged masks with KL

    zh: bnpo 与 dr_grpo：在带 KL 的不等长 mask 上，损失与梯度和参考答案一致
    """
    args, options = loss_args(random_batch(10, groups=3, size=4, length=8), beta=0.05, loss_type=loss_type)
    expect.matches_reference(FN, *args, **options)
    expect.gradients_match_reference(FN, *args, wrt=("log_probs_new",), pick=LOSS, **options)


@pytest.mark.todo(4)
def test_three_aggregations_weigh_lengths_differently(expect):
    """On the lesson's 2-candidate fixture grpo, bnpo and dr_grpo give 0, 1/3 and 1/4

    zh: 在课文两个候选的样例上，grpo、bnpo 与 dr_grpo 分别得到 0、1/3 与 1/4
    """
    new = torch.zeros(2, 2)
    mask = torch.tensor([[True, True], [True, False]])
    args = (new, new.clone(), torch.tensor([0.0, 2.0]), torch.tensor([0, 0]), mask)
    got = {
        kind: expect.shaped_like_reference(FN, *args, loss_type=kind)[0].item() for kind in ("grpo", "bnpo", "dr_grpo")
    }
    want = {"grpo": 0.0, "bnpo": 1 / 3, "dr_grpo": 0.25}
    if any(abs(got[kind] - want[kind]) > 1e-6 for kind in want):
        shown = ", ".join(f"{kind} {got[kind]:.6f} (expected {want[kind]:.6f})" for kind in want)
        raise AssertionError(f"losses by loss_type: {shown}")


@pytest.mark.todo(4)
def test_dr_grpo_divides_by_a_fixed_length(expect):
    """dr_grpo divides by B * T: padding every response to twice the width halves the loss

    zh: dr_grpo 除以 B * T：把每条回答的填充宽度加倍，损失减半
    """
    new, old, _, rewards, group_ids, mask = random_batch(11)
    narrow = expect.shaped_like_reference(FN, new, old, rewards, group_ids, mask, loss_type="dr_grpo")[0].item()
    pad = torch.zeros_like(new)
    wide_args = (
        torch.cat([new, pad], 1),
        torch.cat([old, pad], 1),
        rewards,
        group_ids,
        torch.cat([mask, pad.bool()], 1),
    )
    wide = expect.call(FN, *wide_args, loss_type="dr_grpo")[0].item()
    if not abs(wide - narrow / 2) <= 1e-6:  # NaN fails too
        raise AssertionError(
            f"dr_grpo loss at width T is {narrow:.6f}, at width 2T {wide:.6f}; expected {narrow / 2:.6f}"
        )


def test_rejects_inputs_outside_the_contract(expect):
    """Accepts valid input; rejects every bad input the lesson lists with ValueError

    zh: 接受合法输入；对课文列出的每种非法输入抛出 ValueError
    """
    new, old, ref, rewards, group_ids, mask = lesson_batch()
    expect.matches_reference(FN, new, old, rewards, group_ids, mask, log_probs_ref=ref, beta=0.1)
    nan, inf = float("nan"), float("inf")
    with_nan = new.clone()
    with_nan[1, 0] = nan
    empty_row = mask.clone()
    empty_row[2] = False
    bad = [
        ("old has another shape", (new, old[:-1], rewards, group_ids, mask), {}),
        ("1-D log-probs", (new[:, 0], old[:, 0], rewards, group_ids, mask[:, 0]), {}),
        ("rewards for another batch size", (new, old, rewards[:-1], group_ids[:-1], mask), {}),
        ("group_ids of another shape", (new, old, rewards, group_ids[:-1], mask), {}),
        ("ref has another shape", (new, old, rewards, group_ids, mask), {"log_probs_ref": ref[:-1], "beta": 0.1}),
        ("mask has another shape", (new, old, rewards, group_ids, mask[:, :1]), {}),
        ("eps = 0", (new, old, rewards, group_ids, mask), {"eps": 0.0}),
        ("beta < 0", (new, old, rewards, group_ids, mask), {"log_probs_ref": ref, "beta": -0.1}),
        ("beta is infinite", (new, old, rewards, group_ids, mask), {"log_probs_ref": ref, "beta": inf}),
        ("clip_range < 0", (new, old, rewards, group_ids, mask), {"clip_range": -0.2}),
        ("clip_range is infinite", (new, old, rewards, group_ids, mask), {"clip_range": inf}),
        ("a float mask", (new, old, rewards, group_ids, mask.float()), {}),
        ("a response with no valid token", (new, old, rewards, group_ids, empty_row), {}),
        ("a NaN reward", (new, old, torch.tensor([nan, 2.0, 0.5, 1.5, 3.0]), group_ids, mask), {}),
        ("a NaN log-prob", (with_nan, old, rewards, group_ids, mask), {}),
        ("an infinite old log-prob", (new, old.clone().fill_(-inf), rewards, group_ids, mask), {}),
        ("a NaN reference log-prob", (new, old, rewards, group_ids, mask), {"log_probs_ref": with_nan, "beta": 0.1}),
        ("an unknown loss_type", (new, old, rewards, group_ids, mask), {"loss_type": "dapo"}),
    ]
    for why, args, kwargs in bad:
        expect.raises_value_error(why, FN, *args, **kwargs)
