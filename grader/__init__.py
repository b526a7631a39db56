"""Post-Training Katas: the `kata` command and the grader, in the order of the pipeline:

- content: the katas (catalogue, rendering from the references, hints, languages, drills, quizzes);
- cli: the `kata` command, with the learner's workspace;
- run: running learner code: the judge and its contestants, the sandbox, the limits, `kata check`'s run;
- judging: the pytest side of a grading run (the plugin, the session, `expect`, outcomes, targets);
- report: the result of a run, and the report on the terminal;
- classroom: `kata grade`, a whole class at once;
- oracles: TRL's own code as the source of expected values (`--against trl`);
- builders: models the checks build in the judge and in contestants;
- files: writing a file atomically.
"""

DEFAULT_TIMEOUT = 10.0  # seconds each check may take
DEFAULT_MEMORY_MB = 1024  # memory each check may add under `kata grade`


def run_limit(timeout: float) -> float:
    """Seconds one file's whole grading run may take, given `timeout` seconds per check."""
    return max(120.0, 60 * timeout)
