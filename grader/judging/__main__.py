"""`kata check`'s judge, as a process of its own (started by grader.run.grading through grader.run.child):

    python -m grader.judging SLUG SANDBOX FINGERPRINTS -- PYTEST_ARGUMENTS...

It starts the contestants' warm process first (torch-free, so that both import torch at once:
grader.run.arena), then runs pytest with the grading plugin in this process, handing it the arena.
SANDBOX: auto, on or off; FINGERPRINTS: the folder that remembers the variants' fingerprints.
"""

import sys
from pathlib import Path

from grader.content.catalogue import get_kata
from grader.run import interrupt, sandbox
from grader.run.arena import Arena
from grader.run.child import exit_after


def main(argv: list[str]) -> None:
    interrupt.unblock()  # started with SIGINT and SIGTERM held (grader.run.child.run_judge)
    slug, choice, fingerprints, separator, *arguments = argv
    assert separator == "--", "usage: python -m grader.judging SLUG SANDBOX FINGERPRINTS -- PYTEST_ARGUMENTS..."
    arena = Arena.start(get_kata(slug).warm_imports, sandbox.choose(choice), Path(fingerprints))

    def judge() -> int:
        from grader.judging.plugin import run_pytest

        try:
            return run_pytest(arguments, arena)
        finally:
            arena.close()

    exit_after(judge)


if __name__ == "__main__":
    main(sys.argv[1:])
