"""GRPO training script (lesson 001, §4-§7): arithmetic curriculum, then word problems, on a real model.

    python -m gpu_labs.train_grpo --config gpu_labs/configs/smoke.json
    python -m gpu_labs.train_grpo --config gpu_labs/configs/smoke.json --learning_rate 1e-5 --group_size 8 --print-config
    python -m gpu_labs.train_grpo --config gpu_labs/configs/grpo.json --run-mode real_gpu --label first-run
    torchrun --standalone --nproc_per_node 2 -m gpu_labs.train_grpo --config gpu_labs/configs/grpo.json --run-mode real_gpu
    accelerate launch --multi_gpu --num_processes 2 -m gpu_labs.train_grpo --config gpu_labs/configs/grpo.json --run-mode real_gpu
    torchrun --standalone --nproc_per_node 2 -m gpu_labs.train_grpo --run-mode cpu_smoke   # 2 CPU processes, gloo
    kata lab run train_grpo --run-mode cpu_smoke

Options: `--config PATH` (a JSON object of config fields), `--FIELD VALUE` for any field of
`Config` (after the file), `--print-config` (print the resolved config as JSON and exit),
`--run-mode dry_run|cpu_smoke|real_gpu` (default real_gpu where CUDA is present, else cpu_smoke),
`--model smollm2|tiny|HUB_ID|PATH`, `--label NAME`, `--out DIR`. The config resolves as
defaults -> smoke sizes (cpu_smoke) -> the file -> the `--FIELD` overrides. Exit status: 0 when
the run finished (whatever its decision), 1 when it was refused or failed, 2 for a bad command
line or config (one line on stderr).

One iteration (lesson 001, §5), with P = prompts_per_iter prompts and G = group_size:

    prompts     P from the arithmetic curriculum while iteration <= curriculum_iters, then word problems
    rollouts    G sampled answers per prompt, group-contiguous: row r*G + j belongs to prompt r
    rewards     r = reward_gsm8k(answer, gold)                      (P*G,), in [0, 1.2]
    log-probs   old = the sampling policy, ref = the frozen reference, both without gradient
    updates     num_updates_per_iteration (mu) AdamW steps on compute_grpo_loss(new, old, r, group_ids,
                mask, clip, eps, ref, kl_coef): clipped token surrogate with group-relative advantages
                plus kl_coef * k3 KL(policy || reference); gradients clipped at grad_clip

Metrics (logged every log_every iterations, and at every evaluation and the last iteration):
reward mean, informative fraction (groups whose rewards are not all equal: the only ones with a
learning signal), KL (k3, token mean over the response tokens of every update), clip fraction
(tokens whose ratio left [1 - clip, 1 + clip]), loss, and held-out accuracy: greedy answers to
the first heldout_size held-out word problems, correct when reward_gsm8k gives the 1.0 (every
eval_every iterations, at the end, and once before training as the baseline).
Each log goes to the console (one line), to metrics.jsonl in the run folder and to the curves.

Reference policy: with finetune="lora" the base model with the adapter disabled (no copy); with
finetune="full" a frozen copy of the initial model. Checkpoints: every save_every iterations and
at the end, out_dir/checkpoints/iter-N/ holds the adapter (or model) from save_pretrained, the
config (train_config.json) and the metrics so far; the evidence records each weights file's sha256.

Several processes: under torchrun or `accelerate launch` (WORLD_SIZE > 1) every rank joins the
process group (nccl on CUDA, gloo on CPU), the policy is wrapped in DistributedDataParallel, each
rank samples a disjoint, contiguous slice of the iteration's prompts (P / WORLD_SIZE each, whole
groups), metrics are all-reduced, and only rank 0 writes the run folder (gpu_labs.distributed).
The command line lives in gpu_labs.train_grpo_script.

Decision (from §6: reward up, informative groups present, KL bounded, held-out accuracy the goal):
    reject_until_fixed  a metric is not finite, or KL rose above max_kl (the policy ran away from
                        the reference), or the run failed
    tune                no learning signal at the end (no informative group in the last quarter of
                        the iterations), the policy never moved (KL 0), or held-out accuracy fell
                        below its baseline
    continue            none of these: keep training from the last checkpoint or scale it up
"""

import contextlib
import copy
import dataclasses
import io
import json
import math
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from gpu_labs.config import ConfigError, as_dict
from gpu_labs.data import ARITHMETIC, WORD_PROBLEMS_HELDOUT, WORD_PROBLEMS_TRAIN, ids_sha256, load_problems, overlap
from gpu_labs.distributed import Aborted, all_gather, all_reduce_sums, current_ranks, start_signal, world_size_from_env

NAME = "train_grpo"
TITLE = "GRPO training script: arithmetic curriculum, then word problems"
LESSON = "001 §4-§7"

CONTINUE, TUNE, REJECT = "continue", "tune", "reject_until_fixed"
DECISIONS = (CONTINUE, TUNE, REJECT)
SHIPPED_DATA = {
    "arithmetic": ARITHMETIC,
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
            raise ConfigError(f"{name} must be a positive number, got {value!r}")
    for name in ("curriculum_iters", "heldout_size", "clip", "kl_coef"):
        value = getattr(config, name)
        if not (math.isfinite(value) and value >= 0):
            raise ConfigError(f"{name} must be zero or more, got {value!r}")
    if config.group_size < 2:
        raise ConfigError("group_size must be at least 2: a group of one has no advantage to learn from")
    if not 0 < config.top_p <= 1:
        raise ConfigError(f"top_p must be in (0, 1], got {config.top_p!r}")
    if config.finetune not in FINETUNES:
        raise ConfigError(f"finetune must be one of {', '.join(FINETUNES)}, got {config.finetune!r}")
    if config.dtype not in DTYPES:
        raise ConfigError(f"dtype must be one of {', '.join(DTYPES)}, got {config.dtype!r}")
    if config.prompts_per_iter % world_size:
        raise ConfigError(f"prompts_per_iter={config.prompts_per_iter} must divide evenly over {world_size} processes")


# ---------------------------------------------------------------------------------------------
# Data: the prompt streams and the group-contiguous batch


def data_path(name: str) -> Path:
    """A shipped file's name (see SHIPPED_DATA) or a path to a GSM8K-style JSONL file."""
    return SHIPPED_DATA.get(name, Path(name).expanduser())


class PromptStream:
    """Batches of `size` problems, each pass over the file in a fresh seeded order (the same on every rank)."""

    def __init__(self, problems, size: int, seed: int):
        import random

        self.problems, self.size, self.random = list(problems), size, random.Random(seed)
        self.order: list = []

    def next(self) -> list:
        batch = []
        while len(batch) < self.size:
            if not self.order:
                self.order = self.problems[:]
                self.random.shuffle(self.order)
            batch.append(self.order.pop())
        return batch


def rollout_batch(prompt_ids: list[list[int]], groups, eos_id: int, pad_id: int) -> dict:
    """Prompt + sampled answer token rows, group-contiguous, right-padded to the longest row.

    An answer that ended by itself gets its end-of-text token back (the policy chose it); one cut
    at the length cap does not. Every answer thus has at least one token.

        input_ids, attention_mask, response_mask   (P*G, L)
        group_ids                                  (P*G,)  row r*G + j -> r
    """
    import torch

    rows, response_rows, group_ids = [], [], []
    for index, (prompt, group) in enumerate(zip(prompt_ids, groups, strict=True)):
        for answer, capped in zip(group.response_ids, group.hit_length_cap, strict=True):
            answer = list(answer) + ([] if capped else [eos_id])
            rows.append(list(prompt) + answer)
            response_rows.append([0] * len(prompt) + [1] * len(answer))
            group_ids.append(index)
    width = max(len(row) for row in rows)
    return {
        "input_ids": torch.tensor([row + [pad_id] * (width - len(row)) for row in rows]),  # (P*G, L)
        "attention_mask": torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in rows]),  # (P*G, L)
        "response_mask": torch.tensor([row + [0] * (width - len(row)) for row in response_rows]),  # (P*G, L)
        "group_ids": torch.tensor(group_ids),  # (P*G,)
    }


def group_runs(group_ids) -> list[int]:
    """Lengths of the runs of equal consecutive ids: [G] * P for a group-contiguous batch."""
    runs: list[int] = []
    previous = object()
    for value in list(group_ids):
        if value == previous:
            runs[-1] += 1
        else:
            runs.append(1)
            previous = value
    return runs


def micro_batches(batch: dict, group_size: int, groups_per_batch: int) -> list[dict]:
    """Whole groups per micro-batch (so each keeps its advantages), padding trimmed to its own rows."""
    rows = batch["input_ids"].shape[0]
    step = group_size * groups_per_batch
    parts = []
    for start in range(0, rows, step):
        part = {name: value[start : start + step] for name, value in batch.items()}
        width = int(part["attention_mask"].sum(dim=1).max())
        parts.append({name: value[:, :width] if value.ndim == 2 else value for name, value in part.items()})
    return parts


# ---------------------------------------------------------------------------------------------
# The run


def run(config: Config, lab_run) -> tuple[dict, str]:
    """Train with GRPO as configured; returns (results, decision) and writes metrics and checkpoints."""
    import torch

    from gpu_labs.models import add_lora, load_model

    ranks = current_ranks()
    if not start_signal(ranks):
        raise Aborted("rank 0 did not start the run")
    check_config(config, ranks.world_size)
    device = torch.device(lab_run.device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())

    with lab_run.stage("load_data"):
        data = load_data(config)
    if ranks.writer:
        lab_run.extra["data"] = describe_data(config, data)
        lab_run.extra["artifacts"] = {"metrics": METRICS_FILE, "checkpoints": f"{CHECKPOINTS_DIR}/"}
    with lab_run.stage("load_model"):
        loaded = load_model(lab_run.model_spec, str(device), getattr(torch, config.dtype), config.seed)
        model, tokenizer = loaded.model, loaded.tokenizer
        torch.manual_seed(config.seed)
        reference = None
        if config.finetune == "lora":
            model = add_lora(model, config.lora_rank, config.lora_alpha, config.lora_targets)
        else:
            reference = copy.deepcopy(model).eval().requires_grad_(False)
    lab_run.extra["model"] = loaded.identity | {"finetune": config.finetune, "reference": reference_description(config)}
    policy = model
    if ranks.distributed:
        from torch.nn.parallel import DistributedDataParallel

        policy = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    trainable = [parameter for parameter in model.parameters() if parameter.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=config.learning_rate, weight_decay=0.0)
    trainer = Trainer(config, lab_run, ranks, device, model, policy, reference, tokenizer, optimizer, trainable)
    baseline = trainer.evaluate(data["heldout"], 0)
    streams = {
        "curriculum": PromptStream(data["curriculum"], config.prompts_per_iter, config.seed),
        "main": PromptStream(data["train"], config.prompts_per_iter, config.seed + 1),
    }
    history = []
    with lab_run.progress("GRPO iterations", config.iterations) as advance:
        for iteration in range(1, config.iterations + 1):
            phase = "curriculum" if iteration <= config.curriculum_iters else "main"
            record = trainer.iteration(iteration, phase, streams[phase].next())
            if config.heldout_size and (iteration % config.eval_every == 0 or iteration == config.iterations):
                record["heldout_accuracy"] = trainer.evaluate(data["heldout"], iteration)
            history.append(record)
            if is_logged(iteration, config) or "heldout_accuracy" in record:
                trainer.log(record)
            if iteration % config.save_every == 0 or iteration == config.iterations:
                trainer.save_checkpoint(iteration)
            advance()
    results = summarise(config, history, baseline, trainer)
    if ranks.distributed:
        results["replicas_identical"] = len(set(all_gather(weights_checksum(trainable), ranks))) == 1
    return results, decide(results["checks"])


def weights_checksum(parameters) -> str:
    """sha256 over the trained parameters' bytes: equal on every rank when DDP kept the replicas in sync."""
    import hashlib

    digest = hashlib.sha256()
    for parameter in parameters:
        digest.update(parameter.detach().float().cpu().numpy().tobytes())
    return digest.hexdigest()


def is_logged(iteration: int, config: Config) -> bool:
    return iteration % config.log_every == 0 or iteration == config.iterations


def load_data(config: Config) -> dict:
    """The three problem lists; held-out prompts must not appear in training."""
    data = {
        "curriculum": load_problems(data_path(config.curriculum_data)),
        "train": load_problems(data_path(config.train_data)),
        "heldout": load_problems(data_path(config.heldout_data), limit=config.heldout_size or 1)[: config.heldout_size],
    }
    shared = overlap(data["curriculum"] + data["train"], data["heldout"])
    if shared:
        raise ValueError(f"{len(shared)} held-out problems also appear in the training prompts")
    return data


def describe_data(config: Config, data: dict) -> dict:
    names = {"curriculum": config.curriculum_data, "train": config.train_data, "heldout": config.heldout_data}
    return {
        part: {
            "source": names[part],
            "path": str(data_path(names[part])),
            "problems": len(problems),
            "ids_sha256": ids_sha256(problems) if problems else None,
        }
        for part, problems in data.items()
    } | {"heldout_overlap": len(overlap(data["curriculum"] + data["train"], data["heldout"]))}


class Trainer:
    """The state one rank carries through the iterations, and the steps of one iteration."""

    def __init__(self, config, lab_run, ranks, device, model, policy, reference, tokenizer, optimizer, trainable):
        self.config, self.lab_run, self.ranks, self.device = config, lab_run, ranks, device
        self.model, self.policy, self.reference, self.tokenizer = model, policy, reference, tokenizer
        self.optimizer, self.trainable = optimizer, trainable
        self.checkpoints: list[dict] = []
        self.seconds: list[float] = []

    def prompt_text(self, problem) -> str:
        from gpu_labs.sequences import chat_prompt

        return chat_prompt(self.tokenizer, problem.question, self.config.system_prompt)

    # one iteration ---------------------------------------------------------------------------

    def iteration(self, iteration: int, phase: str, problems) -> dict:
        """Sample, score, update; returns the iteration's metrics, summed over the ranks."""
        started = time.perf_counter()
        config, ranks = self.config, self.ranks
        share = config.prompts_per_iter // ranks.world_size
        mine = problems[ranks.rank * share : (ranks.rank + 1) * share]  # a disjoint, contiguous slice per rank
        with self.lab_run.stage("rollouts"):
            batch, rewards, capped = self.rollouts(mine, seed=config.seed + 1000 * iteration + ranks.rank)
        grouped = rewards.view(-1, config.group_size)  # (P_rank, G): one row per prompt
        informative = int((grouped.std(dim=1) > INFORMATIVE_STD).sum())
        with self.lab_run.stage("old_and_reference_log_probs"):
            parts = self.fixed_log_probs(batch, rewards)
        with self.lab_run.stage("updates"):
            update = self.update(parts)
        sums = all_reduce_sums(
            {
                "reward": float(rewards.sum()),
                "rollouts": rewards.numel(),
                "informative": informative,
                "groups": grouped.shape[0],
                "capped": capped,
                **update,
            },
            ranks,
            self.device,
        )
        seconds = time.perf_counter() - started
        self.seconds.append(seconds)
        tokens = max(sums["tokens"], 1.0)
        return {
            "iteration": iteration,
            "phase": phase,
            "dataset": config.curriculum_data if phase == "curriculum" else config.train_data,
            "reward_mean": sums["reward"] / sums["rollouts"],
            "informative_fraction": sums["informative"] / sums["groups"],
            "kl": sums["kl_sum"] / tokens,
            "clip_fraction": sums["clipped"] / tokens,
            "loss": sums["loss_sum"] / (config.num_updates_per_iteration * ranks.world_size),
            "grad_norm": sums["grad_norm_sum"] / (config.num_updates_per_iteration * ranks.world_size),
            "length_cap_fraction": sums["capped"] / sums["rollouts"],
            "rollouts": int(sums["rollouts"]),
            "prompt_ids": [problem.id for problem in problems],
            "group_sizes": sum(all_gather(group_runs(batch["group_ids"].tolist()), ranks), []),
            "seconds": round(seconds, 4),
        }

    def rollouts(self, problems, seed: int):
        """G sampled answers per problem as a group-contiguous batch, their rewards and the cap count."""
        import torch

        from gpu_labs.sequences import sample_groups

        prompts = [self.prompt_text(problem) for problem in problems]
        groups = sample_groups(
            self.model,
            self.tokenizer,
            prompts,
            self.config.group_size,
            self.config.rollout_len,
            self.config.temperature,
            self.config.top_p,
            seed,
        )
        prompt_ids = [self.tokenizer(prompt, add_special_tokens=False)["input_ids"] for prompt in prompts]
        batch = rollout_batch(prompt_ids, groups, self.tokenizer.eos_token_id, self.tokenizer.pad_token_id)
        rewards = torch.tensor(
            [
                reward_gsm8k(answer, problem.answer)
                for problem, group in zip(problems, groups)
                for answer in group.responses
            ],
            dtype=torch.float32,
        )  # (P*G,), row r*G + j answers problem r
        capped = sum(sum(group.hit_length_cap) for group in groups)
        return batch, rewards, capped

    def fixed_log_probs(self, batch: dict, rewards) -> list[dict]:
        """Micro-batches with the sampling policy's (old) and the reference's log-probs, no gradient."""
        import torch

        from gpu_labs.sequences import move_batch, token_log_probs

        batch = dict(batch, rewards=rewards)
        parts = []
        for part in micro_batches(batch, self.config.group_size, self.config.micro_batch_groups):
            part = move_batch(part, self.device)
            with torch.no_grad():
                part["old"], mask = token_log_probs(self.model, part)  # (B, L-1) each
                with self.reference_policy() as reference:
                    part["ref"], _ = token_log_probs(reference, part)  # (B, L-1)
            part["mask"] = mask.bool()  # (B, L-1)
            parts.append(part)
        return parts

    @contextlib.contextmanager
    def reference_policy(self):
        """The frozen reference: the base model under a disabled adapter, or the frozen copy."""
        if self.reference is not None:
            yield self.reference
            return
        with self.model.disable_adapter():
            yield self.model

    def update(self, parts: list[dict]) -> dict:
        """mu optimizer steps over the whole batch (micro-batches accumulate); local metric sums."""
        import torch

        from gpu_labs.sequences import token_log_probs
        from reference.grpo_loss import compute_grpo_loss
        from reference.kl_estimators import k3_kl, masked_mean

        config = self.config
        rows = sum(part["rewards"].numel() for part in parts)
        sums = {"loss_sum": 0.0, "kl_sum": 0.0, "clipped": 0.0, "tokens": 0.0, "grad_norm_sum": 0.0}
        self.policy.train()
        for _ in range(config.num_updates_per_iteration):
            self.optimizer.zero_grad(set_to_none=True)
            for index, part in enumerate(parts):
                last = index == len(parts) - 1
                sync = contextlib.nullcontext() if last or not self.ranks.distributed else self.policy.no_sync()
                with sync:
                    new, _ = token_log_probs(self.policy, part)  # (B, L-1)
                    loss, _ = compute_grpo_loss(
                        new,
                        part["old"],
                        part["rewards"],
                        part["group_ids"],
                        part["mask"],
                        clip_range=config.clip,
                        eps=config.advantage_eps,
                        log_probs_ref=part["ref"],
                        beta=config.kl_coef,
                    )
                    weight = part["rewards"].numel() / rows  # the candidate mean over the whole batch
                    (loss * weight).backward()
                with torch.no_grad():
                    mask = part["mask"]
                    tokens = float(mask.sum())
                    ratio = torch.exp(new - part["old"])  # (B, L-1)
                    sums["loss_sum"] += float(loss) * weight
                    sums["kl_sum"] += float(masked_mean(k3_kl(new, part["ref"]), mask)) * tokens
                    sums["clipped"] += float(((ratio - 1.0).abs() > config.clip)[mask].sum())
                    sums["tokens"] += tokens
            sums["grad_norm_sum"] += float(torch.nn.utils.clip_grad_norm_(self.trainable, config.grad_clip))
            self.optimizer.step()
        return sums

    # evaluation, logging, checkpoints ------------------------------------------------------------

    def evaluate(self, problems, iteration: int) -> float | None:
        """Held-out accuracy: greedy answers, correct when reward_gsm8k gives its 1.0; ranks split the problems."""
        if not problems:
            return None
        with self.lab_run.stage("evaluate"):
            mine = problems[self.ranks.rank :: self.ranks.world_size]
            answers = greedy_answers(
                self.model,
                self.tokenizer,
                [self.prompt_text(problem) for problem in mine],
                self.config.rollout_len,
                self.config.eval_batch_size,
            )
            correct = sum(reward_gsm8k(answer, problem.answer) >= 1.0 for answer, problem in zip(answers, mine))
            sums = all_reduce_sums({"correct": correct, "total": len(mine)}, self.ranks, self.device)
        accuracy = sums["correct"] / sums["total"]
        if iteration == 0 and self.ranks.writer:
            self.write_metrics({"iteration": 0, "phase": "baseline", "heldout_accuracy": accuracy})
            if self.lab_run.console is not None:
                self.lab_run.console.print(
                    f"held-out baseline {accuracy:.3f} (greedy, {len(problems)} problems)", highlight=False
                )
        return accuracy

    def log(self, record: dict) -> None:
        """One console line, one metrics.jsonl line and one point per curve (rank 0)."""
        if not self.ranks.writer:
            return
        self.write_metrics(record)
        for name in ("reward_mean", "informative_fraction", "kl", "clip_fraction", "loss", "heldout_accuracy"):
            self.lab_run.curve(name.removesuffix("_mean"), record.get(name))
        console = self.lab_run.console
        if console is not None:
            console.print(log_line(record, self.config), highlight=False, markup=False, soft_wrap=True)

    def write_metrics(self, record: dict) -> None:
        with open(self.lab_run.out_dir / METRICS_FILE, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")

    def save_checkpoint(self, iteration: int) -> None:
        """checkpoints/iter-N: save_pretrained (adapter, or model and tokenizer), the config, the metrics so far."""
        if not self.ranks.writer:
            return
        from gpu_labs.evidence import file_sha256

        with self.lab_run.stage("checkpoints"):
            folder = self.lab_run.out_dir / CHECKPOINTS_DIR / f"iter-{iteration}"
            with contextlib.redirect_stderr(io.StringIO()):  # transformers draws a shard-writing bar
                self.model.save_pretrained(folder)
            if self.config.finetune == "full":
                self.tokenizer.save_pretrained(folder)
            (folder / CONFIG_FILE).write_text(json.dumps(as_dict(self.config), indent=2) + "\n", encoding="utf-8")
            metrics = self.lab_run.out_dir / METRICS_FILE
            (folder / METRICS_FILE).write_bytes(metrics.read_bytes() if metrics.exists() else b"")
            weights = sorted(folder.glob("*.safetensors")) or sorted(folder.glob("*.bin"))
            self.checkpoints.append(
                {
                    "iteration": iteration,
                    "path": str(folder.relative_to(self.lab_run.out_dir)),
                    "weights_file": weights[0].name,
                    "weights_sha256": file_sha256(weights[0]),
                    "weights_bytes": weights[0].stat().st_size,
                    "metrics_lines": len((folder / METRICS_FILE).read_text(encoding="utf-8").splitlines()),
                }
            )


def reward_gsm8k(text: str, gold: float) -> float:
    """The verifier of lesson 001 §1.3 (reference.verifier_reward): 1.0 correct + 0.2 format, at most 1.2."""
    from reference.verifier_reward import reward_gsm8k as verify

    return verify(text, gold)


def greedy_answers(model, tokenizer, prompts: list[str], max_new_tokens: int, batch_size: int) -> list[str]:
    """The model's greedy answer to each prompt (left-padded batches; text up to the end-of-text token)."""
    import torch

    answers = []
    was_training = model.training
    model.eval()
    side, tokenizer.padding_side = tokenizer.padding_side, "left"
    try:
        for start in range(0, len(prompts), batch_size):
            encoded = tokenizer(
                prompts[start : start + batch_size], return_tensors="pt", padding=True, add_special_tokens=False
            )
            encoded = {name: value.to(next(model.parameters()).device) for name, value in encoded.items()}
            with torch.no_grad():
                output = model.generate(
                    **encoded,
                    do_sample=False,
                    max_new_tokens=max_new_tokens,
                    pad_token_id=tokenizer.pad_token_id,
                    eos_token_id=tokenizer.eos_token_id,
                    use_cache=True,
                )
            answers += tokenizer.batch_decode(output[:, encoded["input_ids"].shape[1] :], skip_special_tokens=True)
    finally:
        tokenizer.padding_side = side
        model.train(was_training)
    return answers


def log_line(record: dict, config: Config) -> str:
    """`iter   5/200 curriculum  reward 0.412  informative 0.62  KL 0.0031  clip 0.018  loss -0.0124  held-out 0.125  4.1s`"""
    line = (
        f"iter {record['iteration']:>{len(str(config.iterations))}}/{config.iterations} {record['phase']:<10}  "
        f"reward {record['reward_mean']:.3f}  informative {record['informative_fraction']:.2f}  "
        f"KL {record['kl']:.4f}  clip {record['clip_fraction']:.3f}  loss {record['loss']:+.4f}"
    )
    if record.get("heldout_accuracy") is not None:
        line += f"  held-out {record['heldout_accuracy']:.3f}"
    return line + f"  {record['seconds']:.1f}s"


# ---------------------------------------------------------------------------------------------
# Results and decision


def summarise(config: Config, history: list[dict], baseline: float | None, trainer: Trainer) -> dict:
    """The evidence's results: per-phase rewards, final metrics, held-out accuracy, checks, checkpoints."""
    window = history[-max(1, len(history) // 4) :]  # the last quarter of the iterations
    evaluated = [record for record in history if record.get("heldout_accuracy") is not None]
    final_accuracy = evaluated[-1]["heldout_accuracy"] if evaluated else None
    numbers = [record[name] for record in history for name in ("reward_mean", "kl", "clip_fraction", "loss")]
    max_kl = max(record["kl"] for record in history)
    checks = {
        "finite": all(math.isfinite(value) for value in numbers),
        "kl_bounded": max_kl <= config.max_kl,
        "learning_signal": statistics.fmean(record["informative_fraction"] for record in window) > 0,
        "policy_moved": history[-1]["kl"] > 0,
        "heldout_not_worse": None if final_accuracy is None or baseline is None else final_accuracy >= baseline,
    }
    by_phase = {
        phase: [record["reward_mean"] for record in history if record["phase"] == phase]
        for phase in ("curriculum", "main")
    }
    seconds = trainer.seconds
    final = history[-1]
    return {
        "iterations": len(history),
        "world_size": trainer.ranks.world_size,
        "rollouts": sum(record["rollouts"] for record in history),
        "iterations_by_phase": {phase: len(rewards) for phase, rewards in by_phase.items()},
        "reward_mean_by_phase": {phase: statistics.fmean(rewards) for phase, rewards in by_phase.items() if rewards},
        "final": {name: final[name] for name in ("reward_mean", "informative_fraction", "kl", "clip_fraction", "loss")},
        "max_kl": max_kl,
        "length_cap_fraction": statistics.fmean(record["length_cap_fraction"] for record in history),
        "heldout": {
            "size": config.heldout_size,
            "decoding": "greedy",
            "baseline_accuracy": baseline,
            "final_accuracy": final_accuracy,
            "evaluated_at": [record["iteration"] for record in evaluated],
        },
        "seconds_per_iteration": {"median": statistics.median(seconds), "max": max(seconds)},
        "trajectories_per_second": sum(record["rollouts"] for record in history) / sum(seconds),
        "checkpoints": trainer.checkpoints,
        "checks": checks,
        "decision_rule": "reject_until_fixed unless finite and kl_bounded; tune unless learning_signal, policy_moved "
        "and heldout_not_worse (None = not evaluated); otherwise continue",
    }


def decide(checks: dict) -> str:
    """reject_until_fixed / tune / continue from the checks (see the module docstring)."""
    if not (checks["finite"] and checks["kl_bounded"]):
        return REJECT
    if not (checks["learning_signal"] and checks["policy_moved"]) or checks["heldout_not_worse"] is False:
        return TUNE
    return CONTINUE


if __name__ == "__main__":  # `python -m gpu_labs.train_grpo`, also under torchrun / accelerate launch
    import sys

    from gpu_labs.train_grpo_script import main  # the command line; it imports this lab as gpu_labs.train_grpo

    sys.exit(main())
