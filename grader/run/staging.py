"""What of a student's folder a contestant gets: the kata file and the regular files beside it
(links not followed, hidden entries and __pycache__ left out, within COPY_LIMIT_BYTES and
COPY_LIMIT_FILES), copied once per graded file into a *staged* folder that every contestant of
that file then copies into a world of its own. No torch here: the `kata` process reads it too.
"""

import os
import shutil
from pathlib import Path

COPY_LIMIT_BYTES = 20 * 2**20  # what a student's folder may bring along
COPY_LIMIT_FILES = 500


def folder_files(folder: Path) -> list[str]:
    """Relative paths of the regular files a student's folder brings along, in order, within the limits."""
    names, total = [], 0
    for top, dirs, files in os.walk(folder):  # does not follow links to folders
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        for name in sorted(files):
            path = Path(top) / name
            if path.is_symlink() or not path.is_file():
                continue
            size = path.stat().st_size
            if len(names) >= COPY_LIMIT_FILES or total + size > COPY_LIMIT_BYTES:
                continue
            names.append(path.relative_to(folder).as_posix())
            total += size
    return names


def staged_names(kata_file: str, files: list[str]) -> list[str]:
    """What is staged for `kata_file` (its name in its folder) when the folder brings along `files`
    (folder_files): the kata file and those files, each once, in order.

    The one definition of what a contestant can read of a student's folder: copy_folder copies
    it, and the rerun key (grader.classroom.batch.digest) covers it, so the two never disagree.
    """
    return sorted({kata_file, *files})


def copy_folder(folder: Path, staged: Path, kata_file: str) -> None:
    """The kata file (its name in `folder`) and what the folder brings along (staged_names) into
    `staged`, readable by the sandbox; a file that vanishes or cannot be read meanwhile (a shared
    folder such as /tmp) is left out, the kata file never."""
    for name in staged_names(kata_file, folder_files(folder)):
        target = staged / name
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copyfile(folder / name, target, follow_symlinks=False)
        except OSError:
            if name == kata_file:
                raise
