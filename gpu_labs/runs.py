"""Run folders: `runs/<lab>/<label>/`, claimed once and never overwritten.

A label names one run. Reusing a label is refused (LabRefusal, exit 1) instead of replacing the
evidence it holds; `--out DIR` picks the folder directly and is held to the same rule.
`find_run` turns what `kata lab show` is given (a path, a lab, a label, or both) into a folder.
"""

import re
import time
from pathlib import Path

from gpu_labs.phrases import listing, text

RUNS_ROOT = Path("runs")
SHOWN_RUNS = 8  # runs named in the error for a run that is not there
LABEL_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class LabRefusal(Exception):
    """A lab run the tool refuses to start; the message is one line for the user."""


def default_label(run_mode: str) -> str:
    """`<run_mode>-<UTC timestamp>`, e.g. `cpu_smoke-20261129-181502`."""
    return f"{run_mode}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"


def check_label(label: str) -> str:
    if not LABEL_PATTERN.fullmatch(label):
        raise LabRefusal(text("bad_label", label=label))
    return label


def claim_run_dir(lab: str, label: str, out: Path | None = None, root: Path = RUNS_ROOT) -> Path:
    """Create the run's folder; refuse when it already exists and holds anything.

    An empty existing `--out` folder is accepted (a user may make it first); a folder that holds
    files, or a `runs/<lab>/<label>` that exists at all, is refused so earlier evidence survives.
    """
    path = Path(out) if out is not None else root / lab / check_label(label)
    if path.exists():
        if not path.is_dir():
            raise LabRefusal(text("not_folder", path=path))
        if out is None or any(path.iterdir()):
            raise LabRefusal(text("run_exists", path=path))
    try:
        path.mkdir(parents=True, exist_ok=out is not None)
    except FileExistsError:  # another run claimed it between the check and here
        raise LabRefusal(text("run_exists", path=path)) from None
    return path


def find_run(name: str, label: str | None = None, root: Path = RUNS_ROOT) -> Path:
    """The run `kata lab show NAME [LABEL]` means: NAME a run folder or evidence file; NAME a lab
    and LABEL one of its runs; NAME a lab alone (its newest run); or NAME a label of one lab's run.

    LookupError, one line that names the runs there are, when it means none or several.
    """
    if label is None and Path(name).exists():
        return Path(name)
    if label is None and ("/" in name or name.endswith(".json")):
        raise LookupError(text("no_such_path", name=name))
    runs = [folder for folder in sorted(root.glob("*/*")) if folder.is_dir()]
    if label is not None:
        found = [run for run in runs if (run.parent.name, run.name) == (name, label)]
    elif any(run.parent.name == name for run in runs):
        found = [max((run for run in runs if run.parent.name == name), key=lambda run: run.stat().st_mtime)]
    else:
        found = [run for run in runs if run.name == name]
    if len(found) == 1:
        return found[0]
    asked = f"{name} {label}" if label else name
    if found:
        labs = listing(run.parent.name for run in found)
        raise LookupError(text("ambiguous", asked=asked, labs=labs, name=name))
    if not runs:
        raise LookupError(text("no_runs_yet", asked=asked, root=root))
    listed = listing(f"{run.parent.name} {run.name}" for run in runs[:SHOWN_RUNS])
    more = text("and_more", n=len(runs) - SHOWN_RUNS) if len(runs) > SHOWN_RUNS else ""
    raise LookupError(text("no_such_run", asked=asked, root=root, listed=listed, more=more))
