"""Under --lang zh every line a `kata` command prints is Chinese (issue 19), but for code, paths,
commands, slugs and the machine-readable lines; English stays as it was (the other CLI tests)."""

import ast
import io
import json
import re
import tokenize
import zipfile

import pytest
from chinese_text import CRAMPED, code_names, english_words
from cli_support import CJK, all_slugs, flat, record_check
from gradescope_schema import check_results

from grader.classroom import feedback, gradescope, gradesheet, report_html
from grader.cli.listing import build_listing, listing_rows
from grader.cli.watch import watch_workspace
from grader.cli.workspace import Workspace
from grader.content import drill, render
from grader.content.catalogue import all_katas, get_kata
from grader.content.interface import PHRASES

pytestmark = pytest.mark.usefixtures("isolated")

NAMES = {
    "SLUG",
    "KATA",
    "Ctrl-C",
    "Post",
    "Training",
    "Post-Training",
    "Katas",
}  # placeholders, a key, the project's name


def english_prose(text: str) -> list[str]:
    """The English words of `text` outside code, commands, paths, slugs and values ('…')."""
    return english_words(text, NAMES | set(all_slugs()))


def cramped(text: str) -> list[str]:
    """Each half-width `:,;()?` directly beside a Chinese character (a code span, `…`, counts as one)."""
    return CRAMPED.findall(re.sub(r"`[^`\n]*`", "码", text))


def assert_chinese(text: str) -> None:
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines, "no output"
    assert all(CJK.search(line) for line in lines), text
    assert not english_prose(text), english_prose(text)


def test_every_phrase_has_a_chinese_form_without_english_prose():
    assert PHRASES["zh"].keys() == {key for key in PHRASES["en"] if not key.endswith("_one")}
    for key, text in PHRASES["zh"].items():
        if key not in ("gs_wrote", "drill_minutes", "drill_seconds", "and_", "or"):
            assert not english_prose(re.sub(r"\[/?\w*\]|\{\w+(!r)?(:\w+)?\}", " ", text)), key


def test_start_says_in_chinese_what_it_wrote_and_what_comes_next(kata_main, workspace):
    run = kata_main("start", "grpo_loss", "--workspace", workspace, "--lang", "zh")

    assert run.status == 0
    assert_chinese(run.out)
    assert "已写入" in run.out and "token_logprobs" in flat(run.out) and "尚未通过" in run.out
    header = (workspace / "grpo_loss.py").read_text(encoding="utf-8").splitlines()[1:3]
    assert header == [
        "# 完成每个 TODO，然后运行：kata check grpo_loss",
        "# 卡住了？kata hint grpo_loss    讲义：kata show grpo_loss",
    ]
    again = kata_main("start", "grpo_loss", "--workspace", workspace, "--lang", "zh")
    assert again.status == 1 and "已存在" in again.err
    assert_chinese(again.err)


@pytest.mark.parametrize(
    "argv",
    [
        ("start", "grpo_los", "--lang", "zh"),
        ("--lang", "zh", "show", "grpo_los"),
        ("solution", "nope", "--lang", "zh"),
        ("hint", "grpo_loss", "--todo", "9", "--lang", "zh"),
        ("drill", "dpo_loss", "--level", "easy", "--blanks", "2", "--lang", "zh"),
        ("drill", "dpo_loss", "--function", "nothing_here", "--lang", "zh"),
        ("grade", ".", "--katas", ",", "--lang", "zh"),
        ("grade", ".", "--katas", "grpo_los", "--lang", "zh"),
    ],
)
def test_a_bad_argument_is_one_chinese_line_and_status_2(kata_main, argv):
    run = kata_main(*argv)

    assert run.status == 2 and len(run.err.strip().splitlines()) == 1
    assert "错误" in run.err and "Invalid value" not in run.err
    assert_chinese(run.err)


def test_a_bad_points_file_is_one_chinese_line(kata_main, tmp_path):
    (tmp_path / "class").mkdir()
    (tmp_path / "points.toml").write_text("[grpo_loss]\ntodo9 = 2\n")

    run = kata_main("grade", "class", "--points", "points.toml", "--no-sandbox", "--lang", "zh")

    assert run.status == 2 and "grpo_loss 没有 “todo9”；它有的是 `todo1`、`todo2`" in run.err
    assert_chinese(run.err)


def test_an_unknown_kata_still_suggests_the_closest_in_chinese(kata_main, monkeypatch):
    monkeypatch.setenv("KATA_LANG", "zh")
    run = kata_main("start", "grpo_los")

    assert "你是否想输入“grpo_loss”" in run.err


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (("check", "grpo_loss"), "没有可评分的文件"),
        (("solution", "grpo_loss"), "尚未通过"),
        (("watch",), "没有工作区"),
        (("quiz", "grpo_loss"), "没有概念题"),
    ],
)
def test_a_refused_action_says_why_in_chinese(kata_main, workspace, argv, words):
    run = kata_main(*argv, *(("--workspace", workspace) if argv[0] != "quiz" else ()), "--lang", "zh")

    assert run.status == 1 and words in run.err
    assert_chinese(run.err)


def test_list_shows_statuses_difficulties_and_the_next_step_in_chinese(kata_main, workspace):
    kata_main("start", "grpo_loss", "--workspace", workspace)
    record_check(workspace, "grpo_loss", 3, 2, [2])

    run = kata_main("list", "--workspace", workspace, "--lang", "zh")

    assert run.status == 0
    assert_chinese(run.out.replace("\n\n", "\n"))
    assert "进行中（3/5 项检查）" in run.out and "未开始" in run.out and "下一步：kata hint" in run.out
    assert not re.search(r"\b(easy|medium|hard|in progress|not started|after|Next)\b", run.out)


def test_the_list_table_has_chinese_headers(workspace):
    listing = listing_rows(all_katas(), Workspace(workspace), "zh")
    console = console_of(120)
    console.print(build_listing(listing, "zh"))

    head = console.file.getvalue().splitlines()[0].split()
    assert head == ["#", "练习", "标题", "难度", "状态"]
    assert "所有" not in console.file.getvalue() and "下一步：kata start" in console.file.getvalue()


def test_a_corrupt_progress_file_is_a_chinese_warning(kata_main, workspace):
    workspace.mkdir()
    (workspace / ".progress.json").write_text("{oops")

    run = kata_main("list", "--workspace", workspace, "--lang", "zh")

    assert run.status == 0 and run.err.startswith("警告：无法读取进度文件")


def console_of(width: int):
    from rich.console import Console

    from grader.report.styles import THEME

    return Console(file=io.StringIO(), width=width, theme=THEME, color_system=None)


def test_hint_and_reset_speak_chinese(kata_main, workspace):
    kata_main("start", "grpo_loss", "--workspace", workspace)

    hint = kata_main("hint", "grpo_loss", "--workspace", workspace, "--lang", "zh")
    reset = kata_main("reset", "grpo_loss", "--workspace", workspace, "--lang", "zh")

    assert "第 1 条提示" in hint.out
    assert reset.status == 0 and "已恢复为空白练习" in reset.out
    assert_chinese(flat(reset.out))


def test_quiz_prompts_and_its_end_are_chinese(kata_main):
    run = kata_main("quiz", "concepts", "--lang", "zh", input="")

    assert run.status == 1
    assert "第 1 题，共" in run.out and "测验在第 0 题后结束" in run.out
    assert not re.search(r"\b(Question|answer|stopped|right)\b", run.out)


def test_an_interactive_drill_asks_and_scores_in_chinese(kata_main, tmp_path):
    exercise = drill.make_drill("kl_estimators", 3, "easy")
    typed = "\n".join([exercise.answers[0], "wrong", *exercise.answers[2:]]) + "\n"

    run = kata_main(
        "drill",
        "kl_estimators",
        "--seed",
        3,
        "--level",
        "easy",
        "-i",
        "--workspace",
        tmp_path,
        "--lang",
        "zh",
        input=typed,
    )

    assert "处可挖空，挖空了 5 处（--seed 3，难度：简单）" in run.out
    assert "✓ 正确" in run.out and "✗ 应为" in run.out and "答对 4/5，用时" in run.out
    assert not re.search(r"right in|✗ expected|positions are|blanked|level easy", run.out)


def test_a_drill_file_is_written_and_judged_in_chinese(kata_main, tmp_path):
    run = kata_main("drill", "dpo_loss", "--seed", 4, "--workspace", tmp_path, "--lang", "zh")
    path = tmp_path / "drills" / "dpo_loss.drill.py"
    text = path.read_text(encoding="utf-8")
    exercise = drill.make_drill("dpo_loss", 4, "medium")

    assert run.status == 0 and "已写入" in run.out and "填好每个 __N__" in run.out
    assert "把每个 __N__" in text and drill.drill_from_file(text) == exercise
    assert drill.answers_in(exercise, drill.fill(text, exercise.answers)) == exercise.answers
    again = kata_main("drill", "dpo_loss", "--seed", 4, "--workspace", tmp_path, "--lang", "zh")
    assert again.status == 1 and "已存在" in again.err
    verdicts = [
        drill.Verdict(2, "blank", "__2__", "x_2"),
        drill.Verdict(3, "equivalent", "x_3", "y_3"),
        drill.Verdict(4, "wrong", "x_4", "y_4"),
    ]
    console = console_of(100)
    console.print(drill.verdicts_view(verdicts, "zh"))
    assert_chinese(console.file.getvalue())


def test_watch_says_what_it_watches_in_chinese(workspace):
    workspace.mkdir()
    console = console_of(200)

    watch_workspace(Workspace(workspace), None, 10, False, "zh", console, changes=[])

    assert console.file.getvalue().startswith(f"正在监视 {workspace} 中的所有 kata；按 Ctrl-C 停止")


def _sheet() -> dict:
    from grader.classroom import batch
    from grader.report.results import CheckResult, GradeResult

    results = {"张三": GradeResult("grpo_loss", "x.py", [CheckResult("t1", "", 1, "passed")])}
    roster = batch.Roster(["grpo_loss"], [*results, "李四"], [])
    records = {(student, "grpo_loss"): {"grade": result.to_json()} for student, result in results.items()}
    sheet = gradesheet.build_sheet(roster, records, "todos", None)
    sheet["strays"], sheet["ignored"] = {"张三": ["notes.py"]}, ["README.txt"]
    return sheet


def test_the_class_summary_and_report_page_are_chinese_but_for_the_csv():
    sheet = _sheet()
    console = console_of(100)
    console.print(gradesheet.build_summary(sheet, "zh"))
    page = report_html.report_html(sheet, "zh")

    text = console.file.getvalue()
    assert (
        "各 kata 统计" in text and "得分分布" in text and "2 名学生，1 个文件：1 个通过，0 个未通过，1 个缺交" in text
    )
    assert not english_prose(re.sub(r"\d+–\d+%", " ", text))
    assert '<html lang="zh">' in page and "<h1>班级报告</h1>" in page and ">缺交</td>" in page
    visible = re.sub(r"<style>.*?</style>|<[^>]+>", " ", page, flags=re.S)
    assert not english_prose(visible)
    assert gradesheet.grades_csv(sheet).splitlines()[0].startswith("student,")  # machine-readable: kept
    assert feedback.feedback_text("grpo_loss", None, "zh").startswith("你的文件夹里没有")


def test_gradescope_takes_a_lang_and_its_results_are_chinese(kata_main, tmp_path, monkeypatch):
    from grader.run import sandbox

    run = kata_main("gradescope", "grpo_loss", "--out", tmp_path / "a.zip", "--lang", "zh")
    with zipfile.ZipFile(tmp_path / "a.zip") as archive:
        config = json.loads(archive.read("gradescope.json"))
    monkeypatch.setattr(sandbox, "problem", lambda: "no namespaces")
    (tmp_path / "sub").mkdir()
    settings = gradescope.Autograder.from_json(config | {"output_format": "text"})
    results = gradescope.grade_submission(tmp_path / "sub", settings)
    check_results(results)

    assert run.status == 0 and run.out.startswith(f"已写入 {tmp_path / 'a.zip'}")
    assert config["lang"] == "zh"
    assert results["output"].startswith("已用 `kata check` 的检查评分 grpo_loss.py，未使用操作系统沙箱")
    names = [test["name"] for test in results["tests"]]
    assert names[-1] == "grpo_loss: 输入约定" and get_kata("grpo_loss").todos[0].title["zh"] in names[0]
    assert all(re.match(r"未提交：0 / \d+ 分\n\n你的文件夹里没有", test["output"]) for test in results["tests"])


def test_solution_under_zh_has_the_exercises_chinese_docstrings(kata_main, workspace):
    run = kata_main("solution", "dpo_loss", "--force", "--workspace", workspace, "--lang", "zh")
    english = kata_main("solution", "dpo_loss", "--force", "--workspace", workspace)
    assert run.status == english.status == 0
    assert CJK.search(ast.get_docstring(ast.parse(run.out)))
    assert not CJK.search(english.out)


# -- issue 30, item 4: no English and no half-width punctuation beside Chinese --------------------


def _comments(source: str) -> list[str]:
    """Every comment of a Python source, without its `#`."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return [token.string.removeprefix("#").strip() for token in tokens if token.type == tokenize.COMMENT]


def assert_chinese_comments(source: str, slug: str) -> None:
    """Every comment of `source` (TODO titles, shape comments, a drill's header) is Chinese beside its
    code, with full-width punctuation."""
    names = code_names(render.solution_source(slug))
    for comment in _comments(source):
        words = english_words(comment, NAMES | names | set(all_slugs()) | {"END"})
        assert not words and not cramped(comment), (comment, words)


@pytest.mark.parametrize("slug", all_slugs())
def test_the_solution_under_zh_has_the_exercises_todo_titles_and_chinese_comments(kata_main, workspace, slug):
    run = kata_main("solution", slug, "--force", "--workspace", workspace, "--lang", "zh")

    assert run.status == 0
    titles = [line.strip() for line in run.out.splitlines() if re.match(r"\s*# TODO \d+", line)]
    assert titles == [f"# TODO {todo.number}: {todo.title['zh']}" for todo in get_kata(slug).todos]
    assert_chinese_comments(run.out, slug)


@pytest.mark.parametrize("slug", ["dpo_loss", "grpo_loss", "ppo_gae"])
def test_a_chinese_drill_file_and_its_terminal_view_are_chinese_beside_the_code(slug):
    exercise = drill.make_drill(slug, 7, "easy")
    text = exercise.file_text("zh")
    header = text.partition("\n\n")[0]
    console = console_of(200)
    console.print(drill.code_view(exercise, "zh"))
    view = "\n".join(line[6:] for line in console.file.getvalue().splitlines())

    assert "# 难度：简单" in header and "--check 本文件" in header and "level" not in header
    assert all(CJK.search(line) for line in header.splitlines() if not line.startswith(f"# kata drill {slug} --"))
    assert_chinese_comments(text, slug)
    assert_chinese_comments(view.replace("⋮", ""), slug)
    assert drill.read_header(text) == drill.read_header(exercise.file_text("en"))
    assert drill.read_header(text)["level"] == "easy"
    assert drill.answers_in(exercise, drill.fill(text, exercise.answers)) == exercise.answers


def test_an_interactive_chinese_drill_shows_its_blanks_on_their_chinese_lines(kata_main, tmp_path):
    exercise = drill.make_drill("dpo_loss", 2, None, blanks=3)
    argv = ("drill", "dpo_loss", "--seed", 2, "--blanks", 3, "-i", "--workspace", tmp_path, "--lang", "zh")
    run = kata_main(*argv, input="\n".join(exercise.answers) + "\n")

    lines = drill.drill_from_file(exercise.file_text("zh")).body("zh").splitlines()
    for number, row in drill.blank_rows(exercise.body("zh")).items():
        assert f"{row:4d}  {lines[row - 1].strip()}" in run.out, number
    assert "# TODO" in run.out and "答对 3/3" in run.out
    assert not cramped(run.out) and not english_prose(re.sub(r"^.*(__\d+__|\d  ).*$", "", run.out, flags=re.M))


def test_list_joins_prerequisites_with_chinese_commas(kata_main, workspace):
    run = kata_main("list", "--workspace", workspace, "--lang", "zh")

    assert "需先完成 token_logprobs、group_advantages、kl_estimators" in run.out
    assert not cramped(run.out) and ", " not in run.out


def test_a_chinese_quiz_lists_its_letters_and_key_in_full_width(kata_main):
    run = kata_main("quiz", "concepts", "--lang", "zh", input="0.88\n")

    assert "第 1 题，共 15 题（bt_probability）" in run.out and re.search(r"你的答案（a、b(、[a-z])*）：", run.out)
    assert not cramped(run.out)


def test_a_chinese_report_of_several_wrong_todos_has_full_width_punctuation():
    import torch

    from grader.content.i18n import speaking
    from grader.judging.expect import CheckFailed, Expect
    from grader.report.results import CheckResult, GradeResult, Location
    from grader.report.terminal import build_report

    with speaking("zh"), pytest.raises(CheckFailed) as failed:
        Expect(None, None).same(
            (torch.tensor([1.0]), 2), (torch.tensor([2.0]), 2), "`dpo_loss(x)`", names=("loss", "n")
        )
    message = str(failed.value)
    kata = get_kata("dpo_loss")
    checks = [CheckResult(f"t{todo.number}", "", todo.number, "failed", message) for todo in kata.todos]
    result = GradeResult("dpo_loss", "x.py", checks, location=Location((1, 2, 3, 4), "transplant"))
    console = console_of(100)
    console.print(build_report(result, kata, "zh", "x.py"))

    assert "第 1 个返回值 `loss`：" in message and not cramped(message)
    assert "TODO 1、2、3 和 4" in console.file.getvalue() and not cramped(console.file.getvalue())


@pytest.mark.parametrize(
    "argv",
    [
        ("start", "grpo_los"),
        ("check", "nope"),
        ("hint", "grpo_loss", "--todo", "9"),
        ("drill", "dpo_loss", "--function", "x"),
    ],
)
def test_a_chinese_usage_error_quotes_with_chinese_quotes_and_lists_with_chinese_commas(kata_main, argv):
    run = kata_main(*argv, "--lang", "zh")

    assert run.status == 2 and "'KATA'" not in run.err and not cramped(run.err) and ", " not in run.err
    assert "“KATA” 的值无效" in run.err or "的值无效" in run.err


def test_watch_stopped_by_ctrl_c_says_so_in_chinese(workspace):
    def interrupted():
        raise KeyboardInterrupt
        yield

    workspace.mkdir()
    console = console_of(200)

    try:
        status = watch_workspace(Workspace(workspace), None, 10, False, "zh", console, changes=interrupted())
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C escaped the watch")

    assert status == 0 and console.file.getvalue().rstrip().endswith("已停止监视")
    assert_chinese(console.file.getvalue())
