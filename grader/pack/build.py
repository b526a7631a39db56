"""`kata pack`: build what a course hands to students, and what the instructor keeps.

    OUT/pack/         the student pack: `pip install OUT/pack` (offline), then kata start, check,
                      hint, show, quiz, list, reset, watch; no reference in any form
    OUT/course.toml   the course's seed (grader.content.seeds): the instructor grades with it
                      (`kata grade --course OUT/course.toml`), so no recorded value replays into a grade
    OUT/report.txt    per kata: public checks, checks only the instructor's grading runs, variants named

How the public checks work without the reference (grader.judging.recorded):
1. the reference is graded once with every call into it recorded (katas/SLUG/recorded.bin), and
   once more under the course seed: a public check that asks about the same inputs both times has
   fixed inputs (the lesson's own examples, mostly), which the report names, since a file could
   replay their values even under the course;
2. the reference and every misconception variant are graded again with the recording answering
   in the reference's place (in every language), and each variant live; a check is public when
   the reference passes it from the recording and every variant ends it exactly as it does live;
   the others (a check that feeds a learner's output back into the reference, or builds the
   reference's own model) run only where the instructor grades;
3. how each variant ended each public check, in every language, is the pack's fingerprint table
   (katas/SLUG/fingerprints.json), so a mistake is still named; the failing checks' TODOs locate it.

The pack's misconceptions say only the graded explanation (no code, no fix), its hints are those
the instructor chose, its exercises are rendered in every language; everything else of the
reference stays here.
"""

import json
import shutil
import tempfile
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

from grader.content import catalogue
from grader.content.i18n import PHRASES
from grader.content.quiz import has_quiz, reference_answers
from grader.files import atomic_write
from grader.judging.recorded import Book, drawn
from grader.pack import wheel
from grader.report.results import CheckResult

PACK, COURSE, REPORT = "pack", "course.toml", "report.txt"
KATA_FILES = ("kata.toml", "lesson.en.md", "lesson.zh.md", "checks.py", "questions.toml")


class PackError(ValueError):
    """A pack that cannot be built here (the message is one line)."""


@dataclass
class Packed:
    """What `kata pack` found for one kata."""

    slug: str
    public: list[str]
    private: list[str]
    named: int  # variants the pack still names (that fail at least one public check)
    variants: int
    fixed: list[str]  # public checks that ask the reference about the same inputs under any course


def build(out: Path, slugs: list[str], hints: int | None = None, workers: int = 2, lang: str = "en") -> list[Packed]:
    """Build OUT (see the module docstring) for `slugs` (and the katas their references include);
    the report in `lang`."""
    from grader.classroom.batch import Settings, grade_targets

    katas = _with_includes(slugs)
    pack = out / PACK
    if pack.exists():
        raise PackError(f"{pack} exists already: choose another --out or remove it")
    course = out / COURSE
    if not course.exists():
        from grader.content.seeds import new_course, write_course

        out.mkdir(parents=True, exist_ok=True)
        write_course(course, new_course())
    with tempfile.TemporaryDirectory(prefix="kata-pack-") as scratch:
        recordings, coursed = Path(scratch) / "public", Path(scratch) / "course"
        settings = Settings()
        references = [(kata.slug, "reference") for kata in katas]
        grade_targets(references, workers, replace(settings, values=f"record:{recordings}"))
        grade_targets(references, workers, replace(settings, values=f"record:{coursed}", course=str(course.resolve())))
        targets = [(kata.slug, f"misconception:{m.id}") for kata in katas for m in _own(kata)]
        live = grade_targets(targets, workers, settings)
        replayed = grade_targets(
            [(kata.slug, "reference") for kata in katas] + targets,
            workers,
            replace(settings, values=f"replay:{recordings}"),
            every_language=True,
        )
        folder = pack / "katas"
        packed = []
        for kata in katas:
            variants = [f"misconception:{m.id}" for m in _own(kata)]
            public, private = _classify(kata, replayed[kata.slug, "reference"], live, replayed, variants)
            _write_kata(folder / kata.slug, kata, public, private, hints)
            shutil.copy(recordings / f"{kata.slug}.bin", folder / kata.slug / "recorded.bin")
            table = _fingerprints(kata, public, replayed, variants)
            atomic_write(
                folder / kata.slug / "fingerprints.json", json.dumps(table, ensure_ascii=False, sort_keys=True)
            )
            named = sum(any(check.get(v.split(":", 1)[1]) for check in table["en"].values()) for v in variants)
            book = Book.load(recordings / f"{kata.slug}.bin")
            asking = {check for check, entries in book.checks.items() if entries} & set(public)
            fixed = sorted(asking - drawn(book, Book.load(coursed / f"{kata.slug}.bin")))
            packed.append(Packed(kata.slug, public, private, named, len(variants), fixed))
    atomic_write(folder / "pack.json", json.dumps({"katas": [kata.slug for kata in katas]}))
    wheel.write_project(pack)
    atomic_write(out / REPORT, report_text(packed, lang))
    return packed


def report_text(packed: list[Packed], lang: str = "en") -> str:
    """A line per kata: public checks, instructor-only checks, variants named, and the public checks
    whose recorded values a file could replay even under the course (fixed inputs)."""
    from grader.content.i18n import joined, phrase

    def names(checks: list[str]) -> str:
        return joined(lang, checks) or phrase(lang, "pack_none")

    lines = [
        phrase(
            lang,
            "pack_kata",
            slug=item.slug,
            public=len(item.public),
            private=len(item.private),
            names=names(item.private),
            named=item.named,
            variants=item.variants,
            fixed=len(item.fixed),
            fixed_names=names(item.fixed),
        )  # fmt: skip
        for item in packed
    ]
    return "\n".join(lines) + "\n"


def _with_includes(slugs: list[str]) -> list[catalogue.Kata]:
    wanted = {slug: catalogue.get_kata(slug) for slug in slugs}
    for kata in list(wanted.values()):
        wanted |= {included.slug: included for included in kata.includes}
    return [kata for kata in catalogue.all_katas() if kata.slug in wanted]


def _own(kata: catalogue.Kata) -> tuple:
    """Every misconception of the kata, the included katas' too: each is a variant of its reference."""
    return kata.misconceptions


def _ending(check) -> tuple[str, str]:
    return (check.status, check.message)


def _classify(kata, reference, live: dict, replayed: dict, variants: list[str]) -> tuple[list[str], list[str]]:
    """(public, instructor-only) check names (pytest's: test_...)."""
    public, private = [], []
    for check in reference.checks:
        alike = check.status == "passed" and all(
            _ending(_check(live[kata.slug, v], check.name)) == _ending(_check(replayed[kata.slug, v], check.name))
            for v in variants
        )
        (public if alike else private).append(f"test_{check.name}")
    if not reference.checks:
        raise PackError(f"{kata.slug}: the reference gave no result from its recording: {reference.load_error}")
    return public, private


def _check(result, name: str) -> CheckResult:
    """The check `name` of `result`; a grading that gave no result ended it with an error."""
    found = next((check for check in result.checks if check.name == name), None)
    return found if found is not None else CheckResult(name, "", None, "error", "no result")


def _fingerprints(kata, public: list[str], replayed: dict, variants: list[str]) -> dict:
    """{language: {check name: {misconception id: [status, message] or None}}} for the public checks."""
    table: dict = {}
    for lang in PHRASES:
        table[lang] = {}
        for name in public:
            row = {}
            for target in variants:
                check = _check(replayed[kata.slug, target].in_language(lang), name.removeprefix("test_"))
                row[target.split(":", 1)[1]] = None if check.status == "passed" else [check.status, check.message]
            table[lang][name] = row
    return table


def _write_kata(folder: Path, kata: catalogue.Kata, public: list[str], private: list[str], hints: int | None) -> None:
    folder.mkdir(parents=True)
    for name in KATA_FILES:
        source = kata.folder / name
        if source.exists() and name != "kata.toml":
            shutil.copy(source, folder / name)
    meta = tomllib.loads((kata.folder / "kata.toml").read_text(encoding="utf-8"))
    for todo in meta.get("todo", []):
        if hints is not None:
            todo["hints"] = {lang: texts[:hints] for lang, texts in todo["hints"].items()}
    atomic_write(folder / "kata.toml", toml_text(meta))
    atomic_write(folder / "misconceptions.toml", toml_text({"misconception": _graded(kata)}))
    packed = {
        "includes": [included.slug for included in kata.includes],
        "digest": kata.digest,
        "warm_imports": list(kata.warm_imports),
        "templates": {lang: kata.template(lang) for lang in PHRASES},
        "answers": reference_answers(kata.slug) if has_quiz(kata.slug) else {},
        "public": public,
        "private": private,
    }
    atomic_write(folder / "pack.json", json.dumps(packed, ensure_ascii=False, indent=1))


def _graded(kata: catalogue.Kata) -> list[dict]:
    """The kata's own misconceptions as a student sees them: no edit, the graded title and
    explanation only (catalogue.Misconception)."""
    path = kata.folder / "misconceptions.toml"
    entries = tomllib.loads(path.read_text(encoding="utf-8")).get("misconception", []) if path.exists() else []
    missing = [entry["id"] for entry in entries if "graded" not in entry]
    if missing:
        raise PackError(f"{kata.slug}: misconceptions without a graded explanation: {', '.join(missing)}")
    return [
        {
            "id": entry["id"],
            "todo": entry["todo"],
            "title": entry.get("graded_title", entry["title"]),
            "explanation": entry["graded"],
        }
        | ({"hint": entry["hint"]} if "hint" in entry else {})
        for entry in entries
    ]


def toml_text(data: dict) -> str:
    """`data` as TOML: tables, arrays of tables, strings, numbers, booleans and lists of them."""
    lines: list[str] = []
    _table(data, [], lines)
    return "\n".join(lines).strip() + "\n"


def _table(data: dict, path: list[str], lines: list[str]) -> None:
    simple = {key: value for key, value in data.items() if not _is_tables(value) and not isinstance(value, dict)}
    for key, value in simple.items():
        lines.append(f"{_key(key)} = {_value(value)}")
    for key, value in data.items():
        if isinstance(value, dict):
            lines += ["", f"[{'.'.join(map(_key, [*path, key]))}]"]
            _table(value, [*path, key], lines)
        elif _is_tables(value):
            for item in value:
                lines += ["", f"[[{'.'.join(map(_key, [*path, key]))}]]"]
                _table(item, [*path, key], lines)


def _is_tables(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(item, dict) for item in value)


def _key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() and key.isascii() else json.dumps(key)


def _value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise PackError(f"cannot write {type(value).__name__} as TOML")
