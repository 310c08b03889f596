"""Real extra work after a bench entry's ``fn``, sized to a fraction of the kernel's own time.

``bench/real_kernels/run.py`` copies this file into each suite repository it builds (as
``rk_extra.py`` at the root), where ``suite.py`` calls :func:`wrap` for every kernel. With a
fraction of 0 (the base and the identical head) ``wrap`` returns the entry's own mapping,
untouched. With a fraction above 0 (the slow heads) the returned ``fn`` calls the entry's ``fn``
and then launches extra work on the same stream:

- on a GPU, ``torch.cuda._sleep(cycles)``, a kernel that spins for that many clock cycles. The
  cycles per microsecond are measured once per process by timing ``_sleep`` itself with CUDA
  events; the kernel's own time is the median of 30 calls timed with CUDA events after three
  warm-up calls, and the fixed cost of one more launch (``fn`` followed by ``_sleep(0)``, less
  ``fn``) is taken off the target, so the added time is ``fraction`` of the kernel's time
  wherever the launch cost allows it;
- on the CPU (``device="cpu"``), a busy wait of that many microseconds, timed the same way with
  ``time.perf_counter`` (plumbing only).

Given the kernel's time measured before (``kernel_us``: the driver takes the A/A run's base
median, the sweep's own measure of the kernel alone), the extra work is that fraction of it in
every process, only the sleep's rate measured in each; without it, each process times the kernel
itself, and the work added then differs from process to process (it did by up to 2.9 times on
the H200, which the sweep rightly read as executions that disagree). The sizing runs once per
process and kernel x shape x dtype, at the first call of the returned ``fn``: in ``kernel-review bench`` that is the case's first call, which the sweep runs alone on
the GPU, so the sizing neither disturbs nor is disturbed by the other side's autotuning. It
needs nothing but torch and the standard library.
"""

from __future__ import annotations

import importlib
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

WARMUP_CALLS = 3
TIMED_CALLS = 30
CPU_SIZING_S = 0.5  # on the CPU, at most about this long per sizing (interpreted kernels are slow)
SLEEP_PROBE_CYCLES = (1 << 17, 1 << 20)


@dataclass
class Extra:
    """What one kernel x shape x dtype gets after each call, and how it was sized."""

    fraction: float
    kernel_us: float  # the entry's fn alone, median
    launch_us: float  # what one more launch costs by itself (GPU), 0 on the CPU
    target_us: float  # fraction * kernel_us
    cycles: int  # _sleep cycles (GPU); 0 on the CPU
    spin_us: float  # busy wait (CPU); 0 on the GPU
    cycles_per_us: float | None
    device: str

    def run(self) -> None:
        if self.device == "cpu":
            spin(self.spin_us)
        else:
            import torch

            torch.cuda._sleep(self.cycles)


SIZED: dict[tuple[str, tuple[int, ...], str, str], Extra] = {}
_CYCLES_PER_US: float | None = None


def spin(us: float) -> None:
    """Busy-wait ``us`` microseconds on this CPU thread."""
    end = time.perf_counter() + us * 1e-6
    while time.perf_counter() < end:
        pass


def _median_us_cpu(call: Callable[[], Any], calls: int) -> float:
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def _median_us_cuda(call: Callable[[], Any], calls: int) -> float:
    import torch

    pairs = []
    for _ in range(calls):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        call()
        e.record()
        pairs.append((s, e))
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) * 1000.0 for s, e in pairs)


def cycles_per_us() -> float:
    """``torch.cuda._sleep`` cycles per microsecond on this GPU: the slope between two sizes,
    each the median of five event-timed calls (the launch cost cancels). Once per process."""
    global _CYCLES_PER_US
    if _CYCLES_PER_US is None:
        import torch

        small, large = SLEEP_PROBE_CYCLES
        torch.cuda._sleep(small)  # the sleep kernel's own first launch
        torch.cuda.synchronize()
        t_small = _median_us_cuda(lambda: torch.cuda._sleep(small), 5)
        t_large = _median_us_cuda(lambda: torch.cuda._sleep(large), 5)
        if t_large <= t_small:
            raise RuntimeError(
                f"torch.cuda._sleep did not take longer for more cycles ({t_small:.1f} us for "
                f"{small}, {t_large:.1f} us for {large}); the extra work cannot be sized here"
            )
        _CYCLES_PER_US = (large - small) / (t_large - t_small)
    return _CYCLES_PER_US


def size_known(kernel_us: float, fraction: float, device: str) -> Extra:
    """Extra work of ``fraction`` of a kernel time measured before (the A/A run's base median):
    every process adds the same cycles, only their rate measured here (the launch of the extra
    kernel is not taken off, so the slowdown is at least ``fraction``)."""
    target = fraction * kernel_us
    if device == "cpu":
        return Extra(fraction, kernel_us, 0.0, target, 0, target, None, device)
    per_us = cycles_per_us()
    return Extra(fraction, kernel_us, 0.0, target, round(target * per_us), 0.0, per_us, device)


def size_extra(fn: Callable[[], Any], fraction: float, device: str) -> Extra:
    """Time ``fn`` (already called once) and size the extra work to ``fraction`` of it."""
    if device == "cpu":
        first = _median_us_cpu(fn, 1)
        calls = max(3, min(TIMED_CALLS, int(CPU_SIZING_S * 1e6 / max(first, 1.0))))
        kernel_us = _median_us_cpu(fn, calls)
        target = fraction * kernel_us
        return Extra(fraction, kernel_us, 0.0, target, 0, target, None, device)
    import torch

    if torch.cuda.is_current_stream_capturing():
        raise RuntimeError(
            "the extra work is sized at the first call of fn, which must not be inside a CUDA "
            "graph capture; call fn once eagerly first"
        )
    per_us = cycles_per_us()
    for _ in range(WARMUP_CALLS):
        fn()
    kernel_us = _median_us_cuda(fn, TIMED_CALLS)

    def with_empty_sleep() -> None:
        fn()
        torch.cuda._sleep(0)

    launch_us = max(0.0, _median_us_cuda(with_empty_sleep, TIMED_CALLS) - kernel_us)
    target = fraction * kernel_us
    cycles = round(max(0.0, target - launch_us) * per_us)
    return Extra(fraction, kernel_us, launch_us, target, cycles, 0.0, per_us, device)


def wrap(
    module: str,
    function: str,
    kernel: str,
    shape: tuple[int, ...],
    dtype: str,
    *,
    device: str,
    seed: int,
    fraction: float,
    kernel_us: float | None = None,
) -> Any:
    """The entry ``module:function`` built for this case; with ``fraction > 0`` its ``fn``
    followed by the extra work, sized at the first call, once per process and case: from
    ``kernel_us`` where given (the same work in every process), else from this process's own
    timing of ``fn``."""
    entry = getattr(importlib.import_module(module), function)
    case = entry(tuple(shape), dtype, device=device, seed=seed)
    if not fraction or not isinstance(case, dict) or not callable(case.get("fn")):
        return case  # the sweep reports a malformed mapping itself
    fn = case["fn"]
    where = "cpu" if str(device).startswith("cpu") else "cuda"
    key = (kernel, tuple(int(d) for d in shape), dtype, where)

    def with_extra() -> Any:
        out = fn()
        extra = SIZED.get(key)
        if extra is None:
            extra = SIZED[key] = (
                size_known(kernel_us, fraction, where)
                if kernel_us
                else size_extra(fn, fraction, where)
            )
        extra.run()
        return out

    return {**case, "fn": with_extra}
