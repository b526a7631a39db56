"""Where a notebook learner's file lives: the workspace the `kata` command uses.

`%%kata check SLUG` saves its cell as WORKSPACE/SLUG.py (kata_workspace beside the notebook, or
KATA_WORKSPACE), the file `kata check SLUG` grades, and its check is recorded in the same progress
file: `kata hint`, `kata list` and `kata solution` (in a terminal, or as `%kata`) see it.

Nothing the learner wrote is lost: the file is replaced as it is only when it holds what the
notebook saved there last (its digest is kept in the kata's progress record as `notebook`); a file
written elsewhere (in an editor, by `kata start`) is first copied into `.backups/`.
`%kata start SLUG` offers that file back as the next cell when there is one.
"""

import hashlib
from pathlib import Path

from grader.cli.workspace import Workspace
from grader.files import atomic_write


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def save_cell(workspace: Workspace, slug: str, text: str) -> tuple[Path, Path | None]:
    """Write `text` as the workspace's file of `slug`; returns (its path, the backup of what the
    notebook did not write itself, or None)."""
    path = workspace.kata_file(slug)
    record = workspace.progress().get(slug, {})
    backup = None
    if path.is_file():
        old = path.read_bytes()
        if old != text.encode("utf-8") and _digest(old) != record.get("notebook"):
            backup = workspace.keep_backup(path, slug)
    workspace.root.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text)
    fields = {"notebook": _digest(text.encode("utf-8"))}
    if not record.get("started_at"):
        fields["started_at"] = _now()
    workspace.update(slug, **fields)
    return path, backup


def _now() -> str:
    from datetime import datetime

    return datetime.now().astimezone().isoformat(timespec="seconds")
