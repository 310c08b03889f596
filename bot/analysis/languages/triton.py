"""Triton (``@triton.jit``, stacked under ``@triton.autotune`` / ``@triton.heuristics``)."""

from __future__ import annotations

import re

from bot.analysis.languages.base import KernelLanguage

TRITON = KernelLanguage(
    name="triton",
    display="Triton",
    modules=("triton",),
    roles={},  # any ``triton.*.jit`` / ``autotune`` / ``heuristics``: see ``decorator_role``
    vendors=("nvidia", "amd"),
    barriers=re.compile(r"\btl\.debug_barrier\s*\("),
    product=re.compile(r"\btl\.dot(?:_scaled)?\s*\("),
    noise=frozenset({"triton", "tl"}),
)
