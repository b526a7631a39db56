"""A gain measured on the same problems before and after training, with its paired-bootstrap interval.

Each problem i has a score before (b_i) and after (a_i) training (0/1 for accuracy or format). The
gain is the mean paired difference, and its interval comes from resampling the problems:

    d_i      = a_i - b_i                                    (n,)
    gain     = mean(d)
    resample R times: draw n problem indices with replacement, mean of d over them      (R,)
    interval = the (1 - level) / 2 and (1 + level) / 2 quantiles of those R means

Pairing keeps each problem's difficulty out of the spread: only the change per problem varies.
The run learned when the interval lies entirely above 0 (`low > 0`).
"""

RESAMPLES = 10_000
LEVEL = 0.95


def paired_gain(before, after, resamples: int = RESAMPLES, level: float = LEVEL, seed: int = 0) -> dict:
    """{before, after, gain, low, high, n, resamples, level, seed} for per-problem scores `before`, `after` (n,)."""
    import torch

    if len(before) != len(after) or not before:
        raise ValueError(f"need the same problems before and after, got {len(before)} and {len(after)} scores")
    first = torch.tensor(before, dtype=torch.float64)  # (n,)
    second = torch.tensor(after, dtype=torch.float64)  # (n,)
    differences = second - first  # (n,)
    generator = torch.Generator().manual_seed(seed)
    picks = torch.randint(len(differences), (resamples, len(differences)), generator=generator)  # (R, n)
    means = differences[picks].mean(dim=1)  # (R,)
    tail = (1 - level) / 2
    low, high = torch.quantile(means, torch.tensor([tail, 1 - tail], dtype=torch.float64)).tolist()
    return {
        "before": float(first.mean()),
        "after": float(second.mean()),
        "gain": float(differences.mean()),
        "low": low,
        "high": high,
        "n": len(differences),
        "resamples": resamples,
        "level": level,
        "seed": seed,
    }
