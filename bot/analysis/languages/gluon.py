"""Triton's Gluon (``triton.experimental.gluon``, ``@gluon.jit``): Triton's compiler with the
layouts, shared memory and barriers written out. It compiles through the same compiler as
Triton, so the compiler report reads it the same way."""

from __future__ import annotations

import re

from bot.analysis.languages.base import KernelLanguage

GLUON = KernelLanguage(
    name="gluon",
    display="Gluon",
    modules=("triton.experimental.gluon",),
    roles={
        "triton.experimental.gluon.jit": "kernel",
        "triton.experimental.gluon._runtime.jit": "kernel",
        "gluon.jit": "kernel",
    },
    vendors=("nvidia", "amd"),
    barriers=re.compile(
        r"\b(?:gl|ttgl)\.(?:barrier|thread_barrier)\s*\(|\bmbarrier\.(?:wait|arrive)\s*\(|"
        r"\bfence_async_shared\s*\("
    ),
    shared=re.compile(r"\ballocate_shared_memory\s*\("),
    noise=frozenset({"gluon", "gl", "ttgl"}),
)
