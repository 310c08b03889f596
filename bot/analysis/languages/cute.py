"""NVIDIA's CuTe DSL (``cutlass.cute``): ``@cute.kernel`` is a kernel; ``@cute.jit`` is a
host function that launches one (``self.kernel(...).launch(grid=..., block=...)``) or a device
function kernels call."""

from __future__ import annotations

import re

from bot.analysis.languages.base import KernelLanguage

CUTE = KernelLanguage(
    name="cute",
    display="CuTe DSL",
    modules=("cutlass.cute", "cutlass"),
    roles={
        "cutlass.cute.kernel": "kernel",
        "cute.kernel": "kernel",
        "cutlass.cute.jit": "host",
        "cute.jit": "host",
    },
    vendors=("nvidia",),
    barriers=re.compile(
        r"\bcute\.arch\.(?:barrier|sync_threads|sync_warp|fence_\w+|mbarrier_\w+)\s*\("
    ),
    shared=re.compile(r"\bSmemAllocator\s*\(|\bsmem\w*\.allocate\w*\s*\("),
    compiler_gap=(
        "CuTe DSL kernels compile through CUTLASS's own MLIR pipeline (cute.compile) straight "
        "to a cubin, not through Triton's compiler or nvcc, which are the two the compiler "
        "report reads"
    ),
    noise=frozenset({"cute", "cutlass", "cutedsl", "dsl"}),
)
