"""C-3 on a real GPU (skipped without one): the fixture softmax's shared-memory traffic, old (the
C++ kernel) and new (Triton), each side in its own process under the vendor's profiler."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bot.contracts.plan import Plan, PlannedKernel, PlannedShape
from bot.gitutil import add_worktree, remove_worktree
from bot.review.local import gpu_vendor
from checks.compiler.profile.smem import smem_evidence
from checks.compiler.targets import target_for
from kernels_fixture.build_repo import build_fixture_repo

pytestmark = pytest.mark.gpu


def test_fixture_softmax_traffic_old_and_new(tmp_path: Path) -> None:
    vendor = target_for(gpu_vendor() or "nvidia")
    if shutil.which(vendor.profiler) is None:
        pytest.skip(f"{vendor.profiler} is not on PATH")
    fixture = build_fixture_repo(tmp_path / "toyops")
    kernel = PlannedKernel(
        name="softmax",
        bench="toyops.bench:softmax",
        paths=("toyops/softmax.py",),
        dtypes=("float32",),
        shapes=(PlannedShape(dims=(1823, 781)),),
        tolerance=0.05,
        change_kinds=("rewrite",),
    )
    plan = Plan(
        base_sha=fixture.base_sha,
        head_sha=fixture.head_sha,
        vendors=(vendor.vendor,),
        kernels=(kernel,),
        checks=("smem",),
    )
    repo = Path(fixture.path)
    trees = {
        "base": add_worktree(repo, tmp_path / "base", fixture.base_sha),
        "head": add_worktree(repo, tmp_path / "head", fixture.head_sha),
    }
    try:
        ev = smem_evidence(plan, trees, vendor, shapes_per_kernel=1, budget_s=300)
    finally:
        for tree in trees.values():
            remove_worktree(repo, tree)
    refused = [n.reason for n in ev.not_run if "may not read" in n.reason]
    if refused:
        pytest.skip(refused[0])
    assert ev.not_run == (), ev.not_run
    new = [r for r in ev.smem if r.side == "new"]
    old = [r for r in ev.smem if r.side == "old"]
    assert [r.function for r in new] == ["softmax_kernel"]  # one call, one launch, one kernel
    assert new[0].launches == 1 and new[0].accesses is not None
    # the C++ kernel reduces through shared memory it declared itself
    assert old and all("softmax" in r.function for r in old)
    assert sum(r.accesses or 0 for r in old) > 0
