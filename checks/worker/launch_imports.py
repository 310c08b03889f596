"""What Triton imports at a kernel's first launch rather than at its own import, imported ahead.

Triton 3.6 imports its Gluon package (``triton.experimental.gluon``, 36 modules, with Triton's code
generator) and its tensor descriptors the first time a launch specializes a tensor argument
(``native_specialize_impl``), so every fresh worker did it
inside its first check's call: 0.12-0.29 s of each of the eight workers of one `kernel-review
bench` run profiled on an H100, compiled from source each time, as workers write no bytecode
(``bench/results/h100/cost_profile/``). The zygote imports these once, before it forks, with its
bytecode kept between runs; a worker started on its own imports them in its driver thread, which
its first check waits for.

Standard library only at import (the worker program and the zygote load it as a sibling).
"""

from __future__ import annotations

import contextlib
import importlib

MODULES = ("triton.experimental.gluon", "triton.tools.tensor_descriptor")


def import_ahead() -> tuple[str, ...]:
    """Import each of ``MODULES`` that the installed Triton has (an older one has none); the
    names imported."""
    done = []
    for name in MODULES:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
            done.append(name)
    return tuple(done)
