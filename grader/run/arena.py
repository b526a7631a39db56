"""What a judge is given to run contestants with, as one object: the warm process, the drop folder
its sandbox sees, the fingerprint store, and the cgroup of the file being graded.

Whoever keeps the warm process makes the arena, and hands it to the judge (a pytest run with the
grading plugin, grader.judging.plugin.run_pytest) — `kata check`'s judge process, each file's judge
forked by a `kata grade` worker, and a plain `pytest --kata ...` run all do it the same way:

    arena = Arena.start(warm_imports, sandboxed=True, fingerprints=folder)   # first: torch meanwhile
    run_pytest(arguments, arena.for_file(cgroup))                            # one file
    arena.close()

Starting it is torch-free (grader.run.warm); `zygote` is the judge's handle on the warm process
(grader.run.judge, torch), made on first use.
"""

import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from grader.run import containment, sandbox, warm

STAGED = "staged-"  # the prefix of a staging folder's name


@dataclass
class Arena:
    process: subprocess.Popen | None  # the warm process (None: a caller that started it waits for it)
    control: socket.socket  # the judge's end of its control socket
    imports: tuple[str, ...]  # the import statements it ran (to start an equal one)
    drop: Path | None  # sandboxed: the folder its sandbox sees at /kata/drop; None: no sandbox
    fingerprints: Path | None = None  # where the variants' fingerprints are remembered (None: nowhere)
    home: Path | None = None  # where its files go (staged folders, judges' scratch); None: the system's temp
    cgroup: containment.Box | None = None  # the file being graded's cgroup, when the caller made one
    in_class: bool = False  # one of a class's files, graded while others are (hybrids one at a time)
    _zygote: object = field(default=None, repr=False)

    @classmethod
    def start(cls, imports: list[str], sandboxed: bool, fingerprints: Path | None = None,
              home: Path | None = None) -> "Arena":  # fmt: skip
        """Start the warm process running `imports`, in the sandbox (with a drop folder of its own)
        or outside it; its files go under `home` (None: the system's temporary folder)."""
        drop = Path(tempfile.mkdtemp(prefix="kata-drop-", dir=home)) if sandboxed else None
        process, control = warm.start(list(imports), drop)
        return cls(process, control, tuple(imports), drop, fingerprints, home)

    @property
    def sandboxed(self) -> bool:
        return self.drop is not None

    @property
    def zygote(self):
        """The judge's handle on the warm process (grader.run.judge.Zygote)."""
        if self._zygote is None:
            from grader.run.judge import Zygote

            self._zygote = Zygote(self.process, self.control, self.sandboxed)
        return self._zygote

    def for_file(self, cgroup: containment.Box) -> "Arena":
        """The same arena, for one file of a class, with that file's cgroup (made by the caller, who
        ends whatever is left in it once the judge is done)."""
        self.zygote  # noqa: B018  (made once, shared by every file's copy)
        return replace(self, cgroup=cgroup, in_class=True)

    def stage(self) -> tuple[Path, str]:
        """A new, empty staging folder for one file's copy of its student's folder, and the path
        under which the warm process sees it (outside the sandbox, the same)."""
        staged = Path(tempfile.mkdtemp(prefix=STAGED, dir=self.drop or self.home))
        return staged, f"{sandbox.DROP}/{staged.name}" if self.drop is not None else str(staged)

    def clear_stages(self) -> None:
        """Remove every staging folder left (by a judge that was killed before it removed its own)."""
        for folder in [self.drop or self.home] if (self.drop or self.home) else []:
            for staged in folder.glob(f"{STAGED}*"):
                shutil.rmtree(staged, ignore_errors=True)

    def restart(self) -> None:
        """End the warm process and start an equal one (after a judge left it mid-conversation, or it died)."""
        self.zygote.close()
        self.process, self.control = warm.start(list(self.imports), self.drop)
        self._zygote = None
        self.zygote.wait_ready()

    def close(self) -> None:
        """End the warm process (every contestant it forked ends with it) and remove the drop folder."""
        if self._zygote is not None:
            self._zygote.close()
        else:
            self.control.close()
            if self.process is not None:
                self.process.wait()
        if self.drop is not None:
            shutil.rmtree(self.drop, ignore_errors=True)
