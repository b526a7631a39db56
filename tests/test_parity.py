"""Every English text and its Chinese translation share their code spans, numbers and formulas
(tests/parity.py defines them), each as often; a difference is an error unless
tests/parity_allowed.toml lists it with its reason.

The pairs: each lesson section (lesson.en.md and lesson.zh.md split at their headings, paired in
order, fenced code blocks included); every en/zh pair of kata.toml, misconceptions.toml and
questions.toml (lists paired by index: each guidance line, hint, option); each docstring and
comment of reference/<slug>.py and its text in docstrings.zh.toml; in checks.py, each docstring's
English title and its zh: line, and the two arguments of each say(en, zh) call.

An allow-list entry names one place (`where`, as the failure prints it), one `kind`, the items only
the English has (`en`) and only the Chinese has (`zh`), a string or a list, and a `reason`. It
allows those items at that place and no others; an entry that matches nothing fails too.
"""

import ast
import functools
import re
import tomllib
from collections import Counter
from pathlib import Path

import pytest
from parity import KINDS, Difference, compare, differences, full_width, items, key

ROOT = Path(__file__).resolve().parent.parent
KATAS_DIR = ROOT / "katas"
ALLOWED = Path(__file__).with_name("parity_allowed.toml")
HEADING = re.compile(r"^#{1,6}\s")
FENCE = re.compile(r"^\s*(```|~~~)")
COMMENT = re.compile(r"(^|\s)#.*$")
HAN = re.compile(r"[\u3400-\u9fff\u3000-\u303f\uff00-\uffef]")

# -- the pairs ------------------------------------------------------------------------------------------


def _sections(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """(prose lines, fenced blocks as lists of lines) per section: the text before the first heading,
    then each heading with what follows it."""
    sections: list[tuple[list[str], list[list[str]]]] = [([], [])]
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            if fenced:
                sections[-1][1].append([])
        elif fenced:
            sections[-1][1][-1].append(line)
        elif HEADING.match(line):
            sections.append(([line], []))
        else:
            sections[-1][0].append(line)
    return sections


def _code_line(line: str) -> str | None:
    """A fenced line without its comment, when that is pure ASCII (code); else None."""
    code = COMMENT.sub("", line).strip()
    return code if code.isascii() else None


def _section_items(prose: list[str], blocks: list[list[str]], others: list[list[str]]) -> dict[str, list[str]]:
    """The items of a lesson section: its prose, and its fenced lines paired with the other language's
    (`others`): a line that is code on both sides is compared whole, any other is read as prose."""
    found = items("\n".join(prose), markdown=True)
    for number, block in enumerate(blocks):
        other = others[number] if number < len(others) else []
        for index, line in enumerate(block):
            code = _code_line(line)
            if code is not None and index < len(other) and _code_line(other[index]) is not None:
                if code:
                    found["code"].append(code)
            else:
                for kind, values in items(line).items():
                    found[kind] += values
    return found


def lesson_differences(kata: Path) -> list[Difference]:
    en = _sections((kata / "lesson.en.md").read_text(encoding="utf-8"))
    zh = _sections((kata / "lesson.zh.md").read_text(encoding="utf-8"))
    where = f"katas/{kata.name}/lesson.*.md"
    found = []
    if len(en) != len(zh):
        found.append(Difference(where, "sections", (f"{len(en) - 1} headings",), (f"{len(zh) - 1} headings",)))
    for number, ((en_prose, en_blocks), (zh_prose, zh_blocks)) in enumerate(zip(en, zh)):
        place = f"{where} §{number}"
        if len(en_blocks) != len(zh_blocks) or any(len(a) != len(b) for a, b in zip(en_blocks, zh_blocks)):
            lines = (tuple(f"{len(block)} lines" for block in blocks) for blocks in (en_blocks, zh_blocks))
            found.append(Difference(place, "code blocks", *lines))
        en_items = _section_items(en_prose, en_blocks, zh_blocks)
        zh_items = _section_items(zh_prose, zh_blocks, en_blocks)
        found += differences(place, en_items, zh_items)
    return found


def _label(name: str, index: int, item) -> str:
    if isinstance(item, dict):
        for field in ("id", "key", "number"):
            if field in item:
                return f"{name} {item[field]}"
    return f"{name}[{index}]"


def _toml_pairs(node, path: str):
    """(path, en, zh) for every en/zh pair of a TOML document; lists of texts paired by index."""
    if isinstance(node, dict):
        if "en" in node and "zh" in node:
            en, zh = node["en"], node["zh"]
            if isinstance(en, list) and isinstance(zh, list):
                if len(en) != len(zh):
                    yield path, f"{len(en)} items", f"{len(zh)} items"
                for index, (one, other) in enumerate(zip(en, zh)):
                    yield f"{path}[{index}]", one, other
            else:
                yield path, en, zh
            return
        for name, value in node.items():
            if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
                for index, item in enumerate(value):
                    yield from _toml_pairs(item, f"{path} {_label(name, index, item)}".strip())
            else:
                yield from _toml_pairs(value, f"{path} {name}".strip())


def toml_differences(path: Path) -> list[Difference]:
    where = f"katas/{path.parent.name}/{path.name}"
    found = []
    for place, en, zh in _toml_pairs(tomllib.loads(path.read_text(encoding="utf-8")), ""):
        found += compare(f"{where} {place}", str(en), str(zh))
    return found


def _docstrings(source: str) -> dict[str, str]:
    """{"module" | name | "Class.method": docstring} of a module, as grader.content.render keys them."""
    tree = ast.parse(source)
    found = {"module": ast.get_docstring(tree)} if ast.get_docstring(tree) else {}

    def visit(body, prefix):
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                if ast.get_docstring(node):
                    found[prefix + node.name] = ast.get_docstring(node)
                if isinstance(node, ast.ClassDef):
                    visit(node.body, f"{prefix}{node.name}.")

    visit(tree.body, "")
    return found


def docstring_differences(kata: Path) -> list[Difference]:
    texts = tomllib.loads((kata / "docstrings.zh.toml").read_text(encoding="utf-8"))
    comments = texts.pop("comments", {})
    english = _docstrings((ROOT / "reference" / f"{kata.name}.py").read_text(encoding="utf-8"))
    where = f"katas/{kata.name}/docstrings.zh.toml"
    found = []
    for name, zh in texts.items():
        if name in english:
            found += compare(f"{where} {name}", english[name], zh, markdown=True)
    for en, zh in comments.items():
        found += compare(f"{where} comments “{en}”", en, zh)
    return found


def _text_of(node: ast.expr, source: str) -> str | None:
    """A string literal's text; an f-string's with each field's source marked as \\x02expr\\x03."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if not isinstance(node, ast.JoinedStr):
        return None
    text = ""
    for part in node.values:
        if isinstance(part, ast.Constant):
            text += part.value
            continue
        field = ast.get_source_segment(source, part.value) or ast.unparse(part.value)
        field += "" if part.conversion == -1 else f"!{chr(part.conversion)}"
        if part.format_spec is not None:
            field += ":" + (_text_of(part.format_spec, source) or "")
        text += f"\x02{field}\x03"  # parity.items() reads it as code: {field}
    return text


def _is_say(node) -> bool:
    return isinstance(node, ast.Call) and getattr(node.func, "id", None) == "say" and len(node.args) == 2


def checks_differences(kata: Path) -> list[Difference]:
    source = (kata / "checks.py").read_text(encoding="utf-8")
    where = f"katas/{kata.name}/checks.py"
    found = []
    for top in ast.parse(source).body:
        name = getattr(top, "name", "module")
        for node in ast.walk(top):
            if isinstance(node, ast.FunctionDef) and "\nzh:" in f"\n{ast.get_docstring(node) or ''}":
                doc = ast.get_docstring(node)
                title = doc.split("\n\n")[0]
                zh = " ".join(line[3:].strip() for line in doc.splitlines() if line.startswith("zh:"))
                found += compare(f"{where} {node.name} docstring", title, zh)
        says = sorted((node for node in ast.walk(top) if _is_say(node)), key=lambda n: (n.lineno, n.col_offset))
        for number, call in enumerate(says, 1):
            en, zh = (_text_of(argument, source) for argument in call.args)
            if en is not None and zh is not None:
                found += compare(f"{where} {name} say {number}", en, zh)
    return found


KATAS = sorted(path for path in KATAS_DIR.iterdir() if (path / "kata.toml").exists())


@functools.cache
def all_differences() -> list[Difference]:
    found = []
    for kata in KATAS:
        found += lesson_differences(kata)
        for name in ("kata.toml", "misconceptions.toml", "questions.toml"):
            if (kata / name).exists():
                found += toml_differences(kata / name)
        found += docstring_differences(kata)
        found += checks_differences(kata)
    return tuple(sorted(found))


# -- the allow-list ---------------------------------------------------------------------------------------

ENTRY_KEYS = {"where", "kind", "en", "zh", "reason"}


def _listed(value) -> list[str]:
    return [value] if isinstance(value, str) else list(value or [])


def entry_problems(entry: dict) -> list[str]:
    """What is wrong with one allow-list entry's form."""
    problems = [f"unknown key {name!r}" for name in sorted(set(entry) - ENTRY_KEYS)]
    for name in ("where", "kind", "reason"):
        if not isinstance(entry.get(name), str) or not entry[name].strip():
            problems.append(f"{name} missing")
    if entry.get("kind") not in KINDS:
        problems.append(f"kind {entry.get('kind')!r} is not one of {', '.join(KINDS)}")
    for name in ("en", "zh"):
        value = entry.get(name, [])
        if not (isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))):
            problems.append(f"{name} is neither a string nor a list of strings")
    if not _listed(entry.get("en")) and not _listed(entry.get("zh")):
        problems.append("neither en nor zh")
    return problems


def _subtract(have: tuple[str, ...], allowed: list[str], kind: str) -> tuple[str, ...] | None:
    """`have` without the `allowed` items; None unless every allowed item is among them."""
    left = list(have)
    for item in allowed:
        match = next((index for index, value in enumerate(left) if key(kind, value) == key(kind, item)), None)
        if match is None:
            return None
        left.pop(match)
    return tuple(left)


def apply_allowed(found: list[Difference], entries: list[dict]) -> tuple[list[Difference], list[dict]]:
    """(the differences the entries do not allow, the entries that allow nothing)."""
    left = list(found)
    unused = []
    for entry in entries:
        for index, difference in enumerate(left):
            if (difference.where, difference.kind) != (entry["where"], entry["kind"]):
                continue
            en = _subtract(difference.en, _listed(entry.get("en")), difference.kind)
            zh = _subtract(difference.zh, _listed(entry.get("zh")), difference.kind)
            if en is not None and zh is not None:
                left[index] = Difference(difference.where, difference.kind, en, zh)
                break
        else:
            unused.append(entry)
    return [difference for difference in left if difference.en or difference.zh], unused


def allowed_entries() -> list[dict]:
    return tomllib.loads(ALLOWED.read_text(encoding="utf-8")).get("allowed", [])


# -- the tests -------------------------------------------------------------------------------------------


def test_every_english_and_chinese_text_shares_its_code_numbers_and_formulas():
    """Each difference of code spans, numbers or formulas is listed, with its reason, in parity_allowed.toml."""
    left, _ = apply_allowed(all_differences(), allowed_entries())
    assert not left, f"{len(left)} differences (fix the text, or allow one in {ALLOWED.name} with its reason):\n" + (
        "\n".join(difference.line() for difference in left)
    )


def test_every_allowed_difference_still_occurs():
    """An allow-list entry that matches no difference is stale: the list cannot rot."""
    _, unused = apply_allowed(all_differences(), allowed_entries())
    assert not unused, "entries that allow nothing:\n" + "\n".join(
        f"{entry['where']}: {entry['kind']}: en {_listed(entry.get('en'))} zh {_listed(entry.get('zh'))}"
        for entry in unused
    )


def test_every_allowed_difference_is_specific_and_has_a_reason():
    problems = [
        f"entry {number} ({entry.get('where')}): {problem}"
        for number, entry in enumerate(allowed_entries(), 1)
        for problem in entry_problems(entry)
    ]
    assert not problems, "\n".join(problems)


def test_every_kind_of_pair_is_compared():
    """Lessons, the three TOML files, docstrings and checks all give pairs (the walk finds them)."""
    kata = KATAS_DIR / "ppo_gae"
    assert len(_sections((kata / "lesson.en.md").read_text(encoding="utf-8"))) > 5
    pairs = list(_toml_pairs(tomllib.loads((kata / "kata.toml").read_text(encoding="utf-8")), ""))
    places = {place for place, _, _ in pairs}
    assert {"title", "todo 1 title", "todo 1 guidance.en[0]"} & places or "todo 1 hints[2]" in places
    assert "todo 1 guidance[0]" in places and "todo 1 hints[2]" in places
    misconceptions = tomllib.loads((kata / "misconceptions.toml").read_text(encoding="utf-8"))
    assert "misconception gae_forward_scan explanation" in {place for place, _, _ in _toml_pairs(misconceptions, "")}
    english = _docstrings((ROOT / "reference" / "ppo_gae.py").read_text(encoding="utf-8"))
    assert {"module", "gae_advantages"} <= set(english)


def test_chinese_texts_write_ascii_digits_and_letters():
    """No full-width digits or Latin letters (０-９, Ａ-Ｚ) in any Chinese text."""
    found = []
    for path in sorted([*KATAS_DIR.glob("*/*.zh.md"), *KATAS_DIR.glob("*/*.toml")]):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if full_width(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {''.join(full_width(line))}")
    assert not found, "\n".join(found)


# -- the rules, on small texts ----------------------------------------------------------------------------


def _kinds(text: str) -> dict[str, list[str]]:
    return {kind: values for kind, values in items(text).items() if values and kind in KINDS}


@pytest.mark.parametrize(
    "text,expected",
    [
        (
            "TD 误差 delta_t = r_t + gamma * V_{t+1} - V_t。",
            {"number": ["1"], "formula": ["delta_t = r_t + gamma * V_{t+1} - V_t"]},
        ),
        ("the TD error delta_t = r_t - V_t is small", {"formula": ["delta_t = r_t - V_t"]}),
        ("KL(π_θ ‖ π_ref)，其中", {"formula": ["KL(π_θ ‖ π_ref)"]}),
        ("`returns = advantages + values`；", {"code": ["returns = advantages + values"]}),
        ("is -0.75 and (-1, 1), count - 1", {"number": ["-0.75", "-1", "1", "1"], "formula": ["count - 1"]}),
        ("1,000 steps, the 1st, 135M, 95%, 1e-8, k3, float64", {"number": ["1000", "1", "135M", "95%", "1e-8"]}),
        ("P(a 优于 b) = sigmoid(2) = 0.881。", {"number": ["2", "0.881"], "formula": ["sigmoid(2) = 0.881"]}),
        ("1 - dones（转成浮点数） (B, T)", {"number": ["1"], "formula": ["1 - dones"]}),
        ("log-probs and Bradley-Terry, trl/experimental/ppo.py", {}),
        ("ratio 为 exp(logp - logp_old)：", {"formula": ["exp(logp - logp_old)"]}),
    ],
)
def test_items_of_a_text(text, expected):
    assert _kinds(text) == expected


def test_cjk_punctuation_next_to_a_formula_is_not_part_of_it():
    assert items("（即 A_t = delta_t + gamma * lam * A_{t+1}），")["formula"] == [
        "A_t = delta_t + gamma * lam * A_{t+1}"
    ]
    assert items("A_T = 0，V_T = 0。")["formula"] == ["A_T = 0", "V_T = 0"]


def test_an_equal_pair_passes():
    en = "The TD error r_t + gamma * V_{t+1} - V_t uses gamma = 1 (TRL), `lam` = 0.95."
    zh = "TD 误差 r_t + gamma * V_{t+1} - V_t 只用 gamma = 1（TRL），`lam` = 0.95。"
    assert compare("x", en, zh) == []


def test_full_width_parentheses_and_whitespace_in_a_formula_do_not_count():
    assert compare("x", "weights (1 - lam) * lam^(k-1) here", "权重 （1 - lam）*lam^(k-1)。") == []


def test_a_translated_name_before_a_formula_does_not_count():
    assert compare("x", "value loss = 0.5 * mean(x)", "价值损失 = 0.5 * mean(x)") == []
    assert compare("x", "lam = 0 is the TD error", "lam = 0 就是 TD 误差") == []
    assert compare("x", "gamma * V_t here", "lam * V_t") != []


def test_a_difference_is_caught_and_said_in_one_line():
    found = compare("katas/k/kata.toml title", "clip to 1 - c, `x[0]`", "裁剪到 1 + c，`y[0]`")
    assert [d.kind for d in found] == ["code", "formula"]
    assert found[0].line() == "katas/k/kata.toml title: code: only en: x[0]   only zh: y[0]"
    assert found[1].line() == "katas/k/kata.toml title: formula: only en: 1 - c   only zh: 1 + c"
    assert compare("x", "lam = 0.95", "lam = 0.9")[0].kind == "number"


def test_f_string_fields_are_code():
    source = 'say(f"{what}: got {got.tolist()}", f"{what}：实际为 `{got}`")'
    call = ast.parse(source).body[0].value
    en, zh = (_text_of(argument, source) for argument in call.args)
    assert en == "\x02what\x03: got \x02got.tolist()\x03"
    assert items(en)["code"] == ["{what}", "{got.tolist()}"] and items(zh)["code"] == ["{got}", "{what}"]
    assert compare("x", en, zh)[0].line() == "x: code: only en: {got.tolist()}   only zh: {got}"


def test_the_allow_list_allows_exactly_its_items_and_stale_entries_show():
    found = [Difference("w", "number", ("2", "3"), ())]
    entry = {"where": "w", "kind": "number", "en": "2", "reason": "two"}
    assert apply_allowed(found, [entry]) == ([Difference("w", "number", ("3",), ())], [])
    stale = {"where": "w", "kind": "number", "zh": "2", "reason": "two"}
    assert apply_allowed(found, [stale]) == (found, [stale])
    assert entry_problems({"where": "w", "kind": "number", "en": "2"}) == ["reason missing"]


def test_multisets_count_each_item():
    assert [d.en for d in compare("x", "0.5 and 0.5", "0.5")] == [("0.5",)]
    assert Counter(items("A_t 与 A_t")["formula"]) == Counter()
