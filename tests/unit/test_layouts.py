"""C-1: the layouts of the Triton GPU IR, read from recorded cross-compiles (tests/data/compiler)
and shown in the review; B-8: ``maxnreg`` on a target that drops it."""

from __future__ import annotations

import pytest

from bot.contracts.evidence import CompilerEvidence, CompilerRow, TritonLayout
from bot.review.render import _compiler
from checks.compiler.layouts import declarations, kernel_layouts, reduction_warps
from checks.compiler.records import KernelCompileRecord
from checks.compiler.report import compare_reports, make_report, report_flags
from tests.paths import DATA

SAMPLES = DATA / "compiler"


def _layouts(name: str) -> tuple[TritonLayout, ...]:
    return kernel_layouts((SAMPLES / f"{name}.ttgir").read_text())


@pytest.mark.parametrize(("target", "lanes"), [("sm_90", 32), ("gfx942", 64)])
def test_softmax_row_is_one_blocked_layout_over_four_warps(target: str, lanes: int):
    found = _layouts(f"softmax_{target}")
    assert [x.role for x in found] == ["load", "reduce", "store"]
    reduce = found[1]
    assert reduce.axis == 0 and reduce.shape == (1024,)
    assert (reduce.kind, reduce.size_per_thread, reduce.threads_per_warp) == (
        "blocked",
        (1,),
        (lanes,),
    )
    assert reduce.warps_per_cta == (4,) and reduce.order == (0,)
    # the two reductions (max and sum) share the layout: kept once
    assert reduction_warps(reduce) == 4
    assert reduction_warps(found[0]) is None


def test_dot_layouts_are_each_vendors_matrix_core_layout():
    nv = {x.role: x for x in _layouts("dot_sm_90")}
    amd = {x.role: x for x in _layouts("dot_gfx942")}
    assert nv["dot"].text() == "nvidia_mma v3 warpsPerCTA [8, 1] instrShape [16, 128, 16]"
    assert amd["dot"].text() == "amd_mfma v3 warpsPerCTA [2, 4] instrShape [32, 32, 8]"
    assert nv["dot"].shape == amd["dot"].shape == (128, 128)
    # the A and B tiles load in different blocked layouts; AMD stores straight from MFMA
    assert [x.shape for x in _layouts("dot_sm_90") if x.role == "load"] == [(128, 64), (64, 128)]
    assert amd["store"].kind == "amd_mfma" and nv["store"].kind == "blocked"


def test_declarations_skip_what_is_not_a_distributed_layout():
    decls = declarations((SAMPLES / "dot_gfx942.ttgir").read_text())
    assert {"blocked", "blocked1", "mma"} <= set(decls)
    assert decls["linear"].kind == "linear" and decls["linear"].warps_per_cta == ()
    assert kernel_layouts("module {}\n") == ()


def _rec(**kw) -> KernelCompileRecord:
    base = dict(
        kernel="softmax",
        function="softmax_kernel",
        config_label="BLOCK_SIZE=4096, num_warps=4",
        config={"BLOCK_SIZE": 4096, "num_warps": 4},
        vendor="nvidia",
        target="sm_90",
        regs_per_thread=64,
        max_regs_per_thread=255,
    )
    base.update(kw)
    return KernelCompileRecord(**base)


def _reduce(warps: int, lanes: int = 32) -> TritonLayout:
    return TritonLayout(
        role="reduce",
        kind="blocked",
        shape=(4096,),
        axis=0,
        size_per_thread=(4096 // (warps * lanes),),
        threads_per_warp=(lanes,),
        warps_per_cta=(warps,),
        order=(0,),
    )


def test_a_row_split_across_more_warps_than_before_is_flagged():
    old = make_report([_rec(layouts=(_reduce(4),))])
    new = make_report([_rec(config_label="BLOCK_SIZE=4096, num_warps=16", layouts=(_reduce(16),))])
    [flag] = [f for f in compare_reports(old, new).flags if f.kind == "reduction_more_warps"]
    assert "now spans 16 warps (before: at most 4" in flag.message
    assert "shared memory" in flag.message
    same = compare_reports(old, make_report([_rec(layouts=(_reduce(4),))]))
    assert not [f for f in same.flags if f.kind == "reduction_more_warps"]


def test_maxnreg_is_flagged_where_the_target_drops_it():
    config = {"BLOCK": 128, "num_warps": 4, "maxnreg": 128}
    amd = _rec(
        vendor="amd",
        target="gfx942",
        config=config,
        config_label="BLOCK=128, num_warps=4, maxnreg=128",
        regs_per_thread=212,
        max_regs_per_thread=512,
    )
    nv = _rec(
        config=config, config_label="BLOCK=128, num_warps=4, maxnreg=128", regs_per_thread=128
    )
    flags, _ = report_flags((amd, nv))
    [flag] = [f for f in flags if f.kind == "maxnreg_ignored"]
    assert flag.vendor == "amd"
    assert "maxnreg=128, which AMD does not honour" in flag.message
    assert "the compile used 212 VGPRs per thread (cap 512)" in flag.message
    assert flag.severity == "warning"
    refused = amd.model_copy(update={"launch_refused": "KeyError: maxnreg"})
    [flag] = [f for f in report_flags((refused,))[0] if f.kind == "maxnreg_ignored"]
    assert (
        flag.severity == "error"
        and "refuses the launch on gfx942 (KeyError: maxnreg)" in flag.message
    )


def _row(side: str, config: str, *layouts: TritonLayout, target: str = "sm_90") -> CompilerRow:
    return CompilerRow(
        kernel="softmax",
        side=side,  # type: ignore[arg-type]
        language="triton",
        vendor="nvidia",
        target=target,
        config=config,
        layouts=layouts,
    )


def test_the_job_summary_shows_new_layouts_and_the_warps_a_reduction_spans():
    rows = (
        _row("old", "softmax_kernel threads=256"),  # the C++ side: no layouts
        _row("new", "BLOCK_SIZE=1024, num_warps=4", _reduce(4)),
        _row("new", "BLOCK_SIZE=4096, num_warps=16", _reduce(16)),
    )
    full = "\n".join(_compiler(CompilerEvidence(rows=rows), full=True))
    assert (
        "- softmax on sm\\_90, new: reduce `blocked sizePerThread [8] | [32] threadsPerWarp "
        "[32] warpsPerCTA [4] | [16] order [0]` (2 of 2 variants; a reduction spans up to 16 "
        "warps, so it meets in shared memory)"
    ) in full
    # the comment points there
    text = _compiler(CompilerEvidence(rows=rows), full=False)
    assert "blocked" not in "\n".join(text) and text[-1].endswith(", with its layouts.")
    assert "| softmax | new | sm\\_90 | BLOCK\\_SIZE=4096, num\\_warps=16 | reduce 4096:" in full
    assert "(reduction over 16 warps)" in full


def test_what_changed_between_two_triton_sides():
    same = (_row("old", "A=1", _reduce(4)), _row("new", "A=1", _reduce(4)))
    text = "\n".join(_compiler(CompilerEvidence(rows=same), full=True))
    assert "- softmax on sm\\_90: the same layouts old and new (1 distinct)" in text
    comment = "\n".join(_compiler(CompilerEvidence(rows=same), full=False))
    assert "- softmax" not in comment  # compiled the same: nothing to say
    moved = (_row("old", "A=1", _reduce(4)), _row("new", "A=2", _reduce(8)))
    text = "\n".join(_compiler(CompilerEvidence(rows=moved), full=True))
    assert "distinct layouts 1 old → 1 new; new: reduce `blocked sizePerThread [16]" in text
    assert "; gone: reduce `blocked sizePerThread [32]" in text
    comment = "\n".join(_compiler(CompilerEvidence(rows=moved), full=False))
    assert "- softmax on sm\\_90: layouts changed (1 new, 1 gone)" in comment
