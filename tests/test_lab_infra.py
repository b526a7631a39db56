"""The labs' shared parts: run folders, config overrides, data files, batches, sparklines, evidence."""

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_labs import data, plots
from gpu_labs.config import ConfigError, load_json_config, override, parse_assignments
from gpu_labs.evidence import Stages, write_json_atomic
from gpu_labs.runs import LabRefusal, check_label, claim_run_dir

ROOT = Path(__file__).resolve().parents[1]


@dataclasses.dataclass(frozen=True)
class Example:
    learning_rate: float = 1e-5
    group_size: int = 4
    model: str | None = None
    targets: tuple[str, ...] = ("q_proj", "v_proj")
    greedy: bool = False


def test_a_label_is_claimed_once_and_never_overwritten(tmp_path):
    first = claim_run_dir("grpo_mechanism", "try1", root=tmp_path)
    (first / "evidence.json").write_text("{}")
    with pytest.raises(LabRefusal, match="already exists"):
        claim_run_dir("grpo_mechanism", "try1", root=tmp_path)
    assert (first / "evidence.json").read_text() == "{}"


def test_an_out_folder_is_accepted_only_while_empty(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    assert claim_run_dir("grpo_rlvr", "x", out=out) == out
    (out / "evidence.json").write_text("{}")
    with pytest.raises(LabRefusal):
        claim_run_dir("grpo_rlvr", "x", out=out)


@pytest.mark.parametrize("label", ["", "../up", "a/b", "-dash", "x" * 65, "sp ace"])
def test_labels_that_could_escape_or_confuse_are_refused(label):
    with pytest.raises(LabRefusal):
        check_label(label)


def test_overrides_are_parsed_by_the_field_type():
    config = override(
        Example(),
        {"learning_rate": "2e-4", "group-size": "8", "model": "none", "targets": "q_proj,k_proj", "greedy": "yes"},
    )
    assert config == Example(2e-4, 8, None, ("q_proj", "k_proj"), True)
    assert Example().learning_rate == 1e-5  # the defaults stay frozen


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"lr": "1"}, "unknown config field 'lr'"),
        ({"group_size": "four"}, "group_size takes int"),
        ({"group_size": 2.5}, "takes int"),
        ({"greedy": "maybe"}, "greedy takes bool"),
    ],
)
def test_bad_overrides_get_one_line_errors(values, message):
    with pytest.raises(ConfigError, match=message) as caught:
        override(Example(), values)
    assert "\n" not in str(caught.value)


def test_a_json_config_file_overrides_and_bad_files_are_named(tmp_path):
    good = tmp_path / "c.json"
    good.write_text(json.dumps({"group_size": 16, "learning_rate": 3e-6}))
    assert load_json_config(Example(), good) == Example(learning_rate=3e-6, group_size=16)
    bad = tmp_path / "bad.json"
    bad.write_text("{oops")
    with pytest.raises(ConfigError, match="bad.json is not valid JSON"):
        load_json_config(Example(), bad)
    assert parse_assignments(["a=1", "b=x=y"]) == {"a": "1", "b": "x=y"}
    with pytest.raises(ConfigError):
        parse_assignments(["novalue"])


def test_the_shipped_data_is_what_the_generator_makes():
    result = subprocess.run(
        [sys.executable, "scripts/make_lab_data.py", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_shipped_training_and_heldout_problems_are_disjoint_and_gold_values_are_parsed():
    train, heldout = data.load_problems(data.WORD_PROBLEMS_TRAIN), data.load_problems(data.WORD_PROBLEMS_HELDOUT)
    assert (len(train), len(heldout)) == (256, 64)
    assert data.overlap(train, heldout) == set()
    assert data.ids_sha256(train) != data.ids_sha256(heldout)
    for problem in train[:20]:
        assert problem.answer == data.gold_value(problem.solution)


def test_a_gsm8k_file_loads_and_bad_lines_are_named(tmp_path):
    path = tmp_path / "gsm8k.jsonl"
    path.write_text(
        json.dumps({"question": "Q one?", "answer": "steps\n#### 1,234"})
        + "\n\n"
        + json.dumps({"question": "Q two", "answer": "#### -7"})
        + "\n"
    )
    problems = data.load_problems(path)
    assert [p.answer for p in problems] == [1234.0, -7.0]
    assert problems[0].id == data.problem_id("Q   one?")  # whitespace-normalised
    path.write_text(json.dumps({"question": "Q", "answer": "no gold"}) + "\n")
    with pytest.raises(data.DataError, match=r"gsm8k.jsonl:1: the answer has no '####"):
        data.load_problems(path)


def test_sparklines_scale_to_the_series_and_mark_missing_points():
    assert plots.sparkline([0, 1, 2, 3, 4, 5, 6, 7]) == "▁▂▃▄▅▆▇█"
    assert plots.sparkline([1.0, None, 3.0]) == "▁ █"
    assert plots.sparkline([]) == "" and plots.sparkline([None]) == ""


def test_a_constant_series_is_flat_at_mid_height_not_at_a_maximum_or_a_zero():
    assert plots.sparkline([3.0, None, 3.0]) == "▄ ▄"  # the half block: 4/8 of the height
    assert plots.sparkline([0.0, 0.0]) == "▄▄" and plots.sparkline([-2.5]) == "▄"
    assert plots.sparkline([0.1 + 0.2, 0.3, 0.3]) == "▄▄▄"  # equal up to rounding is constant


def test_a_sparkline_marks_a_nan_or_inf_without_scaling_it():
    assert plots.sparkline([0.0, float("nan"), 1.0, float("inf")]) == "▁!█!"
    assert plots.sparkline([float("nan")]) == "!"


def test_a_long_series_is_shrunk_to_the_width_by_bucket_means():
    assert plots.sparkline([0, 0, 1, 1, 2, 2, 3, 3], width=4) == plots.sparkline([0, 1, 2, 3])
    assert plots.sparkline([None, None, 5, 7], width=2) == " ▄"
    assert len(plots.sparkline(list(range(200)), width=24)) == 24
    assert plots.sparkline([1, 2], width=8) == "▁█"


def test_curves_are_drawn_to_a_png(tmp_path):
    png = plots.save_curves(tmp_path / "c.png", {"reward": [0.1, 0.4, None, 0.9], "empty": [None]}, "t")
    assert png is not None and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plots.save_curves(tmp_path / "none.png", {"empty": [None]}, "t") is None


def test_evidence_is_written_atomically_and_stages_accumulate(tmp_path):
    stages = Stages()
    with stages("load"):
        pass
    with stages("load"), stages("inner"):
        assert stages.current == "inner"
    assert set(stages.seconds) == {"load", "inner"}
    write_json_atomic(tmp_path / "e.json", {"path": tmp_path, "stages": stages.seconds})
    assert json.loads((tmp_path / "e.json").read_text())["path"] == str(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["e.json"]


def test_a_response_batch_masks_exactly_the_response_tokens():
    from gpu_labs.models import byte_tokenizer
    from gpu_labs.sequences import build_response_batch, chat_prompt

    tokenizer = byte_tokenizer()
    prompt = chat_prompt(tokenizer, "What is 2 + 2?")
    batch = build_response_batch(
        tokenizer, [prompt, prompt], ["4", "The answer is 4."], max_length=len(prompt.encode()) + 8
    )
    assert batch["response_mask"].sum(dim=1).tolist() == [1, 8]  # byte tokens; the second is cut at 8
    assert batch["truncated"].tolist() == [False, True]
    assert (batch["response_mask"] <= batch["attention_mask"]).all()
    with pytest.raises(ValueError, match="no room"):
        build_response_batch(tokenizer, [prompt], ["4"], max_length=3)


def test_the_tiny_model_takes_lora_on_q_and_v_and_only_the_adapter_trains():
    from gpu_labs.models import add_lora, load_model

    loaded = load_model("tiny", seed=3)
    model = add_lora(loaded.model, rank=8, alpha=16)
    trainable = [name for name, parameter in model.named_parameters() if parameter.requires_grad]
    assert trainable and all("lora_" in name and ("q_proj" in name or "v_proj" in name) for name in trainable)
    assert loaded.identity["spec"] == "tiny" and loaded.identity["parameters"] > 0


def test_one_grpo_step_is_the_katas_loss_with_its_clip_count_and_k3():
    import torch

    from gpu_labs.grpo_step import Objective, objective
    from reference.grpo_loss import compute_grpo_loss

    torch.manual_seed(0)
    new, old, ref = (torch.randn(4, 6) * 0.3 for _ in range(3))
    mask = torch.rand(4, 6) > 0.3
    mask[:, 0] = True
    rewards, groups = torch.tensor([1.0, 0.0, 0.5, 0.2]), torch.tensor([0, 0, 1, 1])
    step = objective(new, old, rewards, groups, mask, Objective(0.2, beta=0.04), ref)
    loss, _ = compute_grpo_loss(new, old, rewards, groups, mask, 0.2, 1e-6, ref, 0.04)
    assert torch.equal(step.loss, loss)
    ratio = torch.exp(new - old)
    assert (step.tokens, step.clipped) == (int(mask.sum()), int(((ratio - 1).abs() > 0.2)[mask].sum()))
    log_ratio = ref - new
    assert step.kl == pytest.approx(float((torch.exp(log_ratio) - log_ratio - 1)[mask].mean()), rel=1e-6)
    per_response = objective(new, old, rewards, groups, mask, Objective(0.2, ratio_level="sequence"))
    assert per_response.tokens == 4 and per_response.kl is None  # one ratio per response, no reference


def test_a_padded_batch_marks_only_the_responses_and_gives_back_the_end_token_to_finished_ones():
    from gpu_labs.sequences import pad_batch, with_end

    batch = pad_batch([[1, 2], [3]], [with_end([5], False, 9), with_end([7, 7], True, 9)], pad_id=0)
    assert batch["input_ids"].tolist() == [[1, 2, 5, 9], [3, 7, 7, 0]]
    assert batch["response_mask"].tolist() == [[0, 0, 1, 1], [0, 1, 1, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1, 1], [1, 1, 1, 0]]
