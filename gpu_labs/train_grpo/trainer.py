"""train_grpo's Trainer: one rank's state and the steps of one iteration (rollouts, log-probs, updates,
evaluation, logging, checkpoints), and the run that drives it.

See gpu_labs.train_grpo for the iteration, the metrics and the several-process layout.
"""

import contextlib
import copy
import io
import json
import time

from rich.cells import cell_len

from gpu_labs.config import as_dict
from gpu_labs.distributed import Aborted, all_gather, all_reduce_sums, current_ranks, start_signal
from gpu_labs.phrases import LOG_ZH, language
from gpu_labs.train_grpo.batches import PromptStream, describe_data, group_runs, load_data, micro_batches, rollout_batch
from gpu_labs.train_grpo.results import decide, summarise, weights_checksum
from gpu_labs.train_grpo.settings import (
    CHECKPOINTS_DIR,
    CONFIG_FILE,
    INFORMATIVE_STD,
    METRICS_FILE,
    check_config,
    reference_description,
)


def run(config, lab_run) -> tuple[dict, str]:
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
    with lab_run.progress(lab_run.say("grpo_iterations"), config.iterations) as advance:
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


def is_logged(iteration: int, config) -> bool:
    return iteration % config.log_every == 0 or iteration == config.iterations


class Trainer:
    """The state one rank carries through the iterations, and the steps of one iteration."""

    def __init__(self, config, lab_run, ranks, device, model, policy, reference, tokenizer, optimizer, trainable):
        self.config, self.lab_run, self.ranks, self.device = config, lab_run, ranks, device
        self.model, self.policy, self.reference, self.tokenizer = model, policy, reference, tokenizer
        self.optimizer, self.trainable = optimizer, trainable
        self.checkpoints: list[dict] = []
        self.evaluations: dict[int, dict] = {}  # iteration -> {"correct": [0/1, ...], "formatted": [...]}
        self.seconds: list[float] = []
        self.logged = 0  # console lines so far: the column header comes before the first

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
        """Micro-batches with the sampling policy's (old) and the reference's log-probs, no gradient.

        With one update per iteration (mu = 1) the policy that takes the step is the one that sampled,
        so old is left None and the update's own pass stands in for it, detached (TRL's
        num_iterations=1): the ratio is 1 and one forward pass per micro-batch is saved.
        """
        import torch

        from gpu_labs.sequences import move_batch, token_log_probs

        batch = dict(batch, rewards=rewards)
        parts = []
        for part in micro_batches(batch, self.config.group_size, self.config.micro_batch_groups):
            part = move_batch(part, self.device)
            with torch.no_grad():
                several = self.config.num_updates_per_iteration > 1
                part["old"] = token_log_probs(self.model, part)[0] if several else None  # (B, L-1)
                with self.reference_policy() as reference:
                    part["ref"], _ = token_log_probs(reference, part)  # (B, L-1)
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
        """mu optimizer steps over the whole batch (micro-batches accumulate, gpu_labs.grpo_step); local metric sums."""
        from gpu_labs.grpo_step import Objective, finish, forward

        config = self.config
        settings = Objective(config.clip, config.advantage_eps, config.kl_coef)
        rows = sum(part["rewards"].numel() for part in parts)
        sums = {"loss_sum": 0.0, "kl_sum": 0.0, "clipped": 0.0, "tokens": 0.0, "grad_norm_sum": 0.0}
        self.policy.train()
        for _ in range(config.num_updates_per_iteration):
            self.optimizer.zero_grad(set_to_none=True)
            for index, part in enumerate(parts):
                last = index == len(parts) - 1
                sync = contextlib.nullcontext() if last or not self.ranks.distributed else self.policy.no_sync()
                with sync:
                    step = forward(
                        self.policy, part, part["old"], part["rewards"], part["group_ids"], settings, part["ref"]
                    )
                    weight = part["rewards"].numel() / rows  # the candidate mean over the whole batch
                    (step.loss * weight).backward()
                sums["loss_sum"] += float(step.loss.detach()) * weight
                sums["kl_sum"] += step.kl * step.tokens
                sums["clipped"] += step.clipped
                sums["tokens"] += step.tokens
            sums["grad_norm_sum"] += finish(self.optimizer, self.trainable, config.grad_clip)
        return sums

    # evaluation, logging, checkpoints ------------------------------------------------------------

    def evaluate(self, problems, iteration: int) -> float | None:
        """Held-out accuracy: greedy answers, correct when reward_gsm8k gives its 1.0; ranks split the problems.

        Each problem's two reward parts (correct, formatted: 0/1) are kept in `evaluations[iteration]`,
        in held-out order, for the paired gains (results.heldout_gains).
        """
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
            places = range(self.ranks.rank, len(problems), self.ranks.world_size)  # of `mine` in `problems`
            scored = [
                (place, *answer_parts(answer, problem.answer)) for place, answer, problem in zip(places, answers, mine)
            ]
            scored = sorted(sum(all_gather(scored, self.ranks), []))  # every rank's problems, in held-out order
        self.evaluations[iteration] = {
            "correct": [correct for _, correct, _ in scored],
            "formatted": [formatted for _, _, formatted in scored],
        }
        accuracy = sum(correct for _, correct, _ in scored) / len(scored)
        if iteration == 0 and self.ranks.writer:
            self.write_metrics({"iteration": 0, "phase": "baseline", "heldout_accuracy": accuracy})
            if self.lab_run.console is not None:
                self.lab_run.console.print(
                    self.lab_run.say("heldout_baseline", accuracy=accuracy, n=len(problems)), highlight=False
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
            if not self.logged:
                console.print(log_header(self.config), highlight=False, markup=False, soft_wrap=True)
            console.print(log_line(record, self.config), highlight=False, markup=False, soft_wrap=True)
        self.logged += 1

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


def answer_parts(text: str, gold: float) -> tuple[int, int]:
    """(correct, formatted) of one answer, 0/1: the 1.0 and the 0.2 of reward_gsm8k."""
    from reference.verifier_reward import has_well_formed_answer

    return int(reward_gsm8k(text, gold) >= 1.0), int(bool(has_well_formed_answer(text)))


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


LOG_COLUMNS = (  # (header, width, format) of each column after `iter I/N phase`: 79 columns at 200 iterations
    ("reward", 6, ".3f"),
    ("inform", 6, ".2f"),
    ("KL", 7, ".4f"),
    ("clip", 5, ".3f"),
    ("loss", 7, "+.4f"),
    ("eval", 5, ".3f"),
)


def log_header(config) -> str:
    """The column names above the log lines (blank under `iter I/N phase`), e.g. `... reward  inform  KL ...`.

    Under `kata lab --lang zh` (gpu_labs.phrases.speaking) the names are Chinese (LOG_ZH), padded by
    terminal cells (a Chinese character takes two).
    """
    names = [_pad(_log_word(name), width) for name, width, _ in LOG_COLUMNS] + [_pad(_log_word("time"), 6)]
    blank = " " * cell_len(_log_prefix({"iteration": config.iterations, "phase": ""}, config))
    return blank + "  " + "  ".join(names)


def log_line(record: dict, config) -> str:
    """`iter   5/200 curriculum   0.412    0.62   0.0031  0.018  -0.0124  0.125    4.1s` under log_header.

    reward (mean), inform (the informative fraction of groups), KL (k3), clip (fraction), loss,
    eval (held-out accuracy, blank when not evaluated) and the iteration's seconds.
    """
    keys = ("reward_mean", "informative_fraction", "kl", "clip_fraction", "loss", "heldout_accuracy")
    cells = [
        f"{'' if record.get(key) is None else format(record[key], spec):>{width}}"
        for key, (_, width, spec) in zip(keys, LOG_COLUMNS)
    ]
    return "  ".join([_log_prefix(record, config), *cells, f"{record['seconds']:>5.1f}s"])


def _log_prefix(record: dict, config) -> str:
    count = f"{record['iteration']:>{len(str(config.iterations))}}/{config.iterations}"
    phase = _log_word(record["phase"])
    phase += " " * max(0, 10 - cell_len(phase))
    return f"第 {count} 轮 {phase}" if language() == "zh" else f"iter {count} {phase}"


def _log_word(word: str) -> str:
    return LOG_ZH.get(word, word) if language() == "zh" else word


def _pad(text: str, width: int) -> str:
    """`text` right-aligned in `width` terminal cells."""
    return " " * max(0, width - cell_len(text)) + text
