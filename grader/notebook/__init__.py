"""The katas in Jupyter and Colab: `%load_ext grader.notebook`, then the `%kata` magic.

    %load_ext grader.notebook
    %kata start grpo_loss           the next cell is the exercise, headed `%%kata check grpo_loss`
    %%kata check grpo_loss          the cell is graded in contestants, never run in the kernel

- magic: the `%kata` line and cell magic, thin commands over the `kata` command's functions;
- cells: where a cell's code lives as a file (the `kata` command's workspace);
- output: reports as HTML (and plain text) from the terminal's rich renderables.

The kernel keeps one `grader.judging.warm_judge.WarmJudge` for its life (its worker starts on the
first check and holds torch, pytest and the warm contestant process; each check forks a judge of
its own, and the cell's code runs only in contestants, in the sandbox where it works). It is closed
when the extension is unloaded and at the kernel's exit (atexit); a killed kernel's worker notices
its owner's death and ends, leaving nothing behind.

This is the top layer (grader/ARCHITECTURE.md): it may use the command's functions, never the reverse.
"""

import atexit


def load_ipython_extension(ipython) -> None:
    """Register `%kata` (line and cell magic) with one judge for this kernel, closed at exit."""
    from IPython.core.magic import Magics, line_cell_magic, magics_class

    from grader.judging.warm_judge import WarmJudge

    @magics_class
    class KataMagics(Magics):
        """The `%kata` magic (grader.notebook.magic), holding the kernel's warm judge."""

        def __init__(self, shell):
            super().__init__(shell)
            self.judge = WarmJudge("auto")  # nothing starts before the first check

        @line_cell_magic
        def kata(self, line: str, cell: str | None = None) -> None:
            """Post-Training Katas: `%kata --help` lists the commands."""
            from grader.notebook.magic import run

            run(line, cell, self.shell, self.judge)

    magics = KataMagics(ipython)
    ipython.register_magics(magics)
    atexit.register(magics.judge.close)


def unload_ipython_extension(ipython) -> None:
    """Close the kernel's judge (its processes end) and remove `%kata`."""
    manager = ipython.magics_manager
    magics = manager.registry.pop("KataMagics", None)
    if magics is None:
        return
    magics.judge.close()
    atexit.unregister(magics.judge.close)
    for kind in ("line", "cell"):
        manager.magics[kind].pop("kata", None)
