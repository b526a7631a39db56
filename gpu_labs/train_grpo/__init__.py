"""GRPO training script (lesson 001, §4-§7): arithmetic curriculum, then word
problems, on a real model.

    kata lab run train_grpo --run-mode cpu_smoke
    python -m gpu_labs.train_grpo \\
        --config gpu_labs/train_grpo/configs/smoke.json
    python -m gpu_labs.train_grpo \\
        --config gpu_labs/train_grpo/configs/smoke.json \\
        --learning_rate 1e-5 --group_size 8 --print-config
    python -m gpu_labs.train_grpo \\
        --config gpu_labs/train_grpo/configs/grpo.json \\
        --run-mode real_gpu --label first-run
    python -m gpu_labs.train_grpo --model smollm2 \\
        --config gpu_labs/train_grpo/configs/cpu_learn.json --label cpu-learn
    torchrun --standalone --nproc_per_node 2 -m gpu_labs.train_grpo \\
        --config gpu_labs/train_grpo/configs/grpo.json --run-mode real_gpu
    accelerate launch --multi_gpu --num_processes 2 -m gpu_labs.train_grpo \\
        --config gpu_labs/train_grpo/configs/grpo.json --run-mode real_gpu
    torchrun --standalone --nproc_per_node 2 -m gpu_labs.train_grpo \\
        --run-mode cpu_smoke  # 2 CPU processes, gloo

Options: `--config PATH` (a JSON object of config fields), `--FIELD VALUE` for
any field of `Config` (after the file), `--print-config` (print the resolved
config as JSON and exit), `--run-mode dry_run|cpu_smoke|real_gpu` (default
real_gpu where CUDA is present, else cpu_smoke),
`--model smollm2|tiny|HUB_ID|PATH`, `--label NAME`, `--out DIR`. The config
resolves as defaults -> smoke sizes (cpu_smoke) -> the file -> the `--FIELD`
overrides. Exit status: 0 when the run finished (whatever its decision), 1 when
it was refused or failed, 2 for a bad command line or config (one line on
stderr).

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
The baseline and the last evaluation are compared problem by problem: the gains in accuracy (the
reward's 1.0 part), format (its 0.2 part) and reward, each with a 95% paired-bootstrap interval
(gpu_labs.bootstrap); the run learned when the accuracy interval lies above 0.

configs/cpu_learn.json fits two CPU cores and 45 minutes: SmolLM2 with LoRA on the arithmetic
curriculum alone (4 prompts x 8 answers of at most 40 tokens, one update per iteration), evaluated
on 100 held-out arithmetic problems chosen beforehand among those the untrained model answers
right 20-80% of the time (scripts/select_heldout.py, gpu_labs.train_grpo.heldout).

Reference policy: with finetune="lora" the base model with the adapter disabled (no copy); with
finetune="full" a frozen copy of the initial model. Checkpoints: every save_every iterations and
at the end, out_dir/checkpoints/iter-N/ holds the adapter (or model) from save_pretrained, the
config (train_config.json) and the metrics so far; the evidence records each weights file's sha256.

Several processes: under torchrun or `accelerate launch` (WORLD_SIZE > 1) every rank joins the
process group (nccl on CUDA, gloo on CPU), the policy is wrapped in DistributedDataParallel, each
rank samples a disjoint, contiguous slice of the iteration's prompts (P / WORLD_SIZE each, whole
groups), metrics are all-reduced, and only rank 0 writes the run folder (gpu_labs.distributed).

The package: settings.py (Config, smoke, checks, workload), batches.py (prompt streams, the
rollout batch, micro-batches), trainer.py (the run and its Trainer; each update is
gpu_labs.grpo_step), results.py (summary and decision), script.py (the command line) and
__main__.py (`python -m`).

Decision (from §6: reward up, informative groups present, KL bounded, held-out accuracy the goal):
    reject_until_fixed  a metric is not finite, or KL rose above max_kl (the policy ran away from
                        the reference), or the run failed
    tune                no learning signal at the end (no informative group in the last quarter of
                        the iterations), the policy never moved (KL 0), or held-out accuracy fell
                        below its baseline
    continue            none of these: keep training from the last checkpoint or scale it up
"""

from gpu_labs.decisions import CONTINUE, REJECT_UNTIL_FIXED, TUNE
from gpu_labs.train_grpo.batches import PromptStream, group_runs, micro_batches, rollout_batch
from gpu_labs.train_grpo.results import DECISIONS, decide, summarise
from gpu_labs.train_grpo.settings import (
    CHECKPOINTS_DIR,
    CONFIG_FILE,
    METRICS_FILE,
    Config,
    check_config,
    smoke,
    workload,
)
from gpu_labs.train_grpo.trainer import Trainer, reward_gsm8k, run

NAME = "train_grpo"
TITLE = "GRPO training script: arithmetic curriculum, then word problems"
LESSON = "001 §4-§7"
__all__ = [
    "CHECKPOINTS_DIR",
    "CONFIG_FILE",
    "CONTINUE",
    "DECISIONS",
    "METRICS_FILE",
    "REJECT_UNTIL_FIXED",
    "TUNE",
    "Config",
    "PromptStream",
    "Trainer",
    "check_config",
    "decide",
    "group_runs",
    "micro_batches",
    "reward_gsm8k",
    "rollout_batch",
    "run",
    "smoke",
    "summarise",
    "workload",
]
