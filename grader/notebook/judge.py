"""The kernel's judge: one warm judge for the kernel's life, made on its first check.

`%%kata check` grades the cell's file through `KernelJudge.check`, which keeps a
`grader.judging.warm_judge.WarmJudge` (its worker holds torch, pytest and the warm contestant
process; each check forks a judge of its own, and the file's code runs only in contestants, in the
sandbox where it works). The extension closes it when it is unloaded and at the kernel's exit
(atexit); a killed kernel's warm processes end with it (they die with their parent).

Until the warm judge exists in this installation, each check is a cold `run_checks`: the same
verdicts, in a judge process started for that check.
"""

from pathlib import Path

from grader.content.catalogue import Kata


class KernelJudge:
    """Grades files for the kernel; `sandbox`: auto, on or off, as `kata check` chooses."""

    def __init__(self, sandbox: str = "auto"):
        self.sandbox = sandbox
        self._warm = None

    def check(self, kata: Kata, path: Path, timeout: float, lang: str):
        """The GradeResult of `path`; raises grader.run.grading.GradingError when grading fails."""
        try:
            from grader.judging.warm_judge import WarmJudge
        except ImportError:  # not in this installation yet: a cold judge per check
            from grader.run.grading import run_checks

            return run_checks(kata, path, timeout, lang=lang)
        if self._warm is None:
            self._warm = WarmJudge(self.sandbox)
        return self._warm.check(kata, path, timeout, lang=lang)

    def close(self) -> None:
        """End the warm judge's processes (nothing is left behind); the next check starts one again."""
        warm, self._warm = self._warm, None
        if warm is not None:
            warm.close()
