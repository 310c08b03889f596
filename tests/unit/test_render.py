from __future__ import annotations

import re

from bot.contracts.evidence import (
    CompilerEvidence,
    CompilerFlag,
    CompilerRow,
    Evidence,
    NotRun,
    ShapeLine,
    SweepEvidence,
)
from bot.contracts.repo import OwnerFact, PerfGateFact, PinFact, RepoConditions
from bot.contracts.review import (
    ChangeFinding,
    ChangeLine,
    PartATable,
    Requirements,
    ReviewContext,
)
from bot.forge.sticky import MAX_COMMENT_CHARS, fit_body
from bot.review import chart
from bot.review.chart import LIMIT, SHORT
from bot.review.render import TABLE_LISTED, code, esc, render_comment
from bot.review.verdict import decide
from tests.golden_util import check_golden
from tests.unit.test_verdict import REWRITE_KEPT

CTX = ReviewContext(
    repository="acme/ops",
    base_sha="a" * 40,
    head_sha="b" * 40,
    policy_source=".github/kernel-review.toml",
    deployment="cli",
    first_call_budget_ms=3000,
    vendors=("nvidia", "amd"),
)
CHANGES = [
    REWRITE_KEPT,
    ChangeLine(
        kernel="matmul",
        kind="tuning",
        old_language="triton",
        new_language="triton",
        old_paths=("ops/matmul.py",),
        new_paths=("ops/matmul.py",),
    ),
]
REPO = RepoConditions(
    owners=(OwnerFact(path="ops/softmax.py", owners=("@gpu-team",), source="policy"),),
    pins=(
        PinFact(package="triton", spec=">=3.6,<3.7", source="pyproject.toml:7", kind="range"),
        PinFact(package="torch", spec=None, source=None, kind="absent"),
    ),
    perf_gate=PerfGateFact(
        workflow=None, detail="no workflow runs kernel-review (.github/workflows/ci.yml)"
    ),
)
SWEEP = SweepEvidence(
    vendor="nvidia",
    gpu="NVIDIA H200",
    shapes=(
        ShapeLine(
            kernel="softmax",
            shape=(4096, 4096),
            dtype="float16",
            verdict="SAME",
            ratio=1.012,
            ci_low=1.004,
            ci_high=1.02,
            base_us=41.2,
            head_us=41.7,
        ),
        ShapeLine(
            kernel="softmax",
            shape=(1, 781),
            dtype="float16",
            verdict="SLOWER",
            ratio=1.31,
            ci_low=1.25,
            ci_high=1.37,
            base_us=2.1,
            head_us=2.75,
        ),
    ),
    geomean_ratio=1.02,
    geomean_ci=(1.01, 1.03),
    weighted=True,
)
COMPILER = CompilerEvidence(
    rows=(
        CompilerRow(
            kernel="matmul",
            side="new",
            language="triton",
            vendor="amd",
            target="gfx942",
            config="BLOCK_M=256 BLOCK_N=256 warps=4",
            regs_per_thread=512,
            spill_bytes=180,
            shared_bytes=65536,
            occupancy="1 wave/SIMD",
            matrix_instr="v_mfma_f32_32x32x8_f16",
            load_bits_max=128,
        ),
    ),
    flags=(
        CompilerFlag(
            severity="warning",
            kernel="matmul",
            vendor="amd",
            target="gfx942",
            message="spills 45 VGPRs (180 bytes)",
        ),
    ),
    configs_differ_per_vendor={"matmul": False},
)
PART_A = (
    PartATable(
        kernel="softmax",
        old_label="CUDA + HIP",
        new_label="Triton",
        rows=(("Lines in the kernel body", "38", "12"), ("Explicit barriers", "4", "0")),
    ),
)


def test_review_comment_golden():
    ev = Evidence(
        sweeps=(SWEEP,),
        compiler=COMPILER,
        repo=REPO,
        not_run=(NotRun(check="sweep", vendor="amd", reason="no amd runner is registered"),),
    )
    v = decide(CHANGES, Requirements(deployment="cli", first_call_budget_ms=3000), ev)
    text = render_comment(v, CTX, ev, PART_A)
    check_golden("review_request_changes.md", text)
    assert text.startswith("## ⛔ Kernel review: Request changes")
    assert text.count("<details>") == text.count("</details>")
    assert "xychart-beta" in text


def test_no_kernel_changes_comment_is_short():
    text = render_comment(decide([], Requirements(), Evidence()), CTX)
    assert "No kernel changes" in text and "Before merge" not in text


def test_user_text_is_escaped():
    assert esc("<!-- x -->") == "&lt;!-- x --&gt;"
    assert "@\u200b" in esc("@everyone")
    assert esc("[link](javascript:x)").startswith("\\[link\\]")
    assert code("a`b\nc") == "``a`b c``"
    change = CHANGES[0].model_copy(
        update={"kernel": "<img src=x onerror=alert(1)>", "kept_how": "<!--"}
    )
    text = render_comment(decide([change], Requirements(), Evidence(repo=REPO)), CTX)
    assert "<img" not in text and "<!--" not in text


def test_long_comment_is_truncated_with_a_pointer_and_balanced_blocks():
    shapes = tuple(
        ShapeLine(
            kernel=f"k{i}",
            shape=(i + 1, 3),
            dtype="float32",
            verdict="SLOWER",  # the comment's table lists the shapes that did not hold
            ratio=1.2,
            base_us=1.0,
            head_us=1.0,
        )
        for i in range(3000)
    )
    ev = Evidence(sweeps=(SWEEP.model_copy(update={"shapes": shapes}),), repo=REPO)
    v = decide(CHANGES, Requirements(), ev)
    full = render_comment(v, CTX, ev, full=True)
    assert len(full) > MAX_COMMENT_CHARS
    # the comment lists no long table of shapes (its chart, and the job summary, have them)
    assert len(render_comment(v, CTX, ev)) < 10_000
    text, _ = fit_body(full, artifact_name="kernel-review-results")
    assert len(text) <= MAX_COMMENT_CHARS
    assert "truncated" in text and "kernel-review-results" in text
    assert text.count("<details>") == text.count("</details>")
    assert text.count("```") % 2 == 0


def test_the_comment_folds_compiler_variants_and_the_summary_lists_them():
    def row(config: str, regs: int, spill: int, shared: int, occ: str, error: str | None = None):
        return CompilerRow(
            kernel="matmul",
            side="new",
            language="triton",
            vendor="nvidia",
            target="sm_90",
            config=config,
            regs_per_thread=None if error else regs,
            spill_bytes=None if error else spill,
            shared_bytes=None if error else shared,
            occupancy=None if error else occ,
            matrix_instr=None if error else "wgmma.mma_async.m64n128k16.f32.bf16.bf16",
            load_bits_max=None if error else 128,
            error=error,
        )

    rows = (
        row("BM=128 DIVISOR=16", 146, 0, 196608, "8 warps/SM (12%)"),
        row("BM=128 DIVISOR=8", 222, 24, 131072, "4 warps/SM (6%)"),
        row("BM=64 DIVISOR=16", 71, 0, 65536, "12 warps/SM (19%)"),
        row("BM=256 DIVISOR=16", 0, 0, 0, "", error="out of resource: shared memory"),
    )
    ev = Evidence(compiler=CompilerEvidence(rows=rows))
    v = decide(CHANGES, Requirements(deployment="cli", first_call_budget_ms=3000), ev)
    comment = render_comment(v, CTX, ev, PART_A)
    summary = render_comment(v, CTX, ev, PART_A, full=True)
    # no old side to compare with: the comment says so, and what failed to compile
    assert "- new side only, nothing to compare: matmul on sm\\_90" in comment
    assert (
        "- matmul on sm\\_90: 1 of 4 variants failed to compile (out of resource: shared memory)"
        in comment
    )
    assert "| matmul | new | sm\\_90 |" not in comment  # the variants: the job summary's
    assert "| matmul | new | sm\\_90 |" in summary
    assert "wgmma.mma\\_async" not in comment and "wgmma.mma\\_async" in summary
    for config in ("BM=128 DIVISOR=16", "BM=128 DIVISOR=8", "BM=64 DIVISOR=16"):
        assert config not in comment and config in summary
    assert "failed: out of resource: shared memory" in summary


def test_the_chart_keeps_the_cases_furthest_from_one_and_names_dtypes():
    shapes = tuple(
        ShapeLine(
            kernel="vector_add",
            shape=(1000 + i,),
            dtype="bfloat16" if i % 2 else "float32",
            verdict="SAME",
            ratio=1.0 + (0.5 if i == 7 else 0.001 * i),
            base_us=1.0,
            head_us=1.0,
        )
        for i in range(50)
    )
    sweep = SWEEP.model_copy(update={"shapes": shapes})
    ev = Evidence(sweeps=(sweep,))
    v = decide(CHANGES, Requirements(deployment="cli", first_call_budget_ms=3000), ev)
    text = render_comment(v, CTX, ev, PART_A)
    chart = text[text.index("xychart-beta") :]
    assert '"vector_add on NVIDIA H200: head / base"' in chart  # one chart per kernel
    axis = next(line for line in chart.splitlines() if "x-axis" in line)
    assert axis.count('"') == 2 * SHORT  # the comment's chart; the job summary's has LIMIT
    assert '"1007 bf16"' in axis  # the outlier is kept
    assert '"1000 f32"' not in axis  # the closest to 1.0 are left out
    assert f"({SHORT} of its 50 shapes, the furthest from 1)" in text  # every one held
    summary = render_comment(v, CTX, ev, PART_A, full=True)
    axis = next(line for line in summary.splitlines() if "x-axis" in line)
    assert axis.count('"') == 2 * LIMIT


def test_no_number_in_the_review_runs_to_dozens_of_digits():
    wild = ShapeLine(
        kernel="softmax", shape=(1823, 781), dtype="float16", verdict="INCONCLUSIVE",
        ratio=3.5, ci_low=1e-30, ci_high=1e220, base_us=1e30, head_us=3.5e30,
        base_of_roofline=1e40, head_of_roofline=0.5,
    )  # fmt: skip
    wilder = wild.model_copy(update={"shape": (4096, 4096), "ratio": 1e200, "head_us": 1e230})
    huge = CompilerRow(
        kernel="softmax", side="new", language="triton", vendor="nvidia", target="sm_90",
        config="BLOCK=1024", regs_per_thread=2**52, spill_bytes=2**52, shared_bytes=2**52,
    )  # fmt: skip
    ev = Evidence(
        sweeps=(SWEEP.model_copy(update={"shapes": (wild, wilder)}),),
        compiler=CompilerEvidence(rows=(huge,)),
    )
    v = decide(CHANGES, Requirements(deployment="cli", first_call_budget_ms=3000), ev)
    for text in (render_comment(v, CTX, ev, PART_A), render_comment(v, CTX, ev, full=True)):
        assert re.search(r"\d{12}", text) is None, re.search(r".{40}\d{12}.{10}", text)
        assert "1.0×10^220x slower" in text  # the bound, still said, in a power of ten
        assert "1.0×10^30" in text  # the base's time


def test_a_finding_names_its_place_once() -> None:
    """A finding whose message already says where it is (the replaced C++'s shuffles, each at
    its line) is not prefixed with the same place again; one that does not say it is."""
    said = ChangeFinding(
        kind="lane_primitives",
        path="csrc/softmax.cu",
        line=58,
        message="the replaced C++ uses __shfl_xor_sync() (csrc/softmax.cu:58)",
    )
    unsaid = said.model_copy(update={"kind": "async_timing", "message": "times a launch"})
    changes = [CHANGES[0].model_copy(update={"findings": (said, unsaid)}), *CHANGES[1:]]
    text = render_comment(decide(changes, Requirements(), Evidence()), CTX)
    assert text.count("csrc/softmax.cu:58") == 2  # once in each line
    assert (
        "- **softmax**: the replaced C++ uses \\_\\_shfl\\_xor\\_sync() (csrc/softmax.cu:58)"
        in text
    )
    assert "- **softmax** (`csrc/softmax.cu:58`): times a launch" in text


def test_the_worst_shapes_say_where_the_rest_are() -> None:
    """Past the table's length the comment draws only a chart's bars per kernel: a shape that
    did not hold and is not drawn is in the job summary, and the count says so."""
    slow = tuple(
        SWEEP.shapes[1].model_copy(update={"shape": (1 + i, 781), "ratio": 1.2 + 0.01 * i})
        for i in range(chart.SHORT + 2)
    )
    few = slow[:TABLE_LISTED]
    for shapes, where in ((few, "under Per-shape results"), (slow, "in the job summary")):
        ev = Evidence(sweeps=(SWEEP.model_copy(update={"shapes": shapes}),))
        v = decide(CHANGES, Requirements(deployment="cli", first_call_budget_ms=3000), ev)
        more = len(shapes) - 3
        assert f"95% CI; {more} more {where}):" in render_comment(v, CTX, ev, PART_A)
        full = render_comment(v, CTX, ev, PART_A, full=True)
        assert f"95% CI; {more} more under Per-shape results):" in full


def test_a_failed_shape_compares_no_times_in_the_table() -> None:
    """A wrong result's head time and roofline say nothing (its interval column is "—"
    already): before, the row read "10.00 | 10.00 | — | 80% → 80% | WRONG"."""
    wrong = SWEEP.shapes[0].model_copy(
        update={
            "verdict": "WRONG",
            "base_us": 10.0,
            "head_us": 10.0,
            "base_of_roofline": 0.8,
            "head_of_roofline": 0.8,
            "detail": "max abs error 0.5",
        }
    )
    ev = Evidence(sweeps=(SWEEP.model_copy(update={"shapes": (wrong,)}),))
    v = decide(CHANGES, Requirements(deployment="cli", first_call_budget_ms=3000), ev)
    text = render_comment(v, CTX, ev, PART_A)
    assert "| softmax | 4096x4096 | f16 | 10.00 | — | — | — | WRONG |" in text


def test_a_compiler_flag_a_condition_already_says_is_left_to_the_condition() -> None:
    """Before, the comment said "vector_add: one config list serves both vendors" under both
    vendors and again as a Part C warning; the job summary keeps the warning, with its
    numbers, and a flag no condition says stays in the comment. The condition names the flags
    it says by kernel and kind, which the comment compares: a flag worded otherwise is still
    left to it, and one of another kind is not, whatever its words."""
    from bot.review.render import _compiler

    def flag(kind: str, message: str) -> CompilerFlag:
        return COMPILER.flags[0].model_copy(
            update={"kind": kind, "kernel": "vector_add", "target": "gfx90a", "message": message}
        )

    shared = flag(
        "shared_config_list",
        "vector_add: NVIDIA and AMD share its configs; num_warps=8 is 256 threads on NVIDIA "
        "and 512 on AMD",
    )
    lookalike = flag("occupancy_lower", "vector_add: one config list serves both vendors, tiles")
    ce = COMPILER.model_copy(
        update={
            "flags": (shared, lookalike, COMPILER.flags[0]),
            "configs_differ_per_vendor": {"vector_add": False},
        }
    )
    req = Requirements(vendors=("nvidia", "amd"), deployment="cli", first_call_budget_ms=3000)
    v = decide(CHANGES, req, Evidence(sweeps=(SWEEP,), compiler=ce))
    said = {x for c in v.conditions for x in c.flags}
    assert said == {("vector_add", "shared_config_list")}
    (vendors,) = [c for c in v.conditions if c.flags]
    assert any(x.startswith("vector_add: one config list serves both") for x in vendors.evidence)
    comment = "\n".join(_compiler(ce, full=False, conditions=said))
    assert "share its configs" not in comment and "spills 45 VGPRs" in comment
    assert "one config list serves both vendors, tiles" in comment
    summary = "\n".join(_compiler(ce, full=True, conditions=said))
    assert "num\\_warps=8 is 256 threads on NVIDIA and 512 on AMD" in summary
    whole = render_comment(v, CTX, Evidence(compiler=ce))
    assert "share its configs" not in whole and "serves both vendors, tiles" in whole


def test_an_older_compiler_flag_has_its_kind_read_from_its_words_at_load() -> None:
    """A flag written before its kind was kept (the key absent) is a shared config list where
    its words said so, as the comment told it apart then; one written with the key is as said."""
    older = COMPILER.flags[0].model_dump(exclude={"kind"})
    assert CompilerFlag.model_validate(older).kind is None
    words = {**older, "kernel": "k", "message": "k: one config list serves both vendors; x"}
    assert CompilerFlag.model_validate(words).kind == "shared_config_list"
    assert CompilerFlag.model_validate({**words, "kind": None}).kind is None


def _occupied(side: str, config: str, resident: int, fraction: float) -> CompilerRow:
    """A compiled variant whose occupancy is said in words no reader parses back."""
    return CompilerRow(
        kernel="matmul",
        side=side,  # type: ignore[arg-type]
        language="triton",
        vendor="nvidia",
        target="sm_90",
        config=config,
        occupancy=f"{fraction:.1%} of the SM's warps ({resident} resident)",
        occupancy_resident=resident,
        occupancy_unit="warps/SM",
        occupancy_fraction=fraction,
    )


def test_the_occupancy_of_compiled_variants_is_read_from_its_numbers_not_its_words():
    rows = (
        _occupied("old", "BM=64", 12, 0.1875),
        _occupied("old", "BM=128", 8, 0.125),
        _occupied("new", "BM=64", 12, 0.1875),
        _occupied("new", "BM=128", 4, 0.0625),
        _occupied("new", "BM=256", 2, 0.03125),
    )
    ev = Evidence(compiler=CompilerEvidence(rows=rows))
    v = decide(CHANGES, Requirements(deployment="cli", first_call_budget_ms=3000), ev)
    comment = render_comment(v, CTX, ev, PART_A)
    # lowest first, each end's count and percent, the unit said once
    assert "occupancy 8–12 warps/SM (12–19%) → 2–12 warps/SM (3–19%)" in comment


def test_an_older_compiler_row_has_its_occupancy_numbers_read_from_its_words_at_load():
    older = {
        "kernel": "matmul",
        "side": "new",
        "language": "triton",
        "vendor": "nvidia",
        "target": "sm_90",
        "config": "BM=64",
        "occupancy": "16 warps/SM (25%)",
    }
    row = CompilerRow.model_validate(older)
    assert (row.occupancy_resident, row.occupancy_unit, row.occupancy_fraction) == (
        16,
        "warps/SM",
        0.25,
    )
    unit_only = CompilerRow.model_validate({**older, "occupancy": "1 wave/SIMD"})
    assert unit_only.occupancy_fraction is None and unit_only.occupancy_resident is None
    # a row written with the numbers is taken as it says, whatever its words
    written = CompilerRow.model_validate({**older, "occupancy_fraction": None})
    assert written.occupancy_fraction is None and written.occupancy_unit == ""


def test_the_comment_leaves_out_an_autotune_list_by_its_sides_not_by_its_line():
    """An autotune list the same old and new, with nothing more to say, is the job summary's
    only; whether it is comes from the two lists, never from how the line ends."""
    from bot.contracts.evidence import AutotuneEvidence
    from bot.review.render import _compiler

    def live(side: str, configs: tuple[str, ...], **kw) -> AutotuneEvidence:
        return AutotuneEvidence(
            kernel="mm", function="f", side=side, targets=("sm_90",), configs=configs, **kw
        )

    same = CompilerEvidence(autotune=(live("old", ("A=1",)), live("new", ("A=1",))))
    assert _compiler(same, full=False) == []
    assert _compiler(same, full=True)[0].endswith(": 1, the same old and new")
    # changed, though its line ends as an unchanged one's does (a heuristic's label says so)
    odd = "BLOCK, the same old and new"
    changed = CompilerEvidence(
        autotune=(live("old", ("A=1",)), live("new", ("A=2",), heuristics=(odd,)))
    )
    (line, _) = _compiler(changed, full=False)
    assert line.startswith("- mm: autotune configs, read on the runner: old 1 → new 1")
    # the same configs under another key: a change
    keyed = CompilerEvidence(
        autotune=(live("old", ("A=1",), key=("n",)), live("new", ("A=1",), key=("m",)))
    )
    (line, _) = _compiler(keyed, full=False)
    assert line.endswith("1, the same old and new; key (n) → (m)")


def test_the_comment_leaves_each_shapes_own_line_to_the_worst_shapes_by_what_it_is_about():
    """The sweep condition's lines about one shape are the worst shapes' to say in the comment;
    which they are comes from the condition, not from how a line reads (a scalar's line has no
    dimensions to read)."""
    shapes = (
        ShapeLine(kernel="softmax", shape=(), dtype="float16", verdict="WRONG", detail="x"),
        ShapeLine(kernel="softmax", shape=(4096,), dtype="float16", verdict="WRONG"),
        ShapeLine(kernel="softmax", shape=(8,), dtype="float16", verdict="SAME", ratio=1.0),
    )
    ev = Evidence(sweeps=(SweepEvidence(vendor="nvidia", gpu="GPU", shapes=shapes),))
    req = Requirements(vendors=("nvidia",), deployment="cli", first_call_budget_ms=3000)
    v = decide(CHANGES, req, ev)
    sweep_condition = v.conditions[0]
    assert sweep_condition.per_shape == (
        "softmax  float16: WRONG (x)",
        "softmax 4096 float16: WRONG",
    )
    assert set(sweep_condition.per_shape) <= set(sweep_condition.evidence)
    comment = render_comment(v, CTX, ev, PART_A)
    summary = render_comment(v, CTX, ev, PART_A, full=True)
    for line in sweep_condition.per_shape:
        assert f"   - {esc(line)}" not in comment and f"   - {esc(line)}" in summary
    assert "   - nvidia (GPU): 3 shapes" in comment
