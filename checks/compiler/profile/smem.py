"""Profile the planned kernels' shared-memory traffic, old and new, on this runner's GPU (C-3).

For each planned kernel, its most-served shapes (``[profile] shapes`` of them) in its first
dtype: the base and the head checkout's bench entry point, each run once under the vendor's
profiler (``checks.compiler.profile.driver``). Every profiled process counts against a budget
(``[profile] max_seconds``, never more than ``[limits] max_gpu_seconds``): its wall time, an
upper bound on the GPU time it used. What is left when the budget is spent is reported as not
run, as is everything after the profiler refuses (no permission to read the counters).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.contracts.evidence import Evidence, NotRun, SmemTraffic
from checks.compiler.targets.base import VendorTarget
from checks.job_files import JobFailure, ProfileRun
from checks.job_process import run_job

PERMISSION_HINT = (
    "let the runner's user read the GPU performance counters (NVIDIA: the driver option "
    "NVreg_RestrictProfilingToAdminUsers=0, then reload the driver; see "
    "https://developer.nvidia.com/ERR_NVGPUCTRPERM), or set [profile] shared_memory = false"
)


@dataclass(frozen=True)
class Case:
    kernel: str
    bench: str
    shape: tuple[int, ...]
    dtype: str
    python_path: tuple[str, ...] = ()  # the policy's: folders imported from before the root


def cases(plan: Any, shapes_per_kernel: int, python_path: Sequence[str] = ()) -> list[Case]:
    """The profiled cases: per planned kernel, its most-served shapes in its first dtype."""
    out = []
    folders = tuple(python_path or ())
    for k in plan.kernels:
        ranked = sorted(k.shapes, key=lambda s: -s.weight)[:shapes_per_kernel]
        out += [Case(k.name, k.bench, tuple(s.dims), k.dtypes[0], folders) for s in ranked]
    return out


def profile_case(
    vendor: VendorTarget,
    tree: Path,
    case: Case,
    work: Path,
    timeout_s: float,
    python: str | None = None,
) -> tuple[list, str | None]:
    """One side of one case under the profiler: the counters per GPU kernel, or why none.
    ``python``: the side's own interpreter (its own toolchain), the bot's by default."""
    out_dir = work / "profile"
    out_dir.mkdir(parents=True, exist_ok=True)
    job = ProfileRun(
        repo_root=str(tree),
        bench=case.bench,
        shape=case.shape,
        dtype=case.dtype,
        region=vendor.profile_region,
        python_path=case.python_path,
    )
    result = run_job(
        job,
        workdir=work,
        triton_cache=work / "triton-cache",
        timeout_s=timeout_s,
        what=f"profiling {case.kernel} with {vendor.profiler}",
        prefix=_resolved(vendor.profile_prefix(out_dir)),
        python=python,
    )
    counters, refused = vendor.read_profile(out_dir)
    if refused:
        return [], f"{vendor.profiler} may not read this GPU's counters ({refused})"
    if isinstance(result, JobFailure):
        return [], result.fatal
    if not counters:
        return [], f"{vendor.profiler} reported no kernel launch in the profiled call"
    return counters, None


def _resolved(prefix: list[str]) -> list[str]:
    """The profiler by its full path: the memory cap starts the command with ``os.execv``,
    which does not search ``PATH``."""
    return [shutil.which(prefix[0]) or prefix[0], *prefix[1:]]


def smem_evidence(
    plan: Any,
    trees: dict[str, Path],
    vendor: VendorTarget,
    *,
    shapes_per_kernel: int,
    budget_s: float,
    gpu: str = "",
    progress: Callable[[str], None] = lambda _m: None,
    pythons: dict[str, str] | None = None,
    python_path: Sequence[str] = (),
) -> Evidence:
    """Old (``trees["base"]``) and new (``trees["head"]``) shared-memory traffic of every case;
    ``pythons``: each side's own interpreter, the bot's where absent; ``python_path``: the
    policy's."""

    def not_run(reason: str) -> Evidence:
        return Evidence(not_run=(NotRun(check="smem", vendor=vendor.vendor, reason=reason),))

    if shutil.which(vendor.profiler) is None:
        return not_run(
            f"{vendor.profiler} is not on this runner's PATH, so shared-memory traffic was not "
            f"profiled: install it on the {vendor.display} runner, or set [profile] "
            "shared_memory = false"
        )
    todo = [
        (c, side) for c in cases(plan, shapes_per_kernel, python_path) for side in ("base", "head")
    ]
    found: list[SmemTraffic] = []
    missing: list[NotRun] = []
    spent = 0.0
    for i, (case, side) in enumerate(todo):
        left = budget_s - spent
        where = f"{case.kernel} {'x'.join(map(str, case.shape))} {case.dtype} ({side})"
        if left <= 1.0:
            reason = f"the profiling budget of {budget_s:.0f} s is spent: {len(todo) - i} runs left"
            missing.append(NotRun(check="smem", vendor=vendor.vendor, reason=reason))
            break
        progress(f"shared-memory traffic: {where} under {vendor.profiler}")
        start = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="kr-smem-") as tmp:
            python = (pythons or {}).get(side)
            counters, why = profile_case(vendor, trees[side], case, Path(tmp), left, python)
        spent += time.monotonic() - start
        if why is not None:
            refused = f"{vendor.profiler} may not read" in why
            reason = f"{where}: {why}" + (f"; {PERMISSION_HINT}" if refused else "")
            missing.append(NotRun(check="smem", vendor=vendor.vendor, reason=reason))
            if refused:
                break  # every other run would be refused the same way
            continue
        for k in counters:
            accesses, conflicts = vendor.smem_totals(k)
            found.append(
                SmemTraffic(
                    kernel=case.kernel,
                    side="old" if side == "base" else "new",
                    vendor=vendor.vendor,
                    gpu=gpu,
                    shape=case.shape,
                    dtype=case.dtype,
                    function=k.name[:300],
                    launches=k.launches,
                    accesses=accesses,
                    accesses_unit=vendor.accesses_unit,
                    conflicts=conflicts,
                    conflicts_unit=vendor.conflicts_unit,
                    profiler=vendor.profiler,
                )
            )
    return Evidence(smem=tuple(found), not_run=tuple(missing))
