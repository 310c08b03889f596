"""Old against new for a pull request, on a real git repository: base and head worktrees,
Triton cross-compiled on both sides, the base's CUDA file through nvcc."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bot.contracts.plan import Plan, PlannedKernel, PlannedShape
from bot.gitutil import commit_all, init_repo
from bot.policy.load import parse_policy
from checks.compiler.evidence import compiler_evidence, compiler_evidence_for_range
from checks.compiler.records import KernelCompileRecord
from checks.compiler.report import make_report
from tests.paths import DATA

POLICY = """
vendors = ["nvidia", "amd"]
owners = ["@gpu-team"]
[deployment]
kind = "long-lived"
[compiler]
nvidia_targets = ["sm_90"]
amd_targets = ["gfx942"]
[[kernels]]
name = "vector_add"
bench = "toykern.bench:vector_add"
paths = ["toykern/kernels.py", "toykern/csrc/add.cu", "toykern/csrc/add.hip"]
dtypes = ["float32"]
shapes = [[1048576]]
"""


def _plan(base: str, head: str) -> Plan:
    kernel = PlannedKernel(
        name="vector_add",
        bench="toykern.bench:vector_add",
        paths=("toykern/kernels.py", "toykern/csrc/add.cu", "toykern/csrc/add.hip"),
        dtypes=("float32",),
        shapes=(PlannedShape(dims=(1048576,)),),
        tolerance=0.03,
        change_kinds=("tuning",),
    )
    return Plan(
        base_sha=base,
        head_sha=head,
        vendors=("nvidia", "amd"),
        kernels=(kernel,),
        checks=("compiler",),
        compiler_targets=("sm_90", "gfx942"),  # the policy's, as make_plan carries them
    )


@pytest.mark.slow
def test_old_against_new_in_worktrees(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("KERNEL_REVIEW_CACHE", str(tmp_path / "cache"))
    repo = init_repo(tmp_path / "repo")
    shutil.copytree(DATA / "kernels" / "toykern", repo / "toykern")
    (repo / "toykern" / "csrc").mkdir()
    shutil.copy(DATA / "kernels" / "cuda" / "resources.cu", repo / "toykern" / "csrc" / "add.cu")
    (repo / "toykern" / "csrc" / "add.hip").write_text("// the HIP twin\n")
    base = commit_all(repo, "base")
    bench = repo / "toykern" / "bench.py"
    # head: twice the block size, twice the warps
    bench.write_text(bench.read_text().replace("BLOCK=1024)", "BLOCK=2048, num_warps=8)"))
    head = commit_all(repo, "head")
    details = tmp_path / "details"
    heard: list[str] = []
    evidence, not_run = compiler_evidence_for_range(
        repo,
        base,
        head,
        _plan(base, head),
        parse_policy(POLICY),
        details_dir=details,
        progress=heard.append,
    )
    assert evidence is not None
    # one line per side and target as each finishes, so the demo's first compile shows progress
    assert sorted(line.split(":")[0] for line in heard) == [
        "base gfx942", "base sm_90", "head gfx942", "head sm_90"
    ]  # fmt: skip
    assert all("compiled" in line and "variant" in line for line in heard)
    new = [r for r in evidence.rows if r.side == "new"]
    old = [r for r in evidence.rows if r.side == "old"]
    assert {(r.target, r.config) for r in new} == {
        ("sm_90", "BLOCK=2048, num_warps=8, num_stages=3"),
        ("gfx942", "BLOCK=2048, num_warps=8, num_stages=2"),
    }
    assert ("sm_90", "BLOCK=1024, num_warps=4, num_stages=3") in {(r.target, r.config) for r in old}
    # each vendor's occupancy in its own unit, as numbers and in the words they make
    units = {r.target: r.occupancy_unit for r in new}
    assert units == {"sm_90": "warps/SM", "gfx942": "waves/SIMD"}
    for r in new:
        assert r.occupancy_fraction is not None and r.occupancy_resident
        assert (
            r.occupancy == f"{r.occupancy_resident} {r.occupancy_unit} ({r.occupancy_fraction:.0%})"
        )
    if shutil.which("nvcc"):
        assert any(r.language == "cuda" and r.config.startswith("add_kernel") for r in old)
    assert any(n.path == "toykern/csrc/add.hip" and "hipcc" in n.reason for n in not_run)
    assert evidence.configs_differ_per_vendor == {"vector_add": False}
    assert any("one config list serves both vendors" in f.message for f in evidence.flags)
    saved = json.loads((details / "compiler-new.json").read_text())
    assert {r["target"] for r in saved["records"]} == {"sm_90", "gfx942"}


def _rec(**kw) -> KernelCompileRecord:
    base = dict(
        kernel="k",
        function="k_kernel",
        config_label="BLOCK=128, num_warps=4, num_stages=3",
        vendor="nvidia",
        target="sm_90",
        regs_per_thread=64,
        spill_bytes=0,
        shared_bytes=0,
        occupancy_fraction=0.5,
        occupancy_warps_per_sm=32,
    )
    base.update(kw)
    return KernelCompileRecord(**base)


def test_one_row_per_specialization_with_its_shapes_and_old_entry_failures_skipped():
    old = make_report(
        [
            _rec(language="cuda", function="k_kernel<float, 4>", config_label="threads=256"),
            _rec(
                language="cuda",
                function="k_kernel<half, 4>",
                config_label="threads=256",
                regs_per_thread=80,
            ),
            _rec(config_label="-", error="calling k failed", error_stage="entry"),
        ]
    )
    new = make_report(
        [
            _rec(
                shapes=("1x4096:float32",),
                specialization="x:*fp32/16, n:i32/16",
                occupancy_fraction=0.375,
                occupancy_warps_per_sm=24,
                global_load_bits_max=128,
            ),
            _rec(
                shapes=("17x4095:float32",),
                specialization="x:*fp32/16, n:i32",
                regs_per_thread=90,
                occupancy_fraction=0.25,
                occupancy_warps_per_sm=16,
                global_load_bits_max=32,
            ),
        ]
    )
    ev = compiler_evidence(old, new)
    # the C++ template instances of one kernel and launch are one row, the worst of them
    [old_row] = [r for r in ev.rows if r.side == "old"]
    assert (old_row.config, old_row.regs_per_thread) == ("k_kernel threads=256", 80)
    # each Triton specialization keeps its own row: the narrow loads of the ragged one show
    rows = {r.specialization: r for r in ev.rows if r.side == "new"}
    aligned, ragged = rows["x:*fp32/16, n:i32/16"], rows["x:*fp32/16, n:i32"]
    assert (aligned.shapes, aligned.load_bits_max) == (("1x4096:float32",), 128)
    assert (ragged.shapes, ragged.load_bits_max) == (("17x4095:float32",), 32)
    assert (ragged.regs_per_thread, ragged.occupancy) == (90, "16 warps/SM (25%)")
    # and the same as numbers, which the review reads
    occupancy = (ragged.occupancy_resident, ragged.occupancy_unit, ragged.occupancy_fraction)
    assert occupancy == (16, "warps/SM", 0.25)
    assert [f.message for f in ev.flags if "occupancy lower" in f.message]
    assert all("calling k failed" not in f.message for f in ev.flags)
