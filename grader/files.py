"""Writing files so that readers never see half of one (the workspace, grading results, class grades, lab evidence),
and JSON text that any name or message can go into."""

import json
import os
import stat
from pathlib import Path


def atomic_write(path: Path, text: str | bytes, mode: int | None = None) -> None:
    """Write `text` (UTF-8, or bytes as they are) to `path` via a temporary file and a rename:
    readers see old or new, never half. The file gets `mode`, else the mode of the file it
    replaces, else that of any new file (0666 less the umask), not the temporary file's 0600."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except OSError:
            mode = 0o666 & ~umask()
    kind, encoding = ("wb", None) if isinstance(text, bytes) else ("w", "utf-8")
    handle = tempfile.NamedTemporaryFile(
        kind, dir=path.parent, prefix=f".{path.name}.", delete=False, encoding=encoding
    )
    try:
        with handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(handle.name, path)
    except BaseException:  # a full disk, an interrupt: no temporary file is left
        Path(handle.name).unlink(missing_ok=True)
        raise


def umask() -> int:
    """This process's umask, read without changing it where Linux says it (/proc/self/status)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    current = os.umask(0o022)
    os.umask(current)
    return current


def json_text(data) -> str:
    """`data` as indented JSON to write as UTF-8: readable, or all-ASCII escapes where a string holds
    something UTF-8 cannot encode (a lone surrogate, e.g. an undecodable byte in a learner's message)."""
    text = json.dumps(data, ensure_ascii=False, indent=1)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data, indent=1)
    return text
