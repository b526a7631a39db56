"""A warm judge for one learner: `kata watch` and a notebook's `%%kata check` keep one for their
whole life, so that a check pays only for itself, not for starting Python, torch and pytest.

    with WarmJudge() as judge:                      # torch-free here; nothing starts yet
        result = judge.check(kata, path, timeout, lang)     # the first check starts the worker
        result = judge.check(kata, path, timeout, lang)     # ~0.5 s for a correct group_advantages

It is one warm grading worker (grader.judging.workers: torch, pytest and the warm contestant
process, in the sandbox where it works) that forks a judge per check, running the same pytest
run as a cold `kata check` (grader.run.grading.pytest_arguments), with the same arena (no cgroup,
the user's fingerprint store, hybrids in parallel): the same verdicts, the same isolation. The
learner's code still runs only in fresh contestants.

The worker is started again, before a check, when what it holds is stale: the grader's or a
kata's files changed on disk (an upgrade, an edit of a kata), another language is asked for (the
warm process words its refusals in the language it started with), or a kata needs imports it did
not make. It ends with its owner: `close()` (the end of a `with`, a kernel's shutdown), or the
owner's death however it died (the worker is sent SIGTERM and ends its warm process and removes
its folder; its judges and sandbox die with it).
"""

import os
import tempfile
from pathlib import Path

from grader import DEFAULT_TIMEOUT, run_limit
from grader.content.catalogue import KATAS_DIR, Kata
from grader.content.i18n import say, speaking
from grader.content.render import REFERENCE_DIR
from grader.judging.workers import Died, Failed, Workers
from grader.report.results import GradeResult
from grader.run import sandbox
from grader.run.grading import GradingError, fingerprints_folder, refuse_missing_packages

ROOTS = (Path(__file__).resolve().parents[1], KATAS_DIR, REFERENCE_DIR)  # the grader, the katas, their references
GRACE = 5.0  # seconds the worker is given to end its warm process and remove its folder


class WarmJudge:
    def __init__(self, sandbox_choice: str = "auto"):
        """`sandbox_choice`: auto (the sandbox where it works, as `kata check`), on or off."""
        self.choice = sandbox_choice
        self.sandboxed: bool | None = None  # whether checks run in the sandbox (None: none yet)
        self._pool: Workers | None = None
        self._held: tuple | None = None  # (language, imports, stamp) the worker started with

    def __enter__(self) -> "WarmJudge":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def check(self, kata: Kata, path: Path, timeout: float = DEFAULT_TIMEOUT, lang: str = "en") -> GradeResult:
        """Every check of `kata` against the file `path`, as `grader.run.grading.run_checks` runs
        them (the same verdicts, messages in `lang`); a GradingError when the grader fails."""
        with speaking(lang):
            refuse_missing_packages(kata)
            pool = self._ready(kata, lang)
            task = (judge_file, (kata.slug, str(Path(path).resolve()), timeout, lang))
            try:
                [(_, outcome)] = list(pool.run([task]))
            except BaseException:  # interrupted (Ctrl-C, a kernel's interrupt): the worker is mid-check
                self.close()  # never to answer the next check with this one's result
                raise
            if isinstance(outcome, Failed | Died):
                raise GradingError(say(f"the grader failed: {outcome.reason}", f"评分程序出错：{outcome.reason}"))
            if isinstance(outcome, GradingError):
                raise outcome
            return outcome

    def _ready(self, kata: Kata, lang: str) -> Workers:
        """The worker, started (again) if it is not there or what it holds is stale."""
        imports = sorted(set(kata.warm_imports) | set(self._held[1] if self._held else ()))
        held = (lang, tuple(imports), installed_stamp())
        if self._pool is None or held != self._held:
            self.close()
            if self.sandboxed is None:
                self.sandboxed = sandbox.choose(self.choice)
            folder, fingerprints = Path(tempfile.gettempdir()), fingerprints_folder()
            self._pool = Workers(1, self.sandboxed, lang, imports, folder, fingerprints)
            self._held = held
        return self._pool

    def close(self) -> None:
        """End the worker, its warm process and its judges; nothing of them is left."""
        if self._pool is not None:
            self._pool.close(grace=GRACE)
            self._pool = None


def installed_stamp() -> tuple:
    """What changes when the grader's or a kata's files change: every file's path, size and
    modification time under grader/, katas/ and reference/ (a few milliseconds)."""
    stamp = []
    for root in ROOTS:
        for folder, folders, files in os.walk(root):
            folders[:] = sorted(name for name in folders if name != "__pycache__")
            for name in sorted(files):
                try:
                    status = os.stat(os.path.join(folder, name))
                except OSError:
                    continue
                stamp.append((folder, name, status.st_size, status.st_mtime_ns))
    return tuple(stamp)


def judge_file(slug: str, path: str, timeout: float, lang: str, arena) -> GradeResult | GradingError:
    """In the worker: fork a judge that grades the file `path` as a cold `kata check` does (its
    arguments, its arena); the result, or the GradingError that `run_checks` would raise."""
    from grader.content.catalogue import get_kata
    from grader.judging.plugin import preload
    from grader.judging.workers import fork_judge
    from grader.run.grading import pytest_arguments, read_result

    kata = get_kata(slug)
    preload(kata)  # once per kata in this worker: its next judges find the checks loaded
    with speaking(lang), tempfile.TemporaryDirectory(prefix="judge-", dir=arena.home) as scratch:
        report, log = Path(scratch) / "result.json", Path(scratch) / "pytest.log"
        arguments = pytest_arguments(kata, Path(path), timeout, report, lang=lang)
        ended = fork_judge(arguments, arena, Path(scratch), log, run_limit(timeout))
        try:
            return read_result(ended, report, log)
        except GradingError as error:
            return error
