"""Deliberately broken Triton kernels on a real GPU (skipped without one): an out-of-bounds store,
an infinite loop, an allocation larger than the card, too much shared memory, code Triton rejects
and a wrong result. Each gets its own status, the good case after it runs on a clean worker, and
every result already measured is kept (appended to the partial file as it finished, the good
cases again as each later pass measures them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checks.sweep.protocol import ProtocolConfig
from checks.sweep.run import SweepOptions, run_sweep
from checks.sweep.shapes import Case
from checks.sweep.workers import Timeouts
from tests.paths import DATA

pytestmark = pytest.mark.gpu

FAULTS = DATA / "gpu_faults"
EXPECTED = {
    "out_of_bounds": {"cuda_error", "crashed"},
    "infinite_loop": {"timeout"},
    "larger_than_the_card": {"oom"},
    "too_much_shared_memory": {"out_of_resources"},
    "rejected_syntax": {"compile_error"},
    "wrong_result": {"wrong_result"},
}


def test_every_gpu_fault_has_its_own_status_and_the_sweep_goes_on(tmp_path: Path) -> None:
    n = 2**20
    cases = [
        Case(kernel="good", bench="fault_kernels:good", dims=(n,), dtype="float32", tolerance=0.03)
    ]
    for i, name in enumerate(EXPECTED, start=1):
        for kernel, dims in ((name, (n,)), ("good", (n + i,))):
            cases.append(
                Case(
                    kernel=kernel,
                    bench=f"fault_kernels:{kernel}",
                    dims=dims,
                    dtype="float32",
                    tolerance=0.03,
                )
            )
    partial = tmp_path / "partial.jsonl"
    result = run_sweep(
        cases,
        base_root=FAULTS / "base",
        head_root=FAULTS / "head",
        base_rev="b" * 40,
        head_rev="h" * 40,
        options=SweepOptions(
            device="cuda",
            protocol=ProtocolConfig(max_rounds=20, max_case_seconds=10.0),
            timeouts=Timeouts(prepare_s=60, check_s=30, configure_s=30, block_s=15),
            max_gpu_seconds=600,
            gpus=("0",),
            measure_ceilings=False,
        ),
        work_dir=tmp_path / "work",
        partial_path=partial,
    )
    # the recorded output (pytest -rA) shows what each case got and why
    for case in result.cases:
        print(f"{case.kernel:24} {case.shape!s:12} {case.status:16} {case.message[:150]!r}")
    assert len(result.cases) == len(cases)
    for case in result.cases:
        if case.kernel == "good":
            # measured on a worker started after the fault before it: nothing leaked into it
            assert case.status == "ok", (case.shape, case.status, case.message)
            assert case.raw is not None and case.ratio is not None
        else:
            assert case.status in EXPECTED[case.kernel], (case.kernel, case.status, case.message)
            assert case.failed_side == "head" and case.raw is None
    # every result was written as it finished, in order: a later fault lost none of them. The
    # journal's case lines (after its run and the workers' environments): the first pass's come
    # first; a fault is not measured again, and each later pass (fresh workers) appends the good
    # cases it measured again, each joined with its earlier passes
    lines = [json.loads(line) for line in partial.read_text().splitlines()]
    assert "run" in lines[0]
    rows = [line["case"] for line in lines if "case" in line]
    assert [(r["kernel"], tuple(r["shape"])) for r in rows[: len(cases)]] == [
        (c.kernel, c.shape) for c in result.cases
    ]
    later = rows[len(cases) :]
    assert later and all(r["kernel"] == "good" and r["status"] == "ok" for r in later), later
    assert all(len({x["execution"] for x in r["raw"]["rounds"]}) > 1 for r in later)
    assert result.summary.statuses["ok"] == len(EXPECTED) + 1
