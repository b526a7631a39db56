"""The module a grading run checks: a learner's file, the reference, the blank template, or a
misconception variant, all loaded the same way, from source text.

A target is a `Path` (a file, whatever its name) or a built-in name: "reference", "template",
or "misconception:<id>".
"""

from pathlib import Path

from grader.content.catalogue import Kata
from grader.run.source import load_module  # noqa: F401  (the judge loads the reference the same way)

BUILTIN_TARGETS = ("reference", "template")


class TargetError(ValueError):
    """A target spec that names nothing loadable (the grader's own usage error)."""


def target_source(kata: Kata, spec: str | Path) -> tuple[str, str]:
    """(source text, file name for tracebacks) of the target `spec`."""
    if isinstance(spec, Path):
        return _read_file(spec)
    if spec == "reference":
        return kata.solution(), f"<reference {kata.slug}>"
    if spec == "template":
        return kata.template(), f"<template {kata.slug}>"
    if spec.startswith("misconception:"):
        misconception_id = spec.split(":", 1)[1]
        try:
            return kata.variant(misconception_id), f"<misconception {misconception_id}>"
        except KeyError:
            known = ", ".join(m.id for m in kata.misconceptions)
            raise TargetError(f"{kata.slug} has no misconception {misconception_id!r} (known: {known})") from None
    raise TargetError(f"unknown built-in target {spec!r}: use reference, template or misconception:ID")


def _read_file(path: Path) -> tuple[str, str]:
    spec = str(path)
    try:
        return path.read_text(encoding="utf-8-sig"), str(path.resolve())  # a BOM, as Python itself allows
    except FileNotFoundError:
        raise TargetError(f"no such file: {spec}") from None
    except UnicodeDecodeError:
        raise TargetError(f"{spec} is not UTF-8 text") from None
    except OSError as error:
        raise TargetError(f"cannot read {spec}: {error.strerror}") from None
