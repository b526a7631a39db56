"""How SIGINT and SIGTERM stop a grading command (`kata grade`, `kata check`, run_autograder): both
raise one exception in the main thread, so that every `with` and `finally` on the way out runs
(workers, judges and sandboxes killed, cgroups and temporary folders removed), and the command
exits with 128 + the signal: 130 after Ctrl-C, 143 after SIGTERM.

    with interruptible():      # the command's whole run: SIGINT and SIGTERM raise Interrupted
        ...
    with deferred():           # a step that must not be cut in two (starting a worker): the
        ...                    # signal arrives when it ends
"""

import signal
import threading
from contextlib import contextmanager

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """The command was sent SIGINT (Ctrl-C) or SIGTERM; `status` is what it exits with."""

    def __init__(self, number: int = signal.SIGINT):
        super().__init__(signal.Signals(number).name)
        self.status = 128 + number


def exit_status(stop: BaseException) -> int:
    """What a command stopped by `stop` exits with: 143 after SIGTERM, else 130 (Ctrl-C, or the end
    of input at a prompt)."""
    return getattr(stop, "status", 128 + signal.SIGINT)


@contextmanager
def interruptible():
    """For the block, SIGINT and SIGTERM raise Interrupted in the main thread. Once one has, both
    are ignored until the block is left: the way out (killing, removing) is not cut short, and it
    takes well under a second. The previous handlers come back after it. Off the main thread, where
    no handler can be set, it changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(number, frame):
        for each in SIGNALS:
            signal.signal(each, signal.SIG_IGN)
        raise Interrupted(number)

    previous = {number: signal.signal(number, stop) for number in SIGNALS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


@contextmanager
def deferred():
    """SIGINT and SIGTERM are held (blocked) during the block and arrive when it ends. A process
    started in it starts with both blocked, until it unblocks them (grader.judging.workers.serve)."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def unblock() -> None:
    """Let SIGINT and SIGTERM in again (in a process started within `deferred`)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
