"""Checks for the toy GRPO run: sampling (TODO 1), z-score (TODO 2), loss (TODO 3), sync (TODO 4),
and the whole run learning the target token for three seeds.

Fixtures: tiny GPT-2 policies from grader.builders.toy_grpo (the reference's `build_policy`, their
weights spread with seeded noise so that the next-token distribution is peaked: answers repeat,
ratios fall on both sides of the clip, the reference policy differs from the policy), built with
the same weights here for the reference and in the learner's process with `learner.build`; the
lesson's reward groups; seeded torch.Generators for every draw.
"""

import copy
import functools
import math

import pytest
import torch

from grader.builders import toy_grpo as builders
from grader.content import seeds
from grader.content.i18n import say
from grader.judging.expect import CheckFailed, MissingFunction
from grader.run.judge import MissingName, Refused

VOCAB_SIZE, BOS, TARGET = builders.VOCAB_SIZE, 9, 0
GLOBAL_SEED = 2024  # of the learner's global RNG, which sampling must leave alone


def no_graph() -> str:
    return say(
        "grpo_step_loss must return a scalar tensor with a graph back to the policy's parameters",
        "`grpo_step_loss` 必须返回一个标量张量，它的计算图要能回溯到策略的参数",
    )


def loss_inputs(reference, seed: int, group_size: int = 12):
    """(policy, ref_policy, tokens, old_logp, advantages): ratios spread around the clip, ref != policy."""
    policy = builders.tiny_policy(seeds.number(seed))
    ref_policy, generator = builders.nearby_policy(seeds.number(seed))
    with torch.no_grad():
        new_logp = reference.next_token_log_probs(policy, BOS)
    tokens = torch.randint(0, VOCAB_SIZE, (group_size,), generator=generator)
    old_logp = new_logp[tokens] + 0.4 * torch.randn(group_size, generator=generator)
    advantages = torch.randn(group_size, generator=generator)
    return policy, ref_policy, tokens, old_logp, advantages


def loss_and_gradients(fn, policy, ref_policy, *args, **kwargs):
    """The reference's `fn` on copies of both policies; (loss, {name: grad of the policy}, ref copy)."""
    policy, ref_policy = copy.deepcopy(policy), copy.deepcopy(ref_policy)
    loss = fn(policy, ref_policy, BOS, *args, **kwargs)
    loss.backward()
    grads = {name: torch.zeros_like(p) if p.grad is None else p.grad.clone() for name, p in policy.named_parameters()}
    return loss.detach(), grads, ref_policy


def learner_policies(learner, seed: int):
    """The policy and reference policy of `loss_inputs(reference, seed)`, built in the learner's process."""
    return learner.build("toy_grpo.tiny_policy", seeds.number(seed)), learner.build(
        "toy_grpo.reference_policy", seeds.number(seed)
    )


def learner_loss_and_gradients(expect, policy, ref_policy, *args, **kwargs):
    """The learner's grpo_step_loss on copies of both policies (handles), backpropagated in its process.

    Returns (loss, {name: grad of the policy}, {name: grad of the ref copy or None}, [the gradient
    of each tensor argument that requires grad, in order, or None]).
    """
    policy, ref_policy = policy.copy(), ref_policy.copy()
    arguments = (policy, ref_policy, BOS, *args)
    try:
        answer = expect.learner.backward("grpo_step_loss", arguments, kwargs)
    except MissingName:
        raise MissingFunction(
            say(
                "your file has no function `grpo_step_loss`: the checks call it by that name",
                "你的文件里没有函数 `grpo_step_loss`：检查按这个名字调用它",
            )
        ) from None
    except Refused as refusal:
        raise CheckFailed(f"{expect.describe('grpo_step_loss', arguments, kwargs)}\n  {refusal}") from None
    loss, grads = answer["output"], answer["grads"]
    if not isinstance(loss, torch.Tensor) or loss.ndim != 0 or grads is None:
        raise AssertionError(no_graph())
    policy_grads = {name: grad for name, (_, grad) in policy.params().items()}
    ref_grads = {name: grad for name, (_, grad) in ref_policy.params().items()}
    if all(grad is None for grad in [*grads, *policy_grads.values(), *ref_grads.values()]):
        raise AssertionError(no_graph())  # nothing received a gradient: the loss has no graph
    shapes = parameter_shapes()
    policy_grads = {name: torch.zeros(shapes[name]) if grad is None else grad for name, grad in policy_grads.items()}
    return loss, policy_grads, ref_grads, grads


@functools.cache
def parameter_shapes() -> dict[str, torch.Size]:
    """{name: shape} of a tiny policy's parameters."""
    return {name: parameter.shape for name, parameter in builders.build_policy(VOCAB_SIZE, 0).named_parameters()}


def call_text(name: str, **arguments) -> str:
    return f"{name}({', '.join(f'{key}={value}' for key, value in arguments.items())})"


# -- TODO 1: sampling -------------------------------------------------------------------------------


@pytest.mark.todo(1)
@pytest.mark.parametrize(("seed", "group_size"), [(0, 16), (1, 32), (2, 6)])
def test_sampled_group_matches_reference(expect, learner, reference, seed, group_size):
    """The same generator seed gives the reference's tokens and old log-probs

    zh: 相同的生成器种子得到与参考答案相同的 token 和旧对数概率
    """
    policy = builders.tiny_policy(seeds.number(seed))
    expected = reference.sample_group(policy, BOS, group_size, seeds.generator(seed))
    remote = learner.build("toy_grpo.tiny_policy", seeds.number(seed))
    learner.manual_seed(seeds.number(GLOBAL_SEED + seed))  # the global RNG would draw other answers in all three cases
    got = expect.call("sample_group", remote, BOS, group_size, seeds.generator(seed))
    policy_text, seed_text = say("<tiny GPT-2>", "<小型 `GPT-2`>"), say(f"<seed {seed}>", f"<种子 {seed}>")
    what = call_text("sample_group", policy=policy_text, bos_id=BOS, group_size=group_size, generator=seed_text)
    expect.same(got, expected, what)


@pytest.mark.todo(1)
def test_old_log_probs_carry_no_graph(expect, learner):
    """old_logp is data about the sampler: it carries no graph even when the weights require grad

    zh: `old_logp` 是关于采样器的数据：即使权重需要梯度，它也不带计算图
    """
    policy = learner.build("toy_grpo.tiny_policy", seeds.number(3))
    tokens, old_logp = expect.call("sample_group", policy, BOS, 8, seeds.generator(3))
    if not isinstance(old_logp, torch.Tensor) or old_logp.requires_grad:
        raise AssertionError(
            say(
                "sample_group(policy=<tiny GPT-2 whose parameters require grad>, ...) returned old_logp attached to "
                "the policy's graph (requires_grad=True): a record of the sampling carries no graph",
                "sample_group(policy=<参数需要梯度的小型 `GPT-2`>, ...) 返回的 `old_logp` 连着策略的计算图"
                "（requires_grad=True）：对采样的记录不带计算图",
            )
        )


@pytest.mark.todo(1)
def test_sampling_draws_only_from_the_generator(expect, learner):
    """Every draw comes from the generator passed in: the global RNG is left alone

    zh: 每次抽样都来自传入的生成器：全局随机数生成器保持不变
    """
    policy = learner.build("toy_grpo.tiny_policy", seeds.number(4))
    learner.manual_seed(seeds.number(GLOBAL_SEED))
    before = learner.rng_state()
    expect.call("sample_group", policy, BOS, 16, seeds.generator(4))
    if not torch.equal(before, learner.rng_state()):
        raise AssertionError(
            say(
                "sample_group(..., generator=<seed 4>) drew from torch's global random generator; "
                "pass generator=generator to torch.multinomial so that a seed reproduces the group",
                "sample_group(..., generator=<种子 4>) 从 PyTorch 的全局随机数生成器抽样了；"
                "把 `generator=generator` 传给 `torch.multinomial`，同一个种子才能复现同一组回答",
            )
        )


# -- TODO 2: z-score advantages ----------------------------------------------------------------------

LESSON_GROUPS = {
    "continuous": [0.83, 0.41, 0.95, 0.27, 0.62, 0.09, 0.51, 0.78],
    "rare positive": [0.10, 0.12, 0.85, 0.08, 0.15, 0.11, 0.09, 0.13],
    "3 of 128 pass": [1.0 if i in (7, 53, 91) else 0.0 for i in range(128)],
    "binary group of 4": [1.0, 0.0, 0.0, 0.0],
}


@pytest.mark.todo(2)
@pytest.mark.parametrize("case", list(LESSON_GROUPS), ids=list(LESSON_GROUPS))
def test_advantages_match_reference_on_lesson_groups(expect, case):
    """Matches the reference on the lesson's reward groups (sample std, eps added)

    zh: 在讲义的奖励分组上与参考答案一致（样本标准差，eps 相加）
    """
    expect.matches_reference("zscore_advantages", torch.tensor(LESSON_GROUPS[case]))


@pytest.mark.todo(2)
def test_equal_rewards_give_zero_not_nan(expect):
    """A group whose rewards are all equal gets advantage 0 everywhere, not NaN

    zh: 奖励全部相同的组处处得到优势 0，而不是 NaN
    """
    advantages = expect.matches_reference("zscore_advantages", torch.full((8,), 0.5))
    if not bool((advantages == 0).all()):
        raise AssertionError(
            say(
                "zscore_advantages([0.5] * 8) must be exactly 0 everywhere: the group carries no signal",
                "zscore_advantages([0.5] * 8) 必须处处恰好为 0：这个组不带任何信号",
            )
        )


@pytest.mark.todo(2)
def test_tiny_spread_shows_how_eps_enters(expect):
    """With a spread near eps, adding eps and flooring at eps give different answers (float64)

    zh: 奖励差距接近 eps 时，加上 eps 与以 eps 为下限结果不同（float64）
    """
    rewards = torch.tensor([0.0, 2e-4, 1e-4], dtype=torch.float64)
    expect.matches_reference("zscore_advantages", rewards)
    expect.matches_reference("zscore_advantages", rewards, eps=1e-8)


@pytest.mark.todo(2)
@pytest.mark.parametrize("seed", [21, 22])
def test_advantages_match_reference_on_drawn_groups(expect, seed):
    """Matches the reference on drawn groups of rewards: 0/1 answers and partial credit

    zh: 在随机抽取的奖励组（0/1 回答与部分得分）上与参考答案一致
    """
    generator = seeds.generator(seed)
    correct = torch.randint(0, 2, (12,), generator=generator).float()
    expect.matches_reference("zscore_advantages", correct)
    expect.matches_reference("zscore_advantages", torch.rand(7, generator=generator))


# -- TODO 3: the loss ------------------------------------------------------------------------------


@pytest.mark.todo(3)
@pytest.mark.parametrize(("seed", "beta"), [(5, 0.04), (6, 0.5)])
def test_loss_and_policy_gradient_match_reference(expect, learner, reference, seed, beta):
    """Loss and the gradient on every policy parameter match the reference

    zh: 损失以及每个策略参数上的梯度与参考答案一致
    """
    policy, ref_policy, tokens, old_logp, advantages = loss_inputs(reference, seed)
    args = (tokens, old_logp, advantages)
    options = {"clip_range": 0.2, "beta": beta}
    want_loss, want_grads, _ = loss_and_gradients(reference.grpo_step_loss, policy, ref_policy, *args, **options)
    remotes = learner_policies(learner, seed)
    got_loss, got_grads, _, _ = learner_loss_and_gradients(expect, *remotes, *args, **options)
    policy_text, nearby = say(f"<seed {seed}>", f"<种子 {seed}>"), say("<nearby>", "<相近的策略>")
    what = call_text("grpo_step_loss", policy=policy_text, ref_policy=nearby, clip_range=0.2, beta=beta)
    expect.same(got_loss, want_loss, what)
    gradients = say("gradient of the loss with respect to the policy's parameters", "损失对策略参数的梯度")
    expect.same(got_grads, want_grads, f"{what}\n  {gradients}")


@pytest.mark.todo(3)
def test_ratio_is_one_when_old_equals_new(expect, learner, reference):
    """With old_logp equal to the policy's own log-probs and beta 0, the loss is -mean(A)

    zh: `old_logp` 等于策略自身的对数概率且 beta 为 0 时，损失等于 -mean(A)
    """
    policy, _, tokens, _, advantages = loss_inputs(reference, 7)
    with torch.no_grad():
        old_logp = reference.next_token_log_probs(policy, BOS)[tokens]
    remotes = learner_policies(learner, 7)
    loss, _, _, _ = learner_loss_and_gradients(expect, *remotes, tokens, old_logp, advantages, beta=0.0)
    expected = -advantages.mean().item()
    if not abs(loss.item() - expected) <= 1e-5:  # NaN fails too
        raise AssertionError(
            say(
                f"grpo_step_loss(old_logp = the policy's own log-probs, beta=0): every ratio is 1, so the loss is "
                f"-mean(A) = {expected:.5f}; got {loss.item():.5f}",
                f"`old_logp` 取策略自身的对数概率时，`grpo_step_loss(..., beta=0)`：每个策略比率都是 1，所以损失是 "
                f"`-mean(A)` = {expected:.5f}；实际得到 {loss.item():.5f}",
            )
        )


@pytest.mark.todo(3)
@pytest.mark.parametrize(
    ("ratio", "sign", "flat"),
    [(1.5, 1.0, True), (0.5, -1.0, True), (0.5, 1.0, False), (1.5, -1.0, False)],
    ids=["A>0 above 1+eps", "A<0 below 1-eps", "A>0 below 1-eps", "A<0 above 1+eps"],
)
def test_clip_is_flat_only_on_the_side_the_advantage_points(expect, learner, reference, ratio, sign, flat):
    """One answer: past 1 +/- clip_range in the advantage's direction no gradient flows; elsewhere it does

    zh: 单个回答：沿优势方向越过 1 ± `clip_range` 后没有梯度；其他位置有梯度
    """
    policy = builders.tiny_policy(seeds.number(8))
    tokens = torch.tensor([TARGET])
    with torch.no_grad():
        old_logp = reference.next_token_log_probs(policy, BOS)[tokens] - math.log(ratio)
    remote = learner.build("toy_grpo.tiny_policy", seeds.number(8))
    _, grads, _, _ = learner_loss_and_gradients(
        expect, remote, remote, tokens, old_logp, torch.tensor([sign]), clip_range=0.2, beta=0.0
    )
    moved = sum(bool((grad != 0).any()) for grad in grads.values())
    where = say(
        f"one answer with ratio {ratio} and advantage {sign:+.0f} (clip_range 0.2, beta 0)",
        f"单个回答，策略比率 {ratio}，优势 {sign:+.0f}（clip_range 0.2，beta 0）",
    )
    if flat and moved:
        raise AssertionError(
            say(
                f"{where}: past the clip the loss must be flat, but {moved} parameters got a gradient",
                f"{where}：越过裁剪边界后损失必须是平的，但有 {moved} 个参数得到了梯度",
            )
        )
    if not flat and not moved:
        raise AssertionError(
            say(
                f"{where}: this side is not clipped, yet no parameter got a gradient",
                f"{where}：这一侧没有被裁剪，却没有任何参数得到梯度",
            )
        )


@pytest.mark.todo(3)
def test_kl_penalty_with_zero_advantages(expect, learner, reference):
    """With all advantages 0 the loss is beta * mean k3 of the policy against the reference: >= 0

    zh: 优势全为 0 时，损失是策略相对参考策略的 beta * mean k3：不小于 0
    """
    policy, ref_policy, tokens, old_logp, _ = loss_inputs(reference, 9)
    zeros = torch.zeros_like(old_logp)
    remotes = learner_policies(learner, 9)
    loss, _, _, _ = learner_loss_and_gradients(expect, *remotes, tokens, old_logp, zeros, beta=0.5)
    if loss.item() < 0:
        raise AssertionError(
            say(
                f"grpo_step_loss(advantages=0, beta=0.5) = {loss.item():.5f} < 0: the k3 penalty is >= 0 and is "
                "subtracted from the objective, so it can only raise the loss",
                f"grpo_step_loss(advantages=0, beta=0.5) = {loss.item():.5f} < 0：k3 惩罚项 >= 0，"
                "且从目标中减去，所以它只会让损失变大",
            )
        )
    want, _, _ = loss_and_gradients(reference.grpo_step_loss, policy, ref_policy, tokens, old_logp, zeros, beta=0.5)
    k3 = "k3 = exp(ref - new) - (ref - new) - 1"
    what = say(
        f"grpo_step_loss(advantages=0, beta=0.5): beta * mean k3, {k3}",
        f"grpo_step_loss(advantages=0, beta=0.5)：beta * mean k3，其中 `{k3}`",
    )
    expect.same(loss, want, what)


@pytest.mark.todo(3)
def test_reference_policy_receives_no_gradient(expect, learner, reference):
    """The reference policy is a frozen anchor: none of its parameters gets a gradient

    zh: 参考策略是冻结的锚点：它的任何参数都得不到梯度
    """
    _, _, tokens, old_logp, advantages = loss_inputs(reference, 10)
    remotes = learner_policies(learner, 10)
    _, _, ref_grads, _ = learner_loss_and_gradients(expect, *remotes, tokens, old_logp, advantages, beta=0.5)
    reached = [name for name, grad in ref_grads.items() if grad is not None and bool((grad != 0).any())]
    if reached:
        total = len(ref_grads)
        raise AssertionError(
            say(
                f"grpo_step_loss(..., ref_policy=<parameters require grad>, beta=0.5): {len(reached)} of {total} "
                f"reference parameters got a gradient (first: {reached[0]}): the reference's log-probs were "
                "computed with a graph",
                f"grpo_step_loss(..., ref_policy=<参数需要梯度>, beta=0.5)：参考策略的 {total} 个参数中有 "
                f"{len(reached)} 个得到了梯度（第一个：`{reached[0]}`）：参考策略的对数概率是带着计算图算出的",
            )
        )


@pytest.mark.todo(3)
def test_old_log_probs_receive_no_gradient(expect, learner, reference):
    """Even an old_logp that requires grad gets no gradient from the loss

    zh: 即使 `old_logp` 需要梯度，损失也不会把梯度传给它
    """
    _, _, tokens, old_logp, advantages = loss_inputs(reference, 11)
    old_logp = old_logp.clone().requires_grad_(True)
    remotes = learner_policies(learner, 11)
    _, _, _, (grad,) = learner_loss_and_gradients(expect, *remotes, tokens, old_logp, advantages)
    if grad is not None and bool((grad != 0).any()):
        raise AssertionError(
            say(
                "grpo_step_loss(..., old_logp=<requires grad>): a gradient reached old_logp, a fixed sample: "
                "the ratio lets a gradient flow into it",
                "grpo_step_loss(..., old_logp=<需要梯度>)：有梯度传到了 `old_logp`，而它是固定的样本："
                "策略比率让梯度流进了它",
            )
        )


# -- TODO 4: sync -------------------------------------------------------------------------------


def _differences(state: dict, snapshot: dict) -> list[str]:
    return [name for name, tensor in state.items() if not torch.equal(tensor, snapshot[name])]


def sync_fixtures(learner, policy_seed: int, old_seed: int):
    """(policy, old_policy) in the learner's process: two tiny policies, the old one frozen."""
    return learner.build("toy_grpo.tiny_policy", seeds.number(policy_seed)), learner.build(
        "toy_grpo.old_policy", seeds.number(old_seed)
    )


@pytest.mark.todo(4)
def test_sync_copies_the_policy_into_the_old_policy(expect, learner):
    """After the sync the old policy holds exactly the policy's weights, and the policy is unchanged

    zh: 同步后旧策略的权重与策略完全相同，且策略本身不变
    """
    policy, old_policy = sync_fixtures(learner, 12, 13)
    before = policy.state()
    expect.call("sync_old_policy", old_policy, policy)
    changed = _differences(policy.state(), before)
    if changed:
        raise AssertionError(
            say(
                f"sync_old_policy(old_policy, policy) changed {len(changed)} tensors of the policy "
                f"(first: {changed[0]}); the copy goes from policy into old_policy",
                f"sync_old_policy(old_policy, policy) 改动了策略的 {len(changed)} 个张量（第一个：`{changed[0]}`）；"
                "应当从 `policy` 复制到 `old_policy`",
            )
        )
    differ = _differences(old_policy.state(), before)
    if differ:
        raise AssertionError(
            say(
                f"after sync_old_policy(old_policy, policy), {len(differ)} tensors of old_policy still differ from "
                f"the policy's (first: {differ[0]}); update the object passed in, in place",
                f"调用 sync_old_policy(old_policy, policy) 之后，`old_policy` 仍有 {len(differ)} 个张量与策略的不同"
                f"（第一个：`{differ[0]}`）；要原地更新传入的那个对象",
            )
        )


@pytest.mark.todo(4)
def test_synced_old_policy_is_an_independent_snapshot(expect, learner):
    """Updating the policy after the sync leaves the old policy as it was

    zh: 同步之后再更新策略，旧策略保持不变
    """
    policy, old_policy = sync_fixtures(learner, 14, 15)
    expect.call("sync_old_policy", old_policy, policy)
    synced = old_policy.state()
    state = policy.state()
    policy.assign({name: state[name] + 1.0 for name in policy.params()})  # in place, as an optimizer step would
    moved = _differences(old_policy.state(), synced)
    if moved:
        raise AssertionError(
            say(
                f"after sync_old_policy, an in-place update of the policy also changed {len(moved)} tensors of "
                f"old_policy (first: {moved[0]}): they share storage, and old_policy holds no values of its own",
                f"调用 `sync_old_policy` 之后，原地更新策略也改动了 `old_policy` 的 {len(moved)} 个张量"
                f"（第一个：`{moved[0]}`）：它们共享存储，`old_policy` 没有自己的数值",
            )
        )


# -- the whole run ---------------------------------------------------------------------------------


@pytest.mark.whole
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_toy_run_learns_the_target_token(expect, seed):
    """The whole run: P(target) starts near 0.10 and reaches 0.70 within 40 iterations

    zh: 完整训练：P(target) 从约 0.10 出发，在 40 轮内达到 0.70
    """
    history = expect.call("train", seed, iterations=40, stop_at=0.7)
    if not isinstance(history, dict) or not {"p_target", "informative"} <= set(history):
        raise AssertionError(
            say(
                f"train(seed={seed}) must return a dict with lists 'p_target' and 'informative'",
                f"train(seed={seed}) 必须返回一个字典，含列表 `p_target` 和 `informative`",
            )
        )
    p_target, informative = [float(p) for p in history["p_target"]], [float(i) for i in history["informative"]]
    trajectory = " ".join(f"{p:.2f}" for p in p_target)
    share = sum(informative) / max(len(informative), 1)
    per_iteration = "".join(str(int(i)) for i in informative)
    report = say(
        f"\n  P(target) before training and after each iteration: {trajectory}"
        f"\n  informative groups (rewards not all equal): {share:.2f} of {len(informative)} iterations, "
        f"per iteration {per_iteration}",
        f"\n  训练前及每轮之后的 `P(target)`：{trajectory}"
        f"\n  有效组（奖励不全相同）：{len(informative)} 轮中占 {share:.2f}，"
        f"逐轮为 {per_iteration}",
    )
    if not p_target or not abs(p_target[0] - 0.10) <= 0.03:  # NaN fails too
        raise AssertionError(
            say(
                f"train(seed={seed}): P(target) must start near 0.10 (uniform over 10 tokens){report}",
                f"train(seed={seed})：`P(target)` 必须从 0.10 附近出发（10 个 token 上均匀分布）{report}",
            )
        )
    if max(p_target[1:41], default=0.0) < 0.70:
        raise AssertionError(
            say(
                f"train(seed={seed}): P(target) went from {p_target[0]:.2f} to {p_target[-1]:.2f} and never reached "
                f"0.70 within 40 iterations{report}",
                f"train(seed={seed})：`P(target)` 从 {p_target[0]:.2f} 变到 {p_target[-1]:.2f}，"
                f"40 轮内始终没有达到 0.70{report}",
            )
        )


def test_rejects_inputs_outside_the_contract(expect, learner, reference):
    """Accepts valid input; rejects every bad input the lesson lists with ValueError

    zh: 接受合法输入；对讲义列出的每种非法输入抛出 ValueError
    """
    expect.call("zscore_advantages", torch.tensor([1.0, 0.0, 0.0, 1.0]))  # a valid call does not raise
    _, _, tokens, old_logp, advantages = loss_inputs(reference, 16, group_size=4)
    policy, ref_policy = learner_policies(learner, 16)
    generator = seeds.generator(0)
    nan = float("nan")
    bad = [
        (say("one reward", "只有一个奖励"), "zscore_advantages", (torch.tensor([1.0]),), {}),
        (say("2-D rewards", "二维的奖励"), "zscore_advantages", (torch.zeros(2, 2),), {}),
        (say("integer rewards", "整数类型的奖励"), "zscore_advantages", (torch.tensor([1, 0]),), {}),
        (say("a NaN reward", "有一个奖励是 NaN"), "zscore_advantages", (torch.tensor([1.0, nan]),), {}),
        ("eps = 0", "zscore_advantages", (torch.tensor([1.0, 0.0]),), {"eps": 0.0}),
        (say("eps is infinite", "eps 为 inf"), "zscore_advantages", (torch.tensor([1.0, 0.0]),), {"eps": float("inf")}),
        (say("group_size 0", "`group_size` 为 0"), "sample_group", (policy, BOS, 0, generator), {}),
        (
            say("bos_id outside the vocabulary", "`bos_id` 超出词表"),
            "sample_group",
            (policy, VOCAB_SIZE, 4, generator),
            {},
        ),
        (say("negative bos_id", "`bos_id` 为负数"), "sample_group", (policy, -1, 4, generator), {}),
        (
            say("old_logp of another shape", "`old_logp` 的形状不同"),
            "grpo_step_loss",
            (policy, ref_policy, BOS, tokens, old_logp[:-1], advantages),
            {},
        ),
        (
            say("advantages of another shape", "`advantages` 的形状不同"),
            "grpo_step_loss",
            (policy, ref_policy, BOS, tokens, old_logp, advantages[:2]),
            {},
        ),
        (
            say("float tokens", "浮点类型的 `tokens`"),
            "grpo_step_loss",
            (policy, ref_policy, BOS, tokens.float(), old_logp, advantages),
            {},
        ),
        (
            say("a token outside the vocabulary", "有一个 token 超出词表"),
            "grpo_step_loss",
            (policy, ref_policy, BOS, tokens + VOCAB_SIZE, old_logp, advantages),
            {},
        ),
        (
            say("a NaN old log-prob", "有一个旧对数概率是 NaN"),
            "grpo_step_loss",
            (policy, ref_policy, BOS, tokens, old_logp * nan, advantages),
            {},
        ),
        (
            "clip_range < 0",
            "grpo_step_loss",
            (policy, ref_policy, BOS, tokens, old_logp, advantages),
            {"clip_range": -0.1},
        ),
        (
            say("beta is infinite", "beta 为 inf"),
            "grpo_step_loss",
            (policy, ref_policy, BOS, tokens, old_logp, advantages),
            {"beta": float("inf")},
        ),
        (say("iterations 0", "`iterations` 为 0"), "train", (0,), {"iterations": 0}),
        (say("group_size 1", "`group_size` 为 1"), "train", (0,), {"group_size": 1}),
        (say("target_id outside the vocabulary", "`target_id` 超出词表"), "train", (0,), {"target_id": VOCAB_SIZE}),
    ]
    for why, name, args, kwargs in bad:
        expect.raises_value_error(why, name, *args, **kwargs)
