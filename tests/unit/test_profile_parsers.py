"""C-3: the profilers' output read back (Nsight Compute's --csv, rocprofv3's counter CSV), from
files in their formats (tests/data/profile), and what a runner without the profiler reports."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bot.contracts.plan import Plan, PlannedKernel, PlannedShape
from checks.compiler.profile import ncu, rocprof
from checks.compiler.profile.smem import cases, smem_evidence
from checks.compiler.targets import target_for
from tests.paths import DATA

PROFILE = DATA / "profile"


def test_ncu_csv_after_its_own_lines_with_thousands_separators():
    [k] = ncu.parse((PROFILE / "ncu_softmax_sm90.csv").read_text())
    assert (k.name, k.launches) == ("softmax_kernel", 1)
    assert k.counters["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] == 32768
    assert target_for("nvidia").smem_totals(k) == (65536, 0)


def test_ncu_launches_of_one_kernel_are_summed():
    [k] = ncu.parse((PROFILE / "ncu_softmax_cuda_sm90.csv").read_text())
    assert k.name.startswith("void softmax_row_kernel<__half, 256, 16>")
    assert k.launches == 2
    assert target_for("nvidia").smem_totals(k) == (2 * (262144 + 32768), 0)


def test_ncu_permission_refusal_is_recognised():
    text = (PROFILE / "ncu_no_permission.txt").read_text()
    assert ncu.parse(text) == []
    refused = ncu.refusal(text)
    assert refused is not None and refused.startswith("ERR_NVGPUCTRPERM - The user does not")
    assert ncu.refusal((PROFILE / "ncu_softmax_sm90.csv").read_text()) is None


def test_nvidia_reads_the_log_file_it_asked_for(tmp_path: Path):
    nvidia = target_for("nvidia")
    prefix = nvidia.profile_prefix(tmp_path)
    assert prefix[:2] == ["ncu", "--csv"] and prefix[-1] == str(tmp_path / "ncu.csv")
    shutil.copy(PROFILE / "ncu_no_permission.txt", tmp_path / "ncu.csv")
    counters, refused = nvidia.read_profile(tmp_path)
    assert counters == [] and refused is not None and "ERR_NVGPUCTRPERM" in refused


def test_rocprofv3_counter_collection_nested_by_host_and_process():
    amd = target_for("amd")
    counters, refused = amd.read_profile(PROFILE / "rocprofv3")
    assert refused is None
    [k] = counters
    assert (k.name, k.launches) == ("softmax_kernel", 2)
    assert k.counters == {"SQ_INSTS_LDS": 4864, "SQ_LDS_BANK_CONFLICT": 0, "SQ_WAVES": 9728}
    assert amd.smem_totals(k) == (4864, 0)
    assert rocprof.parse("Kernel_Name,Counter_Name,Counter_Value\nk,SQ_INSTS_LDS,n/a\n") == []


def _plan() -> Plan:
    kernel = PlannedKernel(
        name="softmax",
        bench="toyops.bench:softmax",
        paths=("toyops/softmax.py",),
        dtypes=("float16", "float32"),
        shapes=(
            PlannedShape(dims=(1823, 781)),
            PlannedShape(dims=(4096, 4096), weight=10),
            PlannedShape(dims=(32768, 1024), weight=4),
        ),
        tolerance=0.05,
        change_kinds=("rewrite",),
    )
    return Plan(
        base_sha="a" * 40,
        head_sha="b" * 40,
        vendors=("nvidia",),
        kernels=(kernel,),
        checks=("smem",),
    )


def test_the_most_served_shapes_are_profiled_in_the_first_dtype():
    assert [(c.shape, c.dtype) for c in cases(_plan(), 2)] == [
        ((4096, 4096), "float16"),
        ((32768, 1024), "float16"),
    ]


@pytest.mark.skipif(shutil.which("ncu") is not None, reason="this machine has ncu")
def test_a_runner_without_the_profiler_says_so(tmp_path: Path):
    ev = smem_evidence(
        _plan(),
        {"base": tmp_path, "head": tmp_path},
        target_for("nvidia"),
        shapes_per_kernel=1,
        budget_s=60,
    )
    assert ev.smem == ()
    [row] = ev.not_run
    assert row.check == "smem" and row.vendor == "nvidia"
    assert (
        "ncu is not on this runner's PATH" in row.reason and "shared_memory = false" in row.reason
    )


def test_the_review_shows_old_against_new_traffic_with_the_profilers_units():
    from bot.contracts.evidence import Evidence, SmemTraffic
    from bot.contracts.review import ReviewContext, Verdict
    from bot.review.render import render_comment

    def row(side: str, function: str, accesses: int) -> SmemTraffic:
        return SmemTraffic(
            kernel="softmax",
            side=side,  # type: ignore[arg-type]
            vendor="nvidia",
            shape=(4096, 4096),
            dtype="float16",
            function=function,
            launches=1,
            accesses=accesses,
            accesses_unit=target_for("nvidia").accesses_unit,
            conflicts=0,
            conflicts_unit=target_for("nvidia").conflicts_unit,
            profiler="ncu",
        )

    evidence = Evidence(
        smem=(row("new", "softmax_kernel", 65536), row("old", "softmax_row_kernel", 294912))
    )
    verdict = Verdict(decision="approve", why="x", conditions=(), not_asking_for=(), changes=())
    text = render_comment(verdict, ReviewContext(base_sha="a" * 40, head_sha="b" * 40), evidence)
    assert "<summary>Shared-memory traffic, old and new (Part C-3)</summary>" in text
    assert (
        "nvidia (ncu): accesses are shared load+store wavefronts; conflicts are bank conflicts."
        in text
    )
    old = text.index(
        "| softmax | 4096x4096 | float16 | nvidia | old | `softmax_row_kernel` | 1 | 294912 | 0 |"
    )
    new = text.index(
        "| softmax | 4096x4096 | float16 | nvidia | new | `softmax_kernel` | 1 | 65536 | 0 |"
    )
    assert old < new
