"""One profiled kernel's counters, the same shape for every vendor's profiler."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class KernelCounters:
    name: str  # the GPU kernel's name as the profiler reports it
    launches: int = 0
    counters: dict[str, float] = field(default_factory=dict)  # summed over its launches


def add_launch(
    found: dict[str, KernelCounters], name: str, counter: str, value: float, launches: int
) -> None:
    """Add one (kernel, counter, value) row; ``launches``: the kernel's launches seen so far."""
    k = found.setdefault(name, KernelCounters(name))
    k.launches = max(k.launches, launches)
    k.counters[counter] = k.counters.get(counter, 0.0) + value


def total(k: KernelCounters, names: Sequence[str]) -> int | None:
    """The sum of ``names`` among ``k``'s counters (None when it has none of them)."""
    values = [k.counters[n] for n in names if n in k.counters]
    return round(sum(values)) if values else None
