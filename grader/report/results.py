"""The result of grading one file: plain data, shared by the plugin (which writes it as JSON) and
the CLI (which reads it, reports it and records progress). No torch here.

What the file's code controls (a check's message and output, the load error, the target) is made
inert (grader.report.inert) when a result is built, by the judge or from JSON: every output reads it so.

A result stored to be shown later in any language (`kata grade`'s records) holds each failed
check's message and the load error in every language (`messages`, `load_errors`, {lang: text});
`in_language(lang)` is the result as shown in one, what every report and file reads.
"""

from collections import Counter
from dataclasses import asdict, dataclass, field, replace

from grader.report.inert import inert

STATUSES = ("passed", "failed", "error", "timeout")
SCORINGS = ("todos", "checks")  # a file's score: points per TODO, or the fraction of checks passed (gradesheet)
FEEDBACKS = ("graded", "full")  # feedback on work handed in: graded texts only, or `kata check`'s (report.terminal)


@dataclass
class CheckResult:
    name: str  # the check function's name, without "test_"
    title: str  # its docstring's first line
    todo: int | None  # the TODO it grades; None when it needs the whole function
    status: str  # one of STATUSES
    message: str = ""
    misconception: str | None = None
    output: str = ""  # what the learner's code printed (head and tail), for failed checks
    matches: list[str] = field(default_factory=list)  # every misconception that fits this failure
    title_zh: str = ""  # the docstring's "zh:" line
    expected_from: str = "reference"  # what gave the expected values: "reference", or "trl" (--against trl)
    whole: bool = False  # a value check of the whole function (todo None without it: the input contract)
    unwritten: int | None = None  # the TODO still raising the template's NotImplementedError in this check
    messages: dict[str, str] = field(default_factory=dict)  # {lang: message} in every language, or {} (one run's)

    def __post_init__(self):
        """Make inert what the learner's code wrote: the message (its exceptions, reprs of its values), the output."""
        self.message, self.output = inert(self.message), inert(self.output)
        self.messages = {lang: inert(text) for lang, text in self.messages.items()}

    def title_in(self, lang: str) -> str:
        return self.title_zh if lang == "zh" and self.title_zh else self.title


@dataclass(frozen=True)
class Location:
    """Where a failing file differs from the reference (grader.judging.localise)."""

    todos: tuple[int, ...]  # the TODOs; () when the difference is outside them
    method: str  # "transplant", "tags" (the fallback) or "outside_todos"
    note: str = ""  # with "tags": why hybrids were not used ("markers" or "time")

    def to_json(self) -> dict:
        return {"todos": list(self.todos), "method": self.method} | ({"note": self.note} if self.note else {})

    @classmethod
    def from_json(cls, data: dict | None) -> "Location | None":
        if not isinstance(data, dict):
            return None
        return cls(tuple(int(todo) for todo in data.get("todos", [])), str(data["method"]), str(data.get("note", "")))


@dataclass
class GradeResult:
    kata: str
    target: str
    checks: list[CheckResult]
    load_error: str | None = None
    against: str | None = None  # "trl" when graded with --against trl
    sandboxed: bool = False  # whether the file's code ran inside the OS sandbox (grader.run.sandbox)
    location: Location | None = None  # where a failing file differs from the reference; None if it passes
    seccomp: bool = False  # whether every contestant ran under the seccomp filter (grader.run.privileges)
    load_errors: dict[str, str] = field(default_factory=dict)  # {lang: load error} in every language, or {}

    def __post_init__(self):
        """Make inert the load error (the file's exception and prints) and the target (a path it was given)."""
        self.target = inert(self.target)
        self.load_error = None if self.load_error is None else inert(self.load_error)
        self.load_errors = {lang: inert(text) for lang, text in self.load_errors.items()}

    def in_language(self, lang: str) -> "GradeResult":
        """A copy whose messages and load error are those in `lang` where the result holds them
        (else as they are): what a report in `lang` shows of a stored result."""
        checks = [replace(check, message=check.messages.get(lang, check.message)) for check in self.checks]
        load_error = self.load_errors.get(lang, self.load_error)
        return replace(self, checks=checks, load_error=load_error)

    @property
    def passed(self) -> int:
        return sum(check.status == "passed" for check in self.checks)

    @property
    def failed(self) -> int:
        return len(self.checks) - self.passed

    @property
    def score(self) -> float:
        return round(self.passed / len(self.checks), 4) if self.checks else 0.0

    @property
    def failing_todos(self) -> list[int]:
        """The TODOs with at least one failing check tagged with them, in order."""
        return sorted({check.todo for check in self.checks if check.status != "passed" and check.todo is not None})

    @property
    def todos_to_fix(self) -> list[int]:
        """The TODOs that hold the mistake: the located ones, else those of the failing checks."""
        if self.location is not None and self.location.method != "tags":
            return list(self.location.todos)
        return self.failing_todos

    @property
    def diagnosis(self) -> str | None:
        """The misconception that explains the most failed checks, if any explains one."""
        counts = Counter(match for check in self.checks for match in check.matches)
        return counts.most_common(1)[0][0] if counts else None

    def settle_misconceptions(self) -> None:
        """Give each failed check one misconception: the overall diagnosis when it fits, else its first match."""
        diagnosis = self.diagnosis
        for check in self.checks:
            if check.matches:
                check.misconception = diagnosis if diagnosis in check.matches else check.matches[0]

    def to_json(self) -> dict:
        checks = [{key: value for key, value in asdict(check).items() if key != "matches"} for check in self.checks]
        return {
            "kata": self.kata,
            "target": self.target,
            "against": self.against,
            "sandboxed": self.sandboxed,
            "seccomp": self.seccomp,
            "passed": self.passed,
            "failed": self.failed,
            "score": self.score,
            "load_error": self.load_error,
            "diagnosis": self.diagnosis,
            "location": self.location.to_json() if self.location else None,
            "load_errors": self.load_errors,
            "checks": checks,
            "matches": {check.name: check.matches for check in self.checks if check.matches},
        }

    @classmethod
    def from_json(cls, data: dict) -> "GradeResult":
        matches = data.get("matches", {})
        checks = [CheckResult(**item, matches=matches.get(item["name"], [])) for item in data["checks"]]
        return cls(
            data["kata"],
            data["target"],
            checks,
            data.get("load_error"),
            data.get("against"),
            data.get("sandboxed") is True,
            Location.from_json(data.get("location")),
            data.get("seccomp") is True,
            dict(data.get("load_errors") or {}),
        )
