"""Interrupting a grading command and finding what it left: the interrupt tests
(tests/test_interrupt.py) and benchmarks/bench_interrupt.py share it. No pytest, no torch.

    scene = Scene.make(folder)                     # a TMPDIR of the run's own, the cgroups there now
    process = scene.start(command)                 # its own session, as a shell starts a job
    scene.interrupt(process, signal.SIGINT)        # SIGINT: the whole job, as Ctrl-C; SIGTERM: it alone
    left = scene.until_clean(process, limit=10)    # [] once nothing is left; else what still is

What a run leaves, found without knowing its pids:
- a process whose environment or command line holds the run's TMPDIR: the command, its workers
  (spawned with its environment), each bwrap (its command line binds a folder there), each judge
  (its TMPDIR is a scratch folder there); and every descendant of one, such as a sandbox's warm
  process, boxes and contestants (their environment is cleared). One that was orphaned outlives
  its bwrap only outside the sandbox (inside, the kernel kills a pid namespace with its first
  process), and there it keeps the environment.
- any entry in the run's TMPDIR: its folders (kata-grade-*, kata-*, judge-*, worker-*, kata-drop-*,
  kata-gradescope-*), or anything else it made there;
- a `kata-grade-*` cgroup (grader.run.containment) that was not there before and whose maker (the
  pid in its name) is dead or is one of the run's processes.
"""

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
PREFIX = "kata-grade-"  # grader.run.containment.PREFIX (not imported: this module stays torch- and grader-free)


def cgroups() -> set[Path]:
    """Every `kata-grade-*` cgroup now, in the v1 pids and memory hierarchies or the v2 root."""
    roots = [CGROUP_ROOT, CGROUP_ROOT / "pids", CGROUP_ROOT / "memory"]
    return {path for root in roots if root.is_dir() for path in root.glob(f"{PREFIX}*") if path.is_dir()}


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return b""


@dataclass
class Scene:
    tmp: Path  # the run's TMPDIR: empty when it starts
    cgroups_before: set[Path]

    @classmethod
    def make(cls, folder: Path) -> "Scene":
        folder.mkdir(parents=True, exist_ok=True)
        return cls(folder.resolve(), cgroups())

    def env(self, **extra: str) -> dict:
        """The environment to run the command in: this one, with the run's TMPDIR."""
        return dict(os.environ, TMPDIR=str(self.tmp), **extra)

    def start(self, command: list[str], cwd: Path | None = None, **env: str) -> subprocess.Popen:
        """Start `command` as a shell starts a job: a process group (and session) of its own."""
        return subprocess.Popen(
            command,
            cwd=cwd,
            env=self.env(**env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )

    @staticmethod
    def interrupt(process: subprocess.Popen, number: int) -> None:
        """SIGINT to the job's whole process group, as a terminal's Ctrl-C sends it; any other
        signal (SIGTERM) to the command's process alone, as `kill PID` does."""
        if number == signal.SIGINT:
            os.killpg(process.pid, number)
        else:
            process.send_signal(number)

    def processes(self) -> dict[int, str]:
        """{pid: command line} of the run's processes still alive: those that hold its TMPDIR (see the
        module docstring) and their descendants."""
        mark = os.fsencode(str(self.tmp))
        table = {}  # pid: (parent, command line)
        for entry in os.listdir("/proc"):
            stat = _read(f"/proc/{entry}/stat")
            if entry.isdigit() and stat and int(entry) != os.getpid():
                cmdline = _read(f"/proc/{entry}/cmdline")
                marked = mark in cmdline or mark in _read(f"/proc/{entry}/environ")
                table[int(entry)] = (-1 if marked else int(stat.rsplit(b")", 1)[1].split()[1]), cmdline)
        found = {}
        for pid, (parent, cmdline) in table.items():
            seen = set()
            while parent > 0 and parent not in seen:  # up to a marked process (-1), or to the top (0)
                seen.add(parent)
                parent = table.get(parent, (0,))[0]
            if parent < 0:
                found[pid] = cmdline.replace(b"\0", b" ").decode(errors="replace").strip()[:160]
        return found

    def in_flight(self) -> bool:
        """Whether the run has a sandbox with a contestant in it: its warm process, a box and a
        contestant (each a `grader.run.contestant` process), or their like outside the sandbox."""
        return sum("grader.run.contestant" in cmdline for cmdline in self.processes().values()) >= 3

    def leftovers(self) -> list[str]:
        """What the run left: its processes, the entries of its TMPDIR, its cgroups; [] when none."""
        processes = self.processes()
        left = [f"process {pid}: {cmdline}" for pid, cmdline in sorted(processes.items())]
        left += [f"temporary {path.name}" for path in sorted(self.tmp.iterdir())]
        for path in sorted(cgroups() - self.cgroups_before):
            maker = path.name.removeprefix(PREFIX).split("-")[0]
            if not maker.isdigit() or int(maker) in processes or not Path(f"/proc/{maker}").exists():
                left.append(f"cgroup {path}")
        return left

    def until_clean(self, process: subprocess.Popen, limit: float = 10.0) -> list[str]:
        """Wait (at most `limit` seconds in all) for the command to exit and for nothing it made to
        be left; what is left then ([] once clean). The command's output is kept in `process.out`
        and `process.err`."""
        deadline = time.monotonic() + limit
        try:
            out, err = process.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
        process.out, process.err = out.decode(errors="replace"), err.decode(errors="replace")
        while (left := self.leftovers()) and time.monotonic() < deadline:
            time.sleep(0.05)
        return left

    def clear(self) -> None:
        """Kill whatever the run left (after a failed test), so that it does not outlive the test."""
        for pid in self.processes():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
