"""The `kata` command: thin click commands over the catalogue, the workspace and the grader.

Exit status: 0 success; 1 checks failed or the action was refused; 2 usage error; 130 after
Ctrl-C (SIGINT), 143 after SIGTERM, with everything the command started ended (grader.run.interrupt).
`list`, `start`, `hint`, `show`, `solution`, `reset`, `notebook` and `drill` (but for its --check) never import torch.

- learner: `kata list`, `start`, `check`, `hint`, `solution`, `reset`, `show`, `quiz`, `watch`;
- notebook: `kata notebook` (a kata as a Jupyter notebook);
- drill: `kata drill`; grade: `kata grade`; gradescope: `kata gradescope`; pack: `kata pack`; `kata lab` is
  gpu_labs.cli's (none of these, nor `solution`, in a student pack);
- options: the SLUG argument and the options the commands share;
- listing, watch, hints: what `kata list` shows, the loop of `kata watch`, the progressive hints of a TODO;
- workspace: the learner's state (kata files, progress, backups).
The consoles they print through are grader.report.console's.
"""

import re

import click

from grader.cli import learner, notebook
from grader.cli.options import LANG_HELP, LANGUAGES
from grader.content.catalogue import in_pack
from grader.content.i18n import command_language, phrase, pick_language
from grader.report.console import errors
from grader.run.interrupt import exit_status, interruptible


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="post-training-katas", prog_name="kata")
@click.option("--lang", type=LANGUAGES, help=LANG_HELP + " A command's own --lang wins.")
def cli(lang: str | None):
    """Post-Training Katas: learn the math of LLM post-training by writing it.

    \b
    kata list                 the katas, in learning order, with your progress
    kata start group_advantages
    kata check group_advantages
    kata hint group_advantages
    """


for command in (
    learner.list_command,
    learner.start,
    learner.check,
    learner.hint,
    learner.reset,
    learner.show,
    learner.quiz,
    learner.watch,
    notebook.notebook,
):
    cli.add_command(command)
if not in_pack():  # a student pack (grader.pack) has no reference: no solution, drill, grading or labs
    from gpu_labs.cli import lab
    from grader.cli import drill, grade, gradescope, pack

    for command in (learner.solution, drill.drill, grade.grade, gradescope.gradescope, pack.pack, lab):
        cli.add_command(command)


def usage_line(error: click.UsageError, default: str = "kata") -> str:
    """A usage error as one line in the command's language: `kata check: error: ...  (see ...)`
    (`default`: the command's name when click gave no context). The notebook's `%kata` says it so too."""
    command = error.ctx.command_path if error.ctx else default
    lang = command_language(error.ctx) if error.ctx else pick_language()
    message = error.format_message()
    if isinstance(error, click.BadParameter) and lang != "en":  # our message in click's frame, in zh
        hint = error.param_hint or (error.param.get_error_hint(error.ctx) if error.param else None)
        hint = re.sub("'([^']*)'", lambda name: phrase(lang, "quoted", text=name[1]), hint) if hint else hint
        message = phrase(lang, "bad_value", param=hint, message=error.message) if hint else error.message
    return phrase(lang, "usage_error", command=command, message=message)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the command; turn usage errors into one line and status 2, an interrupt
    (SIGINT, SIGTERM) into one line and 130 or 143."""
    try:
        with interruptible():
            status = cli.main(args=argv, prog_name="kata", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as error:
        click.echo(error.ctx.get_help())
        return 0
    except click.UsageError as error:
        errors.print(usage_line(error), style="error", markup=False)
        return 2
    except click.exceptions.Exit as exit_:
        return exit_.exit_code
    except (click.Abort, KeyboardInterrupt) as stop:  # click makes an interrupt an Abort
        errors.print(phrase(pick_language(), "interrupted"))
        return exit_status(stop.__cause__ or stop)
    except BrokenPipeError:
        return 0
    except OSError as error:  # e.g. a workspace path that is a file, or no permission
        where = f": {error.filename}" if error.filename else ""
        message = phrase(pick_language(), "os_error", message=error.strerror or error, where=where)
        errors.print(message, style="error", markup=False)
        return 1
    return status if isinstance(status, int) else 0
