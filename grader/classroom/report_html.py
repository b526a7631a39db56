"""OUT/report.html: a class's grades as one self-contained page (inline CSS and SVG, no script).

    summary      students x katas: each score, passed/total checks, the student's mean
    histogram    students' mean scores in HISTOGRAM_BINS bins of [0, 1], as SVG bars
    per TODO     pass rate of each kata's TODO: graded files whose every check of that TODO
                 passed / graded files with a check of it
    misconceptions  files each diagnosis explains, with the catalogue's title, as SVG bars
    feedback     per student, links to feedback/<file_name(student)>/<slug>.txt

`report_html(sheet)` reads only the sheet (grades.json); every name and text in it is escaped.
Numbers carry data attributes (data-score, data-students, data-pass-rate, data-files) for tests.
"""

import html
from collections import Counter
from pathlib import Path
from urllib.parse import quote

from grader.classroom.gradesheet import HISTOGRAM_BINS, common_misconceptions, score_histogram, student_mean
from grader.classroom.names import file_name
from grader.content.catalogue import get_kata, localized
from grader.content.i18n import phrase

BAR_PX = 300  # the longest bar, in pixels
ROW_PX = 22

CSS = """
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin-bottom: 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
td.missing { color: #999; }
td.error { color: #b00; font-weight: bold; }
svg text { font-size: 12px; font-family: sans-serif; }
"""


def e(value) -> str:
    """`value` as text HTML can hold, quotes escaped too (for attributes)."""
    return html.escape(str(value), quote=True)


def report_html(sheet: dict, lang: str = "en") -> str:
    """The whole page as a string."""
    title = e(phrase(lang, "html_title"))
    parts = [
        f'<!DOCTYPE html>\n<html lang="{e(lang)}"><head><meta charset="utf-8">',
        f"<title>{title}</title><style>{CSS}</style></head><body>",
        f"<h1>{title}</h1>",
        _summary(sheet, lang),
        _histogram(sheet, lang),
        _todo_rates(sheet, lang),
        _misconceptions(sheet, lang),
        _feedback_links(sheet, lang),
        _not_graded(sheet, lang),
        "</body></html>\n",
    ]
    return "\n".join(parts)


def write_report(sheet: dict, out: Path, lang: str = "en") -> Path:
    """Write OUT/report.html atomically; returns its path."""
    from grader.files import atomic_write

    path = out / "report.html"
    atomic_write(path, report_html(sheet, lang))
    return path


def _summary(sheet: dict, lang: str = "en") -> str:
    head = "".join(f"<th>{e(slug)}</th>" for slug in sheet["katas"])
    rows = []
    for student, row in sheet["students"].items():
        cells = []
        for slug in sheet["katas"]:
            entry = row[slug]
            if entry["status"] == "missing":
                cells.append(f'<td class="missing" data-score="0.0000">{e(phrase(lang, "missing"))}</td>')
                continue
            if entry["status"] == "error":  # no grade: the grader failed on it
                cells.append(f'<td class="error" title="{e(entry["error"])}">{e(phrase(lang, "grader_error"))}</td>')
                continue
            total = entry["passed"] + entry["failed"]
            cells.append(
                f'<td data-score="{entry["score"]:.4f}" data-passed="{entry["passed"]}" data-checks="{total}">'
                f"{entry['score']:.2f} ({entry['passed']}/{total})</td>"
            )
        mean = student_mean(row)
        rows.append(f'<tr><td>{e(student)}</td>{"".join(cells)}<td data-mean="{mean:.4f}">{mean:.2f}</td></tr>')
    scores, note, student, mean = (e(phrase(lang, key)) for key in ("scores", "scores_note", "student", "mean"))
    return (
        f"<h2>{scores}</h2><p>{note}</p><table><tr><th>{student}</th>{head}<th>{mean}</th></tr>{''.join(rows)}</table>"
    )


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


def todo_pass_rates(sheet: dict) -> dict[str, dict[int, tuple[int, int]]]:
    """{slug: {todo: (files whose every check of the TODO passed, graded files with a check of it)}}."""
    rates: dict[str, dict[int, tuple[int, int]]] = {}
    for slug in sheet["katas"]:
        passed, files = Counter(), Counter()
        for row in sheet["students"].values():
            by_todo: dict[int, bool] = {}
            for check in row[slug]["checks"]:
                if check.get("todo") is not None:
                    by_todo[check["todo"]] = by_todo.get(check["todo"], True) and check["status"] == "passed"
            for todo, ok in by_todo.items():
                files[todo] += 1
                passed[todo] += ok
        rates[slug] = {todo: (passed[todo], files[todo]) for todo in sorted(files)}
    return rates


def _todo_rates(sheet: dict, lang: str = "en") -> str:
    parts = [f"<h2>{e(phrase(lang, 'todo_rates'))}</h2>"]
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
    return "".join(parts)


def _title(slug: str, item: str, lang: str) -> str:
    """The misconception's title from the catalogue; its id if the catalogue does not know it."""
    try:
        return localized(get_kata(slug).misconception(item).title, lang)
    except (KeyError, LookupError):
        return item


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
    return f"<h2>{e(phrase(lang, 'misconceptions_files'))}</h2>" + _bars(rows, common[0][2], label_px=420)


def feedback_href(student: str, slug: str) -> str:
    """The relative, URL-quoted link to a student's feedback file."""
    return quote(f"feedback/{file_name(student)}/{slug}.txt")


def _feedback_links(sheet: dict, lang: str = "en") -> str:
    rows = []
    for student, row in sheet["students"].items():
        links = " ".join(f'<a href="{e(feedback_href(student, slug))}">{e(slug)}</a>' for slug in row)
        rows.append(f"<tr><td>{e(student)}</td><td>{links}</td></tr>")
    title, student, feedback = (e(phrase(lang, key)) for key in ("feedback_title", "student", "feedback"))
    return f"<h2>{title}</h2><table><tr><th>{student}</th><th>{feedback}</th></tr>{''.join(rows)}</table>"


def _not_graded(sheet: dict, lang: str = "en") -> str:
    """Files graded nowhere, and why: a name near a kata's, several of one kata, a name of no kata."""
    rows = []
    for student, by_slug in sheet.get("misnamed", {}).items():
        rows += [(student, names, phrase(lang, "html_misnamed", slug=slug)) for slug, names in by_slug.items()]
    for student, by_slug in sheet.get("several", {}).items():
        rows += [(student, names, phrase(lang, "html_several", slug=slug)) for slug, names in by_slug.items()]
    rows += [(student, names, phrase(lang, "html_stray")) for student, names in sheet.get("strays", {}).items()]
    if not rows:
        return ""
    cells = "".join(
        f'<tr class="not-graded"><td>{e(student)}</td><td>{e(", ".join(names))}</td><td>{e(why)}</td></tr>'
        for student, names, why in rows
    )
    title, student, files, why = (
        e(phrase(lang, key)) for key in ("html_not_graded", "student", "html_files", "html_why")
    )
    return f"<h2>{title}</h2><table><tr><th>{student}</th><th>{files}</th><th>{why}</th></tr>{cells}</table>"
