"""Grade a file from the `kata` process without importing torch or any learner code: run the judge
(`python -m grader.judging`: pytest with the plugin, and the contestants' warm process it starts)
in a child process and read back the JSON it writes.
"""

import json
import os
import tempfile
from pathlib import Path

from grader import DEFAULT_TIMEOUT, run_limit
from grader.content.catalogue import Kata
from grader.content.i18n import say, speaking
from grader.report.results import GradeResult
from grader.run.child import Ended, last_line, run_judge
from grader.run.limits import NO_LIMITS, Limits

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def fingerprints_folder() -> Path:
    """Where `kata check` remembers the misconception variants' fingerprints: the user's cache."""
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "post-training-katas" / "fingerprints"


# pytest's plugins no check uses: each costs its registration in every judge, cold or warm, and
# some a hook around every phase of every check (logging's handlers, warnings' catch). No check is
# marked skip or xfail, takes tmp_path, monkeypatch, capsys or caplog, or holds an assert to rewrite
# (tests/test_warm_judge.py); the learner's code, its output and warnings are the contestants'.
UNUSED_PLUGINS = ("doctest", "junitxml", "pastebin", "legacypath", "setuponly", "setupplan", "stepwise",
                  "tmpdir", "monkeypatch", "recwarn", "subtests", "assertion", "capture", "debugging",
                  "logging", "skipping", "threadexception", "unittest", "warnings")  # fmt: skip


class GradingError(RuntimeError):
    """The grading process itself failed (not the learner's code)."""


def pytest_arguments(
    kata: Kata,
    target: str | Path,
    timeout: float,
    report: Path,
    limits: Limits = NO_LIMITS,
    against: str | None = None,
    lang: str = "en",
    every_language: bool = False,
    checks: list[str] | None = None,
    values: str | None = None,
    course: str | None = None,
) -> list[str]:
    """The arguments of the pytest run that grades `target` and writes its result to `report`, its
    messages in `lang`; with `every_language`, each failed check's message in every language too
    (for a result that is stored and shown later in any: `kata grade`). `checks`: only these
    (CheckResult names); None: every check. `values`: where the expected values are recorded or
    replayed from ("record:DIR", "replay:DIR": grader.judging.recorded). `course`: the course file
    whose seed the checks draw their inputs under (grader.content.seeds); None: their own seeds."""
    where = str(kata.checks_path)
    arguments = [
        *([where] if checks is None else [f"{where}::test_{name}" for name in checks]),
        "-p",
        "grader.judging.plugin",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:unraisableexception",  # its gc.collect() at the end walks all of torch: ~0.12 s a run
        *[option for name in UNUSED_PLUGINS for option in ("-p", f"no:{name}")],
        "-q",
        "--no-header",
        "-rN",
        "--tb=no",  # each failure is explained by the plugin in its own words; pytest's traceback costs ~30 ms
        "--rootdir",
        str(PROJECT_ROOT),
        "-c",
        str(PROJECT_ROOT / "grader" / "pytest-kata.ini"),
        "--kata",
        kata.slug,
        "--kata-timeout",
        str(timeout),
        "--kata-report",
        str(report),
        "--kata-lang",
        lang,
    ]
    if isinstance(target, Path):
        arguments += ["--kata-file", str(target.resolve())]
    else:
        arguments += ["--kata-target", target]
    if limits.memory_mb is not None:
        arguments += ["--kata-memory", str(limits.memory_mb)]
    if limits.processes is not None:
        arguments += ["--kata-processes", str(limits.processes)]
    if against:
        arguments += ["--kata-against", against]
    if every_language:
        arguments.append("--kata-every-language")
    if values:
        arguments += ["--kata-values", values]
    if course:
        arguments += ["--kata-course", course]
    return arguments


def run_checks(
    kata: Kata,
    target: str | Path,
    timeout: float = DEFAULT_TIMEOUT,
    against: str | None = None,
    lang: str = "en",
) -> GradeResult:
    """Run every check of `kata` against `target` (a file's Path, or "reference", "template" or
    "misconception:ID") in a judge process, the target's code in contestants with `timeout`
    seconds per check; with `against="trl"`, TRL's code gives the expected values where it has
    the function. The checks' messages are in `lang` (so are the warm process's refusals: it
    inherits the language when it starts)."""
    with speaking(lang), tempfile.TemporaryDirectory(prefix="kata-") as scratch:
        refuse_missing_packages(kata)
        report, log = Path(scratch) / "result.json", Path(scratch) / "pytest.log"
        arguments = pytest_arguments(kata, target, timeout, report, against=against, lang=lang)
        judge = ["-P", "-m", "grader.judging", kata.slug, "auto", str(fingerprints_folder()), "--", *arguments]
        return read_result(run_judge(judge, Path(scratch), log, run_limit(timeout)), report, log)


def refuse_missing_packages(kata: Kata) -> None:
    """A GradingError, in the language spoken, when a package the kata needs is not installed."""
    missing = kata.missing_packages()
    if missing:
        needed, command = ", ".join(missing), " ".join(missing)
        raise GradingError(
            say(
                f"{kata.slug} needs {needed}, which is not installed here: pip install {command}",
                f"{kata.slug} 需要 {needed}，但这里没有安装：pip install {command}",
            )
        )


def read_result(ended: Ended, report: Path, log: Path) -> GradeResult:
    """The result a judge that ended so wrote to `report`; a GradingError, in the language spoken,
    when it ran out of time, wrote none, or ran no check (`log`: what it printed)."""
    if ended.timed_out:
        raise GradingError(
            say(
                "the grader ran out of time (this is a bug in the grader, not your code)",
                "评分程序超时（这是评分程序的缺陷，不是你的代码的问题）",
            )
        )
    if not report.exists():
        raise GradingError(say(f"the grader failed: {last_line(log)}", f"评分程序出错：{last_line(log)}"))
    result = GradeResult.from_json(json.loads(report.read_text(encoding="utf-8")))
    if not result.checks and not result.load_error:
        raise GradingError(
            say(f"the grader ran no checks: {last_line(log)}", f"评分程序没有运行任何检查：{last_line(log)}")
        )
    return result
