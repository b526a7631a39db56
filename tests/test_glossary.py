"""The glossary, enforced: every Chinese text a learner reads uses the terms of katas/glossary.toml
and Chinese punctuation.

The texts: every "zh" field of kata.toml, misconceptions.toml and questions.toml; the prose of
lesson.zh.md (fenced code blocks and inline `code` left out); the "zh:" line of each check's
docstring; and the Chinese (second) argument of every `say(en, zh)` call in katas/*/checks.py and
grader/**/*.py. Code (`...` spans, f-string fields, the name a guidance line assigns) is left out
before the rules look.
"""

import ast
import functools
import re
import sys
import tomllib
from pathlib import Path

import pytest
from chinese_text import CRAMPED, GLOSSARY, HAN, code_names, english_words

from grader.content.catalogue import all_katas

ROOT = Path(__file__).resolve().parent.parent
KATAS_DIR = ROOT / "katas"
CODE = re.compile(r"`[^`\n]*`")
ASSIGNED = re.compile(r"^\s*[A-Za-z_]\w*(\[[^\]]*\])?\s+=\s")  # a guidance line's `name = ` or `name["key"] = `
FENCE = re.compile(r"^\s*(```|~~~)")
FIELD = "\x00"  # what stands for an f-string field or a code span: no letter, no punctuation


# -- the texts ------------------------------------------------------------------------------------


def _zh_fields(node, where: str):
    """(where, text) for every string under a "zh" key anywhere in a TOML document."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "zh":
                for text in value if isinstance(value, list) else [value]:
                    yield where, text
            else:
                yield from _zh_fields(value, where)
    elif isinstance(node, list):
        for item in node:
            yield from _zh_fields(item, where)


def _lesson_prose(path: Path):
    """(where, line) for each prose line of a Markdown lesson: fenced code blocks left out."""
    fenced = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and line.strip():
            yield f"{_name(path)}:{number}", line


def _text_of(node: ast.expr) -> str | None:
    """The text of a string literal or f-string, each field replaced by FIELD; None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_text_of(part) or FIELD for part in node.values)
    return None


def _python_texts(path: Path):
    """(where, text) for the zh: line of each function's docstring and the zh argument of each say()."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and path.name == "checks.py":
            for line in (ast.get_docstring(node) or "").splitlines():
                if line.startswith("zh:"):
                    yield f"{_name(path)}:{node.lineno}", line.removeprefix("zh:").strip()
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "say" and len(node.args) == 2:
            text = _text_of(node.args[1])
            if text is not None:
                yield f"{_name(path)}:{node.lineno}", text


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def chinese_texts():
    """(where, text) for every Chinese text of the katas and the grader's check messages."""
    for path in sorted(KATAS_DIR.glob("*/*.toml")):
        yield from _zh_fields(tomllib.loads(path.read_text(encoding="utf-8")), _name(path))
    for path in sorted(KATAS_DIR.glob("*/docstrings.zh.toml")):  # each line: a line of pure code stays as it is
        texts = tomllib.loads(path.read_text(encoding="utf-8"))
        comments = texts.pop("comments", {})
        for key, text in [*texts.items(), *comments.items()]:
            yield from ((f"{_name(path)} [{key}]", line.strip()) for line in text.splitlines())
    for path in sorted(KATAS_DIR.glob("*/lesson.zh.md")):
        yield from _lesson_prose(path)
    for path in sorted([*KATAS_DIR.glob("*/checks.py"), *(ROOT / "grader").rglob("*.py")]):
        yield from _python_texts(path)


# -- the rules ------------------------------------------------------------------------------------


def _variant_pattern(variant: str, term: str = "") -> re.Pattern:
    """A variant as a pattern: an ASCII word matches only as a whole word (not inside an identifier
    such as eps_low), and case-sensitively; a variant ending in the start of its term never matches
    inside the term (同一提示 is caught, 同一提示词 is not)."""
    edge = "(?<![A-Za-z_])" if variant[0].isascii() else ""
    end = "(?![A-Za-z_])" if variant[-1].isascii() else ""
    for cut in range(len(term) - 1, 0, -1):
        if variant.endswith(term[:cut]) and not variant[-1].isascii():
            end = f"(?!{re.escape(term[cut:])})"
            break
    return re.compile(edge + re.escape(variant) + end)


VARIANTS = [
    (_variant_pattern(variant, term["zh"]), variant, term)
    for term in GLOSSARY["term"]
    for variant in term.get("replaces", [])
]


def problems(text: str) -> list[str]:
    """What is wrong with one Chinese text: replaced variants, cramped half-width punctuation, quotes
    (any ASCII " outside code: code goes in `...`, quotation in “…”)."""
    prose = ASSIGNED.sub(FIELD, CODE.sub(FIELD, text))
    found = []
    for allowed in (form for term in GLOSSARY["term"] for form in term.get("allowed", [])):
        prose = prose.replace(allowed, FIELD)
    for pattern, variant, term in VARIANTS:
        if pattern.search(prose):
            found.append(f"“{variant}” where the glossary says “{term['zh']}” ({term['en']})")
    for match in CRAMPED.finditer(prose):
        mark = re.sub(f"[{HAN}]", "", match.group())
        found.append(f"half-width “{mark}” next to Chinese in “…{match.group()}…”")
    if '"' in prose:  # outside `...` and f-string fields: code goes in backticks, quotation in “…”
        found.append('ASCII "…": use `…` for code, “…” for quotation')
    if "「" in prose or "」" in prose:
        found.append("「…」: write “…”")
    return found


# -- the tests ------------------------------------------------------------------------------------

TEXTS = [(where, text) for where, text in chinese_texts() if re.search(f"[{HAN}]", text)]


def test_the_texts_are_all_found():
    """Every kind of text is read: TOML fields, lesson prose, check docstrings, say() messages."""
    places = {where.split(":")[0].rsplit("/", 1)[-1] for where, _ in TEXTS}
    assert {"kata.toml", "misconceptions.toml", "questions.toml", "lesson.zh.md", "checks.py"} <= places
    assert any(where.startswith("grader/") for where, _ in TEXTS)


def test_every_chinese_text_follows_the_glossary():
    """Docstrings follow the terms only: like the English ones, they write Python literals and calls
    ("grpo", {"admitted": bool}, f(a, b)) as code is written, without backticks."""
    wrong = [
        f"{where}: {problem}\n    {text}"
        for where, text in TEXTS
        for problem in problems(text)
        if "docstrings.zh.toml" not in where or problem.startswith("“")
    ]
    if wrong:
        pytest.fail(f"{len(wrong)} Chinese texts break the glossary:\n" + "\n".join(wrong), pytrace=False)


def test_a_check_file_gives_its_zh_lines_and_say_messages(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    path = tmp_path / "checks.py"
    path.write_text(
        'def test_x():\n    """Title\n\n    zh: 标题\n    """\n'
        '    raise AssertionError(say(f"{a} failed", f"{a}：失败"))\n',
        encoding="utf-8",
    )
    assert sorted(text for _, text in _python_texts(path)) == [FIELD + "：失败", "标题"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("逐 Token 的比率", "“Token”"),
        ("每个词元的概率", "“词元”"),
        ("两项 surrogate 取了最大值", "“surrogate”"),
        ("不要押注两边", "“押注”"),
        ("损失:与参考答案比较", "half-width “:”"),
        ("把比率限制在(1 - eps)之内", "half-width “(”"),
        ('7/3 对 "2.33333" 不成立，而 "甲" 也不行', 'ASCII "…"'),
        ("叫做「优势」", "「…」"),
        ('把 loss_type="bnpo" 换成 "dr_grpo"', 'ASCII "…"'),
        ("同一提示下采样的候选", "“同一提示”"),
        ("每个提示采样 G 个候选", "“每个提示”"),
        ("只依赖提示的项", "“提示的”"),
        ("看过完整的提示和回答", "“提示和”"),
        ("序列（提示加回答）", "“提示加”"),
        ("只与提示有关的项", "“提示有关”"),
        ("在 DPO 中，提示 x 下回答 y 的隐式奖励", "“提示 x”"),
        ("只算补全部分的损失", "“补全”"),
        ("交换 chosen 与 rejected", "“chosen”"),
        ("策略反而学习 rejected", "“rejected”"),
        ("（提示词 x_i，被选中的回答 y_w，被拒绝的回答 y_l）", "“被选中的回答”"),
        ("beta 越大，策略越贴近参考模型", "“贴近参考模型”"),
        ("策略比参考模型更偏向被选回答", "“比参考模型更偏向”"),
        ("被拒绝的回答", "“被拒绝的回答”"),
        ("在被选中回答的 token 上求和", "“被选中回答”"),
        ("（被选中的 y_w，被拒绝的 y_l）", "“被选中的 y_w”"),
        ("（被选中的 y_w，被拒绝的 y_l）", "“被拒绝的 y_l”"),
        ("偏好每个被选中序列胜过被拒绝序列", "“被选中序列”"),
        ("偏好每个被选中序列胜过被拒绝序列", "“被拒绝序列”"),
        ("reward_chosen: (B,) 被偏好序列的奖励", "“被偏好序列”"),
        ("唯一性针对的是整个生成轨迹（rollout）", "“生成轨迹”"),
        ("**轨迹契约。** 组内优势比较的是", "“轨迹契约”"),
        ("轨迹或产物失败时拒绝", "“轨迹或产物”"),
        ("先检查候选再检查轨迹与产物", "“轨迹与产物”"),
        ("轨迹未被准入，且候选不具备资格", "“轨迹未被准入”"),
        ("它的对数概率是常数，已分离，不接收梯度", "“已分离”"),
        ("既不分离也不裁剪", "“不分离”"),
        ("在 torch.no_grad 下计算，或者分离", "“或者分离”"),
        ("返回的损失已被分离（detach）", "“分离（detach）”"),
        ("在隔离问题上重新生成", "“隔离问题”"),
        ("没有错位：每个位置给自己输入的 token 打分", "“错位”"),
        ("比最好的 token 低 200 nats 的 token", "“nats”"),
        ("单位是 nat", "“nat”"),
        ("先读课文", "“课文”"),
        ("两者的区别见课程", "“见课程”"),
        ("课程中的批次", "“课程中的”"),
        ("源课程 004 的说法相反", "“源课程”"),
        ("- 课程批次得到 0.6590", "“课程批次”"),
    ],
)
def test_a_bad_text_is_caught(text, expected):
    assert any(expected in problem for problem in problems(text)), problems(text)


@pytest.mark.parametrize(
    "text",
    [
        "把 `ratio` 限制在 [1 - clip_range, 1 + clip_range]（见 `torch.clamp`）",
        "填充（padding）位置的掩码为 0，之后的填充 token 不计入损失",
        '`rollout["max_length_hit_ratio"]` 与 “门槛” 比较：P(y_a 优于 y_b) = 0.88',
        '把 `loss_type="bnpo"` 换成 `"dr_grpo"`，答案写成 “#### 42”',
        'ANSWERS["k3_value"] = ...  # 数值：k3 的值',
        "同一提示词下采样的候选，每个提示词一组，只依赖提示词的项",
        "kata hint grpo_loss  # 下一条提示；提示：先读讲义",
        "在 “rollout”（采样生成）时记录，之后每个 rollout 都是固定样本；轨迹 id 在整个 rollout 中唯一",
        "返回的损失已被 “detach”（从计算图分离），之后 detach 的值仅供记录",
        "被选回答与被拒回答；掩码选中的位置（被选中的值）求和",
        "没有错开一位；低 200 奈特；本课程使用总体标准差",
    ],
)
def test_a_good_text_passes(text):
    assert problems(text) == []


# -- glosses: a term's English (or its first-use form) once per unit, never inside parentheses ------

GLOSS_FORMS = [form for term in GLOSSARY["term"] for form in term.get("allowed", []) if "（" in form]
GLOSS = re.compile(f"(?<=[{HAN}])（[A-Za-z][A-Za-z .'-]*）|" + "|".join(map(re.escape, GLOSS_FORMS)))


def _zh_units(node, where: str):
    """(where, texts) for each "zh" value of a TOML document: a list (hints, guidance, options) is one unit."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "zh":
                yield where, value if isinstance(value, list) else [value]
            else:
                yield from _zh_units(value, where)
    elif isinstance(node, list):
        for item in node:
            yield from _zh_units(item, where)


def gloss_units():
    """(where, texts) for each unit a gloss may appear once in: a lesson, a hint list (any "zh" list),
    a TOML text, a docstring, a check's title, a say() message."""
    for path in sorted(KATAS_DIR.glob("*/*.toml")):
        if not path.name.startswith("docstrings."):
            yield from _zh_units(tomllib.loads(path.read_text(encoding="utf-8")), _name(path))
    for path in sorted(KATAS_DIR.glob("*/docstrings.zh.toml")):
        texts = tomllib.loads(path.read_text(encoding="utf-8"))
        comments = texts.pop("comments", {})
        yield from ((f"{_name(path)} [{key}]", [text]) for key, text in [*texts.items(), *comments.items()])
    for path in sorted(KATAS_DIR.glob("*/lesson.zh.md")):
        yield _name(path), [line for _, line in _lesson_prose(path)]
    for path in sorted([*KATAS_DIR.glob("*/checks.py"), *(ROOT / "grader").rglob("*.py")]):
        yield from ((where, [text]) for where, text in _python_texts(path))


def gloss_problems(texts: list[str]) -> list[str]:
    """A gloss given twice in one unit, or inside （…） or (...)."""
    found, seen = [], set()
    for text in texts:
        prose = CODE.sub(FIELD, text)
        for match in GLOSS.finditer(prose):
            gloss = match.group()
            if gloss in seen:
                found.append(f"“{gloss}” a second time")
            seen.add(gloss)
            before = prose[: match.start()]
            if before.count("（") > before.count("）") or before.count("(") > before.count(")"):
                found.append(f"“{gloss}” inside parentheses")
    return found


def test_a_gloss_is_given_once_per_unit_and_never_in_parentheses():
    """Issue 30: 填充（padding） once per lesson, per hint list and per check message, then 填充; and
    never as （填充（padding）） or (填充（padding）)."""
    wrong = [f"{where}: {problem}" for where, texts in gloss_units() for problem in gloss_problems(texts)]
    if wrong:
        pytest.fail(f"{len(wrong)} glosses repeated or nested:\n" + "\n".join(wrong), pytrace=False)


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        (["填充（padding）位置为 0", "其余填充（padding）不计入"], "a second time"),
        (["间隔（margin）为正，间隔（margin）越大越好"], "a second time"),
        (["给回答之后的 token（填充（padding））打分"], "inside parentheses"),
        (["返回的损失（已 “detach”（从计算图分离））"], "inside parentheses"),
        (["在 “rollout”（采样生成）时记录", "整个 “rollout”（采样生成）"], "a second time"),
    ],
)
def test_a_repeated_or_nested_gloss_is_caught(texts, expected):
    assert any(expected in problem for problem in gloss_problems(texts)), gloss_problems(texts)


def test_a_gloss_once_per_unit_passes():
    assert gloss_problems(["填充（padding）位置为 0，之后的填充不计入", "`f(x)（padding）`"]) == []
    assert all(gloss_problems([text]) == [] for text in ["填充（padding）", "随机失活（dropout）"])


@functools.cache
def _names(slug: str | None) -> frozenset[str]:
    """Words that are code in a Chinese text of kata `slug`: its reference's and checks' identifiers."""
    katas = {kata.slug: kata for kata in all_katas()}
    if slug not in katas:
        return frozenset(katas)
    kata = katas[slug]
    checks = code_names(kata.checks_path.read_text(encoding="utf-8"), constants=False)
    return frozenset(code_names(kata.solution()) | checks | set(katas))


def test_no_chinese_text_has_english_prose():
    """Issue 19: English words in Chinese text only as code, identifiers, numbers, quoted data
    (“The answer is 42”), a gloss beside its Chinese term (填充（padding）) or a term kept in English."""
    found = []
    for where, text in TEXTS:
        slug = where.split("/")[1] if where.startswith("katas/") else None
        if "docstrings.zh.toml" in where:  # a docstring writes Python's string literals as code does
            text = re.sub(r'"[^"\n]*"', " ", text)
        if words := english_words(text, _names(slug)):
            found.append(f"{where}: {words}\n    {text}")
    if found:
        pytest.fail(f"{len(found)} Chinese texts have English words:\n" + "\n".join(found), pytrace=False)
