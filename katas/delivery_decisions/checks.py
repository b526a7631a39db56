"""Checks for check_rollout_contract (TODO 1), evaluate_grpo_candidate (TODOs 2-3) and
decide_grpo_delivery (TODO 4).

Fixtures: the lesson's two groups and its four-group candidate (2 of 4 groups valid, 4 s + 2 s);
a rollout with incomplete, oversized and zero-variance groups (so "all groups", "complete
groups" and "valid groups" give three different ratios); zero elapsed time; a candidate exactly
at every gate; and the whole reject / tune / accept table. Every input is a fresh literal.

evaluate_grpo_candidate holds TODOs 2 and 3: TODO-2 checks compare only the evidence values,
TODO-3 checks only the verdict (eligible, failed_checks) on evidence that every way of counting
agrees on; the comparisons of the whole record are marked whole.
"""

import random

import pytest

from grader.content import seeds
from grader.content.i18n import say

CONTRACT = "check_rollout_contract"
CANDIDATE = "evaluate_grpo_candidate"
DECISION = "decide_grpo_delivery"


def lesson_groups():
    """The lesson's admitted rollout: two groups of four traces, policy p1, verifier v1."""
    return [
        {
            "prompt_id": "math-1",
            "source_policy_version": "p1",
            "verifier_version": "v1",
            "trace_ids": ["a1", "a2", "a3", "a4"],
        },
        {
            "prompt_id": "math-2",
            "source_policy_version": "p1",
            "verifier_version": "v1",
            "trace_ids": ["b1", "b2", "b3", "b4"],
        },
    ]


def lesson_gates(**changes):
    gates = {
        "minimum_valid_group_ratio": 0.25,
        "minimum_update_count": 1,
        "minimum_effective_trajectories_per_second": 1.0,
        "minimum_reward_gain": 0.0,
        "minimum_pass_at_group_gain": 0.0,
        "maximum_peak_allocated_bytes": 10_000,
        "maximum_max_length_hit_ratio": 0.10,
    }
    return gates | changes


def evidence(reward_groups=None, group_size=4, rollout_seconds=4.0, update_seconds=2.0, update_count=2, status="ok",
             reward_gain=0.1, pass_gain=0.1, hit_ratio=0.05, peak_bytes=8_000):  # fmt: skip
    """The lesson's candidate evidence, with any field changed."""
    if reward_groups is None:
        reward_groups = [[0.0, 1.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]]
    return {
        "status": status,
        "rollout": {
            "group_size": group_size,
            "reward_groups": reward_groups,
            "rollout_seconds": rollout_seconds,
            "max_length_hit_ratio": hit_ratio,
        },
        "update": {"update_count": update_count, "update_seconds": update_seconds},
        "comparison": {"reward_mean_gain": reward_gain, "pass_at_group_gain": pass_gain},
        "resources": {"peak_allocated_bytes": peak_bytes},
    }


def mixed_rollout(**changes):
    """5 groups of size 4: 2 valid, 1 zero-variance, 1 short (varied), 1 oversized (varied).

    valid / all = 0.4, valid / complete = 0.6667, complete / all = 0.6; 8 effective trajectories
    in 3 s of sampling + 5 s of updating = 1.0 per second (8 / 3 = 2.667 without the update time).
    """
    groups = [
        [0.0, 1.0, 1.0, 0.0],
        [0.5, 0.5, 0.5, 0.5],
        [0.0, 1.0, 1.0],
        [1.0, 0.0, 0.2, 0.0],
        [0.0, 1.0, 0.0, 1.0, 1.0],
    ]
    return evidence(reward_groups=groups, rollout_seconds=3.0, update_seconds=5.0, **changes)


def at_every_gate(**changes):
    """A candidate exactly at every gate: ratio 1.0, 1.0 trajectory/s, 1 update, gains 0, 0.1, 10 000 B.

    Every group is complete and valid and no update time is recorded (8 trajectories in 8 s), so
    every way of counting the evidence (TODO 2) agrees: only the gates (TODO 3) decide.
    """
    fields = dict(reward_groups=[[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]], group_size=2, rollout_seconds=8.0,
                  update_seconds=0.0, update_count=1, reward_gain=0.0, pass_gain=0.0, hit_ratio=0.1, peak_bytes=10_000)  # fmt: skip
    return evidence(**(fields | changes))


def gates_at_every_gate(**changes):
    return lesson_gates(**({"minimum_valid_group_ratio": 1.0} | changes))


EVIDENCE_FIELDS = ("valid_group_ratio", "effective_trajectory_count", "effective_trajectories_per_second")
VERDICT_FIELDS = ("eligible", "failed_checks")


def fields_match_reference(expect, fields, record, gates):
    """The learner's `fields` of evaluate_grpo_candidate(record, gates) equal the reference's.

    EVIDENCE_FIELDS are TODO 2's output, VERDICT_FIELDS TODO 3's: comparing one set leaves
    the other TODO's mistakes out of the check. Returns the learner's whole record.
    """
    expected = expect.reference_call(CANDIDATE, record, gates)
    got = expect.call(CANDIDATE, record, gates)
    if not isinstance(got, dict):
        raise AssertionError(
            say(
                f"{CANDIDATE}(...) returned {type(got).__name__}; expected a dict",
                f"{CANDIDATE}(...) 返回了 {type(got).__name__}；应当返回字典",
            )
        )
    expect.same(
        {name: got.get(name) for name in fields},
        {name: expected[name] for name in fields},
        expect.describe(CANDIDATE, (record, gates), {}),
    )
    return got


# -- TODO 1: rollout contract ----------------------------------------------------------------------


@pytest.mark.todo(1)
def test_lesson_rollout_is_admitted(expect):
    """The lesson's two complete, current, unduplicated groups are admitted

    zh: 讲义中两个完整、版本一致、无重复的轨迹组被准入
    """
    expect.matches_reference(CONTRACT, lesson_groups(), "p1", "v1", 4)


def _broken(case: str):
    groups = lesson_groups()
    first = groups[0]
    if case == "old policy":
        first["source_policy_version"] = "p0"
    elif case == "old verifier":
        first["verifier_version"] = "v0"
    elif case == "empty prompt id":
        first["prompt_id"] = ""
    elif case == "no prompt id":
        del first["prompt_id"]
    elif case == "a trace missing from a group":
        first["trace_ids"] = ["a1", "a2", "a3"]
    elif case == "a trace id that is None":
        first["trace_ids"] = ["a1", None, "a3", "a4"]
    elif case == "an empty trace id":
        first["trace_ids"] = ["a1", "", "a3", "a4"]
    elif case == "a duplicate inside one group":
        first["trace_ids"] = ["a1", "a2", "a2", "a4"]
    elif case == "a duplicate across groups":
        groups[1]["trace_ids"] = ["a1", "b2", "b3", "b4"]
    return groups


BROKEN = {
    "old policy": "policy_version",
    "old verifier": "verifier_version",
    "empty prompt id": "prompt_identity",
    "no prompt id": "prompt_identity",
    "a trace missing from a group": "group_size",
    "a trace id that is None": "trace_identity",
    "an empty trace id": "trace_identity",
    "a duplicate inside one group": "unique_traces",
    "a duplicate across groups": "unique_traces",
}


@pytest.mark.todo(1)
@pytest.mark.parametrize("case", list(BROKEN), ids=[case.replace(" ", "_") for case in BROKEN])
def test_each_broken_contract_names_its_check(expect, case):
    """One broken group is not admitted, and failed_checks names exactly why

    zh: 一个损坏的轨迹组不被准入，`failed_checks` 准确指出原因
    """
    expect.matches_reference(CONTRACT, _broken(case), "p1", "v1", 4)


@pytest.mark.todo(1)
def test_one_duplicated_trace_across_groups_fails_the_contract(expect):
    """A single trace id shared by two groups fails unique_traces (uniqueness is rollout-wide)

    zh: 两个组共用同一个轨迹 id 即违反 `unique_traces`（唯一性针对整个 rollout）
    """
    result = expect.call(CONTRACT, _broken("a duplicate across groups"), "p1", "v1", 4)
    if result.get("admitted") is not False or result.get("failed_checks") != ["unique_traces"]:
        raise AssertionError(
            say(
                f"{CONTRACT}(...) with trace 'a1' in both groups returned {result!r}; expected "
                "{'admitted': False, 'failed_checks': ['unique_traces']}: a trace counted twice is weighted twice",
                f"两个组里都有轨迹 'a1' 时，{CONTRACT}(...) 返回了 {result!r}；应当是 "
                "{'admitted': False, 'failed_checks': ['unique_traces']}：一条轨迹计入两次，就被加权两次",
            )
        )


@pytest.mark.todo(1)
def test_empty_rollout_is_not_admitted(expect):
    """An empty rollout is not admitted and names non_empty (all() of nothing is True)

    zh: 空的 rollout 不被准入，并指出 `non_empty`（对空集合 `all()` 为 True）
    """
    result = expect.call(CONTRACT, [], "p1", "v1", 4)
    if result != {"admitted": False, "failed_checks": ["non_empty"]}:
        raise AssertionError(
            say(
                f"{CONTRACT}([], 'p1', 'v1', 4) returned {result!r}; expected "
                "{'admitted': False, 'failed_checks': ['non_empty']}: no groups is no evidence",
                f"{CONTRACT}([], 'p1', 'v1', 4) 返回了 {result!r}；应当是 "
                "{'admitted': False, 'failed_checks': ['non_empty']}：没有组就没有证据",
            )
        )


@pytest.mark.todo(1)
def test_several_failures_are_listed_in_order(expect):
    """Every failed check is listed, in the fixed order of the checks

    zh: 所有失败的检查都被列出，并保持检查的固定顺序
    """
    groups = lesson_groups() + [
        {"prompt_id": "", "source_policy_version": "p0", "verifier_version": "v0", "trace_ids": ["b1", "", "c3"]}
    ]
    expect.matches_reference(CONTRACT, groups, "p1", "v1", 4)
    expect.matches_reference(CONTRACT, groups, "p0", "v0", 3)


# -- TODO 2: effective update evidence ------------------------------------------------------------------


@pytest.mark.todo(2)
def test_lesson_candidate_evidence(expect):
    """Evidence values vs the reference on the lesson's candidate: 2 of 4 groups valid, 8 in 6 s

    zh: 在讲义的候选上与参考答案比较证据值：4 组中 2 组有效，6 秒内 8 条有效轨迹
    """
    fields_match_reference(expect, EVIDENCE_FIELDS, evidence(), lesson_gates())


@pytest.mark.todo(2)
def test_incomplete_groups_stay_in_the_denominator(expect):
    """Short, oversized and zero-variance groups are not valid, but count among all groups

    zh: 过短、过长和零方差的组都不是有效组，但都计入全部组数
    """
    result = fields_match_reference(expect, EVIDENCE_FIELDS, mixed_rollout(), lesson_gates())
    ratio = result["valid_group_ratio"]
    if not abs(ratio - 0.4) <= 1e-9:  # NaN fails too
        raise AssertionError(
            say(
                f"valid_group_ratio is {ratio:.4f}; expected 2 valid / 5 groups = 0.4000",
                f"valid_group_ratio 为 {ratio:.4f}；应当是 2 个有效组 / 5 组 = 0.4000",
            )
        )
    only_incomplete = evidence(reward_groups=[[0.0, 1.0], [1.0, 1.0]])
    fields_match_reference(expect, EVIDENCE_FIELDS, only_incomplete, lesson_gates())


@pytest.mark.todo(2)
def test_oversized_groups_are_not_complete(expect):
    """Evidence values vs the reference with an oversized group: complete is exactly n rewards

    zh: 含过大组时与参考答案比较证据值：完整指恰好 n 个奖励
    """
    oversized = evidence(reward_groups=[[0.0, 1.0, 0.0, 1.0, 1.0], [0.0, 1.0, 1.0, 0.0], [0.0, 1.0]])
    fields_match_reference(expect, EVIDENCE_FIELDS, oversized, lesson_gates())


@pytest.mark.todo(2)
def test_zero_variance_groups_give_no_update(expect):
    """All-equal rewards give no valid group and no effective trajectory (evidence values)

    zh: 奖励全部相同的组不构成有效组，也没有有效轨迹（比较证据值）
    """
    flat = evidence(reward_groups=[[0.0] * 4 for _ in range(4)], update_count=0, status="no_effective_update")
    result = fields_match_reference(expect, EVIDENCE_FIELDS, flat, lesson_gates())
    if result["effective_trajectory_count"] != 0:
        count = result["effective_trajectory_count"]
        raise AssertionError(
            say(
                f"4 groups of equal rewards gave effective_trajectory_count {count!r}; "
                "expected 0: a zero-variance group has zero advantage everywhere",
                f"4 个奖励全部相同的组得到 effective_trajectory_count = {count!r}；应当是 0：零方差组的优势处处为 0",
            )
        )
    solved = evidence(reward_groups=[[1.0] * 4, [0.0, 1.0, 0.0, 0.0]])
    fields_match_reference(expect, EVIDENCE_FIELDS, solved, lesson_gates())


@pytest.mark.todo(2)
def test_throughput_divides_by_rollout_plus_update_time(expect):
    """Throughput = effective trajectories / (rollout + update seconds), not rollout time alone

    zh: 吞吐 = 有效轨迹数 / （采样 + 更新耗时），而不只是采样耗时
    """
    result = expect.call(CANDIDATE, mixed_rollout(), lesson_gates())
    got = result["effective_trajectories_per_second"]
    if not abs(got - 1.0) <= 1e-9:  # NaN fails too
        raise AssertionError(
            say(
                f"effective_trajectories_per_second is {got:.4f}; expected 8 trajectories / (3 s + 5 s) = 1.0000",
                f"effective_trajectories_per_second 为 {got:.4f}；应当是 8 条轨迹 / (3 s + 5 s) = 1.0000",
            )
        )


@pytest.mark.todo(2)
def test_zero_elapsed_time_gives_zero_throughput(expect):
    """Zero elapsed time gives throughput 0.0, not a ZeroDivisionError

    zh: 耗时为零时吞吐为 0.0，而不是 ZeroDivisionError
    """
    instant = evidence(rollout_seconds=0.0, update_seconds=0.0)
    try:
        fields_match_reference(expect, EVIDENCE_FIELDS, instant, lesson_gates())
    except ZeroDivisionError:
        raise AssertionError(
            say(
                f"{CANDIDATE}(...) with rollout_seconds = update_seconds = 0 raised ZeroDivisionError; "
                "expected effective_trajectories_per_second = 0.0 (no recorded time, no throughput evidence)",
                f"rollout_seconds = update_seconds = 0 时，{CANDIDATE}(...) 抛出了 `ZeroDivisionError`；"
                "应当得到 effective_trajectories_per_second = 0.0（没有记录耗时，就没有吞吐证据）",
            )
        ) from None


@pytest.mark.todo(2)
def test_empty_rollout_gives_zero_evidence(expect):
    """No reward groups: ratio 0.0, no trajectories, throughput 0.0 (evidence values)

    zh: 没有奖励组：比例 0.0、无轨迹、吞吐 0.0（比较证据值）
    """
    fields_match_reference(expect, EVIDENCE_FIELDS, evidence(reward_groups=[]), lesson_gates())


def _random_evidence(seed: int):
    rng = random.Random(seeds.number(seed))
    size = rng.randint(2, 5)
    groups = []
    for _ in range(rng.randint(4, 9)):
        length = rng.choice([size, size, size, size - 1, size + 1])
        level = rng.choice([0.0, 1.0, None, None])
        groups.append([level if level is not None else float(rng.randint(0, 2)) / 2 for _ in range(length)])
    return evidence(
        reward_groups=groups,
        group_size=size,
        rollout_seconds=round(rng.uniform(0.5, 6.0), 2),
        update_seconds=round(rng.uniform(0.5, 6.0), 2),
    )


@pytest.mark.todo(2)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_evidence_matches_reference_on_seeded_rollouts(expect, seed):
    """Evidence values vs the reference on seeded rollouts of complete, short, long and flat groups

    zh: 在随机种子生成、混合完整、过短、过长和零方差组的 rollout 上与参考答案比较证据值
    """
    fields_match_reference(expect, EVIDENCE_FIELDS, _random_evidence(seed), lesson_gates())


@pytest.mark.whole
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_record_matches_reference_on_seeded_rollouts(expect, seed):
    """The whole record vs the reference on seeded rollouts (evidence and gates, TODOs 2-3)

    zh: 在随机种子生成的 rollout 上与参考答案比较整条记录（证据与门槛，TODO 2-3）
    """
    expect.matches_reference(CANDIDATE, _random_evidence(seed), lesson_gates(minimum_valid_group_ratio=0.3))


# -- TODO 3: gates ---------------------------------------------------------------------------------


LESSON_CANDIDATES = {
    "eligible": {},
    "truncated": dict(hit_ratio=0.5),
    "out_of_memory": dict(peak_bytes=20_000),
    "no_effective_update": dict(
        reward_groups=[[0.0] * 4 for _ in range(4)], update_count=0, status="no_effective_update"
    ),
}


@pytest.mark.todo(3)
@pytest.mark.parametrize("case", ["eligible", "truncated", "out_of_memory"])
def test_lesson_candidates_verdict(expect, case):
    """Verdict vs the reference on the lesson's eligible, truncated and out-of-memory candidates

    Only eligible and failed_checks are compared: the evidence of these candidates passes its
    gates however it is counted.

    zh: 在讲义中合格、截断过多、显存超限的候选上与参考答案比较结论（`eligible` 与 `failed_checks`）
    """
    fields_match_reference(expect, VERDICT_FIELDS, evidence(**LESSON_CANDIDATES[case]), lesson_gates())


@pytest.mark.whole
@pytest.mark.parametrize("case", list(LESSON_CANDIDATES))
def test_lesson_candidates_whole_record(expect, case):
    """The whole record vs the reference on the lesson's four candidates (TODOs 2-3)

    zh: 在讲义的四个候选上与参考答案比较整条记录（TODO 2-3）
    """
    expect.matches_reference(CANDIDATE, evidence(**LESSON_CANDIDATES[case]), lesson_gates())


@pytest.mark.todo(3)
def test_candidate_exactly_at_every_gate_is_eligible(expect):
    """Gates are inclusive: a candidate exactly at every threshold is eligible

    zh: 门槛包含边界：恰好落在每个门槛上的候选符合资格
    """
    result = expect.call(CANDIDATE, at_every_gate(), gates_at_every_gate())
    if result.get("eligible") is not True or result.get("failed_checks") != []:
        verdict = f"eligible={result.get('eligible')!r}, failed_checks={result.get('failed_checks')!r}"
        raise AssertionError(
            say(
                f"a candidate exactly at every gate (ratio 1.0, 1.0 trajectory/s, 1 update, gains 0.0, "
                f"truncation 0.1, 10000 bytes) gave {verdict}; gates are inclusive (>= minimum, <= maximum)",
                f"恰好落在每个门槛上的候选（比例 1.0，每秒 1.0 条轨迹，1 次更新，提升 0.0，截断比例 0.1，"
                f"10000 字节）得到 {verdict}；门槛包含边界（>= 下限，<= 上限）",
            )
        )


PAST = {
    "execution": (dict(status="failed"), {}),
    "effective_groups": ({}, dict(minimum_valid_group_ratio=1.01)),
    "effective_throughput": ({}, dict(minimum_effective_trajectories_per_second=1.01)),
    "updates": (dict(update_count=0), {}),
    "reward": (dict(reward_gain=-0.01), {}),
    "pass_at_group": (dict(pass_gain=-0.01), {}),
    "truncation": (dict(hit_ratio=0.11), {}),
    "memory": (dict(peak_bytes=10_001), {}),
}


@pytest.mark.todo(3)
@pytest.mark.parametrize("gate", list(PAST))
def test_just_past_one_gate_fails_that_gate_only(expect, gate):
    """Just past one gate: not eligible, and only that gate is named

    zh: 只越过一个门槛：不具备资格，且只指出这一个门槛
    """
    changes, gate_changes = PAST[gate]
    result = expect.call(CANDIDATE, at_every_gate(**changes), gates_at_every_gate(**gate_changes))
    if result.get("eligible") is not False or result.get("failed_checks") != [gate]:
        verdict = f"eligible={result.get('eligible')!r}, failed_checks={result.get('failed_checks')!r}"
        raise AssertionError(
            say(
                f"just past the {gate} gate: {verdict}; expected eligible=False, failed_checks=[{gate!r}]",
                f"刚好越过 `{gate}` 门槛：{verdict}；应当是 eligible=False, failed_checks=[{gate!r}]",
            )
        )


@pytest.mark.todo(3)
def test_failed_gates_are_listed_in_order(expect):
    """Verdict vs the reference on a candidate failing six gates: all listed, in the fixed order

    zh: 在未通过六个门槛的候选上与参考答案比较结论：全部列出，并保持固定顺序
    """
    bad = at_every_gate(status="failed", update_count=0, pass_gain=-0.1, hit_ratio=0.3, peak_bytes=10_001)
    gates = gates_at_every_gate(minimum_effective_trajectories_per_second=1.01)
    fields_match_reference(expect, VERDICT_FIELDS, bad, gates)


# -- TODO 4: decision ------------------------------------------------------------------------------

GOOD_ARTIFACT = {"path": "adapter", "sha256": "abc"}


@pytest.mark.todo(4)
@pytest.mark.parametrize(
    ("rollout", "eligible", "artifact"),
    [(True, True, GOOD_ARTIFACT), (True, True, {}), (True, False, GOOD_ARTIFACT)],
    ids=["accept", "no_artifact", "candidate_not_ready"],
)
def test_lesson_decisions(expect, rollout, eligible, artifact):
    """The lesson's three cases: accept, reject without an artifact, tune a weak candidate

    zh: 讲义的三种情况：交付、缺少产物时拒绝、候选不足时调优
    """
    expect.matches_reference(DECISION, {"admitted": rollout}, {"eligible": eligible}, dict(artifact))


@pytest.mark.todo(4)
@pytest.mark.parametrize("admitted", [True, False])
@pytest.mark.parametrize("eligible", [True, False])
@pytest.mark.parametrize("has_artifact", [True, False])
def test_whole_decision_table(expect, admitted, eligible, has_artifact):
    """All eight combinations match the reference: reject > tune > accept

    zh: 八种组合全部与参考答案一致：reject 优先于 tune，tune 优先于 accept
    """
    artifact = dict(GOOD_ARTIFACT) if has_artifact else {"path": "adapter"}
    expect.matches_reference(DECISION, {"admitted": admitted}, {"eligible": eligible}, artifact)


@pytest.mark.todo(4)
def test_broken_rollout_rejects_even_a_failed_candidate(expect):
    """A weak candidate alone is tuned; with a broken rollout or artifact too, it is rejected

    zh: 仅候选不足时调优；同时 rollout 或产物失败时则拒绝
    """
    cases = [
        (say("only the candidate failed", "只有候选未通过"), {"admitted": True}, dict(GOOD_ARTIFACT), "tune"),
        (
            say("rollout not admitted and candidate not eligible", "rollout 未被准入，且候选不具备资格"),
            {"admitted": False},
            dict(GOOD_ARTIFACT),
            "reject",
        ),
        (
            say("no sha256 and candidate not eligible", "没有 sha256，且候选不具备资格"),
            {"admitted": True},
            {"path": "adapter"},
            "reject",
        ),
    ]
    for what, rollout, artifact, expected in cases:
        result = expect.call(DECISION, rollout, {"eligible": False}, artifact)
        if result.get("decision") != expected:
            raise AssertionError(
                say(
                    f"{what}: decision {result.get('decision')!r}, expected {expected!r}. A weak candidate can be "
                    "tuned; a rollout or artifact that is not valid evidence cannot, so reject comes first",
                    f"{what}：decision 为 {result.get('decision')!r}，应当是 {expected!r}。候选不足可以调优；"
                    "rollout 或产物不是有效证据就无从调优，所以 reject 优先",
                )
            )


@pytest.mark.todo(4)
@pytest.mark.parametrize(
    "artifact",
    [{"path": "adapter"}, {"sha256": "abc"}, {"path": "", "sha256": "abc"}, {"path": "adapter", "sha256": None}],
    ids=["path_only", "hash_only", "empty_path", "hash_none"],
)
def test_artifact_needs_both_path_and_hash(expect, artifact):
    """An adapter without both a path and a sha256 is not traceable: reject

    zh: 适配器缺少路径或 sha256 就无法追溯：拒绝
    """
    result = expect.call(DECISION, {"admitted": True}, {"eligible": True}, dict(artifact))
    if result.get("decision") != "reject" or "artifact" not in result.get("failed_checks", []):
        raise AssertionError(
            say(
                f"artifact {artifact!r} gave {result!r}; expected decision 'reject' with 'artifact' in failed_checks",
                f"产物 `{artifact!r}` 得到 `{result!r}`；应当是 decision 为 'reject'，且 failed_checks 含 'artifact'",
            )
        )


# -- the input contract ------------------------------------------------------------------------------


def test_rejects_inputs_outside_the_contract(expect):
    """Accepts valid input; rejects malformed groups, evidence, gates and decision inputs with ValueError

    zh: 接受合法输入；对格式错误的轨迹组、证据、门槛和决策输入抛出 ValueError
    """
    expect.call(CONTRACT, lesson_groups(), "p1", "v1", 4)
    expect.call(CANDIDATE, evidence(), lesson_gates())
    expect.call(DECISION, {"admitted": True}, {"eligible": True}, dict(GOOD_ARTIFACT))
    nan, inf = float("nan"), float("inf")
    no_trace_ids = lesson_groups()
    del no_trace_ids[0]["trace_ids"]
    int_trace = lesson_groups()
    int_trace[0]["trace_ids"] = [1, 2, 3, 4]
    for why, args in [
        (
            say("groups is a dict, not a list", "`groups` 是字典而不是列表"),
            ({"math-1": lesson_groups()[0]}, "p1", "v1", 4),
        ),
        (say("a group that is not a dict", "有一个组不是字典"), (["math-1"], "p1", "v1", 4)),
        (say("a group without trace_ids", "有一个组没有 `trace_ids`"), (no_trace_ids, "p1", "v1", 4)),
        (say("trace ids that are ints", "轨迹 id 是整数"), (int_trace, "p1", "v1", 4)),
        (say("an empty expected policy version", "期望的策略版本为空"), (lesson_groups(), "", "v1", 4)),
        (say("a None expected verifier version", "期望的验证器版本为 None"), (lesson_groups(), "p1", None, 4)),
        ("expected_group_size = 0", (lesson_groups(), "p1", "v1", 0)),
        ("expected_group_size = 4.0", (lesson_groups(), "p1", "v1", 4.0)),
        ("expected_group_size = True", (lesson_groups(), "p1", "v1", True)),
    ]:
        expect.raises_value_error(why, CONTRACT, *args)
    no_update = evidence()
    del no_update["update"]
    gate_missing = lesson_gates()
    del gate_missing["maximum_peak_allocated_bytes"]
    for why, args in [
        (say("a gate is missing", "缺少一个门槛"), (evidence(), gate_missing)),
        (say("a gate is NaN", "有一个门槛是 NaN"), (evidence(), lesson_gates(minimum_reward_gain=nan))),
        (say("evidence without 'update'", "证据里没有键 `update`"), (no_update, lesson_gates())),
        (say("a NaN reward", "有一个奖励是 NaN"), (evidence(reward_groups=[[0.0, nan, 1.0, 0.0]]), lesson_gates())),
        (
            say("a reward group that is not a list", "有一个奖励组不是列表"),
            (evidence(reward_groups=[0.0, 1.0]), lesson_gates()),
        ),
        ("group_size = 0", (evidence(group_size=0), lesson_gates())),
        (say("negative rollout_seconds", "`rollout_seconds` 为负数"), (evidence(rollout_seconds=-1.0), lesson_gates())),
        (say("infinite update_seconds", "`update_seconds` 为 inf"), (evidence(update_seconds=inf), lesson_gates())),
        ("update_count = -1", (evidence(update_count=-1), lesson_gates())),
        ("update_count = 1.5", (evidence(update_count=1.5), lesson_gates())),
        ("max_length_hit_ratio = 1.5", (evidence(hit_ratio=1.5), lesson_gates())),
        (say("negative peak bytes", "显存峰值字节数为负数"), (evidence(peak_bytes=-1), lesson_gates())),
        (say("status is None", "`status` 为 None"), (evidence(status=None), lesson_gates())),
    ]:
        expect.raises_value_error(why, CANDIDATE, *args)
    for why, args in [
        (
            say("rollout without 'admitted'", "rollout 记录里没有键 `admitted`"),
            ({}, {"eligible": True}, dict(GOOD_ARTIFACT)),
        ),
        (
            say("'admitted' is a str", "`admitted` 是字符串"),
            ({"admitted": "yes"}, {"eligible": True}, dict(GOOD_ARTIFACT)),
        ),
        (
            say("candidate without 'eligible'", "候选记录里没有键 `eligible`"),
            ({"admitted": True}, {}, dict(GOOD_ARTIFACT)),
        ),
        (say("artifact is None", "产物为 None"), ({"admitted": True}, {"eligible": True}, None)),
    ]:
        expect.raises_value_error(why, DECISION, *args)
