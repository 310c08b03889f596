"""Golden comments for each of the three verdicts, with GPU evidence and without.

The evidence is hand-made (as in test_render.py), so these pin the decision and the layout
together: any change to a condition's wording or to the comment's shape shows up as a diff.
"""

from __future__ import annotations

import pytest

from bot.contracts.evidence import (
    CompilerRow,
    Evidence,
    FirstCallEvidence,
    NotRun,
    ShapeLine,
    SweepEvidence,
)
from bot.contracts.repo import OwnerFact, PerfGateFact, PinFact, RepoConditions
from bot.contracts.review import Requirements
from bot.review.render import esc, render_comment
from bot.review.verdict import decide
from tests.golden_util import check_golden
from tests.unit.test_render import CHANGES, COMPILER, CTX, PART_A

REQ = Requirements(deployment="cli", first_call_budget_ms=3000)
REPO_OK = RepoConditions(
    owners=(
        OwnerFact(path="ops/softmax.py", owners=("@gpu-team",), source="CODEOWNERS"),
        OwnerFact(path="ops/matmul.py", owners=("@gpu-team",), source="CODEOWNERS"),
    ),
    pins=(
        PinFact(package="triton", spec="==3.6.0", source="pyproject.toml:7", kind="exact"),
        PinFact(package="torch", spec="==2.13.0", source="pyproject.toml:8", kind="exact"),
    ),
    perf_gate=PerfGateFact(
        workflow=".github/workflows/kernel-review.yml",
        detail="kernel-review runs in .github/workflows/kernel-review.yml",
    ),
)
REPO_OPEN = REPO_OK.model_copy(
    update={
        "pins": (
            PinFact(package="torch", spec=">=2.4", source="requirements.txt:1", kind="unbounded"),
        )
    }
)
COMPILER_OK = COMPILER.model_copy(
    update={"flags": (), "configs_differ_per_vendor": {"matmul": True}}
)
COMPILER_FAILS = COMPILER_OK.model_copy(
    update={
        "flags": (
            COMPILER.flags[0].model_copy(
                update={
                    "severity": "error",
                    "message": "BLOCK_M=256 BLOCK_N=256 warps=4 needs 131072 bytes of LDS; "
                    "gfx942 has 65536",
                    "path": "ops/matmul.py",
                    "line": 31,
                }
            ),
        )
    }
)


def _shape(kernel: str, shape: tuple[int, ...], dtype: str, verdict: str, ratio: float, **kw):
    kw.setdefault("tolerance", 0.03)
    kw.setdefault("base_of_roofline", 0.8)
    kw.setdefault("head_of_roofline", round(0.8 / ratio, 3))
    return ShapeLine(
        kernel=kernel,
        shape=shape,
        dtype=dtype,
        verdict=verdict,  # type: ignore[arg-type]
        ratio=ratio,
        ci_low=ratio - 0.01,
        ci_high=ratio + 0.01,
        base_us=10.0,
        head_us=round(10.0 * ratio, 2),
        **kw,
    )


def _sweep(vendor: str, gpu: str, *shapes: ShapeLine) -> SweepEvidence:
    return SweepEvidence(
        vendor=vendor,  # type: ignore[arg-type]
        gpu=gpu,
        shapes=shapes,
        geomean_ratio=0.97,
        geomean_ci=(0.96, 0.98),
        weighted=True,
    )


def _softmax_variant(spec: str, shapes: tuple[str, ...], load_bits: int) -> CompilerRow:
    fields = {"kernel": "softmax", "vendor": "nvidia", "target": "sm_90", "matrix_instr": None}
    fields |= {"config": "BLOCK_SIZE=1024, num_warps=4", "spill_bytes": 0, "shapes": shapes}
    fields |= {"regs_per_thread": 32, "shared_bytes": 16, "occupancy": "64 warps/SM (100%)"}
    fields |= {"specialization": f"out_ptr:*fp16/16, in_ptr:*fp16/16, {spec}"}
    return COMPILER.rows[0].model_copy(update={**fields, "load_bits_max": load_bits})


# softmax in float16 on NVIDIA: the ragged rows compile to a specialization with 16-bit loads
SOFTMAX_VARIANTS = (
    _softmax_variant("n_cols:i32/16", ("4096x4096:float16", "32768x1024:float16"), 128),
    _softmax_variant("n_cols:i32", ("1823x781:float16",), 16),
)
RAGGED_SLOWER = (
    _shape("softmax", (1811, 773), "float16", "SLOWER", 1.62, small_or_ragged=True),
    _shape("softmax", (32768, 1024), "float16", "SAME", 1.0),
    _shape("softmax", (1, 1024), "float16", "SAME", 0.98, small_or_ragged=True),
)

SAME = (
    _shape("softmax", (4096, 4096), "float16", "SAME", 0.99),
    _shape("softmax", (1823, 781), "float16", "FASTER", 0.91, small_or_ragged=True),
    _shape("matmul", (4096, 4096, 4096), "bfloat16", "SAME", 1.01),
)
SWEEPS_OK = (_sweep("nvidia", "NVIDIA H200", *SAME), _sweep("amd", "AMD Instinct MI300X", *SAME))


def _first_calls(cold_ms: float, **kw) -> tuple[FirstCallEvidence, ...]:
    return tuple(
        FirstCallEvidence(
            vendor=vendor,  # type: ignore[arg-type]
            kernel=kernel,
            cold_ms=cold_ms,
            warm_ms=cold_ms / 3,
            autotune_ms=400.0 if kernel == "matmul" else None,
            distinct_keys=2 if kernel == "matmul" else None,
            **kw,
        )
        for vendor in ("nvidia", "amd")
        for kernel in ("softmax", "matmul")
    )


NO_GPU = tuple(
    NotRun(
        check=check,  # type: ignore[arg-type]
        vendor=vendor,  # type: ignore[arg-type]
        reason=f"needs an {name} GPU runner",
        here="this machine has no GPU",
    )
    for vendor, name in (("nvidia", "NVIDIA"), ("amd", "AMD"))
    for check in ("sweep", "first_call")
)
UNMAPPED = (
    CHANGES[1].model_copy(
        update={
            "kernel": "layernorm",
            "old_paths": ("ops/layernorm.py",),
            "new_paths": ("ops/layernorm.py",),
            "mapped": False,
        }
    ),
)

CASES = {
    # every condition met, measured on both vendors
    "review_approve_gpu.md": (
        "approve",
        CHANGES,
        Evidence(
            sweeps=SWEEPS_OK,
            first_calls=_first_calls(1200.0),
            compiler=COMPILER_OK,
            repo=REPO_OK,
        ),
    ),
    # nothing the policy covers changed, so nothing needs a GPU
    "review_approve_no_gpu.md": ("approve", UNMAPPED, Evidence(compiler=COMPILER_OK, repo=REPO_OK)),
    # measured on NVIDIA only, one shape inconclusive, torch not pinned
    "review_approve_with_conditions_gpu.md": (
        "approve_with_conditions",
        CHANGES,
        Evidence(
            sweeps=(
                _sweep(
                    "nvidia",
                    "NVIDIA H200",
                    *SAME,
                    _shape("matmul", (7, 13, 31), "float16", "INCONCLUSIVE", 1.04),
                ),
            ),
            first_calls=_first_calls(900.0)[:2],
            compiler=COMPILER_OK,
            repo=REPO_OPEN,
            not_run=NO_GPU[2:],
        ),
    ),
    # no GPU here: sweep and first call not run, the compiler report is fine
    "review_approve_with_conditions_no_gpu.md": (
        "approve_with_conditions",
        CHANGES,
        Evidence(
            first_calls=_first_calls(2100.0, compile_only=True)[:2],
            compiler=COMPILER_OK,
            repo=REPO_OK,
            not_run=NO_GPU,
        ),
    ),
    # a wrong result on AMD, softmax slower at ragged rows on NVIDIA, a first call over budget
    "review_request_changes_gpu.md": (
        "request_changes",
        CHANGES,
        Evidence(
            sweeps=(
                _sweep(
                    "nvidia",
                    "NVIDIA H200",
                    SAME[0],
                    _shape("softmax", (1823, 781), "float16", "SLOWER", 1.4, small_or_ragged=True),
                    *SAME[2:],
                    *RAGGED_SLOWER,
                ),
                _sweep(
                    "amd",
                    "AMD Instinct MI300X",
                    *SAME[:2],
                    _shape(
                        "matmul",
                        (4096, 4096, 4096),
                        "bfloat16",
                        "WRONG",
                        1.0,
                        detail="max abs error 0.5 > 0.01",
                    ),
                ),
            ),
            first_calls=_first_calls(4100.0, over_budget_shapes=("1x4096x4096:bfloat16",)),
            compiler=COMPILER_OK.model_copy(update={"rows": (*COMPILER.rows, *SOFTMAX_VARIANTS)}),
            repo=REPO_OK,
        ),
    ),
    # no GPU here, but a config does not compile for AMD
    "review_request_changes_no_gpu.md": (
        "request_changes",
        CHANGES,
        Evidence(compiler=COMPILER_FAILS, repo=REPO_OPEN, not_run=NO_GPU),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_review_golden(name: str) -> None:
    decision, changes, evidence = CASES[name]
    verdict = decide(changes, REQ, evidence)
    assert verdict.decision == decision
    check_golden(name, render_comment(verdict, CTX, evidence, PART_A))


def test_review_summary_golden() -> None:
    """The job summary: the comment plus one compiler row per variant."""
    _, changes, evidence = CASES["review_request_changes_gpu.md"]
    verdict = decide(changes, REQ, evidence)
    check_golden(
        "summary_request_changes_gpu.md",
        render_comment(verdict, CTX, evidence, PART_A, full=True),
    )


def test_the_job_summary_says_each_condition_once() -> None:
    """Its first screen has each condition's summary; the condition's own heading below does
    not say it again (before, the sweep's 300-character summary was there twice)."""
    _, changes, evidence = CASES["review_request_changes_gpu.md"]
    verdict = decide(changes, REQ, evidence)
    summary = render_comment(verdict, CTX, evidence, PART_A, full=True)
    for c in verdict.conditions:
        assert summary.count(esc(c.summary)) == 1, c.summary
    # ... and a condition without evidence lines still says what it found, once
    bare = verdict.model_copy(
        update={
            "conditions": tuple(c.model_copy(update={"evidence": ()}) for c in verdict.conditions)
        }
    )
    text = render_comment(bare, CTX, evidence, PART_A, full=True)
    assert all(text.count(esc(c.summary)) == 2 for c in bare.conditions)
