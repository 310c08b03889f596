"""A command's stop is its own: ``bot.cli.main`` undoes the signal handlers it installs and the
stop it sets, so a caller running several commands in one process (a test, a script) finds the
process as it was, and a stop of one command does not stop the next."""

from __future__ import annotations

import signal

from bot.cli import main
from checks.procs import stopping


def _mine(signum: int, frame: object) -> None:  # a caller's own handler
    raise AssertionError("not to be called")


def test_a_command_restores_the_callers_signal_handlers() -> None:
    before = signal.signal(signal.SIGINT, _mine), signal.signal(signal.SIGTERM, _mine)
    try:
        assert main([]) == 2  # no command: the help, exit code 2
        assert signal.getsignal(signal.SIGINT) is _mine
        assert signal.getsignal(signal.SIGTERM) is _mine
    finally:
        signal.signal(signal.SIGINT, before[0])
        signal.signal(signal.SIGTERM, before[1])


def test_a_stop_left_set_does_not_stop_the_next_command() -> None:
    # every wait on a worker or helper job gives up while STOPPING is set (checks.procs.stopping)
    stopping.STOPPING.set()  # as a command interrupted in this process leaves it
    assert main([]) == 2
    assert not stopping.STOPPING.is_set()
