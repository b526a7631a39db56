"""Checks for distillation: the generalized JSD (TODOs 1-5) and the on-policy advantages (TODO 6).

Fixtures: seeded logits of a few positions over a small vocabulary, spread over several nats,
labels with -100 at the start of rows (a prompt) and at the end (padding), and a hand-built
teacher with two modes and a student with one, where the forward and the reverse KL differ by a
lot.

Each TODO's checks use inputs or outputs where the other TODOs' mistakes cannot matter: TODO 1 is
checked through your own outputs compared with each other (logits divided by the temperature
beforehand give the same loss; a constant added to a position's logits changes nothing);
TODOs 2-4 look at the per-entry divergence ("none", no labels, temperature 1), where TODO 5 has
nothing to do and the temperature is 1; TODO 5 compares your own reductions with each other, so
a mistake in the divergence cancels. Whole-function comparisons are marked whole.
"""

import math

import pytest
import torch

from grader.content import seeds
from grader.content.i18n import say
from grader.judging.expect import values_text

JSD = "generalized_jsd_loss"
ADVANTAGES = "on_policy_distillation_advantages"


def random_logits(seed: int, batch: int = 3, length: int = 5, vocab: int = 7, scale: float = 2.0, dtype=torch.float64):
    """Seeded (student, teacher) logits, scale * N(0, 1), of shape (B, T, V)."""
    generator = seeds.generator(seed)
    draw = lambda: torch.randn(batch, length, vocab, generator=generator, dtype=torch.float64) * scale  # noqa: E731
    return draw().to(dtype), draw().to(dtype)


def random_labels(seed: int, batch: int = 3, length: int = 5, vocab: int = 7):
    """(B, T) token labels with -100 on a prompt at the start of each row and padding at its end."""
    generator = seeds.generator(seed)
    labels = torch.randint(0, vocab, (batch, length), generator=generator)
    labels[:, 0] = -100  # the prompt
    labels[0, -2:] = -100  # padding
    labels[-1, 1:3] = -100
    return labels


def two_modes():
    """A teacher with two modes (0.49, 0.49, 0.02) and a student on one of them (0.96, 0.02, 0.02)."""
    teacher = torch.tensor([0.49, 0.49, 0.02], dtype=torch.float64).log().view(1, 1, 3)
    student = torch.tensor([0.96, 0.02, 0.02], dtype=torch.float64).log().view(1, 1, 3)
    return student, teacher


def kl(p_log: torch.Tensor, q_log: torch.Tensor) -> torch.Tensor:
    """KL(p || q) per entry, p * (log p - log q), from log-probs."""
    return p_log.exp() * (p_log - q_log)


def log_probs(logits: torch.Tensor) -> torch.Tensor:
    return torch.log_softmax(logits.double(), dim=-1)


def number(expect, name: str, *args, **kwargs) -> float:
    """The learner's scalar result as a float (a clear failure for anything else)."""
    value = expect.call(name, *args, **kwargs)
    if not (isinstance(value, torch.Tensor) and value.numel() == 1):
        raise AssertionError(
            say(
                f"{name}(..., reduction={kwargs.get('reduction')!r}) returned {value!r}; expected a scalar tensor",
                f"`{name}(..., reduction={kwargs.get('reduction')!r})` 返回了 {value!r}；应为标量张量",
            )
        )
    return value.double().item()


def close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 + 1e-7 * abs(b)  # NaN fails too


# -- whole function --------------------------------------------------------------------------------


@pytest.mark.whole
@pytest.mark.parametrize(
    ("seed", "beta", "temperature", "labelled", "reduction"),
    [
        (0, 0.0, 1.0, False, "batchmean"),
        (1, 1.0, 2.0, True, "batchmean"),
        (2, 0.5, 1.0, True, "batchmean"),
        (3, 0.1, 0.5, False, "sum"),
        (4, 0.9, 1.5, True, "mean"),
    ],
)
def test_loss_and_gradient_match_reference(expect, seed, beta, temperature, labelled, reduction):
    """The loss and its gradient for the student's logits match the reference on random logits

    zh: 在随机 logits 上，损失及其对学生模型 logits 的梯度与参考答案一致
    """
    student, teacher = random_logits(seed)
    labels = random_labels(seed) if labelled else None
    options = {"beta": beta, "temperature": temperature, "reduction": reduction}
    expect.matches_reference(JSD, student, teacher, labels, **options)
    expect.gradients_match_reference(JSD, student, teacher, labels, wrt=("student_logits",), **options)


@pytest.mark.whole
@pytest.mark.parametrize("labelled", [False, True])
def test_per_entry_divergence_matches_reference_in_float32(expect, labelled):
    """`reduction="none"` in float32: the per-entry divergence, (B, T, V) or (N, V), matches the reference

    zh: float32 下 `reduction="none"`：逐项散度（(B, T, V) 或 (N, V)）与参考答案一致
    """
    student, teacher = random_logits(5, dtype=torch.float32)
    labels = random_labels(5) if labelled else None
    for beta in (0.0, 0.3, 1.0):
        expect.matches_reference(JSD, student, teacher, labels, beta=beta, temperature=1.5, reduction="none")


@pytest.mark.whole
def test_advantages_match_reference(expect):
    """The advantages match the reference on random log-probs with ragged masks

    zh: 在随机对数概率与参差不齐的掩码上，优势与参考答案一致
    """
    expect.matches_reference(ADVANTAGES, *logprob_batch(6))


# -- TODO 1: log-probs at the temperature ----------------------------------------------------------


@pytest.mark.todo(1)
@pytest.mark.parametrize("temperature", [2.5, 0.4])
def test_temperature_divides_both_models_logits(expect, temperature):
    """The loss at a temperature equals the loss at 1 of both models' logits divided by it

    zh: 某个温度下的损失，等于把两个模型的 logits 都除以该温度后、温度为 1 时的损失
    """
    student, teacher = random_logits(7)
    options = {"beta": 0.5, "reduction": "sum"}
    hot = number(expect, JSD, student, teacher, temperature=temperature, **options)
    cooled = number(expect, JSD, student / temperature, teacher / temperature, temperature=1.0, **options)
    if not close(hot, cooled):
        raise AssertionError(
            say(
                f"{JSD}(random logits, beta=0.5, temperature={temperature}, reduction='sum') = {hot:.6f}, but"
                f" {cooled:.6f} for both logits divided by {temperature} at temperature 1; the temperature"
                " divides the logits of both models before the softmax",
                f"随机 logits 上 `{JSD}(..., beta=0.5, temperature={temperature}, reduction='sum')` = {hot:.6f}，"
                f"而把两组 logits 都除以 {temperature} 后、温度为 1 时为 {cooled:.6f}；"
                "温度要在 softmax 之前除两个模型的 logits",
            )
        )


@pytest.mark.todo(1)
def test_a_constant_added_to_a_positions_logits_changes_nothing(expect):
    """Logits shifted by a constant per position (each model its own) give the same loss: log-softmax

    zh: 每个位置的 logits 加上一个常数（两个模型各加各的），损失不变：这就是 log-softmax
    """
    student, teacher = random_logits(8)
    generator = seeds.generator(9)
    shift_s, shift_t = (torch.randn(3, 5, 1, generator=generator, dtype=torch.float64) * 5 for _ in range(2))
    options = {"beta": 0.5, "reduction": "sum"}
    before = number(expect, JSD, student, teacher, **options)
    after = number(expect, JSD, student + shift_s, teacher + shift_t, **options)
    if not close(after, before):
        raise AssertionError(
            say(
                f"{JSD}(random logits, beta=0.5, reduction='sum') = {before:.6f}, but {after:.6f} with a"
                " constant added to each position's logits; softmax over the vocabulary (the last"
                " dimension) does not see such a constant",
                f"随机 logits 上 `{JSD}(..., beta=0.5, reduction='sum')` = {before:.6f}，每个位置的 logits"
                f"加上一个常数后却为 {after:.6f}；在词表维（最后一维）上做 softmax 时，这样的常数不起作用",
            )
        )


# -- TODOs 2-4: the divergence per vocabulary entry ------------------------------------------------


def per_entry(expect, student, teacher, beta: float):
    """The learner's per-entry divergence: no labels, temperature 1, reduction `"none"`."""
    return expect.shaped_like_reference(JSD, student, teacher, beta=beta, temperature=1.0, reduction="none")


def _check_entries(expect, student, teacher, beta: float, expected: torch.Tensor, formula: str) -> None:
    got = per_entry(expect, student, teacher, beta)
    where = say(
        f"{JSD}(random logits, beta={beta}, reduction='none'): the divergence per entry, {formula}",
        f"随机 logits 上 `{JSD}(..., beta={beta}, reduction='none')` 的逐项散度，即 {formula}",
    )
    expect.same(got, expected.to(got.dtype), where)


def _check_two_modes(expect, beta: float, expected: float, other: float) -> None:
    student, teacher = two_modes()
    got = per_entry(expect, student, teacher, beta).sum().item()
    if not close(got, expected):
        raise AssertionError(
            say(
                f"{JSD}(a student on one of the teacher's two modes, beta={beta}): the divergence summed over"
                f" the vocabulary is {got:.4f}, expected {expected:.4f} (the other KL is {other:.4f})",
                f"学生模型只落在教师模型两个模式之一上时 `{JSD}(..., beta={beta})`：在词表上求和的散度为 {got:.4f}，"
                f"应为 {expected:.4f}（另一个方向的 KL 为 {other:.4f}）",
            )
        )


def _two_mode_kls() -> tuple[float, float]:
    student, teacher = two_modes()
    return kl(teacher, student).sum().item(), kl(student, teacher).sum().item()


@pytest.mark.todo(2)
def test_beta_0_is_the_forward_kl_per_entry(expect):
    """beta = 0: each entry is p_T * (log p_T - log p_S), the forward KL(p_T || p_S)

    zh: beta = 0：每一项是 p_T * (log p_T - log p_S)，即正向 KL(p_T || p_S)
    """
    student, teacher = random_logits(10)
    expected = kl(log_probs(teacher), log_probs(student))
    _check_entries(expect, student, teacher, 0.0, expected, "p_T * (log p_T - log p_S)")


@pytest.mark.todo(2)
def test_beta_0_punishes_a_student_that_misses_a_mode(expect):
    """beta = 0: a student on one of the teacher's two modes pays the forward KL, 1.24 nats

    zh: beta = 0：只落在教师模型两个模式之一上的学生模型要付出正向 KL，1.24 奈特
    """
    forward, reverse = _two_mode_kls()
    _check_two_modes(expect, 0.0, forward, reverse)


@pytest.mark.todo(3)
def test_beta_1_is_the_reverse_kl_per_entry(expect):
    """beta = 1: each entry is p_S * (log p_S - log p_T), the reverse KL(p_S || p_T)

    zh: beta = 1：每一项是 p_S * (log p_S - log p_T)，即反向 KL(p_S || p_T)
    """
    student, teacher = random_logits(11)
    expected = kl(log_probs(student), log_probs(teacher))
    _check_entries(expect, student, teacher, 1.0, expected, "p_S * (log p_S - log p_T)")


@pytest.mark.todo(3)
def test_beta_1_lets_a_student_keep_one_mode(expect):
    """beta = 1: a student on one of the teacher's two modes pays only the reverse KL, 0.58 nats

    zh: beta = 1：只落在教师模型两个模式之一上的学生模型只需付出反向 KL，0.58 奈特
    """
    forward, reverse = _two_mode_kls()
    _check_two_modes(expect, 1.0, reverse, forward)


def generalized_jsd(student: torch.Tensor, teacher: torch.Tensor, beta: float) -> torch.Tensor:
    """beta * KL(p_T || m) + (1 - beta) * KL(p_S || m) per entry, m = beta p_T + (1 - beta) p_S, in float64."""
    log_s, log_t = log_probs(student), log_probs(teacher)
    log_m = (beta * log_t.exp() + (1 - beta) * log_s.exp()).log()
    return beta * kl(log_t, log_m) + (1 - beta) * kl(log_s, log_m)


@pytest.mark.todo(4)
@pytest.mark.parametrize(("seed", "beta"), [(12, 0.5), (13, 0.1), (14, 0.9)])
def test_between_the_ends_the_generalized_jsd_per_entry(expect, seed, beta):
    """0 < beta < 1: each entry is beta * KL(p_T || m) + (1 - beta) * KL(p_S || m), m the mixture

    zh: 0 < beta < 1：每一项是 beta * KL(p_T || m) + (1 - beta) * KL(p_S || m)，m 为混合分布
    """
    student, teacher = random_logits(seed)
    formula = "beta * KL(p_T || m) + (1 - beta) * KL(p_S || m), m = beta * p_T + (1 - beta) * p_S"
    _check_entries(expect, student, teacher, beta, generalized_jsd(student, teacher, beta), formula)


@pytest.mark.todo(4)
def test_the_jsd_at_one_half_is_at_most_log_2(expect):
    """beta = 0.5, two models far apart: the divergence of each position stays below log 2

    zh: beta = 0.5、两个模型相差很远时：每个位置的散度仍不超过 log 2
    """
    student, teacher = random_logits(15, scale=20.0)
    per_position = per_entry(expect, student, teacher, 0.5).double().sum(-1)  # (B, T)
    largest = per_position.max().item()
    if not largest <= math.log(2) + 1e-6:  # NaN fails too
        raise AssertionError(
            say(
                f"{JSD}(logits 20 * N(0, 1), beta=0.5): a position's divergence is {largest:.4f}; the JSD"
                f" is at most log 2 = {math.log(2):.4f}, because the mixture m is at least half of each"
                " distribution",
                f"logits 为 20 * N(0, 1) 时 `{JSD}(..., beta=0.5)`：某个位置的散度为 {largest:.4f}；"
                f"JSD 不超过 log 2 = {math.log(2):.4f}，因为混合分布 m 至少是每个分布的一半",
            )
        )


# -- TODO 5: the label mask and the reduction -------------------------------------------------------


def kept_rows(student, teacher, labels):
    """The kept positions of a labelled batch as one unlabelled sequence: (1, N, V) each."""
    mask = labels != -100
    return student[mask].unsqueeze(0), teacher[mask].unsqueeze(0)


@pytest.mark.todo(5)
def test_positions_labelled_minus_100_do_not_count(expect):
    """`reduction="sum"` with labels equals the sum over the kept positions alone, without labels

    zh: 带 labels 时 `reduction="sum"` 的结果，等于只取保留的位置、不带 labels 时的总和
    """
    student, teacher = random_logits(16)
    labels = random_labels(16)
    options = {"beta": 0.5, "reduction": "sum"}
    labelled = number(expect, JSD, student, teacher, labels, **options)
    alone = number(expect, JSD, *kept_rows(student, teacher, labels), **options)
    if not close(labelled, alone):
        raise AssertionError(
            say(
                f"{JSD}(random logits, labels with -100, reduction='sum') = {labelled:.6f}, but the kept"
                f" positions alone sum to {alone:.6f}; a position labelled -100 does not count",
                f"随机 logits、labels 含 -100 时 `{JSD}(..., reduction='sum')` = {labelled:.6f}，"
                f"而只取保留的位置时总和为 {alone:.6f}；标签为 -100 的位置不计入",
            )
        )


@pytest.mark.todo(5)
def test_batchmean_with_labels_divides_by_the_kept_positions(expect):
    """batchmean with labels: the sum divided by the number of kept positions (8 of 15 here)

    zh: 带 labels 时的 batchmean：总和除以保留的位置数（这里是 15 个中的 8 个）
    """
    student, teacher = random_logits(17)
    labels = random_labels(17)
    kept = int((labels != -100).sum())
    total = number(expect, JSD, student, teacher, labels, reduction="sum")
    mean = number(expect, JSD, student, teacher, labels, reduction="batchmean")
    if not close(mean * kept, total):
        divisor = total / mean if mean else float("inf")
        raise AssertionError(
            say(
                f"{JSD}(3 x 5 positions, {kept} kept by the labels): batchmean {mean:.6f} is the sum"
                f" {total:.6f} divided by {divisor:.4g}; expected divided by the {kept} kept positions",
                f"3 x 5 个位置、labels 保留 {kept} 个时 `{JSD}(...)`：batchmean {mean:.6f} 是总和 {total:.6f}"
                f" 除以 {divisor:.4g}；应除以保留的 {kept} 个位置",
            )
        )


@pytest.mark.todo(5)
def test_batchmean_without_labels_divides_by_the_batch_size(expect):
    """batchmean without labels: the sum divided by B (3 sequences), not by the positions

    zh: 不带 labels 时的 batchmean：总和除以 B（3 个序列），而不是除以位置数
    """
    student, teacher = random_logits(18)
    total = number(expect, JSD, student, teacher, reduction="sum")
    mean = number(expect, JSD, student, teacher, reduction="batchmean")
    if not close(mean * 3, total):
        raise AssertionError(
            say(
                f"{JSD}(3 sequences of 5 positions, no labels): batchmean {mean:.6f}, sum {total:.6f};"
                " without labels batchmean divides the sum by B = 3",
                f"3 个长为 5 的序列、不带 labels 时 `{JSD}(...)`：batchmean 为 {mean:.6f}，总和为 {total:.6f}；"
                "不带 labels 时 batchmean 用总和除以 B = 3",
            )
        )


@pytest.mark.todo(5)
def test_every_position_masked_gives_0(expect):
    """Every label -100: batchmean is 0 (the count is at least 1), not NaN

    zh: 所有标签都是 -100：batchmean 为 0（计数至少为 1），而不是 NaN
    """
    student, teacher = random_logits(19)
    labels = torch.full((3, 5), -100)
    loss = number(expect, JSD, student, teacher, labels, reduction="batchmean")
    if not loss == 0.0:  # NaN fails too
        raise AssertionError(
            say(
                f"{JSD}(every label -100, reduction='batchmean') = {loss:.4g}; with nothing kept the sum 0 is"
                " divided by at least 1: the loss is 0",
                f"所有标签都是 -100 时 `{JSD}(..., reduction='batchmean')` = {loss:.4g}；什么都没保留时，"
                "总和 0 至少除以 1：损失为 0",
            )
        )


@pytest.mark.todo(5)
def test_mean_divides_by_every_kept_entry(expect):
    """`reduction="mean"` with labels: the sum over N kept positions x V entries divided by N * V

    zh: 带 labels 时 `reduction="mean"`：N 个保留位置 x V 个词表项的总和除以 N * V
    """
    student, teacher = random_logits(20)
    labels = random_labels(20)
    entries = int((labels != -100).sum()) * student.shape[-1]
    total = number(expect, JSD, student, teacher, labels, reduction="sum")
    mean = number(expect, JSD, student, teacher, labels, reduction="mean")
    if not close(mean * entries, total):
        raise AssertionError(
            say(
                f"{JSD}(labels keeping {entries // 7} positions of a vocabulary of 7): mean {mean:.6g},"
                f" sum {total:.6g}; 'mean' divides the sum by every kept entry, {entries}",
                f"labels 保留 {entries // 7} 个位置、词表大小为 7 时 `{JSD}(...)`：mean 为 {mean:.6g}，"
                f"总和为 {total:.6g}；'mean' 用总和除以所有保留的项数 {entries}",
            )
        )


@pytest.mark.todo(5)
def test_none_returns_the_kept_entries(expect):
    """`reduction="none"` with labels returns the (N, V) entries of the kept positions (shape and dtype)

    zh: 带 labels 时 `reduction="none"` 返回保留位置的 (N, V) 各项（比较形状与 dtype）
    """
    student, teacher = random_logits(21, dtype=torch.float32)
    expect.shaped_like_reference(JSD, student, teacher, random_labels(21), reduction="none")


# -- TODO 6: the on-policy advantages ---------------------------------------------------------------


def logprob_batch(seed: int, rows: int = 4, length: int = 6):
    """Student and teacher log-probs of sampled tokens (< 0, either larger), ragged response masks."""
    generator = seeds.generator(seed)
    student = -torch.rand(rows, length, generator=generator, dtype=torch.float64) * 4 - 0.05
    teacher = -torch.rand(rows, length, generator=generator, dtype=torch.float64) * 4 - 0.05
    lengths = torch.tensor([length, 1, 3, 5])[:rows]
    mask = torch.arange(length) < lengths.unsqueeze(-1)  # (B, T)
    return student, teacher, mask


@pytest.mark.todo(6)
def test_advantage_is_teacher_minus_student(expect):
    """Every token a response token: A_t = log pi_T(y_t) - log pi_S(y_t), positive where the teacher agrees more

    zh: 所有 token 都是回答 token 时：A_t = log pi_T(y_t) - log pi_S(y_t)，教师模型更认可之处为正
    """
    student, teacher, mask = logprob_batch(22)
    got = expect.shaped_like_reference(ADVANTAGES, student, teacher, torch.ones_like(mask))
    where = say(
        f"{ADVANTAGES}(random log-probs, every token kept): A = teacher_logprobs - student_logprobs",
        f"随机对数概率、所有 token 都保留时的 `{ADVANTAGES}(...)`：A = teacher_logprobs - student_logprobs",
    )
    expect.same(got, teacher - student, where)


@pytest.mark.todo(6)
def test_advantages_are_a_constant(expect):
    """Log-probs that require grad: the advantages carry no graph (a reward, not a loss term)

    zh: 对数概率 `requires_grad` 时：优势不带计算图（它是奖励，不是损失的一项）
    """
    student, teacher, mask = logprob_batch(23)
    advantages = expect.call(ADVANTAGES, student.requires_grad_(), teacher.requires_grad_(), mask)
    if not isinstance(advantages, torch.Tensor) or advantages.requires_grad or advantages.grad_fn is not None:
        raise AssertionError(
            say(
                f"{ADVANTAGES}(log-probs requiring grad): the advantages are still attached to the graph;"
                " they are detached, so -A * log pi_S sends its gradient through log pi_S only",
                f"对数概率 `requires_grad` 时 `{ADVANTAGES}(...)`：优势仍连在计算图上；优势要 detach，"
                "这样 -A * log pi_S 的梯度只经由 log pi_S 传递",
            )
        )


@pytest.mark.todo(6)
def test_advantages_are_0_on_padding(expect):
    """Ragged masks: every advantage where response_mask is False is exactly 0

    zh: 参差不齐的掩码：response_mask 为 False 处的优势都恰好为 0
    """
    student, teacher, mask = logprob_batch(24)
    got = expect.shaped_like_reference(ADVANTAGES, student, teacher, mask)
    padding = got.detach()[~mask]
    if not bool((padding == 0).all()):
        raise AssertionError(
            say(
                f"{ADVANTAGES}(ragged masks): the advantages on padding are {values_text(padding)};"
                " they must be exactly 0, so padding adds nothing to the policy-gradient loss",
                f"参差不齐的掩码下 `{ADVANTAGES}(...)`：填充（padding）处的优势为 {values_text(padding)}；"
                "它们必须恰好为 0，填充才不会给策略梯度损失带来任何东西",
            )
        )


# -- the input contract -----------------------------------------------------------------------------


def test_rejects_inputs_outside_the_contract(expect):
    """Accepts valid input; rejects bad shapes, labels, beta, temperature, reduction and masks

    zh: 接受合法输入；对错误的形状、labels、beta、温度、reduction 与掩码抛出 ValueError
    """
    student, teacher = random_logits(25, dtype=torch.float32)
    labels = random_labels(25)
    for beta in (0, 0.5, 1):
        expect.call(JSD, student, teacher, labels, beta=beta, temperature=0.5, reduction="sum")  # valid
    nan, inf = float("nan"), float("inf")
    with_nan = student.clone()
    with_nan[0, 0, 0] = nan
    bad = [
        (say("logits of two shapes", "两组 logits 形状不同"), (student, teacher[:, :-1]), {}),
        (say("2-D logits", "logits 是二维的"), (student[0], teacher[0]), {}),
        (say("empty logits", "logits 为空"), (student[:0], teacher[:0]), {}),
        (say("integer logits", "logits 是整数"), (student.long(), teacher.long()), {}),
        (say("a NaN logit", "logits 中有 NaN"), (with_nan, teacher), {}),
        (say("labels of another shape", "labels 形状不同"), (student, teacher, labels[:, :-1]), {}),
        (say("float labels", "labels 是浮点数"), (student, teacher, labels.float()), {}),
        ("beta < 0", (student, teacher), {"beta": -0.1}),
        ("beta > 1", (student, teacher), {"beta": 1.5}),
        (say("beta is NaN", "beta 为 NaN"), (student, teacher), {"beta": nan}),
        ("temperature = 0", (student, teacher), {"temperature": 0.0}),
        ("temperature < 0", (student, teacher), {"temperature": -1.0}),
        (say("temperature is infinite", "温度为无穷大"), (student, teacher), {"temperature": inf}),
        (say("an unknown reduction", "未知的 reduction"), (student, teacher), {"reduction": "average"}),
    ]
    for why, args, kwargs in bad:
        expect.raises_value_error(why, JSD, *args, **kwargs)

    s_logprobs, t_logprobs, mask = logprob_batch(26)
    expect.call(ADVANTAGES, s_logprobs, t_logprobs, mask)  # valid
    with_inf = t_logprobs.clone()
    with_inf[1, 2] = -inf
    bad = [
        (say("log-probs of two shapes", "两组对数概率形状不同"), (s_logprobs, t_logprobs[:, :-1], mask)),
        (say("1-D log-probs", "对数概率是一维的"), (s_logprobs[0], t_logprobs[0], mask[0])),
        (say("an infinite log-prob", "对数概率中有无穷大"), (s_logprobs, with_inf, mask)),
        (say("a mask that is not bool", "掩码不是 bool"), (s_logprobs, t_logprobs, mask.long())),
        (say("a mask of another shape", "掩码形状不同"), (s_logprobs, t_logprobs, mask[:, :-1])),
    ]
    for why, args in bad:
        expect.raises_value_error(why, ADVANTAGES, *args)
