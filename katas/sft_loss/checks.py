"""Checks for masked_normalize (TODO 1), sft_loss (TODO 2) and sft_microbatch_step (TODO 3).

Fixtures: seeded batches of 4 sequences of 9 positions, each a prompt, a response and padding of
different lengths (responses of 3, 5, 1 and 4 tokens, so the two halves of the batch hold 8 and
5 response tokens); log-probs in [-3.05, -0.05] everywhere, prompt and padding included. The
microbatch step backpropagates inside the learner's call: its gradient is read from the `.grad`
of token_log_probs, which the checks pass with requires_grad.
"""

import pytest
import torch

from grader.content import seeds
from grader.content.i18n import say

PROMPTS = [2, 3, 1, 4]  # prompt length of each row
RESPONSES = [3, 5, 1, 4]  # response length of each row; the rest is padding
LENGTH = 9
STEP = "sft_microbatch_step"
LOSS = 0  # the index of the loss in the returned (loss, metadata)


def sft_batch(seed: int, dtype=torch.float32, requires_grad: bool = False):
    """Seeded (token_log_probs (4, 9), response_mask (4, 9) bool): prompt, response, padding."""
    generator = seeds.generator(seed)
    log_probs = -torch.rand(len(PROMPTS), LENGTH, generator=generator, dtype=torch.float64) * 3 - 0.05
    position = torch.arange(LENGTH)
    start, count = torch.tensor(PROMPTS).unsqueeze(-1), torch.tensor(RESPONSES).unsqueeze(-1)
    mask = (position >= start) & (position < start + count)  # (4, 9) bool
    return log_probs.to(dtype).requires_grad_(requires_grad), mask


def junk_outside(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """values with the unselected positions replaced by inf, -inf, NaN and 1e6 in turn."""
    junk = torch.tensor([float("inf"), float("-inf"), float("nan"), 1e6], dtype=values.dtype)
    junk = junk.repeat(values.numel() // 4 + 1)[: values.numel()].reshape(values.shape)
    return torch.where(mask, values.detach(), junk).requires_grad_(values.requires_grad)


def close(got: float, want: float, tol: float = 1e-9) -> bool:
    return abs(got - want) <= tol * (1 + abs(want))  # NaN is never close


# -- TODO 1: masked_normalize ---------------------------------------------------------------------


@pytest.mark.todo(1)
@pytest.mark.parametrize("seed", [0, 1])
def test_masked_normalize_matches_reference(expect, seed):
    """masked_normalize matches the reference with dim=None, dim=-1 and dim=0

    zh: `masked_normalize` 在 `dim=None`、`dim=-1` 和 `dim=0` 时与参考答案一致
    """
    values, mask = sft_batch(seed)
    expect.matches_reference("masked_normalize", values, mask, 3.0)
    expect.matches_reference("masked_normalize", values, mask, 0.5, dim=-1)
    expect.matches_reference("masked_normalize", values, mask, 7, dim=0)


@pytest.mark.todo(1)
def test_divides_by_the_constant_not_the_count(expect):
    """The divisor is the constant: [1, 2] and [4] selected, c = 2 give (1 + 2 + 4) / 2 = 3.5

    zh: 除数是常数：选中 [1, 2] 与 [4]，c = 2 时得到 (1 + 2 + 4) / 2 = 3.5
    """
    values = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    mask = torch.tensor([[True, True, False], [True, False, False]])
    got = expect.shaped_like_reference("masked_normalize", values, mask, 2.0).item()
    if not close(got, 3.5):
        raise AssertionError(
            say(
                f"masked_normalize(values, mask, 2.0) = {got:.4g} for selected [1, 2] and [4]: "
                "the selected sum 7 divided by the constant 2 is 3.5 (divided by the count 3 it "
                "would be 2.333, the sum of all 21 over 2 would be 10.5)",
                f"选中 [1, 2] 与 [4] 时 masked_normalize(values, mask, 2.0) = {got:.4g}："
                "选中值之和 7 除以常数 2 得 3.5（除以个数 3 会得 2.333，全部 21 之和除以 2 会得 10.5）",
            )
        )
    rows = expect.shaped_like_reference("masked_normalize", values, mask, 2.0, dim=-1).tolist()
    if not (close(rows[0], 1.5) and close(rows[1], 2.0)):
        call = "masked_normalize(values, mask, 2.0, dim=-1)"
        raise AssertionError(say(f"{call} = {rows}, expected [1.5, 2.0]", f"{call} = {rows}，应为 [1.5, 2.0]"))


@pytest.mark.todo(1)
@pytest.mark.parametrize("dim", [None, -1], ids=["dim=None", "dim=-1"])
def test_masked_positions_change_nothing(expect, dim):
    """Self-consistency: inf or NaN in unselected positions leaves your result as it was

    zh: 自洽：未被选中的位置是 inf 或 NaN 时，你的结果保持不变
    """
    values, mask = sft_batch(2)
    before = expect.shaped_like_reference("masked_normalize", values, mask, 2.0, dim=dim)
    call = f"masked_normalize(values, mask, 2.0, dim={dim})"
    if not bool(before.isfinite().all()):  # NaN would equal NaN below
        raise AssertionError(say(f"{call} returned non-finite values", f"{call} 返回了非有限值"))
    after = expect.call("masked_normalize", junk_outside(values, mask), mask, 2.0, dim=dim)
    expect.same(
        after,
        before,
        say(
            f"{call} after filling the unselected positions with inf/NaN",
            f"把未选中的位置填成 inf/NaN 之后的 {call}",
        ),
    )


@pytest.mark.todo(1)
def test_masked_normalize_gradients_match_reference(expect):
    """Each selected element gets 1 / c of the gradient; unselected ones get 0

    zh: 每个被选中的元素获得 1 / c 的梯度；未被选中的元素为 0
    """
    values, mask = sft_batch(3, dtype=torch.float64)
    expect.gradients_match_reference("masked_normalize", values, mask, 4.0, wrt=("values",))


@pytest.mark.todo(1)
@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16], ids=["float64", "bfloat16"])
def test_masked_normalize_dtype_follows_values(expect, dtype):
    """Dtypes only: the result has the dtype of values (float64, bfloat16)

    zh: 只比较 dtype：结果的 dtype 与 values 相同（float64、bfloat16）
    """
    values, mask = sft_batch(4, dtype=dtype)
    expect.shaped_like_reference("masked_normalize", values, mask, 2.0)
    expect.shaped_like_reference("masked_normalize", values, mask, 2.0, dim=-1)


# -- TODO 2: sft_loss ---------------------------------------------------------------------------


@pytest.mark.todo(2)
@pytest.mark.parametrize("seed", [10, 11])
def test_sft_loss_matches_reference(expect, seed):
    """The loss matches the reference on batches with prompts and padding of different lengths

    zh: 在提示词与填充（padding）长度各不相同的批次上，损失与参考答案一致
    """
    expect.matches_reference("sft_loss", *sft_batch(seed))


@pytest.mark.todo(2)
def test_sft_loss_is_a_token_mean_over_the_batch(expect):
    """A token mean: response NLLs [1, 1, 1] and [5] give (1 + 1 + 1 + 5) / 4 = 2

    zh: token 均值：回答的 NLL 为 [1, 1, 1] 与 [5] 时得到 (1 + 1 + 1 + 5) / 4 = 2
    """
    log_probs = torch.tensor([[-7.0, -1.0, -1.0, -1.0], [-3.0, -5.0, -0.5, -2.0]])
    mask = torch.tensor([[False, True, True, True], [False, True, False, False]])
    got = expect.shaped_like_reference("sft_loss", log_probs, mask).item()
    if not close(got, 2.0, 1e-6):
        raise AssertionError(
            say(
                f"sft_loss = {got:.4g} for response NLLs [1, 1, 1] and [5]: every response token "
                "weighs the same, (1 + 1 + 1 + 5) / 4 = 2 (the mean of the sequence means would be "
                "3, the sum over 2 sequences 4, over all 8 positions 1)",
                f"回答的 NLL 为 [1, 1, 1] 与 [5] 时 sft_loss = {got:.4g}：每个回答 token 的权重相同，"
                "(1 + 1 + 1 + 5) / 4 = 2（各序列均值的均值会是 3，总和除以 2 个序列会是 4，"
                "除以全部 8 个位置会是 1）",
            )
        )


@pytest.mark.todo(2)
def test_prompt_and_padding_change_nothing(expect):
    """Self-consistency: other log-probs, -inf or NaN on prompt and padding leave your loss as it was

    zh: 自洽：提示词与填充（padding）位置换成其他对数概率、-inf 或 NaN，你的损失保持不变
    """
    log_probs, mask = sft_batch(12)
    before = expect.shaped_like_reference("sft_loss", log_probs, mask)
    if not bool(before.isfinite()):
        raise AssertionError(
            say(
                f"sft_loss returned {before.item()} on finite log-probs",
                f"sft_loss 在有限的对数概率上返回了 {before.item()}",
            )
        )
    for what, what_zh, other in [
        ("other log-probs", "其他对数概率", torch.where(mask, log_probs, log_probs - 4.0)),
        ("inf/NaN", " inf/NaN ", junk_outside(log_probs, mask)),
    ]:
        where = say(f"sft_loss with {what} on prompt and padding", f"提示词与填充位置换成{what_zh}时的 sft_loss")
        expect.same(expect.call("sft_loss", other, mask), before, where)


@pytest.mark.todo(2)
def test_sft_loss_falls_as_response_log_probs_rise(expect):
    """The NLL's sign: the loss is > 0, and its gradient is < 0 on every response token

    zh: NLL 的符号：损失 > 0，每个回答 token 上的梯度都 < 0
    """
    log_probs, mask = sft_batch(13, dtype=torch.float64)
    loss, grads = expect.gradients("sft_loss", log_probs, mask, wrt=("token_log_probs",))
    if not loss > 0:
        raise AssertionError(
            say(
                f"sft_loss = {loss:.4g} on log-probs < 0: the loss is the negative log-likelihood, "
                "-(mean log-prob), which is > 0 and falls as the model learns the response",
                f"对数概率 < 0 时 sft_loss = {loss:.4g}：损失是负对数似然，即对数概率的均值取负，"
                "它 > 0，并随着模型学会回答而下降",
            )
        )
    grad = grads["token_log_probs"]
    if grad is None or not bool((grad[mask] < 0).all()):
        high = "none" if grad is None else f"{grad[mask].max().item():.4g}"
        raise AssertionError(
            say(
                f"sft_loss: the largest gradient on a response token is {high}; it must be < 0 on every "
                "one, so that lowering the loss raises the response's log-probs",
                f"sft_loss：回答 token 上最大的梯度为 {high}；它在每个回答 token 上都必须 < 0，"
                "这样降低损失才会提高回答的对数概率",
            )
        )


@pytest.mark.todo(2)
def test_sft_loss_weighs_every_response_token_the_same(expect):
    """The weighting: the gradient is -1 / (response tokens of the batch) on each response token, 0 elsewhere

    zh: 权重：每个回答 token 上的梯度为 -1 /（批次中回答 token 的个数），其余位置为 0
    """
    log_probs, mask = sft_batch(13, dtype=torch.float64)
    expect.gradients_match_reference("sft_loss", log_probs, mask, wrt=("token_log_probs",))


@pytest.mark.todo(2)
@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16], ids=["float64", "bfloat16"])
def test_sft_loss_dtype_follows_inputs(expect, dtype):
    """Dtypes only: the loss is a 0-d tensor of the log-probs' dtype (float64, bfloat16)

    zh: 只比较 dtype：损失是 dtype 与对数概率相同的 0 维张量（float64、bfloat16）
    """
    expect.shaped_like_reference("sft_loss", *sft_batch(14, dtype=dtype))


# -- TODO 3: sft_microbatch_step ----------------------------------------------------------------


@pytest.mark.todo(3)
@pytest.mark.parametrize(("steps", "constant"), [(1, 1.0), (2, 1.0), (4, 3.0)])
def test_microbatch_step_matches_reference(expect, steps, constant):
    """The returned loss and metadata match the reference (k = 1, 2, 4; c = 1, 3)

    zh: 返回的损失与元数据与参考答案一致（k = 1、2、4；c = 1、3）
    """
    log_probs, mask = sft_batch(20 + steps, dtype=torch.float64, requires_grad=True)
    expect.matches_reference(STEP, log_probs, mask, steps, normalize_constant=constant)


@pytest.mark.todo(3)
@pytest.mark.parametrize(("steps", "constant"), [(2, 1.0), (3, 5.0)])
def test_microbatch_gradient_matches_reference(expect, steps, constant):
    """The gradient your backward leaves in token_log_probs.grad matches the reference

    zh: 你的反向传播留在 `token_log_probs.grad` 中的梯度与参考答案一致
    """
    log_probs, mask = sft_batch(30 + steps, dtype=torch.float64)
    expect.gradients_match_reference(
        STEP, log_probs, mask, steps, normalize_constant=constant, wrt=("token_log_probs",), pick=LOSS
    )


@pytest.mark.todo(3)
@pytest.mark.parametrize("steps", [2, 4])
def test_accumulated_gradients_equal_the_full_batch(expect, steps):
    """Self-consistency: k microbatches' gradients and losses add up to the whole batch's (k = 1)

    zh: 自洽：k 个微批次的梯度与损失之和等于整个批次（k = 1）的梯度与损失
    """
    log_probs, mask = sft_batch(40, dtype=torch.float64)
    options = {"normalize_constant": 2.0, "wrt": ("token_log_probs",), "pick": LOSS}
    full_loss, full = expect.gradients(STEP, log_probs, mask, 1, **options)
    size = log_probs.shape[0] // steps
    losses, grads = [], []
    for start in range(0, log_probs.shape[0], size):
        rows = slice(start, start + size)
        loss, grad = expect.gradients(STEP, log_probs[rows], mask[rows], steps, **options)
        losses.append(loss)
        grads.append(grad["token_log_probs"])
    if any(grad is None for grad in grads) or full["token_log_probs"] is None:
        raise AssertionError(
            say(
                f"{STEP}: no gradient reached token_log_probs: the step did not backpropagate its loss",
                f"{STEP}：没有梯度到达 `token_log_probs`：这一步没有把损失反向传播回去",
            )
        )
    if not close(sum(losses), full_loss):
        raise AssertionError(
            say(
                f"{STEP}: the {steps} microbatch losses (k = {steps}) add up to {sum(losses):.6g}, "
                f"but the whole batch (k = 1) gives {full_loss:.6g}: each microbatch's mean is divided "
                "by k, and each sequence by the constant, not by a token count",
                f"{STEP}：{steps} 个微批次的损失（k = {steps}）之和为 {sum(losses):.6g}，"
                f"但整个批次（k = 1）得到 {full_loss:.6g}：本题中每个微批次的均值除以 k，"
                "每个序列除以常数，而不是除以 token 数",
            )
        )
    expect.same(
        torch.cat(grads),
        full["token_log_probs"],
        say(
            f"{STEP}: the sum of {steps} microbatch gradients (k = {steps}) against the whole batch's (k = 1)",
            f"{STEP}：{steps} 个微批次的梯度之和（k = {steps}）与整个批次（k = 1）的梯度对比",
        ),
    )


@pytest.mark.todo(3)
def test_constant_divides_the_loss(expect):
    """Self-consistency: normalize_constant 4 gives a quarter of your loss with constant 1

    zh: 自洽：`normalize_constant` 为 4 时，损失是常数为 1 时的四分之一
    """
    log_probs, mask = sft_batch(50, dtype=torch.float64, requires_grad=True)
    one = expect.call(STEP, log_probs, mask, 2, normalize_constant=1.0)[LOSS].item()
    four = expect.call(STEP, log_probs, mask, 2, normalize_constant=4.0)[LOSS].item()
    if not close(4 * four, one):
        raise AssertionError(
            say(
                f"{STEP}: loss {four:.6g} with normalize_constant=4.0 and {one:.6g} with 1.0; "
                "each sequence's summed NLL is divided by the constant, so the first is a quarter "
                "of the second",
                f"{STEP}：`normalize_constant=4.0` 时损失为 {four:.6g}，1.0 时为 {one:.6g}；"
                "每个序列的 NLL 之和要除以该常数，所以前者应是后者的四分之一",
            )
        )


@pytest.mark.todo(3)
def test_microbatch_loss_is_positive_and_pushes_response_log_probs_up(expect):
    """The NLL's sign: the loss is > 0, the gradient < 0 on response tokens and 0 elsewhere

    zh: NLL 的符号：损失 > 0，回答 token 上的梯度 < 0，其余位置为 0
    """
    log_probs, mask = sft_batch(60, dtype=torch.float64)
    loss, grads = expect.gradients(STEP, log_probs, mask, 2, wrt=("token_log_probs",), pick=LOSS)
    grad = grads["token_log_probs"]
    if grad is None:
        raise AssertionError(
            say(
                f"{STEP}: no gradient reached token_log_probs: the step did not backpropagate its loss",
                f"{STEP}：没有梯度到达 `token_log_probs`：这一步没有把损失反向传播回去",
            )
        )
    if not (loss > 0 and bool((grad[mask] < 0).all()) and bool((grad[~mask] == 0).all())):
        low, high = grad[mask].min().item(), grad[mask].max().item()
        elsewhere = grad[~mask].abs().max().item()
        raise AssertionError(
            say(
                f"{STEP}: loss {loss:.4g}, gradient on response tokens in "
                f"[{low:.4g}, {high:.4g}], largest |gradient| "
                f"elsewhere {elsewhere:.4g}: the NLL is > 0, its gradient "
                "pushes response log-probs up (< 0) and leaves prompt and padding at 0",
                f"{STEP}：损失 {loss:.4g}，回答 token 上的梯度在 [{low:.4g}, {high:.4g}] 内，"
                f"其他位置梯度的最大绝对值为 {elsewhere:.4g}：NLL > 0，它的梯度把回答的对数概率往上推（< 0），"
                "提示词和填充位置保持 0",
            )
        )


def test_rejects_inputs_outside_the_contract(expect):
    """Accepts valid input; rejects bad masks, shapes, constants, steps and log-probs with ValueError

    zh: 接受合法输入；对非法掩码、形状、常数、步数和对数概率抛出 ValueError
    """
    log_probs, mask = sft_batch(70)
    leaf, _ = sft_batch(70, requires_grad=True)
    expect.call("masked_normalize", log_probs, mask, 1.0)
    expect.call("masked_normalize", log_probs, mask, 2, dim=-1)
    expect.call("sft_loss", log_probs, mask)
    expect.call(STEP, leaf, mask, 1)
    expect.call(STEP, leaf, mask, 3, normalize_constant=2)
    nan_response = log_probs.clone()
    nan_response[1, 4] = float("nan")
    bad = [
        (say("a float mask", "掩码是浮点型"), "masked_normalize", (log_probs, mask.float(), 1.0), {}),
        (say("a mask of another shape", "掩码的形状不同"), "masked_normalize", (log_probs, mask[:, :-1], 1.0), {}),
        (say("integer values", "`values` 是整数型"), "masked_normalize", (log_probs.long(), mask, 1.0), {}),
        (say("normalize_constant 0", "`normalize_constant` 为 0"), "masked_normalize", (log_probs, mask, 0.0), {}),
        (
            say("a negative normalize_constant", "`normalize_constant` 为负"),
            "masked_normalize",
            (log_probs, mask, -2.0),
            {},
        ),
        (
            say("a NaN normalize_constant", "`normalize_constant` 是 NaN"),
            "masked_normalize",
            (log_probs, mask, float("nan")),
            {},
        ),
        (
            say("normalize_constant True", "`normalize_constant` 为 `True`"),
            "masked_normalize",
            (log_probs, mask, True),
            {},
        ),
        (say("a float mask", "掩码是浮点型"), "sft_loss", (log_probs, mask.float()), {}),
        (say("1-D log-probs", "对数概率是一维的"), "sft_loss", (log_probs[0], mask[0]), {}),
        (
            say("a mask that selects nothing", "掩码没有选中任何位置"),
            "sft_loss",
            (log_probs, torch.zeros_like(mask)),
            {},
        ),
        (
            say("a NaN log-prob on a response token", "回答 token 的对数概率是 NaN"),
            "sft_loss",
            (nan_response, mask),
            {},
        ),
        (
            say("log-probs that do not require grad", "对数概率不需要梯度（`requires_grad` 为 `False`）"),
            STEP,
            (log_probs, mask, 1),
            {},
        ),
        (say("gradient_accumulation_steps 0", "`gradient_accumulation_steps` 为 0"), STEP, (leaf, mask, 0), {}),
        (say("gradient_accumulation_steps 1.5", "`gradient_accumulation_steps` 为 1.5"), STEP, (leaf, mask, 1.5), {}),
        (say("normalize_constant 0", "`normalize_constant` 为 0"), STEP, (leaf, mask, 1), {"normalize_constant": 0.0}),
        (say("a mask that selects nothing", "掩码没有选中任何位置"), STEP, (leaf, torch.zeros_like(mask), 1), {}),
    ]
    for why, name, args, kwargs in bad:
        expect.raises_value_error(why, name, *args, **kwargs)
