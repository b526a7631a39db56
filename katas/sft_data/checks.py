"""Checks for sft_example (TODO 1), collate (TODOs 2 and 3) and pack_bfd (TODOs 4 and 5).

Fixtures: small hand-built examples for the mechanisms, and seeded random ones for the whole
functions (prompts of 0-6 tokens, completions of 0-7, some ending with EOS; packing inputs with
empty and over-long sequences).

Each check reads only what one step decides: in TODO 1 the input_ids of sft_example (EOS), its
labels against the learner's own input_ids, a truncated call against the learner's own
untruncated one; TODO 2 the padded keys; TODO 3 the row, position_ids and labels of the
padding-free batch, and its boundary keys on unpacked examples; TODO 4 inputs with a single
non-empty sequence (one row, whatever the packing); TODO 5 which sequences share a row (each
sequence's tokens are its own number), with one sequence per row the order of the rows, and an
input whose rows every packing rule agrees on. Whole-function comparisons are marked whole.
"""

import random

import pytest
import torch

from grader.content import seeds
from grader.content.i18n import say

EOS = 2
PAD = 0
IGNORE = -100


def rng(seed: int) -> random.Random:
    return random.Random(seeds.number(seed))


def random_examples(seed: int, count: int = 5) -> list[dict]:
    """Seeded sft_example outputs (built here, as the reference builds them): labels -100 on the prompt."""
    draw = rng(seed)
    examples = []
    for _ in range(count):
        prompt = [draw.randint(3, 99) for _ in range(draw.randint(1, 6))]
        completion = [draw.randint(3, 99) for _ in range(draw.randint(1, 7))] + [EOS]
        examples.append({"input_ids": prompt + completion, "labels": [IGNORE] * len(prompt) + completion})
    return examples


def numbered(lengths: list[int]) -> list[dict]:
    """One sequence per length, every token of sequence i equal to i + 1 and every label to -(i + 1)."""
    return [{"input_ids": [i + 1] * n, "labels": [-(i + 1)] * n} for i, n in enumerate(lengths)]


def result(expect, name: str, *args, keys=(), **kwargs):
    """The learner's call, checked to be a dict holding `keys`."""
    out = expect.call(name, *args, **kwargs)
    if not (isinstance(out, dict) and set(keys) <= set(out)):
        got = sorted(out) if isinstance(out, dict) else type(out).__name__
        raise AssertionError(
            say(
                f"{name}(...) returned {got}; expected a dict with the keys {list(keys)}",
                f"`{name}(...)` 返回了 {got}；应返回含键 {list(keys)} 的 dict",
            )
        )
    return out


def as_list(value):
    return value.tolist() if isinstance(value, torch.Tensor) else value


def rows(expect, *args, **kwargs) -> list[dict]:
    """The learner's pack_bfd(...) checked to be a list of dicts with the three keys."""
    out = expect.call("pack_bfd", *args, **kwargs)
    keys = {"input_ids", "labels", "seq_lengths"}
    if not (isinstance(out, list) and all(isinstance(row, dict) and keys <= set(row) for row in out)):
        raise AssertionError(
            say(
                "pack_bfd(...) must return a list of dicts with input_ids, labels and seq_lengths",
                "`pack_bfd(...)` 必须返回 dict 的列表，每个含 input_ids、labels 和 seq_lengths",
            )
        )
    return out


def differs(what_en: str, what_zh: str, got, want) -> AssertionError:
    return AssertionError(say(what_en, what_zh) + say(f": expected {want}, got {got}", f"：应为 {want}，实际为 {got}"))


# -- TODO 1: EOS ----------------------------------------------------------------------------------


@pytest.mark.todo(1)
def test_eos_is_appended_when_missing(expect):
    """A completion without EOS gets exactly one at its end; an empty completion becomes [EOS]

    zh: 没有 EOS 的回答在末尾恰好补上一个；空回答变成 [EOS]
    """
    for prompt, completion, want in (
        ([5, 6], [7, 8], [5, 6, 7, 8, EOS]),
        ([5], [7, EOS, 8], [5, 7, EOS, 8, EOS]),
        ([5, 6], [], [5, 6, EOS]),
    ):
        got = result(expect, "sft_example", prompt, completion, EOS, keys=("input_ids",))["input_ids"]
        if got != want:
            raise differs(
                f"sft_example({prompt}, {completion}, eos_token_id={EOS})['input_ids']",
                f"`sft_example({prompt}, {completion}, eos_token_id={EOS})['input_ids']`",
                got,
                want,
            )


@pytest.mark.todo(1)
def test_eos_is_not_doubled(expect):
    """A completion that already ends with EOS is left as it is: no second EOS

    zh: 已经以 EOS 结尾的回答保持原样：不会再补第二个 EOS
    """
    for prompt, completion in (([5, 6], [7, EOS]), ([], [EOS])):
        got = result(expect, "sft_example", prompt, completion, EOS, keys=("input_ids",))["input_ids"]
        if got != prompt + completion:
            raise differs(
                f"sft_example({prompt}, {completion}, eos_token_id={EOS})['input_ids'] (it ends with EOS already)",
                f"`sft_example({prompt}, {completion}, eos_token_id={EOS})['input_ids']`（已以 EOS 结尾）",
                got,
                prompt + completion,
            )


# -- TODO 1: labels -------------------------------------------------------------------------------


@pytest.mark.todo(1)
@pytest.mark.parametrize(("prompt", "completion"), [([11, 12, 13], [21, 22, EOS]), ([11], [21, 22]), ([], [21])])
def test_labels_ignore_the_prompt_and_keep_the_completion(expect, prompt, completion):
    """labels are -100 on the prompt's positions and equal to input_ids on the completion's

    zh: labels 在提示词的位置上为 -100，在回答的位置上等于 input_ids
    """
    out = result(expect, "sft_example", prompt, completion, EOS, keys=("input_ids", "labels"))
    ids = out["input_ids"]
    want = [IGNORE] * len(prompt) + list(ids[len(prompt) :])
    if out["labels"] != want:
        raise differs(
            f"sft_example({prompt}, {completion}, eos_token_id={EOS}) with input_ids {ids}: labels",
            f"`sft_example({prompt}, {completion}, eos_token_id={EOS})` 的 input_ids 为 {ids}：labels",
            out["labels"],
            want,
        )


# -- TODO 1: truncation ---------------------------------------------------------------------------


@pytest.mark.todo(1)
@pytest.mark.parametrize("max_length", [1, 3, 5, 6, 20])
def test_truncation_keeps_the_start(expect, max_length):
    """With max_length, input_ids and labels are the first max_length of the untruncated ones

    zh: 给定 max_length 时，input_ids 与 labels 是不截断结果的前 max_length 个
    """
    prompt, completion = [11, 12, 13], [21, 22, 23, 24]
    keys = ("input_ids", "labels")
    full = result(expect, "sft_example", prompt, completion, EOS, keys=keys)
    cut = result(expect, "sft_example", prompt, completion, EOS, max_length=max_length, keys=keys)
    for key in keys:
        want = list(full[key])[:max_length]
        if cut[key] != want:
            raise differs(
                f"sft_example({prompt}, {completion}, {EOS}, max_length={max_length})[{key!r}]"
                f" (untruncated: {full[key]})",
                f"`sft_example({prompt}, {completion}, {EOS}, max_length={max_length})[{key!r}]`"
                f"（不截断时为 {full[key]}）",
                cut[key],
                want,
            )


# -- TODO 2: padding ------------------------------------------------------------------------------

UNEVEN = [
    {"input_ids": [5, 6, 7, 8], "labels": [IGNORE, IGNORE, 7, 8]},
    {"input_ids": [9, 10], "labels": [IGNORE, 10]},
    {"input_ids": [11, 12, 13], "labels": [IGNORE, 12, 13]},
]


@pytest.mark.todo(2)
def test_padded_rows_are_right_padded_with_the_pad_token(expect):
    """Padded: input_ids right-padded with pad_token_id, attention_mask 1 on tokens and 0 on padding

    zh: 填充模式：input_ids 在右侧用 pad_token_id 填充，attention_mask 在 token 上为 1、填充上为 0
    """
    out = result(expect, "collate", UNEVEN, 1, keys=("input_ids", "attention_mask"))
    want_ids = [[5, 6, 7, 8], [9, 10, 1, 1], [11, 12, 13, 1]]
    want_mask = [[1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 1, 0]]
    for key, want in (("input_ids", want_ids), ("attention_mask", want_mask)):
        if as_list(out[key]) != want:
            raise differs(
                f"collate(three examples of 4, 2 and 3 tokens, pad_token_id=1)[{key!r}]",
                f"`collate(三个分别为 4、2、3 个 token 的样本, pad_token_id=1)[{key!r}]`",
                as_list(out[key]),
                want,
            )


@pytest.mark.todo(2)
def test_padded_labels_are_minus_100_on_padding(expect):
    """Padded: labels right-padded with -100, not with the pad token, so padding adds no loss

    zh: 填充模式：labels 在右侧用 -100 填充，而不是用填充 token，这样填充不产生损失
    """
    out = result(expect, "collate", UNEVEN, 1, keys=("labels",))
    want = [[IGNORE, IGNORE, 7, 8], [IGNORE, 10, IGNORE, IGNORE], [IGNORE, 12, 13, IGNORE]]
    if as_list(out["labels"]) != want:
        raise differs(
            "collate(three examples of 4, 2 and 3 tokens, pad_token_id=1)['labels']",
            "`collate(三个分别为 4、2、3 个 token 的样本, pad_token_id=1)['labels']`",
            as_list(out["labels"]),
            want,
        )


# -- TODO 3: padding-free row ---------------------------------------------------------------------


@pytest.mark.todo(3)
def test_padding_free_position_ids_restart_for_each_sequence(expect):
    """Padding-free: one row of all tokens, position_ids 0, 1, ... restarting at each example

    zh: 无填充模式：所有 token 排成一行，position_ids 为 0, 1, ...，在每个样本处重新开始
    """
    out = result(expect, "collate", UNEVEN, 1, padding_free=True, keys=("input_ids", "position_ids"))
    for key, want in (
        ("input_ids", [[5, 6, 7, 8, 9, 10, 11, 12, 13]]),
        ("position_ids", [[0, 1, 2, 3, 0, 1, 0, 1, 2]]),
    ):
        if as_list(out[key]) != want:
            raise differs(
                f"collate(examples of 4, 2 and 3 tokens, padding_free=True)[{key!r}]",
                f"`collate(分别为 4、2、3 个 token 的样本, padding_free=True)[{key!r}]`",
                as_list(out[key]),
                want,
            )


@pytest.mark.todo(3)
def test_padding_free_ignores_each_first_label(expect):
    """Padding-free: labels are the examples' labels end to end, -100 at each sequence's first token

    zh: 无填充模式：labels 是各样本的 labels 首尾相接，每个序列的第一个 token 处为 -100
    """
    examples = [{"input_ids": [5, 6, 7], "labels": [5, 6, 7]}, {"input_ids": [8, 9], "labels": [8, 9]}]
    out = result(expect, "collate", examples, 1, padding_free=True, keys=("labels",))
    want = [[IGNORE, 6, 7, IGNORE, 9]]
    if as_list(out["labels"]) != want:
        raise differs(
            "collate([[5, 6, 7], [8, 9]] labelled in full, padding_free=True)['labels']",
            "`collate([[5, 6, 7], [8, 9]] 全部有标签, padding_free=True)['labels']`",
            as_list(out["labels"]),
            want,
        )


@pytest.mark.todo(3)
def test_padding_free_position_ids_restart_inside_packed_rows(expect):
    """Padding-free on packed rows: position_ids restart at every entry of seq_lengths

    zh: 无填充模式处理打包行：position_ids 在 seq_lengths 的每一项处都重新开始
    """
    examples = [
        {"input_ids": [5, 6, 7, 8, 9], "labels": [5, 6, 7, 8, 9], "seq_lengths": [3, 2]},
        {"input_ids": [10, 11], "labels": [10, 11], "seq_lengths": [2]},
    ]
    out = result(expect, "collate", examples, 1, padding_free=True, keys=("position_ids", "labels"))
    for key, want in (("position_ids", [[0, 1, 2, 0, 1, 0, 1]]), ("labels", [[IGNORE, 6, 7, IGNORE, 9, IGNORE, 11]])):
        if as_list(out[key]) != want:
            raise differs(
                f"collate(rows with seq_lengths [3, 2] and [2], padding_free=True)[{key!r}]",
                f"`collate(seq_lengths 为 [3, 2] 和 [2] 的行, padding_free=True)[{key!r}]`",
                as_list(out[key]),
                want,
            )


# -- TODO 3: boundaries ---------------------------------------------------------------------------


@pytest.mark.todo(3)
def test_cu_seq_lens_start_with_zero(expect):
    """Padding-free: cu_seq_lens_q and _k are [0, 4, 6, 9], int32: where each sequence starts, then the end

    zh: 无填充模式：cu_seq_lens_q 与 _k 为 [0, 4, 6, 9]（int32）：每个序列的起点，最后是总长度
    """
    out = result(expect, "collate", UNEVEN, 1, padding_free=True, keys=("cu_seq_lens_q", "cu_seq_lens_k"))
    for key in ("cu_seq_lens_q", "cu_seq_lens_k"):
        got = out[key]
        if not (isinstance(got, torch.Tensor) and got.dtype == torch.int32 and got.tolist() == [0, 4, 6, 9]):
            raise differs(
                f"collate(examples of 4, 2 and 3 tokens, padding_free=True)[{key!r}]",
                f"`collate(分别为 4、2、3 个 token 的样本, padding_free=True)[{key!r}]`",
                repr(got),
                "tensor([0, 4, 6, 9], dtype=torch.int32)",
            )


@pytest.mark.todo(3)
def test_max_length_and_seq_idx(expect):
    """Padding-free: max_length_q and _k are 4 (the longest sequence), seq_idx [[0, 0, 0, 0, 1, 1, 2, 2, 2]]

    zh: 无填充模式：max_length_q 与 _k 为 4（最长的序列），seq_idx 为 [[0, 0, 0, 0, 1, 1, 2, 2, 2]]
    """
    out = result(expect, "collate", UNEVEN, 1, padding_free=True, keys=("max_length_q", "max_length_k", "seq_idx"))
    for key, want in (("max_length_q", 4), ("max_length_k", 4), ("seq_idx", [[0, 0, 0, 0, 1, 1, 2, 2, 2]])):
        if as_list(out[key]) != want:
            raise differs(
                f"collate(examples of 4, 2 and 3 tokens, padding_free=True)[{key!r}]",
                f"`collate(分别为 4、2、3 个 token 的样本, padding_free=True)[{key!r}]`",
                as_list(out[key]),
                want,
            )


# -- TODO 4: empties and over-long sequences ------------------------------------------------------


@pytest.mark.todo(4)
def test_empty_sequences_are_dropped(expect):
    """pack_bfd: empty sequences leave no trace: one sequence of 5 and two empty ones give one row, [5]

    zh: `pack_bfd`：空序列不留痕迹：一个 5 个 token 的序列加两个空序列，得到一行，seq_lengths 为 [5]
    """
    examples = [{"input_ids": [], "labels": []}, *numbered([5]), {"input_ids": [], "labels": []}]
    got = rows(expect, examples, 8)
    want = [{"input_ids": [1] * 5, "labels": [-1] * 5, "seq_lengths": [5]}]
    if got != want:
        raise differs(
            "pack_bfd([empty, 5 tokens, empty], seq_length=8)",
            "`pack_bfd([空, 5 个 token, 空], seq_length=8)`",
            got,
            want,
        )


@pytest.mark.todo(4)
def test_overlong_sequences_keep_their_start_and_lose_the_rest(expect):
    """pack_bfd: a sequence of 13 with seq_length 8 keeps its first 8 tokens; the other 5 are dropped

    zh: `pack_bfd`：seq_length 为 8 时，13 个 token 的序列保留前 8 个，其余 5 个丢弃
    """
    examples = [{"input_ids": list(range(10, 23)), "labels": list(range(-10, -23, -1))}]
    got = rows(expect, examples, 8)
    want = [{"input_ids": list(range(10, 18)), "labels": list(range(-10, -18, -1)), "seq_lengths": [8]}]
    if got != want:
        raise differs(
            "pack_bfd([13 tokens 10..22], seq_length=8)", "`pack_bfd([13 个 token 10..22], seq_length=8)`", got, want
        )


# -- TODO 5: best-fit decreasing ------------------------------------------------------------------

# seq_length 10: best-fit decreasing packs (8, 2), (8, 1), (6, 3, 1), (5); first fit in input
# order, worst fit and first-fit decreasing each pack some of them differently.
BFD_LENGTHS = [2, 8, 5, 1, 1, 3, 8, 6]


def partition(got: list[dict]) -> list[list[int]]:
    """Which sequences share a row: the sorted sequence numbers of each row, rows sorted."""
    return sorted(sorted(set(row["input_ids"])) for row in got)


@pytest.mark.todo(5)
@pytest.mark.parametrize(("lengths", "seq_length"), [(BFD_LENGTHS, 10), ([2, 6, 3, 4, 1, 5], 8)])
def test_best_fit_decreasing_puts_the_same_sequences_together(expect, reference, lengths, seq_length):
    """pack_bfd: the longest first, each into the open row with the least room it fits in

    zh: `pack_bfd`：最长的先放，每个放进能容纳它、剩余空间最小的已开行
    """
    examples = numbered(lengths)
    want = partition(reference.pack_bfd(examples, seq_length))
    got = partition(rows(expect, examples, seq_length))
    if got != want:
        raise differs(
            f"pack_bfd(sequences 1, 2, ... of lengths {lengths}, seq_length={seq_length}):"
            " the sequences sharing each row",
            f"`pack_bfd(长度为 {lengths} 的序列 1, 2, ..., seq_length={seq_length})`：每一行包含的序列",
            got,
            want,
        )


@pytest.mark.todo(5)
def test_rows_come_longest_first(expect):
    """pack_bfd: with one sequence per row, rows come longest first; equal lengths in input order

    zh: `pack_bfd`：每行只有一个序列时，行按长度从长到短排列；等长的按输入顺序
    """
    lengths = [6, 8, 7, 8, 9]  # no two fit in 10
    got = [row["input_ids"][0] if row["input_ids"] else None for row in rows(expect, numbered(lengths), 10)]
    want = [5, 2, 4, 3, 1]
    if got != want:
        raise differs(
            f"pack_bfd(sequences 1..5 of lengths {lengths}, seq_length=10): the sequence of each row, in order",
            f"`pack_bfd(长度为 {lengths} 的序列 1..5, seq_length=10)`：各行依次对应的序列",
            got,
            want,
        )


# -- TODO 5: rows ---------------------------------------------------------------------------------


@pytest.mark.todo(5)
def test_each_row_holds_its_sequences_labels_and_lengths(expect):
    """pack_bfd: lengths [5, 3, 2, 2], seq_length 8: rows [5, 3] and [2, 2], tokens, labels and seq_lengths

    zh: `pack_bfd`：长度 [5, 3, 2, 2]、seq_length 为 8：两行 [5, 3] 与 [2, 2]，含 token、标签和 seq_lengths
    """
    got = rows(expect, numbered([5, 3, 2, 2]), 8)
    want = [
        {"input_ids": [1] * 5 + [2] * 3, "labels": [-1] * 5 + [-2] * 3, "seq_lengths": [5, 3]},
        {"input_ids": [3, 3, 4, 4], "labels": [-3, -3, -4, -4], "seq_lengths": [2, 2]},
    ]
    if got != want:
        raise differs(
            "pack_bfd(lengths [5, 3, 2, 2], seq_length=8)", "`pack_bfd(长度 [5, 3, 2, 2], seq_length=8)`", got, want
        )


# -- whole functions ------------------------------------------------------------------------------


@pytest.mark.whole
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sft_example_matches_reference(expect, seed):
    """sft_example matches the reference on random prompts and completions, with and without max_length

    zh: 在随机的提示词与回答上，`sft_example` 与参考答案一致，有无 max_length 皆然
    """
    draw = rng(seed)
    for _ in range(6):
        prompt = [draw.randint(3, 99) for _ in range(draw.randint(0, 6))]
        completion = [draw.randint(3, 99) for _ in range(draw.randint(0, 7))] + [EOS] * draw.randint(0, 1)
        expect.matches_reference("sft_example", prompt, completion, EOS)
        expect.matches_reference("sft_example", prompt, completion, EOS, max_length=draw.randint(1, 12))


@pytest.mark.whole
@pytest.mark.parametrize(("seed", "padding_free"), [(3, False), (4, True), (5, False), (6, True)])
def test_collate_matches_reference(expect, seed, padding_free):
    """collate matches the reference on random examples: every key, dtype and value

    zh: 在随机样本上，`collate` 与参考答案一致：每个键、dtype 和数值
    """
    expect.matches_reference("collate", random_examples(seed, count=2 + seed % 3), PAD, padding_free=padding_free)


@pytest.mark.whole
@pytest.mark.parametrize(("seed", "seq_length"), [(7, 8), (8, 16), (9, 5)])
def test_pack_bfd_matches_reference(expect, seed, seq_length):
    """pack_bfd matches the reference on random sequences with empty and over-long ones

    zh: 在含空序列和超长序列的随机序列上，`pack_bfd` 与参考答案一致
    """
    draw = rng(seed)
    examples = []
    for _ in range(14):
        n = draw.choice([0, draw.randint(1, seq_length // 2), draw.randint(1, seq_length + 4)])
        ids = [draw.randint(3, 99) for _ in range(n)]
        examples.append({"input_ids": ids, "labels": [draw.choice([IGNORE, token]) for token in ids]})
    examples[0] = {"input_ids": [7] * (seq_length + 3), "labels": [7] * (seq_length + 3)}
    expect.matches_reference("pack_bfd", examples, seq_length)


@pytest.mark.whole
def test_packed_rows_collate_padding_free(expect, reference):
    """The pipeline: sft_example, pack_bfd, then collate padding-free, as the reference does it

    zh: 整条流程：`sft_example`、`pack_bfd`，再无填充地 `collate`，与参考答案一致
    """
    examples = [reference.sft_example([4 + i] * (1 + i % 3), [20 + i] * (2 + i % 4), EOS) for i in range(7)]
    packed = reference.pack_bfd(examples, 9)
    expect.matches_reference("pack_bfd", examples, 9)
    expect.matches_reference("collate", packed, PAD, padding_free=True)
    expect.matches_reference("collate", packed, PAD)


def test_rejects_inputs_outside_the_contract(expect):
    """Accepts valid input; rejects bad token ids, lengths, examples, pad_token_id and padding_free

    zh: 接受合法输入；对错误的 token id、长度、样本、pad_token_id 与 padding_free 抛出 ValueError
    """
    good = [{"input_ids": [5, 6], "labels": [IGNORE, 6]}]
    expect.call("sft_example", [], [], EOS)  # valid: an empty prompt and completion
    expect.call("sft_example", [5], [6], EOS, max_length=1)
    expect.call("collate", good, PAD)
    expect.call("collate", [{**good[0], "seq_lengths": [1, 1]}], PAD, padding_free=True)
    expect.call("pack_bfd", [*good, {"input_ids": [], "labels": []}], 1)
    bad = [
        (say("a prompt that is not a list", "提示词不是列表"), "sft_example", ((5, 6), [7], EOS), {}),
        (say("a negative token id", "token id 为负"), "sft_example", ([5], [-7], EOS), {}),
        (say("a float token id", "token id 为浮点数"), "sft_example", ([5.0], [7], EOS), {}),
        (say("a bool EOS", "EOS 为 bool"), "sft_example", ([5], [7], True), {}),
        ("max_length = 0", "sft_example", ([5], [7], EOS), {"max_length": 0}),
        (say("no examples", "没有样本"), "collate", ([], PAD), {}),
        (say("an example without labels", "样本缺少 labels"), "collate", ([{"input_ids": [5]}], PAD), {}),
        (
            say("labels of another length", "labels 长度不同"),
            "collate",
            ([{"input_ids": [5, 6], "labels": [6]}], PAD),
            {},
        ),
        (say("an empty example", "空样本"), "collate", ([{"input_ids": [], "labels": []}], PAD), {}),
        (
            say("seq_lengths that do not add up", "seq_lengths 之和不等于长度"),
            "collate",
            ([{**good[0], "seq_lengths": [3]}], PAD),
            {},
        ),
        (
            say("seq_lengths in one example only", "只有一个样本带 seq_lengths"),
            "collate",
            ([{**good[0], "seq_lengths": [2]}, good[0]], PAD),
            {},
        ),
        (say("a negative pad_token_id", "pad_token_id 为负"), "collate", (good, -1), {}),
        (say("padding_free that is not a bool", "padding_free 不是 bool"), "collate", (good, PAD), {"padding_free": 1}),
        ("seq_length = 0", "pack_bfd", (good, 0), {}),
        (say("every example empty", "所有样本都为空"), "pack_bfd", ([{"input_ids": [], "labels": []}], 4), {}),
        (
            say("an extra key", "多出一个键"),
            "pack_bfd",
            ([{**good[0], "attention_mask": [1, 1]}], 4),
            {},
        ),
    ]
    for why, name, args, kwargs in bad:
        expect.raises_value_error(why, name, *args, **kwargs)
