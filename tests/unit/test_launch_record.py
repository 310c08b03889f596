"""The launch record from the worker's raw launches to the review's words: kernel names as the
profiler gives them (recorded on the H200, demangled, qualified), the device activities that are
no kernels, one call's rows, a sweep's cases joined per bench entry and side, the change lines'
kernel functions, and what the review says the record confirms or corrects and rests on."""

from __future__ import annotations

import pytest

from bot.analysis.changes import change_lines
from bot.analysis.classify import analyze_diff
from bot.contracts.evidence import LaunchedKernel, LaunchRecord, SweepEvidence
from bot.contracts.review import ChangeLine
from bot.review.launched import launch_lines, launch_summary, readings
from checks.bench_entries import launches
from checks.sweep.evidence import launch_records, to_evidence
from checks.sweep.models import CaseLaunch, CaseLaunches, ShapeResult
from checks.sweep.summary import combine
from checks.worker.timing import MARKER
from tests.paths import DATA
from tests.unit.test_sweep_skipped import _sweep as _sweep_result

# GPU kernel names as the H200's profiler wrote them for the fixture's softmax, old and new
# (bench/results/h200/smem_traffic/results-tail.md, Nsight Compute on torch 2.11, Triton 3.6)
RECORDED_OLD = "void <unnamed>::softmax_row_kernel<__half, 128, 8>(const T1 *, T1 *, long)"
RECORDED_NEW = "softmax_kernel"
# torch's fill kernel as Kineto names it, demangled
ATEN_FILL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
    "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, "
    "at::detail::Array<char*, 1>)"
)


@pytest.mark.parametrize(
    ("name", "short"),
    [
        (RECORDED_OLD, "softmax_row_kernel"),
        (RECORDED_NEW, "softmax_kernel"),
        (ATEN_FILL, "at::native::vectorized_elementwise_kernel"),
        ("void (anonymous namespace)::ns::add<float, 4>(float const*, int)", "ns::add"),
        ("_ZN6toyops17vector_add_kernelIfEEvPKT_S3_PS1_i", "toyops::vector_add_kernel"),
        ("_Z17vector_add_kernelPKfS0_Pfi", "vector_add_kernel"),
        ("_Znot_a_symbol", "_Znot_a_symbol"),  # the demangler cannot read it: as it is
    ],
)
def test_a_kernel_is_named_by_its_qualified_name_demangled(name: str, short: str) -> None:
    assert launches.short_name(name) == short


def test_the_demangler_writes_a_symbols_signature() -> None:
    assert launches.demangle("_Z17vector_add_kernelPKfS0_Pfi") == (
        "vector_add_kernel(float const*, float const*, float*, int)"
    )


def test_copies_memsets_and_annotations_are_no_kernels() -> None:
    events = [
        ("Memcpy DtoD (Device -> Device)", "gpu_memcpy"),
        (RECORDED_OLD, "kernel"),
        ("Memset (Device)", "gpu_memset"),
        ("ProfilerStep#1", "gpu_user_annotation"),
        (ATEN_FILL, "kernel"),
    ]
    assert launches.device_kernels(events) == [RECORDED_OLD, ATEN_FILL]
    # a profiler that does not say an activity's type: copies and memsets by their names
    untyped = [(n, None) for n, _ in events if not n.startswith("ProfilerStep")]
    assert launches.device_kernels(untyped) == [RECORDED_OLD, ATEN_FILL]


def test_one_calls_rows_count_each_kernel_once_and_leave_the_marker_out() -> None:
    triton = ["_fwd_kernel", "_fwd_kernel", "_norm_kernel"]
    # the profiler sees Triton's kernels too, by their function's name, and the marker
    device = [MARKER, "_fwd_kernel", RECORDED_OLD, "_fwd_kernel", ATEN_FILL, "_norm_kernel"]
    # which Triton kernels hold atomics, as read from their compiled code (one was not found)
    atomic = {"_fwd_kernel": True}
    rows = launches.summarize(triton, device, leave_out=(MARKER,), atomics=atomic)
    assert rows == [
        {"name": "_fwd_kernel", "triton": True, "count": 2, "atomics": True},
        {"name": "_norm_kernel", "triton": True, "count": 1, "atomics": None},
        {"name": "softmax_row_kernel", "triton": False, "count": 1, "atomics": None},
        {
            "name": "at::native::vectorized_elementwise_kernel",
            "triton": False,
            "count": 1,
            "atomics": None,
        },
    ]
    assert launches.summarize(triton, None, atomics=atomic) == rows[:2]  # Triton's only
    many = [f"k{i}" for i in range(launches.MAX_KERNELS + 5)]
    assert len(launches.summarize(many, None)) == launches.MAX_KERNELS


# ------------------------------------------------------------------ a sweep's cases, joined


def _launches(*kernels: tuple[str, bool]) -> CaseLaunches:
    return CaseLaunches(kernels=tuple(CaseLaunch(name=n, triton=t, count=1) for n, t in kernels))


def _case(kernel: str, dims: tuple[int, ...], base: CaseLaunches | None, head: CaseLaunches):
    return ShapeResult(
        kernel=kernel, shape=dims, dtype="float16", tolerance=0.03, status="ok",
        base_launches=base, head_launches=head,
    )  # fmt: skip


def test_a_sweeps_cases_are_joined_per_bench_entry_and_side() -> None:
    narrow = ("softmax_row_kernel", False)
    wide = ("softmax_wide_row_kernel", False)
    fill = ("at::native::vectorized_elementwise_kernel", False)
    triton = ("softmax_kernel", True)
    result = _sweep_result(
        "cuda-events",
        _case("softmax", (4, 781), _launches(narrow, fill), _launches(triton)),
        _case("softmax", (4, 9000), _launches(wide, fill), _launches(triton)),
        # base's check failed (its CUDA kernel cannot build here): head's record stands
        _case("softmax", (8, 781), None, _launches(triton)).model_copy(
            update={"status": "error", "failed_side": "base"}
        ),
    )
    base, head = launch_records(result)
    assert (base.kernel, base.side, base.cases, base.profiler) == ("softmax", "base", 2, False)
    assert [(k.name, k.origin, k.cases) for k in base.kernels] == [
        ("softmax_row_kernel", "native", 1),
        ("at::native::vectorized_elementwise_kernel", "library", 2),
        ("softmax_wide_row_kernel", "native", 1),
    ]
    assert (head.side, head.cases, [(k.name, k.origin) for k in head.kernels]) == (
        "head", 3, [("softmax_kernel", "triton")]
    )  # fmt: skip
    assert to_evidence(result).launches == (base, head)  # what the results file carries


def test_torchs_own_cub_kernels_are_library_kernels_not_the_repositorys() -> None:
    # torch.sort and torch.cumsum as the profiler named them beside torchmd-net's neighbor
    # lists (H100, 2026-12-05): torch builds CUB inside its own namespace
    sort = ("at_cuda_detail::cub::detail::radix_sort::DeviceRadixSortOnesweepKernel", False)
    scan = ("at_cuda_detail::cub::detail::scan::DeviceScanKernel", False)
    own = ("assignCellIndex", False)
    result = _sweep_result(
        "cuda-events", _case("cell", (4096, 1), _launches(own, sort), _launches(sort, scan))
    )
    base, head = launch_records(result)
    assert [(k.name, k.origin) for k in base.kernels] == [
        ("assignCellIndex", "native"),
        (sort[0], "library"),
    ]
    assert {k.origin for k in head.kernels} == {"library"}


def test_a_kernel_its_checkout_does_not_spell_is_a_library_kernel_whatever_its_name() -> None:
    # torch.arange's kernel as the profiler named it beside torchmd-net's neighbor lists (H100,
    # 2026-12-05): in an anonymous namespace, so no namespace of torch is left in its name; the
    # sweep found it in neither checkout (own=False) and the review listed it as their own
    arange = CaseLaunch(name="elementwise_kernel_with_index", triton=False, count=1, own=False)
    own = CaseLaunch(name="assignCellIndex", triton=False, count=1, own=True)
    untold = CaseLaunch(name="traverseCellList", triton=False, count=1)  # an earlier record
    base = CaseLaunches(kernels=(own, arange, untold))
    head = CaseLaunches(kernels=(arange,))
    result = _sweep_result("cuda-events", _case("cell", (4096, 1), base, head))
    b, h = launch_records(result)
    assert [(k.name, k.origin) for k in b.kernels] == [
        ("assignCellIndex", "native"),
        ("elementwise_kernel_with_index", "library"),
        ("traverseCellList", "native"),
    ]
    assert [(k.name, k.origin) for k in h.kernels] == [("elementwise_kernel_with_index", "library")]
    # a library kernel by its namespace stays one, whatever its checkout spells
    cub = CaseLaunch(name="cub::DeviceScanKernel", triton=False, count=1, own=True)
    scanned = _case("k", (8,), CaseLaunches(kernels=(cub,)), _launches())
    assert launch_records(_sweep_result("cuda-events", scanned))[0].kernels[0].origin == "library"


def test_a_later_pass_keeps_what_the_first_pass_recorded() -> None:
    first = _case("softmax", (4, 781), _launches(("softmax_row_kernel", False)), _launches())
    failed = _case("softmax", (4, 781), None, None).model_copy(
        update={"status": "crashed", "message": "exited with code 7"}
    )
    joined = combine(first, failed, 1)
    assert joined.status == "crashed"
    assert (joined.base_launches, joined.head_launches) == (
        first.base_launches,
        first.head_launches,
    )


def test_a_change_line_names_its_kernel_functions() -> None:
    lines = change_lines(analyze_diff((DATA / "diffs" / "toy_rewrite.diff").read_text()))
    named = {c.kernel: (c.kind, c.old_functions, c.new_functions) for c in lines}
    assert named["vector_add_kernel"] == ("rewrite", ("vector_add_kernel",), ("vector_add_kernel",))
    assert named["softmax_kernel"] == ("new", (), ("softmax_kernel",))
    # a launch change read without either side's kernel: by its kernel's name on both sides
    assert named["scale_kernel"] == ("launch", ("scale_kernel",), ("scale_kernel",))


# ----------------------------------------------------------------- the review's reading

REWRITE = ChangeLine(
    kernel="softmax", kind="rewrite", old_language="CUDA + HIP", new_language="Triton",
    old_functions=("softmax_row_kernel", "softmax_wide_row_kernel"),
    new_functions=("softmax_kernel",),
)  # fmt: skip
TUNING = ChangeLine(
    kernel="matmul", kind="tuning", old_language="Triton", new_language="Triton",
    old_functions=("matmul_kernel",), new_functions=("matmul_kernel",),
)  # fmt: skip


def _ran(kernel: str, side: str, *kernels: tuple[str, str], profiler: bool = True) -> LaunchRecord:
    return LaunchRecord(
        kernel=kernel,
        side=side,  # type: ignore[arg-type]
        cases=4,
        kernels=tuple(LaunchedKernel(name=n, origin=o, cases=4) for n, o in kernels),  # type: ignore[arg-type]
        profiler=profiler,
        note="" if profiler else launches.CPU_NOTE,
    )


def _sweep(*records: LaunchRecord, vendor: str = "nvidia") -> SweepEvidence:
    return SweepEvidence(vendor=vendor, gpu="NVIDIA H200", shapes=(), launches=records)  # type: ignore[arg-type]


def test_a_rewrite_that_ran_as_the_analysis_says_is_confirmed_and_rests_on_both() -> None:
    sweep = _sweep(
        _ran("softmax", "base", ("softmax_row_kernel", "native"), ("at::native::f", "library")),
        _ran("softmax", "head", ("softmax_kernel", "triton"), ("at::native::f", "library")),
    )
    [r] = readings([REWRITE], [sweep])
    assert r.rests_on == "both" and not r.corrected
    assert (
        r.pairing == "base's CUDA `softmax_row_kernel` replaced by head's Triton `softmax_kernel`"
    )
    # the wide-row kernel is named but no recorded shape reached it: said, not a correction
    assert r.unreached == ["base did not reach `softmax_wide_row_kernel`"]
    assert launch_summary([REWRITE], [sweep]) == (
        "**What ran** (launch record) confirms softmax: what changed rests on both."
    )
    [line] = launch_lines([REWRITE], [sweep])
    assert "base ran CUDA `softmax_row_kernel` and 1 library kernel" in line
    assert "head ran Triton `softmax_kernel` and 1 library kernel" in line
    assert "rests on the analysis, confirmed by what ran." in line


def test_a_triton_kernel_that_keeps_the_cuda_kernels_name_is_told_apart_by_its_origin() -> None:
    line = ChangeLine(kernel="vector_add", kind="rewrite", old_language="CUDA",
                      new_language="Triton", old_functions=("vector_add_kernel",),
                      new_functions=("vector_add_kernel",))  # fmt: skip
    sweep = _sweep(
        _ran("vector_add", "base", ("toyops::vector_add_kernel", "native")),
        _ran("vector_add", "head", ("vector_add_kernel", "triton")),
    )
    [r] = readings([line], [sweep])
    assert r.rests_on == "both" and not r.corrected
    assert r.pairing == (
        "base's CUDA `toyops::vector_add_kernel` replaced by head's Triton `vector_add_kernel`"
    )


def test_a_rewrite_whose_head_still_runs_the_old_kernel_is_corrected() -> None:
    """softmax's C++ kernel kept behind a flag that the runner's environment sets."""
    sweep = _sweep(
        _ran("softmax", "base", ("softmax_row_kernel", "native")),
        _ran("softmax", "head", ("softmax_row_kernel", "native")),
    )
    [r] = readings([REWRITE], [sweep])
    assert r.rests_on == "ran"
    assert r.corrected == [
        "head never ran `softmax_kernel`, which it names",
        "head still ran the replaced `softmax_row_kernel`: the bench entry measures the old kernel",
    ]
    assert launch_summary([REWRITE], [sweep]).startswith(
        "**What ran** (launch record) corrects softmax: head never ran `softmax_kernel`"
    )
    assert launch_summary([REWRITE], [sweep]).endswith("what changed rests on what ran.")


def test_a_tuned_kernel_the_bench_entry_never_runs_is_corrected() -> None:
    sweep = _sweep(
        _ran("matmul", "base", ("matmul_persistent", "triton")),
        _ran("matmul", "head", ("matmul_persistent", "triton")),
    )
    [r] = readings([TUNING], [sweep])
    assert r.corrected == [
        "base never ran `matmul_kernel`, which it names",
        "head never ran `matmul_kernel`, which it names",
    ]


def test_a_rewrite_the_analysis_read_as_something_else_is_a_rewrite_by_what_ran() -> None:
    launch = ChangeLine(kernel="neighbors", kind="launch", old_functions=("forward",),
                        new_functions=("forward",))  # fmt: skip
    sweep = _sweep(
        _ran("neighbors", "base", ("torchmdnet::forward_kernel", "native")),
        _ran("neighbors", "head", ("_neighbor_brute_kernel", "triton")),
    )
    [r] = readings([launch], [sweep])
    assert r.rests_on == "ran"
    assert (
        "base's CUDA `torchmdnet::forward_kernel` replaced by head's Triton "
        "`_neighbor_brute_kernel`: a rewrite, where it reads launch"
    ) in r.corrected
    assert "head alone ran `_neighbor_brute_kernel`, which it does not name" in r.corrected


def test_on_the_cpu_only_tritons_names_are_checked_and_the_rest_is_said_unrecorded() -> None:
    sweep = _sweep(
        _ran("softmax", "head", ("softmax_kernel", "triton"), profiler=False), vendor="amd"
    )
    [r] = readings([REWRITE], [sweep])
    assert r.base is None and r.confirmed == ["head ran `softmax_kernel`"] and not r.corrected
    [line, unrecorded] = launch_lines([REWRITE, TUNING], [sweep])
    assert "base: not recorded; head ran Triton `softmax_kernel`" in line
    assert launches.CPU_NOTE in line
    assert unrecorded == (
        "- matmul: no launch recorded (no case of it was measured); what changed rests on the "
        "analysis alone."
    )
    assert launch_summary([REWRITE, TUNING], [sweep]) == (
        "**What ran** (launch record) confirms softmax; cannot check matmul: what changed "
        "rests on both."
    )


def test_a_review_without_any_record_says_nothing_of_what_ran() -> None:
    sweep = _sweep()
    assert launch_lines([REWRITE], [sweep]) == [] and launch_summary([REWRITE], [sweep]) == ""


def test_a_record_that_agrees_with_no_change_named_goes_unsaid_in_the_comment() -> None:
    """A toolchain pin moved: every kernel measured, none of them named by the analysis, each
    side running the same kernels."""
    sweep = _sweep(
        _ran("matmul", "base", ("matmul_kernel", "triton")),
        _ran("matmul", "head", ("matmul_kernel", "triton")),
    )
    toolchain = ChangeLine(kernel="triton", kind="toolchain", old_version="==3.5.1")
    [r] = readings([toolchain], [sweep])
    assert r.rests_on == "analysis" and not r.named
    assert launch_summary([toolchain], [sweep]) == ""
    [line] = launch_lines([toolchain], [sweep])  # the job summary still lists what ran
    assert "base ran Triton `matmul_kernel`; head ran Triton `matmul_kernel`." in line


def test_shards_of_one_vendor_are_read_as_one_record() -> None:
    a = _sweep(_ran("softmax", "base", ("softmax_row_kernel", "native")))
    b = _sweep(_ran("softmax", "base", ("softmax_wide_row_kernel", "native")))
    [r] = readings([REWRITE], [a, b])
    assert r.base is not None and r.base.cases == 8
    assert r.confirmed == ["base ran `softmax_row_kernel` and `softmax_wide_row_kernel`"]
