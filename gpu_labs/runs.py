"""Run folders: `runs/<lab>/<label>/`, claimed once and never overwritten.

A label names one run. Reusing a label is refused (LabRefusal, exit 1) instead of replacing the
evidence it holds; `--out DIR` picks the folder directly and is held to the same rule.
"""

import re
import time
from pathlib import Path

RUNS_ROOT = Path("runs")
LABEL_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class LabRefusal(Exception):
    """A lab run the tool refuses to start; the message is one line for the user."""


def default_label(run_mode: str) -> str:
    """`<run_mode>-<UTC timestamp>`, e.g. `cpu_smoke-20261129-181502`."""
    return f"{run_mode}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"


def check_label(label: str) -> str:
    if not LABEL_PATTERN.fullmatch(label):
        raise LabRefusal(
            f"label {label!r} must be 1-64 letters, digits, '.', '_' or '-' (starting with a letter or digit)"
        )
    return label


def claim_run_dir(lab: str, label: str, out: Path | None = None, root: Path = RUNS_ROOT) -> Path:
    """Create the run's folder; refuse when it already exists and holds anything.

    An empty existing `--out` folder is accepted (a user may make it first); a folder that holds
    files, or a `runs/<lab>/<label>` that exists at all, is refused so earlier evidence survives.
    """
    path = Path(out) if out is not None else root / lab / check_label(label)
    if path.exists():
        if not path.is_dir():
            raise LabRefusal(f"{path} exists and is not a folder")
        if out is None or any(path.iterdir()):
            raise LabRefusal(f"run {path} already exists; choose another --label (runs are never overwritten)")
    try:
        path.mkdir(parents=True, exist_ok=out is not None)
    except FileExistsError:  # another run claimed it between the check and here
        raise LabRefusal(f"run {path} already exists; choose another --label (runs are never overwritten)") from None
    return path
