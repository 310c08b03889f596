"""Which cases a sweep measures: the policy's served shapes, plus small and ragged shapes the bot
adds (a leading 1, small primes, every dimension moved down to a prime, so no dimension is a
multiple of any block size), bounded by the policy's limits and a GPU-seconds budget; and how
each case's launch record is made (``launch_recorder``). Pure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, Literal, Protocol

from bot.contracts.base import Frozen
from bot.errors import LimitError
from bot.plan import largest_tensor
from bot.policy.model import covered
from checks.sweep.protocol import ProtocolConfig

Category = Literal["served", "small", "ragged"]
# How a case's launch record is made: every kernel through the profiler, or Triton's launches
# alone (``launch_recorder``)
LaunchRecorder = Literal["profiler", "triton"]
SMALL_PRIMES = (7, 13, 31, 61, 127, 251, 509, 1021)
CASE_OVERHEAD_S = 2.0  # prepare, correctness check, configure, finish: GPU held, not timed


class Case(Frozen):
    kernel: str
    bench: str
    baseline: str | None = None
    dims: tuple[int, ...]
    dtype: str
    category: Category = "served"
    weight: float = 1.0
    tolerance: float
    launches: LaunchRecorder = "profiler"  # ``launch_recorder``

    @property
    def key(self) -> tuple[str, tuple[int, ...], str]:
        return (self.kernel, self.dims, self.dtype)

    @property
    def base_entries(self) -> list[str]:
        """Base runs ``bench``; where base has no such entry (a kernel new in head), the
        ``baseline`` entry point instead."""
        return [self.bench] + ([self.baseline] if self.baseline else [])

    @property
    def head_entries(self) -> list[str]:
        return [self.bench]

    @property
    def label(self) -> str:
        return f"{self.kernel} {self.dtype} {'x'.join(map(str, self.dims))}"


class _Shape(Protocol):
    @property
    def dims(self) -> tuple[int, ...]: ...
    @property
    def weight(self) -> float: ...


class KernelLike(Protocol):
    """What a sweep needs to know about a kernel (``bot.plan.PlannedKernel`` has it)."""

    name: str
    bench: str
    baseline: str | None
    tolerance: float

    @property  # read-only: a frozen model's tuples are kernels too
    def dtypes(self) -> Sequence[str]: ...
    @property
    def shapes(self) -> Sequence[_Shape]: ...


def is_prime(n: int) -> bool:
    if n < 2:
        return False
    if n % 2 == 0:
        return n == 2
    f = 3
    while f * f <= n:
        if n % f == 0:
            return False
        f += 2
    return True


def prime_below(n: int) -> int:
    """The largest odd prime < n (n itself kept for n <= 3, where there is none worth taking)."""
    if n <= 3:
        return n
    p = n - 1
    while not is_prime(p) or p == 2:
        p -= 1
    return p


def added_shapes(served: Sequence[tuple[int, ...]]) -> list[tuple[tuple[int, ...], Category]]:
    """Small and ragged shapes derived from the served ones, most telling first, none served."""
    if not served:
        return []
    by_size = sorted(served, key=lambda d: (math.prod(d), d))
    biggest, middle = by_size[-1], by_size[len(by_size) // 2]
    rank = len(biggest)
    candidates: list[tuple[tuple[int, ...], Category]] = [
        ((1, *biggest[1:]), "small"),
        (tuple(prime_below(d) for d in biggest), "ragged"),
        (tuple(SMALL_PRIMES[i % len(SMALL_PRIMES)] for i in range(rank)), "small"),
        (tuple(prime_below(d) for d in middle), "ragged"),
    ]
    seen = {tuple(s) for s in served}
    out = []
    for dims, cat in candidates:
        if dims not in seen:
            seen.add(dims)
            out.append((dims, cat))
    return out


class CasePlan(Frozen):
    cases: tuple[Case, ...]
    notes: tuple[str, ...] = ()


def launch_recorder(patterns: Sequence[str], files: Iterable[str]) -> LaunchRecorder:
    """How a kernel's launch record is made: Triton's launches alone where every file its
    ``patterns`` (the policy's ``paths``) cover in ``files`` (both revisions' files) is Python;
    the profiler where one is not (CUDA, HIP, C++) or where they cover none. Triton's launch
    hook costs nothing; the profiler, the one record of a CUDA or C++ kernel, took 3 s to start
    in each process on the H200, which two processes starting it made about 6 s of every sweep
    (``bench/results/h200/cli_decision/f792e9a``)."""
    files_covered = [f for f in files if covered(patterns, f)]
    return (
        "triton" if files_covered and all(f.endswith(".py") for f in files_covered) else "profiler"
    )


def plan_cases(
    kernels: Sequence[KernelLike],
    *,
    max_shapes: int,
    max_elements_per_tensor: int,
    add_small_and_ragged: bool = True,
    files: Iterable[str] | None = None,
) -> CasePlan:
    """Served shapes x dtypes per kernel, then added shapes while the kernel stays within
    ``max_shapes`` cases. Served shapes over the limits are refused with the numbers. ``files``:
    both sides' files, from which each kernel's ``paths`` decide its launch recorder
    (``launch_recorder``); None: the profiler."""
    listed = None if files is None else sorted(set(files))
    cases: list[Case] = []
    notes: list[str] = []
    for k in kernels:
        served = [tuple(s.dims) for s in k.shapes]
        n_served = len(served) * len(k.dtypes)
        if n_served > max_shapes:
            raise LimitError(
                f"kernel {k.name}: {len(served)} shapes x {len(k.dtypes)} dtypes = {n_served} "
                f"cases, over limits.max_shapes = {max_shapes}",
                hint="serve fewer shapes or dtypes, or raise limits.max_shapes in the policy",
            )
        tensors = getattr(k, "tensors", None)
        for s in k.shapes:
            n = largest_tensor(s.dims, tensors)
            if n > max_elements_per_tensor:
                raise LimitError(
                    f"kernel {k.name}: shape {'x'.join(map(str, s.dims))} has {n:,} elements, over "
                    f"limits.max_elements_per_tensor = {max_elements_per_tensor:,}",
                    hint="use a smaller shape, or raise limits.max_elements_per_tensor",
                )
        common: dict[str, Any] = {
            "kernel": k.name,
            "bench": k.bench,
            "baseline": k.baseline,
            "tolerance": k.tolerance,
            "launches": (
                "profiler"
                if listed is None
                else launch_recorder(tuple(getattr(k, "paths", ())), listed)
            ),
        }
        for s in k.shapes:
            for dt in k.dtypes:
                cases.append(Case(dims=tuple(s.dims), dtype=dt, weight=s.weight, **common))
        if not add_small_and_ragged:
            continue
        room = max_shapes - n_served
        extra = [
            (d, c)
            for d, c in added_shapes(served)
            if largest_tensor(d, tensors) <= max_elements_per_tensor
        ]
        fit = extra[: room // max(1, len(k.dtypes))]
        if len(fit) < len(extra):
            notes.append(
                f"{k.name}: {len(extra) - len(fit)} of {len(extra)} added small/ragged shapes "
                f"left out to stay within limits.max_shapes = {max_shapes}"
            )
        for dims, cat in fit:
            for dt in k.dtypes:
                cases.append(Case(dims=dims, dtype=dt, category=cat, weight=0.0, **common))
    return CasePlan(cases=tuple(cases), notes=tuple(notes))


def fit_budget(
    cfg: ProtocolConfig,
    n_cases: int,
    max_gpu_seconds: float,
    *,
    overhead_s: float = CASE_OVERHEAD_S,
) -> ProtocolConfig:
    """The protocol with its per-case time cap lowered so that ``n_cases`` fit in the budget;
    LimitError with the numbers when even the fewest rounds a verdict needs do not fit."""
    if n_cases <= 0:
        return cfg
    per_case = max_gpu_seconds / n_cases - overhead_s
    need = 2.0 * cfg.arms * (cfg.min_rounds + cfg.warmup_rounds) * cfg.block_ms / 1000.0
    if per_case < need:
        minimum = n_cases * (need + overhead_s)
        raise LimitError(
            f"{n_cases} cases need at least {minimum:.0f} GPU-seconds ({need:.2f} s of rounds + "
            f"{overhead_s:.1f} s of set-up each), over limits.max_gpu_seconds = {max_gpu_seconds:g}",
            hint="measure fewer kernels, shapes or dtypes, or raise limits.max_gpu_seconds",
        )
    if per_case >= cfg.max_case_seconds:
        return cfg
    return cfg.model_copy(update={"max_case_seconds": per_case})
