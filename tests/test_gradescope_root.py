"""Issue 26: graded on Gradescope, a contestant must find neither the reference nor the checks.

A fake Gradescope root, laid out as Gradescope and the zip's setup.sh lay it. Gradescope's
"Autograder Specifications" (gradescope-autograders.readthedocs.io/en/latest/specs/):
"/autograder/source contains the extracted contents of your autograder zip file",
"/autograder/run_autograder is where your autograder script gets copied to during the Docker image
build process", the submission lies in /autograder/submission, the results go to
/autograder/results/results.json, and "When the autograder executes, the working directory is
/autograder". Its image build runs `unzip -n -d /autograder/source /tmp/autograder.zip`
(the build log quoted in github.com/gradescope/autograder_samples/discussions/126). ROOT/venv holds
this package installed non-editable from ROOT/source, torch and the rest from the test environment.

Three submissions are graded by ROOT/run_autograder itself, run from ROOT:
- the *prober* (tests/gradescope_prober.py) compares every file it can read with the reference,
  the checks and the misconceptions, and their compiled forms, and answers with what it finds;
- its *twin* gives the prober's honest wrong answer without looking;
- the *searcher* walks as the prober does but never uses what it finds: its report, read back
  from its failing checks' outputs (the contract check, graded last, shows the finished walk),
  says what a contestant can read.
The prober must score what its twin scores, and the search must end having found nothing.
Where the sandbox cannot work these tests skip with the reason (and fail under CI).
"""

import base64
import hashlib
import importlib.util
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import types
import zipfile
import zlib
from pathlib import Path

import gradescope_prober
import pytest
from conftest import need_sandbox
from gradescope_schema import check_results

from grader.classroom import gradescope

SLUG = "group_advantages"
PROJECT = Path(__file__).resolve().parent.parent
TOPS = ("grader", "katas", "reference")
CLEAN_PATH = "/usr/local/bin:/usr/bin:/bin"

TWIN = f'''"""The prober's honest twin: its wrong answer, without the search."""

import torch


{inspect.getsource(gradescope_prober.honest)}

def compute_group_advantages(rewards, group_ids, eps=1e-6):
    return honest(rewards, group_ids, eps)
'''


def secret_files() -> dict[str, bytes]:
    """{name: bytes} of what a contestant must never read, from the checkout these tests run from:
    reference/*.py, katas/*/checks.py and katas/*/misconceptions.toml."""
    paths = sorted(PROJECT.glob("reference/*.py")) + sorted(PROJECT.glob("katas/*/checks.py"))
    paths += sorted(PROJECT.glob("katas/*/misconceptions.toml"))
    assert PROJECT / "reference" / f"{SLUG}.py" in paths, "the reference is not where these tests look for it"
    return {path.relative_to(PROJECT).as_posix(): path.read_bytes() for path in paths}


def prober_source(use_findings: bool) -> str:
    """tests/gradescope_prober.py with the secret files' digests appended (their sha256 and sizes,
    their compiled code's digest, their source hash), never a place where they lie."""
    secrets = secret_files()
    python = {name: data for name, data in secrets.items() if name.endswith(".py")}
    compiled = {name: compile(data, name, "exec", dont_inherit=True) for name, data in python.items()}
    values = {
        "SOURCES": {hashlib.sha256(data).hexdigest(): name for name, data in secrets.items()},
        "SIZES": sorted({len(data) for data in secrets.values()}),
        "CODES": {gradescope_prober.code_digest(code): name for name, code in compiled.items()},
        "SOURCE_HASHES": {importlib.util.source_hash(data).hex(): name for name, data in python.items()},
        "USE_FINDINGS": use_findings,
    }
    text = Path(gradescope_prober.__file__).read_text(encoding="utf-8")
    return text + "\n" + "".join(f"{name} = {value!r}\n" for name, value in values.items())


# -- the fake root --------------------------------------------------------------------------------


def unzip(archive: Path, folder: Path) -> None:
    """`unzip -n -d FOLDER ARCHIVE`, as Gradescope's image build runs it: modes kept (run_autograder
    stays executable), no file overwritten."""
    with zipfile.ZipFile(archive) as opened:
        for info in opened.infolist():
            target = folder / info.filename
            if target.exists():
                continue
            opened.extract(info, folder)
            mode = (info.external_attr >> 16) & 0o777
            if mode and not info.is_dir():
                target.chmod(mode)


def clean_environment(root: Path) -> dict[str, str]:
    """What run_autograder gets: a plain PATH, a home of its own, the root; nothing of this test run."""
    home = root.parent / "home"
    home.mkdir(exist_ok=True)
    return {"PATH": CLEAN_PATH, "HOME": str(home), "LANG": "C.UTF-8", gradescope.ROOT_VARIABLE: str(root)}


def run_quietly(*argv) -> None:
    env = os.environ | {"PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    done = subprocess.run([str(arg) for arg in argv], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, f"{' '.join(map(str, argv[:5]))} failed:\n{done.stdout}{done.stderr}"


def check_venv(root: Path, site: Path) -> None:
    """ROOT/venv's Python, from ROOT, imports grader, katas and reference from its own
    site-packages only, no editable finder, and torch."""
    assert (site / "reference" / f"{SLUG}.py").is_file() and (site / "katas" / SLUG / "checks.py").is_file(), (
        "the package is not installed non-editable in ROOT/venv"
    )
    program = (
        "import json, sys, grader, katas, reference, torch\n"
        "print(json.dumps({'modules': [grader.__file__, *katas.__path__, *reference.__path__],\n"
        "  'finders': [repr(finder) for finder in sys.meta_path], 'path': sys.path}))"
    )
    done = subprocess.run(
        [root / "venv" / "bin" / "python", "-c", program],
        cwd=root,
        env=clean_environment(root),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"ROOT/venv cannot import the package and torch: {done.stderr}"
    seen = json.loads(done.stdout)
    assert all(Path(path).is_relative_to(site) for path in seen["modules"]), (
        f"grader, katas and reference do not come from ROOT/venv's own install: {seen['modules']}"
    )
    assert not [finder for finder in seen["finders"] if "editable" in finder.lower()], (
        f"the test environment's editable finder leaked into ROOT/venv: {seen['finders']}"
    )
    elsewhere = [
        entry
        for entry in seen["path"]
        if Path(root, entry).resolve() != site.resolve() and any(Path(root, entry, top).exists() for top in TOPS)
    ]
    assert not elsewhere, f"grader, katas or reference could also be imported from {elsewhere} in ROOT/venv"


@pytest.fixture(scope="module")
def gradescope_root(tmp_path_factory, kata_main) -> Path:
    """A Gradescope root as the zip's setup.sh leaves it: ROOT/source (the unzipped autograder),
    ROOT/run_autograder (Gradescope's copy of it), ROOT/venv (`python -m venv`, this package
    installed from ROOT/source non-editable, torch and the other dependencies from the test
    environment). 11-20 s on a busy 2-core machine.

    setup.sh's `pip install "$ROOT/source"` would download; here the wheel is built from
    ROOT/source (in ROOT/source/build, where pip builds it too) with the test environment's
    setuptools and installed into ROOT/venv with --no-deps (`pip --python`: a venv made with pip
    takes 8-25 s more). Then a .pth file in ROOT/venv's site-packages names the test
    environment's site-packages. A directory named in a .pth is only appended to sys.path, the
    .pth files in it are not run: the test environment's `__editable__` finder (which maps grader,
    katas and reference to this checkout) is never installed in ROOT/venv, and ROOT/venv's own
    site-packages comes first (check_venv makes sure of both)."""
    started = time.monotonic()
    base = tmp_path_factory.mktemp("gradescope")
    root, archive, wheels = base / "autograder", base / "autograder.zip", base / "wheels"
    made = kata_main("gradescope", SLUG, "--out", archive)
    assert made.status == 0, f"kata gradescope failed: {made.output}"
    unzip(archive, root / "source")
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    venv = root / "venv"
    run_quietly(sys.executable, "-m", "venv", "--without-pip", venv)
    pip = [sys.executable, "-m", "pip"]
    run_quietly(*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index", "-w", wheels, root / "source")
    (wheel,) = wheels.glob("*.whl")
    run_quietly(*pip, "--python", venv / "bin" / "python", "install", "-q", "--no-deps", "--no-index", wheel)
    (site,) = venv.glob("lib/python3.*/site-packages")
    ours = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    (site / "test-environment.pth").write_text("".join(f"{path}\n" for path in ours), encoding="utf-8")
    check_venv(root, site)
    print(f"\nthe fake Gradescope root took {time.monotonic() - started:.1f} s to build")
    return root


# -- grading ----------------------------------------------------------------------------------------


def grade(root: Path, text: str) -> dict:
    """Hand in `text` as ROOT/submission/SLUG.py, run ROOT/run_autograder as Gradescope does
    (from ROOT), and return ROOT/results/results.json."""
    for folder in ("submission", "results"):
        shutil.rmtree(root / folder, ignore_errors=True)
    (root / "submission").mkdir()
    (root / "submission" / f"{SLUG}.py").write_text(text, encoding="utf-8")
    done = subprocess.run(
        ["bash", root / "run_autograder"],
        cwd=root,
        env=clean_environment(root),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"run_autograder failed:\n{done.stdout}{done.stderr}"
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    check_results(results)
    return results


def read_report(results: dict) -> dict | None:
    """The furthest report a prober printed in the outputs of its failing checks (None: none shown)."""
    line = re.compile(rf"{gradescope_prober.TAG}(\d\d)/(\d\d):([A-Za-z0-9+/=]+)")
    reports, chunks = [], []
    for test in results["tests"]:
        for number, count, chunk in line.findall(test["output"]):
            chunks = [chunk] if number == "00" else [*chunks, chunk]
            if int(number) == int(count) - 1 and len(chunks) == int(count):
                reports.append(json.loads(zlib.decompress(base64.b64decode("".join(chunks)))))
    return max(reports, key=lambda report: (report["complete"], report["files"]), default=None)


@pytest.fixture(scope="module")
def graded(gradescope_root) -> dict[str, dict]:
    """{"prober", "twin", "searcher"}: the results.json of each, graded by run_autograder (in the
    sandbox: skipped, saying why, where it cannot work)."""
    need_sandbox()
    return {
        "prober": grade(gradescope_root, prober_source(use_findings=True)),
        "twin": grade(gradescope_root, TWIN),
        "searcher": grade(gradescope_root, prober_source(use_findings=False)),
    }


def found(report: dict | None) -> str:
    """What a prober's report says it found, in one line."""
    if report is None:
        return "no report shown (no check failed)"
    if not report["found"]:
        return "nothing"
    places = ", ".join(f"{place} ({count})" for place, count in sorted(report["places"].items()))
    files = "; ".join(f"{path} ({name})" for path, name in report["found"])
    return f"{sum(report['places'].values())} files under {places}: {files}{'; ...' if 'cut' in report else ''}"


@pytest.mark.slow
def test_the_search_knows_every_secret_file_and_its_compiled_form(gradescope_root):
    """Outside the sandbox, in ROOT/venv's site-packages, the prober's walk finds them all."""
    prober = types.ModuleType("prober")
    exec(compile(prober_source(use_findings=False), "prober.py", "exec"), prober.__dict__)
    (site,) = (gradescope_root / "venv").glob("lib/python3.*/site-packages")
    state = prober.new_state(str(site))
    prober.BUDGET, prober.STARTED = 60.0, time.monotonic()
    prober.walk(state)
    secrets = secret_files()
    wanted = set(secrets) | {f"compiled {name}" for name in secrets if name.endswith(".py")}
    assert not state["folders"], "the walk of ROOT/venv's site-packages did not end in 60 s"
    assert {name for _, name in state["found"]} == wanted, "the prober misses secret files, or their .pyc, in ROOT/venv"


@pytest.mark.slow
def test_every_submission_was_graded_in_the_sandbox(graded):
    for name, results in graded.items():
        assert "in the OS sandbox" in results["output"], f"the {name} was graded outside the sandbox"


@pytest.mark.slow
def test_the_search_sees_every_readable_file_and_finds_nothing(graded):
    report = read_report(graded["searcher"])
    assert report is not None, "the searcher's report is not in its results' outputs"
    assert report["complete"], f"the search saw {report['files']} files and did not end: it proves nothing"
    assert report["files"] > 1000, f"the search saw only {report['files']} files: not even the Python installation"
    assert not report["found"], f"inside the sandbox a contestant can read {found(report)}"


@pytest.mark.slow
def test_the_prober_scores_exactly_what_its_twin_scores(graded):
    prober, twin = graded["prober"], graded["twin"]
    assert twin["score"] < sum(test["max_score"] for test in twin["tests"]), "the twin scores full marks"
    report = read_report(prober)
    assert prober["score"] == twin["score"], (
        f"the prober scored {prober['score']} where its honest twin scored {twin['score']}; it found {found(report)}"
    )
    assert report is not None and not report["found"], f"the prober found {found(report)}"
