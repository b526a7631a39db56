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
import threading
from pathlib import Path

from grader.content.i18n import message_language
from grader.run import containment, staging
from grader.run.arena import Arena
from grader.run.judge import Contestant, Stopped, Zygote
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
        self.reviving = threading.Lock()  # hybrids ask for boxes from threads: one restarts a dead warm process
        self.seccomp: bool | None = None  # whether every contestant so far had its seccomp filter

    @property
    def sandboxed(self) -> bool:
        return self.arena.sandboxed

    def box(self, learner_code: bool = True) -> Zygote:
        """A new box forked from the warm process: in the file's cgroup when it will run learner code."""
        with self.reviving:  # threads that find it dead start one new one, not one each (and end none)
            if not self.arena.zygote.alive:  # the warm process died: go on with a new one
                self.arena.restart()
            zygote = self.arena.zygote
        return zygote.box(self.cgroup if learner_code else None)

    def learner(
        self, source: str, label: str, seconds: float, hung: set[str], box: Zygote | None = None, wait: bool = True
    ) -> Contestant:
        """A contestant of the file's code (or of a hybrid of it, in that hybrid's `box`) with
        `source` loaded; `label` names the module when the file has no name of its own. `wait`
        False: the module is sent and the contestant returned while it loads (`loaded` finishes)."""
        box = self._file_box() if box is None else box
        world = {"work": self.work, "size_mb": FILE_SIZE_MB, "lang": message_language()}
        contestant = box.spawn(world, seconds, hung, self.limits)
        contestant.send_load(source, self.name or label)
        return self.loaded(contestant) if wait else contestant

    def upcoming(self, source: str, label: str, seconds: float, hung: set[str]) -> "Upcoming":
        """The file's next contestant, started now in a thread while the caller goes on (a check runs)."""
        box = self._file_box()
        return Upcoming(self, lambda: self.learner(source, label, seconds, hung, box=box, wait=False))

    def _file_box(self) -> Zygote:
        if self.file_box is None or not self.file_box.alive:
            self.file_box = self.box()
        return self.file_box

    def trusted(self, source: str, label: str, seconds: float, box: Zygote) -> Contestant:
        """A contestant of the grader's own code (a misconception variant), in an empty world."""
        world = {"work": None, "size_mb": FILE_SIZE_MB, "lang": message_language()}
        contestant = box.spawn(world, seconds, set(), self.limits)
        contestant.send_load(source, label)
        return self.loaded(contestant)

    def loaded(self, contestant: Contestant) -> Contestant:
        """The contestant once its module has loaded (or failed to: its `load_error`)."""
        contestant.loaded()
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


class Upcoming:
    """A contestant of the file's code started in a thread, so that its fork, its world and its
    module's load happen while the check before it runs (the judge's time between two checks is
    then the check's own). It is handed out only as an on-demand one would be: loaded without an
    error, and quiet since (nothing on its channel: it neither died nor wrote there). Anything
    else (the box gone, the load stopped or raising, a stray byte) ends it, and `take` gives None:
    the caller starts a fresh one then, so a file cannot tell its grade apart by how its
    contestants were started; at worst it loses the time saved."""

    def __init__(self, boxes: Boxes, start):
        self.boxes = boxes
        self.contestant: Contestant | None = None
        self.thread = threading.Thread(target=self._start, args=(start,), name="kata-upcoming", daemon=True)
        self.thread.start()

    def _start(self, start) -> None:
        try:
            self.contestant = start()
        except (Exception, Stopped):  # not started (Stopped: a BaseException); `take` gives None
            self.contestant = None

    def take(self) -> Contestant | None:
        """The contestant, loaded, or None (see the class docstring)."""
        self.thread.join()
        contestant, self.contestant = self.contestant, None
        if contestant is None:
            return None
        try:
            self.boxes.loaded(contestant)
        except Stopped:  # it ended: its channel and pipe are closed
            return None
        if contestant.load_error or not contestant.quiet():
            contestant.close()
            return None
        return contestant

    def close(self) -> None:
        """End it if it was never taken."""
        self.thread.join()
        if self.contestant is not None:
            self.contestant.close()
            self.contestant = None
