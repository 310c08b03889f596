"""Whether a case's first pass may decide it alone: what its launch records show.

Every case is measured in executions (fresh worker processes): a pass has two, crossover's two
worker pairs, and the verdict rests on as many passes as it takes the executions to agree
(``checks.sweep.executions``). What makes identical code read apart from one process to the next
is known, and the first execution's launch record of each side shows it
(``checks.bench_entries.launches``): atomics, whose contention depends on where a process's
buffers land; a call spread over several kernels, its partial results in a buffer between
them, or buffers it allocates besides what it returns (a workspace); an autotuner, which picks
from near-tied configs anew in each process; a host that paces the GPU (timed by its kernels'
busy time). Where both sides' records show none of these, a second pass in fresh processes finds
what the first found, as the real kernels of that kind showed on the H200 (0.29% at most, one
SD, over four executions each: ``ONE_PASS_PRIOR_SD``), and the first pass decides, its interval
carrying that spread. Anything unread (no record, a kernel whose code was not read, buffers not
counted) keeps the case to the passes every other case takes.

Pure: reads a pass's ``ShapeResult``.
"""

from __future__ import annotations

from checks.sweep.models import CaseLaunches, ShapeResult

# the timing modes whose blocks time the kernels as launched; ``kernels`` (the GPU's busy time
# of a call the host paces) and the CPU's are not
PLAIN_MODES = ("graph", "eager", "eager-noflush")


def _plain(record: CaseLaunches | None, picked: tuple[str, ...]) -> bool:
    """Whether one side's record shows one Triton kernel launched once a call, its code read and
    free of atomics, no buffer allocated besides the outputs (counted), and no autotuner."""
    if record is None or picked or len(record.kernels) != 1:
        return False
    (kernel,) = record.kernels
    return (
        kernel.triton and kernel.count == 1 and kernel.atomics is False and record.allocations == 0
    )


def one_pass_reason(case: ShapeResult) -> str:
    """The words a case decided in one pass says why ("" where it may not): both sides' first
    launch records show one Triton kernel, no atomics, no buffer besides the outputs and no
    autotuner, timed as launched."""
    if case.status != "ok" or case.mode not in PLAIN_MODES:
        return ""
    if case.base is None or case.head is None:
        return ""
    plain = _plain(case.base_launches, case.base.configs_picked) and _plain(
        case.head_launches, case.head.configs_picked
    )
    if not plain:
        return ""
    return (
        "each side launches one Triton kernel, with no atomics, no buffer besides its outputs "
        "and no autotuner"
    )
