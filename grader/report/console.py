"""The `kata` command's stdout and stderr consoles, created on first use: `kata list` piped to a
file never imports rich. The `kata` commands and `kata lab` (gpu_labs.cli) print through them.
"""


class _LazyConsole:
    """The rich console, created on first use: `kata list` piped to a file never imports rich."""

    def __init__(self, stderr: bool):
        self._stderr = stderr
        self._console = None

    def rich(self):
        """The Console itself (rich's Progress needs the real one), created if need be."""
        if self._console is None:
            from grader.report.styles import make_console

            self._console = make_console(stderr=self._stderr)
        return self._console

    def forget(self) -> None:
        """Create the console afresh on next use: a command run in-process again (the tests) reads
        its terminal's width (COLUMNS) as a new process would."""
        self._console = None

    def __getattr__(self, name):
        return getattr(self.rich(), name)


console = _LazyConsole(stderr=False)
errors = _LazyConsole(stderr=True)
