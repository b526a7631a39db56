"""`kata list`: the katas in learning order, their status, the next command; in text and JSON."""

import io
import json
import re

import pytest
from cli_support import CJK, all_slugs, kata_script, list_blocks, list_json, list_rows, list_table, record_check
from rich.console import Console

from grader.cli.listing import _cells, build_listing, plain_listing
from grader.cli.listing import _width as cells
from grader.cli.workspace import Workspace
from grader.content.catalogue import DIFFICULTIES, all_katas, get_kata
from grader.report.styles import THEME

ANSI = re.compile(r"\x1b\[[0-9;]*m")

ROW_KEYS = {"slug", "order", "title", "difficulty", "status", "prerequisites", "file", "last_check"}

pytestmark = pytest.mark.usefixtures("isolated")


def test_list_shows_the_katas_in_learning_order_with_the_first_one_next(kata_main, workspace):
    katas = all_katas()
    run = kata_main("list", "--workspace", workspace)

    assert run.status == 0
    blocks = list_blocks(run.out)
    assert list(blocks) == [kata_.slug for kata_ in katas]
    orders = [kata_.order for kata_ in katas]
    assert orders == sorted(orders)
    for kata_ in katas:
        first, *rest = blocks[kata_.slug]
        assert first == f"{kata_.order}  {kata_.slug}  {kata_.difficulty}  not started"
        assert " ".join(line.strip() for line in rest) == " ".join(
            [kata_.title["en"]] + ([f"after {', '.join(kata_.prerequisites)}"] if kata_.prerequisites else [])
        )
    assert all_slugs().index("group_advantages") < all_slugs().index("grpo_loss")
    assert run.out.split("\n\n")[1].splitlines() == [f"Next: kata start {katas[0].slug}"]
    assert not workspace.exists(), "listing must not create the workspace"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_piped_list_is_plain_lines_of_80_columns_that_never_cut_a_slug(tmp_path, lang):
    run = kata_script("list", "--workspace", tmp_path / "ws", "--lang", lang, cwd=tmp_path)

    assert run.status == 0, run.err
    lines = run.out.splitlines()
    assert all(cells(line) <= 80 and line == line.rstrip() for line in lines), run.out
    blocks = list_blocks(run.out)
    assert list(blocks) == all_slugs()
    digits = max(len(str(get_kata(slug).order)) for slug in blocks)
    for slug, (first, *rest) in blocks.items():
        indent = digits + 2  # under the slug, after the numbers right-aligned to the widest
        assert first.split()[1] == slug and all(line[:indent].isspace() and line[indent] != " " for line in rest)
        prerequisites = get_kata(slug).prerequisites
        assert set(prerequisites) <= set(" ".join(rest).replace(",", " ").replace("、", " ").split())
    assert "…" not in run.out


@pytest.mark.parametrize("width", [80, 100, 200])
def test_on_a_terminal_the_table_keeps_every_slug_whole_and_fits_the_width(kata_main, workspace, width):
    listing = list_json(kata_main, workspace, "--lang", "zh")
    console = Console(file=io.StringIO(), width=width, force_terminal=True, theme=THEME)
    console.print(build_listing(listing))
    text = ANSI.sub("", console.file.getvalue())

    assert text.split()[:5] == ["#", "kata", "title", "difficulty", "status"]
    for kata_ in all_katas():
        assert re.search(rf"^ *{kata_.order}  {kata_.slug} ", text, flags=re.MULTILINE), text
    assert all(cells(line) <= width for line in text.splitlines())
    assert "…" not in text and text.splitlines()[-1] == f"Next: kata start {all_slugs()[0]}"


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("width", [72, 80, 100])
def test_the_table_never_cuts_a_word_of_a_status_with_drill_scores_or_a_slug(kata_main, workspace, width, lang):
    record_check(workspace, "concepts", 5, 0, [])
    assert kata_main("start", "token_logprobs", "--workspace", workspace).status == 0
    record_check(workspace, "token_logprobs", 20, 6, [1])
    scores = {"easy": {"right": 5, "blanks": 6}, "hard": {"right": 9, "blanks": 20}}
    Workspace(workspace).update("concepts", drill=scores)
    Workspace(workspace).update("token_logprobs", drill=scores)
    listing = list_json(kata_main, workspace, "--lang", lang)
    console = Console(file=io.StringIO(), width=width, force_terminal=True, theme=THEME)
    console.print(build_listing(listing, lang))
    text = ANSI.sub("", console.file.getvalue())

    words = set(text.replace("、", " ").split())
    for row in listing["katas"]:
        status = _cells(row, lang)[5]
        assert set(status.replace("、", " ").split()) <= words, (status, text)
        assert set(row["prerequisites"]) <= words, text
    if lang == "en":  # the status column, read down each row, is the status whole
        lines = text.splitlines()
        column = lines[0].index("status")
        starts = [i for i, line in enumerate(lines) if re.match(r"^ *\d+  [a-z_]+ ", line)] + [len(lines)]
        for row, start, end in zip(listing["katas"], starts, starts[1:]):
            shown = " ".join(line[column:].strip() for line in lines[start:end] if line[column:].strip())
            assert shown == _cells(row, lang)[5], text
    assert all(cells(line) <= width for line in text.splitlines())


def test_a_terminal_narrower_than_the_table_gets_the_plain_blocks(kata_main, workspace):
    listing = list_json(kata_main, workspace)
    console = Console(file=io.StringIO(), width=50, force_terminal=True, theme=THEME)
    console.print(build_listing(listing))

    assert ANSI.sub("", console.file.getvalue()).rstrip("\n") == plain_listing(listing, 50)


def test_a_wrapped_line_breaks_between_words_under_its_own_indentation():
    listing = {
        "katas": [
            {
                "slug": "delivery_decisions",
                "order": 9,
                "title": "GRPO delivery decisions: rollout contract, candidate gates",
                "difficulty": "medium",
                "status": "in progress",
                "prerequisites": ["group_advantages", "kl_estimators"],
                "last_check": {"passed": 20, "failed": 6, "failing_todos": [12]},
            }
        ],
        "next": "kata hint delivery_decisions --todo 12",
    }

    assert plain_listing(listing, width=30).splitlines() == [
        "9  delivery_decisions  medium",
        "   in progress (20/26 checks)",
        "   GRPO delivery decisions:",
        "   rollout contract, candidate",
        "   gates",
        "   after group_advantages,",
        "   kl_estimators",
        "",
        "Next: kata hint",
        "      delivery_decisions",
        "      --todo 12",
    ]


def test_list_json_has_one_row_per_kata_with_every_field_and_the_next_command(kata_main, workspace):
    listing = list_json(kata_main, workspace)

    assert set(listing) == {"katas", "next"}
    assert [row["slug"] for row in listing["katas"]] == all_slugs()
    seen = set()
    for row in listing["katas"]:
        expected = get_kata(row["slug"])
        assert set(row) == ROW_KEYS
        assert row["status"] == "not started"
        assert row["last_check"] is None
        assert row["order"] == expected.order
        assert row["title"] == expected.title["en"]
        assert row["difficulty"] == expected.difficulty and row["difficulty"] in DIFFICULTIES
        assert row["prerequisites"] == list(expected.prerequisites)
        assert set(row["prerequisites"]) <= seen, "a kata comes after every kata it builds on"
        assert row["file"] == str(workspace / f"{row['slug']}.py")
        seen.add(row["slug"])
    orders = [row["order"] for row in listing["katas"]]
    assert orders == sorted(orders)
    assert "group_advantages" in list_rows(kata_main, workspace)["grpo_loss"]["prerequisites"]
    assert listing["next"] == f"kata start {all_slugs()[0]}"


def test_list_reports_passed_in_progress_and_points_at_the_kata_in_progress(kata_main, workspace):
    record_check(workspace, "group_advantages", 7, 0, [])
    assert kata_main("start", "grpo_loss", "--workspace", workspace).status == 0

    listing = list_json(kata_main, workspace)
    text = kata_main("list", "--workspace", workspace).out

    expected = {"group_advantages": "passed", "grpo_loss": "in progress"}
    assert {row["slug"]: row["status"] for row in listing["katas"]} == {
        slug: expected.get(slug, "not started") for slug in all_slugs()
    }
    assert listing["next"] == "kata check grpo_loss"
    assert list_table(text)["group_advantages"].endswith("passed")
    assert list_table(text)["grpo_loss"].endswith("in progress")
    assert text.splitlines()[-1] == "Next: kata check grpo_loss"


def test_list_sends_a_learner_with_failing_checks_to_the_hint_of_the_first_failing_todo(kata_main, workspace):
    assert kata_main("start", "grpo_loss", "--workspace", workspace).status == 0
    record_check(workspace, "grpo_loss", 20, 6, [3, 4])

    text = kata_main("list", "--workspace", workspace).out
    row = list_rows(kata_main, workspace)["grpo_loss"]

    assert row["last_check"]["passed"] == 20 and row["last_check"]["failing_todos"] == [3, 4]
    assert list_table(text)["grpo_loss"].endswith("in progress (20/26 checks)")
    assert text.splitlines()[-1] == "Next: kata hint grpo_loss --todo 3"


def test_list_says_every_kata_passed_when_there_is_nothing_left(kata_main, workspace):
    for slug in all_slugs():
        record_check(workspace, slug, 5, 0, [])

    assert {row["status"] for row in list_json(kata_main, workspace)["katas"]} == {"passed"}
    assert list_json(kata_main, workspace)["next"] is None
    assert kata_main("list", "--workspace", workspace).out.splitlines()[-1] == "Every kata passed."


def test_list_shows_chinese_titles_with_lang_zh(kata_main, workspace):
    rows = list_rows(kata_main, workspace, "--lang", "zh")
    text = kata_main("list", "--workspace", workspace, "--lang", "zh").out

    for slug in ("group_advantages", "grpo_loss"):
        title = get_kata(slug).title["zh"]
        assert rows[slug]["title"] == title
        assert CJK.search(title) and title != get_kata(slug).title["en"]
        assert title in text


def test_list_shows_chinese_titles_when_kata_lang_is_zh(kata_main, monkeypatch, workspace):
    monkeypatch.setenv("KATA_LANG", "zh")

    rows = list_rows(kata_main, workspace)

    assert rows["grpo_loss"]["title"] == get_kata("grpo_loss").title["zh"]


def test_list_falls_back_to_the_locale_when_kata_lang_is_not_a_known_language(monkeypatch, kata_main, workspace):
    monkeypatch.setenv("KATA_LANG", "zh_CN")
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_MESSAGES", raising=False)
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")

    run = kata_main("list", "--workspace", workspace, "--json")

    assert run.status == 0, run.err
    rows = {row["slug"]: row for row in json.loads(run.out)["katas"]}
    assert rows["grpo_loss"]["title"] == get_kata("grpo_loss").title["zh"]


def test_list_does_not_count_a_kata_as_started_when_only_a_hint_was_read(kata_main, workspace):
    assert kata_main("hint", "group_advantages", "--workspace", workspace).status == 0

    listing = list_json(kata_main, workspace)

    assert {row["status"] for row in listing["katas"]} == {"not started"}
    assert listing["next"] == f"kata start {all_slugs()[0]}"
