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
from grader.judging.expect import CheckFailed, MissingFunction
from grader.run.judge import MissingName, Refused

VOCAB_SIZE, BOS, TARGET = builders.VOCAB_SIZE, 9, 0
POLICY = "<tiny GPT-2>"  # how messages show a policy
GLOBAL_SEED = 2024  # of the learner's global RNG, which sampling must leave alone
NO_GRAPH = "grpo_step_loss must return a scalar tensor with a graph back to the policy's parameters"


def loss_inputs(reference, seed: int, group_size: int = 12):
    """(policy, ref_policy, tokens, old_logp, advantages): ratios spread around the clip, ref != policy."""
    policy = builders.tiny_policy(seed)
    ref_policy, generator = builders.nearby_policy(seed)
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
    return learner.build("toy_grpo.tiny_policy", seed), learner.build("toy_grpo.reference_policy", seed)


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
        raise MissingFunction("your file has no function `grpo_step_loss`: the checks call it by that name") from None
    except Refused as refusal:
        raise CheckFailed(f"{expect.describe('grpo_step_loss', arguments, kwargs)}\n  {refusal}") from None
    loss, grads = answer["output"], answer["grads"]
    if not isinstance(loss, torch.Tensor) or loss.ndim != 0 or grads is None:
        raise AssertionError(NO_GRAPH)
    policy_grads = {name: grad for name, (_, grad) in policy.params().items()}
    ref_grads = {name: grad for name, (_, grad) in ref_policy.params().items()}
    if all(grad is None for grad in [*grads, *policy_grads.values(), *ref_grads.values()]):
        raise AssertionError(NO_GRAPH)  # nothing received a gradient: the loss has no graph
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
    policy = builders.tiny_policy(seed)
    expected = reference.sample_group(policy, BOS, group_size, torch.Generator().manual_seed(seed))
    remote = learner.build("toy_grpo.tiny_policy", seed)
    learner.manual_seed(GLOBAL_SEED + seed)  # the global RNG would draw other answers in all three cases
    got = expect.call("sample_group", remote, BOS, group_size, torch.Generator().manual_seed(seed))
    what = call_text("sample_group", policy=POLICY, bos_id=BOS, group_size=group_size, generator=f"<seed {seed}>")
    expect.same(got, expected, what)


@pytest.mark.todo(1)
def test_old_log_probs_carry_no_graph(expect, learner):
    """old_logp is data about the sampler: it carries no graph even when the weights require grad

    zh: old_logp 是关于采样器的数据：即使权重需要梯度，它也不带计算图
    """
    policy = learner.build("toy_grpo.tiny_policy", 3)
    tokens, old_logp = expect.call("sample_group", policy, BOS, 8, torch.Generator().manual_seed(3))
    if not isinstance(old_logp, torch.Tensor) or old_logp.requires_grad:
        raise AssertionError(
            "sample_group(policy=<tiny GPT-2 whose parameters require grad>, ...) returned old_logp attached to "
            "the policy's graph (requires_grad=True); record it without a graph (torch.no_grad or .detach())"
        )


@pytest.mark.todo(1)
def test_sampling_draws_only_from_the_generator(expect, learner):
    """Every draw comes from the generator passed in: the global RNG is left alone

    zh: 每次抽样都来自传入的生成器：全局随机数生成器保持不变
    """
    policy = learner.build("toy_grpo.tiny_policy", 4)
    learner.manual_seed(GLOBAL_SEED)
    before = learner.rng_state()
    expect.call("sample_group", policy, BOS, 16, torch.Generator().manual_seed(4))
    if not torch.equal(before, learner.rng_state()):
        raise AssertionError(
            "sample_group(..., generator=<seed 4>) drew from torch's global random generator; "
            "pass generator=generator to torch.multinomial so that a seed reproduces the group"
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

    zh: 在课文的奖励分组上与参考答案一致（样本标准差，eps 相加）
    """
    expect.matches_reference("zscore_advantages", torch.tensor(LESSON_GROUPS[case]))


@pytest.mark.todo(2)
def test_equal_rewards_give_zero_not_nan(expect):
    """A group whose rewards are all equal gets advantage 0 everywhere, not NaN

    zh: 奖励全部相同的组处处得到优势 0，而不是 NaN
    """
    advantages = expect.matches_reference("zscore_advantages", torch.full((8,), 0.5))
    if not bool((advantages == 0).all()):
        raise AssertionError("zscore_advantages([0.5] * 8) must be exactly 0 everywhere: the group carries no signal")


@pytest.mark.todo(2)
def test_tiny_spread_shows_how_eps_enters(expect):
    """With a spread near eps, adding eps and flooring at eps give different answers (float64)

    zh: 奖励差距接近 eps 时，加上 eps 与以 eps 为下限结果不同（float64）
    """
    rewards = torch.tensor([0.0, 2e-4, 1e-4], dtype=torch.float64)
    expect.matches_reference("zscore_advantages", rewards)
    expect.matches_reference("zscore_advantages", rewards, eps=1e-8)


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
    what = call_text("grpo_step_loss", policy=f"<seed {seed}>", ref_policy="<nearby>", clip_range=0.2, beta=beta)
    expect.same(got_loss, want_loss, what)
    expect.same(got_grads, want_grads, f"{what}\n  gradient of the loss with respect to the policy's parameters")


@pytest.mark.todo(3)
def test_ratio_is_one_when_old_equals_new(expect, learner, reference):
    """With old_logp equal to the policy's own log-probs and beta 0, the loss is -mean(A)

    zh: old_logp 等于策略自身的对数概率且 beta 为 0 时，损失等于 -mean(A)
    """
    policy, _, tokens, _, advantages = loss_inputs(reference, 7)
    with torch.no_grad():
        old_logp = reference.next_token_log_probs(policy, BOS)[tokens]
    remotes = learner_policies(learner, 7)
    loss, _, _, _ = learner_loss_and_gradients(expect, *remotes, tokens, old_logp, advantages, beta=0.0)
    expected = -advantages.mean().item()
    if not abs(loss.item() - expected) <= 1e-5:  # NaN fails too
        raise AssertionError(
            f"grpo_step_loss(old_logp = the policy's own log-probs, beta=0): every ratio is 1, so the loss is "
            f"-mean(A) = {expected:.5f}; got {loss.item():.5f}"
        )


@pytest.mark.todo(3)
@pytest.mark.parametrize(
    ("ratio", "sign", "flat"),
    [(1.5, 1.0, True), (0.5, -1.0, True), (0.5, 1.0, False), (1.5, -1.0, False)],
    ids=["A>0 above 1+eps", "A<0 below 1-eps", "A>0 below 1-eps", "A<0 above 1+eps"],
)
def test_clip_is_flat_only_on_the_side_the_advantage_points(expect, learner, reference, ratio, sign, flat):
    """One answer: past 1 +/- clip_range in the advantage's direction no gradient flows; elsewhere it does

    zh: 单个回答：沿优势方向越过 1 ± clip_range 后没有梯度；其他位置有梯度
    """
    policy = builders.tiny_policy(8)
    tokens = torch.tensor([TARGET])
    with torch.no_grad():
        old_logp = reference.next_token_log_probs(policy, BOS)[tokens] - math.log(ratio)
    remote = learner.build("toy_grpo.tiny_policy", 8)
    _, grads, _, _ = learner_loss_and_gradients(
        expect, remote, remote, tokens, old_logp, torch.tensor([sign]), clip_range=0.2, beta=0.0
    )
    moved = sum(bool((grad != 0).any()) for grad in grads.values())
    where = f"one answer with ratio {ratio} and advantage {sign:+.0f} (clip_range 0.2, beta 0)"
    if flat and moved:
        raise AssertionError(f"{where}: past the clip the loss must be flat, but {moved} parameters got a gradient")
    if not flat and not moved:
        raise AssertionError(f"{where}: this side is not clipped, yet no parameter got a gradient")


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
            f"grpo_step_loss(advantages=0, beta=0.5) = {loss.item():.5f} < 0: the k3 penalty is >= 0 and is "
            "subtracted from the objective, so it can only raise the loss"
        )
    want, _, _ = loss_and_gradients(reference.grpo_step_loss, policy, ref_policy, tokens, old_logp, zeros, beta=0.5)
    expect.same(
        loss, want, "grpo_step_loss(advantages=0, beta=0.5): beta * mean k3, k3 = exp(ref - new) - (ref - new) - 1"
    )


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
            f"grpo_step_loss(..., ref_policy=<parameters require grad>, beta=0.5): {len(reached)} of {total} "
            f"reference parameters got a gradient (first: {reached[0]}); compute the reference's log-probs without a graph"
        )


@pytest.mark.todo(3)
def test_old_log_probs_receive_no_gradient(expect, learner, reference):
    """Even an old_logp that requires grad gets no gradient from the loss

    zh: 即使 old_logp 需要梯度，损失也不会把梯度传给它
    """
    _, _, tokens, old_logp, advantages = loss_inputs(reference, 11)
    old_logp = old_logp.clone().requires_grad_(True)
    remotes = learner_policies(learner, 11)
    _, _, _, (grad,) = learner_loss_and_gradients(expect, *remotes, tokens, old_logp, advantages)
    if grad is not None and bool((grad != 0).any()):
        raise AssertionError(
            "grpo_step_loss(..., old_logp=<requires grad>): a gradient reached old_logp; it is a fixed sample: "
            "use old_logp.detach() in the ratio"
        )


# -- TODO 4: sync -------------------------------------------------------------------------------


def _differences(state: dict, snapshot: dict) -> list[str]:
    return [name for name, tensor in state.items() if not torch.equal(tensor, snapshot[name])]


def sync_fixtures(learner, policy_seed: int, old_seed: int):
    """(policy, old_policy) in the learner's process: two tiny policies, the old one frozen."""
    return learner.build("toy_grpo.tiny_policy", policy_seed), learner.build("toy_grpo.old_policy", old_seed)


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
            f"sync_old_policy(old_policy, policy) changed {len(changed)} tensors of the policy (first: {changed[0]}); "
            "the copy goes from policy into old_policy"
        )
    differ = _differences(old_policy.state(), before)
    if differ:
        raise AssertionError(
            f"after sync_old_policy(old_policy, policy), {len(differ)} tensors of old_policy still differ from the "
            f"policy's (first: {differ[0]}); update the object passed in, in place"
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
            f"after sync_old_policy, an in-place update of the policy also changed {len(moved)} tensors of "
            f"old_policy (first: {moved[0]}): they share storage; copy the values instead"
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
        raise AssertionError(f"train(seed={seed}) must return a dict with lists 'p_target' and 'informative'")
    p_target, informative = [float(p) for p in history["p_target"]], [float(i) for i in history["informative"]]
    trajectory = " ".join(f"{p:.2f}" for p in p_target)
    share = sum(informative) / max(len(informative), 1)
    report = (
        f"\n  P(target) before training and after each iteration: {trajectory}"
        f"\n  informative groups (rewards not all equal): {share:.2f} of {len(informative)} iterations, "
        f"per iteration {''.join(str(int(i)) for i in informative)}"
    )
    if not p_target or not abs(p_target[0] - 0.10) <= 0.03:  # NaN fails too
        raise AssertionError(f"train(seed={seed}): P(target) must start near 0.10 (uniform over 10 tokens){report}")
    if max(p_target[1:41], default=0.0) < 0.70:
        raise AssertionError(
            f"train(seed={seed}): P(target) went from {p_target[0]:.2f} to {p_target[-1]:.2f} and never reached 0.70 "
            f"within 40 iterations{report}"
        )


def test_rejects_inputs_outside_the_contract(expect, learner, reference):
    """Accepts valid input; rejects every bad input the lesson lists with ValueError

    zh: 接受合法输入；对课文列出的每种非法输入抛出 ValueError
    """
    expect.call("zscore_advantages", torch.tensor([1.0, 0.0, 0.0, 1.0]))  # a valid call does not raise
    _, _, tokens, old_logp, advantages = loss_inputs(reference, 16, group_size=4)
    policy, ref_policy = learner_policies(learner, 16)
    generator = torch.Generator().manual_seed(0)
    nan = float("nan")
    bad = [
        ("one reward", "zscore_advantages", (torch.tensor([1.0]),), {}),
        ("2-D rewards", "zscore_advantages", (torch.zeros(2, 2),), {}),
        ("integer rewards", "zscore_advantages", (torch.tensor([1, 0]),), {}),
        ("a NaN reward", "zscore_advantages", (torch.tensor([1.0, nan]),), {}),
        ("eps = 0", "zscore_advantages", (torch.tensor([1.0, 0.0]),), {"eps": 0.0}),
        ("eps is infinite", "zscore_advantages", (torch.tensor([1.0, 0.0]),), {"eps": float("inf")}),
        ("group_size 0", "sample_group", (policy, BOS, 0, generator), {}),
        ("bos_id outside the vocabulary", "sample_group", (policy, VOCAB_SIZE, 4, generator), {}),
        ("negative bos_id", "sample_group", (policy, -1, 4, generator), {}),
        (
            "old_logp of another shape",
            "grpo_step_loss",
            (policy, ref_policy, BOS, tokens, old_logp[:-1], advantages),
            {},
        ),
        (
            "advantages of another shape",
            "grpo_step_loss",
            (policy, ref_policy, BOS, tokens, old_logp, advantages[:2]),
            {},
        ),
        ("float tokens", "grpo_step_loss", (policy, ref_policy, BOS, tokens.float(), old_logp, advantages), {}),
        (
            "a token outside the vocabulary",
            "grpo_step_loss",
            (policy, ref_policy, BOS, tokens + VOCAB_SIZE, old_logp, advantages),
            {},
        ),
        ("a NaN old log-prob", "grpo_step_loss", (policy, ref_policy, BOS, tokens, old_logp * nan, advantages), {}),
        (
            "clip_range < 0",
            "grpo_step_loss",
            (policy, ref_policy, BOS, tokens, old_logp, advantages),
            {"clip_range": -0.1},
        ),
        (
            "beta is infinite",
            "grpo_step_loss",
            (policy, ref_policy, BOS, tokens, old_logp, advantages),
            {"beta": float("inf")},
        ),
        ("iterations 0", "train", (0,), {"iterations": 0}),
        ("group_size 1", "train", (0,), {"group_size": 1}),
        ("target_id outside the vocabulary", "train", (0,), {"target_id": VOCAB_SIZE}),
    ]
    for why, name, args, kwargs in bad:
        expect.raises_value_error(why, name, *args, **kwargs)
