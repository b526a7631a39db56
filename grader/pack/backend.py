"""The build backend of a student pack (PEP 517), standard library only: `pip install DIR` needs
nothing from an index. Copied into the pack as _build/backend.py by grader.pack.wheel.

The wheel holds grader/ and katas/ as they lie in the pack, and _vendor/'s contents at its root;
its one entry point is the `kata` command.
"""

import base64
import hashlib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAME, VERSION = "post_training_katas", "0.1.0+pack"
METADATA = f"Metadata-Version: 2.1\nName: post-training-katas\nVersion: {VERSION}\nSummary: Post-Training Katas (a student pack)\n"
WHEEL = "Wheel-Version: 1.0\nGenerator: kata-pack\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
ENTRY_POINTS = "[console_scripts]\nkata = grader.cli:main\n"


def get_requires_for_build_wheel(config_settings=None) -> list[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None) -> str:
    info = Path(metadata_directory) / f"{NAME}-{VERSION}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    for member, text in (("METADATA", METADATA), ("WHEEL", WHEEL), ("entry_points.txt", ENTRY_POINTS)):
        (info / member).write_text(text, encoding="utf-8")
    return info.name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None) -> str:
    name = f"{NAME}-{VERSION}-py3-none-any.whl"
    files = [(path, path.relative_to(ROOT).as_posix()) for top in ("grader", "katas") for path in _files(ROOT / top)]
    files += [(path, path.relative_to(ROOT / "_vendor").as_posix()) for path in _files(ROOT / "_vendor")]
    info = f"{NAME}-{VERSION}.dist-info"
    record = []
    with zipfile.ZipFile(Path(wheel_directory) / name, "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, arcname in files:
            data = path.read_bytes()
            wheel.writestr(arcname, data)
            record.append(_row(arcname, data))
        for member, text in (("METADATA", METADATA), ("WHEEL", WHEEL), ("entry_points.txt", ENTRY_POINTS)):
            arcname, data = f"{info}/{member}", text.encode()
            wheel.writestr(arcname, data)
            record.append(_row(arcname, data))
        record.append(f"{info}/RECORD,,")
        wheel.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return name


def _files(folder: Path) -> list[Path]:
    return sorted(path for path in folder.rglob("*") if path.is_file() and "__pycache__" not in path.parts)


def _row(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"
