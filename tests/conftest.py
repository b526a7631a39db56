"""Fixtures and helpers shared by the tests."""

import os
import sys
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from click.testing import CliRunner

import grader.classroom.batch  # noqa: F401  (loaded before any in-process pytester run, which unloads what
from grader.cli import main  # it imported first: a process pool started after one could not pickle its worker)
from grader.report.console import console, errors


@dataclass(frozen=True)
class Run:
    status: int
    out: str
    err: str
    output: str = ""  # stdout and stderr interleaved, as a terminal shows them

    def __iter__(self):
        """`status, out, err = kata_main(...)`."""
        return iter((self.status, self.out, self.err))


def _run_kata(*args, input: str | None = None) -> Run:
    console.forget()  # as in a new process: the width of this test's terminal
    errors.forget()
    with CliRunner().isolation(input=input) as (out, err, output):
        try:
            status = main([str(arg) for arg in args])
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        return Run(status, _text(out), _text(err), _text(output))


def _text(stream) -> str:
    return stream.getvalue().decode("utf-8", "replace").replace("\r\n", "\n")


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory):
    """`kata check` remembers fingerprints in the user's cache (XDG_CACHE_HOME): the tests' own, not yours."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        yield


@pytest.fixture(scope="session")
def kata_main():
    """`kata_main(*ARGS, input=None) -> Run(status, out, err)`: `kata ARGS` in this process through
    `grader.cli.main`, exactly as the console script exits (usage errors: one line and status 2), its
    streams captured by click's CliRunner and `input` typed at its prompts. The one way the tests run
    the command in-process."""
    return _run_kata


def isolate(patch: pytest.MonkeyPatch, cwd: Path) -> None:
    """English, 200 columns (in this process; the console script runs at 80), no KATA_WORKSPACE, cwd elsewhere."""
    patch.setenv("KATA_LANG", "en")
    patch.setenv("COLUMNS", "200")
    for name in ("KATA_WORKSPACE", "FORCE_COLOR"):
        patch.delenv(name, raising=False)
    patch.chdir(cwd)


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    """A scratch working directory, English, a wide terminal: the default workspace never lands in the repo."""
    isolate(monkeypatch, tmp_path)


@pytest.fixture
def workspace(tmp_path) -> Path:
    """A workspace folder that does not exist yet."""
    return tmp_path / "ws"


@contextmanager
def one_torch_thread():
    """One torch intra-op thread for the block: the labs' tiny model gains nothing from a second,
    and on a busy 2-core machine the threads of several processes wait on each other (3-10x slower
    wall time measured, SmolLM2 included: 90 s vs 327 s)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def flat(text: str) -> str:
    """The text with every run of whitespace made one space (rich wraps long lines at 80 columns)."""
    return " ".join(text.split())


def need_sandbox() -> None:
    """Skip a test that needs the OS sandbox where it cannot work, saying why; with
    KATA_REQUIRE_SANDBOX set (scripts/test sets it under CI), fail instead: there the sandbox must
    work, and a skipped defence is an untested one."""
    from grader.run import sandbox

    why = sandbox.problem()
    if why:
        if os.environ.get("KATA_REQUIRE_SANDBOX"):
            pytest.fail(f"the sandbox must work in CI: {why}")
        pytest.skip(f"no sandbox here: {why}")


@pytest.fixture(scope="session")
def grade_as_a_class(tmp_path_factory):
    """`grade_as_a_class(slug, files, root, timeout) -> {name: (GradeResult, seconds)}`: each text
    graded as student `name`'s SLUG.py the way `kata grade` grades a class: warm workers that import
    torch once and fork a judge per file, the files' code in contestants (in the sandbox where it
    works). One pool of two workers serves the whole session, started when first used."""
    from grader.classroom import batch
    from grader.report.results import GradeResult
    from grader.run import sandbox

    settings = batch.Settings(sandboxed=sandbox.choose("auto"))
    with ExitStack() as stack:
        pools = []

        def grade(slug: str, files: dict[str, str], root: Path, timeout: float) -> dict[str, tuple]:
            if not pools:
                pools.append(stack.enter_context(batch.warm_workers(2, settings, {slug})))
            jobs = []
            for name, text in files.items():
                (root / name).mkdir(parents=True)
                (root / name / f"{slug}.py").write_text(text, encoding="utf-8")
                jobs.append(batch.Job(name, slug, root / name, "", replace(settings, timeout=timeout)))
            records = [record for _, record in pools[0].run([(batch.grade_file, (job,)) for job in jobs])]
            for record in records:  # whatever a file does is its own doing: the grader never failed on it
                assert "error" not in record, f"the grader failed on {record['student']}: {record['error']}"
            return {
                record["student"]: (GradeResult.from_json(record["grade"]), record["seconds"]) for record in records
            }

        yield grade


def processes_named(name: str) -> list[int]:
    """Pids of the processes whose /proc/PID/comm is `name` (what a test's bomb or daemon calls itself)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and open(f"/proc/{entry}/comm").read().strip() == name:
                found.append(int(entry))
        except OSError:
            pass
    return found
