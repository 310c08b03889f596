"""The bench table says why a case has no verdict, its footer names the resource it counted
(CPU-seconds for a CPU-timed run), and its where line files each case's time where it went."""

from __future__ import annotations

import pytest

from checks.sweep.cli import cost_line, format_table
from checks.sweep.models import ProtocolConfig, ShapeResult, SweepResult
from checks.sweep.pair_runner import check_parts
from checks.sweep.summary import time_line
from checks.worker import contract


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


def _reply(**steps: float) -> contract.CheckReply:
    return contract.CheckReply(
        has_reference=True,
        atol=None,
        rtol=None,
        configs_picked=(),
        correct=True,
        message="",
        digest=(),
        steps_s=dict(steps),
    )


def test_a_checks_parts_are_the_slower_sides_compiling_and_launch_record() -> None:
    base = _reply(first_call=2.0, first_call_compile=1.5, first_call_load=0.25, launches=2.5)
    head = _reply(first_call=0.5, first_call_compile=0.25, first_call_load=0.5, launches=3.0)
    assert check_parts([base, head]) == {"compile": 1.75, "launch_record": 3.0}
    # on the CPU nothing compiles, and the launch record is the first call's own
    assert check_parts([_reply(first_call=0.1), _reply(first_call=0.2)]) == {}
    assert check_parts([]) == {}


def _timed(shape: tuple[int, ...], **phases: float) -> ShapeResult:
    return ShapeResult(
        kernel="add", shape=shape, dtype="float32", category="served", tolerance=0.03,
        status="ok", phase_s=phases,
    )  # fmt: skip


def test_the_where_line_files_compiling_inside_the_checks_and_the_launch_record_apart() -> None:
    cases = (
        _timed((1,), check=9.0, compile=6.0, launch_record=2.5, prepare=0.5, finish=0.25),
        _timed((2,), check=61.0, compile=60.0, prepare=0.5, rounds=1.0, finish=0.25,
               prepare_compile=0.25),
    )  # fmt: skip
    result = SweepResult(
        vendor="nvidia", timing="cuda-events", base_rev="a" * 40, head_rev="b" * 40,
        protocol=ProtocolConfig(), family_size=2, cases=cases, startup_s={"start": 2.0},
    )  # fmt: skip
    where = time_line(result)
    assert where is not None
    parts = where.removeprefix("where: ").split(", ")
    assert parts[0] == "start-up 2.0 s"
    # the checks less the launch record; the compiling inside them said; the longest check
    assert parts[1].startswith("checks 67.5 s (") and "66.0 s of it compiling" in parts[1]
    assert "longest 61.0 s" in where
    assert "the launch record 2.5 s (" in where
    assert "timing 1.0 s" in where
    assert where.endswith(
        "each case's set-up 1.5 s (0.2 s of it compiling and loading Triton kernels in the "
        "workers that had not checked the case)"
    )
    # no launch record (later executions, the CPU): not said
    plain = result.model_copy(update={"cases": cases[1:]})
    assert "launch record" not in (time_line(plain) or "")
    # nothing compiled (the CPU's interpreter): no compiling said
    interpreted = (_timed((1,), check=0.5, rounds=1.0), _timed((2,), check=0.25, rounds=1.0))
    line = time_line(result.model_copy(update={"cases": interpreted})) or ""
    assert "checks 0.8 s (correctness" in line and "Triton" not in line
    assert line.endswith("each case's set-up 0.0 s")
