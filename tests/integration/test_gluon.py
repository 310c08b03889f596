"""Gluon (``@gluon.jit``) through the parts that run kernels: the compiler report cross-compiles
it with Triton's compiler for both vendors, without a GPU; the sweep runs it on the GPU machine
(Gluon has no interpreter in Triton 3.6, so the sweep test is marked ``gpu``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.compiler.run import KernelSpec, build_compiler_report
from checks.sweep.protocol import ProtocolConfig
from checks.sweep.run import SweepOptions, run_sweep
from checks.sweep.shapes import Case
from checks.sweep.workers import Timeouts
from tests.paths import DATA

GLUON = DATA / "gluon"  # head: the GPU stand-ins' scale, ported to Gluon
TRITON = DATA / "gpu_standins" / "base"  # base: the same scale in Triton
SPEC = KernelSpec(name="scale", bench="gpu_kernels:scale", shapes=((5000,),), dtypes=("float32",))


@pytest.mark.slow
def test_gluon_kernel_cross_compiles_for_both_vendors(tmp_path: Path) -> None:
    report = build_compiler_report(GLUON, [SPEC], ["sm_90", "gfx942"], cache_dir=tmp_path)
    by_target = {r.target: r for r in report.records}
    assert set(by_target) == {"sm_90", "gfx942"}, [r.error for r in report.records]
    for target, rec in by_target.items():
        assert rec.error is None, (target, rec.error)
        assert rec.function == "scale_kernel"
        assert rec.regs_per_thread and rec.regs_per_thread > 0
        assert rec.spill_bytes == 0
    # the layout is written for the target's lanes: 4 warps of 32 on NVIDIA, of 64 on AMD
    assert by_target["sm_90"].threads_per_block == 128
    assert by_target["gfx942"].threads_per_block == 256


@pytest.mark.gpu
def test_sweep_runs_a_triton_to_gluon_port_unchanged(tmp_path: Path) -> None:
    """The bench entry point is language-neutral: base Triton against head Gluon is one sweep."""
    cases = [
        Case(
            kernel="scale", bench="gluon_kernels:scale", dims=dims, dtype="float32", tolerance=0.03
        )
        for dims in ((5000,), (2**20,))
    ]
    result = run_sweep(
        cases,
        base_root=TRITON,
        head_root=GLUON,
        base_rev="b" * 40,
        head_rev="h" * 40,
        options=SweepOptions(
            device="cuda",
            protocol=ProtocolConfig(max_rounds=60),
            timeouts=Timeouts(prepare_s=120, block_s=30),
            max_gpu_seconds=300,
            gpus=None,
            ceilings_cache_dir=str(tmp_path / "cache"),
        ),
        work_dir=tmp_path / "work",
    )
    assert [c.status for c in result.cases] == ["ok", "ok"]
    assert all(c.verdict in ("SAME", "FASTER", "SLOWER", "INCONCLUSIVE") for c in result.cases)
