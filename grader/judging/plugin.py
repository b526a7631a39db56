"""pytest plugin: grade a module against a kata's checks.

Inert unless `--kata` is given. Then it collects the kata's checks (unless test paths were
named), runs them here, in the judge, with the module under test in contestant processes (see
grader.judging.session and grader.run), and can write the result as JSON:

    pytest --kata group_advantages --kata-file kata_workspace/group_advantages.py
    pytest --kata grpo_loss --kata-target misconception:old_not_detached --kata-report out.json

The contestants' warm process comes with an arena (grader.run.arena): whoever keeps one hands it
over with `run_pytest(arguments, arena)` (`kata check`'s judge process, a `kata grade` worker's
judge for each file); a plain pytest run starts its own.

Checks receive three fixtures: `learner` (the module under test, a grader.run.judge.Contestant:
a fresh process per check, every call crossing as data), `reference` (the reference module, in
this process) and `expect` (see grader.judging.expect), and say which TODO they grade with
`@pytest.mark.todo(N)`, or that they compare the whole function's values with `@pytest.mark.whole`
(a check with neither is the function's input contract).
With `--kata-course FILE` the checks draw their inputs under that course's seed, not their own
(grader.content.seeds): how `kata grade --course` keeps a student pack's recorded values out of a grade.
"""

from pathlib import Path

import pytest

from grader import DEFAULT_TIMEOUT
from grader.content import seeds
from grader.content.catalogue import UnknownKata, get_kata
from grader.content.i18n import PHRASES, message_language, set_message_language
from grader.files import atomic_write, json_text
from grader.judging.targets import BUILTIN_TARGETS, TargetError
from grader.oracles.against import TRL_VERSION, AgainstError, TrlUnavailable, require
from grader.run import sandbox
from grader.run.arena import Arena
from grader.run.limits import Limits

SESSION = pytest.StashKey[object]()  # the grader.judging.session.KataSession (imported late: it imports torch)
LANGUAGE = pytest.StashKey[str]()  # the message language before this run
COURSE = pytest.StashKey[str | None]()  # the course before this run's --kata-course (grader.content.seeds)
ARENA = pytest.StashKey[Arena]()  # the arena the caller handed over (run_pytest)
OWNED = pytest.StashKey[Arena]()  # the arena this run started itself, closed at its end

HELP_KATA = "grade against the checks of kata SLUG (enables this plugin)"
HELP_FILE = "the file to grade"
HELP_TARGET = "grade a built-in module instead: reference, template, or misconception:ID"
HELP_TIMEOUT = "time limit of each check, in seconds (default: 10)"
HELP_REPORT = "write the grading result as JSON to PATH"
HELP_MEMORY = "memory each check's process may add, in MB (default: no limit)"
HELP_PROCESSES = "processes each check may start, when not run as root (default: no limit)"
HELP_SANDBOX = "run the file's code in the OS sandbox: auto (where it works), on (or refuse), off"
HELP_LANG = "the language of the checks' messages (default en)"
HELP_EVERY = "give each failed check's message in every language too (a stored result, shown later in any)"
HELP_FINGERPRINTS = "remember in folder PATH how each misconception variant fails each check (naming is faster)"
HELP_VALUES = "record:DIR keeps what the checks ask of the reference in DIR/SLUG.bin; replay:DIR answers from there"
HELP_COURSE = "draw the checks' inputs under the seed of this course file (kata pack's OUT/course.toml)"
HELP_AGAINST = f"take expected values from trl (TRL {TRL_VERSION}'s own code) where it has the function"


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add the --kata-* options."""
    group = parser.getgroup("kata", "Post-Training Katas grading")
    group.addoption("--kata", metavar="SLUG", help=HELP_KATA)
    group.addoption("--kata-file", metavar="PATH", help=HELP_FILE)
    group.addoption("--kata-target", metavar="TARGET", help=HELP_TARGET)
    group.addoption("--kata-timeout", metavar="S", type=float, default=DEFAULT_TIMEOUT, help=HELP_TIMEOUT)
    group.addoption("--kata-report", metavar="PATH", help=HELP_REPORT)
    group.addoption("--kata-memory", metavar="MB", type=int, help=HELP_MEMORY)
    group.addoption("--kata-processes", metavar="N", type=int, help=HELP_PROCESSES)
    group.addoption("--kata-against", metavar="ORACLE", help=HELP_AGAINST)
    group.addoption("--kata-sandbox", choices=sandbox.CHOICES, default="auto", help=HELP_SANDBOX)
    group.addoption("--kata-fingerprints", metavar="PATH", help=HELP_FINGERPRINTS)
    group.addoption("--kata-lang", choices=tuple(PHRASES), default="en", help=HELP_LANG)
    group.addoption("--kata-every-language", action="store_true", help=HELP_EVERY)
    group.addoption("--kata-values", metavar="MODE:PATH", help=HELP_VALUES)
    group.addoption("--kata-course", metavar="PATH", help=HELP_COURSE)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser, args):
    """Grading captures the learner's output itself (per check, bounded): turn pytest's capture off."""
    if early_config.known_args_namespace.kata:
        early_config.known_args_namespace.capture = "no"
    return (yield)


def run_pytest(arguments: list[str], arena: Arena) -> int:
    """pytest with `arguments`, its contestants in `arena`: the one way a caller hands a judge its arena."""
    return int(pytest.main(arguments, plugins=[Given(arena)]))


def preload(kata=None) -> None:
    """Import, in a process that forks judges (a worker), what every judge's pytest run imports:
    pytest's own plugins, the grading session's modules, and, given a `kata`, its checks (which
    hold no assertion for pytest to rewrite), so that each forked judge finds them loaded."""
    import importlib

    from _pytest.config import default_plugins

    import grader.judging.session  # noqa: F401

    for name in default_plugins:
        importlib.import_module(f"_pytest.{name}")
    if kata is not None:
        importlib.import_module(f"katas.{kata.slug}.checks")


class Given:
    """The plugin object `run_pytest` registers: it puts the caller's arena where pytest_configure finds it."""

    def __init__(self, arena: Arena):
        self.arena = arena

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        """Hand the arena over, before the grading plugin configures."""
        config.stash[ARENA] = self.arena


def pytest_configure(config: pytest.Config) -> None:
    """Register the `todo` marker; with --kata, set up the grading session and its checks."""
    config.addinivalue_line("markers", "todo(number): the TODO of the kata that this check grades")
    config.addinivalue_line("markers", "whole: a value check of the whole function, tagged with no single TODO")
    slug = config.getoption("kata")
    if not slug:
        return
    config.stash[LANGUAGE] = message_language()  # restored at the end (an in-process run leaves it as it was)
    set_message_language(config.getoption("kata_lang"))
    try:
        course = config.getoption("kata_course")
        if course:  # before the session: its fingerprints are the course's
            config.stash[COURSE] = seeds.set_course(seeds.read_course(Path(course), message_language()))
        limits = Limits(config.getoption("kata_memory"), config.getoption("kata_processes"))
        kata = get_kata(slug)
        against = config.getoption("kata_against")
        if against:
            require(against, kata.slug)
        timeout = config.getoption("kata_timeout")
        target = _target(config)
        arena = config.stash.get(ARENA, None)
        if arena is None:  # a plain pytest run: the warm process first, to import torch while this one does
            fingerprints = config.getoption("kata_fingerprints")
            sandboxed = sandbox.choose(config.getoption("kata_sandbox"))
            arena = Arena.start(kata.warm_imports, sandboxed, Path(fingerprints) if fingerprints else None)
            config.stash[OWNED] = arena
        from grader.judging import session

        every_language, values = config.getoption("kata_every_language"), config.getoption("kata_values")
        if values and values.partition(":")[0] not in ("record", "replay"):
            raise TargetError(f"--kata-values must be record:DIR or replay:DIR, not {values!r}")
        config.stash[SESSION] = session.KataSession(
            kata, target, timeout, arena, limits, against, every_language, values
        )
    except (UnknownKata, TargetError, AgainstError, TrlUnavailable, sandbox.Unavailable, seeds.CourseError) as error:
        raise pytest.UsageError(str(error)) from None
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args = [str(config.stash[SESSION].kata.checks_path)]


def _target(config: pytest.Config) -> str | Path:
    path, target = config.getoption("kata_file"), config.getoption("kata_target")
    if bool(path) == bool(target):
        raise TargetError("give exactly one of --kata-file PATH and --kata-target TARGET")
    if target and target not in BUILTIN_TARGETS and not target.startswith("misconception:"):
        raise TargetError(f"--kata-target must be reference, template or misconception:ID, not {target!r}")
    return Path(path) if path else target


def pytest_unconfigure(config: pytest.Config) -> None:
    """End the session (and the warm process, if this run started it); give back the course and the message language."""
    kata_session = config.stash.get(SESSION, None)
    if kata_session:
        kata_session.close()
    if OWNED in config.stash:
        config.stash[OWNED].close()
    if COURSE in config.stash:
        seeds.set_course(config.stash[COURSE])
    if LANGUAGE in config.stash:
        set_message_language(config.stash[LANGUAGE])


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    """In a student pack, leave out the checks that only the instructor's grading can run."""
    kata_session = config.stash.get(SESSION, None)
    if kata_session and kata_session.kata.packed:
        private = set(kata_session.kata.packed["private"])
        items[:] = [item for item in items if item.name not in private]


def pytest_collection_finish(session: pytest.Session) -> None:
    """Load the module under test once, in a contestant, before any check runs."""
    kata_session = session.config.stash.get(SESSION, None)
    if kata_session and session.items:
        kata_session.probe()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem):
    """Run each check with a time limit, and record its result."""
    kata_session = item.config.stash.get(SESSION, None)
    if kata_session is None:
        return None
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for report in kata_session.run(item):
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Explain a failure, and name the misconceptions that fail the same way."""
    report = yield
    kata_session = item.config.stash.get(SESSION, None)
    if kata_session and report.failed and call.excinfo:
        kata_session.annotate(item, call.excinfo.value, report)
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Write the JSON result when --kata-report asks for it."""
    kata_session = session.config.stash.get(SESSION, None)
    path = session.config.getoption("kata_report")
    if kata_session is None:
        return
    kata_session.close_file()  # the variants' contestants end before the hybrids start
    kata_session.locate()
    kata_session.close()  # every process the file started is gone before its result is written
    if not path:
        return
    atomic_write(Path(path), json_text(kata_session.result().to_json()))


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    """Name the likely misconception under pytest's own summary."""
    kata_session = config.stash.get(SESSION, None)
    if kata_session is None:
        return
    result = kata_session.result()
    if result.diagnosis:
        item = kata_session.kata.misconception(result.diagnosis)
        terminalreporter.write_line(f"kata: likely misconception: {item.title['en']} ({item.id})")
    if result.location is not None:
        todos = ", ".join(map(str, result.location.todos)) or "none (the given code)"
        terminalreporter.write_line(f"kata: the difference lies in TODO {todos} (by {result.location.method})")
    terminalreporter.write_line(f"kata: {result.passed} passed, {result.failed} failed")


def _session(request: pytest.FixtureRequest):
    kata_session = request.config.stash.get(SESSION, None)
    if kata_session is None:
        pytest.fail("kata checks need --kata SLUG and --kata-file PATH (or --kata-target)", pytrace=False)
    return kata_session


@pytest.fixture
def learner(request: pytest.FixtureRequest):
    """The module under test, freshly loaded in a contestant process of this check's own."""
    kata_session = _session(request)
    contestant = kata_session.learner(request.node)
    yield contestant
    kata_session.finished(request.node, contestant)


@pytest.fixture
def reference(request: pytest.FixtureRequest):
    """The kata's reference module (or what stands in for it: grader.judging.recorded)."""
    from grader.judging.recorded import for_check

    return for_check(_session(request).reference, request.node)


@pytest.fixture
def expect(learner, reference):
    """Comparisons of `learner` against `reference` (see grader.judging.expect)."""
    from grader.judging.expect import Expect

    return Expect(learner, reference)
