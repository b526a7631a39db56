"""How `kata grade` shows a class's results, kept in OUT/view.json for the next run.

The language (--lang), the scoring (--scoring), the points (--points), what the feedback tells
(--feedback), the roster (--roster, --roster-key) and --excel change only how the saved results are shown:
the grade sheet, the feedback and the class page are rendered from the records, and none of them
is in the rerun key (batch.Settings), so changing one grades nothing again. A run keeps them in
OUT/view.json; the next run on the same OUT uses each one it is not given again (`resolve`), and
says so in one line. The points and the roster are kept as read (the file's tables, its rows), with
the file's name to show, so the kept view does not depend on the files still being there.

    view.json   {"lang": "zh", "scoring": "todos", "feedback": "graded",
                 "points": {slug: {key: n}} | null, "points_from": "points.toml",
                 "roster": {...} | null, "roster_from": "class.csv", "excel": false}
"""

import json
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from grader.content.i18n import PHRASES, joined
from grader.report.results import FEEDBACKS, SCORINGS

VIEW_FILE = "view.json"


@dataclass(frozen=True)
class View:
    """What a run shows and how; `points` and `roster` None: the katas' own points, no roster."""

    lang: str = "en"
    scoring: str = "todos"
    feedback: str = "graded"
    points: dict | None = None  # {slug: {key: points}}: --points, as read_points returns it
    points_from: str = ""  # the --points file's display name
    roster: dict | None = None  # --roster, as class_list reads it
    roster_from: str = ""  # the --roster file's display name
    excel: bool = False  # --excel: grades-excel.csv beside grades.csv

    def options(self, names: list[str], lang: str = "en") -> str:
        """'--lang zh, --points points.toml' (in `lang`'s list): the options `names` (fields) as a command
        line gives them."""
        shown = {"points": self.points_from, "roster": self.roster_from, "excel": ""}
        return joined(lang, (f"--{name} {shown.get(name, getattr(self, name))}".rstrip() for name in names))


OPTIONS = ("lang", "scoring", "feedback", "points", "roster", "excel")  # the fields a command line gives


class ViewError(ValueError):
    """OUT/view.json could not be read as a view (said in one line)."""


def read_view(out: Path) -> View | None:
    """The view the last run kept in `out` (None: no run kept one), or ViewError."""
    path = out / VIEW_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise ViewError(str(error).splitlines()[0]) from None
    if not isinstance(data, dict) or set(data) - {field.name for field in fields(View)}:
        raise ViewError("not a view")
    view = replace(View(), **data)
    _check(view)
    return view


def _check(view: View) -> None:
    """ViewError unless every field is one a run could have written."""
    from grader.classroom import gradesheet

    if view.lang not in PHRASES or view.scoring not in SCORINGS or view.feedback not in FEEDBACKS:
        raise ViewError("an unknown --lang, --scoring or --feedback")
    if not isinstance(view.points_from, str) or not isinstance(view.roster_from, str):
        raise ViewError("a file name that is not text")
    if view.points is not None:
        try:
            gradesheet.check_points(view.points)
        except (gradesheet.PointsError, AttributeError, TypeError) as error:
            raise ViewError(str(error)) from None
    if view.roster is not None and not _is_class_list(view.roster):
        raise ViewError("a roster that is not a class list")
    if not isinstance(view.excel, bool):
        raise ViewError("--excel that is neither true nor false")


def _is_class_list(data) -> bool:
    """Whether `data` has the shape class_list.read_class_list gives: a key among the columns, rows
    of text as long as the header."""
    if not isinstance(data, dict) or set(data) != {"key", "columns", "rows"}:
        return False
    columns, rows = data["columns"], data["rows"]
    if not isinstance(columns, list) or not isinstance(rows, list) or data["key"] not in columns:
        return False
    cells = [*columns, *(cell for row in rows if isinstance(row, list) for cell in row)]
    return all(isinstance(row, list) and len(row) == len(columns) for row in rows) and all(
        isinstance(cell, str) for cell in cells
    )


def resolve(given: dict, kept: View | None, default_lang: str) -> tuple[View, list[str]]:
    """The view of this run, and the options it took from `kept` that differ from their defaults.

    `given`: the options the command line gave, by field ("points" with "points_from", "roster"
    with "roster_from"); every other one comes from `kept`, else its default (the language:
    `default_lang`, from KATA_LANG or the locale).
    """
    base = replace(View(), lang=default_lang)
    view = replace(kept or base, **given)
    reused = [
        field for field in OPTIONS if kept and field not in given and getattr(view, field) != getattr(base, field)
    ]
    return view, reused


def write_view(out: Path, view: View) -> Path:
    """Keep `view` in OUT/view.json (atomically) for the next run."""
    from grader.files import atomic_write, json_text

    path = out / VIEW_FILE
    atomic_write(path, json_text(asdict(view)))
    return path
