"""The bench table says why a case has no verdict, and its footer names the resource it counted
(CPU-seconds for a CPU-timed run)."""

from __future__ import annotations

import pytest

from checks.sweep.cli import cost_line, format_table
from checks.sweep.models import ProtocolConfig, ShapeResult, SweepResult


@pytest.mark.parametrize(("timing", "unit"), [("cpu", "CPU-s"), ("cuda-events", "GPU-s")])
def test_the_cost_line_counts_in_the_timed_device_seconds(timing: str, unit: str) -> None:
    result = SweepResult(
        vendor="cpu" if timing == "cpu" else "nvidia",
        timing=timing,
        base_rev="a" * 40,
        head_rev="b" * 40,
        protocol=ProtocolConfig(),
        family_size=1,
        gpu_seconds=2.5,
    )
    assert cost_line(result) == f"cost: 2.5 {unit} in cases, 0 verdicts"
    held = result.model_copy(update={"held_gpu_seconds": 4.0, "gpu_s_per_verdict_all_in": 2.0})
    line = cost_line(held)
    assert line.startswith(f"cost: 4.0 {unit} held from the start") and f"2.000 {unit} per" in line
    other = "GPU-s" if unit == "CPU-s" else "CPU-s"
    assert other not in line


def test_the_table_says_why_a_case_has_no_verdict() -> None:
    reason = "cannot run under the CPU interpreter: it asks Triton for a GPU driver; it needs a GPU"
    case = ShapeResult(
        kernel="l2norm",
        shape=(1, 64),
        dtype="bfloat16",
        category="served",
        tolerance=0.05,
        status="skipped",
        message=reason,
    )
    result = SweepResult(
        vendor="cpu",
        timing="cpu",
        base_rev="a" * 40,
        head_rev="b" * 40,
        protocol=ProtocolConfig(),
        family_size=1,
        cases=(case,),
    )
    assert f"skipped: l2norm bfloat16 1x64: {reason}" in format_table(result).splitlines()
