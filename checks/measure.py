"""The measure job: run a Plan's checks on this GPU runner and reduce them to Evidence.

``measure_plan(plan, vendor=..., shard=(i, n), repo_root=..., policy=...)`` is what
``kernel-review job measure`` calls, with the base policy the gate read. It makes one
``MeasureContext`` for the job (that policy, read from the base commit only where none is given;
the worktrees of base and head made once) and runs every check of ``checks.registry.CHECKS``
that applies to this vendor and shard, merging each one's part of the evidence, and the
toolchain each side ran under when the change moves one. Every check
that fails to run becomes a NotRun with its reason; nothing measured is dropped. The detailed
sweep results (raw blocks, for offline recomputation) are written to ``details_dir`` when given.

The checks that need no GPU (``machine = "cpu"``: the compiler report) start first, each in a
thread of its own whose priority, and that of every process it starts, is lowered below the
sweep's workers and its compiling ahead (``SPARE_NICE``: the cores they leave); the others
run in ``CHECKS`` order meanwhile, and one that reads wall-clock time (``"quiet"``: the first
call) waits for them to finish first. With ``alongside=False`` every check runs in turn, in
``CHECKS`` order. Either way the evidence is merged in ``CHECKS`` order, so it reads the same,
and each check's end is a progress line with its time ("compiler: done in 21.8 s").
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from bot.contracts.evidence import Evidence
from bot.contracts.plan import Plan
from checks import registry
from checks.context import MeasureContext
from checks.job_process import SPARE_NICE, lower_this_thread
from checks.registry import Check


def measure_plan(plan: Plan, *, alongside: bool = True, **job: Any) -> Evidence:
    """The evidence of every check that applies. ``job``: ``vendor`` and ``repo_root``, and
    optionally ``policy`` (the gate's), ``shard`` (i, n), ``details_dir``, ``progress`` (a
    callable taking one line) and ``sweep_options`` (a checks.sweep.run.SweepOptions overriding the sweep's defaults), as
    ``MeasureContext`` takes them. ``alongside``: run the checks that need no GPU while the
    others run (the default), or every check in turn. An unknown ``vendor`` is a PolicyError."""
    with MeasureContext.open(plan, **job) as ctx:
        checks = [check for check in registry.CHECKS if check.applies(ctx)]
        background = [i for i, c in enumerate(checks) if alongside and c.machine == "cpu"]
        parts: dict[int, Evidence | Future[Evidence]] = {}
        with ThreadPoolExecutor(
            max_workers=max(1, len(background)),
            thread_name_prefix="check",
            initializer=lower_this_thread,
            initargs=(SPARE_NICE,),
        ) as pool:
            for i in background:
                parts[i] = pool.submit(_timed, checks[i], ctx)
            for i, check in enumerate(checks):
                if i in parts:
                    continue
                if check.machine == "quiet":
                    for part in parts.values():
                        if isinstance(part, Future):
                            part.exception()  # waits; an error is raised where it is merged
                parts[i] = _timed(check, ctx)
        evidence = Evidence()
        for i in range(len(checks)):
            part = parts[i]
            evidence = evidence.merge(part.result() if isinstance(part, Future) else part)
        evidence = evidence.merge(ctx.toolchain_evidence())
    return evidence


def _timed(check: Check, ctx: MeasureContext) -> Evidence:
    """``check.run(ctx)``, and a progress line saying how long it took."""
    t0 = time.perf_counter()
    try:
        return check.run(ctx)
    finally:
        ctx.progress(f"{check.name}: done in {time.perf_counter() - t0:.1f} s")
