"""`kata drill`: blanks chosen from the reference, typed back in the terminal or in a drill file.

The pure part (positions, drills, judging answers) is tested for every kata and several seeds; the
command through the `kata_main` fixture (conftest). Each `--check` spawns a grading run (seconds), so there are
three: a right, a wrong and an equivalent filling.
"""

import ast
import io
import json
import keyword
import re
import tokenize
from pathlib import Path

import pytest
from rich.console import Console

from grader.content import drill, quiz, render
from grader.content.catalogue import all_katas, get_kata
from grader.report.styles import THEME

SLUGS = [kata.slug for kata in all_katas()]
SEEDS = range(5)
PUNCTUATION = set("()[]{},:;.=") | {"->", "**", "*"}


def _drills(slug: str):
    for seed in SEEDS:
        for level in drill.LEVELS:
            yield drill.make_drill(slug, seed, level)


def _token_bounds(source: str) -> set[int]:
    """Every offset at which a token of `source` starts or ends."""
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    bounds = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        bounds.add(starts[token.start[0] - 1] + token.start[1])
        bounds.add(starts[token.end[0] - 1] + token.end[1])
    return bounds


def _wrong(answer: str) -> str:
    return "wrong_name" if answer != "wrong_name" else "other_name"


# -- the pure part, for every kata ---------------------------------------------------------------
@pytest.mark.parametrize("slug", SLUGS)
def test_every_drill_parses_and_the_reference_tokens_fill_it_back_to_the_reference(slug):
    for exercise in _drills(slug):
        ast.parse(exercise.text)
        ast.parse(exercise.file_text())
        assert drill.fill(exercise.text, exercise.answers) == render.solution_source(slug)
        assert drill.answers_in(exercise, drill.fill(exercise.file_text(), exercise.answers)) == exercise.answers


@pytest.mark.parametrize("slug", SLUGS)
def test_each_blank_judges_its_reference_token_right_and_a_wrong_token_wrong(slug):
    for exercise in _drills(slug):
        for answer in exercise.answers:
            assert drill.same_code(answer, answer)
            assert drill.same_code(f"  {' '.join(answer.split())} ", answer)
            assert not drill.same_code(_wrong(answer), answer)


@pytest.mark.parametrize("slug", SLUGS)
def test_the_counts_follow_the_level_and_the_blank_count_and_name_no_position_twice(slug):
    total = len(drill.positions(slug))
    assert total > 0
    for exercise in _drills(slug):
        assert len(exercise.candidates) == total
        assert len(exercise.blanks) == drill.blank_count(total, exercise.level)
        assert len(set(exercise.blanks)) == len(exercise.blanks)
        numbers = [str(number) for number in range(1, len(exercise.blanks) + 1)]
        assert drill.PLACEHOLDER.findall(exercise.text) == numbers
    assert drill.blank_count(total, blanks=3) == min(3, total)
    assert drill.blank_count(total, blanks=10_000) == total
    assert drill.blank_count(total, ratio=1.0) == total
    assert len(drill.make_drill(slug, 1, None, blanks=2).blanks) == min(2, total)


@pytest.mark.parametrize("slug", SLUGS)
def test_the_same_seed_gives_the_same_drill_and_another_seed_another(slug):
    for seed in SEEDS:
        assert drill.make_drill(slug, seed, "medium") == drill.make_drill(slug, seed, "medium")
    if len(drill.positions(slug)) >= 10:
        texts = {drill.make_drill(slug, seed, "medium").text for seed in SEEDS}
        assert len(texts) == len(SEEDS)


@pytest.mark.parametrize("slug", SLUGS)
def test_a_position_never_splits_a_token_and_is_never_punctuation_or_a_keyword_alone(slug):
    source = render.solution_source(slug)
    bounds = _token_bounds(source)
    regions = render.find_regions(source)
    for position in drill.positions(slug):
        assert position.start in bounds and position.end in bounds, position
        assert source[position.start : position.end] == position.text
        assert any(region.start + 1 < position.line < region.end + 1 for region in regions), position
        text = position.text.strip()
        assert text not in PUNCTUATION and not text.isspace()
        assert not (text.isidentifier() and keyword.iskeyword(text)), position


def test_concepts_has_one_blank_per_answer():
    source = render.solution_source("concepts")
    answers = [node for node in ast.parse(source).body if isinstance(node, ast.Assign) and node.lineno > 26]
    assert [p.text for p in drill.positions("concepts")] == [ast.get_source_segment(source, a.value) for a in answers]
    assert len(answers) == len(quiz.load_questions("concepts"))


def test_small_expressions_are_one_position_and_their_operands_are_not_positions_of_their_own():
    texts = [p.text for p in drill.positions("grpo_loss")]
    assert "1.0 - clip_range" in texts and "1.0 + clip_range" in texts
    assert "clip_range" not in texts
    assert "torch.exp" in texts  # a dotted name is one position


def test_answers_are_judged_by_tokens():
    assert drill.same_code("a-b", "a - b")
    assert drill.same_code("'c'", '"c"')
    assert drill.same_code("1e-6", "0.000001")
    assert not drill.same_code("1", "1.0")
    assert not drill.same_code("a + b", "b + a")
    assert not drill.same_code("", "x")


def test_a_changed_line_outside_the_blanks_cannot_be_compared_blank_by_blank():
    exercise = drill.make_drill("kl_estimators", 3, "easy")
    filled = drill.fill(exercise.file_text(), exercise.answers)
    assert drill.answers_in(exercise, filled.replace("def k1_kl", "def k1_changed")) is None


def test_the_header_rebuilds_the_same_drill():
    exercise = drill.make_drill("grpo_loss", 11, "hard", function="compute_grpo_loss")
    assert drill.drill_from_file(exercise.file_text()) == exercise
    with pytest.raises(drill.DrillError):
        drill.drill_from_file("print('not a drill')\n")


def test_a_function_option_blanks_only_that_functions_code():
    exercise = drill.make_drill("kl_estimators", 0, "hard", function="k3_kl")
    assert exercise.candidates and all("k3_kl" in p.functions for p in exercise.candidates)
    with pytest.raises(drill.DrillError, match="k3_kl"):
        drill.make_drill("kl_estimators", 0, "hard", function="nope")


def test_best_scores_keep_the_best_of_each_level():
    scores = drill.best_scores(None, "easy", 3, 5, "t1")
    scores = drill.best_scores(scores, "easy", 2, 5, "t2")
    scores = drill.best_scores(scores, "hard", 1, 10, "t3")
    assert scores == {"easy": {"right": 3, "blanks": 5, "at": "t1"}, "hard": {"right": 1, "blanks": 10, "at": "t3"}}


# -- the terminal drill --------------------------------------------------------------------------
def _console() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, width=120, theme=THEME, color_system=None), buffer


def test_ask_judges_each_answer_at_once_shows_the_expected_token_and_ends_with_score_and_time():
    exercise = drill.make_drill("kl_estimators", 3, "easy")
    typed = iter([exercise.answers[0].replace(".", " . "), "nonsense", *exercise.answers[2:]])
    ticks = iter([100.0, 165.0])
    console, buffer = _console()
    score = drill.ask(exercise, lambda prompt: next(typed), console, lambda: next(ticks))
    out = buffer.getvalue()
    assert (score.right, score.answered, score.total, score.stopped) == (len(exercise.blanks) - 1, 5, 5, False)
    assert f"✗ expected {exercise.answers[1]}" in out
    assert f"{len(exercise.blanks) - 1} of {len(exercise.blanks)} right in 1m 05s" in out
    assert "__1__" in out


def test_ask_stops_at_end_of_input_with_what_was_answered():
    exercise = drill.make_drill("kl_estimators", 3, "easy")
    typed = iter(exercise.answers[:2])

    def read(prompt):
        answer = next(typed, None)
        if answer is None:
            raise EOFError
        return answer

    console, _ = _console()
    score = drill.ask(exercise, read, console, iter([0.0, 1.0]).__next__)
    assert (score.answered, score.right, score.stopped) == (2, 2, True)


def test_interactive_drill_through_the_command_records_the_best_score(kata_main, tmp_path):
    exercise = drill.make_drill("kl_estimators", 3, "easy")
    typed = "\n".join(exercise.answers) + "\n"
    status, out, _ = kata_main(
        "drill", "kl_estimators", "--seed", 3, "--level", "easy", "-i", "--workspace", tmp_path, input=typed
    )
    assert status == 0, out
    assert f"{len(drill.positions('kl_estimators'))} positions are blankable; 5 blanked" in out
    assert "5 of 5 right" in out
    progress = json.loads((tmp_path / ".progress.json").read_text())
    assert progress["katas"]["kl_estimators"]["drill"]["easy"]["right"] == 5
    assert not (tmp_path / "kl_estimators.py").exists()
    status, out, _ = kata_main("list", "--workspace", tmp_path)
    assert "drill: easy 5/5" in out


# -- the drill file ------------------------------------------------------------------------------
def test_file_mode_writes_the_drill_file_never_the_kata_file_and_refuses_to_overwrite(kata_main, tmp_path):
    kata_file = tmp_path / "dpo_loss.py"
    kata_file.write_text("mine\n")
    status, out, _ = kata_main("drill", "dpo_loss", "--seed", 4, "--workspace", tmp_path)
    path = tmp_path / "drills" / "dpo_loss.drill.py"
    assert status == 0
    assert path.read_text() == drill.make_drill("dpo_loss", 4, "medium").file_text()
    assert kata_file.read_text() == "mine\n"
    status, _, err = kata_main("drill", "dpo_loss", "--seed", 5, "--workspace", tmp_path)
    assert status == 1 and "already exists" in err
    assert path.read_text() == drill.make_drill("dpo_loss", 4, "medium").file_text()
    status, _, _ = kata_main("drill", "dpo_loss", "--seed", 5, "--force", "--workspace", tmp_path)
    assert status == 0 and path.read_text() == drill.make_drill("dpo_loss", 5, "medium").file_text()
    assert [p.name for p in (tmp_path / ".backups").iterdir()][0].startswith("dpo_loss.drill.")
    status, _, err = kata_main("drill", "dpo_loss", "--out", kata_file, "--workspace", tmp_path)
    assert status == 1 and kata_file.read_text() == "mine\n"


@pytest.mark.parametrize(
    "args",
    [
        ["--blanks", "3", "--ratio", "0.5"],
        ["--level", "easy", "--blanks", "3"],
        ["--check", "pyproject.toml", "--out", "x.py"],
        ["--check", "pyproject.toml", "--seed", "3"],
        ["--function", "no_such_function"],
        ["--ratio", "0"],
    ],
)
def test_usage_errors_exit_2(kata_main, args, tmp_path, monkeypatch):
    monkeypatch.chdir(Path(__file__).resolve().parent.parent)
    assert kata_main("drill", "kl_estimators", "--workspace", tmp_path, *args).status == 2


def test_checking_a_file_that_is_not_a_drill_exits_2(kata_main, tmp_path):
    other = tmp_path / "other.py"
    other.write_text("x = 1\n")
    assert kata_main("drill", "kl_estimators", "--check", other).status == 2


@pytest.mark.slow
def test_check_grades_blank_by_blank_and_by_the_checks(kata_main, tmp_path):
    exercise = drill.make_drill("kl_estimators", 3, "easy")
    right = tmp_path / "right.drill.py"
    right.write_text(drill.fill(exercise.file_text(), exercise.answers))
    status, out, _ = kata_main("drill", "kl_estimators", "--check", right, "--workspace", tmp_path)
    assert status == 0, out
    assert "5 of 5 blanks as in the reference" in out and "passes all" in out
    assert (
        json.loads((tmp_path / ".progress.json").read_text())["katas"]["kl_estimators"]["drill"]["easy"]["right"] == 5
    )

    wrong_answers = list(exercise.answers)
    wrong_answers[4] = "mask"  # ~mask: the kept values would be the masked-out ones
    wrong = tmp_path / "wrong.drill.py"
    wrong.write_text(drill.fill(exercise.file_text(), wrong_answers))
    status, out, _ = kata_main("drill", "kl_estimators", "--check", wrong, "--workspace", tmp_path)
    assert status == 1
    assert "4 of 5 blanks as in the reference" in out
    assert "the reference has ~mask" in " ".join(out.split())
    assert (
        json.loads((tmp_path / ".progress.json").read_text())["katas"]["kl_estimators"]["drill"]["easy"]["right"] == 5
    )


@pytest.mark.slow
def test_check_reports_an_equivalent_answer_that_behaves_correctly(kata_main, tmp_path):
    exercise = drill.make_drill("concepts", 0, None, blanks=12)
    answers = list(exercise.answers)
    answers[0] = "0.8808"  # sigmoid(2), written as a number
    path = tmp_path / "concepts.drill.py"
    path.write_text(drill.fill(exercise.file_text(), answers))
    status, out, _ = kata_main("drill", "concepts", "--check", path, "--workspace", tmp_path)
    assert status == 0, out
    assert "but the checks pass: equivalent" in " ".join(out.split())
    assert "11 of 12 blanks as in the reference" in out


@pytest.mark.parametrize("slug", ["group_advantages", "grpo_loss", "reward_model"])
def test_a_chinese_drill_file_has_the_chinese_docstrings_and_reads_back(slug):
    """The drill file under zh carries the exercise's Chinese docstrings (outside every blank), and
    the answers written into it are read back as written."""
    exercise = drill.make_drill(slug, seed=5)
    text = exercise.file_text("zh")
    module = ast.get_docstring(ast.parse(drill.fill(text, exercise.answers)))
    assert re.search(r"[\u4e00-\u9fff]", module) and module.strip() == get_kata(slug).docstrings("zh")["module"].strip()
    assert drill.answers_in(exercise, drill.fill(text, exercise.answers)) == exercise.answers


@pytest.mark.slow
def test_an_answer_the_checks_accept_on_its_own_counts_beside_a_wrong_one_and_the_report_names_the_drill(
    kata_main, tmp_path
):
    exercise = drill.make_drill("concepts", 0, None, blanks=12)
    answers = list(exercise.answers)
    answers[0] = "0.8808"  # sigmoid(2), written as a number: the checks accept it
    answers[1] = "no_such_name"  # the file no longer loads: a NameError
    path = tmp_path / "concepts.drill.py"
    path.write_text(drill.fill(exercise.file_text(), answers))

    status, out, _ = kata_main("drill", "concepts", "--check", path, "--workspace", tmp_path)
    text = " ".join(out.split())

    assert status == 1
    assert "but the checks pass: equivalent" in text and "10 of 12 blanks as in the reference" in text
    assert "11 of 12 right, the equivalent answers counted" in text
    assert f"then run: kata drill concepts --check {path}" in text
    assert "run: kata check concepts" not in text
