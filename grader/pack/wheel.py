"""The student pack as a project `pip install DIR` installs offline, into an environment that holds torch.

DIR holds the learner's part of the grader (no class grading, no Gradescope, no drill, no pack
builder, no TRL oracle, no labs), the packed katas, the grader's own dependencies as installed
here (`_vendor/`: click, rich, pytest, safetensors, numpy and theirs; so the pack works on this
machine's platform and Python), and an in-tree build backend (`_build/backend.py`, standard library
only, `requires = []`): pip builds the wheel with nothing to download.
"""

import importlib.metadata
import shutil
from pathlib import Path

GRADER = Path(__file__).resolve().parents[1]
LEFT_OUT = (
    "classroom",
    "pack",
    "cli/drill.py",
    "cli/grade.py",
    "cli/gradescope.py",
    "cli/pack.py",
    "content/drill.py",
    "oracles/trl_oracle.py",
)  # under grader/: what a student's tool does not have
VENDORED = (
    "click", "rich", "markdown-it-py", "mdurl", "pygments",
    "pytest", "pluggy", "iniconfig", "packaging", "safetensors", "numpy",
)  # fmt: skip
SHIPPED = (".py", ".md", ".ini", ".toml", ".json")

PYPROJECT = """\
# A student pack of Post-Training Katas, built by `kata pack`: pip install .
[build-system]
requires = []
build-backend = "backend"
backend-path = ["_build"]
"""


def write_project(pack: Path) -> None:
    """Add the grader, its dependencies, the backend and pyproject.toml to `pack` (its katas/ written)."""
    for path in sorted(GRADER.rglob("*")):
        relative = path.relative_to(GRADER)
        if (
            path.is_file()
            and path.suffix in SHIPPED
            and "__pycache__" not in relative.parts
            and not _left_out(relative)
        ):
            target = pack / "grader" / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target)
    for name in VENDORED:
        _vendor(name, pack / "_vendor")
    (pack / "_build").mkdir()
    shutil.copy(Path(__file__).with_name("backend.py"), pack / "_build" / "backend.py")
    (pack / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")


def _left_out(relative: Path) -> bool:
    text = relative.as_posix()
    return any(text == item or text.startswith(f"{item}/") for item in LEFT_OUT)


def _vendor(name: str, folder: Path) -> None:
    """Copy the installed distribution `name`'s modules (not its scripts nor its metadata)."""
    distribution = importlib.metadata.distribution(name)
    for file in distribution.files or ():
        parts = Path(file).parts
        if parts[0] == ".." or "__pycache__" in parts or parts[0].endswith(".dist-info"):
            continue  # its scripts, caches and metadata: the pack's wheel is one distribution, the pack
        source = Path(distribution.locate_file(file))
        if source.is_file():
            target = folder / file
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, target)
