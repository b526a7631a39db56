"""The learner's workspace: one file per kata, a progress file, and backups.

Nothing the learner wrote is lost: `start` never overwrites, `reset` keeps a timestamped copy in
`.backups/`, and the progress file is replaced atomically; a corrupt one is moved aside (and a
warning given) before a fresh one is built.
"""

import json
import os
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from grader.content.i18n import phrase
from grader.files import atomic_write
from grader.report.results import GradeResult

DEFAULT_DIR = "kata_workspace"
PROGRESS_FILE = ".progress.json"
BACKUP_DIR = ".backups"


class WorkspaceRefusal(Exception):
    """An action that would lose or overwrite the learner's work (exit status 1)."""


@dataclass
class Workspace:
    root: Path
    warnings: list[str] = field(default_factory=list)
    lang: str = "en"  # of the refusals and warnings

    def kata_file(self, slug: str) -> Path:
        return self.root / f"{slug}.py"

    def create(self, slug: str, text: str) -> Path:
        """Write a new kata file; refuse if one is there already."""
        path = self.kata_file(slug)
        if path.exists():
            raise WorkspaceRefusal(phrase(self.lang, "exists", path=path, slug=slug))
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            with path.open("x", encoding="utf-8") as handle:
                handle.write(text)
        except FileExistsError:
            raise WorkspaceRefusal(phrase(self.lang, "exists_short", path=path)) from None
        self.update(slug, started_at=_now())
        return path

    def drill_file(self, slug: str) -> Path:
        """Where `kata drill` writes a drill by default: never the kata file itself."""
        return self.root / "drills" / f"{slug}.drill.py"

    def keep_backup(self, path: Path, stem: str) -> Path:
        """Copy `path` into the backups folder, timestamped; returns the copy's path."""
        backup = self.root / BACKUP_DIR / f"{stem}.{datetime.now().strftime('%Y%m%d-%H%M%S-%f')}.py"
        backup.parent.mkdir(parents=True, exist_ok=True)
        backup.write_bytes(path.read_bytes())
        return backup

    def reset(self, slug: str, text: str) -> Path | None:
        """Back up the current file (if any) and write `text` in its place; returns the backup's path."""
        path = self.kata_file(slug)
        backup = None
        if path.exists():
            backup = self.root / BACKUP_DIR / f"{slug}.{datetime.now().strftime('%Y%m%d-%H%M%S-%f')}.py"
            backup.parent.mkdir(parents=True, exist_ok=True)
            backup.write_bytes(path.read_bytes())
        atomic_write(path, text)
        record = self.progress().get(slug, {})
        passed_before = record.get("passed_at") or record.get("passed_before")  # the solution stays unlocked
        self.update(slug, started_at=_now(), last_check=None, passed_at=None, passed_before=passed_before)
        return backup

    # -- progress ----------------------------------------------------------------------------------
    @property
    def progress_path(self) -> Path:
        return self.root / PROGRESS_FILE

    def progress(self) -> dict:
        """{slug: {...}}; a missing file is empty, a corrupt one is set aside with a warning."""
        path = self.progress_path
        if not path.exists():
            return {}
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            katas = data.get("katas", {}) if isinstance(data, dict) else None
            if not isinstance(katas, dict) or not all(isinstance(record, dict) for record in katas.values()):
                raise ValueError("unexpected layout")
            return katas
        except (ValueError, UnicodeDecodeError) as error:
            aside = path.with_name(f"{PROGRESS_FILE}.corrupt-{time.time_ns()}")
            os.replace(path, aside)
            self.warnings.append(phrase(self.lang, "progress_unreadable", error=error, aside=aside.name))
            return {}

    def update(self, slug: str, **fields) -> dict:
        """Merge `fields` into the progress record of `slug` and save atomically."""
        katas = self.progress()
        record = katas.setdefault(slug, {})
        record.update(fields)
        atomic_write(self.progress_path, json.dumps({"version": 1, "katas": katas}, indent=1, ensure_ascii=False))
        return record

    def status(self, slug: str, progress: dict | None = None) -> str:
        """'passed', 'in progress' or 'not started'; a reset file is in progress until it passes again."""
        record = (self.progress() if progress is None else progress).get(slug, {})
        if record.get("passed_at"):
            return "passed"
        if self.kata_file(slug).exists():
            return "in progress"
        return "not started"

    def ever_passed(self, slug: str, progress: dict | None = None) -> bool:
        """Whether the kata passed once, before a reset too (what unlocks its solution)."""
        record = (self.progress() if progress is None else progress).get(slug, {})
        return bool(record.get("passed_at") or record.get("passed_before"))

    def record_check(self, slug: str, result: GradeResult) -> dict:
        """Remember a grading of the workspace file; the first full pass unlocks the solution."""
        counts = {"passed": result.passed, "failed": result.failed, "failing_todos": result.todos_to_fix}
        location = result.location.to_json() if result.location is not None else None
        counts |= {"diagnosis": result.diagnosis, "location": location}  # what `kata hint` follows
        fields = {"last_check": {"at": _now(), **counts}}
        record = self.progress().get(slug, {})
        if result.failed == 0 and result.passed and not record.get("passed_at"):
            fields["passed_at"] = _now()
        return self.update(slug, **fields)


def _now() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")
