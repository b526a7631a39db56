"""The instructor's class list (`kata grade --roster FILE.csv`): who is in the class, with the columns
a gradebook needs (an ID, an email), matched to the student folders. (batch.Roster is another
thing: the submissions as discovered.)

`read_class_list` reads the file into plain data, {"key", "columns", "rows"}, that can be stored as
it is; `match` pairs its rows with the folders, which the grade sheet keeps as sheet["roster"] and
grades.csv writes (gradesheet.grades_csv).

The file is CSV with a header row, UTF-8 with or without a BOM (Excel's "CSV UTF-8" writes one),
comma-separated (a header with no comma but a semicolon or a TAB is split on that, as Excel writes
in some locales). The key column, by its header in any case (default: the first), holds the folder
names; a row matches each folder whose display name is the same once both are stripped and
case-folded. Rows blank throughout are skipped; a short row is padded with empty cells. Anything
else amiss (no file, not UTF-8, no header, no such column, a key blank or twice, a row longer than
the header) is a ClassListError: one line, in the user's language. Names and cells in messages are
display names (grader.classroom.names.display_name): the file is data, whatever it holds.
"""

import csv
import io
from pathlib import Path

from grader.classroom.names import display_name
from grader.content.i18n import joined, phrase


class ClassListError(ValueError):
    """A --roster file that cannot be used (said in one line, in the user's language)."""


def read_class_list(path: Path, key: str | None = None, lang: str = "en") -> dict:
    """{"key": the key column's header, "columns": the headers, "rows": [[cell, ...], ...]}: the
    class list at `path`, every row as long as the header, in the file's order; ClassListError
    if it cannot be used."""
    shown = display_name(str(path))
    lines = _records(_text(path, shown, lang), shown, lang)
    if not lines:
        raise ClassListError(phrase(lang, "roster_empty", path=shown))
    columns = [cell.strip() for cell in lines[0][1]]
    index = _key_index(columns, key, shown, lang)
    rows, seen = [], {}
    for line, row in lines[1:]:
        if any(cell.strip() for cell in row[len(columns) :]):
            raise ClassListError(phrase(lang, "roster_long_row", path=shown, line=line, n=len(row), m=len(columns)))
        row = (row + [""] * len(columns))[: len(columns)]
        value = row[index].strip()
        if not value:
            raise ClassListError(
                phrase(lang, "roster_blank_key", path=shown, line=line, column=display_name(columns[index]))
            )
        if fold(value) in seen:
            first = seen[fold(value)]
            raise ClassListError(
                phrase(lang, "roster_twice", path=shown, value=display_name(value), first=first, line=line)
            )
        seen[fold(value)] = line
        rows.append(row)
    return {"key": columns[index], "columns": columns, "rows": rows}


def fold(name: str) -> str:
    """A name as matching compares it: stripped and case-folded ("  Ada " and "ADA" are one)."""
    return name.strip().casefold()


def match(class_list: dict, students: list[str]) -> dict:
    """sheet["roster"]: `class_list` (read_class_list) and how it meets the folders (`students`,
    display names): "matched" {student: index of their row}; "unmatched" {"roster": the keys of
    rows no folder matched (handed in nothing), "folders": the students no row matched}, each in
    its own order; "several" {key: its folders}, a row that several folders match (names alike but
    for case)."""
    index = class_list["columns"].index(class_list["key"])
    by_key = {fold(row[index]): number for number, row in enumerate(class_list["rows"])}
    matched = {student: by_key[fold(student)] for student in students if fold(student) in by_key}
    folders: dict[int, list[str]] = {}
    for student, number in matched.items():
        folders.setdefault(number, []).append(student)
    keys = [row[index].strip() for row in class_list["rows"]]
    return class_list | {
        "matched": matched,
        "unmatched": {
            "roster": [key for number, key in enumerate(keys) if number not in folders],
            "folders": [student for student in students if student not in matched],
        },
        "several": {keys[number]: names for number, names in folders.items() if len(names) > 1},
    }


def _text(path: Path, shown: str, lang: str) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ClassListError(phrase(lang, "roster_missing", path=shown)) from None
    except OSError as error:
        why = error.strerror or type(error).__name__
        raise ClassListError(phrase(lang, "roster_unreadable", path=shown, why=why)) from None
    try:
        return data.decode("utf-8-sig")  # a BOM, if any, is not part of the first header
    except UnicodeDecodeError:
        raise ClassListError(phrase(lang, "roster_not_utf8", path=shown)) from None


def _records(text: str, shown: str, lang: str) -> list[tuple[int, list[str]]]:
    """(line the record ends on, its cells) for each record not blank throughout."""
    header = next((line for line in text.splitlines() if line.strip()), "")
    delimiter = next((d for d in ";\t" if d in header), ",") if "," not in header else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        return [(reader.line_num, row) for row in reader if any(cell.strip() for cell in row)]
    except csv.Error as error:
        raise ClassListError(phrase(lang, "roster_bad_csv", path=shown, why=error)) from None


def _key_index(columns: list[str], key: str | None, shown: str, lang: str) -> int:
    """Where the key column is: the one headed `key` (any case), else the first; it must be the only one
    of its name."""
    wanted = fold(key) if key is not None else fold(columns[0])
    hits = [number for number, column in enumerate(columns) if fold(column) == wanted]
    if not hits:
        names = joined(lang, (display_name(column) for column in columns))
        raise ClassListError(phrase(lang, "roster_no_column", path=shown, column=display_name(key), columns=names))
    if len(hits) > 1:
        raise ClassListError(phrase(lang, "roster_key_twice", path=shown, column=display_name(columns[hits[0]])))
    return hits[0]
