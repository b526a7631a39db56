"""OUT/report.html: a class's grades as one self-contained page (inline CSS and SVG, no script).

    summary      students x katas, under a caption saying what the numbers are: each cell the points
                 the file kept of the kata's ("1 of 2", scoring "todos") or the fraction of its checks
                 passed ("checks"), and the student's mean; a 0, a missing kata and a grader error say
                 why (zero_reason); each name links to the student's section
    histogram    students' mean scores in HISTOGRAM_BINS bins of [0, 1], as SVG bars
    per TODO     pass rate of each kata's TODO: graded files whose every check of that TODO
                 passed / graded files with a check of it; then, per TODO, the files whose mistake
                 there is not a known one (unknown_mistakes), to read
    misconceptions  files each diagnosis explains, with the catalogue's title, as SVG bars; then the
                 students whose file each one explains
    students     a section per student: per kata the score, why a 0, the points per unit (scoring
                 "todos"), the feedback text (when given) and a link to
                 feedback/<file_name(student)>/<slug>.txt
    not graded   files graded nowhere and why (misnamed, several, named after no kata), and the
                 entries of SUBMISSIONS that are not student folders

`report_html(sheet)` reads only the sheet (grades.json), and the feedback texts when given
(feedback.feedback_texts: what OUT/feedback holds); every name and text in them is escaped.
Numbers carry data attributes for tests: data-score, data-points, data-max, data-passed and
data-checks on the summary's cells, data-reason on a 0, data-got and data-top on a unit,
data-students, data-pass-rate and data-files on the bars.
"""

import html
from collections import Counter
from pathlib import Path
from urllib.parse import quote

from grader.classroom.feedback import unit_label
from grader.classroom.gradesheet import HISTOGRAM_BINS, common_misconceptions, named_in, score_histogram, student_mean
from grader.classroom.names import file_name
from grader.content.catalogue import get_kata, localized
from grader.content.i18n import joined, phrase

BAR_PX = 300  # the longest bar, in pixels
ROW_PX = 22
REASONS = ("missing", "misnamed", "several", "error", "load", "timeout", "crashed", "wrong")  # zero_reason's codes

CSS = """
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin-bottom: 1.5em; }
table.scores { min-width: 45em; }
caption { caption-side: top; text-align: left; padding-bottom: 0.4em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
td.missing { color: #999; }
td.error { color: #b00; font-weight: bold; }
.reason { color: #a50; }
td.zero .reason { font-size: 0.85em; }
section.student { border-top: 1px solid #ccc; margin-top: 1.5em; }
pre.feedback { background: #f6f6f6; padding: 0.6em; white-space: pre-wrap; max-width: 60em; }
svg text { font-size: 12px; font-family: sans-serif; }
"""


def e(value) -> str:
    """`value` as text HTML can hold, quotes escaped too (for attributes)."""
    return html.escape(str(value), quote=True)


def report_html(sheet: dict, lang: str = "en", texts: dict[tuple[str, str], str] | None = None) -> str:
    """The whole page as a string; `texts`: {(student, slug): feedback text}, shown in each
    student's section (None: the links to the feedback files only)."""
    title = e(phrase(lang, "html_title"))
    parts = [
        f'<!DOCTYPE html>\n<html lang="{e(lang)}"><head><meta charset="utf-8">',
        f"<title>{title}</title><style>{CSS}</style></head><body>",
        f"<h1>{title}</h1>",
        _summary(sheet, lang),
        _histogram(sheet, lang),
        _todo_rates(sheet, lang),
        _misconceptions(sheet, lang),
        _students(sheet, lang, texts or {}),
        _not_graded(sheet, lang),
        "</body></html>\n",
    ]
    return "\n".join(parts)


def write_report(sheet: dict, out: Path, lang: str = "en", texts: dict[tuple[str, str], str] | None = None) -> Path:
    """Write OUT/report.html atomically (`texts`: as report_html takes them); returns its path."""
    from grader.files import atomic_write

    path = out / "report.html"
    atomic_write(path, report_html(sheet, lang, texts))
    return path


# -- why a 0 ----------------------------------------------------------------------------------


def zero_reason(entry: dict) -> str | None:
    """Why a grade sheet entry scores 0 or has no score, one of REASONS: not handed in ("missing"),
    a name near the kata's ("misnamed"), several files of its name ("several"), the grader failed
    ("error"), the file did not load or gave no checks ("load"), every check ran out of time
    ("timeout") or crashed ("crashed"), or its failed checks cost every point ("wrong"); None when
    it scores above 0 (or failed nothing)."""
    if entry["status"] == "missing":
        return "several" if entry.get("several") else "misnamed" if entry.get("misnamed") else "missing"
    if entry["status"] == "error":
        return "error"
    statuses = {check["status"] for check in entry["checks"]}
    if entry.get("load_error") or not statuses:  # every check it has failed on the load error
        return "load"
    if entry["score"] > 0 or statuses == {"passed"}:
        return None
    return "timeout" if statuses == {"timeout"} else "crashed" if statuses == {"error"} else "wrong"


def reason_text(entry: dict, slug: str, lang: str) -> str:
    """What zero_reason(entry) says, in full, in `lang` ("every check ran out of time: ..."); "" for None."""
    code = zero_reason(entry)
    if code is None:
        return ""
    checks = entry.get("checks") or []
    why = {
        "error": entry.get("error"),
        "load": entry.get("load_error"),
        "timeout": checks[0]["message"] if checks else "",
        "crashed": checks[0]["message"] if checks else "",
    }.get(code)
    return phrase(
        lang,
        f"why_{code}_long",
        slug=slug,
        names=joined(lang, entry.get(code) or []) if code in ("misnamed", "several") else "",
        why=_first_line(why or ""),
        failed=entry.get("failed", 0),
        checks=len(checks),
    )


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0]


# -- the summary ------------------------------------------------------------------------------


def _anchors(sheet: dict) -> dict[str, str]:
    """{student: the id of the student's section}: "student-1", ... in the sheet's order."""
    return {student: f"student-{index}" for index, student in enumerate(sheet["students"], 1)}


def _student_link(student: str, anchors: dict[str, str]) -> str:
    return f'<a href="#{anchors[student]}" data-student="{e(student)}">{e(student)}</a>'


def score_text(entry: dict, scoring: str, lang: str) -> str:
    """A graded entry's score as the summary shows it: "1 of 2" (points; scoring "todos") or
    "0.62 (8/13)" (the fraction of checks passed, and the checks; "checks")."""
    if scoring == "todos":
        return phrase(lang, "html_of", got=sum(entry["points"].values()), top=entry["max"])
    return f"{entry['score']:.2f} ({entry['passed']}/{entry['passed'] + entry['failed']})"


def _cell(entry: dict, slug: str, scoring: str, lang: str) -> str:
    """One cell of the summary: the score and its numbers as data, or why there is none."""
    reason, graded = zero_reason(entry), entry["status"] == "graded"
    data = f'data-kata="{e(slug)}"'
    if entry["status"] != "error":  # no grade: the grader failed on it
        data += f' data-score="{entry["score"]:.4f}"'
        if scoring == "todos":
            data += f' data-points="{sum(entry["points"].values())}" data-max="{entry["max"]}"'
    if graded:
        data += f' data-passed="{entry["passed"]}" data-checks="{entry["passed"] + entry["failed"]}"'
    if reason is None:
        return f"<td {data}>{e(score_text(entry, scoring, lang))}</td>"
    data += f' data-reason="{reason}" title="{e(reason_text(entry, slug, lang))}"'
    short = e(phrase(lang, f"why_{reason}"))
    if not graded:
        return f'<td class="{entry["status"]}" {data}>{short}</td>'
    return f'<td class="zero" {data}>{e(score_text(entry, scoring, lang))} <span class="reason">{short}</span></td>'


def _summary(sheet: dict, lang: str = "en") -> str:
    scoring, anchors = sheet["scoring"], _anchors(sheet)
    head = "".join(f"<th>{e(slug)}</th>" for slug in sheet["katas"])
    rows = []
    for student, row in sheet["students"].items():
        cells = "".join(_cell(row[slug], slug, scoring, lang) for slug in sheet["katas"])
        mean = student_mean(row)
        rows.append(
            f'<tr><td>{_student_link(student, anchors)}</td>{cells}<td data-mean="{mean:.4f}">{mean:.2f}</td></tr>'
        )
    caption = e(phrase(lang, f"html_caption_{scoring}"))
    scores, student, mean = (e(phrase(lang, key)) for key in ("scores", "student", "mean"))
    return (
        f'<h2>{scores}</h2><table class="scores" data-scoring="{e(scoring)}"><caption>{caption}</caption>'
        f"<tr><th>{student}</th>{head}<th>{mean}</th></tr>{''.join(rows)}</table>"
    )


# -- charts -----------------------------------------------------------------------------------


def _bars(rows: list[tuple[str, float, str, str]], top: float, label_px: int = 120) -> str:
    """An SVG bar chart: one (label, value, value text, data attributes) per row, longest = top."""
    width = label_px + BAR_PX + 120
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{ROW_PX * len(rows) + 4}">']
    for index, (label, value, shown, data) in enumerate(rows):
        y = index * ROW_PX + 2
        length = round(BAR_PX * value / top) if top else 0
        out.append(
            f'<g {data}><text x="0" y="{y + 15}">{e(label)}</text>'
            f'<rect x="{label_px}" y="{y}" width="{length}" height="{ROW_PX - 6}" fill="#4a7"/>'
            f'<text x="{label_px + 5 + length}" y="{y + 15}">{e(shown)}</text></g>'
        )
    out.append("</svg>")
    return "".join(out)


def _histogram(sheet: dict, lang: str = "en") -> str:
    counts = score_histogram(sheet)
    rows = []
    for index, count in enumerate(counts):
        low, high = index * 100 // HISTOGRAM_BINS, (index + 1) * 100 // HISTOGRAM_BINS
        rows.append((f"{low}–{high}%", count, str(count), f'data-bin="{index}" data-students="{count}"'))
    return f"<h2>{e(phrase(lang, 'distribution'))}</h2>" + _bars(rows, max(counts))


# -- per TODO ---------------------------------------------------------------------------------


def _todo_checks(entry: dict) -> dict[int, list[dict]]:
    """{todo: the entry's checks of it}."""
    by_todo: dict[int, list[dict]] = {}
    for check in entry["checks"]:
        if check.get("todo") is not None:
            by_todo.setdefault(check["todo"], []).append(check)
    return by_todo


def todo_pass_rates(sheet: dict) -> dict[str, dict[int, tuple[int, int]]]:
    """{slug: {todo: (files whose every check of the TODO passed, graded files with a check of it)}}."""
    rates: dict[str, dict[int, tuple[int, int]]] = {}
    for slug in sheet["katas"]:
        passed, files = Counter(), Counter()
        for row in sheet["students"].values():
            for todo, checks in _todo_checks(row[slug]).items():
                files[todo] += 1
                passed[todo] += all(check["status"] == "passed" for check in checks)
        rates[slug] = {todo: (passed[todo], files[todo]) for todo in sorted(files)}
    return rates


def unknown_mistakes(sheet: dict) -> dict[str, dict[int, list[str]]]:
    """{slug: {todo: students}}: the graded files with a check of the TODO that did not pass, none of
    whose failed checks of it fits a known misconception: mistakes to read. A file that did not load,
    or ran out of time or crashed in every check (zero_reason), is left out: that is its mistake, not
    the TODO's."""
    found: dict[str, dict[int, list[str]]] = {}
    for slug in sheet["katas"]:
        by_todo: dict[int, list[str]] = {}
        for student, row in sheet["students"].items():
            if zero_reason(row[slug]) in ("load", "timeout", "crashed"):
                continue
            for todo, checks in _todo_checks(row[slug]).items():
                failed = [check for check in checks if check["status"] != "passed"]
                if failed and not any(check.get("misconception") for check in failed):
                    by_todo.setdefault(todo, []).append(student)
        found[slug] = dict(sorted(by_todo.items()))
    return found


def _todo_rates(sheet: dict, lang: str = "en") -> str:
    parts, unknown, anchors = [f"<h2>{e(phrase(lang, 'todo_rates'))}</h2>"], unknown_mistakes(sheet), _anchors(sheet)
    for slug, todos in todo_pass_rates(sheet).items():
        rows = [
            (
                f"TODO {todo}",
                ok / files,
                f"{ok / files:.0%} ({ok}/{files})",
                f'data-kata="{e(slug)}" data-todo="{todo}" data-pass-rate="{ok / files:.4f}" data-files="{files}"',
            )
            for todo, (ok, files) in todos.items()
        ]
        if rows:
            parts.append(f"<h3>{e(slug)}</h3>" + _bars(rows, 1.0))
        for todo, students in unknown[slug].items():
            links = joined(lang, (_student_link(student, anchors) for student in students))
            parts.append(
                f'<p class="unknown" data-kata="{e(slug)}" data-todo="{todo}">'
                f"{e(phrase(lang, 'html_unknown', todo=todo))}{e(phrase(lang, 'colon'))}{links}</p>"
            )
    return "".join(parts)


# -- misconceptions ---------------------------------------------------------------------------


def _title(slug: str, item: str, lang: str) -> str:
    """The misconception's title from the catalogue; its id if the catalogue does not know it."""
    try:
        return localized(get_kata(slug).misconception(item).title, lang)
    except (KeyError, LookupError):
        return item


def misconception_students(sheet: dict) -> dict[tuple[str, str], list[str]]:
    """{(slug, misconception id): the students whose file it explains (the entry's diagnoses)}."""
    found: dict[tuple[str, str], list[str]] = {}
    for student, row in sheet["students"].items():
        for slug, entry in row.items():
            for named in named_in(entry):
                found.setdefault((slug, named), []).append(student)
    return found


def _misconceptions(sheet: dict, lang: str) -> str:
    common = common_misconceptions(sheet, top=None)
    if not common:
        return f"<h2>{e(phrase(lang, 'misconceptions'))}</h2><p>{e(phrase(lang, 'none_diagnosed'))}</p>"
    rows = [
        (
            f"{slug}: {_title(slug, item, lang)}",
            count,
            str(count),
            f'data-kata="{e(slug)}" data-misconception="{e(item)}" data-files="{count}"',
        )
        for slug, item, count in common
    ]
    who, anchors = misconception_students(sheet), _anchors(sheet)
    items = "".join(
        f'<li class="made" data-kata="{e(slug)}" data-misconception="{e(item)}">'
        f"{e(slug)}: {e(_title(slug, item, lang))}{e(phrase(lang, 'colon'))}"
        f"{', '.join(_student_link(student, anchors) for student in who[slug, item])}</li>"
        for slug, item, _ in common
    )
    return (
        f"<h2>{e(phrase(lang, 'misconceptions_files'))}</h2>"
        + _bars(rows, common[0][2], label_px=420)
        + f"<h3>{e(phrase(lang, 'html_made_by'))}</h3><ul>{items}</ul>"
    )


# -- each student -----------------------------------------------------------------------------


def feedback_href(student: str, slug: str) -> str:
    """The relative, URL-quoted link to a student's feedback file."""
    return quote(f"feedback/{file_name(student)}/{slug}.txt")


def _units(entry: dict, weights: dict[str, int], lang: str) -> str:
    """A graded entry's points per unit (TODO 1, ..., the whole function, the input contract) as a table."""
    rows = "".join(
        f'<tr class="unit" data-unit="{e(key)}" data-got="{entry["points"][key]}" data-top="{top}">'
        f"<td>{e(unit_label(key, lang))}</td>"
        f"<td>{e(phrase(lang, 'html_of', got=entry['points'][key], top=top))}</td></tr>"
        for key, top in weights.items()
    )
    unit, points = e(phrase(lang, "html_unit")), e(phrase(lang, "gs_points"))
    return f'<table class="units"><tr><th>{unit}</th><th>{points}</th></tr>{rows}</table>'


def _student_kata(sheet: dict, student: str, slug: str, lang: str, text: str | None) -> str:
    """One kata of a student's section: its score or why there is none, the points per unit, the
    feedback text and the link to its file."""
    entry, scoring = sheet["students"][student][slug], sheet["scoring"]
    reason = zero_reason(entry)
    graded = entry["status"] == "graded"
    shown = score_text(entry, scoring, lang) if graded else phrase(lang, f"why_{reason}")
    parts = [f'<div class="kata" data-kata="{e(slug)}"><h4>{e(slug)}{e(phrase(lang, "colon"))}{e(shown)}</h4>']
    if reason:
        parts.append(f'<p class="reason" data-reason="{reason}">{e(reason_text(entry, slug, lang))}</p>')
    if graded and scoring == "todos":
        parts.append(_units(entry, sheet["points"][slug], lang))
    if text is not None:
        parts.append(f'<pre class="feedback">{e(text)}</pre>')
    href = e(feedback_href(student, slug))
    said = phrase(lang, "html_feedback_file") + phrase(lang, "colon") + f"{slug}.txt"
    parts.append(f'<p><a href="{href}">{e(said)}</a></p></div>')
    return "".join(parts)


def _students(sheet: dict, lang: str, texts: dict[tuple[str, str], str]) -> str:
    sections = [f"<h2>{e(phrase(lang, 'html_students'))}</h2>"]
    for student, anchor in _anchors(sheet).items():
        katas = "".join(
            _student_kata(sheet, student, slug, lang, texts.get((student, slug))) for slug in sheet["katas"]
        )
        sections.append(
            f'<section class="student" id="{anchor}" data-student="{e(student)}"><h3>{e(student)}</h3>{katas}</section>'
        )
    return "".join(sections)


# -- not graded -------------------------------------------------------------------------------


def _not_graded(sheet: dict, lang: str = "en") -> str:
    """Files graded nowhere, and why: a name near a kata's, several of one kata, a name of no kata;
    and the entries of SUBMISSIONS that are not student folders."""
    rows = []
    for student, by_slug in sheet.get("misnamed", {}).items():
        rows += [(student, names, phrase(lang, "html_misnamed", slug=slug)) for slug, names in by_slug.items()]
    for student, by_slug in sheet.get("several", {}).items():
        rows += [(student, names, phrase(lang, "html_several", slug=slug)) for slug, names in by_slug.items()]
    rows += [(student, names, phrase(lang, "html_stray")) for student, names in sheet.get("strays", {}).items()]
    rows += [("", [name], phrase(lang, "html_ignored")) for name in sheet.get("ignored", [])]
    if not rows:
        return ""
    cells = "".join(
        f'<tr class="not-graded"><td>{e(student)}</td><td>{e(joined(lang, names))}</td><td>{e(why)}</td></tr>'
        for student, names, why in rows
    )
    title, student, files, why = (
        e(phrase(lang, key)) for key in ("html_not_graded", "student", "html_files", "html_why")
    )
    return f"<h2>{title}</h2><table><tr><th>{student}</th><th>{files}</th><th>{why}</th></tr>{cells}</table>"
