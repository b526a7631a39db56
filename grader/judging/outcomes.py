"""Turn whatever happened during a check into a status and a one-line-first explanation.

Statuses: passed, failed (the code ran and was wrong, or a TODO is not written yet), error (the
code raised, was missing, could not load, crashed or exited), timeout (it ran out of time).
"""

import re
from dataclasses import dataclass

from grader.judging.expect import CheckFailed, MissingFunction
from grader.run.judge import Ending, KnownHang, LearnerRaised, Stopped
from grader.run.limits import MEMORY_EXIT

_TODO_IN_MESSAGE = re.compile(r"^TODO (\d+)")
MEMORY_LIMIT = "memory limit exceeded"


@dataclass
class Outcome:
    status: str
    message: str = ""


def from_exception(error: BaseException, timeout: float) -> Outcome:
    """Classify an exception that ended a check in the judge (or the learner's, carried across)."""
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
    if isinstance(error, Stopped):
        return from_ending(error.ending, timeout)
    if isinstance(error, LearnerRaised):
        return _raised(error.type_name, str(error), error.where, error.exit_code)
    return Outcome("error", f"{type(error).__name__}: {error}")


def _raised(kind: str, message: str, where: str, exit_code) -> Outcome:
    if kind == "MemoryError" or (kind == "RuntimeError" and "can't allocate memory" in message):
        return Outcome("error", f"{MEMORY_LIMIT}{where}: your code asked for more memory than a check may use")
    if kind == "SystemExit":
        return Outcome("error", f"your code called sys.exit({exit_code!r}){where}: a check cannot finish that way")
    return Outcome("error", f"{kind}: {message}{where}")


def from_ending(ending: Ending, timeout: float) -> Outcome:
    """Explain a contestant that stopped answering (timed out, crashed, exited, or sent garbage)."""
    inside = f" inside `{ending.where}`" if ending.where else ""
    if ending.start_error:
        return Outcome(
            "error",
            f"the check could not start ({ending.start_error}): processes your code left running "
            "fill the process table (a fork bomb?)",
        )
    if ending.lost:
        return Outcome("error", f"the grading process was killed{inside}, by the file's code?")
    if ending.malformed:
        return Outcome("error", f"the answer{inside} was not in the grading format ({ending.malformed})")
    if ending.exit_code == MEMORY_EXIT:
        return Outcome("error", f"{MEMORY_LIMIT}{inside}: the check ran out of memory")
    if ending.timed_out:
        return Outcome("timeout", f"did not finish within {timeout:g} s{inside}: an endless loop, or far too slow")
    if ending.signal_name:
        return Outcome("error", f"the process crashed ({ending.signal_name}){inside}")
    return Outcome(
        "error",
        f"the process exited with status {ending.exit_code}{inside} before the check finished: "
        "does your code call sys.exit() or os._exit()?",
    )


def import_failure(raised: dict) -> str:
    """One line on why the file could not be loaded, from the contestant's account of the error."""
    kind, message, where = str(raised.get("type")), str(raised.get("message", "")), str(raised.get("where") or "")
    syntax = raised.get("syntax")
    if kind in ("SyntaxError", "IndentationError", "TabError") and isinstance(syntax, list) and len(syntax) == 3:
        lineno, msg, line = syntax
        return f"SyntaxError on line {lineno}: {msg}" + (f"  ->  {line}" if line else "")
    if kind == "SystemExit":
        return f"the file calls sys.exit({raised.get('exit_code')!r}) while it is being loaded"
    if kind == "MemoryError":
        return f"{MEMORY_LIMIT} while loading the file{where}"
    return f"{kind} while loading the file: {message}{where}"
