"""Checks for LoRALinear: the frozen base and the adapter's initialisation (TODO 1), the scaling
(TODO 2), the forward (TODO 3), merge (TODO 4) and unmerge (TODO 5).

How a learner's class is compared. LoRALinear is a class, so each check builds a model from the
learner's class (in the learner's contestant process, a `Remote`) and, where it compares with
the reference, one from the reference's (here, wrapped in `Here` so that both answer the same
calls). Never is a module shared between them (the constructor freezes its base in place):
- the base: a fresh nn.Linear per model, built by grader.builders.lora from the same seed, so
  both see identical weights and the global RNG is untouched;
- the adapter: only TODO 1's checks look at the learner's own initialisation (shapes, B = 0, the
  Kaiming bound, the draw from a seed); every other check overwrites lora_A.weight and
  lora_B.weight with one fixed seeded set, B nonzero, so only the computation is compared.

Each TODO is tested in isolation: the forward, merge and unmerge checks compute what they expect
from the learner's own `scaling` (TODO 2's result), the merged forward from whatever base weight
the learner's merge() left, and unmerge() from whatever weight merge() left. The merge checks use
a square layer, where an update added transposed gives wrong values instead of a shape error.
No check calls merge() twice or unmerge() before merge(): that is given code, and its warning
would print into the report; conformance/test_peft_lora.py compares it with peft's.
"""

import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from grader.builders.lora import make_linear
from grader.content import seeds
from grader.content.i18n import say
from grader.judging.expect import MissingFunction, fmt, rejects_with_value_error
from grader.run.judge import Contestant, MissingName, Remote

CLASS = "LoRALinear"
IN, OUT, R, ALPHA = 6, 5, 3, 6.0  # the usual layer: not square, scaling 2
SQUARE = 6  # the merge checks' layer: 6 x 6


class Here:
    """A reference model behind the calls the checks make of a learner's model (a `Remote`)."""

    def __init__(self, model):
        self.model = model

    def __call__(self, *args):
        return self.model(*args)

    def method(self, name: str, *args, keep: bool = False):
        return getattr(self.model, name)(*args)

    def get(self, name: str, keep: bool = False):
        return getattr(self.model, name)

    def state(self) -> dict:
        return {key: value.detach().clone() for key, value in self.model.state_dict().items()}

    def params(self) -> dict:
        return {name: (p.requires_grad, p.grad) for name, p in self.model.named_parameters()}

    def backward(self, name, *args, cotangent=None) -> None:
        (self.model(*args) * cotangent).sum().backward()

    def assign(self, values: dict) -> None:
        """As Remote.assign: copy `values` in place into the named parameters."""
        parameters = dict(self.model.named_parameters())
        with torch.no_grad():
            for name, value in values.items():
                parameters[name].copy_(value)


def base_layer(side, in_features: int, out_features: int, seed: int):
    """A seeded nn.Linear for `side`: made in the learner's contestant, or here for the reference."""
    if isinstance(side, Contestant):
        return side.build("lora.make_linear", in_features, out_features, seeds.number(seed))
    return make_linear(in_features, out_features, seeds.number(seed))


def construct(side, *args):
    """`side`'s LoRALinear(*args): a Remote for the learner (MissingFunction without the class)."""
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


def linear_problem(model, name: str, in_features: int, out_features: int) -> str | None:
    """Why the learner's `model.<name>` is not an nn.Linear(in_features, out_features) without bias, or None."""
    want = f"nn.Linear({in_features}, {out_features}, bias=False)"
    layer = attribute(model, name)
    if layer is None:
        return say(f"the model has no attribute `{name}`; expected {want}", f"模型没有属性 `{name}`；应为 `{want}`")
    if not (isinstance(layer, Remote) and layer.is_a("torch.nn.Linear")):
        kind = layer.type_name if isinstance(layer, Remote) else type(layer).__name__
        return say(f"{name} is a {kind}; expected {want}", f"`{name}` 是 `{kind}`；应为 `{want}`")
    features = (layer.get("in_features"), layer.get("out_features"))
    if features != (in_features, out_features):
        return say(
            f"{name} is nn.Linear({features[0]}, {features[1]}); expected {want}",
            f"`{name}` 是 `nn.Linear({features[0]}, {features[1]})`；应为 `{want}`",
        )
    if attribute(layer, "bias") is not None:
        return say(f"{name} has a bias; expected {want}", f"`{name}` 带有偏置；应为 `{want}`")
    return None


def adapter_problem(model, in_features: int, out_features: int, r: int) -> str | None:
    """Why the learner's lora_A and lora_B are not nn.Linear(d_in, r) and nn.Linear(r, d_out) without bias, or None."""
    return linear_problem(model, "lora_A", in_features, r) or linear_problem(model, "lora_B", r, out_features)


def adapter_weights(seed: int, in_features: int, out_features: int, r: int = R):
    """(A (r, d_in), B (d_out, r)): fixed seeded adapter weights, B nonzero."""
    generator = seeds.generator(100 + seed)
    return 0.5 * torch.randn(r, in_features, generator=generator), 0.5 * torch.randn(
        out_features, r, generator=generator
    )


def build(side, in_features=IN, out_features=OUT, r=R, alpha=ALPHA, dropout=0.0, use_rslora=False, seed=0):
    """(`side`'s LoRALinear on a seeded base, A, B): its adapter set to fixed seeded weights."""
    model = construct(side, base_layer(side, in_features, out_features, seed), r, alpha, dropout, use_rslora)
    problem = adapter_problem(model, in_features, out_features, r) if isinstance(model, Remote) else None
    if problem:
        raise AssertionError(problem)
    A, B = adapter_weights(seed, in_features, out_features, r)
    model.assign({"lora_A.weight": A, "lora_B.weight": B})
    return model, A, B


def scaling_of(model) -> float:
    """The learner's `model.scaling` as a float (a number or a one-element tensor)."""
    value = attribute(model, "scaling")
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise AssertionError(
            say(
                f"model.scaling is {fmt(value)}; expected a number (alpha / r)",
                f"`model.scaling` 是 {fmt(value)}；应为一个数（alpha / r）",
            )
        )
    return float(value)


def base_weights(model) -> tuple[torch.Tensor, torch.Tensor]:
    """(base.weight, base.bias) of the learner's model, as they are now."""
    state = model.state()
    if "base.weight" not in state or "base.bias" not in state:
        raise AssertionError(
            say(
                "the model's state has no base.weight and base.bias: keep the given layer as `self.base`",
                "模型的状态中没有 `base.weight` 和 `base.bias`：请把传入的层保存为 `self.base`",
            )
        )
    return state["base.weight"], state["base.bias"]


def inputs(seed: int, *shape) -> torch.Tensor:
    return torch.randn(*shape, generator=seeds.generator(seed))


def describe(in_features=IN, out_features=OUT, r=R, alpha=ALPHA, dropout=0.0, use_rslora=False) -> str:
    options = f", dropout={dropout}" if dropout else ""
    options += ", use_rslora=True" if use_rslora else ""
    layer = f"nn.Linear({in_features}, {out_features})"
    return f"{CLASS}({layer}, r={r}, alpha={alpha}{options})"


def lora_forward(x, weight, bias, A, B, scaling, dropped=None):
    """The formula: x W^T + b + (dropout(x) A^T B^T) * scaling, `dropped` the dropped-out x (x without dropout)."""
    lora_input = x if dropped is None else dropped
    return F.linear(x, weight, bias) + (lora_input @ A.T @ B.T) * scaling


# -- TODO 1: the frozen base and the adapter -------------------------------------------------------------


@pytest.mark.todo(1)
def test_adapter_shapes_and_b_starts_at_zero(expect):
    """lora_A is nn.Linear(d_in, r) and lora_B nn.Linear(r, d_out), both without bias; B starts at zero, A does not

    zh: `lora_A` 是 `nn.Linear(d_in, r)`，`lora_B` 是 `nn.Linear(r, d_out)`，都没有偏置；B 初始为零，A 不是
    """
    model = construct(expect.learner, base_layer(expect.learner, IN, OUT, 0), R, ALPHA)
    problem = adapter_problem(model, IN, OUT, R)
    if problem:
        raise AssertionError(problem)
    state = model.state()
    if bool((state["lora_B.weight"] != 0).any()):
        raise AssertionError(
            say(
                f"{describe()}: lora_B.weight starts nonzero; it must start at zero, so that B A = 0 and "
                "the new layer computes exactly what the base does",
                f"{describe()}：`lora_B.weight` 初始不为零；它必须从零开始，这样 B A = 0，新层算出的正好是基础层的结果",
            )
        )
    if not bool((state["lora_A.weight"] != 0).any()):
        raise AssertionError(
            say(
                f"{describe()}: lora_A.weight is all zeros; with B = 0 too, no gradient reaches either "
                "(dL/dB is a function of A, dL/dA of B) and the adapter never trains",
                f"{describe()}：`lora_A.weight` 全为零；B 也为零时两者都得不到梯度"
                "（dL/dB 取决于 A，dL/dA 取决于 B），适配器永远训练不起来",
            )
        )


def kaiming_draws(seed: int, in_features: int, r: int, out_features: int) -> list[torch.Tensor]:
    """The A a correct constructor holds after torch.manual_seed(seed): nn.Linear's own initialisation
    is this Kaiming-uniform, so A is its first draw, or a second draw right after it, or one after
    lora_B's (peft's order: both layers, then kaiming_uniform_ on A). Each draw is one uniform_."""

    def last_of(*shapes):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            draws = [nn.init.kaiming_uniform_(torch.empty(shape), a=math.sqrt(5)) for shape in shapes]
        return draws[-1]

    a_shape, b_shape = (r, in_features), (out_features, r)
    return [last_of(a_shape), last_of(a_shape, a_shape), last_of(a_shape, b_shape, a_shape)]


@pytest.mark.todo(1)
def test_a_is_kaiming_uniform_and_drawn_from_the_seed(expect):
    """lora_A.weight fills U(-1/sqrt(d_in), 1/sqrt(d_in)) (Kaiming-uniform, a = sqrt(5)) and, after the same torch.manual_seed, equals the reference's draw

    zh: `lora_A.weight` 铺满 U(-1/sqrt(d_in), 1/sqrt(d_in))（Kaiming 均匀初始化，a = sqrt(5)），且在相同的 `torch.manual_seed` 之后与参考答案抽到的值相同
    """
    wide, r = 64, 8
    bound = 1 / math.sqrt(wide)
    base = base_layer(expect.learner, wide, OUT, 1)
    seed = seeds.number(11)
    expect.learner.manual_seed(seed)
    model = construct(expect.learner, base, r, ALPHA)
    problem = adapter_problem(model, wide, OUT, r)
    if problem:
        raise AssertionError(problem)
    A = model.state()["lora_A.weight"].double()
    largest = A.abs().max().item()
    where = describe(wide, OUT, r)
    if largest > bound * (1 + 1e-6) or largest < 0.9 * bound:
        raise AssertionError(
            say(
                f"{where}: the largest |lora_A.weight| is {largest:.4f}; Kaiming-uniform with a = sqrt(5) "
                f"draws from U(-b, b), b = 1/sqrt(in_features) = {bound:.4f}, so {r * wide} draws reach "
                f"close to {bound:.4f} and never past it",
                f"{where}：最大的 |lora_A.weight| 为 {largest:.4f}；a = sqrt(5) 的 Kaiming 均匀初始化从 U(-b, b) 中抽取，"
                f"b = 1/sqrt(in_features) = {bound:.4f}，所以 {r * wide} 个值会接近 {bound:.4f}，但不会超过它",
            )
        )
    std, want = A.std().item(), bound / math.sqrt(3)
    if abs(std - want) > 0.1 * want:
        raise AssertionError(
            say(
                f"{where}: lora_A.weight has standard deviation {std:.4f}; U(-b, b) with b = {bound:.4f} "
                f"has b / sqrt(3) = {want:.4f}",
                f"{where}：`lora_A.weight` 的标准差为 {std:.4f}；b = {bound:.4f} 的 U(-b, b) 的标准差是 b / sqrt(3) = {want:.4f}",
            )
        )
    if not any(torch.equal(A.float(), draw) for draw in kaiming_draws(seed, wide, r, OUT)):
        raise AssertionError(
            say(
                f"{where}: after torch.manual_seed, lora_A.weight is not the reference's draw from that seed; "
                "draw A from torch's global generator with nn.init.kaiming_uniform_(weight, a=math.sqrt(5)) "
                "(nn.Linear's own initialisation is that same draw)",
                f"{where}：在 `torch.manual_seed` 之后，`lora_A.weight` 不是参考答案用这个种子抽到的值；"
                "请用 torch 的全局生成器抽取 A：`nn.init.kaiming_uniform_(weight, a=math.sqrt(5))`"
                "（`nn.Linear` 自己的初始化也正是这样抽取的）",
            )
        )


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


@pytest.mark.todo(1)
def test_base_is_frozen_and_only_a_and_b_train(expect):
    """model.base is the layer given, its weight and bias frozen; the trainable parameters are exactly lora_A.weight and lora_B.weight

    zh: `model.base` 就是传入的层，其权重和偏置被冻结；可训练参数恰好是 `lora_A.weight` 和 `lora_B.weight`
    """
    given = base_layer(expect.learner, IN, OUT, 2)
    model = construct(expect.learner, given, R, ALPHA)
    if not holds(model, "base", given):
        raise AssertionError(
            say(
                f"model.base must be the nn.Linear passed to {CLASS}(base, r, alpha)",
                f"`model.base` 必须就是传给 `{CLASS}(base, r, alpha)` 的那个 `nn.Linear`",
            )
        )
    training = [name for name, (requires_grad, _) in given.params().items() if requires_grad]
    if training:
        raise AssertionError(
            say(
                f"base parameters that still have requires_grad=True: {', '.join(training)}; freeze them: "
                "an optimizer over model.parameters() would update the pretrained weights, and the "
                "memory LoRA saves (their gradients and optimizer states) is spent again",
                f"基础层中仍然 `requires_grad=True` 的参数：{'、'.join(f'`{name}`' for name in training)}；"
                "请冻结它们：作用于 `model.parameters()` 的优化器会更新预训练权重，"
                "LoRA 省下的显存（它们的梯度和优化器状态）又被花掉了",
            )
        )
    trainable = sorted(name for name, (requires_grad, _) in model.params().items() if requires_grad)
    if trainable != ["lora_A.weight", "lora_B.weight"]:
        raise AssertionError(
            say(
                f"trainable parameters: {trainable}; expected only ['lora_A.weight', 'lora_B.weight']",
                f"可训练参数：{trainable}；应当只有 ['lora_A.weight', 'lora_B.weight']",
            )
        )


@pytest.mark.todo(1)
def test_no_gradient_reaches_the_base(expect):
    """After a backward through the layer the base's weight and bias have no gradient

    zh: 对该层反向传播之后，基础层的权重和偏置没有梯度
    """
    model, _, _ = build(expect.learner, seed=3)
    x = inputs(30, 4, IN)
    model.backward(None, x, cotangent=inputs(31, 4, OUT))
    reached = [
        name
        for name, (_, grad) in model.params().items()
        if name.startswith("base.") and grad is not None and bool((grad != 0).any())
    ]
    if reached:
        raise AssertionError(
            say(
                f"gradient reached base parameters: {', '.join(reached)}; the base is frozen",
                f"梯度传到了基础层参数：{'、'.join(f'`{name}`' for name in reached)}；基础层是冻结的",
            )
        )


# -- TODO 2: the scaling -------------------------------------------------------------------------------------


def scaling_problem(expect, r: int, alpha: float, use_rslora: bool, want: float, rule: str) -> None:
    model = construct(expect.learner, base_layer(expect.learner, IN, OUT, 4), r, alpha, 0.0, use_rslora)
    got = scaling_of(model)
    if not abs(got - want) <= 1e-9 * abs(want):
        where = describe(IN, OUT, r, alpha, use_rslora=use_rslora)
        raise AssertionError(
            say(
                f"{where}: scaling is {got:.6g}; expected {rule} = {want:.6g}",
                f"{where}：`scaling` 为 {got:.6g}；应为 {rule} = {want:.6g}",
            )
        )


@pytest.mark.todo(2)
@pytest.mark.parametrize(("r", "alpha"), [(4, 8.0), (16, 8.0), (1, 3.0)], ids=["r4-alpha8", "r16-alpha8", "r1"])
def test_scaling_is_alpha_over_r(expect, r, alpha):
    """Without rsLoRA the update is scaled by alpha / r

    zh: 不用 rsLoRA 时，更新量的缩放系数为 alpha / r
    """
    scaling_problem(expect, r, alpha, False, alpha / r, "alpha / r")


@pytest.mark.todo(2)
def test_rslora_scaling_is_alpha_over_sqrt_r(expect):
    """With rsLoRA the update is scaled by alpha / sqrt(r): r = 16, alpha = 8 gives 2

    zh: 使用 rsLoRA 时，更新量的缩放系数为 alpha / sqrt(r)：r = 16、alpha = 8 时为 2
    """
    scaling_problem(expect, 16, 8.0, True, 2.0, say("alpha / sqrt(r) with rsLoRA", "rsLoRA 的 alpha / sqrt(r)"))


# -- TODO 3: the forward -------------------------------------------------------------------------------------


@pytest.mark.todo(3)
@pytest.mark.parametrize("shape", [(4, IN), (2, 3, IN)], ids=["2d", "3d"])
def test_forward_is_the_base_plus_the_scaled_update(expect, shape):
    """With A and B set, forward(x) = base(x) + (x A^T B^T) * scaling, for inputs of shape (N, d_in) and (B, T, d_in)

    zh: 设定 A 和 B 之后，forward(x) = base(x) + (x A^T B^T) * scaling，输入形状为 (N, d_in) 和 (B, T, d_in)
    """
    model, A, B = build(expect.learner, seed=5)
    weight, bias = base_weights(model)
    x = inputs(50, *shape)
    want = lora_forward(x, weight, bias, A, B, scaling_of(model))
    expect.same(model(x.clone()), want, f"{describe()}(x={fmt(x)})")


@pytest.mark.todo(3)
def test_dropout_acts_on_the_lora_input_only(expect):
    """In train mode, dropout (seeded) drops entries of the LoRA path's input; the base sees x itself

    zh: 训练模式下，（带种子的）随机失活（dropout）只丢弃 LoRA 支路输入中的元素；基础层看到的是 x 本身
    """
    model, A, B = build(expect.learner, dropout=0.5, seed=6)
    weight, bias = base_weights(model)
    x = inputs(60, 4, IN)
    seed = seeds.number(61)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        dropped = F.dropout(x, p=0.5, training=True)  # (N, d_in): what nn.Dropout(0.5) draws after that seed
    expect.learner.manual_seed(seed)
    got = model(x.clone())
    want = lora_forward(x, weight, bias, A, B, scaling_of(model), dropped)
    expect.same(
        got,
        want,
        say(
            f"{describe(dropout=0.5)}(x={fmt(x)}) in train mode, after torch.manual_seed: "
            "expected base(x) + (dropout(x) A^T B^T) * scaling",
            f"{describe(dropout=0.5)}(x={fmt(x)})，训练模式，在 `torch.manual_seed` 之后："
            "应为 base(x) + (dropout(x) A^T B^T) * scaling",
        ),
    )


@pytest.mark.todo(3)
def test_dropout_is_the_identity_in_eval_mode(expect):
    """After model.eval(), dropout = 0.5 changes nothing: forward(x) = base(x) + (x A^T B^T) * scaling

    zh: 调用 `model.eval()` 之后，dropout = 0.5 不起作用：forward(x) = base(x) + (x A^T B^T) * scaling
    """
    model, A, B = build(expect.learner, dropout=0.5, seed=7)
    model.method("eval", keep=True)
    weight, bias = base_weights(model)
    x = inputs(70, 4, IN)
    want = lora_forward(x, weight, bias, A, B, scaling_of(model))
    expect.same(
        model(x.clone()),
        want,
        say(f"{describe(dropout=0.5)}.eval()(x={fmt(x)})", f"{describe(dropout=0.5)}.eval()(x={fmt(x)})"),
    )


@pytest.mark.todo(3)
def test_merged_forward_is_the_base_alone(expect):
    """After merge() the update is inside base.weight: forward(x) is the base layer alone, the update not added again

    zh: `merge()` 之后更新量已在 `base.weight` 中：forward(x) 只是基础层的输出，不再加一次更新量
    """
    model, _, _ = build(expect.learner, SQUARE, SQUARE, seed=8)
    model.method("merge")
    weight, bias = base_weights(model)  # whatever merge() left in the base: TODO 4's checks judge that
    x = inputs(80, 4, SQUARE)
    expect.same(
        model(x.clone()),
        F.linear(x, weight, bias),
        say(
            f"{describe(SQUARE, SQUARE)}, merged, (x={fmt(x)}): expected base(x) with the merged weight, nothing added",
            f"{describe(SQUARE, SQUARE)}，已合并，(x={fmt(x)})：应为用合并后权重算出的 base(x)，不再加任何东西",
        ),
    )


# -- TODO 4: merge -------------------------------------------------------------------------------------------


@pytest.mark.todo(4)
def test_merge_adds_the_scaled_update_into_the_base_weight(expect):
    """merge() adds (B A) * scaling, shape (d_out, d_in), into base.weight; the bias stays

    zh: `merge()` 把形状为 (d_out, d_in) 的 (B A) * scaling 加进 `base.weight`；偏置不变
    """
    model, A, B = build(expect.learner, SQUARE, SQUARE, seed=9)
    weight, bias = base_weights(model)
    model.method("merge")
    merged, merged_bias = base_weights(model)
    where = f"{describe(SQUARE, SQUARE)}.merge()"
    expect.same(
        merged,
        weight + (B @ A) * scaling_of(model),
        say(f"{where}: base.weight, expected W + (B A) * scaling", f"{where}：`base.weight`，应为 W + (B A) * scaling"),
    )
    expect.same(merged_bias, bias, say(f"{where}: base.bias, unchanged", f"{where}：`base.bias`，应保持不变"))


# -- TODO 5: unmerge -----------------------------------------------------------------------------------------


@pytest.mark.todo(5)
def test_unmerge_subtracts_the_scaled_update_from_the_base_weight(expect):
    """unmerge() of a merged layer subtracts (B A) * scaling from base.weight

    zh: 对已合并的层，`unmerge()` 从 `base.weight` 中减去 (B A) * scaling
    """
    model, A, B = build(expect.learner, SQUARE, SQUARE, seed=10)
    where = f"{describe(SQUARE, SQUARE)}"
    model.method("merge")
    merged, _ = base_weights(model)  # whatever merge() added: TODO 4's checks judge that
    model.method("unmerge")
    expect.same(
        base_weights(model)[0],
        merged - (B @ A) * scaling_of(model),
        say(
            f"{where}.merge(), then .unmerge(): base.weight, expected the merged weight - (B A) * scaling",
            f"{where}.merge() 后再 .unmerge()：`base.weight` 应为合并后的权重 - (B A) * scaling",
        ),
    )


# -- the whole class -----------------------------------------------------------------------------------------


@pytest.mark.whole
def test_forward_at_initialisation_is_the_base(expect):
    """A fresh layer (B = 0) computes exactly what the base does, as the reference's

    zh: 新建的层（B = 0）算出的正好是基础层的结果，与参考答案相同
    """
    x = inputs(90, 4, IN)
    got = construct(expect.learner, base_layer(expect.learner, IN, OUT, 11), R, ALPHA)(x.clone())
    want = construct(expect.reference, base_layer(expect.reference, IN, OUT, 11), R, ALPHA)(x.clone())
    expect.same(got, want, say(f"a fresh {describe()}(x={fmt(x)})", f"新建的 {describe()}(x={fmt(x)})"))


@pytest.mark.whole
@pytest.mark.parametrize("use_rslora", [False, True], ids=["lora", "rslora"])
def test_gradients_of_a_and_b_match_reference(expect, use_rslora):
    """The gradients of lora_A.weight and lora_B.weight after a backward match the reference's

    zh: 反向传播后 `lora_A.weight` 和 `lora_B.weight` 的梯度与参考答案一致
    """
    x, cotangent = inputs(91, 4, IN), inputs(92, 4, OUT)
    grads = []
    for side in (expect.learner, expect.reference):
        model, _, _ = build(side, use_rslora=use_rslora, seed=12)
        model.backward(None, x.clone(), cotangent=cotangent)
        grads.append({name: grad for name, (_, grad) in model.params().items() if name.startswith("lora_")})
    where = f"{describe(use_rslora=use_rslora)}(x={fmt(x)})"
    for name in ("lora_A.weight", "lora_B.weight"):
        if grads[0].get(name) is None:
            raise AssertionError(
                say(f"{where}: {name} received no gradient", f"{where}：`{name}` 没有得到梯度"),
            )
        expect.same(
            grads[0][name], grads[1][name], say(f"{where}: the gradient of {name}", f"{where}：`{name}` 的梯度")
        )


@pytest.mark.whole
def test_merged_forward_equals_unmerged_forward(expect):
    """forward(x) is the same before and after merge() (eval mode), to float32 tolerance

    zh: `merge()` 前后的 forward(x) 相同（评估模式），误差在 float32 容差之内
    """
    model, _, _ = build(expect.learner, SQUARE, SQUARE, dropout=0.1, seed=13)
    model.method("eval", keep=True)
    x = inputs(93, 4, SQUARE)
    before = model(x.clone())
    model.method("merge")
    expect.same(
        model(x.clone()),
        before,
        say(
            f"{describe(SQUARE, SQUARE, dropout=0.1)}.eval()(x={fmt(x)}) after merge() (expected: before)",
            f"{describe(SQUARE, SQUARE, dropout=0.1)}.eval()(x={fmt(x)})，`merge()` 之后（期望值取合并前的）",
        ),
    )


@pytest.mark.whole
def test_merge_then_unmerge_restores_the_base(expect):
    """merge() then unmerge() gives back the base weight (to rounding) and the same forward

    zh: 先 `merge()` 再 `unmerge()`，得回原来的基础层权重（只差舍入误差）和同样的前向结果
    """
    model, _, _ = build(expect.learner, SQUARE, SQUARE, alpha=16.0, use_rslora=True, seed=14)
    weight, _ = base_weights(model)
    x = inputs(94, 4, SQUARE)
    before = model(x.clone())
    model.method("merge")
    model.method("unmerge")
    where = f"{describe(SQUARE, SQUARE, alpha=16.0, use_rslora=True)}.merge(), .unmerge()"
    expect.same(base_weights(model)[0], weight, say(f"{where}: base.weight", f"{where}：`base.weight`"))
    expect.same(model(x.clone()), before, say(f"{where}: forward(x={fmt(x)})", f"{where}：forward(x={fmt(x)})"))


# -- the input contract --------------------------------------------------------------------------------------


def test_rejects_inputs_outside_the_contract(expect):
    """Accepts valid arguments; rejects a base that is not nn.Linear, r <= 0 or not an int, and dropout outside [0, 1) with ValueError

    zh: 接受合法参数；对不是 `nn.Linear` 的基础层、r <= 0 或不是整数、dropout 不在 [0, 1) 内抛出 ValueError
    """
    learner = expect.learner
    for args in [(R, ALPHA), (1, 8, 0.5, True), (R, ALPHA, 0.0, False)]:
        construct(learner, base_layer(learner, IN, OUT, 15), *args)  # valid: no error; the values are other checks'
    for why, args in [
        ("r = 0", (0, ALPHA)),
        ("r = -2", (-2, ALPHA)),
        (say("r = 2.0, not an int", "r = 2.0，不是整数"), (2.0, ALPHA)),
        ("dropout = 1.0", (R, ALPHA, 1.0)),
        ("dropout = -0.1", (R, ALPHA, -0.1)),
    ]:
        base = base_layer(learner, IN, OUT, 15)
        rejects_with_value_error(
            why, f"{CLASS}(base, r, alpha, dropout)", lambda args=args, base=base: construct(learner, base, *args)
        )
    not_linear = learner.build("lora.not_a_linear", IN, OUT)
    rejects_with_value_error(
        say("a base that is not an nn.Linear", "基础层不是 `nn.Linear`"),
        f"{CLASS}(nn.Sequential(nn.Linear({IN}, {OUT})), r={R}, alpha={ALPHA})",
        lambda: construct(learner, not_linear, R, ALPHA),
    )
