"""Where the checks get their random inputs: a seed as the check writes it, or, under a course, a
seed only the instructor can make from it.

    generator = seeds.generator(3)          # torch.Generator().manual_seed(3), or the course's
    rng = random.Random(seeds.number(3))    # 3, or the course's number for 3

A check asks for its inputs by its own public seed. With no course active (`kata check`, a public
check in a student pack) `number(seed)` is `seed` itself and `generator(seed)` is
`torch.Generator().manual_seed(seed)`: the inputs, and every value recorded from them, are those the
check has always drawn. Under a course (`kata grade --course FILE`, a Gradescope autograder built
with one) each seed is replaced by a keyed hash of it, `blake2b(seed, key=secret)`: the same
course gives the same inputs on every run, another course other inputs, and values recorded on the
public seeds (or under another course) cannot be replayed into a grade.

The secret is the instructor's: a course file (`course.toml`: `seed = "<64 hex digits>"`, made by
`new_course` and `write_course`, read by `read_course`). Only the judge holds it: the grading plugin
makes it this process's course for one run (`--kata-course`, grader.judging.plugin) and gives back
the one before at the end. That is this module's one piece of state, `_COURSE`, as the message
language is i18n's; it never leaves the process (no environment variable, no file, no argument of a
contestant: a contestant gets at most the derived seeds the checks pass to it).
"""

import hashlib
import secrets
import tomllib
from pathlib import Path

SECRET_HEX = 64  # hex digits of a course secret: 32 bytes
SEED_BITS = 63  # a derived seed fits torch.manual_seed and random.Random alike
PERSON = b"kata-seed"  # blake2b's personalisation: these hashes are seeds, not anything else keyed alike

_COURSE: list[bytes | None] = [None]  # the active course's secret, or None: the seeds as written


class CourseError(ValueError):
    """A course file or secret that cannot be used (said in one line)."""


def number(seed: int) -> int:
    """The seed a check's `seed` stands for: `seed` itself with no course, else the course's number for it."""
    key = _COURSE[0]
    if key is None:
        return seed
    digest = hashlib.blake2b(str(seed).encode(), key=key, digest_size=8, person=PERSON).digest()
    return int.from_bytes(digest, "big") >> (64 - SEED_BITS)


def generator(seed: int):
    """A torch.Generator seeded with `number(seed)`: `torch.Generator().manual_seed(seed)` with no course."""
    import torch

    return torch.Generator().manual_seed(number(seed))


def set_course(secret: str | None) -> str | None:
    """Draw every check's inputs under the course `secret` (64 hex digits) from now on, or as written
    (None); returns the secret it replaces, for the caller to give back."""
    previous = _COURSE[0]
    _COURSE[0] = None if secret is None else bytes.fromhex(check_secret(secret))
    return None if previous is None else previous.hex()


def check_secret(secret: str) -> str:
    """`secret` if it is a course secret (64 hex digits), else CourseError."""
    if not (isinstance(secret, str) and len(secret) == SECRET_HEX and _is_hex(secret)):
        raise CourseError(f"a course seed is {SECRET_HEX} hex digits")
    return secret.lower()


def label(secret: str | None) -> str:
    """A public name of the course `secret` (a digest, none of the secret): what a stored result's or
    a fingerprint's key holds, so that it is reused only under the same course. "" for None."""
    return "" if secret is None else _label(bytes.fromhex(check_secret(secret)))


def active_label() -> str:
    """The label of the active course ("" with none)."""
    return "" if _COURSE[0] is None else _label(_COURSE[0])


def new_course() -> str:
    """A fresh course secret: 64 hex digits from the system's secure random source."""
    return secrets.token_hex(SECRET_HEX // 2)


def course_text(secret: str) -> str:
    """A course file's text: `seed = "<secret>"` under a line saying whose it is."""
    return (
        "# The course seed of `kata grade --course` and `kata gradescope --course`: the instructor's only.\n"
        f'seed = "{check_secret(secret)}"\n'
    )


def write_course(path: Path, secret: str) -> None:
    """Write the course file `path` (course_text), readable by its owner only."""
    from grader.files import atomic_write

    atomic_write(Path(path), course_text(secret), mode=0o600)


def read_course(path: Path, lang: str = "en") -> str:
    """The secret of the course file `path`; CourseError (one line, in `lang`) when it is missing or malformed."""
    from grader.content.i18n import phrase

    shown = str(path).encode("utf-8", "backslashreplace").decode("utf-8")  # any file name is data
    try:
        with Path(path).open("rb") as handle:
            data = tomllib.load(handle)
        return check_secret(data["seed"])
    except FileNotFoundError:
        raise CourseError(phrase(lang, "course_missing", path=shown)) from None
    except OSError as error:
        raise CourseError(phrase(lang, "course_unreadable", path=shown, why=error.strerror or error)) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, KeyError, CourseError):
        raise CourseError(phrase(lang, "course_malformed", path=shown)) from None


def _label(key: bytes) -> str:
    return hashlib.blake2b(key, digest_size=8, person=b"kata-course").hexdigest()


def _is_hex(text: str) -> bool:
    return all(char in "0123456789abcdefABCDEF" for char in text)
