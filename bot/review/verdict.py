"""The decision: Approve, Approve with conditions, or Request changes, with the five conditions.

Pure. Takes what changed, the policy's requirements and the evidence gathered so far, and says
for each condition whether it is met, open, or not run (and why), in the words a careful
reviewer would use. Measured violations (a shape slower than tolerance, a wrong result, a crash,
a first call over budget, a config that does not compile for a required vendor) request
changes; missing evidence or housekeeping leaves the pull request approved with conditions.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.contracts.evidence import Evidence, FirstCallEvidence
from bot.contracts.review import (
    ChangeLine,
    Condition,
    Decision,
    Requirements,
    Verdict,
)

TITLES = {
    "sweep": "A shape sweep, not a data point",
    "first_call": "The first-call cost, measured in the process that will run this",
    "vendors": "Both vendors, measured separately",
    "ownership": "A named owner, a version pin and a perf gate in CI",
    "rollback": "The old kernel kept for one release as rollback",
}


def _pct(ratio: float) -> str:
    return f"{(ratio - 1.0) * 100:+.1f}%"


def _shape(s: Sequence[int]) -> str:
    return "x".join(str(d) for d in s)


def _sweep_condition(req: Requirements, ev: Evidence, measured_kernels: bool) -> Condition:
    gpu_sweeps = [s for s in ev.sweeps if s.timing_kind == "gpu"]
    if not measured_kernels:
        return Condition(
            number=1,
            key="sweep",
            title=TITLES["sweep"],
            state="met",
            summary="no changed kernel is covered by the policy, so there is nothing to sweep",
        )
    if not gpu_sweeps:
        reasons = [n.reason for n in ev.not_run if n.check == "sweep"] or ["needs a GPU runner"]
        cpu = [s for s in ev.sweeps if s.timing_kind == "cpu"]
        extra = (
            ("a CPU-timed sweep ran the pipeline end to end; CPU timings are not evidence",)
            if cpu
            else ()
        )
        return Condition(
            number=1,
            key="sweep",
            title=TITLES["sweep"],
            state="not_run",
            summary=reasons[0],
            evidence=tuple(reasons[1:]) + extra,
        )
    lines: list[str] = []
    failures = [f for s in gpu_sweeps for f in s.failures]
    slower = [x for s in gpu_sweeps for x in s.slower]
    inconclusive = [x for s in gpu_sweeps for x in s.inconclusive]
    for s in gpu_sweeps:
        total = len(s.shapes)
        gm = ""
        if s.geomean_ratio is not None:
            ci = f" [{_pct(s.geomean_ci[0])}, {_pct(s.geomean_ci[1])}]" if s.geomean_ci else ""
            gm = f"; {'weighted ' if s.weighted else ''}geomean {_pct(s.geomean_ratio)}{ci}"
        worst = s.worst
        w = (
            f"; worst {worst.kernel} {_shape(worst.shape)} {worst.dtype} {_pct(worst.ratio or 1)}"
            if worst
            else ""
        )
        lines.append(f"{s.vendor} ({s.gpu}): {total} shapes{gm}{w}")
        if s.dropped_rounds:
            lines.append(f"{s.vendor}: {s.dropped_rounds} throttled rounds dropped")
    for f in failures:
        lines.append(f"{f.kernel} {_shape(f.shape)} {f.dtype}: {f.verdict} {f.detail}".rstrip())
    for x in slower:
        lines.append(f"{x.kernel} {_shape(x.shape)} {x.dtype}: slower by {_pct(x.ratio or 1)}")
    if failures or slower:
        what = []
        if failures:
            what.append(f"{len(failures)} shape(s) failed (wrong result, crash or timeout)")
        if slower:
            what.append(f"{len(slower)} shape(s) slower than tolerance")
        return Condition(
            number=1,
            key="sweep",
            title=TITLES["sweep"],
            state="open",
            summary="; ".join(what),
            evidence=tuple(lines),
            blocking=True,
        )
    if inconclusive:
        return Condition(
            number=1,
            key="sweep",
            title=TITLES["sweep"],
            state="open",
            summary=f"{len(inconclusive)} shape(s) inconclusive: the noise was larger than the "
            "tolerance within the budget; rerun with `/bench full`",
            evidence=tuple(lines),
        )
    return Condition(
        number=1,
        key="sweep",
        title=TITLES["sweep"],
        state="met",
        summary="within tolerance at every shape",
        evidence=tuple(lines),
    )


def _first_call_line(f: FirstCallEvidence) -> str:
    parts = [f"{f.kernel} on {f.vendor}"]
    if f.cold_ms is not None:
        parts.append(f"cold {f.cold_ms:.0f} ms")
    if f.warm_ms is not None:
        parts.append(f"warm {f.warm_ms:.0f} ms")
    if f.autotune_ms:
        parts.append(f"autotune {f.autotune_ms:.0f} ms")
    if f.distinct_keys is not None:
        parts.append(f"{f.distinct_keys} autotune key(s) over the served shapes")
    if f.cold_total_ms is not None:
        parts.append(f"{f.cold_total_ms:.0f} ms to serve every shape once, cold")
    if f.compile_only:
        parts.append("(compile only, on a CPU)")
    line = ", ".join(parts)
    # where the cold time went: imports and context are paid by any torch process, old kernel too
    return f"{line} ({f.detail})" if f.detail else line


def _first_call_condition(req: Requirements, ev: Evidence, measured_kernels: bool) -> Condition:
    title = TITLES["first_call"]
    if not measured_kernels:
        return Condition(
            number=2,
            key="first_call",
            title=title,
            state="met",
            summary="no changed kernel is covered by the policy",
        )
    gpu = [f for f in ev.first_calls if not f.compile_only and f.cold_ms is not None]
    failed = [f for f in ev.first_calls if not f.compile_only and f.cold_ms is None]
    lines = tuple(
        _first_call_line(f)
        if f.cold_ms is not None or f.compile_only
        else f"{f.kernel} on {f.vendor}: not measured ({f.detail or 'no time recorded'})"
        for f in ev.first_calls
    )
    kind = req.deployment
    if not gpu:
        reasons = [n.reason for n in ev.not_run if n.check == "first_call"]
        reasons += [f"{f.kernel}: the measurement failed" for f in failed]
        reasons = reasons or ["needs a GPU runner"]
        return Condition(
            number=2,
            key="first_call",
            title=title,
            state="not_run",
            summary=f"{reasons[0]}; the deployment is `{kind}`",
            evidence=lines,
        )
    if kind == "long-lived":
        return Condition(
            number=2,
            key="first_call",
            title=title,
            state="met",
            summary="measured; for a long-lived process it is paid once and reported only",
            evidence=lines,
        )
    budget = req.first_call_budget_ms
    over = [
        f for f in gpu if f.over_budget_shapes or (budget is not None and (f.cold_ms or 0) > budget)
    ]
    if over:
        ev_lines = lines + tuple(
            f"{f.kernel}: over the {budget:.0f} ms budget at {', '.join(f.over_budget_shapes) or 'the first call'}"
            for f in over
        )
        return Condition(
            number=2,
            key="first_call",
            title=title,
            state="open",
            summary=f"over the `{kind}` budget of {budget:.0f} ms for {len(over)} kernel(s)",
            evidence=ev_lines,
            blocking=True,
        )
    return Condition(
        number=2,
        key="first_call",
        title=title,
        state="met",
        summary=f"within the `{kind}` budget of {budget:.0f} ms",
        evidence=lines,
    )


def _vendors_condition(req: Requirements, ev: Evidence, measured_kernels: bool) -> Condition:
    title = TITLES["vendors"]
    if not measured_kernels:
        return Condition(
            number=3,
            key="vendors",
            title=title,
            state="met",
            summary="no changed kernel is covered by the policy",
        )
    measured = {s.vendor for s in ev.sweeps if s.timing_kind == "gpu"}
    missing = [v for v in req.vendors if v not in measured]
    lines: list[str] = []
    for v in req.vendors:
        if v in measured:
            lines.append(f"{v}: measured")
        else:
            why = [n.reason for n in ev.not_run if n.vendor == v and n.check == "sweep"] or [
                "needs a GPU runner"
            ]
            lines.append(f"{v}: not run ({why[0]})")
    shared = []
    if ev.compiler is not None and len(req.vendors) > 1:
        shared = [k for k, differ in ev.compiler.configs_differ_per_vendor.items() if not differ]
        for k in shared:
            lines.append(
                f"{k}: one config list serves both vendors; the same num_warps is twice the "
                "threads on AMD (64-lane wavefronts) as on NVIDIA (32-lane warps)"
            )
    failed_compiles = (
        [f for f in ev.compiler.flags if f.severity == "error" and f.vendor in req.vendors]
        if ev.compiler
        else []
    )
    for f in failed_compiles:
        lines.append(f"{f.kernel} on {f.vendor} {f.target}: {f.message}")
    if failed_compiles:
        return Condition(
            number=3,
            key="vendors",
            title=title,
            state="open",
            summary="a config does not compile for a required vendor",
            evidence=tuple(lines),
            blocking=True,
        )
    if missing and not measured:
        return Condition(
            number=3,
            key="vendors",
            title=title,
            state="not_run",
            summary=f"{', '.join(missing)} not measured yet",
            evidence=tuple(lines),
        )
    if missing:
        return Condition(
            number=3,
            key="vendors",
            title=title,
            state="open",
            summary=f"{', '.join(missing)} not measured; a config tuned on one vendor is not tuned on the other",
            evidence=tuple(lines),
        )
    if shared:
        return Condition(
            number=3,
            key="vendors",
            title=title,
            state="open",
            summary="measured on both, but one config list serves both vendors",
            evidence=tuple(lines),
        )
    return Condition(
        number=3,
        key="vendors",
        title=title,
        state="met",
        summary=f"measured separately on {', '.join(req.vendors)}",
        evidence=tuple(lines),
    )


def _ownership_condition(ev: Evidence) -> Condition:
    title = TITLES["ownership"]
    repo = ev.repo
    if repo is None:
        reasons = [n.reason for n in ev.not_run if n.check == "repo"] or [
            "the repository was not read"
        ]
        return Condition(
            number=4,
            key="ownership",
            title=title,
            state="not_run",
            summary=reasons[0],
        )
    lines: list[str] = []
    missing: list[str] = []
    unowned = [o.path for o in repo.owners if not o.owners]
    owners = sorted({w for o in repo.owners for w in o.owners})
    if unowned or not repo.owners:
        missing.append("an owner")
        lines.append(
            "owner: none for "
            + (", ".join(unowned) or "the changed kernels")
            + " (add a CODEOWNERS rule or `owners` in the policy)"
        )
    else:
        sources = sorted({o.source for o in repo.owners})
        lines.append(f"owner: {', '.join(owners)} ({', '.join(sources)})")
    for p in repo.pins:
        if p.pinned:
            lines.append(f"pin: {p.package} {p.spec} ({p.source})")
        else:
            missing.append(f"a {p.package} pin")
            where = (
                f" ({p.source}: `{p.package}{p.spec or ''}` has no upper bound)" if p.source else ""
            )
            lines.append(f"pin: {p.package} not pinned{where}")
    if repo.perf_gate.workflow:
        lines.append(f"perf gate: {repo.perf_gate.detail}")
    else:
        missing.append("a perf gate in CI")
        lines.append(f"perf gate: {repo.perf_gate.detail}")
    if missing:
        return Condition(
            number=4,
            key="ownership",
            title=title,
            state="open",
            summary="missing " + ", ".join(missing),
            evidence=tuple(lines),
        )
    return Condition(
        number=4,
        key="ownership",
        title=title,
        state="met",
        summary="owner, pins and perf gate are in place",
        evidence=tuple(lines),
    )


def _rollback_condition(changes: Sequence[ChangeLine]) -> Condition:
    title = TITLES["rollback"]
    rewrites = [c for c in changes if c.kind == "rewrite"]
    if not rewrites:
        return Condition(
            number=5,
            key="rollback",
            title=title,
            state="met",
            summary="no hand-written kernel is replaced; the previous version is in history",
        )
    lines = []
    deleted = []
    for c in rewrites:
        where = ", ".join(c.old_paths)
        if c.old_kernel_kept:
            lines.append(f"{c.kernel}: kept ({where}){' ' + c.kept_how if c.kept_how else ''}")
        else:
            deleted.append(c.kernel)
            lines.append(
                f"{c.kernel}: deleted ({where}); only git history keeps it"
                f"{' ' + c.kept_how if c.kept_how else ''}"
            )
    if deleted:
        return Condition(
            number=5,
            key="rollback",
            title=title,
            state="open",
            summary=f"deleted for {', '.join(deleted)}: keep it behind a flag for one "
            "release, with a comment saying why",
            evidence=tuple(lines),
        )
    return Condition(
        number=5,
        key="rollback",
        title=title,
        state="met",
        summary="every replaced kernel is kept in the tree",
        evidence=tuple(lines),
    )


def decide(changes: Sequence[ChangeLine], req: Requirements, ev: Evidence) -> Verdict:
    changes = tuple(changes)
    if not changes:
        return Verdict(
            decision="approve",
            why="No kernel changes found in this diff; nothing to measure.",
            conditions=(),
            not_asking_for=(),
            changes=(),
            no_kernel_changes=True,
        )
    measured_kernels = any(c.mapped for c in changes)
    vendors = _vendors_condition(req, ev, measured_kernels)
    branch_lines = tuple(f"{c.kernel}: {b}" for c in changes for b in c.branches)
    if branch_lines:  # a side of a vendor / arch branch is measured on one runner only
        vendors = vendors.model_copy(update={"evidence": (*vendors.evidence, *branch_lines)})
    conditions = (
        _sweep_condition(req, ev, measured_kernels),
        _first_call_condition(req, ev, measured_kernels),
        vendors,
        _ownership_condition(ev),
        _rollback_condition(changes),
    )
    blocking = [c for c in conditions if c.blocking]
    unfinished = [c for c in conditions if c.state != "met"]
    rewrites = [c for c in changes if c.kind == "rewrite"]
    tunings = [c for c in changes if c.kind == "tuning"]

    what = []
    if rewrites:
        what.append(f"replaces {len(rewrites)} hand-written kernel(s) with Triton")
    if tunings:
        what.append(f"retunes {len(tunings)} Triton kernel(s)")
    others = len(changes) - len(rewrites) - len(tunings)
    if others:
        what.append(f"changes {others} other kernel(s)")
    subject = (
        "This pull request " + " and ".join(what) if what else "This pull request changes kernels"
    )

    if blocking:
        decision: Decision = "request_changes"
        why = (
            f"{subject}, and the evidence shows a cost beyond what the policy allows: "
            + "; ".join(f"{c.title.lower()} - {c.summary}" for c in blocking)
            + "."
        )
    elif unfinished:
        decision = "approve_with_conditions"
        n_open = sum(1 for c in unfinished if c.state == "open")
        n_not_run = sum(1 for c in unfinished if c.state == "not_run")
        counts = ", ".join(
            part
            for part in (
                f"{n_open} open" if n_open else "",
                f"{n_not_run} not run" if n_not_run else "",
            )
            if part
        )
        why = (
            f"{subject}. Nothing measured so far argues against it, but the evidence is not complete "
            f"({counts} of {len(conditions)} conditions): before merge, please close them."
        )
    else:
        decision = "approve"
        why = f"{subject}, and every condition is met with evidence."

    not_asking: list[str] = []
    if rewrites:
        not_asking.append(
            f"Parity with the old kernel: a slowdown within the {req.tolerance * 100:.0f}% tolerance "
            "is a price worth paying for the code this deletes."
        )
    if rewrites or tunings:
        not_asking.append(
            "A micro-optimised Triton kernel: get the autotune config list right first; that is "
            "usually most of the gap."
        )
    unmapped = [c for c in changes if not c.mapped]
    if unmapped:
        why += (
            f" {len(unmapped)} changed kernel(s) are not covered by the policy and were not "
            "measured: add them to `kernels` with a bench entry point."
        )
    return Verdict(
        decision=decision,
        why=why,
        conditions=conditions,
        not_asking_for=tuple(not_asking),
        changes=changes,
    )
