"""Post-Training Katas: the `kata` command, the catalogue, rendering and the pytest grading plugin."""

DEFAULT_TIMEOUT = 10.0  # seconds each check may take
