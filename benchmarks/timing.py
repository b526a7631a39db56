"""Wall-clock timing shared by the benchmarks: commands run alternately, medians compared.

Bytecode caching stays on, as in a normal Python: PYTHONDONTWRITEBYTECODE (set on some machines)
is removed from the environment the commands run in. Commands run in the system's temporary
folder, never in a checkout: `python -m grader.cli` puts its working directory first on sys.path,
so run from the project folder it would import this checkout's grader whatever PYTHONPATH says.
"""

import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

NEUTRAL = tempfile.gettempdir()  # where benchmarked commands run (see the module docstring)


def bench_env(**extra: str) -> dict:
    env = dict(os.environ, **extra)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def wall(command: list[str], env: dict, tty: bool = False) -> float:
    """Seconds `command` takes; with `tty`, under a pseudo-terminal (as a person runs it)."""
    if tty:
        command = ["script", "-qec", " ".join(command), "/dev/null"]
    start = time.perf_counter()
    subprocess.run(command, env=env, cwd=NEUTRAL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def medians(
    commands: list[list[str]], env: dict | None, repeat: int, tty: bool = False, envs: list[dict] | None = None
) -> list[float]:
    """Median wall time of each command, after one warm-up each, running them in turn `repeat` times.

    `envs` gives each command an environment of its own (else all run in `env`)."""
    envs = envs or [env] * len(commands)
    for command, command_env in zip(commands, envs):
        wall(command, command_env, tty)
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(repeat):
        for index, command in enumerate(commands):
            times[index].append(wall(command, envs[index], tty))
    return [statistics.median(values) for values in times]


def solved_workspace(root: Path, slug: str) -> dict:
    """A workspace under `root` holding the reference solution of `slug`; returns the env that uses it."""
    from grader.content.catalogue import get_kata

    workspace = root / "ws"
    workspace.mkdir()
    (workspace / f"{slug}.py").write_text(get_kata(slug).solution())
    return bench_env(KATA_WORKSPACE=str(workspace), KATA_LANG="en")
