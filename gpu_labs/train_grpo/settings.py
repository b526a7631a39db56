"""train_grpo's settings: the config (lesson 001's GRPOConfig names), its smoke size and checks, the workload.

See gpu_labs.train_grpo for what the fields do in a run.
"""

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

from gpu_labs.config import ConfigError
from gpu_labs.data import ARITHMETIC, ARITHMETIC_HELDOUT, WORD_PROBLEMS_HELDOUT, WORD_PROBLEMS_TRAIN
from gpu_labs.distributed import world_size_from_env
from gpu_labs.phrases import listing, say

SHIPPED_DATA = {
    "arithmetic": ARITHMETIC,
    "arithmetic_heldout": ARITHMETIC_HELDOUT,  # chosen for cpu_learn.json by scripts/select_heldout.py
    "word_problems_train": WORD_PROBLEMS_TRAIN,
    "word_problems_heldout": WORD_PROBLEMS_HELDOUT,
}
FINETUNES = ("lora", "full")
DTYPES = ("float32", "bfloat16", "float16")
INFORMATIVE_STD = 1e-6  # a group is informative when the std of its rewards exceeds this (lesson 001, §6)
METRICS_FILE = "metrics.jsonl"
CHECKPOINTS_DIR = "checkpoints"
CONFIG_FILE = "train_config.json"


@dataclass(frozen=True)
class Config:
    """The default (real_gpu) training run; `smoke()` shrinks it. Names follow lesson 001's GRPOConfig."""

    group_size: int = 8  # G answers per prompt (lesson: 8; smoke 4)
    prompts_per_iter: int = 16  # P prompts per iteration, over all ranks
    iterations: int = 200
    curriculum_iters: int = 100  # iterations 1..curriculum_iters use the arithmetic prompts (lesson: 100)
    rollout_len: int = 256  # max new tokens per answer (smoke: 32)
    temperature: float = 1.0
    top_p: float = 1.0
    learning_rate: float = 2e-4  # AdamW on the LoRA parameters (lesson 000's LoRA rate)
    num_updates_per_iteration: int = 2  # mu: optimizer steps on each batch of rollouts
    micro_batch_groups: int = 4  # groups per forward/backward (gradient accumulation); memory only
    clip: float = 0.2  # epsilon of the ratio clip
    kl_coef: float = 0.04  # beta of the k3 KL penalty
    advantage_eps: float = 1e-4  # lesson 001's eps, used as the reference's floor on the population std
    grad_clip: float = 1.0
    finetune: str = "lora"  # "lora" (reference = adapter disabled) or "full" (reference = frozen copy)
    lora_rank: int = 8
    lora_alpha: int = 16
    lora_targets: tuple[str, ...] = ("q_proj", "v_proj")
    dtype: str = "float32"
    curriculum_data: str = "arithmetic"  # a shipped file's name or a GSM8K-style JSONL path
    train_data: str = "word_problems_train"
    heldout_data: str = "word_problems_heldout"
    heldout_size: int = 64  # the first N held-out problems; 0 turns evaluation off
    eval_every: int = 50
    eval_batch_size: int = 32
    log_every: int = 5
    save_every: int = 100
    max_kl: float = 1.0  # KL above this is a runaway policy: reject_until_fixed
    system_prompt: str = "Solve the problem. Give the final number inside <answer></answer>."
    seed: int = 0


def smoke(config: Config) -> Config:
    """The same path at the smallest size (lesson 001, §7: group 4, 2 iterations, 32-token rollouts)."""
    return dataclasses.replace(
        config,
        group_size=4,
        prompts_per_iter=2,
        iterations=2,
        curriculum_iters=1,
        rollout_len=32,
        micro_batch_groups=1,
        heldout_size=4,
        eval_every=1,
        log_every=1,
        save_every=1,
        eval_batch_size=4,
    )


def workload(config: Config) -> dict:
    return {
        "iterations": config.iterations,
        "curriculum_iterations": min(config.curriculum_iters, config.iterations),
        "prompts_per_iteration": config.prompts_per_iter,
        "group_size": config.group_size,
        "rollouts_per_iteration": config.prompts_per_iter * config.group_size,
        "rollout_len": config.rollout_len,
        "updates_per_iteration": config.num_updates_per_iteration,
        "data": {"curriculum": config.curriculum_data, "train": config.train_data, "heldout": config.heldout_data},
        "heldout_size": config.heldout_size,
        "heldout_decoding": "greedy",
        "reference_policy": reference_description(config),
        "world_size": world_size_from_env(),
    }


def reference_description(config: Config) -> str:
    if config.finetune == "lora":
        return "the base model with the LoRA adapter disabled"
    return "a frozen copy of the initial model"


def check_config(config: Config, world_size: int = 1) -> None:
    """Values the types allow but the training does not; ConfigError (one line) for the first one."""
    positive = (
        "group_size",
        "prompts_per_iter",
        "iterations",
        "rollout_len",
        "num_updates_per_iteration",
        "micro_batch_groups",
        "eval_every",
        "eval_batch_size",
        "log_every",
        "save_every",
        "lora_rank",
        "lora_alpha",
        "temperature",
        "learning_rate",
        "advantage_eps",
        "grad_clip",
        "max_kl",
    )
    for name in positive:
        value = getattr(config, name)
        if not (math.isfinite(value) and value > 0):
            raise ConfigError(
                say(f"{name} must be a positive number, got {value!r}", f"{name} 须为正数，实际为 `{value!r}`")
            )
    for name in ("curriculum_iters", "heldout_size", "clip", "kl_coef"):
        value = getattr(config, name)
        if not (math.isfinite(value) and value >= 0):
            raise ConfigError(
                say(f"{name} must be zero or more, got {value!r}", f"{name} 须为 0 或更大，实际为 `{value!r}`")
            )
    if config.group_size < 2:
        raise ConfigError(
            say(
                "group_size must be at least 2: a group of one has no advantage to learn from",
                "group_size 至少为 2：只有一个回答的组没有可学习的优势",
            )
        )
    if not 0 < config.top_p <= 1:
        got = repr(config.top_p)
        raise ConfigError(say(f"top_p must be in (0, 1], got {got}", f"top_p 须在 (0, 1] 之内，实际为 `{got}`"))
    if config.finetune not in FINETUNES:
        names, got = listing(FINETUNES), repr(config.finetune)
        raise ConfigError(
            say(f"finetune must be one of {names}, got {got}", f"finetune 须为 {names} 之一，实际为 `{got}`")
        )
    if config.dtype not in DTYPES:
        names, got = listing(DTYPES), repr(config.dtype)
        raise ConfigError(say(f"dtype must be one of {names}, got {got}", f"dtype 须为 {names} 之一，实际为 `{got}`"))
    if config.prompts_per_iter % world_size:
        count = config.prompts_per_iter
        raise ConfigError(
            say(
                f"prompts_per_iter={count} must divide evenly over {world_size} processes",
                f"prompts_per_iter={count} 须能被进程数 {world_size} 整除",
            )
        )


def data_path(name: str) -> Path:
    """A shipped file's name (see SHIPPED_DATA) or a path to a GSM8K-style JSONL file."""
    return SHIPPED_DATA.get(name, Path(name).expanduser())
