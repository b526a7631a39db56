"""A lab run from a notebook cell (gpu_labs.notebook), executed by nbclient in a real ipykernel.

One notebook, run once for the module: cells that are refused (an unknown lab, in English and in
Chinese; an unknown run mode; real_gpu without CUDA), then a cpu_smoke run of grpo_mechanism on the
tiny model. Beside it, `kata lab run grpo_mechanism --run-mode cpu_smoke` of the same lab with the
same label: the two run folders must hold the same files, and their evidence the same fields with
the same values, the timings and the process's memory aside. The kernel is this virtualenv's python,
through a kernelspec the test writes in a JUPYTER_PATH of its own. One torch thread in both.
Those are the slow tests; the refusals are also raised in this process, in the quick tier.
"""

import json
import os
import re
import sys
import time
from pathlib import Path

import pytest
from conftest import one_torch_thread

from gpu_labs.phrases import phrase, unknown_lab

ANSI = "\x1b["
LAB = "grpo_mechanism"
LABEL = "same"
TIMED = re.compile(r"(_ms|_at|_seconds)$")  # timing fields, wherever they are
PER_PROCESS = ("stages", "peak_memory", "cpu")  # seconds per stage, memory, CPU time and load: differ run to run
CELLS = {
    "unknown": 'run_in_notebook("grpo_mechanis")',
    "unknown_zh": 'run_in_notebook("grpo_mechanis", lang="zh")',
    "mode": 'run_in_notebook("grpo_mechanism", run_mode="fast")',
    "cuda": 'run_in_notebook("grpo_mechanism", run_mode="real_gpu")',
}


def kernelspec(folder: Path) -> Path:
    """A JUPYTER_PATH whose `python3` kernel is this interpreter, with one torch thread."""
    spec = folder / "kernels" / "python3"
    spec.mkdir(parents=True)
    kernel = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "post-training-katas (test)",
        "language": "python",
        "env": {"OMP_NUM_THREADS": "1", "KATA_LANG": "en"},
    }
    (spec / "kernel.json").write_text(json.dumps(kernel), encoding="utf-8")
    return folder


def build_notebook(out: Path):
    import nbformat

    cells = [nbformat.v4.new_code_cell("from gpu_labs.notebook import run_in_notebook")]
    for key, source in CELLS.items():
        cells.append(nbformat.v4.new_code_cell(source, metadata={"tags": ["raises-exception"], "case": key}))
    run = f"run_in_notebook({LAB!r}, run_mode='cpu_smoke', label={LABEL!r}, out={str(out)!r})"
    cells.append(nbformat.v4.new_code_cell(run, metadata={"case": "run"}))
    backend = "import matplotlib; print(matplotlib.get_backend())"  # the kernel's, after the lab drew its curves
    cells.append(nbformat.v4.new_code_cell(backend, metadata={"case": "backend"}))
    return nbformat.v4.new_notebook(cells=cells)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, kata_main):
    """(the executed notebook's cells by case, its run folder, the CLI's run folder, the notebook's
    seconds, the CLI's seconds, the kernel's cwd)."""
    from nbclient import NotebookClient

    root = tmp_path_factory.mktemp("lab_notebook")
    cwd = root / "cwd"
    cwd.mkdir()
    notebook = build_notebook(root / "notebook_run")
    client = NotebookClient(
        notebook, kernel_name="python3", timeout=600, startup_timeout=120, resources={"metadata": {"path": str(cwd)}}
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_PATH", str(kernelspec(root / "jupyter")))
        started = time.perf_counter()
        client.execute()
        notebook_seconds = time.perf_counter() - started
        patch.setenv("KATA_LANG", "en")
        started = time.perf_counter()
        with one_torch_thread():
            cli = kata_main("lab", "run", LAB, "--run-mode", "cpu_smoke", "--label", LABEL, "--out", root / "cli_run")
        cli_seconds = time.perf_counter() - started
    assert cli.status == 0, cli.err
    cells = {cell.metadata.get("case"): cell for cell in notebook.cells}
    return cells, root / "notebook_run", root / "cli_run", notebook_seconds, cli_seconds, cwd


def texts(cell) -> list[str]:
    """Every text a cell's outputs hold: streams, each mime type's text, error names and tracebacks."""
    found = []
    for output in cell.outputs:
        found += [output.get("text", ""), output.get("ename", ""), output.get("evalue", "")]
        found += output.get("traceback", [])
        found += [value for mime, value in output.get("data", {}).items() if not mime.startswith("image/")]
    return [text if isinstance(text, str) else "".join(text) for text in found]


def files(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


def comparable(value, key: str = ""):
    """The evidence with the timings' and the process's values set aside: their keys are kept."""
    if isinstance(value, dict):
        return {
            name: comparable(item, name) if name not in PER_PROCESS else sorted(item) for name, item in value.items()
        }
    if isinstance(value, list):
        return [comparable(item) for item in value]
    return "<timing>" if TIMED.search(key) else value


@pytest.mark.slow
def test_the_notebook_run_writes_the_files_and_evidence_of_kata_lab_run(runs):
    _, notebook_run, cli_run, notebook_seconds, cli_seconds, _ = runs
    print(f"notebook (kernel start, refusals, run): {notebook_seconds:.1f} s; kata lab run: {cli_seconds:.1f} s")
    assert files(notebook_run) == files(cli_run) and "evidence.json" in files(cli_run)
    notebook_evidence = json.loads((notebook_run / "evidence.json").read_text(encoding="utf-8"))
    cli_evidence = json.loads((cli_run / "evidence.json").read_text(encoding="utf-8"))
    assert comparable(notebook_evidence) == comparable(cli_evidence)
    assert notebook_evidence["decision"] == "accept_mechanism" and notebook_evidence["failure"] is None


@pytest.mark.slow
def test_the_run_cell_shows_progress_bars_its_curves_and_the_decision_without_ansi(runs):
    cells, notebook_run, *_ = runs
    run = cells["run"]
    assert not [output for output in run.outputs if output.output_type == "error" or output.get("name") == "stderr"]
    bars = [output for output in run.outputs if "<progress" in output.get("data", {}).get("text/html", "")]
    # one output per bar, each updated in place to its end: loading the model, each candidate set's updates
    final = [bar["data"]["text/plain"].split("  ")[:2] for bar in bars]
    assert final == [["loading tiny", "1/1"], ["minimal_pair: updates", "4/4"], ["expanded_group: updates", "4/4"]]
    images = [output for output in run.outputs if "image/png" in output.get("data", {})]
    assert len(images) == 1
    import base64

    png = (notebook_run / "curves.png").read_bytes()
    assert base64.b64decode(images[0]["data"]["image/png"]) == png
    shown = "\n".join(texts(run))
    assert "decision: accept_mechanism" in shown and f"evidence: {notebook_run}" in shown
    assert "<details>" in shown  # the whole summary, folded
    assert not any(ANSI in text for cell in cells.values() for text in texts(cell))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("case", "line"),
    [
        ("unknown", "kata lab: " + unknown_lab("grpo_mechanis", "en")),
        ("unknown_zh", "kata lab：" + unknown_lab("grpo_mechanis", "zh")),
        ("mode", "kata lab: " + phrase("en", "bad_run_mode", mode="fast", modes="dry_run, cpu_smoke, real_gpu")),
        ("cuda", "kata lab: " + phrase("en", "refuse_cuda")),
    ],
)
def test_a_refused_run_is_one_line_in_the_notebook_and_writes_nothing(runs, case, line):
    cells, *_, cwd = runs
    if case == "cuda":
        import torch

        if torch.cuda.is_available():
            pytest.skip("CUDA is here: real_gpu is not refused")
    outputs = cells[case].outputs
    assert [output.output_type for output in outputs] == ["error"]
    assert outputs[0].ename == "NotebookRefusal" and outputs[0].traceback == [line]
    assert os.listdir(cwd) == []  # no runs/ folder, no file


@pytest.mark.slow
def test_the_kernels_inline_backend_is_left_as_it_was(runs):
    cells, *_ = runs
    assert "inline" in "".join(texts(cells["backend"]))


MODES_ZH = "`dry_run`、`cpu_smoke`、`real_gpu`"


@pytest.mark.parametrize(
    ("arguments", "line"),
    [
        ({"name": "grpo_mechanis"}, "kata lab: " + unknown_lab("grpo_mechanis", "en")),
        (
            {"name": LAB, "run_mode": "fast", "lang": "zh"},
            "kata lab：" + phrase("zh", "bad_run_mode", mode="fast", modes=MODES_ZH),
        ),
    ],
    ids=["unknown lab", "unknown mode"],
)
def test_outside_a_kernel_a_refusal_is_raised_as_its_one_line_before_any_folder(tmp_path, monkeypatch, arguments, line):
    from gpu_labs.notebook import NotebookRefusal, run_in_notebook

    monkeypatch.chdir(tmp_path)
    with pytest.raises(NotebookRefusal) as refused:
        run_in_notebook(**arguments, out=tmp_path / "run")
    assert refused.value._render_traceback_() == [line]
    assert os.listdir(tmp_path) == []


def test_a_bad_override_is_refused_with_the_message_kata_lab_run_gives_for_its_set(tmp_path, monkeypatch, kata_main):
    from gpu_labs.notebook import NotebookRefusal, run_in_notebook

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KATA_LANG", "en")
    with pytest.raises(NotebookRefusal) as refused:
        run_in_notebook(LAB, overrides={"update_step": "2"}, out=tmp_path / "run")
    cli = kata_main("lab", "run", LAB, "--run-mode", "cpu_smoke", "--set", "update_step=2", "--out", tmp_path / "cli")
    assert cli.status == 2 and str(refused.value) in cli.err and "update_step" in str(refused.value)
    assert refused.value._render_traceback_() == [f"kata lab: {refused.value}"]
    assert os.listdir(tmp_path) == []
