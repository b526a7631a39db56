"""Gradescope: build an autograder zip, and grade one submission inside Gradescope's image.

The zip (`build_zip`) holds the project's own source (pyproject.toml, README.md and its packages),
`setup.sh` (run once, as root, when the image is built: Python >= 3.11, a venv at ROOT/venv, CPU
torch, then this package), `run_autograder` (run per submission) and `gradescope.json` (the
slugs, the scoring, the visibility; the language and the feedback's kind where not the default),
and with a course `course.toml`, its seed (`kata pack` makes one): the checks then draw their
inputs under it, so that values recorded in a student pack earn nothing. Gradescope unpacks it
into ROOT/source, which the sandbox never binds.

`run` grades ROOT/submission/SLUG.py for each slug with the judge of `kata grade` (batch: one
student folder, in the OS sandbox where bwrap works, else without it, said in "output") and
writes ROOT/results/results.json: {"score", "tests": [{"name", "score", "max_score", "output",
"visibility"}], "output"}. One test per TODO, the whole-function checks (where the kata has them)
and the input contract (scoring "todos": each key's points, gradesheet.earned_points) or per check
(scoring "checks": 1 each); every test's output is the kata's feedback text (feedback.feedback_text:
never reference code; with feedback "graded", the default, never the corrected code either). ROOT
is $KATA_AUTOGRADER_ROOT, /autograder by default. When the grader fails on a file
(batch.error_record), `run` writes no results.json and exits 3: Gradescope then shows an
autograder failure, never a 0 for the student.
"""

import json
import os
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

from grader.report.results import FEEDBACKS, SCORINGS

ROOT_VARIABLE = "KATA_AUTOGRADER_ROOT"
CONFIG = "gradescope.json"
VISIBILITIES = ("visible", "after_due_date", "after_published", "hidden")
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


def build_zip(
    slugs: list[str],
    out: Path,
    scoring: str = "todos",
    visibility: str = "visible",
    lang: str = "en",
    feedback_kind: str = "graded",
    course: str | None = None,
) -> list[str]:
    """Write the autograder zip to `out`; return its member names. setup.sh and run_autograder are 0755.
    `lang`: the language of the feedback and the results' texts; `feedback_kind`: the feedback's kind
    (FEEDBACKS); `course`: a course secret (grader.content.seeds), kept in the zip as COURSE for the
    grading to draw its inputs under."""
    from grader.content import catalogue
    from grader.content.seeds import course_text

    for slug in slugs:
        catalogue.get_kata(slug)  # UnknownKata names the slug
    if scoring not in SCORINGS or visibility not in VISIBILITIES or feedback_kind not in FEEDBACKS:
        raise GradescopeError(f"bad scoring {scoring!r}, visibility {visibility!r} or feedback {feedback_kind!r}")
    root = project_root()
    config = {"slugs": slugs, "scoring": scoring, "visibility": visibility}
    config |= {"lang": lang} if lang != "en" else {}
    config |= {"feedback": feedback_kind} if feedback_kind != "graded" else {}
    config |= {"course": COURSE} if course else {}
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in (("setup.sh", SETUP_SH), ("run_autograder", RUN_AUTOGRADER)):
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = 0o100755 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, text)
        archive.writestr(CONFIG, json.dumps(config, indent=2) + "\n")
        if course:
            archive.writestr(COURSE, course_text(course))
        for path in source_files(root):
            archive.write(path, path.relative_to(root).as_posix())
        return archive.namelist()


# -- grading one submission -------------------------------------------------------------------


def autograder_root() -> Path:
    return Path(os.environ.get(ROOT_VARIABLE) or "/autograder")


def grade_submission(
    submission: Path,
    slugs: list[str],
    scoring: str,
    visibility: str,
    lang: str = "en",
    feedback_kind: str = "graded",
    course: Path | None = None,
) -> dict:
    """results.json for the kata files in `submission` (a folder): see the module's docstring.
    `course`: the course file whose seed the checks draw their inputs under."""
    from grader.classroom import batch, feedback, gradesheet
    from grader.content.i18n import phrase
    from grader.run import sandbox

    why = sandbox.problem()
    settings = batch.Settings(sandboxed=why is None, course=str(course) if course else "")
    with tempfile.TemporaryDirectory(prefix="kata-gradescope-") as scratch:
        folder = Path(scratch) / "class"
        folder.mkdir()
        if submission.is_dir():
            shutil.copytree(submission, folder / STUDENT, symlinks=True)
        else:
            (folder / STUDENT).mkdir()
        roster = batch.discover(folder, slugs, settings)
        roster.katas = list(slugs)
        run = batch.run_batch(roster, Path(scratch) / "out", workers=1)
    sheet = gradesheet.build_sheet(roster, run.records, scoring, lang=lang)
    failures = gradesheet.errors(sheet)
    if failures:
        files = ", ".join(f"{slug}.py" for _, slug, _ in failures)
        raise GraderFailed(phrase(lang, "gs_grader_failed", files=files, why=failures[0][2]))
    tests = []
    for slug in slugs:
        record = run.records.get((STUDENT, slug))
        text = feedback.feedback_text(slug, record, lang, feedback_kind, roster.not_graded(STUDENT, slug))
        entry = sheet["students"][STUDENT][slug]
        tests += _tests(slug, entry, sheet["points"][slug], scoring, text, visibility, lang)
    files = ", ".join(f"{slug}.py" for slug in slugs)
    note = phrase(lang, "gs_unsandboxed", files=files, why=why) if why else phrase(lang, "gs_sandboxed", files=files)
    return {
        "score": round(sum(test["score"] for test in tests), 4),
        "tests": tests,
        "output": note + "\n",
    }


def _tests(
    slug: str, entry: dict, weights: dict[str, int], scoring: str, text: str, visibility: str, lang: str = "en"
) -> list[dict]:
    """Gradescope tests for one kata: per points key (TODO N, the whole function, the input contract:
    their points) or per check (1 each); their names and outputs in `lang`."""
    from grader.content.catalogue import get_kata, localized
    from grader.content.i18n import phrase

    def test(name: str, score: float, top: float, status: str) -> dict:
        return {
            "name": f"{slug}: {name}",
            "score": score,
            "max_score": top,
            "output": f"{phrase(lang, 'gs_' + status.replace(' ', '_'))}\n\n{text}",
            "visibility": visibility,
        }

    missing = entry["status"] == "missing"
    if scoring == "checks":
        if missing or not entry["checks"]:
            return [test(phrase(lang, "gs_every_check"), 0, 1, "not graded")]
        return [test(c["title"] or c["name"], int(c["status"] == "passed"), 1, c["status"]) for c in entry["checks"]]
    names = {
        f"todo{todo.number}": f"TODO {todo.number}: {localized(todo.title, lang)}" for todo in get_kata(slug).todos
    }
    names |= {"whole": phrase(lang, "gs_whole"), "contract": phrase(lang, "gs_contract")}
    out = []
    for key, top in weights.items():
        earned = entry["points"][key]
        out.append(test(names[key], earned, top, "not handed in" if missing else "kept" if earned == top else "lost"))
    return out


def run(root: Path | None = None) -> Path:
    """Grade ROOT/submission with ROOT/source/gradescope.json; write ROOT/results/results.json."""
    root = root or autograder_root()
    config = json.loads((root / "source" / CONFIG).read_text(encoding="utf-8"))
    course = root / "source" / config["course"] if "course" in config else None
    results = grade_submission(
        root / "submission",
        config["slugs"],
        config["scoring"],
        config["visibility"],
        config.get("lang", "en"),
        config.get("feedback", "graded"),
        course,
    )
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
