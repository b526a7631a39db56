"""Run one lab: resolve its config, claim the run folder, run it in the chosen mode, write the evidence.

A lab is a module with:

    NAME, TITLE, LESSON                      what `kata lab list` shows
    Config                                   a frozen dataclass: the default workload
    smoke(config) -> Config                  the same path at the smallest size (cpu_smoke)
    workload(config) -> dict                 the workload as recorded in the evidence (all modes)
    run(config, lab_run) -> (results, decision)
                                             the measurement; it records per-step curves with
                                             lab_run.curve(name, value) and wraps long stages in
                                             lab_run.stage(name) / lab_run.progress(...); the
                                             decision is its `decide(...)`'s, one of gpu_labs.decisions

Run modes:
    dry_run    no model is loaded: config, workload and model identity are recorded,
               decision "not_measured".
    cpu_smoke  the smoke config on the CPU, with the tiny local model unless --model is given.
    real_gpu   the frozen config on CUDA (refused where CUDA is absent), SmolLM2 unless --model.
Before a run folder is claimed, `check_environment` refuses in one line, in this order: real_gpu
without CUDA, a measured run without the labs extra (peft, matplotlib; gguf for SmolLM2), then a
model that is not here (SmolLM2's file missing; a hub id neither cached nor reachable).
A run that raises records the failure (stage, type, message) and the decision
"reject_until_fixed"; its evidence is still written.

`run_lab` is three steps: `build` (mode, config, run folder, the evidence's fixed fields),
`measure` (the lab's run, or the model's identity for a dry run; failures recorded) and
`finish` (timings, memory, curves, artifacts; evidence.json).
"""

import importlib
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from gpu_labs import RUN_MODES, decisions
from gpu_labs import evidence as ev
from gpu_labs.config import as_dict, override
from gpu_labs.decisions import NOT_MEASURED, REJECT_UNTIL_FIXED
from gpu_labs.models import (
    SMOLLM2,
    TINY,
    ModelUnavailable,
    describe_model,
    hub_unreachable_but_cached,
    smollm2_gguf_path,
)
from gpu_labs.phrases import language, listing, text, unknown_lab
from gpu_labs.runs import LabRefusal, claim_run_dir, default_label

LABS_EXTRA = ("peft", "matplotlib")  # what a measured run imports: LoRA, curves.png
INSTALL_LABS = 'pip install "post-training-katas[labs]"'
EVIDENCE_FILE = "evidence.json"
CURVES_FILE = "curves.png"


@dataclass
class LabRun:
    """What a lab's `run` gets: where to write, on which device, and how to report progress."""

    lab: str
    run_mode: str
    label: str
    out_dir: Path
    device: str
    model_spec: str
    console: object = None  # a rich Console, one with its own progress_bar (gpu_labs.notebook), or None
    stages: ev.Stages = field(default_factory=ev.Stages)
    curves: dict[str, list] = field(default_factory=dict)
    extra: dict = field(default_factory=dict)  # more top-level evidence fields (e.g. data, artifacts)

    def stage(self, name: str):
        """`with lab_run.stage("rollouts"): ...` records the stage's wall time in the evidence."""
        return self.stages(name)

    def curve(self, name: str, value) -> None:
        self.curves.setdefault(name, []).append(None if value is None else float(value))

    def progress(self, description: str, total: int):
        """A progress bar that yields `advance()`: the console's own `progress_bar(description, total)`
        where it has one (a notebook's), else rich's (hidden when the console is not a terminal)."""
        own = getattr(self.console, "progress_bar", None)
        if own is not None:
            return own(description, total)
        from grader.report.styles import progress_bar

        return progress_bar(self.console, description, total)

    def say(self, key: str, **values) -> str:
        """A progress bar's description in the command's language (gpu_labs.phrases)."""
        return text(key, **values)


def lab_module(name: str):
    """The lab's module (or package), imported by the name gpu_labs.LABS gives it; LabRefusal for another name."""
    from gpu_labs import LABS

    if name not in LABS:
        raise LabRefusal(unknown_lab(name, language()))
    return importlib.import_module(LABS[name])


def resolve_config(module, run_mode: str, overrides: dict):
    """The lab's frozen defaults, shrunk for cpu_smoke, then the user's overrides."""
    config = module.Config()
    if run_mode == "cpu_smoke":
        config = module.smoke(config)
    return override(config, overrides)


def default_model(run_mode: str) -> str:
    return TINY if run_mode == "cpu_smoke" else SMOLLM2


def run_lab(
    name: str,
    run_mode: str,
    label: str | None = None,
    out: Path | None = None,
    model: str | None = None,
    overrides: dict | None = None,
    console=None,
    root: Path | None = None,
) -> tuple[dict, Path]:
    """Run lab `name`; returns (evidence, run folder). Raises LabRefusal before anything is written."""
    module, config, lab_run, record = build(name, run_mode, label, out, model, overrides, console, root)
    measure(module, config, lab_run, record)
    return finish(lab_run, record), lab_run.out_dir


def build(name, run_mode, label=None, out=None, model=None, overrides=None, console=None, root=None):
    """Check the mode and config, claim the run folder: (lab module, config, LabRun, the evidence so far)."""
    if run_mode not in RUN_MODES:
        raise LabRefusal(text("bad_run_mode", mode=run_mode, modes=listing(RUN_MODES)))
    module = lab_module(name)
    config = resolve_config(module, run_mode, overrides or {})
    model = model or default_model(run_mode)
    check_environment(name, run_mode, model)
    label = label or default_label(run_mode)
    out_dir = claim_run_dir(name, label, out, **({"root": root} if root else {}))
    lab_run = LabRun(name, run_mode, label, out_dir, "cuda" if run_mode == "real_gpu" else "cpu", model, console)
    record = {
        "schema": ev.SCHEMA,
        "lab": name,
        "title": module.TITLE,
        "lesson": module.LESSON,
        "run_mode": run_mode,
        "label": label,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "framework": ev.framework_versions(),
        "hardware": ev.hardware(),
        "config": as_dict(config),
        "workload": module.workload(config),
        "model": {},
        "stages": {},
        "peak_memory": {},
        "cpu": ev.cpu_snapshot(),  # replaced by ev.cpu_usage at the end
        "results": {},
        "failure": None,
        "decision": NOT_MEASURED,
    }
    return module, config, lab_run, record


def check_environment(name: str, run_mode: str, model: str) -> None:
    """LabRefusal (one line) for what this machine lacks: CUDA, then the labs extra, then the model."""
    if run_mode == "real_gpu":
        import torch

        if not torch.cuda.is_available():
            raise LabRefusal(text("refuse_cuda"))
    if run_mode != "dry_run":
        needed = LABS_EXTRA + (("gguf",) if model == SMOLLM2 else ())
        missing = [module for module in needed if not _importable(module)]
        if missing:
            raise LabRefusal(text("refuse_extra", name=name, missing=listing(missing), install=INSTALL_LABS))
    try:
        if model == SMOLLM2:
            smollm2_gguf_path()
        elif run_mode != "dry_run":
            hub_unreachable_but_cached(model)
    except ModelUnavailable as error:
        raise LabRefusal(str(error)) from None


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def measure(module, config, lab_run: LabRun, record: dict) -> None:
    """The lab's `run` (or, for a dry run, the model's identity) into `record`; a raise is recorded, not passed on."""
    try:
        if lab_run.run_mode == "dry_run":
            with lab_run.stage("describe_model"):
                record["model"] = describe_model(lab_run.model_spec)
        else:
            ev.reset_peak_memory()
            results, decision = module.run(config, lab_run)
            record.update(results=results, decision=decisions.check(decision, lab_run.lab))
            record["model"] = lab_run.extra.pop("model", record["model"])
    except Exception as error:  # the run failed: keep the evidence of how far it got
        record["failure"] = {
            "stage": lab_run.stages.current,
            "type": type(error).__name__,
            "message": str(error).strip().splitlines()[0] if str(error).strip() else "",
            "traceback": traceback.format_exc(limit=-8),
        }
        record["decision"] = REJECT_UNTIL_FIXED


def finish(lab_run: LabRun, record: dict) -> dict:
    """Stages, memory, curves (and curves.png), artifacts and the finish time; evidence.json written atomically."""
    from gpu_labs.plots import save_curves

    record.update(lab_run.extra)
    record["stages"] = lab_run.stages.seconds
    record["peak_memory"] = ev.peak_memory()
    record["cpu"] = ev.cpu_usage(record["cpu"])
    record["curves"] = lab_run.curves
    title = f"{lab_run.lab} · {lab_run.label} ({lab_run.run_mode})"
    png = save_curves(lab_run.out_dir / CURVES_FILE, lab_run.curves, title) if lab_run.curves else None
    record["artifacts"] = {
        **record.get("artifacts", {}),
        "evidence": EVIDENCE_FILE,
        **({"curves": CURVES_FILE} if png else {}),
    }
    record["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    ev.write_json_atomic(lab_run.out_dir / EVIDENCE_FILE, record)
    return record
