"""Choose the held-out arithmetic problems of a learning run, with the untrained model, before training.

    python scripts/select_heldout.py --config gpu_labs/train_grpo/configs/cpu_learn.json

Reads the candidates (gpu_labs/data/arithmetic_pool.jsonl, disjoint from the curriculum), samples
`--samples` answers to each with the config's prompt, temperature, top_p, rollout_len and seed on
the untrained SmolLM2, and keeps the first `--count` whose pass rate is in [--low, --high]
(gpu_labs.train_grpo.heldout). Writes gpu_labs/data/arithmetic_heldout.jsonl (the chosen problems,
GSM8K-style) and arithmetic_heldout.selection.json beside it (every rate measured, the settings,
the model's identity). Exit 1 when the pool holds too few such problems, 2 for a bad command line.
"""

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gpu_labs.config import ConfigError, as_dict, load_json_config  # noqa: E402
from gpu_labs.data import ARITHMETIC_HELDOUT, ARITHMETIC_POOL, load_problems, overlap  # noqa: E402
from gpu_labs.evidence import write_json_atomic  # noqa: E402
from gpu_labs.train_grpo import Config  # noqa: E402
from gpu_labs.train_grpo.heldout import choose, pass_rates  # noqa: E402
from gpu_labs.train_grpo.settings import data_path  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="the training run's config (its prompt and sampling)")
    parser.add_argument("--samples", type=int, default=4, help="answers sampled per candidate (default 4)")
    parser.add_argument("--low", type=float, default=0.2)
    parser.add_argument("--high", type=float, default=0.8)
    parser.add_argument("--count", type=int, default=100, help="problems to choose (default 100)")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--out", type=Path, default=ARITHMETIC_HELDOUT)
    args = parser.parse_args()
    try:
        config = load_json_config(Config(), args.config)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    import torch

    from gpu_labs.models import load_model

    started = time.monotonic()
    loaded = load_model(args.model, "cpu", getattr(torch, config.dtype), config.seed)
    pool = load_problems(ARITHMETIC_POOL)
    shared = overlap(
        pool, load_problems(data_path(config.curriculum_data)) + load_problems(data_path(config.train_data))
    )
    if shared:
        print(f"error: {len(shared)} pool problems are also training prompts", file=sys.stderr)
        return 1
    rates = []
    for rate in pass_rates(loaded.model, loaded.tokenizer, pool, config, args.samples):
        rates.append(rate)
        if len(choose(pool[: len(rates)], rates, args.low, args.high, args.count)) == args.count:
            break
    chosen = choose(pool[: len(rates)], rates, args.low, args.high, args.count)
    args.out.write_text(
        "".join(json.dumps({"question": p.question, "answer": p.solution}) + "\n" for p in chosen), encoding="utf-8"
    )
    record = {
        "rule": f"the first {args.count} pool problems whose pass rate over {args.samples} samples is in "
        f"[{args.low}, {args.high}]",
        "model": loaded.identity,
        "settings": {
            name: as_dict(config)[name] for name in ("system_prompt", "temperature", "top_p", "rollout_len", "seed")
        }
        | {"samples": args.samples, "dtype": config.dtype},
        "pool": str(ARITHMETIC_POOL.name),
        "examined": [{"id": p.id, "question": p.question, "rate": rate} for p, rate in zip(pool, rates)],
        "chosen": len(chosen),
        "chosen_mean_rate": sum(r for p, r in zip(pool, rates) if p in chosen) / max(len(chosen), 1),
        "seconds": round(time.monotonic() - started, 1),
    }
    write_json_atomic(args.out.with_suffix(".selection.json"), record)
    print(f"examined {len(rates)} candidates, chose {len(chosen)} -> {args.out} ({record['seconds']} s)")
    return 0 if len(chosen) == args.count else 1


if __name__ == "__main__":
    sys.exit(main())
