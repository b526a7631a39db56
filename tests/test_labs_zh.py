"""`kata lab` under --lang zh (issue 19): every line it prints is Chinese.

What stays English, by design (gpu_labs/phrases.py): evidence.json and `--json` (field names and
values), the names of results, stages and curves in the summary (the evidence's field names), config
field names, and the message of an exception a run raised. `english_words` finds any other English
word: what is left after code in backticks, identifiers, paths, options and numbers are set aside.
"""

import inspect
import json
import re

import chinese_text
import pytest
import torch
from click.testing import CliRunner
from conftest import flat, one_torch_thread

from gpu_labs import LABS, grpo_mechanism, models
from gpu_labs.grpo_rlvr import delivery, rollouts
from gpu_labs.phrases import DECISIONS_ZH, PHRASES, TITLES_ZH, VALUES_ZH, phrase, speaking
from gpu_labs.summary import build_summary
from gpu_labs.train_grpo import results as train_results
from gpu_labs.train_grpo import trainer
from grader.cli import cli
from grader.report.console import console, errors

NAMES = {
    "lab",
    "list",
    "run",
    "show",
    "install",
    "NAME",
    "LAB",
    "LABEL",
    "tiny",
    "cpu",
    "cuda",
    "MiB",
    "KiB",
}  # commands, values


def english_words(text: str) -> set[str]:
    """The English words in `text` outside code, identifiers, paths, options, numbers and the kept terms."""
    return set(chinese_text.english_words(text, NAMES))


def lab(*args, env=None):
    """`kata ARGS` in this process: (status, stdout, stderr)."""
    console.forget()  # as in a new process: the width of this test's terminal
    errors.forget()
    result = CliRunner().invoke(cli, list(map(str, args)), standalone_mode=False, catch_exceptions=False, env=env)
    return result.return_value, result.stdout, result.stderr


@pytest.fixture(autouse=True)
def scratch_cwd(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("KATA_LANG", "en")
    monkeypatch.delenv("FORCE_COLOR", raising=False)


def test_the_phrase_tables_have_the_same_keys_and_the_chinese_ones_no_english_words():
    assert PHRASES["zh"].keys() == PHRASES["en"].keys()
    values = {"name": "grpo_mechanism", "n": 3, "accuracy": 0.5, "path": "runs/x", "root": "runs"}
    for key, template in PHRASES["zh"].items():
        names = set(re.findall(r"{(\w+)", template))
        filled = phrase("zh", key, **{name: values.get(name, "x_1") for name in names})
        assert not english_words(filled), (key, filled)
        assert not re.search(r'[\u4e00-\u9fff]\s*[:,;?!()]|"', filled), (key, filled)  # full-width punctuation
    assert set(TITLES_ZH) == set(LABS) and set(DECISIONS_ZH) >= {"accept", "reject", "tune", "continue"}
    for zh in [*VALUES_ZH.values(), *DECISIONS_ZH.values(), *(title for title, _ in TITLES_ZH.values())]:
        assert not english_words(zh), zh


def test_the_result_texts_translated_for_the_summary_are_the_labs_own():
    """VALUES_ZH is keyed by the labs' English texts: one changed there would go untranslated."""
    sources = inspect.getsource(grpo_mechanism) + inspect.getsource(delivery) + inspect.getsource(rollouts)
    assert {text for text in VALUES_ZH if text in sources} | {train_results.DECISION_RULE} == set(VALUES_ZH)


@pytest.mark.parametrize("how", ["option", "group option", "KATA_LANG"])
def test_lab_list_is_chinese_under_every_way_of_asking(how):
    args, env = {
        "option": (["lab", "list", "--lang", "zh"], None),
        "group option": (["--lang", "zh", "lab", "list"], None),
        "KATA_LANG": (["lab", "list"], {"KATA_LANG": "zh"}),
    }[how]
    status, out, err = lab(*args, env=env)
    assert status == 0 and err == ""
    assert "实验" in out and "标题" in out and "000 第 5 步" in out and "运行一个实验" in out
    assert TITLES_ZH["train_grpo"][0] in flat(out)
    assert not english_words(out), out


def test_lab_list_json_keeps_the_english_titles_under_zh():
    status, out, _ = lab("lab", "list", "--json", "--lang", "zh")
    assert status == 0
    assert json.loads(out)[0]["title"] == grpo_mechanism.TITLE


def test_an_unknown_lab_is_one_chinese_line_with_a_suggestion(kata_main, tmp_path):
    status, out, err = kata_main("lab", "run", "grpo_mechanis", "--lang", "zh")
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "没有名为 `grpo_mechanis` 的实验" in err and "你是想用 `grpo_mechanism` 吗？" in err
    assert not english_words(err), err
    assert not (tmp_path / "runs").exists()


def test_a_bad_run_mode_is_one_chinese_line(kata_main):
    status, out, err = kata_main("lab", "run", "grpo_mechanism", "--lang", "zh", "--run-mode", "gpu")
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "--run-mode 的值 `gpu` 无效" in err and not english_words(err), err
    status, _, err = kata_main("lab", "run", "grpo_mechanism", "--run-mode", "gpu")
    assert status == 2 and "'gpu' is not one of" in err  # English: click's own message, as before


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("lr=1", "没有名为 `lr` 的配置字段"),
        ("update_steps=four", "update_steps 需要 `int` 类型的值"),
        ("update_steps=0", "update_steps 须大于 0"),
        ("candidate_sets=minimal_pair,triples", "candidate_sets 须为"),
        ("ratio_level=word", "ratio_level 须为 `token`、`sequence` 之一"),
        ("noequals", "应写成“字段=值”"),
    ],
)
def test_a_bad_set_is_one_chinese_line_and_claims_no_folder(kata_main, tmp_path, assignment, message):
    status, out, err = kata_main(
        "--lang", "zh", "lab", "run", "grpo_mechanism", "--run-mode", "cpu_smoke", "--set", assignment
    )
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "--set 的值无效" in err and message in err
    assert not english_words(err), err
    assert not (tmp_path / "runs").exists()


def test_refusals_are_chinese(kata_main, monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    status, _, err = kata_main("lab", "run", "grpo_mechanism", "--run-mode", "real_gpu", "--lang", "zh")
    assert status == 1 and "real_gpu 需要 CUDA" in err and not english_words(err)
    status, _, err = kata_main("lab", "show", "nothing", "--lang", "zh")
    assert status == 1 and "没有运行 `nothing`" in err and not english_words(err)
    monkeypatch.setattr(models, "SMOLLM2_FILE", "missing.gguf")
    status, _, err = kata_main("lab", "run", "grpo_mechanism", "--model", "smollm2", "--lang", "zh")
    assert status == 1 and "缺少" in err and not english_words(err)
    assert not (tmp_path / "runs").exists()


def test_a_dry_run_its_refused_rerun_and_its_reprint_are_chinese(tmp_path):
    status, out, err = lab("--lang", "zh", "lab", "run", "grpo_mechanism", "--label", "try1")
    assert status == 0, err
    assert "决定" in out and "未测量（`not_measured`）" in out and "证据：runs/grpo_mechanism/try1" in flat(out)
    assert "device" not in out and "decision" not in out
    assert not english_words(out), out
    status, out, err = lab("lab", "run", "grpo_mechanism", "--label", "try1", "--lang", "zh")
    assert status == 1 and "已存在" in err and not english_words(err)
    status, again, _ = lab("lab", "show", "grpo_mechanism", "try1", "--lang", "zh")
    assert status == 0 and "未测量（`not_measured`）" in again and not english_words(again)
    status, english, _ = lab("lab", "show", "grpo_mechanism", "try1")
    assert status == 0 and "decision" in english and "决定" not in english


def test_a_run_that_raises_says_so_in_chinese(monkeypatch, tmp_path):
    def broken(config, lab_run):
        with lab_run.stage("load_model"):
            raise RuntimeError("boom")

    monkeypatch.setattr(grpo_mechanism, "run", broken)
    status, out, err = lab("lab", "run", "grpo_mechanism", "--run-mode", "cpu_smoke", "--label", "b", "--lang", "zh")
    assert status == 1
    assert "kata lab：grpo_mechanism 在阶段 `load_model` 失败：RuntimeError: boom" in flat(err)
    assert "修复前拒绝（`reject_until_fixed`）" in out and "（阶段 `load_model`）" in out
    assert english_words(out + err) <= {"RuntimeError", "boom"}  # the exception's own words


def test_a_result_summary_under_zh_translates_its_labels_values_and_yes_no():
    record = {
        "lab": "train_grpo",
        "label": "x",
        "run_mode": "cpu_smoke",
        "title": "GRPO training script",
        "decision": "tune",
        "results": {"checks": {"finite": True, "policy_moved": False}, "decision_rule": train_results.DECISION_RULE},
        "curves": {"train/loss": [1.0, 0.5]},  # curves are named by the evidence
        "peak_memory": {"peak_rss_bytes": 2**20},
    }
    from rich.console import Console

    from grader.report.styles import THEME

    console = Console(width=80, record=True, color_system=None, theme=THEME)
    console.print(build_summary(record, None, "zh"))
    out = console.export_text()
    assert "是" in out and "否" in out and "首值" in out and "峰值常驻内存" in out and "需调整（`tune`）" in out
    assert not english_words(out), out


def test_train_grpo_logs_in_chinese_with_the_columns_aligned():
    config = type("Config", (), {"iterations": 200})()
    record = {"iteration": 5, "phase": "curriculum", "reward_mean": 0.4, "informative_fraction": 0.6}
    record |= {"kl": 0.003, "clip_fraction": 0.02, "loss": -0.01, "heldout_accuracy": 0.125, "seconds": 4.1}
    english = trainer.log_line(record, config)
    with speaking("zh"):
        header, line = trainer.log_header(config), trainer.log_line(record, config)
    assert trainer.log_line(record, config) == english  # outside `speaking`: English again
    assert line.startswith("第   5/200 轮 课程") and "奖励" in header and not english_words(header + line)
    from rich.cells import cell_len

    assert cell_len(header) == cell_len(line) <= 80  # each name ends where its value ends


@pytest.mark.slow  # runs the lab's model (about 10 s)
def test_a_cpu_smoke_run_of_grpo_mechanism_prints_its_summary_in_chinese(tmp_path):
    with one_torch_thread():
        status, out, err = lab(
            "lab", "run", "grpo_mechanism", "--run-mode", "cpu_smoke", "--label", "s", "--lang", "zh"
        )
    assert status == 0, err
    assert "机制成立（`accept_mechanism`）" in out and "仅供诊断" in out and "曲线" in out
    evidence = json.loads((tmp_path / "runs" / "grpo_mechanism" / "s" / "evidence.json").read_text(encoding="utf-8"))
    assert evidence["results"]["highest_separation"]["interpretation"] in VALUES_ZH  # the evidence stays English
    # the lab's own parts (header, facts, timings, curves, footer) have no English word; the
    # results' rows are named by the evidence's fields
    lines = out.splitlines()
    kept = lines[: lines.index("结果")] + lines[lines.index("曲线") :]
    assert not english_words("\n".join(kept)), "\n".join(kept)
