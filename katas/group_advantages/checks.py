"""Checks for compute_group_advantages (TODO 1).

Fixtures are chosen so that each plausible wrong convention gives a different number: groups of
2 to 5 (sample vs population std differ by sqrt(n / (n - 1))), a spread below eps in float64
(floor vs addend), singletons, all-equal groups, ids out of order and not contiguous.
"""

import pytest
import torch

from grader.content import seeds
from grader.content.i18n import say
from grader.judging.expect import values_text

FN = "compute_group_advantages"


def assert_finite(advantages: torch.Tensor, what: str) -> None:
    """Checks that compare your outputs with each other, or only dtypes, still fail NaN and inf."""
    if not bool(advantages.isfinite().all()):
        raise AssertionError(
            say(
                f"{what} returned non-finite advantages: {values_text(advantages)}",
                f"{what} 返回了非有限的优势：{values_text(advantages)}",
            )
        )


def random_groups(seed: int, sizes=(3, 1, 5, 2, 4), dtype=torch.float32):
    """Rewards for groups of the given sizes, candidates shuffled, ids not contiguous."""
    generator = seeds.generator(seed)
    ids = torch.cat([torch.full((size,), 7 * g - 3) for g, size in enumerate(sizes)])
    rewards = torch.randn(len(ids), generator=generator, dtype=torch.float64).to(dtype) * 2 + 0.5
    order = torch.randperm(len(ids), generator=generator)
    return rewards[order], ids[order]


@pytest.mark.todo(1)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_reference_on_random_groups(expect, seed):
    """Matches the reference on seeded random groups in shuffled order

    zh: 在打乱顺序的随机分组上与参考答案一致
    """
    expect.matches_reference(FN, *random_groups(seed))


@pytest.mark.todo(1)
def test_each_group_has_zero_mean(expect):
    """Every group's advantages have mean zero

    zh: 每一组的优势均值为零
    """
    rewards, ids = random_groups(3)
    advantages = expect.shaped_like_reference(FN, rewards, ids)
    for group in ids.unique().tolist():
        mean = advantages[ids == group].double().mean().item()
        if not abs(mean) <= 1e-5:  # NaN fails too
            raise AssertionError(
                say(
                    f"{FN}(...): group {group} has mean advantage {mean:.4g}, expected 0",
                    f"{FN}(...)：组 {group} 的优势均值为 {mean:.4g}，应为 0",
                )
            )


@pytest.mark.todo(1)
def test_singleton_group_gets_zero_advantage(expect):
    """A group of one candidate gets exactly 0 (nothing to compare with), not NaN

    zh: 单元素组的优势恰好为 0（没有可比较的对象），而不是 NaN
    """
    rewards = torch.tensor([1.0, 2.0, 0.5, 1.5, 3.0])
    group_ids = torch.tensor([0, 0, 1, 1, 2])
    expect.matches_reference(FN, rewards, group_ids)


@pytest.mark.todo(1)
def test_equal_rewards_give_zero_not_nan(expect):
    """A group whose rewards are all equal gets 0 everywhere: eps guards the division

    zh: 奖励全等的组处处为 0：eps 保护了除法
    """
    rewards = torch.tensor([0.7, 0.7, 0.7, 1.0, 0.0])
    group_ids = torch.tensor([4, 4, 4, 9, 9])
    expect.matches_reference(FN, rewards, group_ids)


@pytest.mark.todo(1)
def test_eps_is_a_floor_not_an_addend(expect):
    """eps floors the std (max(std, eps)); it is not added to it

    zh: eps 是标准差的下限（`max(std, eps)`），而不是加数
    """
    rewards = torch.tensor([0.0, 0.5, 0.0, 3e-7], dtype=torch.float64)
    group_ids = torch.tensor([0, 0, 1, 1])
    expect.matches_reference(FN, rewards, group_ids, eps=0.3)
    expect.matches_reference(FN, rewards, group_ids)


@pytest.mark.todo(1)
def test_population_std_convention(expect):
    """The scale is the population std (divide by n, not n - 1)

    zh: 缩放使用总体标准差（除以 n，而不是 n - 1）
    """
    rewards = torch.tensor([0.0, 1.0, 2.0, 3.0, 10.0, 20.0])
    group_ids = torch.tensor([1, 1, 1, 1, 2, 2])
    expect.matches_reference(FN, rewards, group_ids)


@pytest.mark.todo(1)
def test_groups_are_compared_only_within_themselves(expect):
    """Self-consistency: scaling or shifting one group's rewards leaves your advantages unchanged

    zh: 自洽：对某一组的奖励做缩放或平移，你的优势保持不变
    """
    rewards, ids = random_groups(4, sizes=(4, 3, 5))
    before = expect.shaped_like_reference(FN, rewards, ids)
    assert_finite(before, f"{FN}(...)")
    changed = torch.where(ids == ids[0], rewards * 100 + 7, rewards)
    after = expect.call(FN, changed, ids)
    group = ids[0].item()
    expect.same(
        after,
        before,
        say(
            f"{FN}(...) after the rewards of group {group} were scaled by 100 and shifted by 7",
            f"{FN}(...)，把组 {group} 的奖励乘以 100 再加 7 之后",
        ),
    )


@pytest.mark.todo(1)
def test_order_and_id_values_do_not_matter(expect):
    """Self-consistency: permuting candidates permutes your advantages; ids are labels, not positions

    zh: 自洽：打乱候选顺序只会同样打乱你的优势；组 id 是标签，不是位置
    """
    rewards, ids = random_groups(5)
    advantages = expect.shaped_like_reference(FN, rewards, ids)
    assert_finite(advantages, f"{FN}(...)")
    order = torch.randperm(len(ids), generator=seeds.generator(11))
    relabelled = ids * 1000 + 12345
    permuted = expect.call(FN, rewards[order], relabelled[order])
    what = say(f"{FN}(...) with candidates permuted and ids relabelled", f"{FN}(...)，打乱候选顺序并给组 id 重新编号后")
    expect.same(permuted, advantages[order], what)


@pytest.mark.todo(1)
@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16], ids=["float64", "bfloat16"])
def test_dtype_follows_rewards(expect, dtype):
    """Dtypes only: the advantages have the rewards' dtype (and are finite)

    zh: 只比较 dtype：优势的 dtype 与奖励相同（且为有限值）
    """
    advantages = expect.shaped_like_reference(FN, *random_groups(6, dtype=dtype))
    assert_finite(advantages, say(f"{FN}(...) in {dtype}", f"{FN}(...)（{dtype}）"))


def test_rejects_inputs_outside_the_contract(expect):
    """Accepts valid input; rejects bad shapes, empty input, non-finite rewards and bad eps with ValueError

    zh: 接受合法输入；对错误形状、空输入、非有限奖励和非法 eps 抛出 ValueError
    """
    expect.call(FN, torch.tensor([1.0, 2.0, 0.5, 1.5, 3.0]), torch.tensor([0, 0, 1, 1, 2]))
    rewards, ids = random_groups(7)
    nan, inf = float("nan"), float("inf")
    bad = [
        (say("rewards is 2-D", "`rewards` 是二维的"), (rewards.reshape(1, -1), ids.reshape(1, -1)), {}),
        (say("shapes differ", "形状不一致"), (rewards, ids[:-1]), {}),
        (say("empty input", "输入为空"), (rewards[:0], ids[:0]), {}),
        (say("a NaN reward", "奖励中有 NaN"), (torch.tensor([nan, 1.0]), torch.tensor([0, 0])), {}),
        (say("an infinite reward", "奖励中有无穷大"), (torch.tensor([1.0, inf]), torch.tensor([0, 0])), {}),
        ("eps = 0", (rewards, ids), {"eps": 0.0}),
        ("eps < 0", (rewards, ids), {"eps": -1e-6}),
        (say("eps is NaN", "eps 为 NaN"), (rewards, ids), {"eps": nan}),
        (say("eps is infinite", "eps 为无穷大"), (rewards, ids), {"eps": inf}),
    ]
    for why, args, kwargs in bad:
        expect.raises_value_error(why, FN, *args, **kwargs)
