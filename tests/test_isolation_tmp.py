"""A Python installation under /tmp grades in the sandbox, and a contestant still reaches nothing
more of /tmp than its part of the allow-list (grader.run.sandbox: `kept_binds`, `_fresh_place`).

The installation is made the way `pip install .` lays out the project: a virtualenv in a fresh
folder of /tmp whose site-packages holds copies of `grader`, `gpu_labs`, `katas` and `reference`, and
of numpy and safetensors (the sandbox binds that site-packages, beneath /tmp, and covers `reference`
and `katas` in it); torch, pytest and the rest come from this environment's own site-packages,
named in a .pth file (bound where they lie). Every command runs that virtualenv's interpreter, so
the judge, the warm process and each contestant import from /tmp. Without the binds put back on a
contestant's fresh /tmp, every check of a correct file fails: a contestant cannot import what the
warm process had not (here numpy.ctypeslib, which safetensors imports to send a tensor back).

Each defence has its twin: the host sees the secret files the contestant must not see, the
contestant can write its own /tmp but not the installation nor the folders above it, and a
contestant sees its own marks but not an earlier file's.
"""

import json
import os
import secrets
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import numpy as np
import pytest
from conftest import need_sandbox

from grader.content.catalogue import get_kata
from grader.run import sandbox

PROJECT = Path(__file__).resolve().parent.parent
SLUG = "group_advantages"
EROFS = "EROFS"

PROBE = r'''
import errno, os


def listing(path):
    try:
        return sorted(os.listdir(path))
    except OSError as error:
        return errno.errorcode[error.errno]


def exists(paths):
    return [os.path.exists(path) for path in paths]


def read(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as error:
        return errno.errorcode[error.errno]


def write(path):
    """"ok" where it could create `path` (and removes it again), else the errno's name."""
    try:
        with open(path, "w") as handle:
            handle.write("x")
    except OSError as error:
        return errno.errorcode[error.errno]
    return "ok"


def mkdir(path):
    try:
        os.mkdir(path)
    except OSError as error:
        return errno.errorcode[error.errno]
    return "ok"


def writable_places(skip=("/proc", "/sys")):
    found = []
    for top, dirs, _ in os.walk("/", followlinks=False):
        dirs[:] = [d for d in dirs if os.path.join(top, d) not in skip]
        probe = os.path.join(top, ".kata-probe")
        try:
            with open(probe, "w") as handle:
                handle.write("x")
            os.remove(probe)
            found.append(top)
        except OSError:
            pass
    return sorted(found)
'''

# Run by the installation's interpreter: one contestant per list of calls, each in a box of its
# own (as each graded file is), one after the other, from one warm process; their answers as JSON.
DRIVER = r"""
import json, sys
from grader.run.arena import Arena

probe = open(sys.argv[1], encoding="utf-8").read()
contestants = json.loads(sys.argv[2])
arena = Arena.start(["import torch"], sandboxed=True)
answers = []
try:
    for calls in contestants:
        box = arena.zygote.box()
        learner = box.spawn({"work": None, "size_mb": 64}, 120.0)
        try:
            learner.load(probe, "<probe>")
            answers.append([learner.call(name, *args) for name, *args in calls])
        finally:
            learner.close()
            box.close()
finally:
    arena.close()
print(json.dumps(answers))
"""


COPIED = ("numpy", "numpy.libs", "safetensors")  # from this environment, into the installation's site-packages


def _copy_package(source: Path, into: Path) -> None:
    shutil.copytree(source, into / source.name, ignore=shutil.ignore_patterns("__pycache__"), symlinks=True)


@pytest.fixture(scope="module")
def installation():
    """{"root": a fresh folder of /tmp, "python", "site": its site-packages, "secrets": files beside it}."""
    need_sandbox()
    root = Path(tempfile.mkdtemp(prefix="kata-install-", dir="/tmp"))
    secret_files = [Path("/tmp") / f"kata-secret-{secrets.token_hex(8)}", root / "kata-secret-beside"]
    try:
        venv = root / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        relative = Path(sysconfig.get_path("purelib")).relative_to(sysconfig.get_path("data"))
        site = venv / relative
        for name in ("grader", "gpu_labs", "katas", "reference"):
            _copy_package(PROJECT / name, site)
        for name in COPIED:
            _copy_package(Path(np.__file__).resolve().parents[1] / name, site)
        ours = [entry for entry in sys.path if Path(entry).name == "site-packages" and Path(entry).is_dir()]
        (site / "torch-and-the-rest.pth").write_text("\n".join(ours) + "\n", encoding="utf-8")
        for path in secret_files:
            path.write_text("the host's own\n", encoding="utf-8")
        yield {"root": root, "python": str(venv / "bin" / "python"), "site": site, "secrets": secret_files}
    finally:
        for path in secret_files:
            path.unlink(missing_ok=True)
        shutil.rmtree(root, ignore_errors=True)


def _environment() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    return env | {"KATA_LANG": "en", "PYTHONSAFEPATH": "1"}


def test_the_installation_is_under_tmp_and_imports_from_there(installation):
    """The premise: its interpreter imports the grader and numpy from beneath /tmp, and the sandbox
    binds them there."""
    code = "import grader, numpy; from grader.run import sandbox; print(grader.__file__, numpy.__file__, sandbox.bound_paths())"
    done = subprocess.run(
        [installation["python"], "-c", code], env=_environment(), capture_output=True, text=True, check=True
    )
    imported, numpy, bound = done.stdout.split(" ", 2)
    assert imported == str(installation["site"] / "grader" / "__init__.py")
    assert numpy == str(installation["site"] / "numpy" / "__init__.py")
    assert repr(str(installation["root"] / "venv")) in bound


def test_an_installation_under_tmp_grades_a_file_in_the_sandbox(installation, tmp_path):
    kata = get_kata(SLUG)
    work = installation["root"] / "work"  # the learner's folder under /tmp too
    work.mkdir(exist_ok=True)

    def check(source: str) -> dict:
        (work / "mine.py").write_text(source, encoding="utf-8")
        command = [installation["python"], "-m", "grader.cli", "check", SLUG, "--file", "mine.py", "--json"]
        ran = subprocess.run(command, cwd=work, env=_environment(), capture_output=True, text=True)
        assert ran.stdout, ran.stderr
        return json.loads(ran.stdout)

    passed = check(kata.solution())
    assert passed["sandboxed"] and passed["failed"] == 0 and passed["passed"] > 10, [
        (item["name"], item["message"], item["output"][-400:])
        for item in passed["checks"]
        if item["status"] != "passed"
    ][:2]
    named = check(kata.variant("sample_std"))
    assert named["failed"] and named["diagnosis"] is not None


@pytest.fixture(scope="module")
def seen(installation) -> dict:
    """What three contestants, in boxes of their own one after another, answered (see DRIVER)."""
    root, site = installation["root"], installation["site"]
    venv = root / "venv"
    first = [
        ["read", str(site / "grader" / "__init__.py")],
        ["write", str(site / "grader" / "planted.py")],
        ["write", str(venv / "planted")],
        ["write", str(root / "planted")],
        ["mkdir", str(root / "planted-folder")],
        ["write", "/tmp/left"],
        ["write", "/dev/shm/left"],
        ["exists", ["/tmp/left", "/dev/shm/left"]],
        ["writable_places"],
    ]
    second = [
        ["exists", [str(path) for path in installation["secrets"]]],
        ["listing", "/tmp"],
        ["listing", str(root)],
        ["listing", str(site / "reference")],
        ["exists", [str(site / "reference" / f"{SLUG}.py"), str(site / "katas" / SLUG / "checks.py")]],
        ["exists", ["/tmp/left", "/dev/shm/left"]],
    ]
    probe = root / "probe.py"
    probe.write_text(PROBE, encoding="utf-8")
    driver = root / "driver.py"
    driver.write_text(DRIVER, encoding="utf-8")
    contestants = [first, second]
    done = subprocess.run(
        [installation["python"], str(driver), str(probe), json.dumps(contestants)],
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answers = json.loads(done.stdout.splitlines()[-1])
    return {"answers": answers}


def test_a_contestant_sees_the_installation_as_the_host_has_it(installation, seen):
    expected = (installation["site"] / "grader" / "__init__.py").read_text(encoding="utf-8")
    assert seen["answers"][0][0] == expected


def test_a_contestant_cannot_write_the_installation_nor_the_folders_above_it(seen):
    planted_in_package, planted_in_venv, planted_above, folder_above, *_ = seen["answers"][0][1:]
    assert [planted_in_package, planted_in_venv, planted_above, folder_above] == [EROFS] * 4


def test_it_can_still_write_its_own_tmp_and_only_its_own_fresh_places(seen):
    """The twin of the read-only binds: /tmp itself is its own writable tmpfs, and nothing else is."""
    tmp, shm, found, places = seen["answers"][0][5:9]
    assert [tmp, shm, found] == ["ok", "ok", [True, True]]
    assert set(places) == {sandbox.WORK, "/tmp", "/dev/shm"}


def test_nothing_else_of_the_host_tmp_is_in_view(installation, seen):
    """Not a file beside the installation nor one elsewhere in /tmp: /tmp holds only the folders
    down to the installation. The twin: the host sees both files."""
    hidden, in_tmp, in_root = seen["answers"][1][:3]
    assert hidden == [False, False]
    assert all(path.is_file() for path in installation["secrets"])
    assert in_tmp == [installation["root"].name]
    assert in_root == ["venv"]
    assert sorted(os.listdir(installation["root"])) != in_root


def test_the_reference_and_the_checks_stay_covered_in_the_installation(installation, seen):
    covered, found = seen["answers"][1][3:5]
    assert covered == [] and found == [False, False]
    assert (installation["site"] / "reference" / f"{SLUG}.py").is_file()  # the twin: the host has them
    assert (installation["site"] / "katas" / SLUG / "checks.py").is_file()


def test_a_file_graded_after_another_does_not_see_its_tmp(seen):
    assert seen["answers"][0][7] == [True, True]  # the twin: the first saw what it wrote
    assert seen["answers"][1][5] == [False, False]


def test_only_binds_beneath_a_fresh_place_are_put_back():
    bound = ["/usr", "/tmp", "/tmpfoo/venv", "/tmp/a/venv", "/dev/shm/x", "/kata/work/y", "/kata/drop/z"]
    assert sandbox.kept_binds(bound) == ("/tmp/a/venv", "/dev/shm/x", "/kata/work/y")
