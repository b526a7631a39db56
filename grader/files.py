"""Writing files so that readers never see half of one (the workspace, grading results, class grades, lab evidence)."""

import os
from pathlib import Path


def atomic_write(path: Path, text: str) -> None:
    """Write `text` to `path` via a temporary file and a rename: readers see old or new, never half."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        "w", dir=path.parent, prefix=f".{path.name}.", delete=False, encoding="utf-8"
    ) as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(handle.name, path)
