"""The measure job: run a Plan's checks on this GPU runner and reduce them to Evidence.

``measure_plan(plan, vendor=..., shard=(i, n), repo_root=...)`` is what ``kernel-review review
--mode measure`` calls. It makes one ``MeasureContext`` for the job (the base policy read once,
the worktrees of base and head made once) and runs every check of ``checks.registry.CHECKS``
that applies to this vendor and shard, merging each one's part of the evidence, and the
toolchain each side ran under when the change moves one. Every check
that fails to run becomes a NotRun with its reason; nothing measured is dropped. The detailed
sweep results (raw blocks, for offline recomputation) are written to ``details_dir`` when given.
"""

from __future__ import annotations

from typing import Any

from bot.contracts.evidence import Evidence
from bot.contracts.plan import Plan
from checks import registry
from checks.context import MeasureContext


def measure_plan(plan: Plan, **job: Any) -> Evidence:
    """The evidence of every check that applies. ``job``: ``vendor`` and ``repo_root``, and
    optionally ``shard`` (i, n), ``details_dir``, ``progress`` (a callable taking one line) and
    ``sweep_options`` (a checks.sweep.run.SweepOptions overriding the sweep's defaults), as
    ``MeasureContext`` takes them. An unknown ``vendor`` is a PolicyError."""
    evidence = Evidence()
    with MeasureContext.open(plan, **job) as ctx:
        for check in registry.CHECKS:
            if check.applies(ctx):
                evidence = evidence.merge(check.run(ctx))
        evidence = evidence.merge(ctx.toolchain_evidence())
    return evidence
