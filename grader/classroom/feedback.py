"""Feedback to hand back: each student's report for each kata, as `kata check` would have shown it.

    OUT/feedback/<student>/<slug>.txt   the points per unit (score_line), then the report in plain text, 80 columns
    OUT/feedback/<student>/<slug>.md    the same, in a Markdown code block under a title

`feedback_texts` builds every text once; `write_feedback` writes them and the class page
(report_html) shows them in each student's section.

The report names the mistake, where it lies, the failing checks with their call, expected and got
values, and the next step, in the language asked for (the record holds the checks' messages in
every language: GradeResult.in_language); it never holds reference code. With feedback "graded"
(the default) a misconception is told by its graded text, which never gives the corrected code, and
the next step never points to `kata solution`; "full" gives `kata check`'s text (report.terminal). A file whose
grading gave no checks (it crashed or hung while loading, was refused), one that ran out of time
or crashed alike in every check, and one not handed in get one line saying so (and a second, "did you mean", for a file whose name is near the kata's). <student> is the display name, cut and hashed if very long (names.file_name).
"""

import io
from pathlib import Path

from grader.classroom.names import file_name
from grader.content import catalogue
from grader.content.i18n import joined
from grader.files import atomic_write
from grader.report.results import GradeResult

MISSING = {
    "en": "no {slug}.py in your folder: nothing was graded",
    "zh": "你的文件夹里没有 {slug}.py：没有可评分的内容",
}
MISNAMED = {
    "en": "did you mean {slug}.py? Not graded, as it is named: {names}",
    "zh": "是不是应当叫 {slug}.py？按现在的名字没有评分：{names}",
}
SEVERAL = {
    "en": "several {slug}.py in your folder, so none was graded: {names}; hand in one",
    "zh": "你的文件夹里有多个 {slug}.py，所以都没有评分：{names}；请只交一个",
}
NOT_GRADED = {"en": "{slug}.py could not be graded: {why}", "zh": "{slug}.py 无法评分：{why}"}
EVERY_CHECK = {
    "en": "{slug}.py failed every check the same way: {why}",
    "zh": "{slug}.py 的每项检查都以同样方式失败：{why}",
}


def feedback_text(
    slug: str, record: dict | None, lang: str, feedback: str = "graded", found: dict | None = None
) -> str:
    """The plain-text feedback on one student's file for kata `slug` (None: not handed in; then
    `found` may say why: Roster.not_graded);
    `feedback`: "graded" or "full" (see the module docstring)."""
    if record is None:
        found = found or {}
        if found.get("several"):
            return SEVERAL.get(lang, SEVERAL["en"]).format(slug=slug, names=joined(lang, found["several"])) + "\n"
        text = MISSING.get(lang, MISSING["en"]).format(slug=slug) + "\n"
        if found.get("misnamed"):
            text += MISNAMED.get(lang, MISNAMED["en"]).format(slug=slug, names=joined(lang, found["misnamed"])) + "\n"
        return text
    result = GradeResult.from_json(record["grade"]).in_language(lang)
    if not result.checks:
        why = " ".join((result.load_error or "no result").split())
        return NOT_GRADED.get(lang, NOT_GRADED["en"]).format(slug=slug, why=why) + "\n"
    if _stopped_alike(result):  # it hung or crashed in every check: one line says so
        why = result.checks[0].message.strip().splitlines()[0]
        return EVERY_CHECK.get(lang, EVERY_CHECK["en"]).format(slug=slug, why=why) + "\n"
    from rich.console import Console

    from grader.report.styles import THEME
    from grader.report.terminal import build_report

    buffer = io.StringIO()
    console = Console(file=buffer, width=80, theme=THEME, color_system=None, highlight=False)
    console.print(build_report(result, catalogue.get_kata(slug), lang, f"{slug}.py", graded=feedback == "graded"))
    return buffer.getvalue()


def score_line(sheet: dict, student: str, slug: str, lang: str) -> str:
    """The student's score on the kata, as the grade sheet counts it: points per unit (scoring
    "todos"), or the checks passed (scoring "checks")."""
    from grader.content.i18n import phrase

    entry = sheet["students"][student][slug]
    if sheet["scoring"] == "checks":
        checks = entry.get("checks") or []
        return phrase(lang, "fb_checks", got=sum(c["status"] == "passed" for c in checks), top=len(checks))
    return points_line(entry, sheet["points"][slug], lang)


def points_line(entry: dict, weights: dict[str, int], lang: str) -> str:
    """ "Points: 1 of 2 (TODO 1: 0 of 1; the input contract: 1 of 1)": a grade sheet entry's points per unit."""
    from grader.content.i18n import phrase

    earned = entry.get("points") or dict.fromkeys(weights, 0)
    parts = [
        phrase(lang, "fb_unit", unit=unit_label(key, lang), got=earned[key], top=top) for key, top in weights.items()
    ]
    total = phrase(lang, "fb_points", got=sum(earned.values()), top=sum(weights.values()))
    return total + phrase(lang, "fb_units", units=phrase(lang, "fb_separator").join(parts))


def unit_label(key: str, lang: str) -> str:
    """A points key (gradesheet.points_key) as the points line names it, in `lang`: "TODO 1", "the
    whole function", "the input contract"."""
    from grader.content.i18n import phrase

    return phrase(lang, f"gs_{key}") if key in ("whole", "contract") else f"TODO {key.removeprefix('todo')}"


def _stopped_alike(result: GradeResult) -> bool:
    """Every check ran out of time, or every one crashed with the same first line of message."""
    statuses = {check.status for check in result.checks}
    firsts = {(check.message.strip().splitlines() or [""])[0] for check in result.checks}
    return statuses == {"timeout"} or (statuses == {"error"} and len(firsts) == 1)


def markdown(student: str, slug: str, text: str) -> str:
    """`text` in a fenced block longer than any run of backticks in it, under a title."""
    fence = "`" * max(3, _longest_backtick_run(text) + 1)
    return f"# {slug}: {student}\n\n{fence}text\n{text.rstrip()}\n{fence}\n"


def _longest_backtick_run(text: str) -> int:
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return longest


def feedback_texts(
    roster, records: dict, lang: str, feedback: str = "graded", sheet: dict | None = None
) -> dict[tuple[str, str], str]:
    """{(student, slug): the feedback text} for every student and kata of `roster` (the Roster, which
    also says why a kata was graded nowhere), in `lang` (`feedback`: "graded" or "full"); with
    `sheet`, the grade sheet, the text starts with the points (score_line). What write_feedback
    writes and the class page shows."""
    texts = {}
    for student in roster.students:
        for slug in roster.katas:
            text = feedback_text(slug, records.get((student, slug)), lang, feedback, roster.not_graded(student, slug))
            if sheet is not None:
                text = score_line(sheet, student, slug, lang) + "\n\n" + text
            texts[student, slug] = text
    return texts


def write_feedback(out: Path, texts: dict[tuple[str, str], str]) -> list[Path]:
    """Write each text of feedback_texts as OUT/feedback/<student>/<slug>.txt and .md; returns the
    paths written."""
    written = []
    for (student, slug), text in texts.items():
        folder = out / "feedback" / file_name(student)
        for path, content in ((folder / f"{slug}.txt", text), (folder / f"{slug}.md", markdown(student, slug, text))):
            atomic_write(path, content)
            written.append(path)
    return written
