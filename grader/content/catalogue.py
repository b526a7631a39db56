"""The kata catalogue: metadata, lessons and misconceptions read from `katas/<slug>/`.

Per kata folder:
- kata.toml: title (en/zh), order, difficulty, prerequisites, functions, source, whole_points
  (default 1: what the whole-function checks are worth together), and one [[todo]] per TODO number
  of its reference (title, guidance and hints, each en/zh; points, default 1);
- lesson.en.md, lesson.zh.md: the lesson;
- misconceptions.toml: [[misconception]] entries, each a textual edit of the reference;
- checks.py: the graded checks (pytest tests).

A kata that includes another kata's reference inherits that kata's TODOs and misconceptions.
Reading the catalogue never imports torch.

In a student pack (`kata pack`, grader.pack) there is no reference: each kata folder holds a
pack.json instead (`Kata.packed`: the exercise in each language, what the reference includes and
imports, the digest, the public and instructor-only checks, a quiz's answers), the recorded
expected values (recorded.bin) and the variants' fingerprints (fingerprints.json), and its
misconceptions.toml has neither `find` nor `replace`. `in_pack()` says which this is.
"""

import ast
import hashlib
import re
import tomllib
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import NamedTuple

from grader.content import render

KATAS_DIR = Path(__file__).resolve().parents[2] / "katas"
DIFFICULTIES = ("easy", "medium", "hard")
POINTS_LINE = re.compile(rb"(?m)^[ \t]*(whole_)?points[ \t]*=.*\n?")  # whole_points and a [[todo]]'s points


class UnknownKata(LookupError):
    """A slug that names no kata; the message suggests the closest ones."""


class NoReference(LookupError):
    """What needs the reference, asked of a student pack (which has none)."""


@cache
def in_pack() -> bool:
    """Whether this installation is a student pack (its katas folder holds pack.json)."""
    return (KATAS_DIR / "pack.json").is_file()


def localized(texts: dict, lang: str):
    """The text in `lang`, falling back to English."""
    return texts.get(lang) or texts["en"]


class Todo(NamedTuple):
    number: int
    title: dict[str, str]
    guidance: dict[str, list[str]]
    hints: dict[str, list[str]]
    points: int = 1  # what the TODO is worth in `kata grade --scoring todos`


class Misconception(NamedTuple):
    """A known mistake: a textual edit of the reference (`find` -> `replace`) and what a learner hears.

    `title` and `explanation` are what `kata check` says (they may show code and the fix);
    `graded` (and `graded_title`, where the title shows code) is what graded feedback says: what
    went wrong, in words, never the corrected code (`kata grade`, Gradescope, the student pack).
    `hint`: the number of the hint of its TODO that `kata hint` shows first once it is named
    (0: the TODO's hints in their order).
    """

    id: str
    todo: int
    title: dict[str, str]
    explanation: dict[str, str]
    find: str
    replace: str
    graded: dict[str, str] = {}
    graded_title: dict[str, str] = {}
    hint: int = 0

    def title_in(self, lang: str, graded: bool = False) -> str:
        """The title in `lang`; `graded`: the graded title where there is one."""
        return localized((graded and self.graded_title) or self.title, lang)

    def explanation_in(self, lang: str, graded: bool = False) -> str:
        """The explanation in `lang`; `graded`: the graded one (a pack's explanation already is)."""
        return localized((graded and self.graded) or self.explanation, lang)


@dataclass(frozen=True)
class Kata:
    slug: str
    order: int
    difficulty: str
    title: dict[str, str]
    prerequisites: tuple[str, ...]
    functions: tuple[str, ...]
    source: str
    own_todos: tuple[Todo, ...]
    whole_points: int = 1  # what the whole-function checks are worth together in `kata grade --scoring todos`

    @cached_property
    def includes(self) -> tuple["Kata", ...]:
        """The katas whose references this kata's reference includes."""
        slugs = self.packed["includes"] if self.packed else render.included_modules(render.read_reference(self.slug))
        return tuple(_load_kata(KATAS_DIR / slug) for slug in slugs)

    @cached_property
    def packed(self) -> dict | None:
        """What a student pack holds in the reference's place (see the module docstring); None outside one."""
        import json

        path = self.folder / "pack.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None

    @cached_property
    def todos(self) -> tuple[Todo, ...]:
        """Every TODO of the rendered file, its included katas' first."""
        todos = [todo for kata in self.includes for todo in kata.todos] + list(self.own_todos)
        return tuple(sorted(todos, key=lambda todo: todo.number))

    @cached_property
    def misconceptions(self) -> tuple[Misconception, ...]:
        """The known misconceptions: the included katas' first, then this kata's own."""
        path = self.folder / "misconceptions.toml"
        entries = _read_toml(path).get("misconception", []) if path.exists() else []
        own = [
            Misconception(
                m["id"],
                m["todo"],
                m["title"],
                m["explanation"],
                m.get("find", ""),
                m.get("replace", ""),
                m.get("graded", {}),
                m.get("graded_title", {}),
                m.get("hint", 0),
            )
            for m in entries
        ]
        return tuple(m for kata in self.includes for m in kata.misconceptions) + tuple(own)

    @cached_property
    def has_whole_checks(self) -> bool:
        """Whether checks.py marks a check `@pytest.mark.whole` (read, not imported: no torch)."""
        tree = ast.parse(self.checks_path.read_text(encoding="utf-8"))
        marks = (node for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr == "whole")
        return any(ast.unparse(node) == "pytest.mark.whole" for node in marks)

    def points_problems(self) -> list[str]:
        """One line per bad points value in kata.toml: `whole_points` and each own TODO's `points` must
        be whole numbers >= 0, and `whole_points` is given only where a check is `@pytest.mark.whole`."""
        values = [("whole_points", self.whole_points)]
        values += [(f"TODO {todo.number}'s points", todo.points) for todo in self.own_todos]
        where = f"katas/{self.slug}/kata.toml"
        problems = [
            f"{where}: {name} must be a whole number >= 0, not {value!r}"
            for name, value in values
            if type(value) is not int or value < 0
        ]
        if "whole_points" in _read_toml(self.folder / "kata.toml") and not self.has_whole_checks:
            problems.append(f"{where}: whole_points is given, but no check is @pytest.mark.whole")
        return problems

    @cached_property
    def digest(self) -> str:
        """A digest of what grading against this kata depends on: its rendered reference and the
        checks, metadata and misconceptions of it and of the katas it includes. `whole_points` and a
        TODO's `points` are left out: `kata grade` scores stored results with them and never grades
        again for them. A pack's kata keeps the digest it had where it was packed."""
        if self.packed:
            return self.packed["digest"]
        hasher = hashlib.sha256(self.solution().encode())
        for kata in (*self.includes, self):
            for name in ("checks.py", "kata.toml", "misconceptions.toml"):
                path = kata.folder / name
                text = path.read_bytes() if path.exists() else b""
                hasher.update(POINTS_LINE.sub(b"", text) if name == "kata.toml" else text)
        return hasher.hexdigest()[:16]

    @property
    def folder(self) -> Path:
        return KATAS_DIR / self.slug

    @property
    def checks_path(self) -> Path:
        return self.folder / "checks.py"

    def lesson(self, lang: str) -> str:
        path = self.folder / f"lesson.{lang}.md"
        if not path.exists():
            path = self.folder / "lesson.en.md"
        return path.read_text(encoding="utf-8")

    def todo(self, number: int) -> Todo:
        for todo in self.todos:
            if todo.number == number:
                return todo
        raise KeyError(number)

    def misconception(self, misconception_id: str) -> Misconception:
        for item in self.misconceptions:
            if item.id == misconception_id:
                return item
        raise KeyError(misconception_id)

    def solution(self) -> str:
        if in_pack():
            raise NoReference(f"a student pack has no reference for {self.slug}")
        return render.solution_source(self.slug)

    def template(self, lang: str = "en", filled: bool = False) -> str:
        """The exercise a learner starts from; `filled`: with the reference's code in every TODO."""
        from grader.content.i18n import phrase

        if self.packed and not filled:
            return localized(self.packed["templates"], lang)
        steps = {todo.number: (localized(todo.title, lang), localized(todo.guidance, lang)) for todo in self.todos}
        header = [
            f"Post-Training Katas · {self.slug} · {localized(self.title, lang)}",
            phrase(lang, "template_fill", slug=self.slug),
            phrase(lang, "template_stuck", slug=self.slug),
            "",
        ]
        return render.template_source(render.translate(self.solution(), self.texts(lang)), steps, header, filled)

    def docstrings(self, lang: str) -> dict:
        """The reference's docstrings in `lang` (and, under "comments", its comments): {} in English;
        katas/SLUG/docstrings.LANG.toml over those of the katas it includes (their code is in its
        reference too)."""
        if lang == "en":
            return {}
        texts: dict = {"comments": {}}
        for kata in self.includes:
            included = kata.docstrings(lang)
            texts |= {key: value for key, value in included.items() if key not in ("module", "comments")}
            texts["comments"] |= included.get("comments", {})
        path = self.folder / f"docstrings.{lang}.toml"
        own = _read_toml(path) if path.exists() else {}
        return texts | own | {"comments": texts["comments"] | own.get("comments", {})}

    def texts(self, lang: str) -> dict:
        """What the reference reads as in `lang` (render.translated_spans): its docstrings and comments
        (`docstrings`), and under "todos" each TODO's title, as the exercise gives it; {} in English.
        The exercise, the solution and the drills all show the reference through it."""
        if lang == "en":
            return {}
        return self.docstrings(lang) | {"todos": {todo.number: localized(todo.title, lang) for todo in self.todos}}

    @cached_property
    def warm_imports(self) -> tuple[str, ...]:
        """The reference's top-level import statements, for the contestants' warm process to run once
        (so that a contestant loading `from transformers import GPT2LMHeadModel` finds it imported)."""
        if self.packed:
            return tuple(self.packed["warm_imports"])
        tree = ast.parse(self.solution())
        return tuple(ast.unparse(node) for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom))

    def missing_packages(self) -> list[str]:
        """The top-level packages the reference imports that this Python cannot find: a student pack
        brings the grader's own dependencies and torch is installed beside it, but toy_grpo's
        transformers is the learner's to install."""
        import importlib.util

        names = set()
        for statement in self.warm_imports:
            node = ast.parse(statement).body[0]
            found = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            names |= {name.split(".")[0] for name in found if name}
        return sorted(name for name in names if importlib.util.find_spec(name) is None)

    def variant(self, misconception_id: str) -> str:
        item = self.misconception(misconception_id)
        return render.apply_edit(self.solution(), item.find, item.replace)


def _read_toml(path: Path) -> dict:
    with path.open("rb") as handle:
        return tomllib.load(handle)


def _load_kata(folder: Path) -> Kata:
    meta = _read_toml(folder / "kata.toml")
    slug = folder.name
    todos = [
        Todo(item["number"], item["title"], item.get("guidance", {"en": []}), item["hints"], item.get("points", 1))
        for item in meta.get("todo", [])
    ]
    return Kata(
        slug=slug,
        order=meta["order"],
        difficulty=meta["difficulty"],
        title=meta["title"],
        prerequisites=tuple(meta.get("prerequisites", ())),
        functions=tuple(meta["functions"]),
        source=meta.get("source", ""),
        own_todos=tuple(todos),
        whole_points=meta.get("whole_points", 1),
    )


@cache
def all_katas() -> tuple[Kata, ...]:
    """Every kata, in learning order."""
    folders = [path.parent for path in KATAS_DIR.glob("*/kata.toml")]
    return tuple(sorted((_load_kata(folder) for folder in folders), key=lambda kata: (kata.order, kata.slug)))


def get_kata(slug: str) -> Kata:
    """The kata named `slug`, or UnknownKata with a did-you-mean suggestion."""
    katas = {kata.slug: kata for kata in all_katas()}
    if slug in katas:
        return katas[slug]
    raise UnknownKata(unknown_kata(slug))


def unknown_kata(slug: str, lang: str = "en") -> str:
    """The one-line error for a slug that names no kata, with the closest ones as a did-you-mean."""
    import difflib

    from grader.content.i18n import phrase

    close = difflib.get_close_matches(slug, [kata.slug for kata in all_katas()], n=2, cutoff=0.5)
    names = phrase(lang, "or").join(phrase(lang, "quoted", text=name) for name in close)
    hint = phrase(lang, "did_you_mean", names=names) if close else ""
    return phrase(lang, "unknown_kata", slug=phrase(lang, "quoted", text=slug), hint=hint)
