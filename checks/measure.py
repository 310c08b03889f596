"""The measure job: run a Plan's checks on this GPU runner and reduce them to Evidence.

``measure_plan(plan, vendor=..., shard=(i, n), repo_root=...)`` is what ``kernel-review review
--mode measure`` calls. It makes one ``MeasureContext`` for the job (the base policy read once,
the worktrees of base and head made once) and runs every check of ``checks.registry.CHECKS``
that applies to this vendor and shard, merging each one's part of the evidence. Every check
that fails to run becomes a NotRun with its reason; nothing measured is dropped. The detailed
sweep results (raw blocks, for offline recomputation) are written to ``details_dir`` when given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.contracts.evidence import Evidence
from bot.contracts.plan import Plan
from checks import registry
from checks.context import MeasureContext, Progress


def measure_plan(
    plan: Plan,
    *,
    vendor: str,
    shard: tuple[int, int] = (1, 1),
    repo_root: Path,
    details_dir: Path | None = None,
    progress: Progress = lambda _m: None,
    sweep_options: Any = None,
) -> Evidence:
    """``sweep_options`` (a checks.sweep.run.SweepOptions) overrides the sweep's defaults. An
    unknown ``vendor`` is a PolicyError."""
    evidence = Evidence()
    with MeasureContext.open(
        plan,
        vendor=vendor,
        shard=shard,
        repo_root=repo_root,
        details_dir=details_dir,
        progress=progress,
        sweep_options=sweep_options,
    ) as ctx:
        for check in registry.CHECKS:
            if check.applies(ctx):
                evidence = evidence.merge(check.run(ctx))
    return evidence
