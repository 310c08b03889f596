"""The bench entry-point contract, typed, for repositories to import (docs/bench-entry.md).

A bench entry point is ``entry(shape, dtype, *, device="cuda", seed=0) -> BenchCase``. It builds
inputs of ``shape`` and ``dtype`` on ``device`` (the same inputs for the same ``seed``, different
ones for different seeds) and returns a :class:`BenchCase`: ``fn`` runs the operator once on
those inputs and returns its output; the other keys are optional. :func:`bench_case` builds one
and checks it the way the measuring worker will, so a mistake shows where it is made::

    from bot.bench_entry import BenchCase, bench_case

    def softmax(shape, dtype, *, device="cuda", seed=0) -> BenchCase:
        ...
        return bench_case(lambda: mylib.softmax(x), bytes_moved=2 * x.nbytes,
                          reference=lambda: torch.softmax(x.float(), -1).to(x.dtype), inputs=[x])

Standard library only: importing it costs nothing and needs neither torch nor triton.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypedDict


class _Required(TypedDict):
    fn: Callable[[], Any]  # one call of the operator on fixed inputs; returns the output


class BenchCase(_Required, total=False):
    """What an entry point returns; the worker reads exactly these keys (``fn`` is required)."""

    bytes_moved: int  # bytes one call reads plus writes; 0 or absent: unknown
    flops: int  # floating-point operations of one call; 0 for memory-bound ops
    reference: Callable[[], Any]  # the right answer on the same inputs
    atol: float  # |out - reference| <= atol + rtol * |reference|
    rtol: float
    inputs: Sequence[Any]  # the input tensors, to size the copies timed in rotation


class EntryPoint(Protocol):
    """The signature the worker calls: ``entry((rows, cols), "float16", device="cuda", seed=0)``."""

    def __call__(
        self, shape: tuple[int, ...], dtype: str, *, device: str = ..., seed: int = ...
    ) -> BenchCase: ...


def bench_case(
    fn: Callable[[], Any],
    *,
    bytes_moved: int = 0,
    flops: int = 0,
    reference: Callable[[], Any] | None = None,
    atol: float | None = None,
    rtol: float | None = None,
    inputs: Sequence[Any] = (),
) -> BenchCase:
    """A :class:`BenchCase`, checked: ``fn`` and ``reference`` callable, counts integers >= 0,
    tolerances numbers >= 0. Tolerances left out get the worker's per-dtype defaults."""
    if not callable(fn):
        raise TypeError(
            f"fn must be a callable that runs the operator once, not {type(fn).__name__}"
        )
    if reference is not None and not callable(reference):
        raise TypeError("reference must be a callable that returns the expected output")
    for name, count in (("bytes_moved", bytes_moved), ("flops", flops)):
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"{name} must be an int >= 0, not {count!r}")
    case: BenchCase = {"fn": fn, "bytes_moved": bytes_moved, "flops": flops}
    if reference is not None:
        case["reference"] = reference
    for name, tolerance in (("atol", atol), ("rtol", rtol)):
        if tolerance is None:
            continue
        if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or tolerance < 0:
            raise ValueError(f"{name} must be a number >= 0, not {tolerance!r}")
        case[name] = float(tolerance)  # type: ignore[literal-required]
    if inputs:
        case["inputs"] = list(inputs)
    return case
