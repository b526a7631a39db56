"""The terminal summary of a lab run, built from its evidence dict as rich renderables (printed once).

    header      lab · title, run mode · label
    facts       model (id or path, short weights hash), device, decision (styled), failure if any
    timings     per-stage wall seconds and peak memory
    results     each lab's own results, shown generically: scalars in one table (nested dicts
                flattened as `a.b`), a list of a few dicts as one table with a column per item
                (e.g. per candidate set), a longer list of dicts as its first rows, a list of
                numbers as a sparkline
    curves      each per-step curve as a sparkline with its first, last, min and max

Tables have no borders, so the summary is plain aligned text when it is not a terminal. It fits
the console's width (80 columns too): cells wrap rather than end in '…', sparklines shrink to the
room left (bucket means), hashes show their first 12 digits, and no line ends in padding.
`kata lab run` prints it at the end of a run; `kata lab show LAB LABEL` reprints it.

Under zh (`lang`) its labels, the lab's title, the decision's meaning and the memory names are
Chinese (gpu_labs.phrases); the names of results, stages and curves stay the evidence's.
"""

import math
from pathlib import Path

from rich.console import Group, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from gpu_labs.decisions import STYLES
from gpu_labs.phrases import MEMORY_ZH, VALUES_ZH, decision_label, lab_title, phrase
from gpu_labs.plots import sparkline
from grader.report.styles import Trimmed

WIDE_LIST = 4  # a list of up to this many dicts gets a column per item; longer lists get a row per item
LIST_ROWS = 8  # rows shown of a longer list of dicts
CELL = 200  # longest text shown in a cell (it wraps to the width)
HASH = 12  # digits shown of a sha256
SPARK_MIN = 8  # the narrowest a sparkline is drawn when the width is short


def build_summary(record: dict, run_dir: Path | None = None, lang: str = "en") -> RenderableType:
    """The whole summary of one evidence record, in `lang` ('en' or 'zh')."""
    title, _ = lab_title(str(record.get("lab")), str(record.get("title", "")), "", lang)
    parts: list[RenderableType] = [
        Text.assemble(
            (f"{record.get('lab', '?')} · {record.get('label', '?')}", "title"),
            (f"  {record.get('run_mode', '?')}", "muted"),
        ),
        Text(title, style="muted"),
        _facts(record, lang),
    ]
    timings = _timings(record, lang)
    if timings is not None:
        parts += [Text(), timings]
    for title, table in _results(record.get("results") or {}, lang):
        parts += [Text(), Text(title, style="title"), table]
    gains = _gains(record.get("results") or {}, lang)
    if gains is not None:
        parts += [Text(), Text(phrase(lang, "gains"), style="title"), gains]
    curves = _curves(record.get("curves") or {}, lang)
    if curves is not None:
        parts += [Text(), Text(phrase(lang, "curves"), style="title"), curves]
    if run_dir is not None:
        artifacts = record.get("artifacts") or {}
        names = ", ".join(str(name) for name in artifacts.values()) or "evidence.json"
        parts += [
            Text(),
            Text.assemble((phrase(lang, "evidence"), "muted"), (str(run_dir), "code")),
            Text(f"  {names}", "muted"),
        ]
    return Trimmed(Group(*parts))


class Sparkline:
    """A sparkline as wide as the values, or as the room rich gives it (SPARK_MIN at least)."""

    def __init__(self, values: list, suffix: str = ""):
        self.values, self.suffix = values, suffix

    def __rich_measure__(self, console, options):
        extra = len(self.suffix)
        return Measurement(min(SPARK_MIN, len(self.values)) + extra, len(self.values) + extra)

    def __rich_console__(self, console, options):
        width = max(1, options.max_width - len(self.suffix))
        yield Text.assemble((sparkline(self.values, width), "code"), self.suffix)


def decision_style(decision: str) -> str:
    """The decision's style (gpu_labs.decisions); a decision outside the vocabulary is shown plain."""
    return STYLES.get(decision, "title")


def model_line(model: dict) -> str:
    """`id-or-spec  (sha256 1a2b3c4d5e6f…)`: what was loaded, and a short hash of its weights."""
    name = model.get("id") or model.get("path") or model.get("spec") or "?"
    if model.get("spec") and model.get("spec") != name:
        name = f"{model['spec']}: {name}"
    digest = model.get("weights_sha256")
    if isinstance(digest, dict):
        digest = ", ".join(f"{file} {value[:HASH]}…" for file, value in digest.items())
    elif isinstance(digest, str):
        digest = f"{digest[:HASH]}…"
    return f"{name}  (sha256 {digest})" if digest else name


def _facts(record: dict, lang: str = "en") -> Table:
    table = _grid()
    hardware = record.get("hardware") or {}
    device = hardware.get("device") or ("cuda" if record.get("run_mode") == "real_gpu" else "cpu")
    torch = ((record.get("framework") or {}).get("torch")) or "?"
    table.add_row(phrase(lang, "model"), model_line(record.get("model") or {}) if record.get("model") else "—")
    workload = record.get("workload") or {}
    if workload.get("id"):
        workload_line = " ".join(str(workload[key]) for key in ("id", "version") if workload.get(key))
        table.add_row(phrase(lang, "workload"), workload_line)
    if lang == "zh":
        table.add_row(
            phrase(lang, "device"), f"{device.upper() if device in ('cpu', 'cuda') else device}，PyTorch {torch}"
        )
    else:
        table.add_row("device", f"{device}, torch {torch}")
    decision = str(record.get("decision", "?"))
    table.add_row(phrase(lang, "decision"), Text(decision_label(decision, lang), style=decision_style(decision)))
    failure = record.get("failure")
    if failure:
        where = phrase(lang, "in_stage", stage=failure.get("stage")) if failure.get("stage") else ""
        colon = "：" if lang == "zh" else ": "
        line = f"{failure.get('type', 'Error')}{where}{colon}{failure.get('message', '')}"
        table.add_row(phrase(lang, "failure"), Text(line, style="error"))
    return table


def _timings(record: dict, lang: str = "en") -> Table | None:
    stages = record.get("stages") or {}
    memory = record.get("peak_memory") or {}
    if not stages and not memory:
        return None
    table = _grid()
    for name, seconds in stages.items():
        table.add_row(name, f"{seconds:.2f} s")
    for name, value in memory.items():
        shown = MEMORY_ZH.get(name) if lang == "zh" else None
        table.add_row(shown or name.removesuffix("_bytes").replace("_", " "), _bytes(value))
    return table


def _results(results: dict, lang: str = "en") -> list[tuple[str, Table]]:
    """(title, table) for the scalar results, then one per list of dicts and per list of numbers."""
    sections, scalars, sparks = [], {}, {}
    for key, value in results.items():
        if isinstance(value, dict):
            scalars.update({f"{key}.{inner}": item for inner, item in value.items() if _is_scalar(item)})
        elif isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
            sections.append((key, _dict_list(value, lang)))
        elif isinstance(value, list) and _numbers(value):
            sparks[key] = value
        elif _is_scalar(value):
            scalars[key] = value
    head = []
    if scalars:
        table = _grid()
        for key, value in scalars.items():
            table.add_row(key, _cell(key, value, lang))
        head.append((phrase(lang, "results"), table))
    if sparks:
        head.append((phrase(lang, "series"), _curves(sparks, lang)))
    return head + sections


def _dict_list(items: list[dict], lang: str = "en") -> Table:
    """A few dicts: a column per item (named by its first text field); more: a row per item."""
    every = list(dict.fromkeys(key for item in items for key in item))
    keys = [key for key in every if all(_is_scalar(item[key]) for item in items if key in item)]
    lists = [key for key in every if key not in keys]
    if len(items) <= WIDE_LIST:
        name_key = next((key for key in keys if all(isinstance(item.get(key), str) for item in items)), None)
        table = _table()
        table.add_column("", overflow="fold")
        for index, item in enumerate(items):
            table.add_column(str(item[name_key]) if name_key else f"#{index + 1}", justify="right", overflow="fold")
        for key in keys:
            if key != name_key:
                table.add_row(key, *(_cell(key, item.get(key), lang) for item in items))
        for key in lists:
            table.add_row(key, *(_list_cell(item.get(key), lang) for item in items), style="muted")
        return table
    table = _table()
    for key in keys:
        table.add_column(key, justify="left" if isinstance(items[0].get(key), str) else "right", overflow="fold")
    for item in items[:LIST_ROWS]:
        table.add_row(*(_cell(key, item.get(key), lang) for key in keys))
    if len(items) > LIST_ROWS:
        table.add_row(phrase(lang, "more_rows", n=len(items) - LIST_ROWS), style="muted")
    return table


def _gains(results: dict, lang: str = "en") -> Table | None:
    """train_grpo's paired held-out gains: a row per measure, before, after, gain and its interval."""
    heldout = results.get("heldout")
    gains = heldout.get("gains") if isinstance(heldout, dict) else None
    if not gains:
        return None
    table = _table()
    table.add_column("")
    for column in ("before", "after", "gain", "interval"):
        table.add_column(phrase(lang, column), justify="right", no_wrap=True)
    for name, gain in gains.items():
        interval = f"[{gain['low']:+.3f}, {gain['high']:+.3f}]"
        table.add_row(name, f"{gain['before']:.3f}", f"{gain['after']:.3f}", f"{gain['gain']:+.3f}", interval)
    return table


def _curves(curves: dict[str, list], lang: str = "en") -> Table | None:
    rows = {name: values for name, values in curves.items() if any(value is not None for value in values)}
    if not rows:
        return None
    table = _table()
    table.add_column("", overflow="fold")
    table.add_column("")
    for column in ("first", "last", "min", "max"):
        table.add_column(phrase(lang, column), justify="right", no_wrap=True)
    for name, values in rows.items():
        known = [value for value in values if value is not None]
        finite = [value for value in known if math.isfinite(value)] or known
        numbers = (known[0], known[-1], min(finite), max(finite))
        table.add_row(name, Sparkline(values), *(_number(value) for value in numbers))
    return table


def _list_cell(value, lang: str = "en") -> RenderableType:
    """A list inside a per-item table: a sparkline for numbers, else its length."""
    if isinstance(value, list) and _numbers(value):
        return Sparkline(value, f" ({len(value)})")
    if isinstance(value, list | dict):
        return phrase(lang, "items", n=len(value))
    return "—"


def _cell(key: str, value, lang: str = "en") -> Text | str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return Text(phrase(lang, "yes"), style="passed") if value else Text(phrase(lang, "no"), style="failed")
    if isinstance(value, int | float) and key.endswith("_bytes"):
        return _bytes(value)
    if isinstance(value, int | float):
        return _number(value)
    text = str(value)
    if lang == "zh":
        text = VALUES_ZH.get(text, text)
    if key.endswith("sha256") and len(text) > HASH:
        return f"{text[:HASH]}…"
    return text if len(text) <= CELL else text[: CELL - 1] + "…"


def _number(value) -> str:
    if isinstance(value, int):
        return f"{value:,}"
    if math.isnan(value):
        return "nan"
    return f"{value:.4g}"


def _bytes(value) -> str:
    if value is None:
        return "—"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(value) >= size:
            return f"{value / size:.2f} {unit}"
    return f"{value} B"


def _is_scalar(value) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _numbers(values: list) -> bool:
    return any(value is not None for value in values) and all(
        value is None or (isinstance(value, int | float) and not isinstance(value, bool)) for value in values
    )


def _grid() -> Table:
    table = Table(box=None, pad_edge=False, show_header=False)
    table.add_column(style="muted", no_wrap=True)
    table.add_column(overflow="fold")
    return table


def _table() -> Table:
    return Table(box=None, pad_edge=False, header_style="title")
