"""Turn whatever happened during a check into a status and a one-line-first explanation.

Statuses: passed, failed (the code ran and was wrong, or a TODO is not written yet), error (the
code raised, was missing, could not load, crashed or exited), timeout (it ran out of time).
"""

import re
import traceback
from dataclasses import dataclass

from grader.expect import CheckFailed, MissingFunction
from grader.isolation import MEMORY_EXIT, ForkOutcome, KnownHang

_TODO_IN_MESSAGE = re.compile(r"^TODO (\d+)")
MEMORY_LIMIT = "memory limit exceeded"


def out_of_memory(error: BaseException) -> bool:
    """Python's MemoryError, or torch's allocator refusing (RuntimeError "can't allocate memory")."""
    return isinstance(error, MemoryError) or (isinstance(error, RuntimeError) and "can't allocate memory" in str(error))


@dataclass
class Outcome:
    status: str
    message: str = ""


def from_exception(error: BaseException, learner_file: str | None) -> Outcome:
    """Classify an exception raised while a check ran in the child."""
    if isinstance(error, MissingFunction):
        return Outcome("error", str(error))
    if isinstance(error, NotImplementedError):  # the template's, or a check's "not answered yet"
        todo = _TODO_IN_MESSAGE.match(str(error))
        which = f"TODO {todo.group(1)}" if todo else "a TODO"
        return Outcome("failed", f"not implemented yet: {which} still raises NotImplementedError")
    if isinstance(error, AssertionError | CheckFailed):
        return Outcome("failed", str(error) or "an expectation of this check does not hold")
    if isinstance(error, KnownHang):
        return Outcome("timeout", f"not run again: `{error.name}` already ran out of time in an earlier check")
    where = _learner_line(error, learner_file)
    if out_of_memory(error):
        return Outcome("error", f"{MEMORY_LIMIT}{where}: your code asked for more memory than a check may use")
    if isinstance(error, SystemExit):
        return Outcome("error", f"your code called sys.exit({error.code!r}){where}: a check cannot finish that way")
    kind = type(error).__name__
    return Outcome("error", f"{kind}: {error}{where}")


def from_fork(fork: ForkOutcome, timeout: float) -> Outcome:
    """Explain a child that never reported (timed out, crashed, or exited early)."""
    inside = f" inside `{fork.where}`" if fork.where else ""
    if fork.start_error:
        return Outcome(
            "error",
            f"the check could not start ({fork.start_error}): processes your code left running "
            "fill the process table (a fork bomb?)",
        )
    if fork.exit_code == MEMORY_EXIT:
        return Outcome("error", f"{MEMORY_LIMIT}{inside}: the check ran out of memory")
    if fork.timed_out:
        return Outcome("timeout", f"did not finish within {timeout:g} s{inside}: an endless loop, or far too slow")
    if fork.signal_name:
        return Outcome("error", f"the process crashed ({fork.signal_name}){inside}")
    return Outcome(
        "error",
        f"the process exited with status {fork.exit_code}{inside} before the check finished: "
        "does your code call sys.exit() or os._exit()?",
    )


def import_failure(error: BaseException, learner_file: str) -> str:
    """One line on why the file could not be loaded."""
    if isinstance(error, SyntaxError):
        line = (error.text or "").strip()
        return f"SyntaxError on line {error.lineno}: {error.msg}" + (f"  ->  {line}" if line else "")
    if isinstance(error, SystemExit):
        return f"the file calls sys.exit({error.code!r}) while it is being loaded"
    if out_of_memory(error):
        return f"{MEMORY_LIMIT} while loading the file{_learner_line(error, learner_file)}"
    return f"{type(error).__name__} while loading the file: {error}{_learner_line(error, learner_file)}"


def _learner_line(error: BaseException, filename: str | None) -> str:
    """' (line 42 in compute_x: `code`)' for the deepest frame in the learner's file, else ''."""
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename == filename]
    if not frames:
        return ""
    frame = frames[-1]
    code = f": `{frame.line.strip()}`" if frame.line else ""
    return f" (line {frame.lineno} in {frame.name}{code})"
