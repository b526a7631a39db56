"""A pool of warm grading workers: processes that import torch and pytest once, keep a warm
contestant process of their own (an arena, grader.run.arena) and grade one file at a time.

    with Workers(2, settings, slugs, run_folder) as workers:
        for task, outcome in workers.run(tasks):    # as each finishes
            ...

A task is a picklable `(function, arguments)` pair; the worker calls `function(*arguments, arena)`
in a process of its own and sends back what it returns, or a `Failed(reason)` when it raised. A
worker that dies while working is replaced and its task given to another once; a task whose
second worker dies too comes back as `Died`. The pool's state lives in the object, the
worker's in its own loop (`serve`): nothing module-wide. Everything a worker makes on disk lies in
a folder of its own in the run's folder (its drop folder, its judges' scratch folders), removed
when it ends; `close()` ends every worker (a worker's warm process and judges end with it) and
whatever cgroup the dead ones left. A worker whose pool's process dies, however it died, is sent
SIGTERM and cleans up the same way.

A task forks one judge for one file (`fork_judge`): `kata grade`'s files (grader.classroom.batch)
and a learner's checks (grader.judging.warm_judge).
"""

import gc
import multiprocessing
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path

from grader.run import containment, interrupt

RETRIES = 1  # a task whose worker died is given to another worker this many times
HOME_PREFIX = "kata-worker-"  # the name of a worker's folder, in the run's folder


@dataclass(frozen=True)
class Failed:
    """The task raised in the worker (the grader's own failure): why."""

    reason: str


@dataclass(frozen=True)
class Died:
    """Every worker given the task died while working on it."""

    reason: str = "the grading worker died while grading this file"


@dataclass
class _Worker:
    process: multiprocessing.Process
    connection: Connection
    task: tuple | None = None  # (index, task) it is working on
    tries: int = 0


class Workers:
    def __init__(self, count: int, sandboxed: bool, lang: str, imports: list[str], folder: Path,
                 fingerprints: Path | None = None):  # fmt: skip
        """`count` workers whose warm processes run `imports` (in the sandbox or not), with their
        messages in `lang`; everything they write lies under `folder`, but the variants'
        fingerprints, remembered in `fingerprints` (None: `folder`/fingerprints, the run's own)."""
        self.count = count
        fingerprints = fingerprints or folder / "fingerprints"
        self.setup = (sandboxed, lang, sorted(imports), str(folder), str(fingerprints))
        self.context = multiprocessing.get_context("spawn")
        self.workers: list[_Worker] = []

    def __enter__(self) -> "Workers":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _start(self) -> _Worker:
        ours, theirs = self.context.Pipe()
        process = self.context.Process(target=serve, args=(theirs, os.getpid(), *self.setup), daemon=True)
        with interrupt.deferred():  # until it is in self.workers, where close() finds it
            process.start()
            worker = _Worker(process, ours)
            self.workers.append(worker)
        theirs.close()
        return worker

    def run(self, tasks: list[tuple[Callable, tuple]]) -> Iterator[tuple[int, object]]:
        """(index of the task, its outcome) for every task, as each finishes."""
        pending = list(enumerate(tasks))
        tries: dict[int, int] = {}
        while len(self.workers) < min(self.count, len(pending)):
            self._start()
        busy = 0
        while pending or busy:
            for worker in self.workers:
                if worker.task is None and pending:
                    worker.task = pending.pop(0)
                    worker.connection.send(worker.task[1])
                    busy += 1
            ready = wait([w.connection for w in self.workers if w.task] + [w.process.sentinel for w in self.workers])
            for worker in list(self.workers):
                if worker.task is None:
                    if worker.process.sentinel in ready:  # died idle: start another
                        self._replace(worker)
                    continue
                if worker.connection in ready:
                    try:
                        outcome = worker.connection.recv()
                    except (EOFError, OSError):
                        outcome = None
                    if outcome is not None:
                        index, worker.task = worker.task[0], None
                        busy -= 1
                        yield index, outcome
                        continue
                if worker.process.sentinel in ready or not worker.process.is_alive():
                    index, task = worker.task
                    worker.task = None
                    busy -= 1
                    tries[index] = tries.get(index, 0) + 1
                    if tries[index] > RETRIES:
                        yield index, Died()
                    else:
                        pending.insert(0, (index, task))
                    self._replace(worker)

    def _replace(self, worker: _Worker) -> None:
        self.workers.remove(worker)
        worker.connection.close()
        worker.process.join(timeout=1)
        containment.clean_leftovers()  # the cgroups of the file it was grading, and their processes
        self._start()

    def close(self, grace: float = 0.0) -> None:
        """End every worker (their warm processes and judges end with them); no cgroup is left.
        `grace`: first send each SIGTERM and give it this many seconds to clean up its folder as
        it does when the pool's process dies (`serve`); 0: kill them now (their folders are in
        the run's folder, which the caller removes)."""
        for worker in self.workers:
            worker.connection.close()
            if grace and worker.process.is_alive():
                worker.process.terminate()
        for worker in self.workers:
            worker.process.join(timeout=grace)
            if worker.process.is_alive():
                worker.process.kill()
        for worker in self.workers:
            worker.process.join()
        self.workers = []
        containment.clean_leftovers()


def serve(connection: Connection, pool: int, sandboxed: bool, lang: str, imports: list[str], folder: str,
          fingerprints: str) -> None:  # fmt: skip
    """A worker: start the warm contestant process, import meanwhile what every grading run needs,
    then grade what it is sent until the pool closes the connection. It leaves Ctrl-C to the pool,
    which kills its workers (`Workers.close`); when the pool's process (`pool`) dies, it is sent
    SIGTERM, and ends its warm process and removes its folder before it exits."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C reaches the whole job
    signal.signal(signal.SIGTERM, _stop)
    from grader.run import privileges

    privileges.die_with_parent(signal.SIGTERM)
    if os.getppid() != pool:  # it died before that
        return
    home = Path(tempfile.mkdtemp(prefix=HOME_PREFIX, dir=folder))
    try:
        interrupt.unblock()  # started with SIGINT and SIGTERM held (Workers._start)
        _serve(connection, sandboxed, lang, imports, home, Path(fingerprints))
    except SystemExit:  # SIGTERM: the pool's process died
        pass
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _stop(number, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: the way out is not cut short
    raise SystemExit(128 + number)


def _serve(connection: Connection, sandboxed: bool, lang: str, imports: list[str], home: Path,
           fingerprints: Path) -> None:  # fmt: skip
    from grader.content.i18n import set_message_language
    from grader.run.arena import Arena

    set_message_language(lang)  # the warm process's contestants word their refusals in it
    try:
        arena = Arena.start(imports, sandboxed, fingerprints=fingerprints, home=home)  # torch-free
    except Exception as error:  # it cannot grade: every task says so (an error, never a grade)
        _refuse(connection, Failed(f"the warm process did not start: {type(error).__name__}: {error}"))
        return
    import _pytest.config  # noqa: F401
    import torch  # noqa: F401

    from grader.judging.plugin import preload

    preload()

    for line in imports:  # the references' own imports (transformers, for one): each judge forks with them loaded
        exec(line, {})
    arena.zygote.wait_ready()  # before the first judge forks: each judge shares it
    gc.collect()
    gc.freeze()  # the judges it forks never walk (nor copy) what was imported here when they collect
    try:
        while True:
            try:
                function, arguments = connection.recv()
            except (EOFError, OSError):
                break
            try:
                outcome = function(*arguments, arena)
            except Exception as error:  # the grader's own failure, not a file's
                outcome = Failed(f"{type(error).__name__}: {error}")
            connection.send(outcome)
    finally:
        arena.close()


def _refuse(connection: Connection, failed: Failed) -> None:
    """Answer every task with `failed` until the pool closes the connection."""
    while True:
        try:
            connection.recv()
        except (EOFError, OSError):
            return
        connection.send(failed)


def fork_judge(arguments: list[str], arena, scratch: Path, log: Path, limit: float, box=None):
    """Fork a judge (the pytest run `arguments`, handed `arena`, or its copy for the file in `box`,
    a grader.run.containment.Box) in `scratch` for at most `limit` seconds; then end `box` (nothing
    the file started is left), remove what a killed judge had staged, and start the warm process
    again if the judge left it mid-conversation or it died. How the judge ended (child.Ended)."""
    from grader.judging.plugin import run_pytest
    from grader.run.child import run_judge

    given = arena if box is None else arena.for_file(box)
    try:
        ended = run_judge(lambda: run_pytest(arguments, given), scratch, log, limit)
        if ended.reason(limit) or arena.process.poll() is not None:
            arena.restart()
    finally:
        if box is not None:
            box.close()
        arena.clear_stages()
    return ended
