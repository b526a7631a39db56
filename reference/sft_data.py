"""SFT data: prompt-completion examples, labels -100 outside the completion, batches and packing.

Before any loss (sft_loss is next), SFT data goes through three steps, as TRL 1.16.0's SFTTrainer
does them for a prompt-completion dataset with `completion_only_loss=True`:

    sft_example  input_ids = prompt + completion (+ EOS unless it ends with one)      TODO 1
                 labels    = -100 on the prompt, the token ids on the completion
                 both cut to their first max_length tokens
    collate      padded: rows right-padded (pad_token_id, attention 0, labels -100)   TODO 2
                 padding-free: one row, position_ids restarting at each sequence,     TODO 3
                 cu_seq_lens = [0, n_1, n_1 + n_2, ...], max_length, seq_idx
    pack_bfd     empties dropped, over-long sequences cut to seq_length               TODO 4
                 best-fit decreasing: the longest first, each into the fullest bin    TODO 5
                 it fits in; one row per bin: tokens, labels and seq_lengths

Conventions (TRL 1.16.0):
- -100 is the ignore_index of torch's cross-entropy: a label of -100 adds nothing to the loss
  and is not counted. TRL builds `labels` once, when it prepares the dataset, from its
  `completion_mask` (0 on the prompt, 1 on the completion): label = token id where the mask is
  1, else -100. Its collator then takes the labels as they are: the mask never reaches it.
- EOS: TRL appends the EOS token to the completion text unless the text already ends with it;
  here the same on token ids. An empty completion becomes [EOS].
- Truncation keeps the start (`truncation_mode="keep_start"`, TRL's default). TRL then drops an
  example left with no label but -100 (a prompt that fills max_length): sft_example returns it,
  and the caller drops it.
- collate is `DataCollatorForLanguageModeling(pad_token_id, padding_free)` with TRL's defaults
  for the rest (`pad_to_multiple_of=None`, `return_position_ids=False`): the same keys in the
  same order, int64 tensors, cu_seq_lens and seq_idx int32, max_length_q/k Python ints. Padding
  is on the right. Padding-free, the first label of each sequence is -100 as well: its token
  would be predicted from the end of the sequence before it.
- A packed row carries `seq_lengths`; collate restarts position_ids at each of them, as TRL does.
- pack_bfd is `trl.pack_dataset(dataset, seq_length, strategy="bfd")`: a sequence is never split
  across rows; one longer than seq_length keeps its first seq_length tokens and the rest is lost.
  Ties go as in TRL: equal lengths in input order; among bins with the same free space, the one
  that has had it longest. TRL packs each map batch of 1000 examples on its own; here all at once.

Shapes: sft_example and pack_bfd work on lists of ints; collate returns tensors (B, T) padded,
(1, N) padding-free, with N the total number of tokens and S sequences: cu_seq_lens (S + 1,).
"""

import numbers

import torch

IGNORE_INDEX = -100  # torch.nn.functional.cross_entropy's default ignore_index


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _check_ids(ids, name: str) -> None:
    """Raise ValueError unless ids is a list of ints >= 0."""
    if not (isinstance(ids, list) and all(_is_int(token) and token >= 0 for token in ids)):
        raise ValueError(f"{name} must be a list of token ids (ints >= 0)")


def _check_length(value, name: str, optional: bool = False) -> None:
    """Raise ValueError unless value is an int >= 1 (or None, where optional)."""
    if optional and value is None:
        return
    if not (_is_int(value) and value >= 1):
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")


def _check_examples(examples, keys: tuple[str, ...], optional: tuple[str, ...] = ()) -> None:
    """Raise ValueError unless examples is a non-empty list of dicts with `keys` (and maybe
    `optional`), input_ids token ids and labels ints of the same length."""
    if not (isinstance(examples, list) and examples):
        raise ValueError("examples must be a non-empty list of dicts")
    for example in examples:
        if not (isinstance(example, dict) and set(keys) <= set(example) <= set(keys + optional)):
            raise ValueError(f"each example must be a dict with the keys {list(keys)}")
        _check_ids(example["input_ids"], "input_ids")
        labels = example["labels"]
        if not (isinstance(labels, list) and all(_is_int(label) for label in labels)):
            raise ValueError("labels must be a list of ints")
        if len(labels) != len(example["input_ids"]):
            raise ValueError("each example's labels must be as long as its input_ids")


def sft_example(prompt_ids, completion_ids, eos_token_id, max_length=None):
    """One prompt-completion example as SFTTrainer prepares it: input_ids, and labels for the completion.

    Args:
        prompt_ids: list of the prompt's token ids (may be empty).
        completion_ids: list of the completion's token ids (may be empty, or end with EOS).
        eos_token_id: int >= 0, appended to the completion unless it already ends with it.
        max_length: None, or int >= 1: both lists keep their first max_length tokens.

    Returns:
        dict {"input_ids": list of ints, "labels": list of ints}, the same length: labels -100 on
        the prompt, the token ids on the completion (its EOS included).

    Raises:
        ValueError: on ids that are not lists of ints >= 0, a bad eos_token_id or max_length.
    """
    _check_ids(prompt_ids, "prompt_ids")
    _check_ids(completion_ids, "completion_ids")
    if not (_is_int(eos_token_id) and eos_token_id >= 0):
        raise ValueError("eos_token_id must be an int >= 0")
    _check_length(max_length, "max_length", optional=True)

    # TODO 1: EOS only where it is missing, labels -100 on the prompt, truncation keeping the start
    if not completion_ids or completion_ids[-1] != eos_token_id:
        completion_ids = completion_ids + [eos_token_id]  # (C + 1,) a new list: the caller's is left alone
    input_ids = prompt_ids + completion_ids  # (P + C,)
    labels = [IGNORE_INDEX] * len(prompt_ids) + completion_ids  # (P + C,) no loss on the prompt
    if max_length is not None:
        input_ids = input_ids[:max_length]  # (min(P + C, max_length),)
        labels = labels[:max_length]  # the same positions
    # END TODO 1
    return {"input_ids": input_ids, "labels": labels}


def collate(examples, pad_token_id, padding_free=False):
    """A batch as DataCollatorForLanguageModeling(pad_token_id, padding_free) makes it (TRL 1.16.0).

    Args:
        examples: non-empty list of dicts with "input_ids" and "labels" (lists of ints, the same
            length, at least one token), and optionally "seq_lengths" (a packed row's sequence
            lengths, ints >= 1 summing to its length), in every example or in none.
        pad_token_id: int >= 0, the token that fills the padded rows.
        padding_free: False: one right-padded row per example; True: all in one row, no padding.

    Returns:
        padded: {"input_ids" (B, T), "labels" (B, T), "attention_mask" (B, T)}, int64, T the
        longest example; labels -100 and attention 0 on the padding.
        padding-free: {"input_ids" (1, N), "labels" (1, N), "position_ids" (1, N) int64,
        "cu_seq_lens_q", "cu_seq_lens_k" (S + 1,) int32, "max_length_q", "max_length_k" int,
        "seq_idx" (1, N) int32}, labels -100 at each sequence's first token.

    Raises:
        ValueError: on examples outside that contract, a bad pad_token_id or padding_free.
    """
    _check_examples(examples, ("input_ids", "labels"), optional=("seq_lengths",))
    if any(not example["input_ids"] for example in examples):
        raise ValueError("every example must hold at least one token")
    packed = ["seq_lengths" in example for example in examples]
    if any(packed) and not all(packed):
        raise ValueError("seq_lengths must be in every example or in none")
    for example in examples:
        lengths = example.get("seq_lengths", [len(example["input_ids"])])
        if not (isinstance(lengths, list) and all(_is_int(n) and n >= 1 for n in lengths)):
            raise ValueError("seq_lengths must be a list of ints >= 1")
        if sum(lengths) != len(example["input_ids"]):
            raise ValueError("each example's seq_lengths must add up to its length")
    if not (_is_int(pad_token_id) and pad_token_id >= 0):
        raise ValueError("pad_token_id must be an int >= 0")
    if not isinstance(padding_free, bool):
        raise ValueError("padding_free must be True or False")
    input_ids = [torch.tensor(example["input_ids"]) for example in examples]  # B tensors (T_b,) int64
    labels = [torch.tensor(example["labels"]) for example in examples]  # B tensors (T_b,) int64

    if not padding_free:
        # TODO 2: right padding: pad_token_id in input_ids, 0 in attention_mask, -100 in labels
        width = max(len(ids) for ids in input_ids)  # T, the longest example

        def right_pad(rows, value):
            return torch.stack([torch.nn.functional.pad(row, (0, width - len(row)), value=value) for row in rows])

        batch = {
            "input_ids": right_pad(input_ids, pad_token_id),  # (B, T)
            "labels": right_pad(labels, IGNORE_INDEX),  # (B, T) no loss on padding
            "attention_mask": right_pad([torch.ones_like(ids) for ids in input_ids], 0),  # (B, T) 1 on tokens
        }
        # END TODO 2
        return batch

    # TODO 3: one row, position_ids restarting at each sequence, and the boundaries for varlen attention
    seq_lengths = [n for example in examples for n in example.get("seq_lengths", [len(example["input_ids"])])]  # S
    position_ids = torch.cat([torch.arange(n) for n in seq_lengths])[None]  # (1, N) 0, 1, ... again at each sequence
    input_ids = torch.cat(input_ids)[None]  # (1, N)
    labels = torch.cat(labels)[None]  # (1, N)
    labels[position_ids == 0] = IGNORE_INDEX  # a first token is not predicted from the sequence before it
    cu_seq_lens = torch.tensor([0, *seq_lengths]).cumsum(0).to(torch.int32)  # (S + 1,) where each one starts, then N
    max_length = max(seq_lengths)  # int: the longest sequence, not the row
    seq_idx = torch.repeat_interleave(torch.arange(len(seq_lengths), dtype=torch.int32), torch.tensor(seq_lengths))
    # END TODO 3
    return {
        "input_ids": input_ids,
        "labels": labels,
        "position_ids": position_ids,
        "cu_seq_lens_q": cu_seq_lens,
        "cu_seq_lens_k": cu_seq_lens,
        "max_length_q": max_length,
        "max_length_k": max_length,
        "seq_idx": seq_idx[None],  # (1, N) the sequence each token belongs to
    }


def pack_bfd(examples, seq_length):
    """Rows of at most seq_length tokens, as trl.pack_dataset(dataset, seq_length, strategy="bfd").

    Args:
        examples: non-empty list of dicts with exactly "input_ids" and "labels" (lists of ints of
            the same length), like a dataset's rows; at least one non-empty.
        seq_length: int >= 1, the most tokens a row holds.

    Returns:
        list of dicts {"input_ids", "labels", "seq_lengths"} (lists of ints), one per bin in the
        order the bins were opened: the bin's sequences end to end, in the order they went in,
        and their lengths.

    Raises:
        ValueError: on examples outside that contract (or all empty), or a bad seq_length.
    """
    _check_examples(examples, ("input_ids", "labels"))
    _check_length(seq_length, "seq_length")
    if not any(example["input_ids"] for example in examples):
        raise ValueError("every example is empty: there is nothing to pack")

    # TODO 4: drop the empty sequences; cut the longer ones to their first seq_length tokens
    sequences = [
        {"input_ids": example["input_ids"][:seq_length], "labels": example["labels"][:seq_length]}
        for example in examples
        if example["input_ids"]
    ]  # the overflow past seq_length is dropped, not packed elsewhere
    # END TODO 4

    # TODO 5: best-fit decreasing into bins, then one row per bin with its sequences' lengths
    bins = []  # in the order they were opened: {"ids": sequence indices, "space": tokens left}
    waiting = []  # the same bins, the longest unchanged first (TRL's tie-break)
    by_length = sorted(range(len(sequences)), key=lambda i: -len(sequences[i]["input_ids"]))  # stable: ties in order
    for i in by_length:
        length = len(sequences[i]["input_ids"])
        fits = [b for b in waiting if b["space"] >= length]
        if fits:
            best = min(fits, key=lambda b: b["space"])  # the fullest bin it fits in; the first of equals
            waiting.remove(best)
        else:
            best = {"ids": [], "space": seq_length}  # nothing fits: a new bin
            bins.append(best)
        best["ids"].append(i)
        best["space"] -= length
        waiting.append(best)

    rows = []
    for box in bins:
        members = [sequences[k] for k in box["ids"]]  # in the order they went in
        rows.append(
            {
                "input_ids": [token for seq in members for token in seq["input_ids"]],  # (sum of lengths,)
                "labels": [label for seq in members for label in seq["labels"]],  # aligned with input_ids
                "seq_lengths": [len(seq["input_ids"]) for seq in members],  # one length per sequence
            }
        )
    # END TODO 5
    return rows
