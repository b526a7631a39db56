"""Any name is data: folders and files named with any bytes are graded or listed, never crash a run,
and are written one documented way (grader.classroom.names.display_name) in every file and on the terminal."""

import csv
import io
import json
import os
import random
import re
import stat
from xml.etree import ElementTree

import pytest

from grader.classroom import batch, gradesheet
from grader.classroom.names import NAME_BYTES, display_name, file_name, natural_key, near_slug
from grader.content.catalogue import get_kata
from grader.files import json_text
from grader.run import staging

SLUG = "group_advantages"
WRONG = "def compute_group_advantages(r, g, eps=1e-6):\n    return r * 0\n"
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def undisplay(text: str) -> bytes:
    """The raw name a display name stands for: the rule of display_name, read backwards."""
    singles = {"\\": b"\\", "t": b"\t", "n": b"\n", "r": b"\r"}
    raw = b""
    for token in re.findall(r"\\(?:x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8}|[\\tnr])|[^\\]", text):
        if token[0] != "\\":
            raw += token.encode()
        elif token[1] == "x":
            raw += bytes([int(token[2:], 16)])
        elif token[1] in "uU":
            raw += chr(int(token[2:], 16)).encode("utf-8", "surrogatepass")
        else:
            raw += singles[token[1]]
    assert display_name(raw) == text, "not a display name: some backslash starts no escape"
    return raw


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (b"ada", "ada"),
        ("café 李".encode(), "café 李"),
        (b"caf\xe9", r"caf\xe9"),  # Latin-1: not UTF-8
        (b"caf\\xe9", r"caf\\xe9"),  # the backslash itself is escaped: not the name above
        (b"new\nline", r"new\nline"),
        (b"\tTAB", r"\tTAB"),
        (b"cr\r", r"cr\r"),
        (b"\x1b[31mred\x7f", r"\x1b[31mred\x7f"),
        (b"\x85", r"\x85"),  # a lone byte 0x85 ...
        ("\x85".encode(), r"\u0085"),  # ... is not the character U+0085 (NEL, two bytes)
        ("\u202eevil\u2028".encode(), r"\u202eevil\u2028"),
        ("\U000e0001".encode(), r"\U000e0001"),
        (b"=cmd()", "=cmd()"),
        (b"-rf", "-rf"),
    ],
)
def test_the_display_name_of_a_name_is_its_bytes_with_backslash_escapes(raw, shown):
    assert display_name(raw) == shown == display_name(os.fsdecode(raw))
    assert shown.isprintable() and undisplay(shown) == raw


def test_different_names_never_share_a_display_name():
    alphabet = [bytes([b]) for b in range(256)] + [c.encode() for c in "\\xu0e9é李\u0085\u2028\U0001f600"]
    rng = random.Random(13)
    for _ in range(3000):
        raw = b"".join(rng.choices(alphabet, k=rng.randrange(1, 12)))
        shown = display_name(raw)
        assert shown.isprintable() and shown.encode("utf-8") and undisplay(shown) == raw


def test_a_long_display_name_gets_a_short_file_name_of_its_own(tmp_path):
    long_ones = [b"\xff" * 254 + end for end in (b"a", b"b")] + [b"\\" * 255, "李".encode() * 85]
    names = [display_name(raw) for raw in long_ones]
    files = [file_name(name) for name in names]
    assert len(set(files)) == len(files)
    for name, short in zip(names, files, strict=True):
        assert len(short.encode()) <= NAME_BYTES and "\\~" in short and "\\~" not in name
        (tmp_path / short).mkdir()
        (tmp_path / f"{short}.xml").write_text("ok")
    assert file_name("ada") == "ada" and file_name(r"caf\xe9") == r"caf\xe9"
    assert batch.record_path(tmp_path, names[0], SLUG) != batch.record_path(tmp_path, names[1], SLUG)


def test_the_csv_quotes_every_cell_a_spreadsheet_would_run():
    names = ["=cmd()", "+1", "-rf", "@SUM(A1)", "\tTAB", "'quoted", "ada", r"\tTAB", r"\rCR"]
    entry = {"status": "graded", "score": 1.0, "points": {"todo1": 1}, "max": 1}
    sheet = {"katas": [SLUG], "points": {SLUG: {"todo1": 1}}, "students": {name: {SLUG: entry} for name in names}}
    rows = list(csv.reader(io.StringIO(gradesheet.grades_csv(sheet))))[1:]
    quoted = ["'=cmd()", "'+1", "'-rf", "'@SUM(A1)", "'\tTAB", "''quoted", "ada", r"\tTAB", r"\rCR"]
    written = [row[0] for row in rows]  # the rows in natural order (names.natural_key)
    assert written == [quoted[names.index(name)] for name in sorted(names, key=natural_key)]
    assert sorted(cell[1:] if cell.startswith("'") else cell for cell in written) == sorted(names)  # drop one quote
    assert gradesheet._cell("\rCR") == "'\rCR"  # no display name holds a CR, but a cell never starts with one


def test_xml_and_json_hold_any_text():
    message = "bad \x1b[31m \udce9 \ufffe \\ end\nsecond line"
    row = {SLUG: {"status": "graded", "seconds": 1.0, "load_error": None, "checks": []}}
    row[SLUG]["checks"] = [{"name": "shape", "status": "failed", "message": message, "misconception": None}]
    suites = ElementTree.fromstring(gradesheet.junit_xml(r"caf\xe9", row).encode())
    assert suites.get("name") == r"caf\xe9"
    failure = suites.find("testsuite/testcase/failure")
    assert failure.text == "bad \\x1b[31m \\xe9 \\ufffe \\ end\nsecond line"
    assert failure.get("message") == "bad \\x1b[31m \\xe9 \\ufffe \\ end"
    data = {"student": "caf\udce9", "message": message}
    assert json.loads(json_text(data).encode("utf-8")) == data
    assert "李" in json_text({"name": "李"})  # readable when it can be


def make(path: bytes, text: str | None = None) -> None:
    """A folder (text None) or a file at a raw path."""
    if text is None:
        os.mkdir(path)
    else:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)


CLASS = {  # raw folder name -> display name; each holds a wrong file but the last
    b"caf\xe9": r"caf\xe9",
    b"new\nline": r"new\nline",
    b"=cmd()": "=cmd()",
    b"-rf": "-rf",
    b"\tTAB": r"\tTAB",
    b"caf\\xe9": r"caf\\xe9",  # correct: the reference
}


def make_class(root) -> None:
    base = os.fsencode(str(root))
    make(base)
    for raw in CLASS:
        make(base + b"/" + raw)
        make(base + b"/" + raw + f"/{SLUG}.py".encode(), WRONG)
    make(base + b"/caf\\xe9/" + f"{SLUG}.py".encode(), get_kata(SLUG).solution())
    make(base + b"/caf\xe9/notes\xff.txt", "a helper it brings along")
    make(base + b"/caf\xe9/\xff.py", "pass\n")  # named after no kata
    make(base + b"/stray\x01file", "not a student")


def test_discovery_and_the_scratch_copy_take_any_name(tmp_path):
    make_class(tmp_path / "class")
    roster = batch.discover(tmp_path / "class", None, batch.Settings())
    assert sorted(roster.students) == sorted(CLASS.values())
    assert sorted(job.student for job in roster.jobs) == sorted(CLASS.values())
    assert roster.strays == {r"caf\xe9": [r"\xff.py"]} and roster.ignored == [r"stray\x01file"]
    (job,) = [job for job in roster.jobs if job.student == r"caf\xe9"]
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    staging.copy_folder(job.folder, scratch, f"{SLUG}.py")
    assert sorted(os.listdir(os.fsencode(str(scratch)))) == sorted(
        [b"\xff.py", f"{SLUG}.py".encode(), b"notes\xff.txt"]
    )


@pytest.mark.slow
def test_a_class_of_odd_names_is_graded_and_written_one_way_everywhere(kata_main, tmp_path):
    submissions, out = tmp_path / "class", tmp_path / "out"
    make_class(submissions)
    command = ["grade", str(submissions), "--out", str(out), "--timeout", "3", "--workers", "2"]
    result = kata_main(*command)
    assert result.status == 0, result.output
    shown = sorted(CLASS.values())

    sheet = json.loads((out / "grades.json").read_text(encoding="utf-8"))
    assert sorted(sheet["students"]) == shown
    scores = {student: row[SLUG]["score"] for student, row in sheet["students"].items()}
    assert scores.pop(r"caf\\xe9") == 1.0 and all(score < 1 for score in scores.values())
    assert sheet["strays"] == {r"caf\xe9": [r"\xff.py"]} and sheet["ignored"] == [r"stray\x01file"]

    text = (out / "grades.csv").read_text(encoding="utf-8")
    assert len(text.splitlines()) == 1 + len(CLASS)  # no name breaks a line
    rows = list(csv.reader(io.StringIO(text)))[1:]
    assert sorted(row[0] for row in rows) == sorted(
        "'" + name if name[0] in FORMULA_STARTS else name for name in CLASS.values()
    )
    assert not any(row[0].startswith(FORMULA_STARTS) for row in rows)

    assert sorted(p.name for p in (out / "junit").iterdir()) == sorted(f"{name}.xml" for name in shown)
    assert sorted(p.name for p in (out / "results").iterdir()) == shown
    for name in shown:
        suites = ElementTree.parse(out / "junit" / f"{name}.xml").getroot()
        assert suites.get("name") == name and suites.find("testsuite/testcase").get("classname") == f"{name}.{SLUG}"
        record = json.loads(batch.record_path(out, name, SLUG).read_text(encoding="utf-8"))
        assert record["student"] == name and record["grade"]["target"] == f"{name}/{SLUG}.py"

    assert r"caf\xe9: \xff.py named after no kata" in result.output
    assert r"stray\x01file" in result.output
    again = kata_main(*command)
    assert again.status == 0 and f"graded 0, unchanged {len(CLASS)}" in again.output, again.output


@pytest.mark.parametrize(
    ("stem", "slug"),
    [
        ("GRPO_loss", "grpo_loss"),  # case
        ("dpo_loss (1)", "dpo_loss"),  # a browser's copy
        ("dpo_loss-2", "dpo_loss"),  # a system's copy
        ("grpo-loss", "grpo_loss"),
        ("grpo loss", "grpo_loss"),
        ("grop_loss", "grpo_loss"),  # two letters swapped: 2 edits
        ("kl_estimator", "kl_estimators"),
        ("notes", None),
        ("grpo", None),  # 5 edits away
        ("xpo_loss", None),  # 1 edit from dpo_loss, 2 from grpo_loss: which one is not for us to guess
    ],
)
def test_a_name_near_a_kata_is_that_kata(stem, slug):
    slugs = ["grpo_loss", "dpo_loss", "sft_loss", "kl_estimators"]
    assert near_slug(stem, slugs) == slug


def test_a_misnamed_file_is_graded_nowhere_but_named(tmp_path):
    from grader.classroom import feedback

    for student, name in (("ann", "Group_Advantages.py"), ("bob", "group_advantages (1).py"), ("cy", "notes.py")):
        (tmp_path / student).mkdir()
        (tmp_path / student / name).write_text("x = 1\n")
    roster = batch.discover(tmp_path, None, batch.Settings())
    assert roster.jobs == [] and roster.katas == ["group_advantages"]
    assert roster.misnamed == {
        "ann": {"group_advantages": ["Group_Advantages.py"]},
        "bob": {"group_advantages": ["group_advantages (1).py"]},
    }
    assert roster.strays == {"cy": ["notes.py"]}
    sheet = gradesheet.build_sheet(roster, {})
    assert sheet["misnamed"] == roster.misnamed
    assert sheet["students"]["ann"]["group_advantages"]["misnamed"] == ["Group_Advantages.py"]
    assert "misnamed" not in sheet["students"]["cy"]["group_advantages"]
    text = feedback.feedback_text(SLUG, None, "en", found=roster.not_graded("ann", SLUG))
    assert "did you mean group_advantages.py? Not graded, as it is named: Group_Advantages.py" in text
    assert "是不是应当叫 group_advantages.py" in feedback.feedback_text(SLUG, None, "zh", found={"misnamed": ["a.py"]})
    assert "did you mean" not in feedback.feedback_text(SLUG, None, "en", found=roster.not_graded("cy", SLUG))


def test_a_kata_file_is_found_anywhere_in_the_folder_unless_there_are_several(tmp_path):
    """hw3/group_advantages.py is graded in hw3 (its siblings staged with it); two files of one
    name are graded nowhere, and the feedback lists both."""
    from grader.classroom import feedback

    for student, names in (
        ("ann", ["hw3/group_advantages.py", "hw3/helper.py", "notes/utils.py"]),
        ("bob", ["group_advantages.py", "old/group_advantages.py"]),
        ("cy", ["hw3/.hidden/group_advantages.py", "__pycache__/dpo_loss.py"]),
    ):
        for name in names:
            (tmp_path / student / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / student / name).write_text("x = 1\n")
    roster = batch.discover(tmp_path, None, batch.Settings())
    assert [(job.student, job.slug, job.folder) for job in roster.jobs] == [("ann", SLUG, tmp_path / "ann" / "hw3")]
    assert roster.several == {"bob": {SLUG: ["group_advantages.py", "old/group_advantages.py"]}}
    assert roster.strays == {} and roster.katas == [SLUG]  # helpers in sub-folders are not strays
    text = feedback.feedback_text(SLUG, None, "en", found=roster.not_graded("bob", SLUG))
    assert text.startswith("several group_advantages.py in your folder, so none was graded") and "old/" in text
    sheet = gradesheet.build_sheet(roster, {})
    assert sheet["several"] == roster.several and sheet["students"]["bob"][SLUG]["several"]
    assert sheet["students"]["cy"][SLUG]["status"] == "missing"  # hidden folders and caches are not looked into


def test_written_files_are_made_like_any_user_file_and_results_stay_private(tmp_path):
    """Feedback, grades and reports are for sharing: 0666 less the umask (not a temporary file's
    0600), a replaced file keeps its mode; the per-file results are the instructor's only (0700)."""
    from grader.content import seeds
    from grader.files import atomic_write

    old = os.umask(0o027)
    try:
        atomic_write(tmp_path / "new.txt", "x")
        assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o640
        (tmp_path / "new.txt").chmod(0o604)
        atomic_write(tmp_path / "new.txt", "y")
        assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o604
        seeds.write_course(tmp_path / "course.toml", seeds.new_course())
        assert stat.S_IMODE((tmp_path / "course.toml").stat().st_mode) == 0o600
        batch.save_record(tmp_path / "out", {"student": "ann", "kata": SLUG, "grade": {}})
        assert stat.S_IMODE((tmp_path / "out" / "results").stat().st_mode) == 0o700
    finally:
        os.umask(old)
