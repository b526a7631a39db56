"""Post-Training Katas: the `kata` command and the grader, in the order of the pipeline (the layers,
the processes and what each may see: grader/ARCHITECTURE.md):

- content: the katas (catalogue, rendering from the references, languages, drills, quizzes);
- cli: the `kata` command, with the learner's workspace and hints;
- run: running learner code: the arena, the warm process, boxes and contestants, the sandbox, the wire;
- judging: the pytest side of a grading run (the plugin, the session, boxes, naming, locating, `expect`);
- report: the result of a run, and the report on the terminal;
- classroom: `kata grade`, a whole class at once;
- oracles: TRL's own code as the source of expected values (`--against trl`);
- builders: models the checks build in the judge and in contestants;
- files: writing a file atomically.
"""

import hashlib
from functools import cache
from pathlib import Path

DEFAULT_TIMEOUT = 10.0  # seconds each check may take
DEFAULT_MEMORY_MB = 1024  # memory each check may add under `kata grade`


def run_limit(timeout: float) -> float:
    """Seconds one file's whole grading run may take, given `timeout` seconds per check."""
    return max(120.0, 60 * timeout)


@cache
def source_digest() -> str:
    """A digest of the grader's own source: a stored result or fingerprint depends on it."""
    hasher = hashlib.sha256()
    for path in sorted(Path(__file__).resolve().parent.rglob("*.py")):
        hasher.update(path.read_bytes())
    return hasher.hexdigest()[:16]
