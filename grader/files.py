"""Writing files so that readers never see half of one (the workspace, grading results, class grades, lab evidence),
and JSON text that any name or message can go into."""

import json
import os
from pathlib import Path


def atomic_write(path: Path, text: str | bytes) -> None:
    """Write `text` (UTF-8, or bytes as they are) to `path` via a temporary file and a rename:
    readers see old or new, never half."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    mode, encoding = ("wb", None) if isinstance(text, bytes) else ("w", "utf-8")
    handle = tempfile.NamedTemporaryFile(
        mode, dir=path.parent, prefix=f".{path.name}.", delete=False, encoding=encoding
    )
    try:
        with handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(handle.name, path)
    except BaseException:  # a full disk, an interrupt: no temporary file is left
        Path(handle.name).unlink(missing_ok=True)
        raise


def json_text(data) -> str:
    """`data` as indented JSON to write as UTF-8: readable, or all-ASCII escapes where a string holds
    something UTF-8 cannot encode (a lone surrogate, e.g. an undecodable byte in a learner's message)."""
    text = json.dumps(data, ensure_ascii=False, indent=1)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data, indent=1)
    return text
