"""Ending a measuring process once its answer is out. Standard library only.

A process that imported torch and Triton (and made a GPU context) spends 0.6 s of interpreter
teardown on a 2-core CPU after its last line of Python (``bench/results/cpu/helper_exit.txt``),
and whoever started it waits for that. Once the answer has been written nothing of it is needed:
the worker after ``quit``, a helper program after its job's ``out``. Not a process a profiler
runs (``checks.compiler.profile.driver``): a profiler's collector inside it may write its data
at the process's exit, which ``os._exit`` would skip.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from typing import NoReturn


def end_now(code: int) -> NoReturn:
    """End this process at once with ``code``, its standard streams flushed: no interpreter
    teardown and no ``atexit`` handlers (a measured checkout's included)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # closed or gone: nothing left to say
            stream.flush()
    os._exit(code)


ORPHANED = 75  # the exit code of a process whose starter died (``end_with_parent``)


def end_with_parent(starter: int | None, every_s: float = 0.5) -> threading.Thread:
    """Watch, from a daemon thread, that this process is still the child of what started it,
    and end it (``ORPHANED``) once it is not. A killed bot (``timeout -k``'s SIGKILL, an
    out-of-memory kill, a runner that cancels with SIGKILL) cannot stop its workers, and one that
    was in the middle of a long call would otherwise run on for minutes, on the GPU the next job
    measures with. Its parent at the start and ``starter`` (the bot's pid: a worker forked twice
    from the zygote is its child a moment after it starts) are both taken as alive; being
    handed to another process (init, a subreaper above the bot) means they are gone."""
    allowed = {os.getppid(), *(() if starter is None else (starter,))}

    def watch() -> None:
        while os.getppid() in allowed:
            time.sleep(every_s)
        end_now(ORPHANED)

    thread = threading.Thread(target=watch, name="end-with-parent", daemon=True)
    thread.start()
    return thread
