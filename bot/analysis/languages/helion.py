"""Helion (``@helion.kernel``): a kernel written as one PyTorch-like function; the code outside
its ``hl.tile`` loops runs on the host, the loops become a generated Triton kernel."""

from __future__ import annotations

import re

from bot.analysis.languages.base import KernelLanguage

HELION = KernelLanguage(
    name="helion",
    display="Helion",
    modules=("helion",),
    roles={"helion.kernel": "kernel", "helion.runtime.kernel.kernel": "kernel"},
    vendors=("nvidia", "amd"),
    barriers=re.compile(r"\bhl\.barrier\s*\("),
    device_loop=re.compile(r"^\s*for\b.*\bin\s+(?:hl|helion\.language)\.(?:tile|grid)\s*\("),
    compiler_gap=(
        "Helion writes its Triton kernel when the kernel is first called on a GPU tensor, "
        "after autotuning on that GPU; the compiler report compiles what bench entry points "
        "launch on CPU tensors without a GPU, so it does not see Helion's generated kernels"
    ),
    noise=frozenset({"helion", "hl"}),
)
