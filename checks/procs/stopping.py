"""The command's stop. ``bot.cli`` calls ``stop`` when the command is interrupted (Ctrl-C, or the
SIGINT and then SIGTERM of a cancelled CI job), which sets ``STOPPING``; every wait on a child
process (a helper job, a sweep worker's answer) looks at it at least every ``POLL_S`` seconds,
kills its child and gives up, so the threads that wait end and the command exits within a second
or two, its children with it. ``stopped_by`` names the signal, for what the command says of it
(the sweep keeps the cases it finished: ``checks.sweep.run``)."""

from __future__ import annotations

import signal
import threading

STOPPING = threading.Event()
POLL_S = 0.5
_BY: list[str] = []  # the signal that stopped the command, by name: its first

# what sends each stop, in words (a CI job cancelled or out of time gets SIGINT first, and
# SIGTERM a few seconds later where it has not ended)
SENT_BY = {
    "SIGINT": "Ctrl-C, or a CI job's cancel or time limit",
    "SIGTERM": "a CI job's cancel or time limit, or `timeout`",
}


def stop(signum: int) -> None:
    """The command is stopping on signal ``signum``: ``STOPPING`` is set and the first signal
    kept (``stopped_by``)."""
    if not STOPPING.is_set():
        _BY[:] = [signal.Signals(signum).name]
    STOPPING.set()


def clear() -> None:
    """A new command starts: no stop of an earlier one is left."""
    STOPPING.clear()
    _BY.clear()


def stopped_by() -> str | None:
    """The signal that stopped the command ("SIGINT", "SIGTERM"); None while it is not
    stopping, or where it was stopped without one."""
    return _BY[0] if STOPPING.is_set() and _BY else None


def stop_words(name: str) -> str:
    """A stop in words: "SIGTERM (a CI job's cancel or time limit, or `timeout`)"."""
    sent = SENT_BY.get(name)
    return f"{name} ({sent})" if sent else name
