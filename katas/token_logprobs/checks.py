"""Checks for response_log_probs (TODOs 1-3) and token_entropy (TODO 4).

Fixtures: seeded logits (B, T, V) = (4, 12, 7) with ids and a ragged response mask (prompts of
3 to 5 tokens, responses of 2 to 9, 0 to 5 padding tokens); junk (NaN, inf, -inf, 1e30 rows and
-inf entries) in the logits of padding positions; logits repeated along the sequence, with
entries 200 nats below the rest, so that the log-prob of a token does not depend on the shift.
"""

import math

import pytest
import torch

from grader.content import seeds
from grader.content.i18n import say
from grader.judging.expect import values_text

B, T, V = 4, 12, 7
PROMPTS = (3, 4, 3, 5)
RESPONSES = (6, 3, 9, 2)


def ragged_mask():
    """(B, T) bool: row b is PROMPTS[b] prompt tokens, RESPONSES[b] response tokens, then padding."""
    start = torch.tensor(PROMPTS).unsqueeze(-1)  # (B, 1)
    stop = start + torch.tensor(RESPONSES).unsqueeze(-1)  # (B, 1)
    positions = torch.arange(T)  # (T,)
    return (positions >= start) & (positions < stop)  # (B, T)


def ragged_batch(seed: int, dtype=torch.float32):
    """Seeded (logits, input_ids, response_mask): finite logits of spread ~3, ids in [0, V)."""
    generator = seeds.generator(seed)
    logits = 1.5 * torch.randn(B, T, V, generator=generator, dtype=torch.float64)  # (B, T, V)
    ids = torch.randint(0, V, (B, T), generator=generator)  # (B, T)
    return logits.to(dtype), ids, ragged_mask()


def seeded_weights(shape, seed: int):
    """A cotangent: the output is backpropagated as sum(output * weights), so every column counts."""
    return torch.rand(shape, generator=seeds.generator(seed), dtype=torch.float64) + 0.5


def deep_padding(mask):
    """(B, T) positions s whose neighbours s - 1, s, s + 1 are all outside the response."""
    outside = torch.nn.functional.pad(~mask, (1, 1), value=True)  # (B, T + 2)
    return outside[:, :-2] & outside[:, 1:-1] & outside[:, 2:]  # (B, T)


def junk_logits(logits, where):
    """The logits with junk at every position in `where`: rows of NaN, inf, -inf, 1e30, and a row
    whose even entries are -inf (a masked vocabulary), in turn."""
    junk = logits.clone()
    fills = (float("nan"), float("inf"), float("-inf"), 1e30, None)
    for k, (b, s) in enumerate(where.nonzero().tolist()):
        fill = fills[k % len(fills)]
        if fill is None:
            junk[b, s, ::2] = float("-inf")
        else:
            junk[b, s] = fill
    return junk


# -- TODO 1: the shift -----------------------------------------------------------------------------


@pytest.mark.todo(1)
def test_one_column_fewer_than_positions(expect):
    """Shapes only: (B, T, V) logits give (B, T - 1) log-probs, in the logits' dtype

    zh: 只比较形状：(B, T, V) 的 logits 得到 (B, T - 1) 的对数概率，dtype 与 logits 相同
    """
    expect.shaped_like_reference("response_log_probs", *ragged_batch(1))
    expect.shaped_like_reference("response_log_probs", *ragged_batch(2, dtype=torch.float64))


@pytest.mark.todo(1)
def test_column_t_scores_the_token_at_t_plus_1(expect):
    """Self-consistency: changing input_ids[:, t] moves column t - 1, and only on response tokens

    zh: 自洽：改变 `input_ids[:, t]` 只改变第 t - 1 列，且只在回答 token 上
    """
    logits, ids, mask = ragged_batch(3)
    before = expect.call("response_log_probs", logits, ids, mask)
    for t in range(T):
        changed_ids = ids.clone()
        changed_ids[:, t] = (ids[:, t] + 1) % V
        after = expect.call("response_log_probs", logits, changed_ids, mask)
        for b in range(B):
            moved = (after[b] != before[b]).nonzero().flatten().tolist()
            wanted = [t - 1] if bool(mask[b, t]) else []
            if moved != wanted:
                kind = say("response" if mask[b, t] else "prompt or padding", "回答" if mask[b, t] else "提示词或填充")
                changed, expected = _columns_changed(moved, b), _columns_expected(wanted)
                raise AssertionError(
                    say(
                        f"changing input_ids[{b}, {t}] (a {kind} token) {changed}; {expected}: column t - 1 "
                        "holds the log-prob of token t (logits[:, t - 1] predict it), and is 0 unless token t "
                        "is a response token",
                        f"改变 input_ids[{b}, {t}]（{kind} token）{changed}；{expected}：第 t - 1 列存放 token t "
                        "的对数概率（由 logits[:, t - 1] 预测），token t 不是回答 token 时该列为 0",
                    )
                )


def _columns_changed(moved: list[int], row: int) -> str:
    """What changing one id did to a row of the result: no column, or which columns."""
    if not moved:
        return say(f"changed no column of row {row}", f"没有改变第 {row} 行的任何一列")
    return say(f"changed columns {moved} of row {row}", f"改变了第 {row} 行的第 {moved} 列")


def _columns_expected(wanted: list[int]) -> str:
    """Which columns should have changed: none, or exactly the one before the changed id."""
    if not wanted:
        return say("no column should change", "不应改变任何一列")
    return say(f"exactly column {wanted[0]} should change", f"应当恰好改变第 {wanted[0]} 列")


# -- TODO 2: the mask on the inputs ---------------------------------------------------------------


@pytest.mark.todo(2)
def test_junk_in_padding_logits_changes_nothing_and_sends_no_nan_gradient(expect):
    """Self-consistency: NaN/inf logits in padding leave your output as it was, with zero gradients

    zh: 自洽：填充（padding）位置的 logits 为 NaN/inf 时，你的输出不变，那里的梯度为 0
    """
    logits, ids, mask = ragged_batch(4)
    where = deep_padding(mask)
    before = expect.call("response_log_probs", logits, ids, mask)
    if not bool(before.isfinite().all()):  # NaN would equal NaN below
        raise AssertionError(
            say(
                f"response_log_probs returned non-finite values on finite logits: {values_text(before)}",
                f"response_log_probs 在有限的 `logits` 上返回了非有限值：{values_text(before)}",
            )
        )
    junk = junk_logits(logits, where)
    after = expect.call("response_log_probs", junk, ids, mask)
    expect.same(
        after,
        before,
        say(
            "response_log_probs after filling the padding logits with NaN, inf, -inf, 1e30",
            "把填充位置的 `logits` 填成 NaN、inf、-inf、1e30 之后的 response_log_probs",
        ),
    )
    _, grads = expect.gradients(
        "response_log_probs", junk, ids, mask, wrt=("logits",), cotangent=seeded_weights((B, T - 1), 5)
    )
    grad = grads["logits"]
    if grad is None:
        raise AssertionError(say("no gradient reached `logits`", "没有梯度到达 `logits`"))
    bad = (~grad.isfinite()).any(dim=-1) | ((grad != 0).any(dim=-1) & where)  # (B, T)
    if bool(bad.any()):
        positions = bad.nonzero().tolist()
        raise AssertionError(
            say(
                f"with NaN/inf logits in the padding, the gradient of `logits` is NaN, inf or nonzero "
                f"at positions {positions} (row, position): a masked position must send "
                "back exactly 0. Zeroing the output there afterwards is too late: backward multiplies "
                "0 by the NaN of its log-softmax",
                f"填充位置的 `logits` 为 NaN/inf 时，`logits` 的梯度在位置 {positions}（行，位置）上"
                "是 NaN、inf 或非零值：被掩码屏蔽的位置必须传回恰好为 0 的梯度。事后再把那里的输出置 0 "
                "已经太晚：反向传播会用 0 乘以 `log_softmax` 的 NaN",
            )
        )


# -- TODO 3: log_softmax, gather, exact zeros -----------------------------------------------------


@pytest.mark.todo(3)
def test_each_log_prob_is_the_logit_minus_the_logsumexp(expect):
    """Logits repeated along the sequence: each log-prob is z_y - logsumexp(z), even 200 nats down

    zh: logits 沿序列重复：每个对数概率都是 z_y - logsumexp(z)，即使低了 200 奈特
    """
    generator = seeds.generator(6)
    z = 2.0 * torch.randn(B, V, generator=generator, dtype=torch.float64)  # (B, V)
    z[:, :2] -= 200.0  # ids 0 and 1: softmax underflows to 0 in float32
    targets = torch.tensor([0, 1, 4, 6])  # (B,) one id per row, the same at every position
    mask = torch.ones(B, T, dtype=torch.bool)
    mask[:, :2] = False  # a two-token prompt
    mask[:, -1] = False  # one padding token
    logits = z.unsqueeze(1).expand(B, T, V).to(torch.float32).contiguous()  # (B, T, V)
    ids = targets.unsqueeze(-1).expand(B, T).contiguous()  # (B, T)
    got = expect.call("response_log_probs", logits, ids, mask)
    want = z.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - z.logsumexp(dim=-1)  # (B,) float64
    for b in range(B):
        for t in range(2, T - 2):  # columns whose token t + 1 is a response token, shifted or not
            value = got[b, t].item()
            if not abs(value - want[b].item()) <= 1e-5 * abs(want[b].item()) + 1e-5:
                far = say(
                    " (200 nats below the best: log(softmax) gives log(0) = -inf there)",
                    "（比最大值低 200 奈特：`log(softmax)` 在那里得到 log(0) = -inf）",
                )
                far = far if b < 2 else ""
                target, wanted = targets[b].item(), want[b].item()
                raise AssertionError(
                    say(
                        f"row {b} column {t}: the log-prob of id {target} is {value:.6g}, expected "
                        f"z_y - logsumexp(z) = {wanted:.6g}{far}",
                        f"第 {b} 行第 {t} 列：id {target} 的对数概率为 {value:.6g}，"
                        f"应为 z_y - logsumexp(z) = {wanted:.6g}{far}",
                    )
                )


@pytest.mark.todo(3)
def test_masked_columns_are_exactly_zero(expect):
    """Columns scoring prompt or padding tokens hold exactly 0.0

    zh: 给提示词或填充（padding）token 打分的列恰好为 0.0
    """
    logits, ids, mask = ragged_batch(7)
    got = expect.call("response_log_probs", logits, ids, mask)
    outside = ~mask[:, :-1] & ~mask[:, 1:]  # (B, T-1) tokens t and t + 1 both outside the response
    nonzero = (got != 0) & outside
    if bool(nonzero.any()):
        b, t = nonzero.nonzero()[0].tolist()
        value = got[b, t].item()
        raise AssertionError(
            say(
                f"column {t} of row {b} scores a token outside the response but holds {value:.6g}; "
                "it must be exactly 0.0, as every position outside the response is",
                f"第 {b} 行第 {t} 列给回答之外的 token 打分，却是 {value:.6g}；"
                "它必须恰好为 0.0，回答之外的每个位置都是如此",
            )
        )


# -- whole function --------------------------------------------------------------------------------


@pytest.mark.whole
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_log_probs_match_reference(expect, dtype):
    """Log-probs of a ragged batch match the reference (float32, float64, bfloat16)

    zh: 参差批次的对数概率与参考答案一致（float32、float64、bfloat16）
    """
    expect.matches_reference("response_log_probs", *ragged_batch(8, dtype=dtype))


@pytest.mark.whole
def test_log_prob_gradients_match_reference(expect):
    """Gradients with respect to the logits match the reference

    zh: 对 logits 的梯度与参考答案一致
    """
    logits, ids, mask = ragged_batch(9, dtype=torch.float64)
    expect.gradients_match_reference(
        "response_log_probs", logits, ids, mask, wrt=("logits",), cotangent=seeded_weights((B, T - 1), 10)
    )


# -- TODO 4: token_entropy ------------------------------------------------------------------------


@pytest.mark.todo(4)
def test_entropy_of_uniform_and_one_hot_logits(expect):
    """Uniform logits give log V; one entry 300 above the rest gives 0, not NaN

    zh: 均匀的 logits 得到 log V；一个值比其余高 300 时得到 0，而不是 NaN
    """
    uniform = torch.zeros(2, 8)
    got = expect.shaped_like_reference("token_entropy", uniform)
    if not all(abs(value - math.log(8)) <= 1e-6 for value in got.tolist()):
        raise AssertionError(
            say(
                f"token_entropy of uniform logits over V = 8 is {got.tolist()}, expected log 8 = {math.log(8):.6f}: "
                "H = -sum_v p_v log p_v, summed (not averaged) over the vocabulary, and >= 0",
                f"V = 8 的均匀 `logits` 的 token_entropy 为 {got.tolist()}，应为 log 8 = {math.log(8):.6f}："
                "`H = -sum_v p_v log p_v`，对词表求和（不是求平均），且 >= 0",
            )
        )
    peaked = torch.full((2, 8), -300.0)
    peaked[:, 3] = 0.0
    got = expect.call("token_entropy", peaked)
    if not all(abs(value) <= 1e-6 for value in got.tolist()):
        raise AssertionError(
            say(
                f"token_entropy of logits with one entry 300 above the rest is {got.tolist()}, expected 0: "
                "softmax underflows to 0 there and log(0) * 0 is NaN; take log p from log_softmax",
                f"有一个值比其余高 300 的 `logits` 的 token_entropy 为 {got.tolist()}，应为 0："
                "那里的 `softmax` 下溢为 0，而 log(0) * 0 是 NaN；应从 `log_softmax` 取 log p",
            )
        )


@pytest.mark.todo(4)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_entropy_matches_reference(expect, dtype):
    """Entropies of seeded logits (3, 5, 11) match the reference

    zh: 随机 logits (3, 5, 11) 的熵与参考答案一致
    """
    generator = seeds.generator(11)
    logits = 3.0 * torch.randn(3, 5, 11, generator=generator, dtype=torch.float64)
    expect.matches_reference("token_entropy", logits.to(dtype))


@pytest.mark.todo(4)
def test_entropy_gradients_match_reference(expect):
    """Gradients of the entropy with respect to the logits match the reference

    zh: 熵对 logits 的梯度与参考答案一致
    """
    generator = seeds.generator(12)
    logits = 2.0 * torch.randn(4, 9, generator=generator, dtype=torch.float64)
    expect.gradients_match_reference("token_entropy", logits, wrt=("logits",), cotangent=seeded_weights((4,), 13))


def test_rejects_inputs_outside_the_contract(expect):
    """Accepts valid input; rejects bad shapes, dtypes, ids and masks with ValueError

    zh: 接受合法输入；对错误的形状、dtype、id 和掩码抛出 ValueError
    """
    logits, ids, mask = ragged_batch(20)
    expect.call("response_log_probs", logits, ids, mask)
    expect.call("response_log_probs", logits, ids.int(), mask)
    expect.call("token_entropy", logits)
    first_token = mask.clone()
    first_token[0, 0] = True
    too_big, negative = ids.clone(), ids.clone()
    too_big[1, 2] = V
    negative[2, 3] = -1
    bad = [
        (say("2-D logits", "`logits` 是二维的"), (logits[0], ids, mask)),
        (say("integer logits", "`logits` 是整数型"), (logits.long(), ids, mask)),
        (say("a single position (T = 1)", "只有一个位置（T = 1）"), (logits[:, :1], ids[:, :1], mask[:, :1])),
        (say("float input_ids", "`input_ids` 是浮点型"), (logits, ids.float(), mask)),
        (say("input_ids of another shape", "`input_ids` 的形状不同"), (logits, ids[:, :-1], mask)),
        (say("an id equal to V", "有 id 等于 V"), (logits, too_big, mask)),
        (say("a negative id", "有负的 id"), (logits, negative, mask)),
        (say("a float mask", "掩码是浮点型"), (logits, ids, mask.float())),
        (say("a mask of another shape", "掩码的形状不同"), (logits, ids, mask[:-1])),
        (say("a response token at position 0", "位置 0 上是回答 token"), (logits, ids, first_token)),
    ]
    for why, args in bad:
        expect.raises_value_error(why, "response_log_probs", *args)
    with_nan = logits.clone()
    with_nan[0, 0, 0] = float("nan")
    expect.raises_value_error(say("integer logits", "`logits` 是整数型"), "token_entropy", logits.long())
    expect.raises_value_error(say("a NaN logit", "`logits` 中有 NaN"), "token_entropy", with_nan)
    expect.raises_value_error(say("a 0-d tensor", "0 维张量"), "token_entropy", torch.tensor(1.0))
