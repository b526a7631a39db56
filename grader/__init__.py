"""Post-Training Katas: the `kata` command, the catalogue, rendering and the pytest grading plugin."""

DEFAULT_TIMEOUT = 10.0  # seconds each check may take
DEFAULT_MEMORY_MB = 1024  # memory each check may add under `kata grade`


def run_limit(timeout: float) -> float:
    """Seconds one file's whole grading run may take, given `timeout` seconds per check."""
    return max(120.0, 60 * timeout)
