"""What every lab run records beside its results: versions, hardware, model identity, timings, memory.

The evidence is one JSON object (`evidence.json`), written atomically:

    schema, lab, run_mode, label, started_at, framework{python, torch, transformers, peft, ...},
    hardware{platform, cpu_count, memory_bytes, cuda_available, device, ...}, model{...},
    workload{...}, stages{name: seconds}, peak_memory{...}, cpu{cpu_seconds, load averages, ...},
    results{...}, failure, decision
"""

import hashlib
import json
import os
import platform
import resource
import sys
import time
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

SCHEMA = "post-training-katas/lab-evidence/v1"
PACKAGES = ("torch", "transformers", "peft", "accelerate", "gguf", "numpy", "post-training-katas")


def package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def framework_versions() -> dict:
    return {"python": platform.python_version(), **{name: package_version(name) for name in PACKAGES}}


def hardware() -> dict:
    """The machine: CPU, memory and, where CUDA is present, the GPU and its driver's CUDA version."""
    import torch

    record = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "memory_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
        "cuda_available": torch.cuda.is_available(),
    }
    if torch.cuda.is_available():
        properties = torch.cuda.get_device_properties(0)
        record.update(
            device=properties.name,
            device_count=torch.cuda.device_count(),
            device_memory_bytes=properties.total_memory,
            compute_capability=f"{properties.major}.{properties.minor}",
            cuda=torch.version.cuda,
            bf16_supported=torch.cuda.is_bf16_supported(),
        )
    return record


def cpu_snapshot() -> dict:
    """CPU seconds used so far (user + system, this process and its waited-for children) and the
    machine's 1/5/15-minute load averages: taken at the start and the end of a run (`cpu_usage`)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    return {"cpu_seconds": seconds, "wall": time.monotonic(), "load_average": list(os.getloadavg())}


def cpu_usage(start: dict) -> dict:
    """The run's CPU time, wall time, their ratio (cores kept busy), the cores it could use, and the
    load averages at its start and end (a busy machine makes a run slower than its config says)."""
    end = cpu_snapshot()
    cpu, wall = end["cpu_seconds"] - start["cpu_seconds"], end["wall"] - start["wall"]
    return {
        "cpu_seconds": round(cpu, 2),
        "wall_seconds": round(wall, 2),
        "busy_cores": round(cpu / wall, 2) if wall > 0 else None,
        "cores_available": len(os.sched_getaffinity(0)),
        "load_average_start": start["load_average"],
        "load_average_end": end["load_average"],
    }


def file_sha256(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def text_sha256(items) -> str:
    """sha256 over a sequence of strings, order-sensitive (one NUL between items)."""
    return hashlib.sha256("\0".join(items).encode()).hexdigest()


def reset_peak_memory() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()


def peak_memory() -> dict:
    """Peak CUDA memory allocated (when CUDA is used) and the process's peak resident set size."""
    import torch

    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    record = {"peak_rss_bytes": rss_kib * 1024 if sys.platform != "darwin" else rss_kib}
    if torch.cuda.is_available():
        record["peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
        record["peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
    return record


def clock(device: str) -> float:
    """time.perf_counter(), after the GPU's queued work has finished when `device` is "cuda"."""
    if device == "cuda":
        import torch

        torch.cuda.synchronize()
    return time.perf_counter()


class Stages:
    """Per-stage wall times. `with stages("load_model"): ...`; `current` names the stage running."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.current: str | None = None

    @contextmanager
    def __call__(self, name: str):
        previous, self.current = self.current, name
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = round(self.seconds.get(name, 0.0) + time.perf_counter() - started, 4)
            self.current = previous if previous is not None else name


def write_json_atomic(path: Path, data: dict) -> None:
    """`data` as JSON, written atomically (grader.files.atomic_write): readers never see half a file."""
    from grader.files import atomic_write

    atomic_write(Path(path), json.dumps(data, indent=2, ensure_ascii=False, default=_jsonable) + "\n")


def _jsonable(value):
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item"):  # a 0-d tensor or numpy scalar
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
