"""Checks for extract_answer (TODO 1), has_well_formed_answer (TODO 2), reward_gsm8k (TODO 3),
verify_integer_response (TODO 4) and combine_rewards (TODO 5).

Most checks run a short list of named cases against the reference and stop at the first case
that differs, naming it. The cases are the lessons' own (lesson 001 §1.3, the lesson-000 lab
fixtures and TRL framework check) plus strings a reward hacker would try: an empty tag, several
tags, the gold number buried among guesses or restated before a wrong answer, "#### 12" before
"<answer>13</answer>". Each plausible wrong rule fails a different first case.

reward_gsm8k calls TODOs 1 and 2: its TODO-3 checks use plain answers that every extraction and
format rule reads alike, and its checks on the lesson cases and the hacks are marked whole.
"""

import math

import pytest
import torch


def each_case(expect, name, cases):
    """Compare the learner with the reference on every (label, args) case; name the first that differs."""
    for label, args in cases:
        try:
            expect.matches_reference(name, *args)
        except AssertionError as failure:
            raise type(failure)(f"case '{label}': {failure}") from None


# -- TODO 1: extract_answer ------------------------------------------------------------------------


@pytest.mark.todo(1)
def test_extract_follows_the_priority_tag_then_hashes_then_last_number(expect):
    """Extracted answers vs the reference: the tag beats "#### N", which beats the last number

    zh: 与参考答案比较提取结果：答案标签优先于 "#### N"，"#### N" 优先于最后一个数字
    """
    each_case(
        expect,
        "extract_answer",
        [
            ("the tag beats the last number", ("<answer>13</answer> I checked it 12 times.",)),
            ("the tag beats ####", ("#### 12\nOn second thought: <answer>13</answer>",)),
            ("#### beats the last number", ("#### 72\nThat took 3 steps.",)),
            ("the last #### counts", ("#### 12\nNo, redo it.\n#### 13",)),
            ("a GSM8K solution", ("48 / 2 = 24 clips in May.\n48 + 24 = 72\n#### 72",)),
        ],
    )


@pytest.mark.todo(1)
def test_extract_falls_back_to_the_last_number(expect):
    """Extracted answers vs the reference without a tag or "####": the last number, or None

    zh: 没有标签也没有 "####" 时与参考答案比较提取结果：取最后一个数字，没有数字则为 None
    """
    each_case(
        expect,
        "extract_answer",
        [
            ("the last number is the answer", ("First 3 apples, then 4 more, so 7 in total.",)),
            ("gold restated before a wrong final answer", ("The question mentions 12 eggs. I think it is 13.",)),
            ("the right number buried among guesses", ("It could be 10, 11, 12, 13 or 14.",)),
            ("no number at all", ("I do not know.",)),
        ],
    )


@pytest.mark.todo(1)
def test_extract_reads_thousands_separators_signs_and_decimals(expect):
    """Extracted answers vs the reference: "1,234" is 1234.0, signs and decimals are kept

    zh: 与参考答案比较提取结果："1,234" 读作 1234.0，负数和小数保留符号与小数部分
    """
    each_case(
        expect,
        "extract_answer",
        [
            ("thousands separator", ("The farm earns $1,234 a week.",)),
            ("#### with separators", ("#### 12,000",)),
            ("millions in a tag", ("<answer>1,000,000</answer>",)),
            ("negative number", ("The temperature fell to -7 degrees.",)),
            ("decimal number", ("Each pencil costs 0.25 dollars.",)),
            ("negative decimal in a tag", ("<answer>-4.5</answer>",)),
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
            ("numbers after the tag do not count", ("<answer>13</answer> (after 12 tries)",)),
            ("the tag's last number", ("<answer>12 or 13</answer>",)),
            ("a tag over several lines", ("<answer>\n13\n</answer> after 12 tries",)),
            ("several tags: the last one counts", ("<answer>12</answer> no, wait: <answer>13</answer> done",)),
            ("an empty tag is no answer", ("There are 12 apples. <answer></answer>",)),
            ("a tag without a number is no answer", ("12 apples in all. <answer>twelve</answer>",)),
            ("an unclosed tag is not a tag", ("<answer>42",)),
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
            ("a bare tag", ("<answer>42</answer>",)),
            ("reasoning, then a tag with spaces", ("48 + 24 = 72, so\n<answer> 72 </answer>",)),
            ("separators and sign", ("<answer>-1,234.5</answer>",)),
            ("a tag over several lines", ("<answer>\n42\n</answer>",)),
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
            ("two tags", ("<answer>4</answer> or <answer>4</answer>",)),
            ("an empty tag", ("<answer></answer>",)),
            ("words in the tag", ("<answer>forty-two</answer>",)),
            ("a unit in the tag", ("<answer>42 apples</answer>",)),
            ("an unclosed tag", ("<answer>42",)),
            ("a stray closing marker", ("<answer>42</answer></answer>",)),
            ("no tag", ("The answer is 42.",)),
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
            ("correct, in one tag", ("<answer>72</answer>", 72.0)),
            ("correct, no tag", ("So 72.", 72.0)),
            ("wrong, in one tag", ("<answer>71</answer>", 72.0)),
            ("wrong, no tag", ("I get 71.", 72.0)),
            ("no gold answer", ("<answer>72</answer>", None)),
            ("an integer gold", ("<answer>72</answer>", 72)),
        ],
    )


@pytest.mark.whole
def test_reward_values_on_the_lesson_cases(expect):
    """Reward values vs the reference on the lesson cases (the whole function, TODOs 1-3)

    zh: 在课文案例上与参考答案比较奖励值（整个函数，TODO 1-3）
    """
    each_case(
        expect,
        "reward_gsm8k",
        [
            ("correct, in one tag", ("48 + 24 = 72\n<answer>72</answer>", 72.0)),
            ("correct, no tag", ("48 + 24 = 72, so 72 clips in all.", 72.0)),
            ("wrong, in one tag", ("<answer>71</answer>", 72.0)),
            ("wrong, no tag", ("I get 71.", 72.0)),
            ("correct via ####", ("48 + 24 = 72\n#### 72", 72.0)),
            ("no gold answer", ("<answer>72</answer>", None)),
            ("an integer gold and separators", ("<answer>1,234</answer>", 1234)),
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
            ("an empty tag", ("<answer></answer>", 12.0)),
            ("#### 12 then a tag with 13", ("#### 12 ... <answer>13</answer>", 12.0)),
            ("wrong numbers padded after the tag", ("<answer>13</answer> 12 12 12", 13.0)),
            ("gold in the preamble, wrong final answer", ("The problem says 12 eggs. So the answer is 13.", 12.0)),
            ("gold buried among guesses", ("It is 10, 11, 12, 13 or 14.", 12.0)),
            ("hedging with two tags (gold first)", ("<answer>12</answer><answer>13</answer>", 12.0)),
            ("two tags, the last one right", ("<answer>12</answer><answer>13</answer>", 13.0)),
            ("gold in the preamble, then an empty tag", ("The question says 12 apples. <answer></answer>", 12.0)),
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
            ("a repeating decimal", ("<answer>2.33333</answer>", 7 / 3)),
            ("9e-5 off", ("<answer>5.00009</answer>", 5.0)),
            ("1.1e-4 off", ("<answer>5.00011</answer>", 5.0)),
            ("5e-5 below zero", ("<answer>-0.00005</answer>", 0.0)),
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
        raise AssertionError(f"reward_gsm8k returned {rewards!r} for {texts}; expected a float for each")
    if not rewards[0] > rewards[1]:
        raise AssertionError(f"correct but unformatted got {rewards[0]:.2f}, wrong but formatted {rewards[1]:.2f}")
    if max(rewards) > 1.2:
        raise AssertionError(f"largest reward {max(rewards):.2f} is above the clip 1.2")


# -- TODO 4: verify_integer_response ---------------------------------------------------------------

LESSON_GROUPS = [
    (4, ["4", "5", "The answer is 4.", "I do not know."]),
    (9, ["9", "6", "The answer is 9.", "10"]),
]


@pytest.mark.todo(4)
def test_integer_verifier_records_on_the_lesson_fixtures(expect):
    """Every record of the lesson-000 lab fixtures matches, field by field

    zh: 第 000 课实验中的每条候选记录逐字段一致
    """
    cases = [
        (f"{response!r} for {answer}", (response, answer)) for answer, group in LESSON_GROUPS for response in group
    ]
    each_case(expect, "verify_integer_response", cases)


@pytest.mark.todo(4)
def test_integer_verifier_reproduces_the_lesson_pass_rates(expect):
    """The expanded group gives the lesson's rates: correctness 0.50, format 0.625, 1 unjudgeable

    zh: 扩展候选组得到课文中的比率：正确率 0.50，格式通过率 0.625，1 个不可判定
    """
    records = [expect.call("verify_integer_response", r, answer) for answer, group in LESSON_GROUPS for r in group]
    if not all(isinstance(record, dict) for record in records):
        raise AssertionError("verify_integer_response must return a dict for every response")
    correct = sum(float(record.get("correctness", 0.0)) for record in records) / len(records)
    formatted = sum(float(record.get("format_pass", 0.0)) for record in records) / len(records)
    unjudgeable = sum(record.get("status") == "unjudgeable" for record in records)
    if (round(correct, 3), round(formatted, 3), unjudgeable) != (0.5, 0.625, 1):
        raise AssertionError(
            f"expanded group: correctness_pass_rate {correct:.3f} (lesson 0.500), "
            f"format_pass_rate {formatted:.3f} (lesson 0.625), unjudgeable_count {unjudgeable} (lesson 1)"
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
            ("whitespace around the integer", (" 4\n", 4)),
            ("a negative integer", ("-3", -3)),
            ("the last integer counts", ("2 + 2 = 4", 4)),
            ("a decimal is not an integer", ("4.0", 4)),
            ("a comma splits the number", ("1,234", 1234)),
            ("an empty response", ("", 4)),
        ],
    )


# -- TODO 5: combine_rewards -----------------------------------------------------------------------


@pytest.mark.todo(5)
def test_combine_matches_the_lesson_framework_check(expect):
    """The lesson's TRL check: columns with None give [1.0, 0.0, 1.0, nan] under weights [0.9, 0.1]

    zh: 课文的 TRL 核对：含 None 的两列奖励在权重 [0.9, 0.1] 下得到 [1.0, 0.0, 1.0, nan]
    """
    correctness = [1.0, 0.0, 1.0, None]
    integer_format = [1.0, None, 1.0, None]
    each_case(expect, "combine_rewards", [("lesson 000 framework check", ([correctness, integer_format], [0.9, 0.1]))])


@pytest.mark.todo(5)
def test_combine_weighs_each_score_and_skips_only_the_missing_ones(expect):
    """Combined values vs the reference: weighted sums of the scores present, NaN as None

    zh: 与参考答案比较合并值：只对存在的分数加权求和（含负权重、张量权重），NaN 与 None 同等对待
    """
    each_case(
        expect,
        "combine_rewards",
        [
            ("weights, no missing scores", ([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]], [0.9, 0.1])),
            ("one score missing per row", ([[1.0, 0.0, None], [None, 1.0, 1.0]], [0.9, 0.1])),
            (
                "three functions, a negative weight",
                ([[1.0, None, 0.5], [None, None, 2.0], [0.0, 1.0, None]], [1.0, 0.5, -0.25]),
            ),
            ("weights as a tensor", ([[0.5, None], [2.0, 1.0]], torch.tensor([2.0, 0.5]))),
            ("a NaN score counts as None", ([[math.nan, 1.0, math.nan]], [2.0])),
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
            raise AssertionError(f"response {n} has a score, yet its combined reward is NaN: skip missing scores")
        if not scored and not math.isnan(value):
            raise AssertionError(f"response {n} has no score at all, yet its combined reward is {value:.4g}, not NaN")


def test_combine_rejects_mismatched_lengths(expect):
    """Accepts valid columns; rejects missing functions and mismatched lengths with ValueError

    zh: 接受合法的奖励列；没有奖励函数或长度不一致时抛出 ValueError
    """
    expect.call("combine_rewards", [[1.0, None], [0.5, 0.5]], [1.0, 1.0])
    bad = [
        ("no reward function", ([], [])),
        ("fewer weights than functions", ([[1.0], [0.0]], [1.0])),
        ("more weights than functions", ([[1.0], [0.0]], [1.0, 1.0, 1.0])),
        ("columns of different lengths", ([[1.0, 0.0], [1.0]], [1.0, 1.0])),
    ]
    for why, args in bad:
        expect.raises_value_error(why, "combine_rewards", *args)
