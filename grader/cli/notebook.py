"""`kata notebook`: a kata, or every kata, as a Jupyter notebook (built by grader.content.notebook).

An existing notebook is replaced only once a copy of it is kept in `.backups/` beside it (as
`kata reset` keeps the learner's file); one that already holds the same notebook is left as it is.
"""

from datetime import datetime
from pathlib import Path

import click

from grader.cli.options import SLUG, lang_option
from grader.cli.workspace import BACKUP_DIR
from grader.content import catalogue
from grader.content.catalogue import Kata
from grader.content.i18n import phrase, pick_language
from grader.files import atomic_write
from grader.report.console import console, errors


@click.command()
@click.argument("kata", type=SLUG, required=False)
@click.option("--all", "every", is_flag=True, help="Write every kata's notebook, as DIR/SLUG.ipynb.")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    required=True,
    help="The notebook to write (FILE.ipynb; a folder gets SLUG.ipynb), or with --all its folder.",
)
@lang_option
def notebook(kata: Kata | None, every: bool, out: Path, lang: str | None) -> int:
    """Write KATA as a Jupyter notebook: its lesson, the exercise (a cell that grades itself),
    the hints folded, the drill.

    \b
    kata notebook grpo_loss --out grpo_loss.ipynb
    kata notebook --all --lang zh --out notebooks
    An existing file is replaced only once a copy is kept in .backups/ beside it.
    """
    import importlib.util

    from grader.content.notebook import NEEDS, kata_notebook, notebook_text

    lang = pick_language(lang)
    if (kata is None) == (not every):
        raise click.UsageError(phrase(lang, "notebook_not_both" if every else "notebook_one_of"))
    targets = _targets(kata, every, out, lang)
    if importlib.util.find_spec("nbformat") is None:  # it comes with the `notebook` extra
        errors.print(phrase(lang, "notebook_needs", install=NEEDS), style="error", markup=False)
        return 1
    for item, path in targets:
        try:
            changed, backup = write_notebook(path, notebook_text(kata_notebook(item, lang)))
        except OSError as error:
            why = error.strerror or str(error)
            errors.print(phrase(lang, "notebook_unwritable", path=path, why=why), style="error", markup=False)
            return 1
        _say_written(path, changed, backup, lang)
    shown = out if every else targets[0][1]
    command = _quoted(f"jupyter lab {shown}")
    console.print(phrase(lang, "notebook_open_all" if every else "notebook_open", command=command))
    return 0


def _targets(kata: Kata | None, every: bool, out: Path, lang: str) -> list[tuple[Kata, Path]]:
    """(kata, where its notebook goes) for each notebook to write; a bad --out is a usage error."""
    if every:
        if out.suffix == ".ipynb" or (out.exists() and not out.is_dir()):
            raise click.BadParameter(phrase(lang, "notebook_all_file", path=out), param_hint="--out")
        _check_folder(out, lang)
        return [(item, out / f"{item.slug}.ipynb") for item in catalogue.all_katas()]
    path = out / f"{kata.slug}.ipynb" if out.is_dir() else out
    if path.suffix != ".ipynb":
        raise click.BadParameter(phrase(lang, "notebook_suffix", path=out), param_hint="--out")
    if path.exists() and not path.is_file():
        raise click.BadParameter(phrase(lang, "notebook_not_file", path=path), param_hint="--out")
    _check_folder(path.parent, lang)
    return [(kata, path)]


def _check_folder(folder: Path, lang: str) -> None:
    """A usage error when the folder to write into, or the nearest of its parents that exists, is a file."""
    existing = next((place for place in (folder, *folder.parents) if place.exists()), None)
    if existing is not None and not existing.is_dir():
        raise click.BadParameter(phrase(lang, "notebook_file_in_way", path=existing), param_hint="--out")


def write_notebook(path: Path, text: str) -> tuple[bool, Path | None]:
    """Write `text` to `path` atomically, unless the file there holds it already: (whether it was
    written, the backup). A file there that differs is first copied to
    `.backups/STEM.TIMESTAMP.ipynb` beside it, the backup."""
    backup = None
    if path.is_file():
        old = path.read_bytes()
        if old == text.encode("utf-8"):
            return False, None
        backup = path.parent / BACKUP_DIR / f"{path.stem}.{datetime.now().strftime('%Y%m%d-%H%M%S-%f')}{path.suffix}"
        backup.parent.mkdir(parents=True, exist_ok=True)
        backup.write_bytes(old)
    atomic_write(path, text)
    return True, backup


def _say_written(path: Path, changed: bool, backup: Path | None, lang: str) -> None:
    if not changed:
        console.print(phrase(lang, "notebook_same", path=_quoted(path)))
        return
    kept = phrase(lang, "notebook_kept", backup=_quoted(backup)) if backup else ""
    console.print(phrase(lang, "notebook_wrote", path=_quoted(path)) + kept)


def _quoted(text: Path | str) -> str:
    """A path (or a command) to print inside the phrases' rich markup: its own brackets are not markup."""
    from rich.markup import escape

    return escape(str(text))
