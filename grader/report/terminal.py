"""Build the grading report as rich renderables (printed once, by the caller).

Checks are grouped by TODO. A TODO whose checks all pass is one line; a failing check shows its
message (the call, expected, got, largest difference and where), what the code printed, and
the misconception it fits. The report ends with what to do next and the plain summary line.

When several TODOs are located, each gets its own diagnosis (GradeResult.diagnoses: a misconception,
or not a known mistake), in order; the headline diagnosis and `Next:` are those of the same TODO
(GradeResult.next_todo), one with failing checks of its own. A located TODO whose checks all pass is
said to be proven by the transplant (the others replaced without it still fail).

A `graded` report (`kata grade`, Gradescope: feedback on work handed in) tells each misconception
by its graded title and explanation, which say what went wrong and never the corrected code, and
its next step never points to `kata solution`; otherwise it is the report of `kata check`.

A unit's report (`build_unit_report`: one TODO, the whole function or the input contract, what
Gradescope shows per test) is that unit's section alone, with the diagnosis when its misconception
lies in that TODO and the location when it points there.
"""

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.text import Text

from grader.content.catalogue import Kata, in_pack, localized
from grader.content.i18n import joined, phrase
from grader.oracles.against import TRL_VERSION
from grader.report.results import CheckResult, Diagnosis, GradeResult
from grader.report.styles import SYMBOL, Prose, Trimmed

SHAPE_ONLY = ("tensor of shape", "张量，形状")  # a tensor shown by shape only (grader.judging.expect.shape_only)
DETAILED = 2  # failing checks shown in full per TODO (the rest: one line each)
MESSAGE_LINES = 14  # a tensor's window (grader.judging.expect: 7 values) with its call, header and detail
OUTPUT_LINES = 12


def summary_line(result: GradeResult) -> str:
    return f"{result.passed} passed, {result.failed} failed"


def build_report(
    result: GradeResult,
    kata: Kata,
    lang: str,
    target_label: str,
    verbose: bool = False,
    graded: bool = False,
    own_file: bool = True,
    again: str | None = None,
) -> RenderableType:
    """The whole report; at most DETAILED failures per TODO are shown in full unless `verbose`;
    `graded`: as feedback on work handed in (see the module docstring); `own_file`: the check is the
    kata's own (its workspace file, recorded), so a pass opens `kata solution` (else: with --force);
    `again`: the command that checks this file again (default `kata check SLUG`; a drill's is
    `kata drill SLUG --check PATH`)."""
    again = again or f"kata check {kata.slug}"
    in_full = again if again.startswith("kata check ") else f"kata check {kata.slug} --file {target_label}"
    parts: list[RenderableType] = [
        Prose(Text.assemble((f"{kata.slug} · {localized(kata.title, lang)}", "title"), ("  " + target_label, "muted"))),
        Text(),
    ]
    if result.against:
        parts[1:1] = [_against_line(result, lang)]
    if verbose:
        sandbox = phrase(lang, "sandboxed" if result.sandboxed else "not_sandboxed")
        parts[1:1] = [
            Prose(sandbox, "muted"),
            Prose(phrase(lang, "seccomp_on" if result.seccomp else "seccomp_off"), "muted"),
        ]
    if result.load_error:
        parts += [
            Prose(phrase(lang, "not_loaded") + phrase(lang, "colon").rstrip(), "error"),
            _pad(Prose(result.load_error), (0, 0, 1, 4)),
        ]
    else:
        for todo, checks in _by_todo(result.checks):
            detailed = None if verbose else DETAILED
            parts += _todo_section(todo, checks, kata, lang, detailed, result.diagnosis, graded, in_full)
        if len(result.diagnoses) > 1:
            parts += _diagnoses(result, kata, lang, graded)
        elif result.diagnosis:
            parts += _diagnosis(result, kata, lang, graded)
    parts += _location(result, lang)
    parts += [Prose(_next_step(result, kata, lang, graded, own_file, again), "next"), Text(summary_line(result))]
    return Trimmed(Group(*parts))


def build_unit_report(
    result: GradeResult, kata: Kata, lang: str, unit: int | str, graded: bool = True
) -> RenderableType:
    """The report of one unit of `result` (a TODO's number, "whole" or "contract"): its checks' section
    (at most DETAILED failures in full), the diagnosis when its misconception is in TODO `unit`, and
    where the mistake lies when that is in `unit` (or, for the whole function, anywhere)."""
    checks = dict(_by_todo(result.checks)).get(unit, [])
    parts: list[RenderableType] = _todo_section(unit, checks, kata, lang, DETAILED, result.diagnosis, graded)
    if len(result.diagnoses) > 1:
        parts += [line for d in result.diagnoses if d.todo == unit for line in _one_diagnosis(d, kata, lang, graded)]
    elif result.diagnosis and kata.misconception(result.diagnosis).todo == unit:
        parts += _diagnosis(result, kata, lang, graded)
    location = result.location
    if location is not None and (unit in location.todos or (unit == "whole" and location.method == "outside_todos")):
        parts += _location(result, lang)
    return Trimmed(Group(*parts))


def _against_line(result: GradeResult, lang: str) -> Text:
    n = sum(check.expected_from == result.against for check in result.checks)
    return Prose(phrase(lang, "against", version=TRL_VERSION, n=n, total=len(result.checks)), "muted")


def _by_todo(checks: list[CheckResult]) -> list[tuple[int | str, list[CheckResult]]]:
    """The checks by TODO, then the whole function's value checks ("whole"), then the input contract."""

    def section(check: CheckResult) -> int | str:
        return check.todo if check.todo is not None else "whole" if check.whole else "contract"

    order = [*sorted({check.todo for check in checks} - {None}), "whole", "contract"]
    return [(key, found) for key in order if (found := [check for check in checks if section(check) == key])]


def _todo_section(
    todo: int | str,
    checks: list[CheckResult],
    kata: Kata,
    lang: str,
    detailed: int | None,
    diagnosis: str | None = None,
    graded: bool = False,
    in_full: str | None = None,
) -> list[RenderableType]:
    passed = sum(check.status == "passed" for check in checks)
    label = f"TODO {todo}" if isinstance(todo, int) else phrase(lang, todo)
    title = localized(kata.todo(todo).title, lang) if isinstance(todo, int) else ""
    status = "passed" if passed == len(checks) else "failed"
    header = Prose(
        Text.assemble(
            (f"{SYMBOL[status]} ", status), (f"{label}  ", "todo"), (f"{passed}/{len(checks)}  ", status), (title, "")
        )
    )
    failing = [check for check in checks if check.status != "passed"]
    blocking = {check.unwritten for check in failing}
    if failing and None not in blocking:
        first = min(blocking)
        key = "not_implemented" if first == todo else "waiting_for"
        return [header, _pad(Prose(phrase(lang, key, todo=first), "muted"), (0, 0, 1, 4))]
    lines: list[RenderableType] = [header]
    shown = _most_telling(failing, detailed)
    briefly: dict[str, list[CheckResult]] = {}  # the others by title: a parametrized check's cases fold
    for check in failing:
        if check not in shown:
            briefly.setdefault(check.title_in(lang), []).append(check)
    titles_shown = {check.title_in(lang) for check in shown}
    for check in failing:
        if check in shown:
            lines.append(_failed_check(check, kata, lang, graded))
        elif check is briefly[check.title_in(lang)][0]:
            cases = briefly[check.title_in(lang)]
            shown_too = check.title_in(lang) in titles_shown
            lines.append(_failed_title(cases, kata, lang, diagnosis, shown_too, graded))
    if detailed is not None and len(failing) > detailed:
        command = in_full or f"kata check {kata.slug}"
        lines.append(_pad(Prose(phrase(lang, "more", command=command), "muted"), (0, 0, 0, 4)))
    lines.append(Text())
    return lines


def _pad(renderable: RenderableType, pad: tuple[int, int, int, int]) -> Padding:
    return Padding(renderable, pad, expand=False)


def _most_telling(failing: list[CheckResult], detailed: int | None) -> list[CheckResult]:
    """The failures to show in full: one per distinct check, those whose values are printed first."""
    if detailed is None:
        return failing
    distinct = list({check.name.split("[")[0]: check for check in reversed(failing)}.values())[::-1]
    return sorted(distinct, key=lambda check: any(words in check.message for words in SHAPE_ONLY))[:detailed]


def _failed_title(
    cases: list[CheckResult],
    kata: Kata,
    lang: str,
    diagnosis: str | None,
    another_shown: bool = False,
    graded: bool = False,
) -> RenderableType:
    """Failed checks of one title, in two lines: the title and the misconception it fits (unless
    that is the overall diagnosis); then how many cases (when `another_shown`: beyond the one shown
    in full) and the first one's reason, its message's last line, cut to the width."""
    check = cases[0]
    named = check.misconception and check.misconception != diagnosis
    tag = f"  ⚑ {kata.misconception(check.misconception).title_in(lang, graded)}" if named else ""
    line = Prose(
        Text.assemble(
            (f"{SYMBOL[check.status]} ", check.status), (check.title_in(lang), check.status), (tag, "misconception")
        )
    )
    many = len(cases) > 1 or another_shown
    count = phrase(lang, "more_cases" if another_shown else "cases", n=len(cases)) if many else ""
    count += " " if count and lang == "en" else ""  # after a full-width colon, no space
    reason = (check.message.strip().splitlines() or [""])[-1].strip()
    below = Text.assemble((count, "muted"), (reason, "code"), no_wrap=True, overflow="ellipsis")
    return _pad(Group(line, _pad(below, (0, 0, 0, 2))) if below.plain else line, (0, 0, 0, 2))


def _failed_check(check: CheckResult, kata: Kata, lang: str, graded: bool = False) -> RenderableType:
    source = f"  ({phrase(lang, 'from_trl')})" if check.expected_from == "trl" else ""
    parts: list[RenderableType] = [
        Prose(
            Text.assemble(
                (f"{SYMBOL[check.status]} ", check.status), (check.title_in(lang), check.status), (source, "muted")
            )
        ),
        _pad(Prose(_clip(check.message, MESSAGE_LINES, lang), "code"), (0, 0, 0, 2)),
    ]
    if check.output.strip():
        parts.append(_pad(Prose(phrase(lang, "printed"), "muted"), (0, 0, 0, 2)))
        parts.append(_pad(Prose(_clip(check.output.rstrip(), OUTPUT_LINES, lang), "muted"), (0, 0, 0, 4)))
    if check.misconception:
        title = kata.misconception(check.misconception).title_in(lang, graded)
        parts.append(_pad(Prose(f"⚑ {title}", "misconception"), (0, 0, 0, 2)))
    return _pad(Group(*parts), (0, 0, 0, 2))


def _diagnosis(result: GradeResult, kata: Kata, lang: str, graded: bool = False) -> list[RenderableType]:
    item = kata.misconception(result.diagnosis)
    count = sum(result.diagnosis in check.matches for check in result.checks)
    return [
        Prose(
            Text.assemble(
                (f"⚑ {phrase(lang, 'likely')}{phrase(lang, 'colon')}{item.title_in(lang, graded)}", "misconception"),
                (f"  {phrase(lang, 'seen_in', n=count)}", "muted"),
            )
        ),
        _pad(Prose(item.explanation_in(lang, graded)), (0, 0, 1, 2)),
    ]


def _diagnoses(result: GradeResult, kata: Kata, lang: str, graded: bool = False) -> list[RenderableType]:
    """Each located TODO's diagnosis, in order: its misconception and explanation, or not a known mistake."""
    return [line for diagnosis in result.diagnoses for line in _one_diagnosis(diagnosis, kata, lang, graded)]


def _one_diagnosis(diagnosis: Diagnosis, kata: Kata, lang: str, graded: bool) -> list[RenderableType]:
    if diagnosis.misconception is None:
        return [Prose(phrase(lang, "unknown_in", todo=diagnosis.todo), "muted"), Text()]
    item = kata.misconception(diagnosis.misconception)
    seen = phrase(lang, "seen_alone" if diagnosis.alone else "seen_in", n=diagnosis.checks)
    title = f"⚑ {phrase(lang, 'likely_in', todo=diagnosis.todo)}{phrase(lang, 'colon')}{item.title_in(lang, graded)}"
    return [
        Prose(Text.assemble((title, "misconception"), (f"  {seen}", "muted"))),
        _pad(Prose(item.explanation_in(lang, graded)), (0, 0, 1, 2)),
    ]


def _location(result: GradeResult, lang: str) -> list[RenderableType]:
    """Where the mistake lies (one line), and "not a known mistake" when no misconception fits it.

    Nothing when every failure is a TODO not written yet: the sections say so already.
    """
    location = result.location
    blank = {check.unwritten for check in result.checks if check.status != "passed"}
    quiet = location is not None and (location.method == "transplant" or location.note == "pack")
    if location is None or (quiet and None not in blank):  # a pack's TODOs only repeat what the sections say
        return []
    if location.method == "tags" and location.names:
        names = [phrase(lang, "name_in", name=name, todo=todo) for todo, name in location.names]
        line = phrase(lang, "located_names", names=phrase(lang, "comma").join(names))
    elif location.method == "tags":
        line = phrase(lang, f"located_{location.note or 'markers'}")
    elif location.method == "outside_todos":
        line = phrase(lang, "located_outside")
    elif len(location.todos) == 1:
        line = phrase(lang, "located", todo=location.todos[0])
    else:
        *rest, last = location.todos
        line = phrase(lang, "located_many", todos=f"{joined(lang, rest)} {phrase(lang, 'and')} {last}")
    lines: list[RenderableType] = [Prose(f"⌖ {line}", "next")]
    if location.method == "transplant" and len(location.todos) > 1:  # a TODO none of whose checks fail
        checked = {check.todo for check in result.checks}
        passing = [todo for todo in location.todos if todo in checked - set(result.failing_todos) - blank]
        lines += [Prose(phrase(lang, "located_passing", todo=todo), "muted") for todo in passing]
    if not result.diagnosis and len(result.diagnoses) < 2 and not result.load_error and blank == {None}:
        lines.append(Prose(phrase(lang, "unknown_mistake"), "muted"))
    return [*lines, Text()]


def _next_step(
    result: GradeResult, kata: Kata, lang: str, graded: bool = False, own_file: bool = True, again: str = ""
) -> str:
    if result.load_error:
        return phrase(lang, "next_load", command=again or f"kata check {kata.slug}")
    if result.location is not None and result.location.method == "outside_todos":
        return phrase(lang, "next_outside", slug=kata.slug)
    if result.next_todo is not None:
        return phrase(lang, "next_fix", todo=result.next_todo, slug=kata.slug)
    if result.failed:
        return phrase(lang, "next_fix", todo=kata.todos[-1].number, slug=kata.slug)
    if graded:  # feedback on work handed in: nothing to compare with
        return phrase(lang, "next_done_graded")
    if in_pack():
        return phrase(lang, "next_done_pack", slug=kata.slug)
    return phrase(lang, "next_done" if own_file else "next_done_other", slug=kata.slug)


def _clip(text: str, max_lines: int, lang: str) -> str:
    lines = text.splitlines()
    if len(lines) <= max_lines:
        return text
    return "\n".join(lines[:max_lines] + [phrase(lang, "more_lines", n=len(lines) - max_lines)])
