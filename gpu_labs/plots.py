"""A run's curves: a PNG beside the evidence, and one-line sparklines for the terminal.

Curves are named series of per-step values, e.g. {"reward": [...], "kl": [...]}. A series may
hold None for a step where the value was not measured; those points are skipped.
"""

from pathlib import Path

BARS = "▁▂▃▄▅▆▇█"


def sparkline(values) -> str:
    """`[0, 1, 2, 3]` -> '▁▃▆█'; None -> ' '; a constant series is drawn at mid height."""
    known = [value for value in values if value is not None]
    if not known:
        return ""
    low, high = min(known), max(known)
    span = high - low
    marks = []
    for value in values:
        if value is None:
            marks.append(" ")
        elif span == 0:
            marks.append(BARS[len(BARS) // 2])
        else:
            marks.append(BARS[round((value - low) / span * (len(BARS) - 1))])
    return "".join(marks)


def save_curves(path: Path, curves: dict[str, list], title: str, x_label: str = "step") -> Path | None:
    """Draw each series in its own panel (one column) and save a PNG; None when there is nothing to draw."""
    series = {name: values for name, values in curves.items() if any(value is not None for value in values)}
    if not series:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    figure, axes = plt.subplots(len(series), 1, figsize=(6, 1.9 * len(series) + 0.6), sharex=False, squeeze=False)
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
    plt.close(figure)
    return Path(path)
