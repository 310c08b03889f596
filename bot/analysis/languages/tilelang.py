"""TileLang (``@T.prim_func``, made by a ``@tilelang.jit`` factory or a ``T.Kernel`` body)."""

from __future__ import annotations

import re

from bot.analysis.languages.base import KernelLanguage

TILELANG = KernelLanguage(
    name="tilelang",
    display="TileLang",
    modules=("tilelang",),
    roles={
        "tilelang.language.prim_func": "kernel",
        "T.prim_func": "kernel",
        "tilelang.jit": "factory",
        "tilelang.autotune": "tuner",
    },
    vendors=("nvidia", "amd"),
    barriers=re.compile(r"\bT\.(?:sync_threads|sync_warp|sync_global|barrier_\w+)\s*\("),
    shared=re.compile(r"\bT\.alloc_shared\s*\("),
    compiler_gap=(
        "TileLang kernels compile through TVM's pipeline (tilelang.compile) to CUDA or HIP "
        "source and a library of their own, not through Triton's compiler, which is the one "
        "the compiler report reads for Python kernels"
    ),
    noise=frozenset({"tilelang"}),
)
