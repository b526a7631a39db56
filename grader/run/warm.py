"""Start the warm contestant process (grader.run.contestant), without importing torch here: whoever
keeps it (grader.run.arena) starts it first thing, so that both import torch at the same time.

    process, control = start(["import torch"], drop=Path("/tmp/kata-drop-x"))   # in bwrap
    process, control = start(["import torch"])                                  # outside it
"""

import socket
import subprocess
import sys
from pathlib import Path

from grader.run import sandbox

SANDBOXED, GUARDED = "sandboxed", "guarded"  # grader.run.contestant's MODE


def start(imports: list[str], drop: Path | None = None) -> tuple[subprocess.Popen, socket.socket]:
    """The warm process (in the sandbox when `drop` is given), running the import statements
    `imports` while the caller goes on, and the judge's end of its control socket."""
    ours, theirs = socket.socketpair()
    mode = GUARDED if drop is None else SANDBOXED
    command = [sys.executable, "-P", "-m", "grader.run.contestant", str(theirs.fileno()), mode, *imports]
    if drop is not None:
        command = sandbox.command(command, drop)
    process = subprocess.Popen(command, pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, close_fds=True)
    theirs.close()
    return process, ours
