"""Naming a mistake remembers how each misconception variant fails each check (grader.judging.fingerprints)."""

import json

from grader.content.catalogue import get_kata
from grader.content.i18n import message_language
from grader.judging.fingerprints import MISSING, Fingerprints, fingerprint
from grader.run.grading import fingerprints_folder, run_checks

KATA = get_kata("group_advantages")


def test_a_fingerprint_is_the_kind_of_ending_and_its_message():
    class Subclass(AssertionError):
        pass

    assert fingerprint(None) is None
    assert fingerprint(AssertionError("m")) == fingerprint(Subclass("m")) == ["AssertionError", "m"]
    assert fingerprint(TypeError("m")) == ["builtins.TypeError", "m"]


def test_what_two_runs_put_is_saved_merged_and_read_back(tmp_path):
    first, second = Fingerprints(tmp_path, KATA, "c"), Fingerprints(tmp_path, KATA, "c")
    first.put("check[0]", "eps_added", ["AssertionError", "m"])
    second.put("check[1]", "sample_std", None)
    second.save()
    first.save()
    again = Fingerprints(tmp_path, KATA, "c")
    assert again.get("check[0]", "eps_added") == ["AssertionError", "m"]
    assert again.get("check[1]", "sample_std") is None
    assert again.get("check[1]", "eps_added") is MISSING


def test_other_conditions_another_kata_or_a_damaged_file_start_afresh(tmp_path):
    kept = Fingerprints(tmp_path, KATA, "against=None")
    kept.put("check", "eps_added", None)
    kept.save()
    assert Fingerprints(tmp_path, KATA, "against=None").get("check", "eps_added") is None
    assert Fingerprints(tmp_path, KATA, "against='trl'").get("check", "eps_added") is MISSING
    assert Fingerprints(tmp_path, get_kata("grpo_loss"), "against=None").get("check", "eps_added") is MISSING
    for damaged in ('{"check": {"eps_added": 3}}', "{half", '["check"]'):
        kept.path.write_text(damaged)
        assert Fingerprints(tmp_path, KATA, "against=None").get("check", "eps_added") is MISSING


def test_without_a_folder_nothing_is_kept():
    nowhere = Fingerprints(None, KATA, "c")
    nowhere.put("check", "eps_added", None)
    nowhere.save()
    assert nowhere.path is None


def test_kata_check_remembers_them_and_names_from_what_it_remembers(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    variants = {item.id for item in KATA.misconceptions}

    built_in = run_checks(KATA, "misconception:sample_std")
    assert built_in.diagnosis == "sample_std"
    (path,) = fingerprints_folder().glob(f"{KATA.slug}-*.json")
    stored = {check.split("::test_")[1]: known for check, known in json.loads(path.read_text()).items()}
    for check in built_in.checks:  # a built-in variant's own outcomes are its fingerprints, passes included
        assert (stored[check.name]["sample_std"] is None) == (check.status == "passed"), check.name
    failing = [check.name for check in built_in.checks if check.status == "failed"]
    assert failing and all(set(stored[name]) == variants for name in failing)  # every variant, on what failed

    # what is remembered is what names the mistake: told that every variant passes every check,
    # the same mistake in a learner's file is graded the same and named as nothing
    path.write_text(json.dumps({check: dict.fromkeys(variants) for check in json.loads(path.read_text())}))
    learner = tmp_path / f"{KATA.slug}.py"
    learner.write_text(KATA.variant("sample_std"), encoding="utf-8")
    graded = run_checks(KATA, learner)
    assert [check.status for check in graded.checks] == [check.status for check in built_in.checks]
    assert graded.diagnosis is None


def test_a_mistake_is_named_alike_in_either_language_from_fingerprints_of_its_own(tmp_path, monkeypatch):
    """A run compares the learner's messages with the variants' in the language both were written in:
    each language keeps its own fingerprints, and the same mistake is named in both."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    learner = tmp_path / "group_advantages.py"
    learner.write_text(KATA.variant("sample_std"), encoding="utf-8")
    english, chinese = run_checks(KATA, learner, lang="en"), run_checks(KATA, learner, lang="zh")
    assert english.diagnosis == chinese.diagnosis == "sample_std"
    assert [check.status for check in english.checks] == [check.status for check in chinese.checks]
    messages = {check.message for check in english.checks} ^ {check.message for check in chinese.checks}
    assert messages, "the two runs wrote the same messages: the Chinese one is not Chinese"
    assert len(list(fingerprints_folder().glob(f"{KATA.slug}-*.json"))) == 2
    assert message_language() == "en"  # the run left the process's own language as it was


def test_a_pack_names_a_mistake_whose_numbers_differ_in_the_last_digits():
    """A student pack compares how a check ended with how a variant's run ended where the pack was
    built: the same words, and numbers to 3 significant figures (another CPU rounds differently)."""
    from grader.judging.naming import same_words

    recorded = "f(x=[1.0, 2.0]) at index 1: expected 0.7071068, got 0.7071067 (difference 1e-07)"
    assert same_words(recorded, recorded.replace("0.7071067 ", "0.7071069 "))
    assert same_words(recorded, recorded.replace("1e-07", "1.2e-07"))
    assert not same_words(recorded, recorded.replace("0.7071067 ", "0.7081067 "))  # another value
    assert not same_words(recorded, recorded.replace("index 1", "index 2"))
    assert not same_words(recorded, recorded.replace("expected", "wanted"))
    assert not same_words(recorded, recorded + " 3")


def test_two_failures_printed_differently_but_equal_are_the_same_failure():
    """Issue 31: -0 and 0, noise below the checks' tolerance, the blanks that align a table's columns and
    a dict's order are how a value is printed, not how a check failed; another value or word is not."""
    from grader.judging.fingerprints import same_failure

    table = "   index      expected           got\n     [6]             0             0\n  >  [8]            -1            -2"
    failure = ["AssertionError", table]
    assert same_failure(failure, ["AssertionError", table.replace("             0\n", "            -0\n")])
    assert same_failure(["AssertionError", "got 0.5, expected 1"], ["AssertionError", "got 0.5000001, expected 1"])
    assert same_failure(
        ["AssertionError", "got {'a': 1, 'b': [2, 3]}"], ["AssertionError", "got {'b': [2, 3], 'a': 1}"]
    )
    assert not same_failure(failure, ["AssertionError", table.replace("-2", "-3")])
    assert not same_failure(failure, ["builtins.ValueError", table])
    assert not same_failure(["AssertionError", "at index 1000"], ["AssertionError", "at index 1001"])
    assert not same_failure(["AssertionError", "got {'a': 1}"], ["AssertionError", "got {'a': 2}"])
    assert same_failure(None, None) and not same_failure(None, failure)
