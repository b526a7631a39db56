"""Prompt + response batches, their token log-probs, and sampled groups of responses.

A response batch lays out B (prompt, response) pairs right-padded to a common length L:

    input_ids      (B, L)  prompt tokens, then response tokens, then pad
    attention_mask (B, L)  1 on real tokens
    response_mask  (B, L)  1 on response tokens only (what the loss and the log-probs cover)

The log-prob of token t comes from the logits at position t - 1, so token log-probs and their
mask are (B, L - 1): `token_log_probs(...)[b, t - 1] = log p(input_ids[b, t] | input_ids[b, :t])`.
"""

from dataclasses import dataclass


def chat_prompt(tokenizer, question: str, system: str | None = None) -> str:
    """The prompt text the model sees: its chat template with the generation cue, or the bare question."""
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": question}]
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return question + "\n"


def build_response_batch(tokenizer, prompts, responses, max_length: int, add_eos: bool = False) -> dict:
    """Tokenize each prompt and response separately and lay them out as described above.

    Responses are cut so prompt + response fit in `max_length` (a prompt alone that does not
    fit raises ValueError). `truncated[b]` says whether response b was cut.
    """
    import torch

    prompt_rows, response_rows, truncated = [], [], []
    for prompt, response in zip(prompts, responses, strict=True):
        prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        response_ids = tokenizer(response, add_special_tokens=False)["input_ids"]
        if add_eos:
            response_ids = response_ids + [tokenizer.eos_token_id]
        room = max_length - len(prompt_ids)
        if room < 1:
            raise ValueError(
                f"a prompt of {len(prompt_ids)} tokens leaves no room for a response in max_length={max_length}"
            )
        truncated.append(len(response_ids) > room)
        prompt_rows.append(prompt_ids)
        response_rows.append(response_ids[:room])
    return pad_batch(prompt_rows, response_rows, tokenizer.pad_token_id) | {"truncated": torch.tensor(truncated)}


def pad_batch(prompt_rows, response_rows, pad_id: int) -> dict:
    """Token rows prompt + response, right-padded to the longest: input_ids, attention_mask, response_mask (B, L)."""
    import torch

    rows = [list(prompt) + list(response) for prompt, response in zip(prompt_rows, response_rows, strict=True)]
    masks = [[0] * len(prompt) + [1] * len(response) for prompt, response in zip(prompt_rows, response_rows)]
    width = max(len(row) for row in rows)
    return {
        "input_ids": torch.tensor([row + [pad_id] * (width - len(row)) for row in rows]),  # (B, L)
        "attention_mask": torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in rows]),  # (B, L)
        "response_mask": torch.tensor([mask + [0] * (width - len(mask)) for mask in masks]),  # (B, L)
    }


def with_end(response_ids, hit_length_cap: bool, eos_id: int) -> list[int]:
    """A sampled response's tokens, with its end-of-text back when it ended by itself (the policy chose it)."""
    return list(response_ids) + ([] if hit_length_cap else [eos_id])


def move_batch(batch: dict, device) -> dict:
    return {name: value.to(device) for name, value in batch.items()}


def token_log_probs(model, batch: dict):
    """(B, L - 1) log-prob of each next token, and its (B, L - 1) response mask (float)."""
    from gpu_labs.fast_logprobs import selective_log_probs

    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits  # (B, L, V)
    logits = logits[:, :-1].float()  # (B, L - 1, V): position t - 1 predicts token t
    targets = batch["input_ids"][:, 1:]  # (B, L - 1)
    log_probs = selective_log_probs(logits, targets)  # (B, L - 1), no (B, L - 1, V) log-softmax (katas: token_logprobs)
    mask = batch["response_mask"][:, 1:].to(log_probs.dtype)  # (B, L - 1)
    return log_probs * mask, mask


@dataclass
class SampledGroup:
    """G responses sampled for one prompt."""

    prompt: str
    responses: list[str]
    response_ids: list[list[int]]
    hit_length_cap: list[bool]  # True where generation stopped at max_new_tokens, not at end of text


def sample_groups(
    model,
    tokenizer,
    prompts,
    group_size: int,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
    seed: int = 0,
) -> list[SampledGroup]:
    """Sample `group_size` responses per prompt; each prompt's responses are contiguous (group-contiguous).

    Prompts are left-padded into one batch; `generate` repeats each prompt `group_size` times in a
    row, so row r belongs to prompt r // group_size.
    """
    import torch

    torch.manual_seed(seed)
    side = tokenizer.padding_side
    tokenizer.padding_side = "left"
    try:
        encoded = tokenizer(list(prompts), return_tensors="pt", padding=True, add_special_tokens=False)
    finally:
        tokenizer.padding_side = side
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    with torch.no_grad():
        output = model.generate(
            input_ids=encoded["input_ids"].to(device),
            attention_mask=encoded["attention_mask"].to(device),
            do_sample=True,
            temperature=temperature,
            top_p=top_p,
            max_new_tokens=max_new_tokens,
            num_return_sequences=group_size,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
            use_cache=True,  # load_model turns the cache off for training; generation needs it (~10x)
        )  # (P * G, prompt_len + new)
    model.train(was_training)
    generated = output[:, encoded["input_ids"].shape[1] :].tolist()
    groups = []
    for index, prompt in enumerate(prompts):
        rows = generated[index * group_size : (index + 1) * group_size]
        ids = [_until_end(row, tokenizer.eos_token_id, tokenizer.pad_token_id) for row in rows]
        groups.append(
            SampledGroup(
                prompt=prompt,
                responses=[tokenizer.decode(row, skip_special_tokens=True) for row in ids],
                response_ids=ids,
                hit_length_cap=[len(row) >= max_new_tokens and tokenizer.eos_token_id not in row for row in rows],
            )
        )
    return groups


def _until_end(row: list[int], eos: int, pad: int) -> list[int]:
    """The generated tokens up to (not including) the first end-of-text, without padding."""
    if eos in row:
        row = row[: row.index(eos)]
    return [token for token in row if token != pad]
