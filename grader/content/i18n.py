"""Language choice (--lang, then KATA_LANG, then the locale; English otherwise), the interface
phrases the report and hints need in both languages, and `say`, how checks write theirs.

A phrase with a count `n` may have a singular form, KEY_one, used when n is 1 (English only:
Chinese nouns have no plural).

Checks and the grader's comparisons write each message in both languages side by side,

    raise AssertionError(say(f"the clipped side must be flat, but d loss = {g:.4g}",
                             f"裁剪一侧应当是平的，但 d loss = {g:.4g}"))

and a grading run keeps the one in its language (`set_message_language`, from the judge's
--kata-lang). A run's messages are all in one language, its misconception fingerprints too
(grader.judging.fingerprints keeps one file per language), so a learner's failure is compared
with the variants' in the language it was written in. A run whose result is stored and shown
later in either language (`kata grade`, --kata-every-language) writes each failed check's message
in the other languages too (grader.judging.session): `in_each` where the message is built from data,
else by running the check once more in that language.
"""

import os
from collections.abc import Callable, Iterable
from contextlib import contextmanager

from grader.content.interface import PHRASES as COMMANDS

PHRASES = {
    "en": {
        "whole": "Whole function",
        "contract": "Input contract",
        "todos": "{n} TODOs",
        "todos_one": "1 TODO",
        "cases": "{n} cases:",
        "more_cases": "{n} more cases:",
        "more_cases_one": "1 more case:",
        "not_loaded": "Your file could not be loaded",
        "not_implemented": "not implemented yet: TODO {todo} still raises NotImplementedError",
        "waiting_for": "not graded yet: these checks run through TODO {todo}, which is not implemented yet",
        "printed": "your code printed:",
        "likely": "Likely misconception",
        "seen_in": "(fits {n} failed checks)",
        "seen_in_one": "(fits 1 failed check)",
        "next_fix": "Next: TODO {todo} first.  Hint: kata hint {slug} --todo {todo}",
        "next_done": "All checks pass. Compare with the reference: kata solution {slug}",
        "next_done_other": "All checks pass. This file is not your kata's own, so its check opens no"
        " solution; to compare with the reference: kata solution {slug} --force",
        "next_load": "Fix the file so it loads, then run: {command}",
        "hint_of": "hint {i} of {n}",
        "hint_code": "hint {i} of {n}, which shows the code",
        "hint_for": "Your last check named this mistake: {title}. Its hint first:",
        "hint_last": "That was the last hint for this TODO. The lesson: kata show {slug}",
        "hint_more": "Run the same command again for the next hint.",
        "checks": "checks",
        "more": "(the others above in short; {command} --verbose shows every message)",
        "against": "against TRL {version}: {n} of {total} checks took their expected values from TRL's code,"
        " the rest from the reference (input contracts, functions TRL lacks) or from the check itself",
        "from_trl": "expected values from TRL",
        "sandboxed": "sandbox: bwrap (each check in namespaces and fresh folders of its own)",
        "seccomp_on": "seccomp filter: on (no `ptrace`, no `process_vm_readv`/`process_vm_writev`, no key rings)",
        "seccomp_off": "seccomp filter: absent (this machine's kernel or architecture has none)",
        "not_sandboxed": "sandbox: none (no working bwrap here); your code ran in its own process",
        "located": "The difference starts in your TODO {todo}: with the reference's TODO {todo} in its place,"
        " every check passes.",
        "located_many": "The difference lies in your TODOs {todos}: with the reference's code in all of them,"
        " every check passes.",
        "located_outside": "The difference lies outside the TODOs: with the reference's code in every TODO,"
        " checks still fail. Compare the code around them with the exercise as given.",
        "located_markers": "Your file's TODO markers were removed or changed, so the failing checks' TODOs"
        " locate the mistake instead.",
        "located_time": "Locating the mistake took too long, so the failing checks' TODOs locate it instead.",
        "located_pack": "The failing checks' TODOs locate the mistake (the pack has no reference to compare TODO by TODO).",
        "next_done_pack": "All checks pass. Hand your file in: your instructor's grading also runs checks\n"
        "  that only it can run.",
        "next_done_graded": "All checks pass.",
        "unknown_mistake": "Not a known mistake: none of this kata's known mistakes fails these checks the same way.",
        "next_outside": "Next: put the code outside the TODOs back as the exercise gives it"
        " (kata reset {slug} writes a blank copy and keeps yours as a backup)",
        "and": "and",
        "colon": ": ",
        "comma": ", ",
        "more_lines": "... ({n} more lines)",
        "likely_in": "Likely misconception in TODO {todo}",
        "seen_alone": "(fits {n} failed checks with the reference's code in your other TODOs)",
        "seen_alone_one": "(fits 1 failed check with the reference's code in your other TODOs)",
        "unknown_in": "TODO {todo}: not a known mistake: none of its known mistakes fails these checks the same way.",
        "located_passing": "Your TODO {todo} passes its own checks, but with only your other located TODOs replaced"
        " some checks still fail: it differs from the reference too.",
        "located_names": "Your code does not assign the names the guidance hands on from a TODO to the code after it"
        " ({names}): no TODO can be swapped for the reference's alone, so the failing checks' TODOs locate the"
        " mistake instead.",
        "name_in": "`{name}` in TODO {todo}",
    },
    "zh": {
        "whole": "整个函数",
        "contract": "输入约定",
        "todos": "{n} 个 TODO",
        "cases": "{n} 个用例：",
        "more_cases": "另有 {n} 个用例：",
        "not_loaded": "无法加载你的文件",
        "not_implemented": "尚未实现：TODO {todo} 仍在抛出 NotImplementedError",
        "waiting_for": "暂未评分：这些检查会经过 TODO {todo}，而它尚未实现",
        "printed": "你的代码输出：",
        "likely": "可能的误区",
        "seen_in": "（与 {n} 项失败检查相符）",
        "next_fix": "下一步：先完成 TODO {todo}。提示：kata hint {slug} --todo {todo}",
        "next_done": "全部检查通过。对照参考答案：kata solution {slug}",
        "next_done_other": "全部检查通过。这不是你工作区中本 kata 的文件，它的检查不会解锁参考答案；"
        "要对照参考答案：kata solution {slug} --force",
        "next_load": "先修复文件使其能被加载，然后运行：{command}",
        "hint_of": "第 {i} 条提示，共 {n} 条",
        "hint_code": "第 {i} 条提示，共 {n} 条，其中给出代码",
        "hint_for": "上次检查指出了这个错误：{title}。先看它的提示：",
        "hint_last": "这是本 TODO 的最后一条提示。讲义：kata show {slug}",
        "hint_more": "再次运行同一命令可查看下一条提示。",
        "checks": "项检查",
        "more": "（其余检查从简显示；{command} --verbose 显示全部信息）",
        "against": "对照 TRL {version}：{total} 项检查中有 {n} 项的期望值来自 TRL 的代码，"
        "其余来自参考答案（输入约定、TRL 没有的函数）或检查本身",
        "from_trl": "期望值来自 TRL",
        "sandboxed": "沙箱：bwrap（每项检查都有独立的命名空间和全新的文件夹，无网络）",
        "seccomp_on": "`seccomp` 过滤器：开启（禁止 `ptrace`、`process_vm_readv`/`process_vm_writev` 和密钥环）",
        "seccomp_off": "`seccomp` 过滤器：缺失（这台机器的内核或架构不支持）",
        "not_sandboxed": "沙箱：无（此处 bwrap 不可用）；你的代码在独立进程中运行",
        "located": "差异始于你的 TODO {todo}：把它换成参考答案的 TODO {todo}，全部检查都能通过。",
        "located_many": "差异在你的 TODO {todos} 中：把它们都换成参考答案的代码，全部检查都能通过。",
        "located_outside": "差异在 TODO 之外：即使每个 TODO 都换成参考答案的代码，仍有检查失败。"
        "请对照练习原本给出的代码。",
        "located_markers": "你的文件中 TODO 标记被删除或改动，因此改按失败检查所属的 TODO 定位。",
        "located_time": "定位错误耗时过长，因此改按失败检查所属的 TODO 定位。",
        "located_pack": "按失败检查所属的 TODO 定位错误（学生包里没有参考答案，无法逐个 TODO 对照）。",
        "next_done_pack": "全部检查通过。请提交你的文件：教师评分时还会运行一些只能在那里运行的检查。",
        "next_done_graded": "全部检查通过。",
        "unknown_mistake": "不是已知的错误：本 kata 的已知误区都不会让这些检查以同样方式失败。",
        "next_outside": "下一步：把 TODO 之外的代码恢复成练习给出的样子"
        "（kata reset {slug} 会写出空白副本，并把你的文件保留为备份）",
        "and": "和",
        "colon": "：",
        "comma": "、",
        "more_lines": "……（另有 {n} 行）",
        "likely_in": "TODO {todo} 可能的误区",
        "seen_alone": "（其余 TODO 换成参考答案的代码后，与 {n} 项失败检查相符）",
        "unknown_in": "TODO {todo}：不是已知的错误：它的已知误区都不会让这些检查以同样方式失败。",
        "located_passing": "你的 TODO {todo} 通过了它自己的检查，但只替换你其余被定位的 TODO 时仍有检查失败：它也与参考答案不同。",
        "located_names": "你的代码没有给出练习说明要求从一个 TODO 传给后面代码的变量名（{names}）："
        "无法单独把某个 TODO 换成参考答案的代码，因此改按失败检查所属的 TODO 定位。",
        "name_in": "TODO {todo} 中的 `{name}`",
    },
}


_TABLES = {lang: PHRASES[lang] | COMMANDS[lang] for lang in PHRASES}  # the report's and the commands' phrases

MESSAGE_VARIABLE = "KATA_MESSAGE_LANG"  # how the language reaches the processes grading starts (contestants)
_MESSAGE_LANGUAGE = [os.environ.get(MESSAGE_VARIABLE) if os.environ.get(MESSAGE_VARIABLE) in PHRASES else "en"]


def set_message_language(lang: str) -> None:
    """Write this process's check messages (`say`) in `lang` from now on, and those of the processes
    it starts (the warm process and its contestants: their refusals, grader.run.wire)."""
    _MESSAGE_LANGUAGE[0] = lang if lang in PHRASES else "en"
    os.environ[MESSAGE_VARIABLE] = _MESSAGE_LANGUAGE[0]


@contextmanager
def speaking(lang: str):
    """`with speaking("zh"):` writes messages (`say`) in `lang` until the block ends, then in the
    language before it (a command, or a grading run, leaves the process as it found it)."""
    previous = message_language()
    set_message_language(lang)
    try:
        yield
    finally:
        set_message_language(previous)


def message_language() -> str:
    return _MESSAGE_LANGUAGE[0]


def in_each(languages: Iterable[str], word: Callable[[], str]) -> dict[str, str]:
    """{lang: word()} for each of `languages`, with messages (`say`, `phrase` of message_language())
    written in that language while `word` runs: a message built from data (how a check ended, why
    a file did not load) in every language at once, without running anything again."""
    words = {}
    for lang in languages:
        with speaking(lang):
            words[lang] = word()
    return words


def say(en: str, zh: str) -> str:
    """A check's message in this process's language: `zh` under set_message_language("zh"), else `en`."""
    return zh if _MESSAGE_LANGUAGE[0] == "zh" else en


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


def command_language(ctx) -> str:
    """The language of the click command being parsed (`ctx`): its --lang (eager, so known before
    its arguments), else `kata --lang`, else KATA_LANG or the locale."""
    chosen = [ctx.params.get("lang"), ctx.find_root().params.get("lang")]
    return pick_language(next((value for value in chosen if isinstance(value, str)), None))  # not click's UNSET


def joined(lang: str, items: Iterable) -> str:
    """`items` as one list in `lang`: "a, b, c" in English, "a、b、c" in Chinese."""
    return phrase(lang, "comma").join(map(str, items))


def phrase(lang: str, key: str, **values) -> str:
    """The phrase `key` (the report's, or a command's: grader.content.interface) in `lang` (English
    when `lang` is unknown), filled with `values`."""
    table = _TABLES.get(lang, _TABLES["en"])
    if values.get("n") == 1 and f"{key}_one" in table:
        key = f"{key}_one"
    return table[key].format(**values)
