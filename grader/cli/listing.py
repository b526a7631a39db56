"""`kata list`: each kata's row (title, difficulty, status, last check, best drill scores) and
the next step."""

from grader.cli.workspace import Workspace
from grader.content.catalogue import DIFFICULTIES, Kata, localized

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


COLUMNS = ("#", "kata", "title", "difficulty", "after", "status")


def _cells(row: dict) -> list[str]:
    status, last = row["status"], row["last_check"]
    if status == "in progress" and last:
        status = f"{status} ({last['passed']}/{last['passed'] + last['failed']} checks)"
    if row.get("drill"):
        status = f"{status} · {score_text(row['drill'])}"
    after = ", ".join(row["prerequisites"]) or "-"
    return [str(row["order"]), row["slug"], row["title"], row["difficulty"], after, status]


def score_text(scores: dict) -> str:
    """The best drill score per level, e.g. 'drill: easy 5/6, hard 9/20'."""
    parts = [f"{level} {scores[level]['right']}/{scores[level]['blanks']}" for level in DIFFICULTIES if level in scores]
    return f"drill: {', '.join(parts)}" if parts else "drill: -"


def _footer(listing: dict) -> str:
    return f"Next: {listing['next']}" if listing["next"] else "Every kata passed."


def plain_listing(listing: dict) -> str:
    """The listing as plain text, for pipes and files (no rich needed)."""
    rows = [list(COLUMNS)] + [_cells(row) for row in listing["katas"]]
    widths = [max(_width(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = [
        "  ".join(cell + " " * (width - _width(cell)) for cell, width in zip(row, widths)).rstrip() for row in rows
    ]
    return "\n".join(lines + ["", _footer(listing)])


def _width(text: str) -> int:
    """Terminal columns of `text` (CJK characters take two)."""
    return sum(2 if "\u2e80" <= char <= "\uffef" else 1 for char in text)


def build_listing(listing: dict):
    """The listing as a rich table, for terminals."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, pad_edge=False, header_style="title")
    for column in COLUMNS:
        table.add_column(column)
    for row in listing["katas"]:
        *cells, status = _cells(row)
        table.add_row(*cells, Text(status, style=STATUS_STYLE[row["status"]]))
    return Group(table, Text(), Text(_footer(listing), style="next"))
