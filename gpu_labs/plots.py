"""A run's curves: a PNG beside the evidence, and one-line sparklines for the terminal.

Curves are named series of per-step values, e.g. {"reward": [...], "kl": [...]}. A series may
hold None for a step where the value was not measured; those points are skipped.
"""

import math
from pathlib import Path

BARS = "▁▂▃▄▅▆▇█"  # heights 1/8 .. 8/8
MIDDLE = "▄"  # 4/8: a constant series, neither a maximum nor a zero
NOT_FINITE = "!"  # a NaN or an infinity, never scaled with the rest


def sparkline(values, width: int | None = None) -> str:
    """`[0, 1, 2, 3]` -> '▁▃▆█': bar = BARS[round((v - min) / (max - min) * 7)].

    None -> ' '; NaN or inf -> '!'; a series constant up to rounding is flat at mid height
    ('▄▄▄'). With `width`, a longer series is first shrunk to `width` points (bucket means).
    """
    if width is not None and len(values) > width:
        values = _shrink(list(values), width)
    if all(value is None for value in values):
        return ""
    known = [value for value in values if value is not None and math.isfinite(value)]
    low, high = (min(known), max(known)) if known else (0.0, 0.0)
    flat = math.isclose(low, high, rel_tol=1e-9, abs_tol=1e-12)
    marks = []
    for value in values:
        if value is None:
            marks.append(" ")
        elif not math.isfinite(value):
            marks.append(NOT_FINITE)
        elif flat:
            marks.append(MIDDLE)
        else:
            marks.append(BARS[round((value - low) / (high - low) * (len(BARS) - 1))])
    return "".join(marks)


def _shrink(values: list, width: int) -> list:
    """`width` consecutive buckets of `values`, each its mean (None when it holds no point; NaN wins)."""
    buckets = [values[len(values) * i // width : len(values) * (i + 1) // width] for i in range(width)]
    means = []
    for bucket in buckets:
        known = [value for value in bucket if value is not None]
        means.append(sum(known) / len(known) if known else None)
    return means


def save_curves(path: Path, curves: dict[str, list], title: str, x_label: str = "step") -> Path | None:
    """Draw each series in its own panel (one column) and save a PNG; None when there is nothing to draw.

    The figure is matplotlib's own object, not pyplot's: no backend is chosen and no global figure
    is kept, so a notebook's (inline) backend stays as it was (gpu_labs.notebook).
    """
    series = {name: values for name, values in curves.items() if any(value is not None for value in values)}
    if not series:
        return None
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    figure = Figure(figsize=(6, 1.9 * len(series) + 0.6))
    axes = figure.subplots(len(series), 1, sharex=False, squeeze=False)
    for axis, (name, values) in zip(axes[:, 0], series.items()):
        steps = [step for step, value in enumerate(values, start=1) if value is not None]
        axis.plot(steps, [value for value in values if value is not None], marker="o", markersize=3)
        axis.set_ylabel(name, fontsize=8)
        axis.grid(alpha=0.3)
        axis.tick_params(labelsize=7)
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers
    axes[-1, 0].set_xlabel(x_label, fontsize=8)
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    return Path(path)
