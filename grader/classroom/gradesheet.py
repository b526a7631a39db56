"""A class's grade sheet: built from the batch's records, written as CSV, JSON and JUnit XML, and
summarised as rich renderables (per-kata pass rate, score distribution, common misconceptions).

`build_sheet` is plain data (what grades.json holds); the writers and the summary read only it.
A kata a student did not hand in is "missing": an empty cell in the CSV, 0 in the student's mean.
The student's mean weighs each kata by its points total (student_mean), so a kata worth 0 points
lowers nothing; grades.csv adds the points earned over all katas, `total (of MAX)`, and, with
--roster, the class list's columns (grader.classroom.class_list), students in natural order.
A file the grader failed on (batch.error_record: the control file failed too) is "error": no grade,
an empty cell and its kata in the CSV's `errors` column, left out of the student's mean, said in
the summary and on the class page; `kata grade` exits 3.
A file's score is the points it keeps (earned_points: per TODO, kata.toml's `points`; for the
whole-function checks, its `whole_points`; one for the input contract; --points overrides them) over
the maximum; with scoring "checks", the fraction of checks passed. Points follow the file's own check
results only: where the mistake was located, and which misconception it fits, are feedback.
Students, strays and ignored entries are display names (grader.classroom.names.display_name), here as in
every file: the CSV quotes any cell a spreadsheet would run (_cell); the XML escapes what it must.
The checks' messages are inert already (grader.report.inert, applied where a result is built).
"""

import csv
import io
import re
from collections import Counter
from pathlib import Path
from xml.etree import ElementTree

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from grader.classroom import class_list as class_lists
from grader.classroom.names import display_name, file_name, natural_key
from grader.content.catalogue import get_kata, localized
from grader.content.i18n import joined, phrase
from grader.files import json_text
from grader.report.inert import escape_char
from grader.report.results import CheckResult, GradeResult

HISTOGRAM_BINS = 5  # score distribution: [0, 20%), [20%, 40%), ... [80%, 100%]
TOP_MISCONCEPTIONS = 5
BAR_WIDTH = 30
NO_ROSTER = {"key": None, "columns": [], "rows": [], "matched": {}}  # grades.csv without --roster
_XML_UNSAFE = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def kata_points(slug: str, overrides: dict | None = None) -> dict[str, int]:
    """{"todo1": w1, ..., "whole": w, "contract": 1}: what each TODO (kata.toml's `points`), the
    whole-function checks together (`whole_points`) and the input contract are worth; `overrides`
    ({key: points}, from --points) replaces some of them.

    A kata with no whole-function check has no "whole": no check could withhold its points.
    """
    kata = get_kata(slug)
    weights = {f"todo{todo.number}": todo.points for todo in kata.todos}
    weights |= {"whole": kata.whole_points} if kata.has_whole_checks else {}
    return weights | {"contract": 1} | (overrides or {})


class PointsError(ValueError):
    """A --points file that names an unknown kata or key, or gives a bad number (said in one line)."""


def check_points(overrides: dict, lang: str = "en") -> dict[str, dict[str, int]]:
    """`overrides` ({slug: {key: points}}, a --points file) as it is, or PointsError naming what is
    wrong (in `lang`)."""
    for slug, table in overrides.items():
        try:
            keys = kata_points(slug)
        except LookupError:
            raise PointsError(phrase(lang, "points_no_kata", slug=slug)) from None
        if not isinstance(table, dict):
            raise PointsError(phrase(lang, "points_not_table", slug=slug))
        for key, value in table.items():
            if key not in keys:
                raise PointsError(
                    phrase(lang, "points_no_key", slug=slug, name=key, keys=joined(lang, (f"`{key}`" for key in keys)))
                )
            if type(value) is not int or value < 0:
                raise PointsError(phrase(lang, "points_bad_number", slug=slug, name=key, value=value))
    return overrides


def points_key(check: CheckResult) -> str:
    """The points a check can withhold: "todoN" for `todo(N)`, "whole" for `whole`, else "contract"."""
    return f"todo{check.todo}" if check.todo is not None else "whole" if check.whole else "contract"


def earned_points(result: GradeResult, weights: dict[str, int]) -> dict[str, int]:
    """The points of `weights` the file keeps: each key's unless one of its checks (points_key) did
    not pass. Only the checks' statuses count: never the location or the diagnosis, which are the
    file's feedback. A file with no checks keeps nothing."""
    if not result.checks:
        return dict.fromkeys(weights, 0)
    lost = {points_key(check) for check in result.checks if check.status != "passed"}
    return {key: 0 if key in lost else value for key, value in weights.items()}


def build_sheet(
    roster,
    records: dict[tuple[str, str], dict],
    scoring: str = "todos",
    points: dict | None = None,
    lang: str = "en",
    class_list: dict | None = None,
) -> dict:
    """{katas, scoring, points, students: {student: {slug: entry}}, strays, misnamed, several, ignored,
    roster}: every check of every file; a kata graded nowhere says why in its entry (Roster.not_graded).

    An entry's "points" is earned_points ({key: points}), "max" their sum at full marks; its
    "score" is points / max with scoring "todos", the fraction of checks passed with "checks".
    `points`: the --points overrides, {slug: {key: points}}. The checks' messages and the load
    errors are those in `lang` (GradeResult.in_language: a record holds every language's).
    `class_list`: the --roster file as class_list.read_class_list reads it; "roster" is it matched
    to the students (class_list.match), None without one.
    """
    weights = {slug: kata_points(slug, (points or {}).get(slug)) for slug in roster.katas}
    students = {}
    for student in roster.students:
        row = {}
        for slug in roster.katas:
            record = records.get((student, slug))
            row[slug] = _entry(record, weights[slug], scoring, lang) if record else _missing(weights[slug])
            if not record:  # graded nowhere: "did you mean", or which one?
                row[slug] |= roster.not_graded(student, slug)
            if record and "error" in record:
                row[slug] = _missing(weights[slug]) | {"status": "error", "error": record["error"]}
        students[student] = row
    return {
        "katas": roster.katas,
        "scoring": scoring,
        "points": weights,
        "students": students,
        "strays": roster.strays,
        "misnamed": roster.misnamed,
        "several": roster.several,
        "ignored": roster.ignored,
        "roster": class_lists.match(class_list, roster.students) if class_list else None,
    }


def _missing(weights: dict[str, int]) -> dict:
    return {
        "status": "missing",
        "score": 0.0,
        "points": dict.fromkeys(weights, 0),
        "max": sum(weights.values()),
        "checks": [],
    }


def _entry(record: dict, weights: dict[str, int], scoring: str, lang: str) -> dict:
    result = GradeResult.from_json(record["grade"]).in_language(lang)
    earned, top = earned_points(result, weights), sum(weights.values())
    fraction = round(sum(earned.values()) / top, 4) if top else 0.0
    return {
        "status": "graded",
        "score": fraction if scoring == "todos" else result.score,
        "points": earned,
        "max": top,
        "scoring": scoring,
        "passed": result.passed,
        "failed": result.failed,
        "diagnosis": result.diagnosis,
        "diagnoses": [diagnosis.to_json() for diagnosis in result.diagnoses],  # one per located TODO
        "load_error": result.load_error,
        "sandboxed": result.sandboxed,
        "seccomp": result.seccomp,
        "seconds": record.get("seconds"),
        "checks": [
            {
                "name": c.name,
                "title": c.title,
                "status": c.status,
                "message": c.message,
                "misconception": c.misconception,
                "todo": c.todo,
            }
            for c in result.checks
        ],
    }


def student_mean(row: dict) -> float:
    """The student's mean score, each kata weighing its points total (the entry's "max": kata.toml's
    points, or --points): sum(max * score) / sum(max), a missing kata scoring 0, one in error (no
    grade) left out, one worth 0 points out of both sums. With scoring "todos" it is the points
    earned over the points there were: grades.csv's total / MAX, less any kata in error. The CSV, the
    histogram and the class page all show this number. (An entry with no "max", in a sheet made by
    hand, weighs 1.)"""
    kept = [entry for entry in row.values() if entry["status"] != "error"]
    top = sum(entry.get("max", 1) for entry in kept)
    return round(sum(map(_weighted_score, kept)) / top, 4) if top else 0.0


def _weighted_score(entry: dict) -> float:
    """max * score: exactly the points earned with scoring "todos" (the score is rounded)."""
    if entry.get("scoring") == "todos":
        return sum(entry["points"].values())
    return entry.get("max", 1) * entry["score"]


def student_total(row: dict) -> int:
    """The points the student earned over every kata (0 for a kata missing or in error)."""
    return sum(sum(entry.get("points", {}).values()) for entry in row.values())


def errors(sheet: dict) -> list[tuple[str, str, str]]:
    """(student, kata, why) for every file the grader failed on."""
    rows = sheet["students"].items()
    return [(student, slug, entry["error"]) for student, row in rows for slug, entry in row.items() if "error" in entry]


# -- files ------------------------------------------------------------------------------------


EXCEL_CSV = "grades-excel.csv"  # --excel: grades.csv as UTF-8 with a BOM, for Excel


def write_sheet(sheet: dict, out: Path, excel: bool = False) -> list[Path]:
    """grades.csv, grades.json and junit/<student>.xml under `out`, each written atomically; with
    `excel`, EXCEL_CSV too: the same CSV with a UTF-8 BOM, without which Excel reads "José" as
    "JosÃ©". Without `excel`, an EXCEL_CSV left by an earlier run is removed: no stale grades.

    <student> is the display name, cut and hashed if very long (names.file_name).
    """
    from grader.files import atomic_write

    written = [out / "grades.csv", out / "grades.json"]
    text = grades_csv(sheet)
    atomic_write(written[0], text)
    atomic_write(written[1], json_text(sheet))
    if excel:
        written.append(out / EXCEL_CSV)
        atomic_write(written[-1], "\ufeff" + text)
    else:
        (out / EXCEL_CSV).unlink(missing_ok=True)
    for student, row in sheet["students"].items():
        path = out / "junit" / f"{file_name(student)}.xml"
        atomic_write(path, junit_xml(student, row))
        written.append(path)
    return written


def grades_csv(sheet: dict) -> str:
    """One row per student, in natural, case-insensitive order (names.natural_key): one column per
    kata (empty when missing or in error), `total (of MAX)`, the mean (student_mean: weighted by
    each kata's points), and `errors`: the katas the grader failed on, to grade again (their cells
    are empty, not 0, and earn nothing of the total).

    Scoring "todos": a kata's column is headed `SLUG (of MAX)` and holds the points earned. Scoring
    "checks": the fraction of checks passed; the total is the points earned all the same.
    With a roster (sheet["roster"], class_list.match), its columns come first, as in its file: a
    student's row has their row's cells, or none if no row matched; a row no folder matched is a
    row of its own, with no student, no katas and a total of 0. Every cell goes through _cell.
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    katas, by_points = sheet["katas"], sheet.get("scoring", "checks") == "todos"
    tops = {slug: sum(sheet["points"][slug].values()) for slug in katas}
    headers = [f"{slug} (of {tops[slug]})" if by_points else slug for slug in katas]
    roster = sheet.get("roster") or NO_ROSTER
    total = f"total (of {sum(tops.values())})"
    writer.writerow(map(_cell, [*roster["columns"], "student", *headers, total, "mean", "errors"]))
    for listed, student, row in _rows(sheet["students"], roster):
        if row is None:  # in the roster, with no folder: nothing handed in
            writer.writerow(map(_cell, [*listed, "", *[""] * len(katas), "0", f"{0:.4f}", ""]))
            continue
        cells = [_score_cell(row[slug], by_points) if row[slug]["status"] == "graded" else "" for slug in katas]
        failed = " ".join(slug for slug in katas if row[slug]["status"] == "error")
        writer.writerow(
            map(_cell, [*listed, student, *cells, str(student_total(row)), f"{student_mean(row):.4f}", failed])
        )
    return buffer.getvalue()


def _rows(students: dict, roster: dict) -> list[tuple[list[str], str, dict | None]]:
    """(the roster's cells, the student, their row of the sheet) for each student, and for each
    roster row no folder matched (student "", row None), in natural order of the student's name,
    else of the row's key."""
    rows, matched, blank = roster["rows"], roster["matched"], [""] * len(roster["columns"])
    found = [(rows[matched[name]] if name in matched else blank, name, row, name) for name, row in students.items()]
    if rows:
        key, taken = roster["columns"].index(roster["key"]), set(matched.values())
        found += [(cells, "", None, cells[key].strip()) for number, cells in enumerate(rows) if number not in taken]
    found.sort(key=lambda item: natural_key(item[3]))
    return [item[:3] for item in found]


def _score_cell(entry: dict, by_points: bool) -> str:
    return str(sum(entry["points"].values())) if by_points else f"{entry['score']:.4f}"


def _cell(text: str) -> str:
    """A cell a spreadsheet would not run as a formula (every cell: names, headers, numbers): one that
    starts with = + - @ TAB or CR gets a leading quote ', and so does one that starts with a quote,
    so a reader drops exactly one."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r", "'") else text


def junit_xml(student: str, row: dict) -> str:
    """JUnit XML: a testsuite per kata, a testcase per check; failure (wrong) or error (crash, timeout)."""
    suites = ElementTree.Element("testsuites", name=_xml(student))
    for slug, entry in row.items():
        cases = entry["checks"] or [_whole_file_case(slug, entry)]
        failures = sum(case["status"] == "failed" for case in cases)
        errors = sum(case["status"] in ("error", "timeout") for case in cases)
        suite = ElementTree.SubElement(
            suites,
            "testsuite",
            name=slug,
            tests=str(len(cases)),
            failures=str(failures),
            errors=str(errors),
            skipped="0",
            time=f"{entry.get('seconds') or 0:.3f}",
        )
        if entry["status"] == "graded":  # whether the file's code ran in the OS sandbox (--no-sandbox: false)
            properties = ElementTree.SubElement(suite, "properties")
            ElementTree.SubElement(
                properties, "property", name="sandboxed", value=str(entry.get("sandboxed", False)).lower()
            )
        for case in cases:
            node = ElementTree.SubElement(suite, "testcase", classname=f"{_xml(student)}.{slug}", name=case["name"])
            if case["status"] != "passed":
                tag = "failure" if case["status"] == "failed" else "error"
                message = _xml(case["message"])
                failure = ElementTree.SubElement(node, tag, type=case["status"], message=message.split("\n", 1)[0])
                extra = f"\nmisconception: {case['misconception']}" if case.get("misconception") else ""
                failure.text = message + extra
    ElementTree.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ElementTree.tostring(suites, encoding="unicode") + "\n"


def _whole_file_case(slug: str, entry: dict) -> dict:
    if entry["status"] == "missing":
        return {"name": "submitted", "status": "failed", "message": f"no {slug}.py in the folder"}
    if entry["status"] == "error":
        return {"name": "graded", "status": "error", "message": f"the grader failed (not a grade): {entry['error']}"}
    return {"name": "graded", "status": "error", "message": entry.get("load_error") or "no checks ran"}


def _xml(text: str) -> str:
    """`text` with each character XML cannot hold, even escaped, written as display_name writes it."""
    return _XML_UNSAFE.sub(lambda match: escape_char(match.group()), text)


# -- the summary ------------------------------------------------------------------------------


def summary_line(sheet: dict, lang: str = "en") -> str:
    """'N students, M files: P passed, F failed, K missing' (in `lang`), and how many files the
    grader failed on, if any."""
    entries = [entry for row in sheet["students"].values() for entry in row.values()]
    graded = [entry for entry in entries if entry["status"] == "graded"]
    passed = sum(map(_all_pass, graded))
    missing = sum(entry["status"] == "missing" for entry in entries)
    students = phrase(lang, "n_students", n=len(sheet["students"]))
    files = phrase(lang, "n_files", n=len(graded))
    failed = len(graded) - passed
    line = phrase(lang, "grade_summary", students=students, files=files, passed=passed, failed=failed, missing=missing)
    broken = len(entries) - len(graded) - missing
    return line + (phrase(lang, "grade_errors", n=broken) if broken else "")


def roster_warnings(sheet: dict, lang: str = "en") -> list[str]:
    """A line (in `lang`) for the roster's names with no folder, one for the folders not in the
    roster, and one for each roster row several folders match; none without a roster."""
    roster = sheet.get("roster")
    if not roster:
        return []
    keys, folders = roster["unmatched"]["roster"], roster["unmatched"]["folders"]  # folders: display names already
    lines = [phrase(lang, "roster_no_folder", names=joined(lang, map(display_name, keys)))] if keys else []
    lines += [phrase(lang, "roster_no_row", names=joined(lang, folders))] if folders else []
    for key, names in roster["several"].items():
        lines.append(phrase(lang, "roster_several", column=display_name(key), names=joined(lang, names)))
    return lines


def _all_pass(entry: dict) -> bool:
    """A graded file whose checks all passed (and that had checks)."""
    return entry["failed"] == 0 and entry["passed"] > 0


def build_summary(sheet: dict, lang: str = "en") -> RenderableType:
    """Per-kata pass rates, the distribution of students' mean scores, the commonest misconceptions."""
    parts: list[RenderableType] = [_kata_table(sheet, lang), Text(), _distribution(sheet, lang)]
    common = _misconception_table(sheet, lang)
    if common is not None:
        parts += [Text(), common]
    for student, names in sheet["strays"].items():
        parts.append(Text(phrase(lang, "strays", student=student, names=joined(lang, names)), style="warning"))
    for found in ("misnamed", "several"):
        for student, by_slug in sheet.get(found, {}).items():
            for slug, names in by_slug.items():
                line = phrase(lang, found, student=student, names=joined(lang, names), slug=slug)
                parts.append(Text(line, style="warning"))
    if sheet["ignored"]:
        parts.append(Text(phrase(lang, "ignored", names=joined(lang, sheet["ignored"])), style="warning"))
    parts += [Text(line, style="warning") for line in roster_warnings(sheet, lang)]
    parts += [Text(), Text(summary_line(sheet, lang))]
    return Group(*parts)


def _kata_table(sheet: dict, lang: str = "en") -> Table:
    table = Table(title=phrase(lang, "per_kata"), title_justify="left", box=box.SIMPLE, title_style="title")
    table.add_column("kata")
    for header in ("handed_in", "all_pass", "pass_rate", "mean_score"):
        table.add_column(phrase(lang, header), justify="right")
    for slug in sheet["katas"]:
        entries = [row[slug] for row in sheet["students"].values() if row[slug]["status"] == "graded"]
        passed = sum(map(_all_pass, entries))
        rate = f"{passed / len(entries):.0%}" if entries else "-"
        mean = f"{sum(e['score'] for e in entries) / len(entries):.2f}" if entries else "-"
        table.add_row(slug, str(len(entries)), str(passed), rate, mean)
    return table


def score_histogram(sheet: dict) -> list[int]:
    """How many students' mean scores fall in each of HISTOGRAM_BINS equal bins of [0, 1]."""
    counts = [0] * HISTOGRAM_BINS
    for row in sheet["students"].values():
        counts[min(int(student_mean(row) * HISTOGRAM_BINS), HISTOGRAM_BINS - 1)] += 1
    return counts


def _distribution(sheet: dict, lang: str = "en") -> RenderableType:
    counts = score_histogram(sheet)
    top = max(counts) or 1
    lines = [Text(phrase(lang, "distribution"), style="title")]
    for index, count in enumerate(counts):
        low, high = index * 100 // HISTOGRAM_BINS, (index + 1) * 100 // HISTOGRAM_BINS
        label = f"{low:>3}–{high}%" + (" " if high < 100 else "")
        bar = "█" * round(BAR_WIDTH * count / top)
        lines.append(
            Text.assemble(f"  {label:<9}", (bar, "passed" if index == HISTOGRAM_BINS - 1 else "muted"), f" {count}")
        )
    return Group(*lines)


def common_misconceptions(sheet: dict, top: int | None = TOP_MISCONCEPTIONS) -> list[tuple[str, str, int]]:
    """(kata, misconception id, students whose file it explains), commonest first (the `top` ones; None: all)."""
    counts = Counter(
        (slug, named) for row in sheet["students"].values() for slug, entry in row.items() for named in named_in(entry)
    )
    return [(slug, item, count) for (slug, item), count in counts.most_common(top)]


def named_in(entry: dict) -> list[str]:
    """The misconceptions a grade sheet entry names: each located TODO's ("diagnoses"), else its "diagnosis"."""
    named = [d["misconception"] for d in entry.get("diagnoses") or [] if d.get("misconception")]
    return list(dict.fromkeys(named)) or ([entry["diagnosis"]] if entry.get("diagnosis") else [])


def _misconception_table(sheet: dict, lang: str) -> Table | None:
    common = common_misconceptions(sheet)
    if not common:
        return None
    table = Table(
        title=phrase(lang, "common_misconceptions"), title_justify="left", box=box.SIMPLE, title_style="title"
    )
    table.add_column(phrase(lang, "students"), justify="right")
    table.add_column("kata")
    table.add_column(phrase(lang, "misconception"), style="misconception")
    for slug, item, count in common:
        title = localized(get_kata(slug).misconception(item).title, lang)
        table.add_row(str(count), slug, f"{title} ({item})")
    return table
