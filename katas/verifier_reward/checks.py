"""Checks for extract_answer (TODO 1), has_well_formed_answer (TODO 2), reward_gsm8k (TODO 3),
verify_integer_response (TODO 4) and combine_rewards (TODO 5).

Most checks run a short list of named cases against the reference and stop at the first case
that differs, naming it. The cases are the grpo_mechanism lab's fixtures
(gpu_labs/grpo_mechanism.py), a TRL-style weighted check of reward columns with None, plus strings a reward hacker would try: an empty tag, several
tags, the gold number buried among guesses or restated before a wrong answer, "#### 12" before
"<answer>13</answer>". Each plausible wrong rule fails a different first case.

reward_gsm8k calls TODOs 1 and 2: its TODO-3 checks use plain answers that every extraction and
format rule reads alike, and its checks on the lesson cases and the hacks are marked whole.
"""

import math
import random

import pytest
import torch

from grader.content import seeds
from grader.content.i18n import say


def each_case(expect, name, cases):
    """Compare the learner with the reference on every (label, args) case; name the first that differs."""
    for label, args in cases:
        try:
            expect.matches_reference(name, *args)
        except AssertionError as failure:
            raise type(failure)(say(f"case '{label}': {failure}", f"用例“{label}”：{failure}")) from None


# -- TODO 1: extract_answer ------------------------------------------------------------------------


@pytest.mark.todo(1)
def test_extract_follows_the_priority_tag_then_hashes_then_last_number(expect):
    """Extracted answers vs the reference: the tag beats "#### N", which beats the last number

    zh: 与参考答案比较提取结果：答案标签优先于 “#### N”，“#### N” 优先于最后一个数字
    """
    each_case(
        expect,
        "extract_answer",
        [
            (
                say("the tag beats the last number", "答案标签优先于最后一个数字"),
                ("<answer>13</answer> I checked it 12 times.",),
            ),
            (say("the tag beats ####", "答案标签优先于 ####"), ("#### 12\nOn second thought: <answer>13</answer>",)),
            (say("#### beats the last number", "#### 优先于最后一个数字"), ("#### 72\nThat took 3 steps.",)),
            (say("the last #### counts", "以最后一个 #### 为准"), ("#### 12\nNo, redo it.\n#### 13",)),
            (say("a GSM8K solution", "一份 GSM8K 解答"), ("48 / 2 = 24 clips in May.\n48 + 24 = 72\n#### 72",)),
        ],
    )


@pytest.mark.todo(1)
def test_extract_falls_back_to_the_last_number(expect):
    """Extracted answers vs the reference without a tag or "####": the last number, or None

    zh: 没有标签也没有 “####” 时与参考答案比较提取结果：取最后一个数字，没有数字则为 None
    """
    each_case(
        expect,
        "extract_answer",
        [
            (
                say("the last number is the answer", "最后一个数字就是答案"),
                ("First 3 apples, then 4 more, so 7 in total.",),
            ),
            (
                say("gold restated before a wrong final answer", "先复述标准答案，最终答案却是错的"),
                ("The question mentions 12 eggs. I think it is 13.",),
            ),
            (
                say("the right number buried among guesses", "正确的数字埋在一串猜测里"),
                ("It could be 10, 11, 12, 13 or 14.",),
            ),
            (say("no number at all", "完全没有数字"), ("I do not know.",)),
        ],
    )


@pytest.mark.todo(1)
def test_extract_reads_thousands_separators_signs_and_decimals(expect):
    """Extracted answers vs the reference: "1,234" is 1234.0, signs and decimals are kept

    zh: 与参考答案比较提取结果：“1,234” 读作 1234.0，负数和小数保留符号与小数部分
    """
    each_case(
        expect,
        "extract_answer",
        [
            (say("thousands separator", "千位分隔符"), ("The farm earns $1,234 a week.",)),
            (say("#### with separators", "带分隔符的 ####"), ("#### 12,000",)),
            (say("millions in a tag", "标签里的百万级数字"), ("<answer>1,000,000</answer>",)),
            (say("negative number", "负数"), ("The temperature fell to -7 degrees.",)),
            (say("decimal number", "小数"), ("Each pencil costs 0.25 dollars.",)),
            (say("negative decimal in a tag", "标签里的负小数"), ("<answer>-4.5</answer>",)),
        ],
    )


@pytest.mark.todo(1)
def test_extract_trusts_the_last_tag_and_never_looks_past_an_empty_one(expect):
    """Extracted answers vs the reference: the last tag counts, an empty one gives None

    zh: 与参考答案比较提取结果：多个标签时以最后一个为准，空标签或无数字的标签返回 None，不回退
    """
    each_case(
        expect,
        "extract_answer",
        [
            (
                say("numbers after the tag do not count", "标签之后的数字不算"),
                ("<answer>13</answer> (after 12 tries)",),
            ),
            (say("the tag's last number", "取标签里的最后一个数字"), ("<answer>12 or 13</answer>",)),
            (say("a tag over several lines", "跨多行的标签"), ("<answer>\n13\n</answer> after 12 tries",)),
            (
                say("several tags: the last one counts", "多个标签：以最后一个为准"),
                ("<answer>12</answer> no, wait: <answer>13</answer> done",),
            ),
            (say("an empty tag is no answer", "空标签就是没有答案"), ("There are 12 apples. <answer></answer>",)),
            (
                say("a tag without a number is no answer", "没有数字的标签就是没有答案"),
                ("12 apples in all. <answer>twelve</answer>",),
            ),
            (say("an unclosed tag is not a tag", "未闭合的标签不算标签"), ("<answer>42",)),
        ],
    )


# -- TODO 2: has_well_formed_answer ----------------------------------------------------------------


@pytest.mark.todo(2)
def test_well_formed_accepts_one_tag_around_one_number(expect):
    """Format verdicts vs the reference: one tag around one number (spaces allowed) passes

    zh: 与参考答案比较格式判断：恰好一个标签、其中只有一个数字（允许空白）即为合格
    """
    each_case(
        expect,
        "has_well_formed_answer",
        [
            (say("a bare tag", "只有一个标签"), ("<answer>42</answer>",)),
            (
                say("reasoning, then a tag with spaces", "先推理，再给出带空白的标签"),
                ("48 + 24 = 72, so\n<answer> 72 </answer>",),
            ),
            (say("separators and sign", "分隔符和负号"), ("<answer>-1,234.5</answer>",)),
            (say("a tag over several lines", "跨多行的标签"), ("<answer>\n42\n</answer>",)),
        ],
    )


@pytest.mark.todo(2)
def test_well_formed_rejects_empty_extra_and_broken_tags(expect):
    """Format verdicts vs the reference: two, empty, wordy or broken tags fail

    zh: 与参考答案比较格式判断：两个标签、空标签、标签里有文字或单位、标签不完整，都不合格
    """
    each_case(
        expect,
        "has_well_formed_answer",
        [
            (say("two tags", "两个标签"), ("<answer>4</answer> or <answer>4</answer>",)),
            (say("an empty tag", "空标签"), ("<answer></answer>",)),
            (say("words in the tag", "标签里是文字"), ("<answer>forty-two</answer>",)),
            (say("a unit in the tag", "标签里带单位"), ("<answer>42 apples</answer>",)),
            (say("an unclosed tag", "未闭合的标签"), ("<answer>42",)),
            (say("a stray closing marker", "多出一个闭合标记"), ("<answer>42</answer></answer>",)),
            (say("no tag", "没有标签"), ("The answer is 42.",)),
        ],
    )


# -- TODO 3: reward_gsm8k --------------------------------------------------------------------------


@pytest.mark.todo(3)
def test_reward_values_where_extraction_and_format_are_plain(expect):
    """Reward values vs the reference on plain answers: 1.0 correct, 0.2 format, 1.2 both, no gold

    One number, at most one tag around it: every extraction and format rule reads these alike,
    so only the reward's own arithmetic (TODO 3) can differ.

    zh: 在朴素回答上与参考答案比较奖励值：答对 1.0，格式 0.2，两者兼有 1.2，无标准答案
    """
    each_case(
        expect,
        "reward_gsm8k",
        [
            (say("correct, in one tag", "答对，在一个标签里"), ("<answer>72</answer>", 72.0)),
            (say("correct, no tag", "答对，没有标签"), ("So 72.", 72.0)),
            (say("wrong, in one tag", "答错，在一个标签里"), ("<answer>71</answer>", 72.0)),
            (say("wrong, no tag", "答错，没有标签"), ("I get 71.", 72.0)),
            (say("no gold answer", "没有标准答案"), ("<answer>72</answer>", None)),
            (say("an integer gold", "整数类型的标准答案"), ("<answer>72</answer>", 72)),
        ],
    )


@pytest.mark.whole
def test_reward_values_on_the_lesson_cases(expect):
    """Reward values vs the reference on the lesson cases (the whole function, TODOs 1-3)

    zh: 在讲义案例上与参考答案比较奖励值（整个函数，TODO 1-3）
    """
    each_case(
        expect,
        "reward_gsm8k",
        [
            (say("correct, in one tag", "答对，在一个标签里"), ("48 + 24 = 72\n<answer>72</answer>", 72.0)),
            (say("correct, no tag", "答对，没有标签"), ("48 + 24 = 72, so 72 clips in all.", 72.0)),
            (say("wrong, in one tag", "答错，在一个标签里"), ("<answer>71</answer>", 72.0)),
            (say("wrong, no tag", "答错，没有标签"), ("I get 71.", 72.0)),
            (say("correct via ####", "通过 #### 答对"), ("48 + 24 = 72\n#### 72", 72.0)),
            (say("no gold answer", "没有标准答案"), ("<answer>72</answer>", None)),
            (say("an integer gold and separators", "整数类型的标准答案，带分隔符"), ("<answer>1,234</answer>", 1234)),
        ],
    )


@pytest.mark.whole
def test_reward_values_on_the_usual_hacks(expect):
    """Reward values vs the reference on hacks: empty tags, hedged tags, buried or restated gold

    zh: 在钻空子的回答上与参考答案比较奖励值：空标签、多个标签两头下注、埋在猜测中或复述题面的标准答案
    """
    each_case(
        expect,
        "reward_gsm8k",
        [
            (say("an empty tag", "空标签"), ("<answer></answer>", 12.0)),
            (
                say("#### 12 then a tag with 13", "先 #### 12，再给出写着 13 的标签"),
                ("#### 12 ... <answer>13</answer>", 12.0),
            ),
            (
                say("wrong numbers padded after the tag", "标签之后补上错误的数字"),
                ("<answer>13</answer> 12 12 12", 13.0),
            ),
            (
                say("gold in the preamble, wrong final answer", "开头提到标准答案，最终答案却是错的"),
                ("The problem says 12 eggs. So the answer is 13.", 12.0),
            ),
            (say("gold buried among guesses", "标准答案埋在一串猜测里"), ("It is 10, 11, 12, 13 or 14.", 12.0)),
            (
                say("hedging with two tags (gold first)", "用两个标签两头下注（标准答案在前）"),
                ("<answer>12</answer><answer>13</answer>", 12.0),
            ),
            (
                say("two tags, the last one right", "两个标签，最后一个正确"),
                ("<answer>12</answer><answer>13</answer>", 13.0),
            ),
            (
                say("gold in the preamble, then an empty tag", "开头提到标准答案，然后是空标签"),
                ("The question says 12 apples. <answer></answer>", 12.0),
            ),
        ],
    )


@pytest.mark.todo(3)
def test_reward_compares_with_an_absolute_tolerance_of_1e_4(expect):
    """Reward values vs the reference around |predicted - gold| <= 1e-4 (absolute)

    zh: 在 |预测 - 标准答案| <= 1e-4（绝对容差）附近与参考答案比较奖励值
    """
    each_case(
        expect,
        "reward_gsm8k",
        [
            (say("a repeating decimal", "无限循环小数"), ("<answer>2.33333</answer>", 7 / 3)),
            (say("9e-5 off", "相差 9e-5"), ("<answer>5.00009</answer>", 5.0)),
            (say("1.1e-4 off", "相差 1.1e-4"), ("<answer>5.00011</answer>", 5.0)),
            (say("5e-5 below zero", "比 0 小 5e-5"), ("<answer>-0.00005</answer>", 0.0)),
        ],
    )


@pytest.mark.todo(3)
def test_reward_correctness_dominates_format(expect):
    """A correct answer without the tag outranks a well-formed wrong one, and nothing exceeds 1.2

    Compares the learner's own rewards with each other, on plain answers.

    zh: 答对但没有标签的回答，排在格式规范但答错的回答之前；任何奖励都不超过 1.2
    """
    gold = 72.0
    texts = ["So 72.", "<answer>71</answer>", "<answer>72</answer>", "nothing"]
    rewards = [expect.call("reward_gsm8k", text, gold) for text in texts]
    if not all(isinstance(reward, int | float) and not isinstance(reward, bool) for reward in rewards):
        raise AssertionError(
            say(
                f"reward_gsm8k returned {rewards!r} for {texts}; expected a float for each",
                f"reward_gsm8k 对 `{texts}` 返回了 {rewards!r}；每个都应当是浮点数",
            )
        )
    if not rewards[0] > rewards[1]:
        raise AssertionError(
            say(
                f"correct but unformatted got {rewards[0]:.2f}, wrong but formatted {rewards[1]:.2f}",
                f"答对但格式不合格的得到 {rewards[0]:.2f}，答错但格式合格的得到 {rewards[1]:.2f}",
            )
        )
    if max(rewards) > 1.2:
        raise AssertionError(
            say(
                f"largest reward {max(rewards):.2f} is above the clip 1.2",
                f"最大的奖励 {max(rewards):.2f} 超过了上限 1.2",
            )
        )


# -- TODO 4: verify_integer_response ---------------------------------------------------------------

LESSON_GROUPS = [
    (4, ["4", "5", "The answer is 4.", "I do not know."]),
    (9, ["9", "6", "The answer is 9.", "10"]),
]


@pytest.mark.todo(4)
def test_integer_verifier_records_on_the_lesson_fixtures(expect):
    """Every record of the grpo_mechanism lab's fixtures matches, field by field

    zh: grpo_mechanism 实验的每条候选记录逐字段一致
    """
    cases = [
        (say(f"{response!r} for {answer}", f"标准答案为 {answer} 时的回答 `{response!r}`"), (response, answer))
        for answer, group in LESSON_GROUPS
        for response in group
    ]
    each_case(expect, "verify_integer_response", cases)


@pytest.mark.todo(4)
def test_integer_verifier_reproduces_the_lesson_pass_rates(expect):
    """The lab's expanded group gives correctness 0.50, format 0.625, 1 unjudgeable

    zh: 该实验的扩展候选组得到：正确率 0.50，格式通过率 0.625，1 个不可判定
    """
    records = [expect.call("verify_integer_response", r, answer) for answer, group in LESSON_GROUPS for r in group]
    if not all(isinstance(record, dict) for record in records):
        raise AssertionError(
            say(
                "verify_integer_response must return a dict for every response",
                "verify_integer_response 必须对每个回答都返回一个字典",
            )
        )
    correct = sum(float(record.get("correctness", 0.0)) for record in records) / len(records)
    formatted = sum(float(record.get("format_pass", 0.0)) for record in records) / len(records)
    unjudgeable = sum(record.get("status") == "unjudgeable" for record in records)
    if (round(correct, 3), round(formatted, 3), unjudgeable) != (0.5, 0.625, 1):
        raise AssertionError(
            say(
                f"expanded group: correctness_pass_rate {correct:.3f} (expected 0.500), "
                f"format_pass_rate {formatted:.3f} (expected 0.625), unjudgeable_count {unjudgeable} (expected 1)",
                f"扩展候选组：correctness_pass_rate 为 {correct:.3f}（应为 0.500），"
                f"format_pass_rate 为 {formatted:.3f}（应为 0.625），unjudgeable_count 为 {unjudgeable}（应为 1）",
            )
        )


@pytest.mark.todo(4)
def test_integer_verifier_edge_cases(expect):
    """Records vs the reference: whitespace, negatives, several integers, decimals, empty

    zh: 与参考答案比较记录：空白、负数、多个整数取最后一个、小数与空回答
    """
    each_case(
        expect,
        "verify_integer_response",
        [
            (say("whitespace around the integer", "整数前后有空白"), (" 4\n", 4)),
            (say("a negative integer", "负整数"), ("-3", -3)),
            (say("the last integer counts", "以最后一个整数为准"), ("2 + 2 = 4", 4)),
            (say("a decimal is not an integer", "小数不是整数"), ("4.0", 4)),
            (say("a comma splits the number", "逗号把数字分开"), ("1,234", 1234)),
            (say("an empty response", "空回答"), ("", 4)),
        ],
    )


# -- TODO 5: combine_rewards -----------------------------------------------------------------------


@pytest.mark.todo(5)
def test_combine_matches_the_lesson_framework_check(expect):
    """A TRL-style check: columns with None give [1.0, 0.0, 1.0, nan] under weights [0.9, 0.1]

    zh: TRL 式的核对：含 None 的两列奖励在权重 [0.9, 0.1] 下得到 [1.0, 0.0, 1.0, nan]
    """
    correctness = [1.0, 0.0, 1.0, None]
    integer_format = [1.0, None, 1.0, None]
    each_case(
        expect,
        "combine_rewards",
        [
            (
                say("reward columns with None, weights [0.9, 0.1]", "含 None 的奖励列，权重 [0.9, 0.1]"),
                ([correctness, integer_format], [0.9, 0.1]),
            )
        ],
    )


@pytest.mark.todo(5)
def test_combine_weighs_each_score_and_skips_only_the_missing_ones(expect):
    """Combined values vs the reference: weighted sums of the scores present, NaN as None

    zh: 与参考答案比较合并值：只对存在的分数加权求和（含负权重、张量权重），NaN 与 None 同等对待
    """
    each_case(
        expect,
        "combine_rewards",
        [
            (
                say("weights, no missing scores", "有权重，没有缺失的分数"),
                ([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]], [0.9, 0.1]),
            ),
            (say("one score missing per row", "每行缺一个分数"), ([[1.0, 0.0, None], [None, 1.0, 1.0]], [0.9, 0.1])),
            (
                say("three functions, a negative weight", "三个奖励函数，一个负权重"),
                ([[1.0, None, 0.5], [None, None, 2.0], [0.0, 1.0, None]], [1.0, 0.5, -0.25]),
            ),
            (say("weights as a tensor", "权重是张量"), ([[0.5, None], [2.0, 1.0]], torch.tensor([2.0, 0.5]))),
            (say("a NaN score counts as None", "NaN 分数当作 None"), ([[math.nan, 1.0, math.nan]], [2.0])),
        ],
    )


@pytest.mark.todo(5)
def test_combine_keeps_nan_exactly_where_nothing_scored(expect):
    """A response with any score gets a number; one with none stays NaN; float32, shape (N,)

    zh: 有任一分数的回答得到数值；一个分数都没有的回答保持 NaN；float32，形状 (N,)
    """
    scores = [[1, None, None, 0], [None, None, 2, 1]]
    combined = expect.shaped_like_reference("combine_rewards", scores, [0.5, 2.0])
    for n in range(4):
        scored = any(column[n] is not None for column in scores)
        value = float(combined[n])
        if scored and math.isnan(value):
            raise AssertionError(
                say(
                    f"response {n} has a score, yet its combined reward is NaN: skip missing scores",
                    f"回答 {n} 有分数，合并后的奖励却是 NaN：应跳过缺失的分数",
                )
            )
        if not scored and not math.isnan(value):
            raise AssertionError(
                say(
                    f"response {n} has no score at all, yet its combined reward is {value:.4g}, not NaN",
                    f"回答 {n} 一个分数都没有，合并后的奖励却是 {value:.4g}，而不是 NaN",
                )
            )


def test_combine_rejects_mismatched_lengths(expect):
    """Accepts valid columns; rejects missing functions and mismatched lengths with ValueError

    zh: 接受合法的奖励列；没有奖励函数或长度不一致时抛出 ValueError
    """
    expect.call("combine_rewards", [[1.0, None], [0.5, 0.5]], [1.0, 1.0])
    bad = [
        (say("no reward function", "没有奖励函数"), ([], [])),
        (say("fewer weights than functions", "权重比奖励函数少"), ([[1.0], [0.0]], [1.0])),
        (say("more weights than functions", "权重比奖励函数多"), ([[1.0], [0.0]], [1.0, 1.0, 1.0])),
        (say("columns of different lengths", "各列长度不同"), ([[1.0, 0.0], [1.0]], [1.0, 1.0])),
    ]
    for why, args in bad:
        expect.raises_value_error(why, "combine_rewards", *args)


# -- every TODO on answers drawn from the seed (under a course, other answers than a pack recorded) --


def drawn_number(rng: random.Random) -> str:
    """A number as a model writes one: an integer, a negative one, with thousands commas, or decimals."""
    value = rng.randrange(1, 100_000)
    form = rng.choice(["plain", "negative", "commas", "decimals"])
    if form == "negative":
        return f"-{value}"
    if form == "commas":
        return f"{value:,}"
    return f"{value}.{rng.randrange(1, 100)}" if form == "decimals" else str(value)


def drawn_cases(seed: int, draw, count: int = 8) -> list[tuple[str, tuple]]:
    """`count` (label, args) cases, each `draw(rng)` with a generator seeded by `seeds.number(seed)`."""
    rng = random.Random(seeds.number(seed))
    return [(say(f"drawn case {index + 1}", f"抽取的用例 {index + 1}"), draw(rng)) for index in range(count)]


def filled(templates: list[str]):
    """A draw: (one of `templates`, its {a} and {b} filled with drawn numbers,)."""
    return lambda rng: (rng.choice(templates).format(a=drawn_number(rng), b=drawn_number(rng)),)


@pytest.mark.todo(1)
def test_extract_matches_reference_on_drawn_answers(expect):
    """Extracted answers vs the reference on answers drawn at random: tags, "####", loose numbers

    zh: 在随机抽取的回答上与参考答案比较提取结果：标签、“####” 与散落的数字
    """
    templates = [
        "<answer>{a}</answer>",
        "#### {a}",
        "First {b}, then {a}.",
        "<answer>{a}</answer> and then {b}",
        "#### {b}\n<answer>{a}</answer>",
        "{b} ... #### {a}",
        "<answer>{b}</answer><answer>{a}</answer>",
    ]
    each_case(expect, "extract_answer", drawn_cases(40, filled(templates)))


@pytest.mark.todo(2)
def test_well_formed_matches_reference_on_drawn_answers(expect):
    """Format verdicts vs the reference on answers drawn at random: one tag, two, none, broken

    zh: 在随机抽取的回答上与参考答案比较格式判定：一个标签、两个标签、没有标签、残缺的标签
    """
    templates = [
        "<answer>{a}</answer>",
        "So: <answer>{a}</answer>",
        "<answer>{a} {b}</answer>",
        "<answer>{a}</answer><answer>{b}</answer>",
        "<answer>{a}",
        "{a}",
    ]
    each_case(expect, "has_well_formed_answer", drawn_cases(41, filled(templates)))


@pytest.mark.todo(3)
def test_reward_matches_reference_on_drawn_plain_answers(expect):
    """Reward values vs the reference on drawn plain answers (one integer, at most one tag), right or wrong

    zh: 在随机抽取的朴素回答（一个整数，至多一个标签）上与参考答案比较奖励值，有对有错
    """

    def draw(rng: random.Random) -> tuple:
        answer = rng.randrange(1, 10_000)
        text = rng.choice(["<answer>{}</answer>", "So {}."]).format(answer)
        return text, rng.choice([float(answer), float(answer + rng.randrange(1, 9)), None])

    each_case(expect, "reward_gsm8k", drawn_cases(42, draw))


@pytest.mark.todo(4)
def test_integer_verifier_matches_reference_on_drawn_responses(expect):
    """Records vs the reference on drawn responses: a bare integer, one in a sentence, a sum, none

    zh: 在随机抽取的回答上与参考答案比较记录：单独一个整数、句子里的整数、算式、没有整数
    """

    def draw(rng: random.Random) -> tuple:
        a, b = rng.randrange(-50, 500), rng.randrange(0, 500)
        text = rng.choice(["{a}", " {a}\n", "The answer is {a}.", "{b} + {b} = {a}", "no idea"]).format(a=a, b=b)
        return text, rng.choice([a, a + 1])

    each_case(expect, "verify_integer_response", drawn_cases(43, draw))


@pytest.mark.todo(5)
def test_combine_matches_reference_on_drawn_scores(expect):
    """Combined values vs the reference on drawn scores with drawn gaps (None) and drawn weights

    zh: 在随机抽取的分数（含随机缺失的 None）与随机权重上与参考答案比较合并值
    """

    def draw(rng: random.Random) -> tuple:
        functions, responses = rng.randrange(1, 4), rng.randrange(1, 6)
        scores = [
            [None if rng.random() < 0.25 else round(rng.uniform(-1, 1), 3) for _ in range(responses)]
            for _ in range(functions)
        ]
        return scores, [round(rng.uniform(-1, 2), 3) for _ in range(functions)]

    each_case(expect, "combine_rewards", drawn_cases(44, draw, count=3))
