"""The measure job: run a Plan's checks on this GPU runner and reduce them to Evidence.

``measure_plan(plan, vendor=..., shard=(i, n), repo_root=...)`` is what ``kernel-review review
--mode measure`` calls. The sweep runs shard i of n of the cases; the first-call cost and the
compiler report are measured once per vendor (on shard 1), since they do not split by shape.
Every check that fails to run becomes a NotRun with its reason; nothing measured is dropped.
The detailed sweep results (raw blocks, for offline recomputation) are written to
``details_dir`` when given.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from bot import gitutil
from bot.contracts.evidence import Evidence, FirstCallEvidence, NotRun, SweepEvidence
from bot.contracts.plan import Plan
from bot.errors import KernelReviewError

Progress = Callable[[str], None]


def _sweep(
    plan: Plan,
    options,
    vendor: str,
    shard: tuple[int, int],
    repo_root: Path,
    details_dir: Path | None,
    progress: Progress,
) -> tuple[list[SweepEvidence], list[NotRun]]:
    from checks.sweep.evidence import sweep_for_plan, to_evidence
    from checks.sweep.models import dump_results

    try:
        result = sweep_for_plan(
            plan, shard=shard, repo_root=repo_root, options=options, progress=progress
        )
    except KernelReviewError as exc:
        return [], [NotRun(check="sweep", vendor=vendor, reason=exc.message)]  # type: ignore[arg-type]
    if details_dir is not None:
        dump_results(result, details_dir / f"sweep-{vendor}-{shard[0]}of{shard[1]}.json")
    return [to_evidence(result, vendor=vendor)], []


def _first_calls(
    plan: Plan, vendor: str, repo_root: Path, policy, progress: Progress
) -> tuple[list[FirstCallEvidence], list[NotRun]]:
    from checks.compiler.run import specs_for
    from checks.first_call.measure import first_call_evidence, measure_first_call

    out: list[FirstCallEvidence] = []
    not_run: list[NotRun] = []
    with tempfile.TemporaryDirectory(prefix="kernel-review-first-call-") as tmp:
        head = gitutil.add_worktree(repo_root, Path(tmp) / "head", plan.head_sha)
        try:
            for spec in specs_for(plan.kernels):
                progress(f"first call: {spec.name} (cold, then warm) in fresh processes")
                try:
                    report = measure_first_call(
                        head,
                        spec,
                        mode="gpu",
                        deployment_kind=policy.deployment.kind,
                        budget_ms=policy.deployment.first_call_budget_ms,
                    )
                except KernelReviewError as exc:
                    not_run.append(
                        NotRun(
                            check="first_call", vendor=vendor, reason=f"{spec.name}: {exc.message}"
                        )
                    )  # type: ignore[arg-type]
                    continue
                out.append(first_call_evidence(report, vendor))
        finally:
            gitutil.remove_worktree(repo_root, head)
    return out, not_run


def measure_plan(
    plan: Plan,
    *,
    vendor: str,
    shard: tuple[int, int] = (1, 1),
    repo_root: Path,
    details_dir: Path | None = None,
    progress: Progress = lambda _m: None,
    sweep_options=None,
) -> Evidence:
    """``sweep_options`` (a checks.sweep.run.SweepOptions) overrides the sweep's defaults."""
    from bot.policy.load import find_policy
    from bot.revision import GitRevision
    from checks.compiler.evidence import compiler_evidence_for_range

    repo_root = Path(repo_root)
    found = find_policy(GitRevision(repo_root, plan.base_sha))  # the base's rules, never the head's
    policy = found[0] if found is not None else None
    sweeps: list[SweepEvidence] = []
    first_calls: list[FirstCallEvidence] = []
    not_run: list[NotRun] = []
    compiler = None
    if "sweep" in plan.checks:
        s, n = _sweep(plan, sweep_options, vendor, shard, repo_root, details_dir, progress)
        sweeps += s
        not_run += n
    if shard[0] == 1 and policy is not None:
        if "first_call" in plan.checks:
            f, n = _first_calls(plan, vendor, repo_root, policy, progress)
            first_calls += f
            not_run += n
        if "compiler" in plan.checks and vendor == plan.vendors[0]:
            progress("compiler report: old and new, every config, both vendors")
            compiler, n = compiler_evidence_for_range(
                repo_root, plan.base_sha, plan.head_sha, plan, policy
            )
            not_run += n
    return Evidence(
        sweeps=tuple(sweeps),
        first_calls=tuple(first_calls),
        compiler=compiler,
        not_run=tuple(not_run),
    )
