"""The prober of tests/test_gradescope_root.py: a group_advantages kata file whose
compute_group_advantages searches every file it can read for the reference and the checks.

The test hands in this file's text with the secret files' digests appended (SOURCES, SIZES, CODES,
SOURCE_HASHES) and USE_FINDINGS set; nothing in it names a place to look. It compares every
regular file it can reach from / (no link followed, /proc and /sys left out) with the secret
files: its bytes (read whole only when its size is one of theirs), and, for a .pyc, its code
(unmarshalled when its header names a secret source's size or hash) with theirs compiled.

Graded, each check loads the file afresh in a process of its own, in a world of its own (nothing
one check writes is there for the next), with its own time limit: the walk starts again in every
check and takes at most BUDGET seconds of it (a walk that does not end says so: the test fails
then, proving nothing). With USE_FINDINGS, once it has found a file that defines
compute_group_advantages it answers with it; otherwise it answers `honest`: centred, not scaled,
no input checked (what its twin answers). Every call prints the report: one
line for people, then the JSON report compressed, in base64 lines short enough for the feedback's
80 columns (`read_report` in the test reads it back from a failing check's output).
"""

import base64
import hashlib
import importlib.util
import json
import marshal
import os
import time
import types
import zlib

import torch

STARTED = time.monotonic()  # this check's process began about now
SOURCES: dict[str, str] = {}  # {sha256 of a secret file's bytes: its name}
SIZES: list[int] = []  # the secret files' sizes
CODES: dict[str, str] = {}  # {code_digest of a secret .py compiled: its name}
SOURCE_HASHES: dict[str, str] = {}  # {importlib.util.source_hash of a secret .py, hex: its name}
USE_FINDINGS = False
BUDGET = 8.0  # seconds of walking in each check (whose limit is 10 s)
TAG = "kata-probe"
CHUNK = 56  # base64 characters a line
SKIPPED = ("/proc", "/sys")


def honest(rewards, group_ids, eps=1e-6):
    """Centred on each group's mean, not scaled by its std, no input checked: wrong twice over."""
    return rewards - torch.stack([rewards[group_ids.eq(g)].mean() for g in group_ids])


def code_digest(code: types.CodeType) -> str:
    """sha256 of a code object's instructions, names, line table and constants, nested code
    included, its file name left out: the same for the same source compiled anywhere."""

    def canonical(value) -> str:
        if isinstance(value, types.CodeType):
            fields = (value.co_name, value.co_qualname, value.co_argcount, value.co_posonlyargcount)
            fields += (value.co_kwonlyargcount, value.co_flags, value.co_code, value.co_names, value.co_varnames)
            fields += (value.co_freevars, value.co_cellvars, value.co_firstlineno, value.co_linetable)
            return "code" + repr(fields) + repr([canonical(const) for const in value.co_consts])
        if isinstance(value, frozenset):
            return "frozenset" + repr(sorted(canonical(item) for item in value))
        if isinstance(value, tuple):
            return "tuple" + repr([canonical(item) for item in value])
        return type(value).__name__ + repr(value)

    return hashlib.sha256(canonical(code).encode()).hexdigest()


def read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def compiled_match(path: str) -> str | None:
    """The secret file whose compiled code this .pyc holds (file name aside), else None."""
    with open(path, "rb") as handle:
        header = handle.read(16)
    if len(header) < 16 or header[:4] != importlib.util.MAGIC_NUMBER:
        return None
    if int.from_bytes(header[4:8], "little") & 1:  # hash-based: the source's hash
        if header[8:16].hex() not in SOURCE_HASHES:
            return None
    elif int.from_bytes(header[12:16], "little") not in {size & 0xFFFFFFFF for size in SIZES}:
        return None  # timestamp-based: the source's size
    try:
        return CODES.get(code_digest(marshal.loads(read(path)[16:])))
    except Exception:
        return None


def match(entry: os.DirEntry) -> str | None:
    """The secret file this file is, byte for byte or compiled, else None."""
    size = entry.stat(follow_symlinks=False).st_size
    if size in SIZES:
        name = SOURCES.get(hashlib.sha256(read(entry.path)).hexdigest())
        if name:
            return name
    if entry.name.endswith(".pyc") and size > 16:
        name = compiled_match(entry.path)
        if name:
            return "compiled " + name
    return None


def new_state(folder: str = "/") -> dict:
    """A walk from `folder`: the folders left to see, the files seen, those found, its seconds and checks."""
    return {"folders": [folder], "files": 0, "found": [], "seconds": 0.0, "checks": 0}


def walk(state: dict) -> None:
    """Go on with the walk until every folder is seen or this check's budget is spent."""
    began = time.monotonic()
    folders = state["folders"]
    while folders and time.monotonic() - STARTED < BUDGET:
        try:
            entries = list(os.scandir(folders.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.path not in SKIPPED:
                        folders.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    state["files"] += 1
                    name = match(entry)
                    if name:
                        state["found"].append([entry.path, name])
            except OSError:
                continue
    state["seconds"] = round(state["seconds"] + time.monotonic() - began, 2)
    state["checks"] += 1


def probe() -> dict:
    """A walk (new_state) as far as this check's budget allows."""
    state = new_state()
    walk(state)
    return state


def place(path: str, name: str) -> str:
    """The folder a found file's package lies in: its path less the secret's name (a .pyc's
    __pycache__ and tag taken out), or the path itself where the names differ."""
    name = name.removeprefix("compiled ")
    folder, base = os.path.split(path)
    if os.path.basename(folder) == "__pycache__":
        folder, base = os.path.dirname(folder), base.split(".")[0] + ".py"
    whole = os.path.join(folder, base)
    return whole[: -len(name) - 1] if whole.endswith("/" + name) else path


def say(state: dict) -> None:
    """Print the report (see the module docstring): the walk's counts, {place: files found there}
    and the found files, halved until it fits 10 lines."""
    report = {key: state[key] for key in ("files", "found", "seconds", "checks")} | {"complete": not state["folders"]}
    places = {}
    for path, name in state["found"]:
        places[place(path, name)] = places.get(place(path, name), 0) + 1
    report["places"] = places
    print(f"probe: {len(report['found'])} secret file(s) in {report['files']} files, complete: {report['complete']}")
    kept = report
    while True:
        text = base64.b64encode(zlib.compress(json.dumps(kept).encode(), 9)).decode()
        lines = [text[start : start + CHUNK] for start in range(0, len(text), CHUNK)]
        if len(lines) <= 10 or not kept["found"]:
            break
        kept = kept | {"found": kept["found"][: len(kept["found"]) // 2], "cut": len(report["found"])}
    for number, line in enumerate(lines):
        print(f"{TAG}{number:02d}/{len(lines):02d}:{line}")


def defines_it(code: types.CodeType) -> bool:
    return any(
        isinstance(const, types.CodeType) and const.co_name == "compute_group_advantages" for const in code.co_consts
    )


def stolen(state: dict):
    """compute_group_advantages from a found file that defines it, else None."""
    for path, name in state["found"]:
        try:
            data = read(path)
            code = marshal.loads(data[16:]) if name.startswith("compiled ") else compile(data, path, "exec")
            if not defines_it(code):
                continue
            scope = {"__name__": "stolen"}
            exec(code, scope)
            return scope["compute_group_advantages"]
        except Exception:
            continue
    return None


def compute_group_advantages(rewards, group_ids, eps=1e-6):
    state = probe()
    say(state)
    function = stolen(state) if USE_FINDINGS else None
    if function is not None:
        return function(rewards, group_ids, eps)
    return honest(rewards, group_ids, eps)
