"""What to measure: the kernel changes + the policy (+ a ``/bench`` request) -> a Plan.

The Plan is the JSON contract between the gate job (which plans on a hosted runner and runs no
pull-request code) and the measure jobs (one per vendor, on GPU runners). :func:`make_plan` is
the only place a ``PlannedKernel`` is made (``kernel-review bench`` plans with it too, every
kernel as "requested"), so every planned kernel carries the policy's ``tensors``. A toolchain
change (a pin of triton or torch moved) plans every policy kernel, each within the limits. The
plan also carries what the measure jobs need of the base policy (its limits, deployment and the
compile targets of the plan's vendors), so that no later job reads the policy again. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bot.contracts.plan import (
    Check,
    Plan,
    PlanDeployment,
    PlanLimits,
    PlannedKernel,
    PlannedShape,
)
from bot.contracts.review import ChangeLine
from bot.errors import LimitError

if TYPE_CHECKING:
    from pathlib import Path

    from bot.policy.model import Policy


def largest_tensor(dims: Sequence[int], tensors: Sequence[Sequence[int]] | None) -> int:
    """Elements of the largest tensor of a shape: the whole shape, or the named dimensions."""
    if not tensors:
        return math.prod(dims)
    return max(math.prod(dims[d] for d in t if d < len(dims)) for t in tensors)


def make_plan(
    changes: Sequence[ChangeLine],
    policy: Policy,
    *,
    base_sha: str,
    head_sha: str,
    repository: str = "",
    pr_number: int | None = None,
    kernels: Sequence[str] | None = None,
    vendors: Sequence[str] | None = None,
    dtypes: Sequence[str] | None = None,
    shapes: Sequence[Sequence[int]] | None = None,
    quick: bool = False,
) -> Plan:
    """Plan the run. ``kernels``/``vendors``/``dtypes``/``shapes`` narrow it (a ``/bench``
    request); anything they name must already be allowed by the policy."""
    touched: dict[str, list[str]] = {}
    unmapped: list[str] = []
    if any(c.kind == "toolchain" for c in changes):
        # A new compiler or framework can change every kernel: all of them are measured.
        touched = {kp.name: ["toolchain"] for kp in policy.kernels}
    for c in changes:
        if c.kind == "toolchain":
            continue
        if c.mapped:
            touched.setdefault(c.kernel, []).append(c.kind)
        else:
            unmapped.append(c.kernel)
    if kernels:
        unknown = [k for k in kernels if k not in {kp.name for kp in policy.kernels}]
        if unknown:
            raise LimitError(
                f"unknown {'kernel' if len(unknown) == 1 else 'kernels'} {', '.join(unknown)}",
                hint="the policy's kernels are: " + ", ".join(kp.name for kp in policy.kernels),
            )
        # An explicit request measures the named kernels even when this diff did not touch them.
        touched = {k: touched.get(k, ["requested"]) for k in kernels}
    planned = []
    for kp in policy.kernels:
        if kp.name not in touched:
            continue
        kdtypes = tuple(d for d in kp.dtypes if not dtypes or d in dtypes)
        kshapes = tuple(
            PlannedShape(dims=tuple(s.dims), weight=s.weight)
            for s in kp.shapes
            if not shapes or tuple(s.dims) in {tuple(x) for x in shapes}
        )
        if shapes:
            # Shapes named in the request but not served are allowed within the limits.
            served = {p.dims for p in kshapes}
            kshapes += tuple(PlannedShape(dims=tuple(s)) for s in shapes if tuple(s) not in served)
        if quick:
            kshapes = tuple(sorted(kshapes, key=lambda s: -s.weight)[:3])
            kdtypes = kdtypes[:1]
        planned.append(
            PlannedKernel(
                name=kp.name,
                bench=kp.bench,
                baseline=kp.baseline,
                paths=tuple(kp.paths),
                dtypes=kdtypes,
                shapes=kshapes,
                tolerance=kp.effective_tolerance(policy),
                tensors=tuple(tuple(t) for t in kp.tensors) if kp.tensors else None,
                change_kinds=tuple(sorted(set(touched[kp.name]))),
            )
        )
    for k in planned:
        if k.cases > policy.limits.max_shapes:
            raise LimitError(
                f"kernel {k.name}: {len(k.shapes)} shapes x {len(k.dtypes)} dtypes = {k.cases} "
                f"cases, over the policy's limit of {policy.limits.max_shapes}",
                hint="name fewer shapes or dtypes, or raise limits.max_shapes in the policy",
            )
        for s in k.shapes:
            if any(d >= len(s.dims) for t in k.tensors or () for d in t):
                raise LimitError(
                    f"kernel {k.name}: shape {'x'.join(map(str, s.dims))} does not have the "
                    f"dimensions the policy's tensors = {[list(t) for t in k.tensors or ()]} name",
                    hint="give every shape of this kernel the same number of dimensions",
                )
            n = largest_tensor(s.dims, k.tensors)
            if n > policy.limits.max_elements_per_tensor:
                raise LimitError(
                    f"kernel {k.name}: shape {'x'.join(map(str, s.dims))} has {n} elements, over "
                    f"the policy's limit of {policy.limits.max_elements_per_tensor}",
                    hint="use a smaller shape, or raise limits.max_elements_per_tensor",
                )
    plan_vendors = tuple(v for v in policy.vendors if not vendors or v in vendors)
    if vendors:
        extra = [v for v in vendors if v not in policy.vendors]
        if extra:
            raise LimitError(
                (f"vendor {extra[0]} is" if len(extra) == 1 else f"vendors {', '.join(extra)} are")
                + " not in the policy's vendors",
                hint="allowed: " + ", ".join(policy.vendors),
            )
    checks: list[Check] = []
    if planned:
        checks += ["sweep", "first_call"]
        if policy.profile.shared_memory:
            checks.append("smem")
    if any(c.kind != "deleted" for c in changes):
        checks.append("compiler")
    checks.append("repo")
    return Plan(
        repository=repository,
        pr_number=pr_number,
        base_sha=base_sha,
        head_sha=head_sha,
        vendors=plan_vendors,
        kernels=tuple(planned),
        checks=tuple(checks),
        quick=quick,
        unmapped=tuple(unmapped),
        changes=tuple(changes),
        limits=PlanLimits.model_validate(policy.limits.model_dump()),
        deployment=PlanDeployment.model_validate(policy.deployment.model_dump()),
        compiler_targets=policy.compiler.for_vendors(plan_vendors),
    )


def compiled_only_bases(repo: Path, base_sha: str, kernels: list[PlannedKernel]) -> list[str]:
    """One line per kernel whose base side has only CUDA/HIP kernels in its paths: on a CPU its
    base side cannot run, and every case of it will say so."""
    from bot import gitutil
    from bot.analysis.scan import scan_source
    from bot.policy.model import covered

    files = gitutil.list_files(repo, base_sha)
    cxx_only: list[str] = []
    for k in kernels:
        languages = set()
        for path in (f for f in files if covered(k.paths, f)):
            text = gitutil.show_file(repo, base_sha, path)
            scan = scan_source(path, text or "")
            languages |= {x.language for x in getattr(scan, "kernels", ()) if x.language}
            if scan.language:
                languages.add(scan.language)
        if languages and languages <= {"cuda", "hip"}:
            cxx_only.append(k.name)
    if not cxx_only:
        return []
    return [
        f"the base side of {', '.join(cxx_only)} has only CUDA/HIP kernels "
        f"({base_sha[:12]}): with --device cpu those cases cannot run on the base side and are "
        "reported as errors; measure them on a GPU (kernel-review bench without --device cpu)"
    ]
