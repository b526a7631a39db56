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
    note: str = ""  # with "tags": why hybrids were not used ("markers", "time", "pack" or "names")
    names: tuple[tuple[int, str], ...] = ()  # with note "names": (TODO, the name its guidance hands on, not assigned)

    def to_json(self) -> dict:
        data = {"todos": list(self.todos), "method": self.method} | ({"note": self.note} if self.note else {})
        return data | ({"names": [list(pair) for pair in self.names]} if self.names else {})

    @classmethod
    def from_json(cls, data: dict | None) -> "Location | None":
        if not isinstance(data, dict):
            return None
        names = tuple((int(todo), inert(str(name))) for todo, name in data.get("names", []))
        todos = tuple(int(todo) for todo in data.get("todos", []))
        return cls(todos, str(data["method"]), str(data.get("note", "")), names)


@dataclass(frozen=True)
class Diagnosis:
    """The mistake of one located TODO (grader.judging.session): that TODO's misconception that fits the
    most failed checks, None when none does (not a known mistake)."""

    todo: int
    misconception: str | None
    checks: int = 0  # the failed checks it fits
    alone: bool = False  # named from the hybrid with the reference's code in every other TODO

    def to_json(self) -> dict:
        return {"todo": self.todo, "misconception": self.misconception, "checks": self.checks, "alone": self.alone}

    @classmethod
    def from_json(cls, data: dict) -> "Diagnosis":
        named = data.get("misconception")
        return cls(int(data["todo"]), None if named is None else str(named), int(data.get("checks", 0)),
                   data.get("alone") is True)  # fmt: skip


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
    diagnoses: list[Diagnosis] = field(default_factory=list)  # one per located TODO written, in order
    timings: dict[str, float] = field(default_factory=dict)  # seconds in the judge's phases (Timings)

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
    def next_todo(self) -> int | None:
        """The TODO to fix first: the first of `todos_to_fix` with a failing check of its own, else the first."""
        todos = self.todos_to_fix
        return next((todo for todo in todos if todo in self.failing_todos), todos[0] if todos else None)

    @property
    def diagnosis(self) -> str | None:
        """The headline misconception: the diagnosis of the TODO to fix first where it has one (`diagnoses`),
        else the misconception that explains the most failed checks, if any explains one."""
        own = [d.misconception for d in self.diagnoses if d.todo == self.next_todo]
        if own:
            return own[0]
        counts = Counter(match for check in self.checks for match in check.matches)
        return counts.most_common(1)[0][0] if counts else None

    def settle_misconceptions(self) -> None:
        """Give each failed check one misconception: its TODO's diagnosis when it fits, else the headline
        diagnosis when it fits, else another located TODO's, else its first match."""
        named = [self.diagnosis] + [d.misconception for d in self.diagnoses]
        for check in self.checks:
            own = [d.misconception for d in self.diagnoses if d.todo == check.todo]
            check.misconception = next((m for m in own + named if m and m in check.matches), None)
            if check.matches and check.misconception is None:
                check.misconception = check.matches[0]

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
            "diagnoses": [diagnosis.to_json() for diagnosis in self.diagnoses],
            "load_errors": self.load_errors,
            "checks": checks,
            "matches": {check.name: check.matches for check in self.checks if check.matches},
            "timings": self.timings,
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
            [Diagnosis.from_json(item) for item in data.get("diagnoses") or []],
            {str(phase): float(seconds) for phase, seconds in (data.get("timings") or {}).items()},
        )
