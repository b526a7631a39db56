"""Language choice (--lang, then KATA_LANG, then the locale; English otherwise) and the few
interface phrases the report and hints need in both languages.
"""

import os

PHRASES = {
    "en": {
        "whole": "Whole function",
        "not_loaded": "Your file could not be loaded",
        "not_implemented": "not implemented yet: TODO {todo} still raises NotImplementedError",
        "waiting_for": "not graded yet: these checks run through TODO {todo}, which is not implemented yet",
        "printed": "your code printed:",
        "likely": "Likely misconception",
        "seen_in": "fits {n} failed check(s)",
        "next_fix": "Next: TODO {todo} first.  Hint: kata hint {slug} --todo {todo}",
        "next_done": "All checks pass. Compare with the reference: kata solution {slug}",
        "next_load": "Fix the file so it loads, then run: kata check {slug}",
        "hint_of": "hint {i} of {n}",
        "hint_last": "That was the last hint for this TODO. The lesson: kata show {slug}",
        "hint_more": "Run the same command again for the next hint.",
        "checks": "checks",
        "more": "(the others above in one line each; kata check {slug} --verbose shows every message)",
        "against": "against TRL {version}: {n} of {total} checks took their expected values from TRL's code,"
        " the rest from the reference (input contracts, functions TRL lacks) or from the check itself",
        "from_trl": "expected values from TRL",
        "sandboxed": "sandbox: bwrap (own namespaces, no network, a private folder)",
        "not_sandboxed": "sandbox: none (no working bwrap here); your code ran in its own process",
    },
    "zh": {
        "whole": "整个函数",
        "not_loaded": "无法加载你的文件",
        "not_implemented": "尚未实现：TODO {todo} 仍在抛出 NotImplementedError",
        "waiting_for": "暂未评分：这些检查会经过 TODO {todo}，而它尚未实现",
        "printed": "你的代码输出：",
        "likely": "可能的误区",
        "seen_in": "与 {n} 项失败检查相符",
        "next_fix": "下一步：先完成 TODO {todo}。提示：kata hint {slug} --todo {todo}",
        "next_done": "全部检查通过。对照参考答案：kata solution {slug}",
        "next_load": "先修复文件使其能被加载，然后运行：kata check {slug}",
        "hint_of": "第 {i} 条提示，共 {n} 条",
        "hint_last": "这是本 TODO 的最后一条提示。课文：kata show {slug}",
        "hint_more": "再次运行同一命令可查看下一条提示。",
        "checks": "项检查",
        "more": "（其余检查各占一行；kata check {slug} --verbose 显示全部信息）",
        "against": "对照 TRL {version}：{total} 项检查中有 {n} 项的期望值来自 TRL 的代码，"
        "其余来自参考答案（输入约定、TRL 没有的函数）或检查本身",
        "from_trl": "期望值来自 TRL",
        "sandboxed": "沙箱：bwrap（独立命名空间，无网络，私有文件夹）",
        "not_sandboxed": "沙箱：无（此处 bwrap 不可用）；你的代码在独立进程中运行",
    },
}


def pick_language(explicit: str | None = None) -> str:
    """'en' or 'zh': the explicit choice, else KATA_LANG, else the locale variables."""
    for value in (explicit, os.environ.get("KATA_LANG")):
        if value and value.lower()[:2] in PHRASES:  # "zh", "zh_CN", "zh-TW", "en_US" ...
            return value.lower()[:2]
    for variable in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(variable, "")
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


def phrase(lang: str, key: str, **values) -> str:
    return PHRASES.get(lang, PHRASES["en"])[key].format(**values)
