r"""Text a learner's code controls, made inert: it can no longer steer a terminal or hide what it says.

A file's code chooses what it prints, its exceptions' messages and the reprs of what it returns;
they reach the report in a terminal, the feedback files, JSON, CSV, JUnit XML, HTML and Gradescope's
results.json. `inert` is applied once, where they become a result (grader.report.results: a
CheckResult's message and output, a GradeResult's load_error and target are inert from the moment
the result is built, in the judge or read back from JSON), so every sink writes them inert. The
judge's own data (the exceptions it compares to name a misconception, the fingerprints, the
values) never goes through it and stays exact. No torch, no rich here: pool workers import it.
"""

import re

_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}
# C0 but TAB and LF, DEL, C1; zero-width and direction marks; bidi embeddings, overrides, isolates
LIVE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def inert(text: str) -> str:
    r"""`text` with every character that could act on a terminal or disguise text written visibly,
    as `display_name` writes it (`escape_char`):

        U+0000-U+0008, U+000B-U+001F   C0 controls but TAB and newline   \x00 ... \x1f, but \r for CR
        U+007F                         DEL                               \x7f
        U+0080-U+009F                  C1 controls (U+009B is a CSI)     \u0080 ... \u009f
        U+200B-U+200F                  zero-width spaces, joiners, LRM, RLM          \u200b ...
        U+202A-U+202E, U+2066-U+2069   bidi embeddings, overrides and isolates       \u202e ...

    So ESC [ 2 J reads `\x1b[2J` and a carriage return `\r`: visible, and never acted on. Everything
    else is kept as it is: newline and TAB (multi-line messages), backslashes, Chinese and full-width
    punctuation, rich markup such as `[red]` (the report never parses text as markup). A text with
    none of these is returned unchanged, and inert(inert(t)) == inert(t). Unlike a display name,
    this is written to be read, not to be one-to-one: a learner who prints the four characters
    `\x1b` reads the same as one who prints ESC.
    """
    return LIVE.sub(lambda match: escape_char(match.group()), text)


def escape_char(char: str) -> str:
    """One character as `display_name` writes it (an undecodable byte is a surrogate, U+DC80 to U+DCFF)."""
    if char in _ESCAPES:
        return _ESCAPES[char]
    if char.isprintable():
        return char
    code = ord(char)
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
