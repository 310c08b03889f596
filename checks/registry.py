"""The checks a measure job runs, in order: ``CHECKS``, an explicit tuple.

A check has a ``name``, ``applies(ctx)`` (does the plan ask for it, and is this runner and shard
the one that measures it), ``run(ctx)``, which returns its part of the evidence, with a
NotRun row for whatever it could not do, and ``machine``, what it needs of the runner:

- ``"cpu"``: no GPU (cross-compiling): it runs alongside the others, on the cores they leave
  (the lowest CPU priority);
- ``"gpu"``: time read on the GPU (events, counters), not the wall clock: it runs in its turn,
  with the ``"cpu"`` checks running beside it;
- ``"quiet"``: wall-clock time on the whole machine (a fresh process's first call): it runs in
  its turn once the ``"cpu"`` checks have finished.

and ``keeps_on_stop``: whether what ``run`` returns when the job is stopped from outside (a CI
job's cancel or time limit) holds what it finished (the sweep's cases, the rest ``STOPPED``);
any other check the stop cuts off is not run, saying so (``checks.measure``).

``checks.measure.measure_plan`` runs them so and merges the parts in ``CHECKS`` order; a new
check is one class here and its entry in ``CHECKS``, with the files docs/ARCHITECTURE.md lists
(its name in ``bot.contracts.base.Check``, the plan asking for it, its evidence and how the
review shows it).

Nothing here imports torch or triton: each check imports what it measures with inside ``run``.
"""

from __future__ import annotations

from typing import Literal, Protocol

from bot.contracts.base import Check as CheckName
from bot.contracts.evidence import Evidence, NotRun
from bot.errors import KernelReviewError
from checks.context import MeasureContext, Side

Machine = Literal["cpu", "gpu", "quiet"]


class Check(Protocol):
    name: CheckName
    machine: Machine
    keeps_on_stop: bool

    def applies(self, ctx: MeasureContext) -> bool: ...

    def run(self, ctx: MeasureContext) -> Evidence: ...


class Sweep:
    """Base against head over this shard's share of the plan's shapes."""

    name: CheckName = "sweep"
    keeps_on_stop = True
    machine: Machine = "gpu"

    def applies(self, ctx: MeasureContext) -> bool:
        return "sweep" in ctx.plan.checks

    def run(self, ctx: MeasureContext) -> Evidence:
        from checks.sweep.evidence import sweep_for_plan, to_evidence
        from checks.sweep.models import dump_results
        from checks.sweep.summary import time_line

        try:
            limits = ctx.limits
            pythons = ctx.pythons()
            result = sweep_for_plan(
                ctx.plan,
                base_root=ctx.tree("base"),
                head_root=ctx.tree("head"),
                limits=limits,
                policy=ctx.policy,
                shard=ctx.shard,
                options=ctx.sweep_options,
                work_dir=ctx.scratch("sweep"),
                progress=ctx.progress,
                pythons=pythons,
            )
        except KernelReviewError as exc:
            return Evidence(not_run=(NotRun(check="sweep", vendor=ctx.vendor, reason=exc.message),))
        if result.envs:  # its workers started: each side's interpreter has read its files
            ctx.read_pythons.update(str(p) for p in pythons)
        where = time_line(result)
        if where:  # the job's log says where the sweep's time went, as `bench` does
            ctx.progress(f"sweep {where}")
        if ctx.details_dir is not None:
            i, n = ctx.shard
            dump_results(result, ctx.details_dir / f"sweep-{ctx.vendor}-{i}of{n}.json")
        return Evidence(sweeps=(to_evidence(result, vendor=ctx.vendor),))


class FirstCall:
    """What a fresh process of the deployment pays before each kernel's first result, cold and
    warm; measured once per vendor (on shard 1), since it does not split by shape. The head
    only, unless the change moves the toolchain the sides run under: then each side, under its
    own (a new Triton often changes compile time). A moved pin that both sides' environment
    satisfies alike moves nothing, and the base is not measured again under the same one."""

    name: CheckName = "first_call"
    keeps_on_stop = False
    machine: Machine = "quiet"

    def applies(self, ctx: MeasureContext) -> bool:
        return "first_call" in ctx.plan.checks and ctx.first_shard and ctx.deployment is not None

    def run(self, ctx: MeasureContext) -> Evidence:
        from checks.compiler.run import specs_for
        from checks.first_call.measure import first_call_evidence, measure_first_call

        deployment = ctx.deployment
        assert deployment is not None  # applies() says so
        sides: tuple[Side, ...] = ("base", "head") if ctx.toolchains_differ() else ("head",)
        found, not_run = [], []
        # interpreters whose files a process has read (a priming one, or the sweep's workers)
        primed: set[str] = set(ctx.read_pythons)
        for side in sides:
            try:
                tree, python = ctx.tree(side), ctx.environment(side).python
            except KernelReviewError as exc:
                reason = f"{side}: {exc.message}"
                not_run.append(NotRun(check="first_call", vendor=ctx.vendor, reason=reason))
                continue
            for spec in specs_for(ctx.plan.kernels, ctx.python_path):
                ctx.progress(
                    f"first call: {spec.name} ({side}, cold, then warm) in fresh processes"
                )
                try:
                    report = measure_first_call(
                        tree,
                        spec,
                        mode="gpu",
                        deployment_kind=deployment.kind,
                        budget_ms=deployment.first_call_budget_ms,
                        python=python,
                        prime=str(python) not in primed,
                    )
                    primed.add(str(python))
                except KernelReviewError as exc:
                    reason = f"{spec.name}: {exc.message}"
                    not_run.append(NotRun(check="first_call", vendor=ctx.vendor, reason=reason))
                    continue
                found.append(first_call_evidence(report, ctx.vendor, side))
        return Evidence(first_calls=tuple(found), not_run=tuple(not_run))


class Compiler:
    """Old against new compiler output for every target of every vendor; measured by the first
    vendor's runner on shard 1 (it cross-compiles, so one runner covers all vendors)."""

    name: CheckName = "compiler"
    keeps_on_stop = False
    machine: Machine = "cpu"

    def applies(self, ctx: MeasureContext) -> bool:
        return (
            "compiler" in ctx.plan.checks
            and ctx.first_shard
            and ctx.vendor == ctx.plan.vendors[0]
            and bool(ctx.plan.kernels)
            and bool(ctx.compiler_targets)
        )

    def run(self, ctx: MeasureContext) -> Evidence:
        from checks.compiler.evidence import compiler_evidence_for_trees

        ctx.progress("compiler report: old and new, every config, both vendors")
        try:
            envs = (ctx.environment("base"), ctx.environment("head"))
            compiler, not_run = compiler_evidence_for_trees(
                ctx.tree("base"),
                ctx.tree("head"),
                ctx.plan,
                ctx.compiler_targets or [],
                envs=envs,
                python_path=ctx.python_path,
            )
        except KernelReviewError as exc:
            return Evidence(not_run=(NotRun(check="compiler", reason=exc.message),))
        return Evidence(compiler=compiler, not_run=tuple(not_run))


class SharedMemory:
    """Old against new shared-memory (LDS) traffic under the vendor's profiler, opt-in by the
    policy's ``[profile] shared_memory``; measured on shard 1 of each vendor's runner."""

    name: CheckName = "smem"
    keeps_on_stop = False
    machine: Machine = "gpu"

    def applies(self, ctx: MeasureContext) -> bool:
        return "smem" in ctx.plan.checks and ctx.first_shard and bool(ctx.plan.kernels)

    def run(self, ctx: MeasureContext) -> Evidence:
        from checks.compiler.profile.smem import smem_evidence

        profile = ctx.policy.profile if ctx.policy is not None else None
        try:
            limit = ctx.limits.max_gpu_seconds
            base_python, head_python = ctx.pythons()
        except KernelReviewError as exc:
            return Evidence(not_run=(NotRun(check="smem", vendor=ctx.vendor, reason=exc.message),))
        budget = min(profile.max_seconds, limit) if profile is not None else min(120, limit)
        return smem_evidence(
            ctx.plan,
            {"base": ctx.tree("base"), "head": ctx.tree("head")},
            ctx.target,
            shapes_per_kernel=profile.shapes if profile is not None else 2,
            budget_s=budget,
            gpu=_gpu_name(),
            progress=ctx.progress,
            pythons={"base": base_python, "head": head_python},
            python_path=ctx.python_path,
        )


def _gpu_name() -> str:
    try:
        import torch

        return str(torch.cuda.get_device_name()) if torch.cuda.is_available() else ""
    except Exception:
        return ""


CHECKS: tuple[Check, ...] = (Sweep(), FirstCall(), Compiler(), SharedMemory())
