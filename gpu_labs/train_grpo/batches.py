"""train_grpo's data: the prompt streams, the group-contiguous rollout batch and its micro-batches.

With P prompts and G answers each, row r*G + j of a batch belongs to prompt r (group-contiguous);
every micro-batch holds whole groups, so each keeps its group-relative advantages.
"""

from gpu_labs.data import ids_sha256, load_problems, overlap
from gpu_labs.train_grpo.settings import data_path


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

    from gpu_labs.sequences import pad_batch, with_end

    prompts, answers, group_ids = [], [], []
    for index, (prompt, group) in enumerate(zip(prompt_ids, groups, strict=True)):
        for answer, capped in zip(group.response_ids, group.hit_length_cap, strict=True):
            prompts.append(prompt)
            answers.append(with_end(answer, capped, eos_id))
            group_ids.append(index)
    return pad_batch(prompts, answers, pad_id) | {"group_ids": torch.tensor(group_ids)}  # (P*G, L) each, (P*G,)


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


def load_data(config) -> dict:
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


def describe_data(config, data: dict) -> dict:
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
