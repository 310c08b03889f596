"""The command's stop. ``bot.cli`` sets ``STOPPING`` when the command is interrupted (Ctrl-C, or
the SIGTERM of a cancelled job); every wait on a child process (a helper job, a sweep worker's
answer) looks at it at least every ``POLL_S`` seconds, kills its child and gives up, so the
threads that wait end and the command exits within a second or two, its children with it."""

from __future__ import annotations

import threading

STOPPING = threading.Event()
POLL_S = 0.5
