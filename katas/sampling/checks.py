"""Checks for filter_logits (TODOs 1-4) and sample_tokens (TODOs 5-6).

Fixtures: seeded logits (3, 4, V) with V = 24 and a spread of ~4 nats; tied logits (rounded to
halves, so that many rows have ties at the k-th place); hand-built rows whose probabilities put the
top-p and min-p thresholds where the mistakes give other sets. Each filter is checked alone (the
other knobs off), and the order of application by composition: filtering in one call must equal
filtering the result of the earlier steps. The sampling checks draw with seeded generators and
compare with torch.multinomial on the softmax of your own filter_logits, so that they test only
the draw and the log-prob.
"""

import math

import pytest
import torch

from grader.content import seeds
from grader.content.i18n import say
from grader.judging.expect import compared

V = 24
GLOBAL_SEED = 2025  # of the learner's global RNG, which sampling must leave alone


def seeded_logits(seed: int, dtype=torch.float64, shape=(3, 4)):
    """(*shape, V) logits, spread ~4 nats, no ties."""
    generator = seeds.generator(seed)
    return (2.0 * torch.randn(*shape, V, generator=generator, dtype=torch.float64)).to(dtype)


def tied_logits(seed: int, dtype=torch.float64):
    """(3, 4, V) logits rounded to halves: ties everywhere, at the k-th place too."""
    return (seeded_logits(seed) * 2).round().div(2).to(dtype)


def from_probs(rows) -> torch.Tensor:
    """Logits whose softmax is the given probabilities (each row sums to 1)."""
    return torch.tensor(rows, dtype=torch.float64).log()


def kept(filtered: torch.Tensor) -> list[list[int]]:
    """The token ids each row keeps (its finite entries), row by row."""
    rows = filtered.reshape(-1, filtered.shape[-1])
    return [torch.isfinite(row).nonzero().flatten().tolist() for row in rows]


def call_text(name: str, **arguments) -> str:
    return f"{name}({', '.join(f'{key}={value}' for key, value in arguments.items())})"


def assert_kept(got, wanted: list[list[int]], what: str, why: str) -> None:
    """The finite entries of `got`, row by row, are exactly `wanted`."""
    if not isinstance(got, torch.Tensor):
        raise AssertionError(say(f"{what} did not return a tensor", f"{what} 没有返回张量"))
    have = kept(got)
    wrong = {row: ids for row, (ids, want) in enumerate(zip(have, wanted)) if ids != want}
    if wrong:
        expected = {row: wanted[row] for row in wrong}
        raise AssertionError(
            say(
                f"{what} keeps the tokens {wrong} (row: ids); expected {expected}: {why}",
                f"{what} 保留的 token 为 {wrong}（行：id）；应为 {expected}：{why}",
            )
        )


def assert_composes(expect, x, together: dict, first: dict, then: dict, why: str) -> None:
    """filter_logits(x, **together) equals filter_logits(filter_logits(x, **first), **then)."""
    at_once = expect.call("filter_logits", x, **together)
    in_steps = expect.call("filter_logits", expect.call("filter_logits", x, **first), **then)
    if not isinstance(at_once, torch.Tensor) or not isinstance(in_steps, torch.Tensor):
        raise AssertionError(say("filter_logits did not return a tensor", "filter_logits 没有返回张量"))
    difference = compared(at_once, in_steps, 1e-12, 1e-12) if at_once.shape == in_steps.shape else "shape"
    if difference or kept(at_once) != kept(in_steps):
        once, steps = call_text("filter_logits", x="x", **together), call_text("filter_logits", x="y", **then)
        inner = call_text("filter_logits", x="x", **first)
        raise AssertionError(
            say(
                f"{once} differs from {steps} with y = {inner}: {why}",
                f"{once} 与 {steps}（y = {inner}）不同：{why}",
            )
        )


# -- TODO 1: temperature ---------------------------------------------------------------------------


@pytest.mark.todo(1)
@pytest.mark.parametrize("temperature", [0.5, 2.0, 1.0])
def test_temperature_divides_the_logits(expect, temperature):
    """Temperature alone: the logits divided by it, nothing removed

    zh: 只有温度：logits 除以温度，不去掉任何 token
    """
    x = seeded_logits(1)
    got = expect.call("filter_logits", x, temperature=temperature)
    if not isinstance(got, torch.Tensor) or got.shape != x.shape or compared(got, x / temperature, 1e-12, 1e-12):
        raise AssertionError(
            say(
                f"filter_logits(logits, temperature={temperature}) is not logits / {temperature}: the temperature "
                "divides the logits (below 1 the distribution sharpens, above 1 it flattens)",
                f"filter_logits(logits, temperature={temperature}) 不等于 logits / {temperature}：温度是去除 logits"
                "（小于 1 分布变尖，大于 1 分布变平）",
            )
        )


# -- TODO 2: top-k ---------------------------------------------------------------------------------


@pytest.mark.todo(2)
def test_top_k_keeps_every_tie_with_the_kth_logit(expect):
    """Top-k alone: every logit >= the k-th largest stays, so ties at the k-th place all stay

    zh: 只有 top-k：不小于第 k 大 logit 的都保留，因此并列第 k 的都保留
    """
    x = torch.tensor([[3.0, 1.0, 2.0, 2.0, 0.0, 2.0, -1.0], [0.5, 0.5, 0.5, 0.5, 4.0, 0.5, 0.5]])
    every = list(range(7))
    for top_k, wanted in [(2, [[0, 2, 3, 5], every]), (1, [[0], [4]]), (4, [[0, 2, 3, 5], every])]:
        got = expect.call("filter_logits", x, top_k=top_k)
        assert_kept(
            got,
            wanted,
            call_text("filter_logits", logits=x.tolist(), top_k=top_k),
            say(
                "top-k keeps every logit at least as large as the k-th largest, ties included",
                "top-k 保留所有不小于第 k 大 logit 的值，包括并列的",
            ),
        )


@pytest.mark.todo(2)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("top_k", [1, 5, 100])
def test_top_k_matches_reference(expect, dtype, top_k):
    """Top-k alone on tied logits (3, 4, 24) matches the reference; k above V keeps all

    zh: 只有 top-k：在有并列值的 logits (3, 4, 24) 上与参考答案一致；k 大于 V 时全部保留
    """
    expect.matches_reference("filter_logits", tied_logits(2, dtype), top_k=top_k)


# -- TODO 3: top-p ---------------------------------------------------------------------------------

NUCLEUS_ROWS = [[0.15, 0.5, 0.05, 0.3], [0.3, 0.05, 0.5, 0.15]]


@pytest.mark.todo(3)
@pytest.mark.parametrize(
    ("top_p", "wanted"), [(0.7, [[1, 3], [0, 2]]), (0.9, [[0, 1, 3], [0, 2, 3]]), (0.4, [[1], [2]])]
)
def test_top_p_keeps_the_token_that_crosses_top_p(expect, top_p, wanted):
    """Top-p alone: the most likely tokens until their mass reaches top_p, the crossing one kept

    zh: 只有 top-p：从最可能的 token 起保留到概率之和达到 top_p，越过阈值的那个也保留
    """
    x = from_probs(NUCLEUS_ROWS)
    got = expect.call("filter_logits", x, top_p=top_p)
    assert_kept(
        got,
        wanted,
        call_text("filter_logits", logits=f"log({NUCLEUS_ROWS})", top_p=top_p),
        say(
            "sorted by probability, a token stays while the more likely ones hold less than top_p together, "
            "so the token that crosses top_p is kept",
            "按概率排序后，只要比某个 token 更可能的 token 的概率之和小于 top_p，它就保留，"
            "所以越过 top_p 的那个 token 也保留",
        ),
    )


@pytest.mark.todo(3)
def test_a_tiny_top_p_keeps_only_the_most_likely_token(expect):
    """top_p = 1e-9 keeps exactly the most likely token of each row, never nothing

    zh: top_p = 1e-9 时每行恰好保留最可能的 token，绝不会一个都不留
    """
    x = seeded_logits(3, torch.float32, shape=(16,))
    got = expect.call("filter_logits", x, top_p=1e-9)
    assert_kept(
        got,
        [[index] for index in x.argmax(dim=-1).tolist()],
        call_text("filter_logits", logits=say("<seeded (16, 24) float32>", "<随机 (16, 24) float32>"), top_p=1e-9),
        say(
            "the most likely token always stays; in float32 the cumulative sum may round below 1 - top_p, "
            "so it must be protected explicitly",
            "最可能的 token 永远保留；在 float32 下累积和可能舍入到 1 - top_p 以下，所以必须显式保护它",
        ),
    )


@pytest.mark.todo(3)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("top_p", [0.5, 0.9])
def test_top_p_matches_reference(expect, dtype, top_p):
    """Top-p alone on seeded logits (3, 4, 24) matches the reference

    zh: 只有 top-p：在随机 logits (3, 4, 24) 上与参考答案一致
    """
    expect.matches_reference("filter_logits", seeded_logits(4, dtype), top_p=top_p)


@pytest.mark.todo(3)
def test_top_p_reads_the_distribution_top_k_left(expect):
    """Order: top-p measures the softmax of what top-k kept, not the full distribution

    zh: 顺序：top-p 衡量的是 top-k 留下的 token 的 softmax，而不是完整分布
    """
    assert_composes(
        expect,
        seeded_logits(5),
        {"top_k": 6, "top_p": 0.6},
        {"top_k": 6},
        {"top_p": 0.6},
        say(
            "generate applies top-k first, then top-p on the softmax of the logits top-k left",
            "`generate` 先做 top-k，再在 top-k 留下的 logits 的 softmax 上做 top-p",
        ),
    )


# -- TODO 4: min-p ---------------------------------------------------------------------------------

MIN_P_ROWS = [[0.6, 0.2, 0.1, 0.06, 0.04], [0.04, 0.18, 0.25, 0.22, 0.31]]


@pytest.mark.todo(4)
@pytest.mark.parametrize(("min_p", "wanted"), [(0.15, [[0, 1, 2], [1, 2, 3, 4]]), (0.5, [[0], [1, 2, 3, 4]])])
def test_min_p_scales_with_the_top_probability(expect, min_p, wanted):
    """Min-p alone: a token stays if its probability is >= min_p times the top probability

    zh: 只有 min-p：概率不小于 min_p 乘以最大概率的 token 保留
    """
    x = from_probs(MIN_P_ROWS)
    got = expect.call("filter_logits", x, min_p=min_p)
    assert_kept(
        got,
        wanted,
        call_text("filter_logits", logits=f"log({MIN_P_ROWS})", min_p=min_p),
        say(
            "the bar is min_p times the row's largest probability, not min_p itself",
            "门槛是 min_p 乘以该行的最大概率，而不是 min_p 本身",
        ),
    )


@pytest.mark.todo(4)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("min_p", [0.05, 0.3, 1.0])
def test_min_p_matches_reference(expect, dtype, min_p):
    """Min-p alone on seeded logits (3, 4, 24) matches the reference

    zh: 只有 min-p：在随机 logits (3, 4, 24) 上与参考答案一致
    """
    expect.matches_reference("filter_logits", seeded_logits(6, dtype), min_p=min_p)


@pytest.mark.todo(4)
def test_min_p_reads_the_tempered_probabilities(expect):
    """Order: min-p measures the probabilities after the temperature

    zh: 顺序：min-p 衡量的是经过温度之后的概率
    """
    assert_composes(
        expect,
        seeded_logits(7),
        {"temperature": 2.0, "min_p": 0.2},
        {"temperature": 2.0},
        {"min_p": 0.2},
        say(
            "generate applies min-p after the temperature: a higher temperature lowers the top probability "
            "and lets more tokens pass",
            "`generate` 在温度之后做 min-p：温度越高，最大概率越低，通过的 token 越多",
        ),
    )


# -- whole filter_logits ---------------------------------------------------------------------------

FILTERS = [
    {"temperature": 0.7, "top_k": 10, "top_p": 0.9, "min_p": 0.05},
    {"temperature": 1.5, "top_k": 0, "top_p": 0.6, "min_p": 0.1},
    {"temperature": 0.3, "top_k": 3, "top_p": 1.0, "min_p": 0.0},
    {"temperature": 2.0, "top_k": 1, "top_p": 1e-9, "min_p": 1.0},
]


@pytest.mark.whole
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("filters", FILTERS, ids=lambda f: "-".join(str(v) for v in f.values()))
def test_filtered_logits_match_reference(expect, dtype, filters):
    """All four filters together on seeded logits (3, 4, 24) match the reference

    zh: 四种过滤一起作用在随机 logits (3, 4, 24) 上，与参考答案一致
    """
    expect.matches_reference("filter_logits", seeded_logits(8, dtype), **filters)


# -- TODO 5: the draw ------------------------------------------------------------------------------

SAMPLE_FILTERS = {"temperature": 0.8, "top_k": 8, "top_p": 0.8}


def sample_text(seed: int, **filters) -> str:
    logits = say("<seeded (3, 4, 24)>", "<随机 (3, 4, 24)>")
    generator = say(f"<seed {seed}>", f"<种子 {seed}>")
    return call_text("sample_tokens", logits=logits, generator=generator, **filters)


@pytest.mark.todo(5)
@pytest.mark.parametrize("seed", [10, 11])
def test_tokens_are_drawn_from_the_filtered_softmax(expect, learner, seed):
    """The generator's draw: torch.multinomial on the softmax of your filter_logits, one per row

    zh: 用生成器抽样：在你的 filter_logits 的 softmax 上做 torch.multinomial，每行一个
    """
    x = seeded_logits(seed)
    filtered = expect.call("filter_logits", x, **SAMPLE_FILTERS)
    rows = filtered.softmax(dim=-1).reshape(-1, V)
    wanted = torch.multinomial(rows, num_samples=1, generator=seeds.generator(seed)).reshape(x.shape[:-1])
    learner.manual_seed(seeds.number(GLOBAL_SEED + seed))  # the global RNG would draw other tokens
    got = expect.call("sample_tokens", x, seeds.generator(seed), **SAMPLE_FILTERS)
    tokens = got[0] if isinstance(got, tuple | list) and len(got) == 2 else got
    if not isinstance(tokens, torch.Tensor) or tokens.shape != wanted.shape or not torch.equal(tokens, wanted):
        have = tokens.tolist() if isinstance(tokens, torch.Tensor) else repr(tokens)
        raise AssertionError(
            say(
                f"{sample_text(seed, **SAMPLE_FILTERS)} drew tokens {have}; "
                f"torch.multinomial(softmax(filtered), 1, generator=generator) draws {wanted.tolist()}: "
                "sample (do not take the argmax) from the filtered distribution, with the generator passed in",
                f"{sample_text(seed, **SAMPLE_FILTERS)} 抽到的 token 为 {have}；"
                f"torch.multinomial(softmax(filtered), 1, generator=generator) 抽到的是 {wanted.tolist()}："
                "要从过滤后的分布中抽样（不是取 argmax），并使用传入的生成器",
            )
        )


@pytest.mark.todo(5)
@pytest.mark.parametrize("shape", [(), (2, 3)], ids=str)
def test_one_int64_token_per_row(expect, shape):
    """Logits (..., V) give tokens (...) of dtype int64, in [0, V)

    zh: logits (..., V) 得到 dtype 为 int64 的 token (...)，取值在 [0, V)
    """
    got = expect.call("sample_tokens", seeded_logits(12, shape=shape), seeds.generator(12))
    tokens = got[0] if isinstance(got, tuple | list) and len(got) == 2 else got
    ok = isinstance(tokens, torch.Tensor) and tokens.shape == shape and tokens.dtype == torch.int64
    if not ok or not bool(((tokens >= 0) & (tokens < V)).all()):
        have = f"{tuple(tokens.shape)} {tokens.dtype}" if isinstance(tokens, torch.Tensor) else repr(tokens)
        raise AssertionError(
            say(
                f"sample_tokens on logits of shape {(*shape, V)} returned tokens {have}; expected shape {shape}, "
                f"int64, in [0, {V}): one token per row, the vocabulary dimension gone",
                f"sample_tokens 在形状为 {(*shape, V)} 的 logits 上返回的 token 为 {have}；应为形状 {shape}、"
                f"int64、取值在 [0, {V})：每行一个 token，词表维去掉",
            )
        )


@pytest.mark.todo(5)
def test_sampling_draws_only_from_the_generator(expect, learner):
    """Every draw comes from the generator passed in: the global RNG is left alone

    zh: 每次抽样都来自传入的生成器：全局随机数生成器保持不变
    """
    learner.manual_seed(seeds.number(GLOBAL_SEED))
    before = learner.rng_state()
    expect.call("sample_tokens", seeded_logits(13), seeds.generator(13), **SAMPLE_FILTERS)
    if not torch.equal(before, learner.rng_state()):
        raise AssertionError(
            say(
                f"{sample_text(13, **SAMPLE_FILTERS)} drew from torch's global random generator; "
                "pass generator=generator to torch.multinomial so that a seed reproduces the draw",
                f"{sample_text(13, **SAMPLE_FILTERS)} 从 PyTorch 的全局随机数生成器抽样了；"
                "把 `generator=generator` 传给 `torch.multinomial`，同一个种子才能复现同样的抽样",
            )
        )


# -- TODO 6: the log-prob of the sampled token -----------------------------------------------------


@pytest.mark.todo(6)
@pytest.mark.parametrize("filters", [SAMPLE_FILTERS, {"temperature": 1.7, "min_p": 0.1}], ids=["k-p", "t-min_p"])
def test_log_probs_are_under_the_filtered_distribution(expect, filters):
    """Each log-prob is log_softmax(filter_logits(...)) at the token your function drew

    zh: 每个对数概率都是 log_softmax(filter_logits(...)) 在你的函数抽到的 token 处的值
    """
    x = seeded_logits(14)
    got = expect.call("sample_tokens", x, seeds.generator(14), **filters)
    if not isinstance(got, tuple | list) or len(got) != 2 or not isinstance(got[1], torch.Tensor):
        raise AssertionError(
            say("sample_tokens must return (tokens, log_probs)", "sample_tokens 必须返回 (tokens, log_probs)")
        )
    tokens, log_probs = got
    filtered = expect.call("filter_logits", x, **filters)
    wanted = filtered.log_softmax(dim=-1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    difference = compared(log_probs, wanted, 1e-9, 1e-9) if log_probs.shape == wanted.shape else "shape"
    if difference:
        raise AssertionError(
            say(
                f"{sample_text(14, **filters)}: the log-probs are not log_softmax(filter_logits(logits, ...)) at "
                "the sampled tokens; the token was drawn from the filtered, temperature-scaled distribution, "
                f"and its log-prob is taken under that one\n{difference}",
                f"{sample_text(14, **filters)}：对数概率不是 log_softmax(filter_logits(logits, ...)) 在被抽到的 "
                "token 处的值；token 是从经过温度和过滤的分布中抽出的，对数概率也要在这个分布下计算"
                f"\n{difference}",
            )
        )


# -- whole sample_tokens ---------------------------------------------------------------------------


@pytest.mark.whole
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("filters", FILTERS[:2], ids=["t-k-p-min_p", "t-p-min_p"])
def test_sampled_tokens_and_log_probs_match_reference(expect, reference, learner, dtype, filters):
    """The same generator seed gives the reference's tokens and log-probs

    zh: 相同的生成器种子得到与参考答案相同的 token 和对数概率
    """
    x = seeded_logits(15, dtype)
    wanted = reference.sample_tokens(x.clone(), seeds.generator(15), **filters)
    learner.manual_seed(seeds.number(GLOBAL_SEED + 15))
    got = expect.call("sample_tokens", x, seeds.generator(15), **filters)
    expect.same(got, wanted, sample_text(15, **filters), names=("tokens", "log_probs"))


def test_rejects_inputs_outside_the_contract(expect):
    """Accepts valid input; rejects bad logits, temperatures, top_k, top_p, min_p and generators

    zh: 接受合法输入；对不合法的 logits、温度、top_k、top_p、min_p 和生成器抛出 ValueError
    """
    x = seeded_logits(20)
    masked = x.clone()
    masked[..., :5] = -math.inf  # tokens ruled out before the filters: allowed
    expect.call("filter_logits", masked, temperature=0.5, top_k=3, top_p=0.9, min_p=0.1)
    expect.call("filter_logits", x, temperature=2, top_k=100, top_p=1.0, min_p=1.0)
    expect.call("sample_tokens", x, None, top_k=4)
    with_nan, with_inf, dead_row = x.clone(), x.clone(), x.clone()
    with_nan[0, 1, 2] = math.nan
    with_inf[1, 0, 3] = math.inf
    dead_row[2, 3] = -math.inf
    bad = [
        (say("integer logits", "`logits` 是整数型"), (x.long(),), {}),
        (say("a 0-d tensor", "0 维张量"), (torch.tensor(1.0),), {}),
        (say("a NaN logit", "`logits` 中有 NaN"), (with_nan,), {}),
        (say("a +inf logit", "`logits` 中有 +inf"), (with_inf,), {}),
        (say("a row of -inf only", "有一行全是 -inf"), (dead_row,), {}),
        (say("temperature 0", "温度为 0"), (x,), {"temperature": 0.0}),
        (say("a negative temperature", "温度为负"), (x,), {"temperature": -1.0}),
        (say("a NaN temperature", "温度为 NaN"), (x,), {"temperature": math.nan}),
        (say("top_k -1", "top_k 为 -1"), (x,), {"top_k": -1}),
        (say("a float top_k", "top_k 是浮点数"), (x,), {"top_k": 2.5}),
        (say("top_p 0", "top_p 为 0"), (x,), {"top_p": 0.0}),
        (say("top_p above 1", "top_p 大于 1"), (x,), {"top_p": 1.5}),
        (say("a negative min_p", "min_p 为负"), (x,), {"min_p": -0.1}),
        (say("min_p above 1", "min_p 大于 1"), (x,), {"min_p": 1.5}),
    ]
    for why, args, kwargs in bad:
        expect.raises_value_error(why, "filter_logits", *args, **kwargs)
    expect.raises_value_error(say("temperature 0", "温度为 0"), "sample_tokens", x, None, temperature=0.0)
    expect.raises_value_error(say("a seed instead of a generator", "传入种子而不是生成器"), "sample_tokens", x, 7)
