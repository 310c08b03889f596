"""What a toolchain change moved, kernel by kernel, as the review says it."""

from __future__ import annotations

from bot.contracts.evidence import (
    CompilerEvidence,
    CompilerRow,
    Evidence,
    FirstCallEvidence,
    KernelHistory,
    NotRun,
    ShapeLine,
    SideToolchain,
    SweepEvidence,
)
from bot.contracts.review import ChangeLine, Requirements, ReviewContext
from bot.review.render import render_comment
from bot.review.toolchain import history_lines, toolchain_lines
from bot.review.verdict import decide

BUMP = ChangeLine(
    kernel="triton",
    kind="toolchain",
    old_version="==3.5.1",
    new_version="==3.6.0",
    old_paths=("pyproject.toml",),
    new_paths=("pyproject.toml",),
    detail="Triton (project.dependencies)",
)


def _row(
    side: str, config: str, regs: int, spill: int = 0, error: str | None = None
) -> CompilerRow:
    return CompilerRow(
        kernel="matmul", side=side, language="triton", vendor="nvidia", target="sm_90",
        config=config, regs_per_thread=regs, spill_bytes=spill, error=error,
    )  # fmt: skip


def _evidence() -> Evidence:
    rows = []
    for i in range(20):
        spills = i < 12
        rows += [
            _row("old", f"c{i}", 200),
            _row("new", f"c{i}", 255 if spills else 190, 64 if spills else 0),
        ]
    shapes = (
        ShapeLine(kernel="matmul", shape=(8192, 1024, 8192), dtype="bfloat16", verdict="SLOWER", ratio=2.1),
        ShapeLine(kernel="matmul", shape=(1, 4096, 4096), dtype="bfloat16", verdict="SAME", ratio=1.0),
        ShapeLine(kernel="softmax", shape=(1823, 781), dtype="float16", verdict="SAME", ratio=1.01),
    )  # fmt: skip
    return Evidence(
        compiler=CompilerEvidence(rows=tuple(rows)),
        sweeps=(SweepEvidence(vendor="nvidia", gpu="NVIDIA H200", shapes=shapes),),
        first_calls=(
            FirstCallEvidence(vendor="nvidia", kernel="matmul", cold_ms=2100, warm_ms=300, side="base"),
            FirstCallEvidence(vendor="nvidia", kernel="matmul", cold_ms=2900, warm_ms=310, side="head"),
        ),
        toolchains=(
            SideToolchain(side="base", versions={"triton": "3.5.1"}, environment="uv environment ab (triton==3.5.1)"),
            SideToolchain(side="head", versions={"triton": "3.6.0"}, environment="the runner's own"),
        ),
    )  # fmt: skip


def test_each_kernel_says_what_moved_and_the_owner_is_named() -> None:
    lines = toolchain_lines((BUMP,), _evidence(), ["@gpu-team"])
    assert lines[0] == (
        "each side ran under its own toolchain: base: triton 3.5.1 (uv environment ab "
        "(triton==3.5.1)); head: triton 3.6.0 (the runner's own)"
    )
    matmul = lines[1]
    assert matmul.startswith("matmul: 12 of 20 configs now spill on sm_90 under triton 3.6.0; ")
    assert "12 of 20 configs take more registers on sm_90 (up to 200 → 255)" in matmul
    assert "8 of 20 take fewer registers on sm_90" in matmul
    assert "2.1x slower at 8192x1024x8192 bfloat16 on NVIDIA H200" in matmul
    assert "first call cold 2100 → 2900 ms (nvidia)" in matmul
    assert lines[2] == "softmax: no shape of 1 timed slower on NVIDIA H200"
    assert lines[-1] == "re-tuning for triton 3.6.0 is for @gpu-team (policy `owners`)"


def test_no_owner_is_said_and_no_toolchain_change_says_nothing() -> None:
    assert toolchain_lines((BUMP,), Evidence(), [])[-2:] == [
        "no kernel was measured under triton ==3.6.0 yet",
        "no one is named to re-tune: add `owners` to the policy",
    ]
    assert toolchain_lines((ChangeLine(kernel="matmul", kind="tuning"),), _evidence(), ["@x"]) == []


def test_the_comment_shows_the_bump_in_what_changed_and_what_it_moved() -> None:
    ev = _evidence()
    verdict = decide((BUMP,), Requirements(vendors=("nvidia",)), ev)
    ctx = ReviewContext(base_sha="a" * 40, head_sha="b" * 40, owners=("@gpu-team",))
    text = render_comment(verdict, ctx, ev)
    assert "| triton (every kernel) | toolchain `==3.5.1` → `==3.6.0` |" in text
    assert "### What the toolchain change moved" in text
    assert "re-tuning for triton 3.6.0 is for @" in text  # the mention is defused
    assert "matmul on nvidia (base, for comparison), cold 2100 ms" in text
    assert "moves the kernels' toolchain (triton), which affects every kernel" in verdict.why
    assert verdict.decision == "request_changes"  # 2.1x slower at one shape


def test_history_shows_how_a_kernel_time_moved() -> None:
    h = KernelHistory(
        kernel="matmul",
        points=tuple(
            (f"2026-01-0{i}", f"{i}" * 7, us, "triton 3.6.0")
            for i, us in enumerate([100.0, 101.0, 99.0, 150.0, 151.0, 150.5, 149.0], start=1)
        ),
    )
    (line,) = history_lines(Evidence(history=(h,)))
    assert line == (
        "matmul: median µs over its served shapes on the default branch, 2026-01-02 to "
        "2026-01-07: 101.0 → 99.0 → 150.0 → 151.0 → 150.5 → 149.0 (1.48x; last under triton 3.6.0)"
    )


def _variant(side: str, config: str, spec: str, regs: int) -> CompilerRow:
    return CompilerRow(
        kernel="matmul", side=side, language="triton", vendor="amd", target="gfx90a",
        config=config, specialization=spec, regs_per_thread=regs, spill_bytes=0,
    )  # fmt: skip


def test_registers_are_compared_variant_by_variant_not_config_by_config() -> None:
    # 16 configs, each compiled in 3 specializations that differ in registers; old and new
    # compile every variant alike, so nothing moved, whatever order the rows come in
    specs = {"a: *fp16/16, n: i32/16": 96, "a: *fp16/16, n: i32": 104, "a: *bf16/16, n: i32": 128}
    rows = [
        _variant(side, f"c{i}", spec, regs)
        for side in ("old", "new")
        for i in range(16)
        for spec, regs in specs.items()
    ]
    ev = Evidence(compiler=CompilerEvidence(rows=tuple(rows)))
    matmul = toolchain_lines((BUMP,), ev, ["@x"])[0]
    assert "more registers" not in matmul and "fewer registers" not in matmul
    assert matmul == "matmul: compiled alike on gfx90a (48 of 48 variants unchanged)"
    # one variant that did change is counted as one of the 48, with its own old value
    rows[48 + 4] = _variant("new", "c1", "a: *fp16/16, n: i32", 112)
    ev = Evidence(compiler=CompilerEvidence(rows=tuple(rows)))
    matmul = toolchain_lines((BUMP,), ev, [])[0]
    assert matmul == "matmul: 1 of 48 variants take more registers on gfx90a (up to 104 → 112)"


PIN_ADDED = BUMP.model_copy(update={"old_version": None})


def test_pins_added_at_the_versions_both_sides_ran_blame_nothing_on_the_toolchain() -> None:
    same = (
        SideToolchain(side="base", versions={"triton": "3.6.0"}, environment="the runner's own"),
        SideToolchain(side="head", versions={"triton": "3.6.0"}, environment="the runner's own"),
    )
    ev = _evidence().model_copy(update={"toolchains": same})
    lines = toolchain_lines((PIN_ADDED,), ev, ["@gpu-team"])
    assert not any("slower" in x or "spill" in x or "registers" in x for x in lines), lines
    assert lines[-1] == (
        "both sides ran triton 3.6.0: the pin changed nothing that ran, so no difference "
        "measured here is the toolchain's"
    )
    verdict = decide((PIN_ADDED,), Requirements(vendors=("nvidia",)), ev)
    assert "moves the kernels' toolchain" not in verdict.why
    assert "pins triton at the version both sides already ran" in verdict.why
    # the versions each side ran not recorded, and pins that do not fix one version each:
    # nothing measured is put down to the toolchain, and the review says why
    unknown = _evidence().model_copy(update={"toolchains": ()})
    for old, new in ((None, "==3.6.0"), ("(any)", ">=3.6,<3.7"), ("==3.5.1", ">=3.5")):
        pins = BUMP.model_copy(update={"old_version": old, "new_version": new})
        lines = toolchain_lines((pins,), unknown, ["@gpu-team"], KERNELS)
        assert not any("slower" in x or "spill" in x or "registers" in x for x in lines), lines
        assert lines[0] == (
            "the versions each side ran were not recorded, and the triton pin does not fix one "
            "version on each side, so no difference measured here can be put down to the toolchain"
        )
        req = Requirements(vendors=("nvidia",), tolerances=dict.fromkeys(KERNELS, 0.03))
        why = decide((pins,), req, unknown).why
        assert "changes the toolchain pins (triton)" in why and "moves" not in why
        # the kernels it may affect are named once, where the review says what changed
        assert "which may affect every policy kernel (matmul, softmax and vector_add)" in why
    # a package pinned in two places (dependencies and an extra) is named once: torchmd-net's
    # Triton rewrite pins torch in three places and triton in one (H100, 2026-12-05)
    loose = BUMP.model_copy(update={"old_version": None, "new_version": ">=3.6"})
    twice = (loose, loose.model_copy(update={"new_paths": ("requirements.txt",)}))
    assert toolchain_lines(twice, unknown, [], KERNELS)[0].startswith(
        "the versions each side ran were not recorded, and the triton pin does not fix one "
    )
    # two exact pins that differ are a toolchain difference even where nothing was recorded
    assert "12 of 20 configs now spill" in toolchain_lines((BUMP,), unknown, [])[0]


KERNELS = ("matmul", "softmax", "vector_add")


def test_a_toolchain_change_names_the_kernels_it_affects_and_which_moved() -> None:
    ev = _evidence()
    lines = toolchain_lines((BUMP,), ev, ["@gpu-team"], KERNELS)
    assert "moved under triton 3.6.0: matmul (of 2 kernels measured; 3 in the policy)" in lines
    tolerances = dict.fromkeys(KERNELS, 0.03)
    verdict = decide((BUMP,), Requirements(vendors=("nvidia",), tolerances=tolerances), ev)
    assert "which affects every policy kernel (matmul, softmax and vector_add)" in verdict.why
    ctx = ReviewContext(base_sha="a" * 40, head_sha="b" * 40, kernels=KERNELS)
    text = render_comment(verdict, ctx, ev)
    assert "| triton (matmul, softmax, vector\\_add) | toolchain" in text
    assert "every kernel)" not in text


def test_a_kernel_is_not_said_to_be_unmoved_unless_it_was_measured() -> None:
    shapes = (
        ShapeLine(kernel="softmax", shape=(1823, 781), dtype="float16", verdict="INCONCLUSIVE", ratio=1.02),
        ShapeLine(kernel="softmax", shape=(4096, 4096), dtype="float16", verdict="SAME", ratio=1.0),
    )  # fmt: skip
    ev = Evidence(sweeps=(SweepEvidence(vendor="nvidia", gpu="NVIDIA H200", shapes=shapes),))
    lines = toolchain_lines((BUMP,), ev, [], KERNELS)
    assert not any("nothing measured moved" in x for x in lines), lines
    assert (
        "softmax: no shape of 1 timed slower on NVIDIA H200; "
        "1 of 2 shapes inconclusive on NVIDIA H200" in lines
    )
    gap = "not measured under triton ==3.6.0: no sweep, first call or compiler report covered it"
    assert f"matmul: {gap}" in lines
    assert f"vector_add: {gap}" in lines
    # with no sweep at all, the reason it did not run is given
    gpu = NotRun(check="sweep", reason="needs a GPU runner: none is registered")
    lines = toolchain_lines((BUMP,), Evidence(not_run=(gpu,)), [], KERNELS)
    assert (
        "softmax: not measured under triton ==3.6.0: needs a GPU runner: none is registered"
        in lines
    )
