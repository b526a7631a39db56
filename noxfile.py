"""Sessions: `nox` runs the CPU tier (cpu) by default; `nox -s lint` checks style.

nox            # cpu
nox -s lint
nox -s cpu -- -k plugin      # arguments after -- go to pytest
"""

import nox

nox.options.sessions = ["cpu"]
nox.options.reuse_existing_virtualenvs = True

TORCH_CPU = "torch==2.13.0"  # the CPU wheel; a bare `torch` can pull a multi-GB CUDA build


@nox.session
def cpu(session: nox.Session) -> None:
    """Install with the CPU torch wheel and run the whole test suite."""
    session.install(TORCH_CPU)
    session.install("-e", ".[test]")
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff: lint and format check."""
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
