"""Gradescope: build an autograder zip, and grade one submission inside Gradescope's image.

The zip (`build_zip`) holds the project's own source (pyproject.toml, README.md and its packages),
`setup.sh` (run once, as root, when the image is built: Python >= 3.11, a venv at ROOT/venv, CPU
torch, then this package), `run_autograder` (run per submission) and `gradescope.json` (the
Autograder settings: the slugs, the scoring, the points, the visibilities, the output format, the
language, the feedback's kind), and with a course `course.toml`, its seed (`kata pack` makes one):
the checks then draw their inputs under it, so that values recorded in a student pack earn
nothing. Gradescope unpacks it into ROOT/source, which the sandbox never binds.

`run` grades ROOT/submission with the judge of `kata grade` (batch: one student folder, a kata
file found anywhere in it, in the OS sandbox where bwrap works, else without it, said in "output")
and writes ROOT/results/results.json as Gradescope's autograder specification reads it:

    {"score", "output", "output_format", "test_output_format", "test_name_format", "visibility",
     "stdout_visibility", "tests": [{"name", "score", "max_score", "status", "output"}]}

One test per unit that carries points (each TODO, the whole-function checks where the kata has
them, the input contract): with scoring "todos" worth its points (kata.toml, or --points), with
"checks" one point per check of it. A test's output is its status and points, then that unit's
section of the report alone (terminal.build_unit_report: never reference code; with feedback
"graded", the default, never the corrected code either); for a file that ran no check (not handed
in, not loaded), the feedback's one line, with "did you mean" for a near name. Output formats:
"md" (default; the report in a fenced block, every other text escaped: no raw HTML), "ansi",
"text". ROOT is $KATA_AUTOGRADER_ROOT, /autograder by default. When the grader fails on a file
(batch.error_record), `run` writes no results.json and exits 3: Gradescope then shows an
autograder failure, never a 0 for the student.
"""

import io
import json
import os
import re
import shutil
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from grader.classroom import feedback
from grader.report.results import FEEDBACKS, SCORINGS, GradeResult

ROOT_VARIABLE = "KATA_AUTOGRADER_ROOT"
CONFIG = "gradescope.json"
VISIBILITIES = ("visible", "after_due_date", "after_published", "hidden")
OUTPUT_FORMATS = ("md", "ansi", "text")
TORCH = "torch==2.13.0"
STUDENT = "submission"
COURSE = "course.toml"  # ROOT/source/course.toml: the course seed, never bound in the sandbox

SETUP_SH = f"""#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the image (Ubuntu).
set -euo pipefail
ROOT="${{{ROOT_VARIABLE}:-/autograder}}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -yq bubblewrap || true  # the sandbox; grading goes on without it
PY=python3
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    if apt-get install -yq python3.11 python3.11-venv; then
        PY=python3.11
    else
        apt-get install -yq software-properties-common
        add-apt-repository -y ppa:deadsnakes/ppa
        apt-get update -q
        apt-get install -yq python3.11 python3.11-venv
        PY=python3.11
    fi
else
    apt-get install -yq python3-venv
fi
"$PY" -m venv "$ROOT/venv"
"$ROOT/venv/bin/pip" install --upgrade pip
"$ROOT/venv/bin/pip" install {TORCH} --index-url https://download.pytorch.org/whl/cpu  # CPU torch
"$ROOT/venv/bin/pip" install "$ROOT/source"
"""

RUN_AUTOGRADER = f"""#!/usr/bin/env bash
# Gradescope runs this per submission: grades $ROOT/submission, writes $ROOT/results/results.json.
set -euo pipefail
ROOT="${{{ROOT_VARIABLE}:-/autograder}}"
exec "$ROOT/venv/bin/python" -m grader.classroom.gradescope run
"""


class GradescopeError(ValueError):
    """The zip cannot be built (said in one line)."""


class GraderFailed(RuntimeError):
    """The grader failed on a submitted file (batch.error_record): no results.json, so Gradescope
    shows an autograder failure instead of recording a score."""


@dataclass(frozen=True)
class Autograder:
    """How the autograder grades and shows a submission: what gradescope.json holds."""

    slugs: tuple[str, ...]
    scoring: str = "todos"  # SCORINGS
    visibility: str = "visible"  # the results' (every test's): VISIBILITIES
    stdout_visibility: str = "hidden"  # run_autograder's own output (instructors see it always)
    output_format: str = "md"  # OUTPUT_FORMATS
    lang: str = "en"
    feedback: str = "graded"  # FEEDBACKS
    points: dict = field(default_factory=dict)  # --points: {slug: {key: points}} (gradesheet.check_points)
    course: str = ""  # COURSE when the zip holds a course file

    def problem(self) -> str | None:
        """What is wrong with these settings, in a line; None when nothing is."""
        choices = (
            ("scoring", self.scoring, SCORINGS),
            ("visibility", self.visibility, VISIBILITIES),
            ("stdout visibility", self.stdout_visibility, VISIBILITIES),
            ("output format", self.output_format, OUTPUT_FORMATS),
            ("feedback", self.feedback, FEEDBACKS),
        )
        bad = [
            f"{name} {value!r} (one of {', '.join(allowed)})"
            for name, value, allowed in choices
            if value not in allowed
        ]
        return f"bad {'; '.join(bad)}" if bad else None

    def to_json(self) -> dict:
        """The slugs, then every setting unlike the default (the scoring and visibility always)."""
        data = {"slugs": list(self.slugs), "scoring": self.scoring, "visibility": self.visibility}
        defaults = Autograder(())
        for name in ("stdout_visibility", "output_format", "lang", "feedback", "points", "course"):
            if getattr(self, name) != getattr(defaults, name):
                data[name] = getattr(self, name)
        return data

    @classmethod
    def from_json(cls, data: dict) -> "Autograder":
        return cls(**{**data, "slugs": tuple(data["slugs"])})


# -- the zip ----------------------------------------------------------------------------------


def project_root() -> Path:
    """The folder holding pyproject.toml and the packages (a source checkout or editable install)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file():
        raise GradescopeError(f"no pyproject.toml in {root}: build the zip from a source checkout")
    return root


def source_files(root: Path) -> list[Path]:
    """pyproject.toml, README.md and every file of pyproject's packages, caches left out, in order."""
    import tomllib

    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["packages"]["find"]["include"]
    tops = sorted(p.rstrip("*") for p in patterns)
    files = [root / "pyproject.toml", root / "README.md"]
    for top in tops:
        for path in sorted((root / top).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                files.append(path)
    return files


def build_zip(config: Autograder, out: Path, course: str | None = None) -> list[str]:
    """Write the autograder zip to `out`; return its member names. setup.sh and run_autograder are
    0755. `course`: a course secret (grader.content.seeds), kept in the zip as COURSE for the
    grading to draw its inputs under."""
    from grader.content import catalogue
    from grader.content.seeds import course_text

    for slug in config.slugs:
        catalogue.get_kata(slug)  # UnknownKata names the slug
    if config.problem():
        raise GradescopeError(config.problem())
    root = project_root()
    if course:
        config = Autograder.from_json(config.to_json() | {"course": COURSE})
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in (("setup.sh", SETUP_SH), ("run_autograder", RUN_AUTOGRADER)):
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = 0o100755 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, text)
        archive.writestr(CONFIG, json.dumps(config.to_json(), indent=2, ensure_ascii=False) + "\n")
        if course:
            archive.writestr(COURSE, course_text(course))
        for path in source_files(root):
            archive.write(path, path.relative_to(root).as_posix())
        return archive.namelist()


# -- grading one submission -------------------------------------------------------------------


def autograder_root() -> Path:
    return Path(os.environ.get(ROOT_VARIABLE) or "/autograder")


def grade_submission(submission: Path, config: Autograder, course: Path | None = None) -> dict:
    """results.json for the kata files in `submission` (a folder): see the module's docstring.
    `course`: the course file whose seed the checks draw their inputs under."""
    from grader.classroom import batch, gradesheet
    from grader.content.i18n import joined, phrase
    from grader.run import sandbox

    why = sandbox.problem()
    settings = batch.Settings(sandboxed=why is None, course=str(course) if course else "")
    slugs, lang = list(config.slugs), config.lang
    with tempfile.TemporaryDirectory(prefix="kata-gradescope-") as scratch:
        folder = Path(scratch) / "class"
        folder.mkdir()
        if submission.is_dir():
            shutil.copytree(submission, folder / STUDENT, symlinks=True)
        else:
            (folder / STUDENT).mkdir()
        roster = batch.discover(folder, slugs, settings)
        roster.katas = slugs
        run = batch.run_batch(roster, Path(scratch) / "out", workers=1)
    sheet = gradesheet.build_sheet(roster, run.records, config.scoring, config.points, lang)
    failures = gradesheet.errors(sheet)
    if failures:
        files = joined(lang, (f"{slug}.py" for _, slug, _ in failures))
        raise GraderFailed(phrase(lang, "gs_grader_failed", files=files, why=failures[0][2]))
    blank = [slug for slug in slugs if not sheet["students"][STUDENT][slug]["checks"]]
    counts = _check_counts(blank, settings) if config.scoring == "checks" else {}
    tests, units = [], {}
    for slug in slugs:
        record = run.records.get((STUDENT, slug))
        result = GradeResult.from_json(record["grade"]).in_language(lang) if record else None
        entry = sheet["students"][STUDENT][slug]
        units[slug] = _units(result, entry["points"], sheet["points"][slug], config.scoring, counts.get(slug))
        unsaid = feedback.feedback_text(slug, record, lang, config.feedback, roster.not_graded(STUDENT, slug))
        tests += [_test(slug, unit, result, unsaid, config) for unit in units[slug]]
    files = joined(lang, (f"{slug}.py" for slug in slugs))
    note = phrase(lang, "gs_unsandboxed", files=files, why=why) if why else phrase(lang, "gs_sandboxed", files=files)
    return {
        "score": round(sum(test["score"] for test in tests), 4),
        "output": _overview(note, units, config),
        "output_format": config.output_format,
        "test_output_format": config.output_format,
        "test_name_format": "text",
        "visibility": config.visibility,
        "stdout_visibility": config.stdout_visibility,
        "tests": tests,
    }


@dataclass(frozen=True)
class Unit:
    """What one Gradescope test grades: a points key of a kata (gradesheet.points_key) and its score."""

    key: str  # "todoN", "whole" or "contract"
    score: float
    top: float
    passed: bool  # every check of it passed (and it had some)


def _units(
    result: GradeResult | None, earned: dict[str, int], weights: dict[str, int], scoring: str, counts: dict | None
) -> list[Unit]:
    """The kata's units that carry points: with scoring "todos", each key of `weights` worth more
    than 0 (`earned`: the points the file kept of each, gradesheet.earned_points); with "checks",
    each key with checks, one point a check of it passed.
    `counts` ({key: checks}): how many checks each key has, for a file that ran none (missing,
    not loaded), so that its maximum is the same as everyone's."""
    from grader.classroom.gradesheet import points_key

    by_key: dict[str, list[bool]] = {}
    for check in result.checks if result else []:
        by_key.setdefault(points_key(check), []).append(check.status == "passed")
    units = []
    for key, top in weights.items():
        passed = by_key.get(key, [])
        if scoring == "checks":
            top = len(passed) if passed else (counts or {}).get(key, 0)
            score = sum(passed)
        else:
            score = earned[key]
        if top > 0:
            units.append(Unit(key, score, top, bool(passed) and all(passed)))
    return units


def _check_counts(slugs: list[str], settings) -> dict[str, dict[str, int]]:
    """{slug: {points key: checks}} for katas whose file ran no check: the blank template's checks."""
    from grader.classroom import batch
    from grader.classroom.gradesheet import points_key

    results = batch.grade_targets([(slug, "template") for slug in slugs], 1, settings)
    counts: dict[str, dict[str, int]] = {}
    for (slug, _), result in results.items():
        for check in result.checks:
            key = points_key(check)
            counts.setdefault(slug, {})[key] = counts.get(slug, {}).get(key, 0) + 1
    return counts


def _test(slug: str, unit: Unit, result: GradeResult | None, unsaid: str, config: Autograder) -> dict:
    """The Gradescope test of one unit: its name, score, status and output (that unit's checks
    alone, in config.output_format; the file's one line when it ran none: `unsaid`)."""
    from grader.content.catalogue import get_kata
    from grader.content.i18n import phrase

    kata, lang = get_kata(slug), config.lang
    name = unit_name(kata, unit.key, lang)
    status = "kept" if unit.score == unit.top else "lost"
    if result is None or not result.checks:
        status = "not_handed_in" if result is None else "not_graded"
    head = phrase(lang, "gs_head", status=phrase(lang, f"gs_{status}"), got=_number(unit.score), top=_number(unit.top))
    if result is None or not result.checks:
        body = unsaid
    else:
        from grader.report.terminal import build_unit_report

        number = int(unit.key.removeprefix("todo")) if unit.key.startswith("todo") else unit.key
        body = build_unit_report(result, kata, lang, number, graded=config.feedback == "graded")
    return {
        "name": f"{slug}: {name}",
        "score": unit.score,
        "max_score": unit.top,
        "status": "passed" if unit.passed else "failed",
        "output": render_output(head, body, config.output_format),
    }


def unit_name(kata, key: str, lang: str) -> str:
    """ "TODO 1: its title", "the whole function" or "the input contract", in `lang`."""
    from grader.content.catalogue import localized
    from grader.content.i18n import phrase

    if not key.startswith("todo"):
        return feedback.unit_label(key, lang)
    title = localized(kata.todo(int(key.removeprefix("todo"))).title, lang)
    return f"{feedback.unit_label(key, lang)}{phrase(lang, 'colon')}{title}"


def _number(value: float) -> str:
    return f"{value:g}"


def _overview(note: str, units: dict[str, list[Unit]], config: Autograder) -> str:
    """The results' top-level output: how the files were graded, then each kata's points per unit
    (a Markdown table with output format "md")."""
    from grader.content.i18n import phrase

    lang = config.lang
    lines = {
        slug: feedback.points_line({"points": {u.key: u.score for u in found}}, {u.key: u.top for u in found}, lang)
        for slug, found in units.items()
        if found  # a kata worth no points has no line
    }
    if config.output_format != "md":
        return "\n".join([note, "", *(f"{slug}: {line}" for slug, line in lines.items())]) + "\n"
    rows = [["kata", phrase(lang, "gs_points")], *([slug, line] for slug, line in lines.items())]
    return f"{md_text(note)}\n\n{md_table(rows)}"


# -- output formats ---------------------------------------------------------------------------

_MD_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")


def render_output(head: str, body, output_format: str) -> str:
    """A test's output in `output_format`: "text" (plain, 80 columns), "ansi" (the same with the
    terminal's colours) or "md" (the head as a paragraph, the report in a fenced code block, so
    that no text in it is read as Markdown or HTML). `body`: a rich renderable or plain text."""
    plain = _rendered(body, colour=False)
    if output_format == "md":
        fence = "`" * max(3, _longest_run(plain, "`") + 1)
        return f"**{md_text(head)}**\n\n{fence}text\n{plain.rstrip()}\n{fence}\n"
    text = plain if output_format == "text" else _rendered(body, colour=True)
    return f"{head}\n\n{text.rstrip()}\n"


def _rendered(body, colour: bool) -> str:
    if isinstance(body, str):
        return body
    from rich.console import Console

    from grader.report.styles import THEME

    buffer = io.StringIO()
    options = {"color_system": "standard", "force_terminal": True} if colour else {"color_system": None}
    console = Console(file=buffer, width=80, theme=THEME, highlight=False, **options)
    console.print(body)
    return buffer.getvalue()


def _longest_run(text: str, char: str) -> int:
    longest = run = 0
    for each in text:
        run = run + 1 if each == char else 0
        longest = max(longest, run)
    return longest


def md_text(text: str) -> str:
    """`text` as a Markdown paragraph that reads as itself: every ASCII punctuation mark escaped
    (CommonMark allows a backslash before any), so no name in it becomes a link, emphasis or HTML;
    each line break kept as a hard break."""
    lines = [_MD_PUNCTUATION.sub(r"\\\1", line.strip()) for line in text.strip().splitlines()]
    return "\\\n".join(line for line in lines if line)


def md_table(rows: list[list[str]]) -> str:
    """A GitHub-flavoured Markdown table: the first row is the header; every cell escaped (md_text,
    a `|` too) and on one line."""
    cells = [[md_text(" ".join(cell.split())) for cell in row] for row in rows]
    lines = [f"| {' | '.join(row)} |" for row in cells]
    lines.insert(1, "|" + "---|" * len(rows[0]))
    return "\n".join(lines) + "\n"


def run(root: Path | None = None) -> Path:
    """Grade ROOT/submission with ROOT/source/gradescope.json; write ROOT/results/results.json."""
    root = root or autograder_root()
    config = Autograder.from_json(json.loads((root / "source" / CONFIG).read_text(encoding="utf-8")))
    course = root / "source" / config.course if config.course else None
    results = grade_submission(root / "submission", config, course)
    path = root / "results" / "results.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def main(argv: list[str]) -> int:
    """`python -m grader.classroom.gradescope run` (run_autograder): grade, write results.json.
    SIGINT or SIGTERM ends everything the grading started and exits 130 or 143, in one line."""
    from grader.run.interrupt import exit_status, interruptible

    if argv != ["run"]:
        sys.exit("usage: python -m grader.classroom.gradescope run")
    try:
        with interruptible():
            print(f"wrote {run()}")
    except GraderFailed as failure:
        print(f"run_autograder: {failure}", file=sys.stderr)
        return 3
    except KeyboardInterrupt as stop:
        print("interrupted: the submission was not graded", file=sys.stderr)
        return exit_status(stop)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
