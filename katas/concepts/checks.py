"""Checks for the concepts quiz: one check per question of questions.toml, graded against the
reference's ANSWERS (numbers within the question's tolerance), plus the shape of ANSWERS itself.

A question not answered yet (no ANSWERS, no key, or the value None or ...) reads as "not
implemented yet". A wrong answer fails with what was answered, what is right and why; the
message depends only on the answer, so each misconception is recognised by its message.
"""

import difflib

import pytest

from grader.content.i18n import say
from grader.content.quiz import InvalidAnswer, is_right, load_questions, parse_answer, wrong_answer
from grader.run.judge import MissingName

QUESTIONS = {question.key: question for question in load_questions("concepts")}


def unanswered(value) -> bool:
    """None and ... (Ellipsis) are placeholders, not answers."""
    return value is None or value is Ellipsis


def answers_of(learner, todo: int, key: str | None = None) -> dict:
    """The learner's ANSWERS dict; NotImplementedError while there is none."""
    try:
        answers = learner.value("ANSWERS")
    except MissingName:
        answers = None
    if answers is None:
        what = f"{key} is not answered yet" if key else "nothing is answered yet"
        raise NotImplementedError(f"TODO {todo}: {what} (ANSWERS is not defined; start with ANSWERS = {{}})")
    if not isinstance(answers, dict):
        kind = type(answers).__name__
        raise AssertionError(
            say(
                f"ANSWERS is a {kind}; it must be a dict: ANSWERS = {{}}",
                f"ANSWERS 是 {kind}；它必须是字典：`ANSWERS = {{}}`",
            )
        )
    return answers


def check_answer(learner, key: str) -> None:
    """The learner's answer to `key` is the reference's; otherwise say what, what instead, and why."""
    question = QUESTIONS[key]
    answers = answers_of(learner, question.todo, key)
    answer = answers.get(key)
    if unanswered(answer):
        raise NotImplementedError(f"TODO {question.todo}: {key} is not answered yet")
    if is_right(question, answer):
        return
    raise AssertionError(say(wrong_answer(question, answer), wrong_answer(question, answer, "zh")))


@pytest.mark.todo(1)
def test_bt_probability(learner):
    """Bradley-Terry: the probability that one answer is preferred is sigmoid of the reward difference

    zh: Bradley-Terry：一个回答被偏好的概率是奖励差的 sigmoid
    """
    check_answer(learner, "bt_probability")


@pytest.mark.todo(1)
def test_bt_shift(learner):
    """Bradley-Terry: a shared offset of both rewards changes nothing

    zh: Bradley-Terry：两个奖励同时平移不改变任何结果
    """
    check_answer(learner, "bt_shift")


@pytest.mark.todo(1)
def test_dpo_removes(learner):
    """DPO drops the explicit reward model and the RL loop, not the reference

    zh: DPO 省掉的是显式奖励模型和 RL 循环，而不是参考模型
    """
    check_answer(learner, "dpo_removes")


@pytest.mark.todo(1)
def test_dpo_implicit_reward(learner):
    """DPO's implicit reward is beta times the log-ratio to the reference

    zh: DPO 的隐式奖励是 beta 乘以相对参考策略的对数比
    """
    check_answer(learner, "dpo_implicit_reward")


@pytest.mark.todo(1)
def test_dpo_beta(learner):
    """A larger DPO beta keeps the policy closer to the reference

    zh: DPO 的 beta 越大，策略越贴近参考策略
    """
    check_answer(learner, "dpo_beta")


@pytest.mark.todo(2)
def test_grpo_removes(learner):
    """GRPO drops PPO's critic (value model), not the reward model

    zh: GRPO 去掉的是 PPO 的评论家（价值模型），而不是奖励模型
    """
    check_answer(learner, "grpo_removes")


@pytest.mark.todo(2)
def test_grpo_baseline(learner):
    """GRPO's baseline is the mean reward of the same prompt's group

    zh: GRPO 的基线是同一提示词那组候选的平均奖励
    """
    check_answer(learner, "grpo_baseline")


@pytest.mark.todo(2)
def test_grpo_vs_rlvr(learner):
    """GRPO is an update rule; RLVR is a source of rewards

    zh: GRPO 是更新规则；RLVR 是奖励来源
    """
    check_answer(learner, "grpo_vs_rlvr")


@pytest.mark.todo(3)
def test_group_advantage(learner):
    """A group advantage uses the group's mean and population std

    zh: 组内优势使用该组的均值和总体标准差
    """
    check_answer(learner, "group_advantage")


@pytest.mark.todo(3)
def test_equal_rewards(learner):
    """A group with equal rewards has zero advantages and teaches nothing

    zh: 奖励全等的组优势全为零，教不了任何东西
    """
    check_answer(learner, "equal_rewards")


@pytest.mark.todo(4)
def test_kl_reference(learner):
    """The KL penalty is taken against the frozen reference, not the old policy

    zh: KL 惩罚是相对冻结的参考模型计算的，而不是旧策略
    """
    check_answer(learner, "kl_reference")


@pytest.mark.todo(4)
def test_k3_guarantees(learner):
    """k3 is non-negative per sample, unbiased, and zero where the policies agree

    zh: k3 逐样本非负、无偏，并在两策略一致处为零
    """
    check_answer(learner, "k3_guarantees")


@pytest.mark.todo(4)
def test_k3_value(learner):
    """The k3 value of one token, with delta = log pi_ref - log pi_theta

    zh: 单个 token 的 k3 值，其中 delta = log pi_ref - log pi_theta
    """
    check_answer(learner, "k3_value")


@pytest.mark.todo(4)
def test_k3_small(learner):
    """For a small delta the k3 value is about delta^2 / 2

    zh: delta 较小时，k3 的值约为 delta^2 / 2
    """
    check_answer(learner, "k3_small")


@pytest.mark.todo(4)
def test_k3_gradient(learner):
    """k3's expected gradient is that of the forward KL(pi_ref || pi_theta)

    zh: k3 的期望梯度是正向 KL(pi_ref || pi_theta) 的梯度
    """
    check_answer(learner, "k3_gradient")


def test_answers_are_known_keys_with_valid_values(learner):
    """ANSWERS is a dict of known question keys: option letters for choices, numbers for numbers

    zh: ANSWERS 是由已知题目键组成的字典：选择题填选项字母，数值题填数
    """
    answers = answers_of(learner, 1)
    given = {key: value for key, value in answers.items() if not unanswered(value)}
    if not given:
        raise NotImplementedError("TODO 1: nothing is answered yet (ANSWERS is empty)")
    for key in sorted(given, key=str):
        if key not in QUESTIONS:
            close = difflib.get_close_matches(str(key), QUESTIONS, n=1)
            raise AssertionError(
                say(
                    f"ANSWERS has an unknown key {key!r}."
                    + (f" Did you mean {close[0]!r}?" if close else f" The questions are {sorted(QUESTIONS)}."),
                    f"ANSWERS 有未知的键 {key!r}。"
                    + (f"你是想写 {close[0]!r} 吗？" if close else f"题目的键有 {sorted(QUESTIONS)}。"),
                )
            )
    for key, value in given.items():
        question = QUESTIONS[key]
        if question.kind == "number" and not isinstance(value, int | float):
            kind = type(value).__name__
            raise AssertionError(
                say(
                    f'ANSWERS["{key}"] = {value!r}: a numeric question takes a number, not a {kind}',
                    f'`ANSWERS["{key}"] = {value!r}`：数值题要填一个数，而不是 {kind}',
                )
            )
        try:
            parse_answer(question, value)
        except InvalidAnswer as error:
            letters = ", ".join(question.letters)
            choice = question.kind == "choice"
            raise AssertionError(
                say(
                    f'ANSWERS["{key}"]: {error}; it takes '
                    + (f"one of the letters {letters}" if choice else "a finite number"),
                    f'`ANSWERS["{key}"]`：{error}；' + ("请填其中一个字母" if choice else "请填一个有限的数"),
                )
            ) from None
