"""Checks for RewardModel: freezing and the head (TODO 1), the last real token (TODO 2), and the
Bradley-Terry loss (TODO 3).

How a learner's class is compared with the reference's. RewardModel is a class, so each check
builds two models, one from the learner's class (in the learner's contestant process, a `Remote`)
and one from the reference's (here, wrapped in `Here` so that both answer the same calls), and
never shares a module between them (the constructor freezes its backbone in place):
- the backbone: a fresh tiny module per model, built by grader.builders.reward_model from the
  same seed, so both models see identical weights and the global RNG is untouched;
- the value head: each class creates its own nn.Linear(H, 1) with whatever initialisation it
  likes; `build` then checks that it is an nn.Linear(H, 1) with a bias and overwrites its weight
  and bias with one fixed seeded set. Only TODO 1's structure is graded, never its random init.
Two models built this way compute the same function, so their rewards, losses and gradients can
be compared with the reference's through `expect.same`.

Backbones (no downloads, see grader.builders.reward_model): "lesson" is the lesson's embedding
-> linear -> GELU, which reads each position on its own; "causal" is an embedding and a one-layer
GRU, where position t summarises tokens 0..t like a causal LM. Token id 0 is the padding token.

Fixtures separate the plausible ways of picking the token: batches with a full row (where
mask.sum() - 1 is the last position) and batches without one (where mask.sum() points at a pad
instead of failing), and margins of +/-1e4 where log(sigmoid(x)) underflows.
"""

from functools import partial

import pytest
import torch

from grader.builders.reward_model import PAD, VOCAB, WIDTH, make_backbone
from grader.content import seeds
from grader.content.i18n import say
from grader.judging.expect import MissingFunction, fmt, rejects_with_value_error
from grader.run.judge import Contestant, MissingName, Remote

CLASS = "RewardModel"
LENGTHS_WITH_FULL_ROW = [7, 3, 5, 1]  # T = 7: row 0 has no padding
LENGTHS_ALL_PADDED = [3, 6, 1, 4]  # T = 7: every row ends in padding
BACKBONE_ZH = {"lesson": "讲义", "causal": "因果"}  # the backbones' names in Chinese messages


class Here:
    """A reference model behind the calls the checks make of a learner's model (a `Remote`)."""

    def __init__(self, model):
        self.model = model

    def __call__(self, *args):
        return self.model(*args)

    def method(self, name: str, *args):
        return getattr(self.model, name)(*args)

    def backward(self, name: str, *args) -> dict:
        """As Remote.backward: the scalar output and the gradient of each argument that requires grad."""
        output = getattr(self.model, name)(*args)
        output.backward()
        leaves = [arg for arg in args if isinstance(arg, torch.Tensor) and arg.requires_grad]
        return {"output": output.detach(), "grads": [leaf.grad for leaf in leaves]}

    def assign(self, values: dict) -> None:
        """As Remote.assign: copy `values` in place into the named parameters."""
        parameters = dict(self.model.named_parameters())
        with torch.no_grad():
            for name, value in values.items():
                parameters[name].copy_(value)


def backbone(side, kind: str, seed: int):
    """A seeded backbone for `side`: made in the learner's contestant, or here for the reference."""
    if isinstance(side, Contestant):
        return side.build("reward_model.make_backbone", kind, seeds.number(seed))
    return make_backbone(kind, seeds.number(seed))


def construct(side, *args):
    """`side`'s RewardModel(*args): a Remote for the learner (MissingFunction without the class)."""
    if not isinstance(side, Contestant):
        return Here(getattr(side, CLASS)(*args))
    try:
        return side.new(CLASS, *args)
    except MissingName:
        raise MissingFunction(
            say(
                f"your file has no class `{CLASS}`: the checks construct it by that name",
                f"你的文件中没有类 `{CLASS}`：检查按这个名字构造它",
            )
        ) from None


def attribute(model, name: str):
    """`model.<name>`: data, or a Remote for an object; None when there is no such attribute."""
    try:
        return model.get(name, keep=True)
    except MissingName:
        return None


def head_problem(model) -> str | None:
    """Why the learner's `model.value_head` is not an nn.Linear(WIDTH, 1) with a bias, or None if it is."""
    head = attribute(model, "value_head")
    if head is None:
        return say(
            f"the model has no attribute `value_head`; expected nn.Linear({WIDTH}, 1)",
            f"模型没有属性 `value_head`；应为 `nn.Linear({WIDTH}, 1)`",
        )
    if not (isinstance(head, Remote) and head.is_a("torch.nn.Linear")):
        kind = head.type_name if isinstance(head, Remote) else type(head).__name__
        return say(
            f"value_head is a {kind}; expected nn.Linear({WIDTH}, 1)",
            f"`value_head` 是 `{kind}`；应为 `nn.Linear({WIDTH}, 1)`",
        )
    features = (head.get("in_features"), head.get("out_features"))
    if features != (WIDTH, 1):
        return say(
            f"value_head is nn.Linear({features[0]}, {features[1]}); expected nn.Linear({WIDTH}, 1)",
            f"`value_head` 是 `nn.Linear({features[0]}, {features[1]})`；应为 `nn.Linear({WIDTH}, 1)`",
        )
    if attribute(head, "bias") is None:
        return say(
            f"value_head has no bias; expected nn.Linear({WIDTH}, 1) with its default bias",
            f"`value_head` 没有偏置；应为带默认偏置的 `nn.Linear({WIDTH}, 1)`",
        )
    return None


def build(side, kind: str = "lesson", seed: int = 0, hidden_dim: int = WIDTH):
    """`side`'s RewardModel on a seeded backbone, its value head set to fixed seeded weights."""
    model = construct(side, backbone(side, kind, seed), hidden_dim)
    problem = head_problem(model) if isinstance(model, Remote) else None
    if problem:
        raise AssertionError(problem)
    generator = seeds.generator(100 + seed)
    weight = torch.randn(1, WIDTH, generator=generator)
    model.assign({"value_head.weight": weight, "value_head.bias": torch.randn(1, generator=generator)})
    return model


def holds(model: Remote, name: str, module: Remote) -> bool:
    """Whether `model.<name>` is `module` itself, not a copy: a mark written into `module`'s
    weights shows through it. (A Remote has no identity to compare; the mark stays.)"""
    held = attribute(model, name)
    if not (isinstance(held, Remote) and held.is_a("torch.nn.Module")):
        return False
    marked = {key: value + 1 for key, value in module.state().items()}
    module.assign(marked)
    now = held.state()
    return now.keys() == marked.keys() and all(torch.equal(now[key], marked[key]) for key in marked)


def grads(module: Remote) -> dict:
    """{name: its .grad or None} for every parameter of a learner's module."""
    return {name: grad for name, (_, grad) in module.params().items()}


def batch(lengths: list[int], seed: int, length: int = 7):
    """(ids, mask): seeded ids 1..VOCAB-1, right-padded with PAD to `length`; mask bool."""
    generator = seeds.generator(seed)
    ids = torch.randint(1, VOCAB, (len(lengths), length), generator=generator)
    mask = torch.arange(length) < torch.tensor(lengths).unsqueeze(-1)  # (B, T)
    return ids.masked_fill(~mask, PAD), mask


def describe(kind: str, ids, mask, lengths=None) -> str:
    rows = (
        "attention_mask=None"
        if mask is None
        else say(f"attention_mask=<rows of lengths {lengths}>", f"attention_mask=<各行长度为 {lengths}>")
    )
    name = say(f"<{kind} backbone>", f"<{BACKBONE_ZH[kind]}主干>")
    return f"{CLASS}({name}, hidden_dim={WIDTH})(input_ids={fmt(ids)}, {rows})"


def rewards_match_reference(expect, kind: str, ids, mask=None, lengths=None, seed: int = 0):
    """The learner's rewards equal the reference's for the same backbone and head; returns them."""
    got = build(expect.learner, kind, seed)(ids.clone(), None if mask is None else mask.clone())
    expected = build(expect.reference, kind, seed)(ids.clone(), None if mask is None else mask.clone())
    expect.same(got, expected, describe(kind, ids, mask, lengths))
    return got


def loss_of(model, chosen, rejected):
    """model.compute_preference_loss(chosen, rejected)."""
    return model.method("compute_preference_loss", chosen.clone(), rejected.clone())


def loss_gradients(model, chosen, rejected) -> tuple:
    """(gradient wrt chosen, gradient wrt rejected) of model.compute_preference_loss; None where none came."""
    leaves = [rewards.detach().clone().requires_grad_(True) for rewards in (chosen, rejected)]
    found = model.backward("compute_preference_loss", *leaves)["grads"]
    return tuple(found) if found else (None, None)


def backpropagate_the_rewards(model: Remote, ids, mask) -> bool:
    """Backpropagate sum(model(ids, mask)) in the learner's process; False (and no backward) when
    the rewards carry no gradient. The loss is left out: this is about where gradients flow."""
    rewards = model(ids.clone(), mask.clone())
    if not (isinstance(rewards, torch.Tensor) and rewards.requires_grad):
        return False
    model.backward(None, ids.clone(), mask.clone(), cotangent=torch.ones_like(rewards))
    return True


def loss_matches_reference(expect, chosen, rejected):
    got = loss_of(build(expect.learner), chosen, rejected)
    expected = loss_of(build(expect.reference), chosen, rejected)
    expect.same(got, expected, f"compute_preference_loss(reward_chosen={fmt(chosen)}, reward_rejected={fmt(rejected)})")
    return got


# -- TODO 1: the frozen backbone and the value head ---------------------------------------------------


@pytest.mark.todo(1)
def test_value_head_is_a_linear_layer_to_one_number(expect):
    """value_head is an nn.Linear(hidden_dim, 1) with a bias

    zh: `value_head` 是带偏置的 `nn.Linear(hidden_dim, 1)`
    """
    model = construct(expect.learner, backbone(expect.learner, "lesson", 0), WIDTH)
    problem = head_problem(model)
    if problem:
        raise AssertionError(problem)


@pytest.mark.todo(1)
def test_backbone_is_frozen_and_only_the_head_trains(expect):
    """Every backbone parameter has requires_grad False; the trainable ones are the head's

    zh: `backbone` 的每个参数 `requires_grad` 为 False；可训练参数只有 `value_head` 的
    """
    given = backbone(expect.learner, "causal", 0)
    model = construct(expect.learner, given, WIDTH)
    if not holds(model, "backbone", given):
        raise AssertionError(
            say(
                "model.backbone must be the backbone module passed to RewardModel(backbone, hidden_dim)",
                "`model.backbone` 必须就是传给 `RewardModel(backbone, hidden_dim)` 的那个主干模块",
            )
        )
    training = [name for name, (requires_grad, _) in given.params().items() if requires_grad]
    if training:
        raise AssertionError(
            say(
                f"backbone parameters that still have requires_grad=True: {', '.join(training)}; "
                "freeze them all (no_grad covers only the given forward: any pass outside it computes their "
                "gradients, and an optimizer over model.parameters() then updates them)",
                f"主干中仍然 `requires_grad=True` 的参数：{'、'.join(f'`{name}`' for name in training)}；"
                "请把它们全部冻结（no_grad 只管给定的那次前向：在它之外的任何计算都会算出它们的梯度，"
                "作用于 `model.parameters()` 的优化器随后就会更新它们）",
            )
        )
    trainable = sorted(name for name, (requires_grad, _) in model.params().items() if requires_grad)
    if trainable != ["value_head.bias", "value_head.weight"]:
        raise AssertionError(
            say(
                f"trainable parameters: {trainable}; expected only ['value_head.bias', 'value_head.weight']",
                f"可训练参数：{trainable}；应当只有 ['value_head.bias', 'value_head.weight']",
            )
        )


@pytest.mark.todo(1)
def test_after_backward_only_the_head_has_gradients(expect):
    """After backpropagating the rewards the backbone has no gradient and the head's weight has one

    zh: 对奖励反向传播之后，主干没有梯度，而价值头的权重有梯度
    """
    model = build(expect.learner, "causal", 1)
    if not backpropagate_the_rewards(model, *batch(LENGTHS_ALL_PADDED, seed=11)):
        raise AssertionError(
            say(
                "the rewards carry no gradient: they must come from value_head, outside no_grad",
                "奖励不带梯度：它们必须来自 `value_head`，并且在 `no_grad` 之外计算",
            )
        )
    backbone_grads = grads(model.get("backbone", keep=True))
    reached = [name for name, grad in backbone_grads.items() if grad is not None and bool((grad != 0).any())]
    if reached:
        raise AssertionError(
            say(
                f"gradient reached backbone parameters: {', '.join(reached)}; the backbone is frozen",
                f"梯度传到了主干参数：{'、'.join(f'`{name}`' for name in reached)}；主干是冻结的",
            )
        )
    weight_grad = grads(model.get("value_head", keep=True))["weight"]
    if weight_grad is None or not bool((weight_grad != 0).any()):
        raise AssertionError(
            say(
                "value_head.weight received no gradient: the head is what this model trains",
                "`value_head.weight` 没有得到梯度：这个模型训练的正是这个头",
            )
        )


# -- TODO 2: the last real token -----------------------------------------------------------------------


@pytest.mark.todo(2)
def test_rewards_match_reference_without_a_mask(expect):
    """Without a mask every position is real: the reward is read at the last position

    zh: 不给 `mask` 时每个位置都是真实 token：在最后一个位置读取奖励
    """
    ids, _ = batch([7, 7, 7, 7], seed=0)
    rewards_match_reference(expect, "lesson", ids)


@pytest.mark.todo(2)
def test_rewards_match_reference_with_right_padding(expect):
    """With ragged right padding each row is read at its own last real token (bool or 0/1 mask)

    zh: 右侧填充（padding）长短不一时，每行在自己的最后一个真实 token 处读取（bool 或 0/1 掩码）
    """
    ids, mask = batch(LENGTHS_WITH_FULL_ROW, seed=1)
    rewards = rewards_match_reference(expect, "causal", ids, mask, LENGTHS_WITH_FULL_ROW)
    with_ints = build(expect.learner, "causal")(ids.clone(), mask.long())
    with_a_mask = say(" with a 0/1 int64 mask", "，掩码为 0/1 的 `int64`")
    expect.same(with_ints, rewards, describe("causal", ids, mask, LENGTHS_WITH_FULL_ROW) + with_a_mask)


@pytest.mark.todo(2)
def test_padding_after_the_last_real_token_changes_nothing(expect):
    """Changing the ids at padded positions leaves every reward unchanged (causal backbone)

    zh: 修改填充位置的 id 不改变任何奖励（因果 backbone）
    """
    ids, mask = batch(LENGTHS_ALL_PADDED, seed=2)
    model = build(expect.learner, "causal", 2)
    before = model(ids.clone(), mask.clone())
    noise = torch.randint(1, VOCAB, ids.shape, generator=seeds.generator(20))
    after = model(torch.where(mask, ids, noise), mask.clone())
    expect.same(
        after,
        before,
        describe("causal", ids, mask, LENGTHS_ALL_PADDED)
        + say(
            "\n  changing only the padded ids must not change the rewards (expected: before, got: after)",
            "\n  只改动填充位置的 id 不应改变奖励（期望值取改动前的，实际值取改动后的）",
        ),
    )


@pytest.mark.todo(2)
def test_reward_reads_only_the_last_real_token(expect):
    """With a per-position backbone, changing every token but the last real one changes nothing

    zh: 用逐位置的主干时，除最后一个真实 token 外改动任何 token 都不改变奖励
    """
    ids, mask = batch(LENGTHS_ALL_PADDED, seed=3)
    model = build(expect.learner, "lesson", 3)
    before = model(ids.clone(), mask.clone())
    last = torch.tensor(LENGTHS_ALL_PADDED).unsqueeze(-1) - 1  # (B, 1)
    keep = torch.arange(ids.shape[1]) == last  # (B, T), True only at each row's last real token
    changed = torch.where(keep, ids, (ids + 5) % VOCAB)
    after = model(changed, mask.clone())
    expect.same(
        after,
        before,
        describe("lesson", ids, mask, LENGTHS_ALL_PADDED)
        + say(
            "\n  changing every token but the last real one must not change the rewards (expected: before, got: after)",
            "\n  改动最后一个真实 token 以外的所有 token 不应改变奖励（期望值取改动前的，实际值取改动后的）",
        ),
    )


@pytest.mark.todo(2)
def test_one_sequence_gives_rewards_of_shape_1(expect):
    """A batch of one sequence gives rewards of shape (1,), not a 0-D tensor (shapes compared)

    zh: 只有一条序列的批次得到形状为 (1,) 的奖励，而不是 0 维张量（只比较形状）
    """
    ids, mask = batch([4], seed=7)
    got = build(expect.learner, "causal", 7)(ids.clone(), mask.clone())
    expected = build(expect.reference, "causal", 7)(ids.clone(), mask.clone())
    expect.same(got, expected, describe("causal", ids, mask, [4]), values=False)


# -- TODO 3: the Bradley-Terry loss ------------------------------------------------------------------


@pytest.mark.todo(3)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_loss_matches_reference(expect, dtype):
    """The loss matches the reference on seeded rewards, in the rewards' dtype

    zh: 在带种子的奖励上，损失与参考答案一致，且 dtype 与奖励相同
    """
    generator = seeds.generator(4)
    chosen = (2.0 * torch.randn(6, generator=generator)).to(dtype)
    rejected = (2.0 * torch.randn(6, generator=generator)).to(dtype)
    loss_matches_reference(expect, chosen, rejected)


@pytest.mark.todo(3)
def test_equal_rewards_give_log_2(expect):
    """Equal rewards mean a coin flip: the loss is log 2 = 0.693147, whatever the batch size

    zh: 奖励相等即抛硬币：损失为 log 2 = 0.693147，与批大小无关
    """
    rewards = torch.tensor([0.3, -1.2, 2.0, 0.0, 5.0])
    loss = loss_of(build(expect.learner), rewards, rewards.clone())
    if not isinstance(loss, torch.Tensor) or loss.ndim != 0:
        raise AssertionError(
            say(
                f"compute_preference_loss returned {fmt(loss)}; expected a scalar tensor",
                f"`compute_preference_loss` 返回了 {fmt(loss)}；应为标量张量",
            )
        )
    if not abs(loss.item() - 0.693147) <= 1e-5:  # NaN fails too
        raise AssertionError(
            say(
                f"5 pairs of equal rewards: expected log 2 = 0.693147, got {loss.item():.6f}",
                f"5 对奖励相等的偏好对：应为 log 2 = 0.693147，实际为 {loss.item():.6f}",
            )
        )


@pytest.mark.todo(3)
def test_loss_is_finite_for_huge_margins(expect):
    """Margins of +1e4, -1e4 and 2 give the finite reference loss (no log of 0)

    zh: 间隔（margin）为 +1e4、-1e4 和 2 时得到有限的参考损失（不会对 0 取 log）
    """
    chosen = torch.tensor([1e4, 0.0, 3.0])
    rejected = torch.tensor([0.0, 1e4, 1.0])
    loss = loss_of(build(expect.learner), chosen, rejected)
    if isinstance(loss, torch.Tensor) and loss.ndim == 0 and not bool(torch.isfinite(loss)):
        raise AssertionError(
            say(
                f"margins [1e4, -1e4, 2]: the loss is {loss.item()}, expected about 3333.3757; "
                "log(sigmoid(x)) underflows to log(0) for very negative x",
                f"间隔（margin）为 [1e4, -1e4, 2]：损失为 {loss.item()}，应约为 3333.3757；"
                "x 为很大的负数时，`log(sigmoid(x))` 会下溢成 `log(0)`",
            )
        )
    loss_matches_reference(expect, chosen, rejected)


@pytest.mark.todo(3)
def test_gradient_raises_chosen_and_lowers_rejected(expect):
    """Gradient descent raises each chosen reward and lowers each rejected one, by the reference's amounts

    zh: 梯度下降提高每个被选回答的奖励、降低每个被拒回答的奖励，幅度与参考答案一致
    """
    generator = seeds.generator(5)
    chosen, rejected = torch.randn(5, generator=generator), torch.randn(5, generator=generator)
    chosen_grad, rejected_grad = loss_gradients(build(expect.learner), chosen, rejected)
    if chosen_grad is None or rejected_grad is None:
        raise AssertionError(
            say(
                "no gradient reached the rewards: the loss was not computed from them with differentiable ops",
                "梯度没有传到奖励：损失不是用可微的运算从奖励算出的",
            )
        )
    if not bool((chosen_grad < 0).all() and (rejected_grad > 0).all()):
        raise AssertionError(
            say(
                "d loss / d reward_chosen must be < 0 and d loss / d reward_rejected > 0 for every pair, "
                f"got {fmt(chosen_grad)} and {fmt(rejected_grad)}",
                "对每个偏好对，d loss / d reward_chosen 必须 < 0，d loss / d reward_rejected 必须 > 0，"
                f"实际为 {fmt(chosen_grad)} 和 {fmt(rejected_grad)}",
            )
        )
    want_chosen, want_rejected = loss_gradients(build(expect.reference), chosen, rejected)
    call = f"compute_preference_loss(reward_chosen={fmt(chosen)}, reward_rejected={fmt(rejected)})"
    for got, want, name in (
        (chosen_grad, want_chosen, "reward_chosen"),
        (rejected_grad, want_rejected, "reward_rejected"),
    ):
        expect.same(
            got,
            want,
            say(f"{call}\n  gradient of the loss with respect to `{name}`", f"{call}\n  损失对 `{name}` 的梯度"),
        )


# -- the input contract ------------------------------------------------------------------------------


def raises_value_error(why: str, what: str, fn, *args) -> None:
    """`fn(*args)` must raise ValueError: expect.raises_value_error for a method."""
    rejects_with_value_error(why, what, lambda: fn(*args))


def test_rejects_inputs_outside_the_contract(expect):
    """Accepts valid input; rejects every bad input the lesson lists with ValueError

    zh: 接受合法输入；对讲义列出的每种非法输入抛出 ValueError
    """
    ids, mask = batch(LENGTHS_ALL_PADDED, seed=6)
    chosen, rejected = torch.tensor([1.0, -0.5, 2.0, 0.3]), torch.tensor([0.2, 0.4, -1.0, 0.3])
    model = build(expect.learner, "causal", 6)
    model(ids.clone(), mask.clone())  # valid calls do not raise; their values are other checks' work
    loss_of(model, chosen, rejected)

    empty_row = mask.clone()
    empty_row[2] = False
    constructor = f"{CLASS}(backbone, hidden_dim)"
    for why, args in [
        ("hidden_dim = 0", (backbone(expect.learner, "lesson", 0), 0)),
        (
            say("a backbone that is not an nn.Module", "主干不是 `nn.Module`"),
            (expect.learner.build("reward_model.not_a_module"), WIDTH),
        ),
    ]:
        raises_value_error(why, constructor, construct, expect.learner, *args)
    call = describe("causal", ids, mask, LENGTHS_ALL_PADDED)
    for why, args in [
        (say("attention_mask of another shape", "`attention_mask` 的形状不同"), (ids, mask[:, :-1])),
        (say("a row with no real token", "某一行没有真实 token"), (ids, empty_row)),
        (say("left padding instead of right padding", "用了左侧填充而不是右侧填充"), (ids, mask.flip(-1))),
        (say("a mask value other than 0 and 1", "掩码中有 0 和 1 以外的值"), (ids, 2 * mask.long())),
        (say("1-D input_ids", "`input_ids` 是一维的"), (ids[0], None)),
        (say("float input_ids", "`input_ids` 是浮点数"), (ids.float(), None)),
    ]:
        raises_value_error(why, call, model, *args)
    wide = construct(expect.learner, backbone(expect.learner, "causal", 6), WIDTH + 1)
    raises_value_error(
        say("hidden_dim differs from the backbone's width", "`hidden_dim` 与主干的宽度不同"),
        say(f"{call} with hidden_dim={WIDTH + 1}", f"{call}（hidden_dim={WIDTH + 1}）"),
        wide,
        ids,
    )
    loss_text = "compute_preference_loss(reward_chosen, reward_rejected)"
    for why, args in [
        (say("mismatched reward shapes", "奖励的形状不匹配"), (chosen, rejected[:-1])),
        (say("rewards of shape (B, 1)", "奖励的形状为 (B, 1)"), (chosen.unsqueeze(-1), rejected.unsqueeze(-1))),
        (say("no pairs at all", "一个偏好对也没有"), (chosen[:0], rejected[:0])),
    ]:
        raises_value_error(why, loss_text, partial(model.method, "compute_preference_loss"), *args)
