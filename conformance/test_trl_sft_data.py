"""The sft_data reference agrees with TRL 1.16.0's DataCollatorForLanguageModeling and pack_dataset.

`nox -s conformance`. collate is compared with `DataCollatorForLanguageModeling(pad_token_id,
padding_free)` (TRL's defaults otherwise) key by key: the same keys in the same order, each tensor's
dtype, shape and values exactly, max_length_q/k as ints; pack_bfd with
`trl.pack_dataset(Dataset.from_list(examples), seq_length, strategy="bfd")` row by row. The data are
token ids and lengths, so everything is integer and compared exactly (no float32 / float64 tolerance
to choose). Seeded examples: prompts of 0-6 tokens, completions of 0-8 with and without EOS (through
the reference's sft_example), and for packing empty and over-long sequences, seq_length 4 to 64.
"""

import random

import pytest
import torch

from grader.oracles.against import trl_problem

PROBLEM = trl_problem()
if PROBLEM:
    pytest.exit(f"the conformance tests need the pinned TRL. {PROBLEM}  (or: nox -s conformance)", returncode=1)

from grader.content.catalogue import get_kata  # noqa: E402
from grader.oracles import trl_oracle  # noqa: E402  (imports trl)
from reference import sft_data as reference  # noqa: E402

EOS = 2


def examples(seed: int, count: int = 12, max_length=None) -> list[dict]:
    """Seeded sft_example outputs, some completions already ending with EOS."""
    draw = random.Random(seed)
    out = []
    for _ in range(count):
        prompt = [draw.randint(3, 999) for _ in range(draw.randint(0, 6))]
        completion = [draw.randint(3, 999) for _ in range(draw.randint(0, 8))] + [EOS] * draw.randint(0, 1)
        out.append(reference.sft_example(prompt, completion, EOS, max_length))
    return out


def raw_sequences(seed: int, seq_length: int, count: int = 40) -> list[dict]:
    """Seeded rows for packing: a third empty, some longer than seq_length, labels -100 here and there."""
    draw = random.Random(seed)
    out = []
    for _ in range(count):
        n = draw.choice([0, draw.randint(1, seq_length // 2 + 1), draw.randint(1, seq_length + 9)])
        ids = [draw.randint(3, 999) for _ in range(n)]
        out.append({"input_ids": ids, "labels": [draw.choice([-100, token]) for token in ids]})
    out[0] = {"input_ids": [5] * (2 * seq_length + 1), "labels": [5] * (2 * seq_length + 1)}  # over-long
    return out


def assert_same_batch(mine: dict, theirs: dict) -> None:
    assert list(mine) == list(theirs)  # the same keys in the same order
    for key, want in theirs.items():
        got = mine[key]
        assert type(got) is type(want), key
        if isinstance(want, torch.Tensor):
            assert got.dtype == want.dtype and got.shape == want.shape, key
            assert torch.equal(got, want), key
        else:
            assert got == want, key


@pytest.mark.parametrize("padding_free", [False, True])
@pytest.mark.parametrize(("seed", "max_length"), [(0, None), (1, 6), (2, 3), (3, None)])
def test_collate_matches_trl(seed, max_length, padding_free):
    batch = [example for example in examples(seed, max_length=max_length) if example["input_ids"]]
    assert_same_batch(reference.collate(batch, 0, padding_free), trl_oracle.collate(batch, 0, padding_free))


@pytest.mark.parametrize("seq_length", [4, 7, 16, 64])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pack_bfd_matches_trl(seed, seq_length):
    rows = raw_sequences(seed, seq_length)
    packed = reference.pack_bfd(rows, seq_length)
    assert packed == trl_oracle.pack_bfd(rows, seq_length)
    assert all(sum(row["seq_lengths"]) == len(row["input_ids"]) <= seq_length for row in packed)


@pytest.mark.parametrize("padding_free", [False, True])
@pytest.mark.parametrize("seq_length", [8, 20])
def test_packed_rows_collate_as_trl(seq_length, padding_free):
    """The pipeline: TRL's collator on TRL's packed rows (position_ids from seq_lengths) = the reference's."""
    packed = trl_oracle.pack_bfd(examples(4, count=20), seq_length)
    assert packed == reference.pack_bfd(examples(4, count=20), seq_length)
    assert_same_batch(reference.collate(packed, 0, padding_free), trl_oracle.collate(packed, 0, padding_free))


def test_first_fit_disagrees_with_trl():
    """The comparison can fail: first-fit decreasing packs these rows differently from TRL's BFD."""
    kata = get_kata("sft_data")
    item = kata.misconception("first_fit")
    namespace = {}
    exec(compile(kata.variant(item.id), "first_fit", "exec"), namespace)
    rows = [{"input_ids": [i + 1] * n, "labels": [0] * n} for i, n in enumerate([2, 8, 5, 1, 1, 3, 8, 6])]
    assert namespace["pack_bfd"](rows, 10) != trl_oracle.pack_bfd(rows, 10)


def test_kata_check_sft_data_against_trl_passes_the_reference_solution(check_against_trl):
    status, data = check_against_trl("sft_data", get_kata("sft_data").solution())
    assert status == 0 and data["failed"] == 0 and data["against"] == "trl"
    assert any(check["expected_from"] == "trl" for check in data["checks"])
    assert any(check["expected_from"] == "reference" for check in data["checks"])  # sft_example, the contract


@pytest.mark.parametrize("misconception", ["cu_seq_lens_without_zero", "worst_fit", "labels_padded_with_pad_token"])
def test_kata_check_sft_data_against_trl_fails_a_wrong_file(misconception, check_against_trl):
    status, data = check_against_trl("sft_data", get_kata("sft_data").variant(misconception))
    failed_by_trl = [c for c in data["checks"] if c["status"] != "passed" and c["expected_from"] == "trl"]
    assert status == 1 and failed_by_trl
