"""`kata list`: each kata's row (title, difficulty, status, last check, best drill scores) and
the next step.

On a terminal a table, at any width from TABLE_WIDTH up, and blocks below it; in a pipe or a
file the blocks, plain lines of at most WIDTH columns with no padding at their ends. Neither
layout ever cuts or breaks a slug or a command: a line wraps between words only, under its
own indentation.

    1  concepts  easy  not started
       Concepts: preferences, DPO, GRPO, RLVR and the KL
    6  grpo_loss  hard  in progress (20/26 checks)
       The clipped GRPO loss
       after group_advantages, kl_estimators
"""

import re

from grader.cli.workspace import Workspace
from grader.content.catalogue import DIFFICULTIES, Kata, localized
from grader.content.i18n import joined, phrase

STATUS_STYLE = {"passed": "passed", "in progress": "timeout", "not started": "muted"}


def listing_rows(katas: tuple[Kata, ...], workspace: Workspace, lang: str) -> dict:
    """{"katas": [row, ...], "next": command} as plain data (also what --json prints)."""
    progress = workspace.progress()
    rows = []
    for kata in katas:
        record = progress.get(kata.slug, {})
        rows.append(
            {
                "slug": kata.slug,
                "order": kata.order,
                "title": localized(kata.title, lang),
                "difficulty": kata.difficulty,
                "status": workspace.status(kata.slug, progress),
                "prerequisites": list(kata.prerequisites),
                "file": str(workspace.kata_file(kata.slug)),
                "last_check": record.get("last_check"),
            }
        )
        if record.get("drill"):  # the best drill score per level, once there is one
            rows[-1]["drill"] = record["drill"]
    return {"katas": rows, "next": _next_command(rows)}


def _next_command(rows: list[dict]) -> str | None:
    for row in rows:
        if row["status"] == "in progress":
            last = row["last_check"]
            if last and last.get("failing_todos"):
                return f"kata hint {row['slug']} --todo {last['failing_todos'][0]}"
            return f"kata check {row['slug']}"
    for row in rows:
        if row["status"] == "not started":
            return f"kata start {row['slug']}"
    return None


def _cells(row: dict, lang: str = "en") -> list[str]:
    """#, slug, title, difficulty, prerequisites and status, as shown in `lang`."""
    status, last = phrase(lang, row["status"]), row["last_check"]
    if row["status"] == "in progress" and last:
        status = phrase(lang, "checks_of", status=status, passed=last["passed"], total=last["passed"] + last["failed"])
    if row.get("drill"):
        status = f"{status} · {score_text(row['drill'], lang)}"
    after = joined(lang, row["prerequisites"]) or "-"
    difficulty = phrase(lang, row["difficulty"])
    return [str(row["order"]), row["slug"], row["title"], difficulty, after, status]


def score_text(scores: dict, lang: str = "en") -> str:
    """The best drill score per level, e.g. 'drill: easy 5/6, hard 9/20'."""
    parts = [
        f"{phrase(lang, level)} {scores[level]['right']}/{scores[level]['blanks']}"
        for level in DIFFICULTIES
        if level in scores
    ]
    return phrase(lang, "drill_scores", scores=joined(lang, parts) if parts else "-")


def _footer(listing: dict, lang: str = "en") -> str:
    return phrase(lang, "next", command=listing["next"]) if listing["next"] else phrase(lang, "all_passed")


WIDTH = 80  # the plain listing's lines
TABLE_WIDTH = 72  # narrower terminals get the blocks (so do those where the table's columns cannot fit)


def plain_listing(listing: dict, width: int = WIDTH, lang: str = "en") -> str:
    """The listing as blocks of plain lines, for pipes, files and narrow terminals (no rich needed)."""
    digits = max((len(str(row["order"])) for row in listing["katas"]), default=1)
    lines = []
    for row in listing["katas"]:
        number, slug, title, difficulty, after, status = _cells(row, lang)
        indent = " " * (digits + 2)
        lines += _wrap(f"{number:>{digits}}  {slug}  {difficulty}  {status}", width, indent)
        lines += _wrap(title, width, indent, indent)
        if row["prerequisites"]:
            lines += _wrap(phrase(lang, "after", after=after), width, indent, indent)
    hanging = " " * _width(phrase(lang, "next", command=""))
    return "\n".join(lines + ["", *_wrap(_footer(listing, lang), width, hanging)])


def _wrap(text: str, width: int, indent: str, first: str = "") -> list[str]:
    """`first + text` in lines of at most `width` columns, broken at spaces only, later lines under `indent`.

    The spaces between words are kept; a word longer than a line (a slug, a path) is never cut.
    """
    lines, line = [], first
    for space, word in re.findall(r"(\s*)(\S+)", text):
        if line.strip() and _width(line) + len(space) + _width(word) > width:
            lines.append(line)
            line = indent + word
        else:
            line += (space if line.strip() else "") + word
    return lines + [line]


def _width(text: str) -> int:
    """Terminal columns of `text` (CJK characters take two)."""
    return sum(2 if "\u2e80" <= char <= "\uffef" else 1 for char in text)


def build_listing(listing: dict, lang: str = "en"):
    """The listing for a terminal: a table, or the blocks of `plain_listing` when it is narrower than TABLE_WIDTH."""
    return _Listing(listing, lang)


class _Listing:
    """Chooses its layout when rich renders it, at the width it is given."""

    def __init__(self, listing: dict, lang: str = "en"):
        self.listing, self.lang = listing, lang

    def __rich_console__(self, console, options):
        from rich.text import Text

        if options.max_width < TABLE_WIDTH or not _column_widths(self.listing, self.lang, options.max_width)["fits"]:
            yield Text(plain_listing(self.listing, options.max_width, self.lang))
            return
        yield _table(self.listing, self.lang, options.max_width)
        yield Text()
        yield Text(_footer(self.listing, self.lang), style="next")


def _table(listing: dict, lang: str = "en", width: int = 200):
    """#, kata (never wrapped), title (with 'after' beneath it, dim), difficulty and status.

    The widths are set here: the title gets what the other columns leave (at least a slug and
    "after "), the status is wrapped between its words and 'after' between its slugs, so that
    rich never cuts a word (its own wrapping of a squeezed column did: "easy" became "ea").
    """
    from rich.table import Table
    from rich.text import Text

    widths = _column_widths(listing, lang, width)
    table = Table(box=None, pad_edge=False, header_style="title")
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column(phrase(lang, "col_kata"), no_wrap=True, min_width=widths["kata"])
    table.add_column(phrase(lang, "col_title"), width=widths["title"], overflow="fold")
    table.add_column(phrase(lang, "col_difficulty"), no_wrap=True)
    table.add_column(phrase(lang, "col_status"), no_wrap=True, width=widths["status"])
    for row in listing["katas"]:
        number, slug, title, difficulty, after, status = _cells(row, lang)
        cell = Text(title)
        if row["prerequisites"]:
            below = _break_between(phrase(lang, "after", after=after), widths["title"])
            cell.append("\n" + "\n".join(below), style="muted")
        lines = "\n".join(_break_between(status, widths["status"]))
        table.add_row(number, slug, cell, difficulty, Text(lines, style=STATUS_STYLE[row["status"]]))
    return table


def _column_widths(listing: dict, lang: str, width: int) -> dict[str, int]:
    """The kata, title and status columns' widths at `width`; "fits": whether the table does."""
    rows = [_cells(row, lang) for row in listing["katas"]]
    numbers = max([1, *(len(cells[0]) for cells in rows)])
    slugs = max([len(phrase(lang, "col_kata")), *(len(cells[1]) for cells in rows)])
    difficulty = max([_width(phrase(lang, "col_difficulty")), *(_width(cells[3]) for cells in rows)])
    fixed = numbers + slugs + difficulty + 2 * 4  # and two spaces between columns
    title_least = slugs + len("after ")
    words = [_width(phrase(lang, "col_status")), *(_width(word) for cells in rows for word in _pieces(cells[5]))]
    status_longest = max([*words, *(_width(cells[5]) for cells in rows)])
    status = max(max(words), min(status_longest, width - fixed - title_least))
    titles = [_width(phrase(lang, "col_title"))]
    for cells, row in zip(rows, listing["katas"]):
        titles += [_width(cells[2])] + ([_width(phrase(lang, "after", after=cells[4]))] if row["prerequisites"] else [])
    title = max(title_least, min(max(titles), width - fixed - status))
    return {"kata": slugs, "title": title, "status": status, "fits": fixed + title + status <= width}


def _break_between(text: str, width: int) -> list[str]:
    """`text` in lines of at most `width` columns, broken at spaces and after "、" (a list's slugs)."""
    lines, line = [], ""
    for piece in _pieces(text):
        if line.strip() and _width((line + piece).rstrip()) > width:
            lines.append(line.rstrip())
            line = piece.lstrip()
        else:
            line += piece
    return [*lines, line.rstrip()]


def _pieces(text: str) -> list[str]:
    """The words of `text`, each with the space or "、" after it: where a line may break."""
    return re.findall(r"[^\s、]+、?\s*|\s+", text)
