"""Turn whatever happened during a check into a status and a one-line-first explanation.

Statuses: passed, failed (the code ran and was wrong, or a TODO is not written yet), error (the
code raised, was missing, could not load, crashed or exited), timeout (it ran out of time).

Most explanations are worded here from what the exception carries (how a contestant ended, the
learner's exception and line, a TODO not written yet): `from_exception` words them again in any
language (grader.content.i18n.in_each). Those a check wrote itself (an assertion's text, an
exception raised by the check's own code) are not: `Outcome.rewordable` says which.
"""

import re
from dataclasses import dataclass

from grader.content.i18n import message_language, phrase, say
from grader.judging.expect import CheckFailed, MissingFunction, NoFunction
from grader.run.judge import Ending, KnownHang, LearnerRaised, Stopped, where_text
from grader.run.wire import End

_TODO_IN_MESSAGE = re.compile(r"^TODO (\d+)")


@dataclass
class Outcome:
    status: str
    message: str = ""
    unwritten: int | None = None  # the TODO that still raises the template's NotImplementedError
    rewordable: bool = True  # from_exception words `message` from the exception's data (False: the check wrote it)


def from_exception(error: BaseException, timeout: float) -> Outcome:
    """Classify an exception that ended a check in the judge (or the learner's, carried across)."""
    if isinstance(error, MissingFunction):
        return Outcome("error", str(error), rewordable=isinstance(error, NoFunction))
    if isinstance(error, NotImplementedError):  # the template's, or a check's "not answered yet"
        todo = _TODO_IN_MESSAGE.match(str(error))
        if todo is None:
            return Outcome(
                "failed",
                say(
                    "not implemented yet: a TODO still raises NotImplementedError",
                    "尚未实现：有 TODO 仍在抛出 NotImplementedError",
                ),
            )
        number = int(todo.group(1))
        return Outcome("failed", phrase(message_language(), "not_implemented", todo=number), unwritten=number)
    if isinstance(error, AssertionError | CheckFailed):
        if str(error):
            return Outcome("failed", str(error), rewordable=False)
        return Outcome("failed", say("an expectation of this check does not hold", "这项检查的某个预期不成立"))
    if isinstance(error, KnownHang):
        return Outcome(
            "timeout",
            say(
                f"not run again: `{error.name}` already ran out of time in an earlier check",
                f"不再重跑：`{error.name}` 在之前的检查中已经超时",
            ),
        )
    if isinstance(error, Stopped):
        return from_ending(error.ending, timeout)
    if isinstance(error, LearnerRaised):
        return _raised(error.type_name, str(error), error.where, error.exit_code)
    return Outcome("error", f"{type(error).__name__}: {error}", rewordable=False)


def _raised(kind: str, message: str, where: str, exit_code) -> Outcome:
    if kind == "MemoryError" or (kind == "RuntimeError" and "can't allocate memory" in message):
        return Outcome(
            "error",
            say(
                f"memory limit exceeded{where}: your code asked for more memory than a check may use",
                f"超出内存上限{where}：你的代码申请的内存超过了一项检查允许的上限",
            ),
        )
    if kind == "SystemExit":
        return Outcome(
            "error",
            say(
                f"your code called sys.exit({exit_code!r}){where}: a check cannot finish that way",
                f"你的代码调用了 sys.exit({exit_code!r}){where}：检查无法这样结束",
            ),
        )
    return Outcome("error", f"{kind}: {message}{where}")


def from_ending(ending: Ending, timeout: float) -> Outcome:
    """Explain a contestant that stopped answering (timed out, crashed, exited, or sent garbage)."""
    inside = say(f" inside `{ending.where}`", f"（在 `{ending.where}` 中）") if ending.where else ""
    detail = ending.detail
    if ending.kind == End.TIMEOUT:
        return Outcome(
            "timeout",
            say(
                f"did not finish within {timeout:g} s{inside}: an endless loop, or far too slow",
                f"未能在 {timeout:g} 秒内完成{inside}：死循环，或者太慢",
            ),
        )
    wording = {
        End.NOT_STARTED: say(
            f"the check could not start ({detail}): processes your code left running fill the process table "
            "(a fork bomb?)",
            f"检查无法启动（{detail}）：你的代码留下的进程占满了进程表（fork 炸弹？）",
        ),
        End.LOST: say(
            f"the grading process was killed{inside}, by the file's code?",
            f"评分进程被杀死{inside}，是文件中的代码所为？",
        ),
        End.MALFORMED: say(
            f"the answer{inside} was not in the grading format ({detail})",
            f"返回的答案{inside}不符合评分格式（{detail}）",
        ),
        End.MEMORY: say(
            f"memory limit exceeded{inside}: the check ran out of memory", f"超出内存上限{inside}：检查耗尽了内存"
        ),
        End.SIGNAL: say(f"the process crashed ({detail}){inside}", f"进程崩溃（{detail}）{inside}"),
        End.EXIT: say(
            f"the process exited with status {detail}{inside} before the check finished: "
            "does your code call sys.exit() or os._exit()?",
            f"进程在检查结束前以状态 {detail} 退出{inside}：你的代码是否调用了 sys.exit() 或 os._exit()？",
        ),
        End.KILLED: say(
            f"your code closed its connection to the checks{inside} and kept running",
            f"你的代码关闭了与检查程序的连接{inside}，却仍在运行",
        ),
    }
    return Outcome("error", wording[ending.kind])


def import_failure(raised: dict) -> str:
    """One line on why the file could not be loaded, from the contestant's account of the error."""
    kind, message, where = str(raised.get("type")), str(raised.get("message", "")), where_text(raised.get("where"))
    syntax = raised.get("syntax")
    if kind in ("SyntaxError", "IndentationError", "TabError") and isinstance(syntax, list) and len(syntax) in (3, 4):
        lineno, msg, line, column = [*syntax, None][:4]
        heading = say(f"{kind} on line {lineno}: {msg}", f"第 {lineno} 行有 {kind}：{msg}")
        if not line or not str(line).strip():
            return heading
        caret = f"\n    {' ' * (column - 1)}^" if isinstance(column, int) and 1 <= column <= len(line) + 1 else ""
        return f"{heading}\n    {line}{caret}"  # the line as written: its indentation may be the mistake
    if kind == "SystemExit":
        code = raised.get("exit_code")
        return say(
            f"the file calls sys.exit({code!r}) while it is being loaded", f"文件在加载时调用了 sys.exit({code!r})"
        )
    if kind == "MemoryError":
        return say(f"memory limit exceeded while loading the file{where}", f"加载文件时超出内存上限{where}")
    return say(f"{kind} while loading the file: {message}{where}", f"加载文件时出现 {kind}：{message}{where}")
