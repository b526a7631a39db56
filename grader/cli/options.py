"""What the `kata` commands share: the SLUG argument, the --workspace, --lang, --timeout, --scoring,
--points (read_points) and --feedback options,
and opening the workspace (its warnings printed on stderr). `--lang` may also come before the
command (`kata --lang zh check X`); the command's own wins."""

from pathlib import Path

import click

from grader import DEFAULT_TIMEOUT
from grader.cli.workspace import DEFAULT_DIR, Workspace
from grader.content import catalogue
from grader.content.catalogue import Kata
from grader.content.i18n import command_language, phrase
from grader.report.console import errors
from grader.report.results import FEEDBACKS, SCORINGS


class KataSlug(click.ParamType):
    """A kata's slug, resolved to its Kata; unknown names get a did-you-mean."""

    name = "SLUG"

    def convert(self, value, param, ctx):
        if isinstance(value, Kata):
            return value
        try:
            return catalogue.get_kata(value)
        except catalogue.UnknownKata as error:
            self.fail(catalogue.unknown_kata(value, command_language(ctx)) if ctx else str(error), param, ctx)

    def shell_complete(self, ctx, param, incomplete):
        from click.shell_completion import CompletionItem

        return [CompletionItem(kata.slug) for kata in catalogue.all_katas() if kata.slug.startswith(incomplete)]


SLUG = KataSlug()


def workspace_option(command):
    return click.option(
        "--workspace",
        "workspace_dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=DEFAULT_DIR,
        envvar="KATA_WORKSPACE",
        show_default=True,
        help="Folder with your kata files (or set KATA_WORKSPACE).",
    )(command)


LANGUAGES = click.Choice(["en", "zh"])
LANG_HELP = "Language: en or zh (default: KATA_LANG, then the locale, then English)."


def _or_the_group_lang(ctx: click.Context, param, value: str | None) -> str | None:
    """A command's --lang, else the one given to `kata` itself (`kata --lang zh check X`)."""
    return value if value is not None else ctx.find_root().params.get("lang")


def lang_option(command):
    return click.option("--lang", type=LANGUAGES, callback=_or_the_group_lang, is_eager=True, help=LANG_HELP)(command)


def timeout_option(command):
    return click.option(
        "--timeout",
        type=click.FloatRange(min=0.1),
        default=DEFAULT_TIMEOUT,
        show_default=True,
        help="Time limit of each check, in seconds.",
    )(command)


def scoring_option(help: str):
    """--scoring todos|checks (default todos), with a command's own `help`."""
    return click.option("--scoring", type=click.Choice(SCORINGS), default="todos", show_default=True, help=help)


FEEDBACK_HELP = (
    "graded: a known mistake told in words, never the corrected code, and no `kata solution`;"
    " full: the text of `kata check`."
)


def feedback_option(command):
    """--feedback graded|full (default graded): what the feedback students get says of a mistake."""
    return click.option(
        "--feedback",
        "feedback_kind",
        type=click.Choice(FEEDBACKS),
        default="graded",
        show_default=True,
        help=FEEDBACK_HELP,
    )(command)


def points_option(command):
    """--points FILE: a TOML file of [SLUG] tables overriding the katas' points (read_points)."""
    return click.option(
        "--points",
        "points_file",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help="A TOML file of [SLUG] tables (todo1 = 2, ..., whole = 1, contract = 1) overriding the katas' points.",
    )(command)


def read_points(path: Path, lang: str = "en") -> dict:
    """The --points file: {slug: {key: points}}, checked against the katas (one-line error, status 2)."""
    import tomllib

    from grader.classroom import gradesheet

    try:
        with path.open("rb") as handle:
            return gradesheet.check_points(tomllib.load(handle), lang)
    except (OSError, tomllib.TOMLDecodeError, gradesheet.PointsError) as error:
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise click.BadParameter(message, param_hint="--points") from None


def course_option(help_text: str):
    """--course FILE: the course file `kata pack` wrote, whose seed the checks draw their inputs under."""
    return click.option("--course", "course_file", type=click.Path(dir_okay=False, path_type=Path), help=help_text)


def flush_warnings(workspace: Workspace) -> None:
    """Print what the workspace noticed (e.g. a progress file it could not read), then forget it."""
    for warning in workspace.warnings:
        errors.print(phrase(workspace.lang, "warning", warning=warning), style="warning")
    workspace.warnings.clear()
