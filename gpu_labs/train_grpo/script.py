"""The `train_grpo` command line: `python -m gpu_labs.train_grpo --config PATH --FIELD VALUE ...` (__main__.py).

Thin over plain functions: `parse_command_line` splits the arguments into script options and
config fields, `resolve` builds the config (defaults -> smoke sizes for cpu_smoke -> the file ->
the fields), and `main` trains through the lab runner on rank 0 (`run_as_writer`: run folder,
evidence, summary) or as a silent worker rank (`run_as_worker`). The options, exit statuses and
launchers are in gpu_labs.train_grpo's docstring.
"""

import json
import sys
import textwrap
from pathlib import Path
from typing import NoReturn

from gpu_labs import train_grpo as lab  # its docstring is the --help text; this package's parent
from gpu_labs.config import ConfigError, as_dict, field_names, load_json_config, override
from gpu_labs.distributed import (
    Aborted,
    Ranks,
    join_process_group,
    leave_process_group,
    start_signal,
    world_size_from_env,
)
from gpu_labs.train_grpo import NAME, Config, check_config, run, smoke

SCRIPT_OPTIONS = ("config", "print_config", "run_mode", "model", "label", "out", "help")


class UsageError(Exception):
    """A command line the script cannot use; the message is one line (exit 2)."""


def parse_command_line(argv: list[str]) -> tuple[dict, dict]:
    """`--name value` / `--name=value` pairs -> (script options, config field overrides)."""
    options, fields, index = {}, {}, 0
    known = set(field_names(Config()))
    while index < len(argv):
        token = argv[index]
        if token in ("-h", "--help"):
            return {"help": True}, {}
        if not token.startswith("--") or token == "--":
            raise UsageError(f"unexpected argument {token!r}; options are --NAME VALUE (see --help)")
        name, equals, value = token[2:].partition("=")
        name = name.replace("-", "_")
        if name == "print_config":
            if equals:
                raise UsageError("--print-config takes no value")
            options[name] = True
            index += 1
            continue
        if name not in SCRIPT_OPTIONS and name not in known:
            raise UsageError(f"unknown option --{name}; config fields: {', '.join(sorted(known))}")
        if not equals:
            if index + 1 >= len(argv) or argv[index + 1].startswith("--"):
                raise UsageError(f"--{name} needs a value")
            value, index = argv[index + 1], index + 1
        (options if name in SCRIPT_OPTIONS else fields)[name] = value
        index += 1
    return options, fields


def default_run_mode() -> str:
    import torch

    return "real_gpu" if torch.cuda.is_available() else "cpu_smoke"


def resolve(options: dict, fields: dict) -> tuple[Config, str, dict]:
    """(config, run mode, the overrides for run_lab): defaults -> smoke (cpu_smoke) -> file -> fields."""
    from gpu_labs import RUN_MODES

    run_mode = options.get("run_mode") or default_run_mode()
    if run_mode not in RUN_MODES:
        raise UsageError(f"--run-mode must be one of {', '.join(RUN_MODES)}, got {run_mode!r}")
    overrides = {}
    if "config" in options:
        load_json_config(Config(), options["config"])  # checks the file on its own first
        overrides.update(json.loads(Path(options["config"]).read_text(encoding="utf-8")))
    overrides.update(fields)
    config = Config() if run_mode != "cpu_smoke" else smoke(Config())
    config = override(config, overrides)
    check_config(config, world_size_from_env())
    return config, run_mode, overrides


def main(argv: list[str] | None = None) -> int:
    """The script: parse, resolve, then train through the lab runner (rank 0) or as a worker rank."""
    from grader.report.styles import make_console

    errors = make_console(stderr=True)
    try:
        options, fields = parse_command_line(sys.argv[1:] if argv is None else argv)
        if options.get("help"):
            print(lab.__doc__.split("\n\nOne iteration")[0])
            fields = ", ".join(f"--{name}" for name in field_names(Config()))
            print("\n" + textwrap.fill(fields, 80, initial_indent="Config fields: ", subsequent_indent="  "))
            return 0
        config, run_mode, overrides = resolve(options, fields)
    except (UsageError, ConfigError) as error:
        errors.print(f"error: {error}", markup=False)
        return 2
    if options.get("print_config"):
        print(json.dumps(as_dict(config), indent=2))
        return 0
    ranks = join_process_group(run_mode)
    try:
        if ranks.writer:
            status = run_as_writer(run_mode, options, overrides, ranks, errors)
        else:
            status = run_as_worker(config, run_mode, options)
    finally:
        leave_process_group(ranks)
    if ranks.distributed:
        exit_without_teardown(status)  # an exception above ends the process the usual way
    return status


def exit_without_teardown(status: int) -> NoReturn:
    """A rank's exit once its part is done and its process group left: no interpreter shutdown.

    A worker rank is done right after its last collective (the replica check's all_gather), and
    rank 0 right after a refusal's start signal. A core dump of the crash this avoids (torch
    2.13, gloo, CPU: a worker rank, 2 of 92 runs here, and once in CI) showed the main thread in
    Py_FinalizeEx while a gloo worker thread was still freeing that all_gather's work object:
    releasing its tensors needs the GIL, a thread that asks for the GIL during finalization is
    made to exit, and unwinding through C++ aborts the process with `terminate called without
    an active exception`. torchrun then killed rank 0 before it wrote the evidence.
    """
    import os

    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def run_as_writer(run_mode: str, options: dict, overrides: dict, ranks: Ranks, errors) -> int:
    """Rank 0: run_lab claims the run folder, trains and writes the evidence; a refusal stops the other ranks."""
    from gpu_labs.runner import run_lab
    from gpu_labs.runs import LabRefusal
    from grader.report.styles import make_console

    console = make_console()
    try:
        evidence, out_dir = run_lab(
            NAME, run_mode, options.get("label"), options.get("out"), options.get("model"), overrides, console
        )
    except LabRefusal as error:  # raised before the run starts, so before its start signal
        start_signal(ranks, go=False)
        errors.print(f"error: {error}", markup=False)
        return 1
    print_summary(console, evidence, out_dir)
    return 1 if evidence["failure"] else 0


def run_as_worker(config: Config, run_mode: str, options: dict) -> int:
    """A rank other than 0: the same training, no files, no console."""
    from gpu_labs.runner import LabRun, default_model

    if run_mode == "dry_run":
        return 0
    lab_run = LabRun(
        NAME,
        run_mode,
        options.get("label") or "",
        Path("."),
        "cuda" if run_mode == "real_gpu" else "cpu",
        options.get("model") or default_model(run_mode),
    )
    try:
        run(config, lab_run)
    except Aborted:
        return 1
    return 0


def print_summary(console, evidence: dict, out_dir: Path) -> None:
    """The same summary `kata lab run` prints (gpu_labs.summary): decision, timings, results, sparklines."""
    from gpu_labs.summary import build_summary

    console.print(build_summary(evidence, out_dir))
