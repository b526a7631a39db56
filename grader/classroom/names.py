"""Names the grader did not choose, written as data: a student's folder, a file in it.

A name on disk is any bytes but "/" and NUL: not UTF-8, a newline, a leading "-", "=" or TAB.
`kata grade` writes every such name (grades.csv, grades.json, JUnit XML, OUT/results/, the
terminal) as its `display_name`, and names its files under OUT with `file_name`. No torch, no
rich here: pool workers import it.
"""

import hashlib
import os
import re

from grader.report.inert import escape_char

NAME_BYTES = 200  # a file name under OUT stays within the usual 255-byte limit, suffix included
_TOKEN = re.compile(r"\\(?:x..|u.{4}|U.{8}|.)|.", re.DOTALL)  # one character or one escape of a display name
_HASH_MARK = "\\~"  # display_name never writes it: a long name's file name cannot be anyone's display name


def display_name(name: str | bytes) -> str:
    r"""`name` as printable, valid UTF-8 text, one-to-one: the one way `kata grade` writes a name.

    The name's raw bytes (`os.fsencode`) are read as UTF-8 and every character is kept as it is,
    except (Python's backslash escapes):

        \\          for a backslash;
        \t \n \r    for TAB, newline, carriage return;
        \xNN        for a byte that is not valid UTF-8, and for the other control characters
                    below 0x20 and DEL (0x7f), each a single byte: "caf\xe9" is the Latin-1
                    bytes b"caf\xe9", "caf\\xe9" the seven ASCII characters c a f \ x e 9;
        \uNNNN      (or \UNNNNNNNN) for any other character that is not printable
                    (str.isprintable: C1 controls, line separators, bidi overrides, ...).

    Every backslash starts one of these escapes, so different names never share a display name.
    A display name never starts with TAB or CR; one that starts with = + - @ is still a formula
    to a spreadsheet: the CSV quotes it (gradesheet._cell).
    """
    if isinstance(name, str):
        try:
            name = os.fsencode(name)
        except UnicodeEncodeError:  # a lone surrogate no file system gave: escape it as a character
            return "".join(map(escape_char, name))
    return "".join(map(escape_char, name.decode("utf-8", "surrogateescape")))


def file_name(display: str) -> str:
    """A display name as one component of a path under OUT: itself, unless over NAME_BYTES bytes.

    A longer one is cut after whole characters and escapes, then ends in a backslash, "~" and a
    hash of the whole name: a backslash-tilde is no escape of `display_name`, so no other name,
    long or short, gets the same file name.
    """
    if len(display.encode()) <= NAME_BYTES:
        return display
    keep, size = [], 0
    for token in _TOKEN.findall(display):
        size += len(token.encode())
        if size > NAME_BYTES - 40:
            break
        keep.append(token)
    return "".join(keep) + _HASH_MARK + hashlib.sha256(display.encode()).hexdigest()[:32]


_DIGITS = re.compile(r"([0-9]+)")


def natural_key(name: str) -> tuple:
    """How `kata grade` orders names (students, roster rows): case-insensitively, a run of digits
    by its value ("student2" before "student10", "bob" before "Carl"); names alike but for case or
    leading zeros by the name itself, so the order is total."""
    parts = _DIGITS.split(name.casefold())  # text, digits, text, ...: the same type at each position
    return (tuple(int(part) if index % 2 else part for index, part in enumerate(parts)), name)


_COPY_SUFFIX = re.compile(r"(?:\s*\(\d+\)|-\d+)$")  # "dpo_loss (1)", "dpo_loss-2": a browser's or a system's copy
NEAR = 2  # edits (insert, delete, replace) within which a file's name is a kata's, misspelt


def near_slug(stem: str, slugs: list[str]) -> str | None:
    """The kata a misnamed file's stem stands for, or None: the same after case-folding, dropping a
    " (N)" or "-N" suffix and writing "-" and spaces as "_"; else the one kata within NEAR edits."""
    plain = _COPY_SUFFIX.sub("", stem.casefold()).replace("-", "_").replace(" ", "_")
    if plain in slugs:
        return plain
    close = [slug for slug in slugs if _edits(plain, slug) <= NEAR]
    return close[0] if len(close) == 1 else None


def _edits(a: str, b: str) -> int:
    """Levenshtein distance between `a` and `b`."""
    row = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, other in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (char != other))
    return row[-1]
