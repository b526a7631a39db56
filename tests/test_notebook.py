"""`%load_ext grader.notebook` in a real ipykernel, driven through nbclient: `%kata start` gives
the exercise as the next cell (an execute-reply payload of source "set_next_input"), `%%kata check`
grades the cell in contestants (the reference passes, a misconception variant is named with its
TODO, an endless loop and a crash leave the kernel alive), reports are HTML and plain text without
ANSI, and the warm processes end with the kernel (shut down or killed). Colab's conditions (no TTY,
no bubblewrap) check unsandboxed and say so. A student pack checks from recorded values and has no
drill; a notebook `kata notebook` builds runs its exercise cell as the check; `%kata lab run` is
gpu_labs.notebook's run. The quick tier holds what needs no kernel: the HTML export and the
bad-argument lines of an in-process shell.

The kernel runs this virtualenv's Python: a kernelspec in a temporary JUPYTER_PATH.
"""

import json
import os
import re
import signal
import sys
import time
from pathlib import Path

import nbformat
import pytest
from conftest import flat

from grader.content.catalogue import get_kata
from grader.content.i18n import phrase

SLUG = "grpo_loss"
MISTAKE = "old_not_detached"  # in TODO 2 of grpo_loss
WORKER_MARKS = ("grader.run.contestant", "grader.judging", "grader.run.warm")  # a warm process's command line
ANSI = "\x1b["


# -- a kernel, cell by cell -----------------------------------------------------------------------------


class Kernel:
    """An ipykernel started by nbclient in `folder`; `run(source)` executes one cell and returns
    (its outputs' texts by mime type and stream, its execute-reply content, seconds taken)."""

    def __init__(self, folder: Path, env: dict):
        from nbclient import NotebookClient

        self.folder, self.nb = folder, nbformat.v4.new_notebook()
        self.replies: list[dict] = []
        self.client = NotebookClient(
            self.nb,
            kernel_name="kata-test",
            timeout=600,
            allow_errors=True,
            on_cell_executed=lambda cell, cell_index, execute_reply: self.replies.append(execute_reply),
        )
        self._context = self.client.setup_kernel(env=env, cwd=str(folder))
        self._context.__enter__()

    @property
    def pid(self) -> int:
        return self.client.km.provisioner.process.pid

    def run(self, source: str) -> tuple[dict, dict, float]:
        cell = nbformat.v4.new_code_cell(source)
        self.nb.cells.append(cell)
        started = time.perf_counter()
        self.client.execute_cell(cell, len(self.nb.cells) - 1)
        seconds = time.perf_counter() - started
        return outputs(cell), self.replies[-1]["content"], seconds

    def close(self) -> None:
        self._context.__exit__(None, None, None)


def outputs(cell) -> dict:
    """{"text/html": ..., "text/plain": ..., "stdout": ..., "stderr": ..., "error": ...} of a cell."""
    found: dict[str, str] = {}
    for output in cell.outputs:
        if output.output_type == "stream":
            found[output.name] = found.get(output.name, "") + output.text
        elif output.output_type == "error":
            found["error"] = "\n".join(output.traceback)
        else:
            for mime, data in output.get("data", {}).items():
                found[mime] = found.get(mime, "") + (data if isinstance(data, str) else json.dumps(data))
    return found


@pytest.fixture(scope="module")
def kernelspec(tmp_path_factory) -> Path:
    """A JUPYTER_PATH whose kernel `kata-test` is this virtualenv's Python."""
    root = tmp_path_factory.mktemp("jupyter")
    spec = root / "kernels" / "kata-test"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "kata", "language": "python"}))
    return root


@pytest.fixture(scope="module", autouse=True)
def jupyter_path(kernelspec):
    """Where nbclient's kernel manager finds `kata-test`, for this module's tests."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_PATH", str(kernelspec))
        yield


def kernel_env(tmp: Path, **more: str) -> dict:
    env = {**os.environ, "TMPDIR": str(tmp), "KATA_LANG": "en", **more}
    env.pop("KATA_WORKSPACE", None)
    env.pop("COLUMNS", None)
    return env


def start_kernel(folder: Path, **more: str) -> Kernel:
    tmp = folder / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    kernel = Kernel(folder, kernel_env(tmp, **more))
    loaded, _, _ = kernel.run("%load_ext grader.notebook")
    assert "error" not in loaded, loaded
    return kernel


def check_cell(code: str, *flags: str) -> str:
    return " ".join(["%%kata check", SLUG, *flags]) + "\n" + code


def no_ansi(found: dict) -> bool:
    """No traceback, and no output of the cell holds an ANSI escape (each mime type's text, as the
    frontend gets it)."""
    return "error" not in found and not [mime for mime, text in found.items() if ANSI in text]


def report_text(found: dict) -> str:
    return flat(found.get("text/plain", ""))


# -- processes and folders a kernel leaves ---------------------------------------------------------------


def descendants(pid: int) -> dict[int, str]:
    """{pid: command line} of every process below `pid` now."""
    children: dict[int, list[int]] = {}
    lines: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            lines[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found, todo = {}, [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found[child] = lines.get(child, "")
            todo.append(child)
    return found


def alive(pids: dict[int, str]) -> list[str]:
    """The processes of `pids` still running with the same command line (not a reused pid)."""
    left = []
    for pid, line in pids.items():
        try:
            now = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if now == line and state != "Z":
            left.append(f"{pid}: {line}")
    return left


def gone_within(pids: dict[int, str], seconds: float = 10.0) -> list[str]:
    deadline = time.monotonic() + seconds
    while (left := alive(pids)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


# -- the quick tier: no kernel ---------------------------------------------------------------------------


def test_a_report_exports_as_html_with_inline_colours_and_as_plain_text_without_ansi():
    from rich.text import Text

    from grader.notebook.output import Shown

    shown = Shown(Text.assemble(("✗ TODO 2", "failed"), ("  ⚑ old log-probs not detached", "misconception")))
    bundle = shown._repr_mimebundle_()
    assert bundle["text/plain"].strip() == "✗ TODO 2  ⚑ old log-probs not detached"
    assert re.search(r'<span style="[^"]*color: #800000[^"]*">✗ TODO 2</span>', bundle["text/html"])
    assert "<style" not in bundle["text/html"] and ANSI not in bundle["text/html"] + bundle["text/plain"]


def test_a_wide_report_keeps_to_80_columns():
    from rich.text import Text

    from grader.notebook.output import Shown

    lines = Shown(Text("word " * 60)).text.splitlines()
    assert len(lines) > 1 and max(map(len, lines)) <= 80


@pytest.fixture
def shell(tmp_path, monkeypatch):
    """An in-process IPython shell with the extension loaded, in an empty folder."""
    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KATA_WORKSPACE", raising=False)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "grader.notebook")
    yield shell
    shell.run_line_magic("unload_ext", "grader.notebook")
    InteractiveShell.clear_instance()


@pytest.mark.parametrize(
    "line, lang, words",
    [
        ("start no_such_kata", "en", "unknown kata 'no_such_kata'"),
        ("start grpo_loss --bogus", "en", "No such option '--bogus'"),
        ("hint grpo_loss --todo 9 --lang zh", "zh", "grpo_loss 的 TODO 编号为 1、2、3、4"),
        ('hint "grpo_loss', "en", "No closing quotation"),
        ("check grpo_loss", "en", "grades the code of its cell"),
        ("check grpo_loss --lang zh", "zh", "评的是所在单元格的代码"),
    ],
)
def test_a_bad_argument_is_one_line_on_stderr_in_the_learners_language(shell, capsys, line, lang, words):
    shell.run_line_magic("kata", line)
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and words in captured.err, captured.err
    assert "Traceback" not in captured.err + captured.out
    assert ("错误" in captured.err) == (lang == "zh")


def test_start_offers_the_learners_own_file_back_and_a_check_backs_up_a_file_it_did_not_write(shell, tmp_path):
    from grader.cli.workspace import Workspace
    from grader.notebook.cells import save_cell

    workspace = Workspace(tmp_path / "kata_workspace")
    mine = workspace.kata_file(SLUG)
    mine.parent.mkdir()
    mine.write_text("# mine, from an editor\n", encoding="utf-8")
    shell.run_line_magic("kata", f"start {SLUG}")
    offered = shell.rl_next_input
    assert offered == f"%%kata check {SLUG}\n# mine, from an editor\n"
    path, backup = save_cell(workspace, SLUG, "# from the cell\n")
    assert path == mine and backup is not None and backup.read_text(encoding="utf-8") == "# mine, from an editor\n"
    again, second = save_cell(workspace, SLUG, "# from the cell, edited\n")
    assert second is None and again.read_text(encoding="utf-8") == "# from the cell, edited\n"


def test_a_drill_is_the_next_cell_headed_by_its_check(shell):
    shell.run_line_magic("kata", f"drill {SLUG} --seed 3 --blanks 2 --lang zh")
    text = shell.rl_next_input
    first, rest = text.split("\n", 1)
    assert first == f"%%kata drill {SLUG} --check --lang zh"
    assert "__1__" in rest and "__2__" in rest and "__3__" not in rest


# -- the slow tier: a real kernel ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    """One kernel for the checks below, in a folder of its own (its workspace: kata_workspace)."""
    kernel = start_kernel(tmp_path_factory.mktemp("notebook"))
    yield kernel
    kernel.close()


@pytest.mark.slow
def test_start_puts_the_exercise_in_the_next_cell_as_a_payload(kernel):
    found, reply, _ = kernel.run(f"%kata start {SLUG}")
    payloads = [payload for payload in reply["payload"] if payload["source"] == "set_next_input"]
    assert len(payloads) == 1 and payloads[0]["text"] == f"%%kata check {SLUG}\n" + get_kata(SLUG).template("en")
    assert "The next cell holds the exercise (4 TODOs)" in report_text(found)
    assert no_ansi(found)


@pytest.mark.slow
def test_the_reference_passes_every_check_and_a_second_check_is_measured(kernel, capsys):
    kata = get_kata(SLUG)
    first, _, cold = kernel.run(check_cell(kata.solution()))
    text = report_text(first)
    assert re.search(r"[1-9]\d* passed, 0 failed$", text), text
    assert "<span style=" in first["text/html"] and no_ansi(first)
    second, _, warm = kernel.run(check_cell(kata.solution()))
    assert report_text(second).endswith(text[-20:])
    with capsys.disabled():
        print(f"\n%%kata check {SLUG} (reference): first {cold:.2f} s, second {warm:.2f} s")
    record = json.loads((kernel.folder / "kata_workspace" / ".progress.json").read_text(encoding="utf-8"))
    assert record["katas"][SLUG]["last_check"]["failed"] == 0 and record["katas"][SLUG]["passed_at"]


@pytest.mark.slow
def test_a_known_mistake_is_named_with_its_todo_and_the_next_hint_follows_it(kernel):
    kata = get_kata(SLUG)
    item = kata.misconception(MISTAKE)
    found, _, _ = kernel.run(check_cell(kata.variant(MISTAKE)))
    text = report_text(found)
    assert f"Likely misconception: {item.title_in('en')}" in text, text
    assert phrase("en", "located", todo=item.todo) in text and f"Next: TODO {item.todo} first" in text
    assert item.title_in("en") in found["text/html"] and no_ansi(found)
    hint, _, _ = kernel.run(f"%kata hint {SLUG}")
    assert report_text(hint).startswith(f"TODO {item.todo} ")


@pytest.mark.slow
@pytest.mark.parametrize(
    "code, words",
    [
        ("while True:\n    pass\n", "did not finish within 2 s"),
        ("import os\nos._exit(3)\n", "exited with status 3"),
    ],
    ids=["endless_loop", "crash"],
)
def test_an_endless_loop_or_a_crash_fails_the_check_and_the_kernel_lives_on(kernel, code, words):
    found, reply, _ = kernel.run(check_cell(code, "--timeout", "2"))
    text = report_text(found)
    assert reply["status"] == "ok" and words in text and re.search(r"0 passed, \d+ failed$", text), text
    assert no_ansi(found)
    later, _, _ = kernel.run("print(6 * 7)")
    assert later.get("stdout") == "42\n"


def _shut_down_and_look(tmp_path, stop) -> None:
    """Start a kernel, check the reference once, `stop` it; no process below it and no temporary
    folder of it is left."""
    kernel = start_kernel(tmp_path)
    found, _, _ = kernel.run(check_cell(get_kata(SLUG).solution()))
    assert "0 failed" in report_text(found)
    pid = kernel.pid
    below = descendants(pid)
    stop(kernel)
    left = gone_within(below)
    assert not left, left
    assert not [line for line in descendants(pid).values() if any(mark in line for mark in WORKER_MARKS)]
    time.sleep(0.5)
    assert not [path.name for path in (tmp_path / "tmp").iterdir()]


@pytest.mark.slow
def test_the_warm_processes_are_gone_after_the_kernel_shuts_down(tmp_path):
    _shut_down_and_look(tmp_path, Kernel.close)


@pytest.mark.slow
def test_the_warm_processes_are_gone_after_the_kernel_is_killed(tmp_path):
    def kill(kernel: Kernel) -> None:
        os.kill(kernel.pid, signal.SIGKILL)
        kernel.client.km.provisioner.process.wait(10)
        kernel.close()

    _shut_down_and_look(tmp_path, kill)


@pytest.mark.slow
def test_colab_without_a_tty_or_bubblewrap_checks_unsandboxed_and_says_so(tmp_path):
    """Colab's kernel: no TTY, and no bwrap on PATH (only this virtualenv's bin)."""
    kernel = start_kernel(tmp_path, PATH=str(Path(sys.executable).parent))
    try:
        probe, _, _ = kernel.run("import shutil, sys; print(shutil.which('bwrap'), sys.stdin.isatty())")
        assert probe.get("stdout") == "None False\n"
        kata = get_kata(SLUG)
        found, _, _ = kernel.run(check_cell(kata.variant(MISTAKE)))
        text = report_text(found)
        assert flat(phrase("en", "not_sandboxed")) in text, text
        assert kata.misconception(MISTAKE).title_in("en") in text and no_ansi(found)
    finally:
        kernel.close()


@pytest.mark.slow
def test_the_executed_notebooks_html_in_chromium_names_the_mistake(tmp_path):
    """nbconvert's HTML of an executed notebook, opened in headless Chromium: the report's text,
    read back from the DOM, names the mistake and where it lies; its colours are inline styles."""
    import html

    from nbclient import NotebookClient
    from nbconvert import HTMLExporter
    from test_report_html import _chromium, need_browser

    chromium = need_browser()
    kata = get_kata(SLUG)
    item = kata.misconception(MISTAKE)
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("%load_ext grader.notebook"),
        nbformat.v4.new_code_cell(check_cell(kata.variant(MISTAKE))),
    ]
    (tmp_path / "tmp").mkdir()
    client = NotebookClient(
        notebook, kernel_name="kata-test", timeout=600, resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute(env=kernel_env(tmp_path / "tmp"))
    nbformat.validate(notebook)
    page = tmp_path / "notebook.html"
    body, _ = HTMLExporter().from_notebook_node(notebook)
    page.write_text(body, encoding="utf-8")
    dom = _chromium(chromium, tmp_path / "profile", "--dump-dom", page.resolve().as_uri()).stdout
    text = flat(html.unescape(re.sub(r"<[^>]+>", " ", dom.split("<body", 1)[1])))
    assert f"Likely misconception: {item.title_in('en')}" in text, text[-3000:]
    assert flat(phrase("en", "located", todo=item.todo)) in text
    assert re.search(r'<span style="[^"]*color: #[0-9a-f]{6}', dom) and ANSI not in dom


@pytest.mark.slow
def test_in_a_student_pack_the_checks_use_recorded_values_and_drills_are_refused(tmp_path, monkeypatch):
    """A pack built by `kata pack` (as tests/test_pack.py builds it), installed offline into a fresh
    virtualenv; torch, IPython and ipykernel come from this one (a .pth line), the grader only from
    the pack. A variant is named, the report says the values are recorded and TODOs not located by
    transplant, and `%kata drill` is one line."""
    import subprocess
    import sysconfig

    from grader.pack.build import build

    slug = "group_advantages"
    build(tmp_path / "course", [slug])
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.check_output(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], text=True
        ).strip()
    )
    (site / "zz_this_venv.pth").write_text(sysconfig.get_path("purelib") + "\n")
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-index", "--no-deps"]
    subprocess.run([*pip, str(tmp_path / "course" / "pack")], check=True)
    spec = tmp_path / "jupyter" / "kernels" / "kata-test"
    spec.mkdir(parents=True)
    argv = [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "pack", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    kernel = start_kernel(tmp_path / "notebook")
    try:
        where, _, _ = kernel.run("import grader; print(grader.__file__)")
        assert where.get("stdout", "").startswith(str(site)), where
        kata = get_kata(slug)
        item = kata.misconceptions[0]
        found, _, _ = kernel.run(f"%%kata check {slug}\n" + kata.variant(item.id))
        text = report_text(found)
        assert flat(phrase("en", "nb_recorded")) in text and item.title_in("en", True) in text, text
        assert no_ansi(found)
        drill, reply, _ = kernel.run(f"%kata drill {slug}")
        assert drill.get("stderr") == phrase("en", "nb_no_drill_in_pack") + "\n" and not reply["payload"], drill
    finally:
        kernel.close()


@pytest.mark.parametrize(
    "line, words",
    [
        ("lab run no_such_lab", "unknown lab 'no_such_lab'"),
        ("lab run grpo_mechanism --run-mode nope --lang zh", "运行模式 `nope` 无效"),
    ],
)
def test_a_refused_lab_is_one_line_and_writes_nothing(shell, capsys, tmp_path, line, words):
    shell.run_line_magic("kata", line)
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and words in captured.err and "Traceback" not in captured.out
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow
def test_a_dry_lab_run_from_the_magic_writes_the_evidence_of_kata_lab_run(shell, tmp_path):
    shell.run_line_magic("kata", "lab run grpo_mechanism --run-mode dry_run --label from_magic")
    evidence = json.loads((tmp_path / "runs" / "grpo_mechanism" / "from_magic" / "evidence.json").read_text())
    assert evidence["lab"] == "grpo_mechanism" and evidence["run_mode"] == "dry_run"


@pytest.mark.slow
@pytest.mark.parametrize("target", ["reference", MISTAKE])
def test_a_generated_notebook_runs_its_exercise_cell_as_the_check(tmp_path, target):
    """`kata notebook`'s notebook (grader.content.notebook), executed with its exercise cell holding
    the reference (every check passes) or a variant (the mistake and its TODO are named)."""
    from nbclient import NotebookClient

    from grader.content.notebook import cells, kata_notebook

    kata = get_kata(SLUG)
    code = kata.solution() if target == "reference" else kata.variant(target)
    notebook = kata_notebook(kata, "en", exercise=code)
    (tmp_path / "tmp").mkdir()
    client = NotebookClient(
        notebook, kernel_name="kata-test", timeout=600, resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute(env=kernel_env(tmp_path / "tmp"))
    [exercise] = cells(notebook, "exercise")
    found = outputs(exercise)
    text = report_text(found)
    assert no_ansi(found)
    if target == "reference":
        assert re.search(r"[1-9]\d* passed, 0 failed$", text), text
    else:
        item = kata.misconception(target)
        assert f"Likely misconception: {item.title_in('en')}" in text and f"Next: TODO {item.todo} first" in text
