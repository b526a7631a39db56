"""Where one graded file's code runs: a fresh contestant per check, per check of each hybrid and per
misconception variant, each forked from the warm process into a world of its own (grader.run).

- `learner(source, seconds, hung)`: the file's code, or a hybrid of it (learner code either way):
  a world holding a fresh copy of the student's folder as staged for this file, inside the file's
  cgroup (where there is one) before it loads anything;
- `trusted(source, name, seconds)`: a misconception variant (the grader's own code): an empty world,
  outside the file's cgroup, so that nothing the file's processes do (fill the cgroup, say)
  changes how a variant fails.

Every contestant starts from the staged copy, never from what an earlier one left; none of them
ever runs where another ran. The staged copy and the file's own cgroup go with `close()`.
"""

import shutil
from pathlib import Path

from grader.run import containment, staging
from grader.run.arena import Arena
from grader.run.judge import Contestant
from grader.run.limits import FILE_SIZE_MB, Limits


class Boxes:
    def __init__(self, arena: Arena, spec: str | Path, limits: Limits):
        """`spec`: the graded file's Path (its folder is staged), or a built-in target (nothing is)."""
        self.arena = arena
        self.limits = limits
        self.staged, self.work = arena.stage()
        self.name = spec.name if isinstance(spec, Path) else None  # the file's name in a contestant's folder
        if isinstance(spec, Path):
            staging.copy_folder(spec.resolve().parent, self.staged, spec.name)
        self.owns_cgroup = arena.cgroup is None
        self.cgroup = containment.Box(memory_mb=limits.memory_mb) if self.owns_cgroup else arena.cgroup
        self.seccomp: bool | None = None  # whether every contestant so far had its seccomp filter

    @property
    def sandboxed(self) -> bool:
        return self.arena.sandboxed

    def learner(self, source: str, label: str, seconds: float, hung: set[str]) -> Contestant:
        """A contestant of the file's code (or a hybrid of it) with `source` loaded; `label` names
        the module when the file has no name of its own (a built-in target)."""
        world = {"work": self.work, "size_mb": FILE_SIZE_MB}
        return self._spawn(world, source, self.name or label, seconds, hung, self.cgroup)

    def trusted(self, source: str, label: str, seconds: float) -> Contestant:
        """A contestant of the grader's own code (a misconception variant), in an empty world."""
        return self._spawn({"work": None, "size_mb": FILE_SIZE_MB}, source, label, seconds, set(), None)

    def _spawn(self, world: dict, source: str, name: str, seconds: float, hung: set[str], cgroup) -> Contestant:
        if not self.arena.zygote.alive:  # the warm process died: go on with a new one
            self.arena.restart()
        contestant = self.arena.zygote.spawn(world, seconds, hung, self.limits, cgroup)
        self.seccomp = contestant.seccomp if self.seccomp is None else self.seccomp and contestant.seccomp
        contestant.load(source, name)
        return contestant

    def close(self) -> None:
        """Every process the file started is gone, and so is its staged copy."""
        if self.owns_cgroup:
            self.cgroup.close()
        shutil.rmtree(self.staged, ignore_errors=True)
