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

# what sends each stop, in words. A GitHub Actions job cancelled, or cancelled by its
# `timeout-minutes`, gets SIGINT to its step's entry process (`kernel-review job measure`, which
# action.yml's shell execs), SIGTERM 7.5 s later where it has not exited, and 2.5 s after that
# its process tree killed; steps whose `if:` is `always()` still run afterwards (GitHub's
# "Workflow cancellation reference", docs.github.com/en/actions/reference/workflows-and-actions/
# workflow-cancellation, quoted in actions/runner#1309; `timeout-minutes` "automatically
# cancels" the job: the workflow syntax reference; actions/runner's StepsRunner.cs evaluates each
# later step's condition on the job's cancellation). So a measure job has 7.5 s to write its
# results (checks.measure), and the workflow's upload step runs if: always()
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
