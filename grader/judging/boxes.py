"""Where one graded file's code runs: boxes forked from the warm process, and a fresh contestant
per check forked from a box into a world of its own (grader.run.contestant).

- the file's box: its own checks' contestants (learner code), inside the file's cgroup;
- a box per hybrid (`box()`): that hybrid's contestants (learner code too), inside the file's cgroup;
- a box per misconception variant (`box(learner_code=False)`): the variant's contestant (the grader's
  own code), outside the file's cgroup, so that nothing the file's processes do (fill the cgroup,
  say) changes how a variant fails.

A box never runs learner code; no contestant can reach its box or another (each is pid 1 of a pid
namespace of its own, with no privileges). A learner contestant's world holds a fresh copy of the
student's folder as staged for this file, never what an earlier contestant left; a variant's world
is empty. A contestant words what it says (its refusals) in the judge's message language when
it was spawned. The staged copy, the boxes and the file's own cgroup go with `close()`.
"""

import shutil
from pathlib import Path

from grader.content.i18n import message_language
from grader.run import containment, staging
from grader.run.arena import Arena
from grader.run.judge import Contestant, Zygote
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
        self.file_box: Zygote | None = None
        self.seccomp: bool | None = None  # whether every contestant so far had its seccomp filter

    @property
    def sandboxed(self) -> bool:
        return self.arena.sandboxed

    def box(self, learner_code: bool = True) -> Zygote:
        """A new box forked from the warm process: in the file's cgroup when it will run learner code."""
        if not self.arena.zygote.alive:  # the warm process died: go on with a new one
            self.arena.restart()
        return self.arena.zygote.box(self.cgroup if learner_code else None)

    def learner(self, source: str, label: str, seconds: float, hung: set[str], box: Zygote | None = None) -> Contestant:
        """A contestant of the file's code (or of a hybrid of it, in that hybrid's `box`) with
        `source` loaded; `label` names the module when the file has no name of its own."""
        if box is None:
            if self.file_box is None or not self.file_box.alive:
                self.file_box = self.box()
            box = self.file_box
        world = {"work": self.work, "size_mb": FILE_SIZE_MB, "lang": message_language()}
        return self._load(box.spawn(world, seconds, hung, self.limits), source, self.name or label)

    def trusted(self, source: str, label: str, seconds: float, box: Zygote) -> Contestant:
        """A contestant of the grader's own code (a misconception variant), in an empty world."""
        world = {"work": None, "size_mb": FILE_SIZE_MB, "lang": message_language()}
        return self._load(box.spawn(world, seconds, set(), self.limits), source, label)

    def _load(self, contestant: Contestant, source: str, name: str) -> Contestant:
        contestant.load(source, name)
        self.seccomp = contestant.seccomp if self.seccomp is None else self.seccomp and contestant.seccomp
        return contestant

    def close(self) -> None:
        """Every process the file started is gone, and so is its staged copy."""
        if self.file_box is not None:
            self.file_box.close()
            self.file_box = None
        if self.owns_cgroup:
            self.cgroup.close()
        shutil.rmtree(self.staged, ignore_errors=True)
