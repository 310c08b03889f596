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
from typing import NoReturn


def end_now(code: int) -> NoReturn:
    """End this process at once with ``code``, its standard streams flushed: no interpreter
    teardown and no ``atexit`` handlers (a measured checkout's included)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # closed or gone: nothing left to say
            stream.flush()
    os._exit(code)
