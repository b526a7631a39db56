"""Choosing held-out problems where the untrained model has room to learn, before any training.

A held-out problem where the model is always right or always wrong cannot show a gain it did not
make, nor hide one it did: the measured change is all noise. So the problems are chosen by the
untrained model's sampled pass rate, with the training run's own prompt and sampling settings:

    rate(q)  = share of `samples` answers to q (temperature, top_p, rollout_len of the config)
               that reward_gsm8k scores correct (its 1.0 part)
    chosen   = the first `count` candidates, in file order, with low <= rate(q) <= high

The candidates are a pool of new problems (gpu_labs/data/arithmetic_pool.jsonl, disjoint from the
curriculum); the chosen ones are then evaluated greedily before and after training, and never
trained on. `scripts/select_heldout.py` writes them with the record of every rate it measured.
"""

from gpu_labs.data import Problem


def pass_rates(model, tokenizer, problems: list[Problem], config, samples: int, prompts_per_batch: int = 16):
    """Yields the sampled pass rate of each problem, in order, a batch of prompts at a time (seeded
    from config.seed and the batch's first index, so a rate never depends on how far one reads)."""
    from gpu_labs.sequences import chat_prompt, sample_groups
    from gpu_labs.train_grpo.trainer import reward_gsm8k

    for start in range(0, len(problems), prompts_per_batch):
        batch = problems[start : start + prompts_per_batch]
        prompts = [chat_prompt(tokenizer, problem.question, config.system_prompt) for problem in batch]
        groups = sample_groups(
            model,
            tokenizer,
            prompts,
            samples,
            config.rollout_len,
            config.temperature,
            config.top_p,
            seed=config.seed + start,
        )
        for problem, group in zip(batch, groups):
            correct = sum(reward_gsm8k(answer, problem.answer) >= 1.0 for answer in group.responses)
            yield correct / samples


def choose(problems: list[Problem], rates: list[float], low: float, high: float, count: int) -> list[Problem]:
    """The first `count` problems whose rate lies in [low, high] (fewer when the pool runs out)."""
    inside = [problem for problem, rate in zip(problems, rates, strict=True) if low <= rate <= high]
    return inside[:count]
