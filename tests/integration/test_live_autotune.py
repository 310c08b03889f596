"""The autotune lists read where the code is imported: a list built at import time (a product,
a vendor conditional) comes back from the compile worker for old and new, and the review says
how it changed."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from bot.contracts.evidence import (
    MAX_CONFIGS,
    MAX_LABEL,
    AutotuneEvidence,
    CompilerEvidence,
    Evidence,
)
from bot.review.render import _compiler
from checks.compiler.evidence import compiler_evidence
from checks.compiler.run import KernelSpec, build_compiler_report

KERNEL = """
import itertools

import triton
import triton.language as tl

# picked at import: the worker makes the target the active GPU first
STAGES = 2 if triton.runtime.driver.active.get_current_target().backend == "hip" else 3
CONFIGS = [
    triton.Config({"BLOCK": block}, num_warps=warps, num_stages=STAGES)
    for block, warps in itertools.product(BLOCKS, WARPS)
]


@triton.autotune(configs=CONFIGS, key=["n"])
@triton.heuristics({"EVEN": lambda args: args["n"] % 1024 == 0})
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


def bench(shape, dtype, *, device="cuda", seed=0):
    import torch

    (n,) = shape
    x = torch.empty(n, dtype=getattr(torch, dtype), device=device)
    out = torch.empty_like(x)

    def fn():
        scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
        return out

    return {"fn": fn}
"""

SPEC = KernelSpec(name="scale", bench="scaler:bench", shapes=((4096,),), dtypes=("float32",))


def _side(root: Path, blocks: str, warps: str, cache: Path):
    root.mkdir()
    (root / "scaler.py").write_text(f"BLOCKS = {blocks}\nWARPS = {warps}\n" + KERNEL)
    return build_compiler_report(root, [SPEC], ["sm_90", "gfx942"], cache_dir=cache, jobs=1)


@pytest.mark.slow
def test_a_list_computed_at_import_is_read_for_old_and_new(tmp_path: Path):
    old = _side(tmp_path / "old", "(256, 512, 1024)", "(4, 8)", tmp_path / "cache")
    new = _side(tmp_path / "new", "(512, 1024, 2048, 4096)", "(4, 8)", tmp_path / "cache")
    by_target = {a.targets[0]: a for a in old.autotune}
    assert set(by_target) == {"sm_90", "gfx942"}
    nvidia = by_target["sm_90"]
    assert nvidia.function == "scale_kernel" and nvidia.kernel == "scale"
    assert nvidia.configs[0] == "BLOCK=256, num_warps=4, num_stages=3"
    assert by_target["gfx942"].configs[0] == "BLOCK=256, num_warps=4, num_stages=2"
    assert len(nvidia.configs) == 6 and nvidia.key == ("n",)
    assert nvidia.heuristics == ("EVEN",) and not nvidia.pruned and nvidia.best == {}

    evidence = compiler_evidence(old, new)
    assert sorted((a.side, len(a.configs)) for a in evidence.autotune) == [
        ("new", 8),
        ("new", 8),
        ("old", 6),
        ("old", 6),
    ]
    text = "\n".join(_compiler(evidence, full=False))
    assert "scale on gfx942: autotune configs, read on the runner: old 6 → new 8" in text
    assert "scale on sm\\_90: autotune configs, read on the runner: old 6 → new 8" in text
    assert "(4 added, 2 removed)" in text and "`@triton.heuristics` sets EVEN" in text
    # the comment counts them; the job summary names each config added and removed
    full = "\n".join(_compiler(evidence, full=True))
    assert "added: `BLOCK=2048, num_warps=4, num_stages=3`" in full
    assert "removed: `BLOCK=256, num_warps=4, num_stages=3`, `BLOCK=256, num_warps=8" in full


def _live(side: str, configs: tuple[str, ...], targets=("sm_90",), **kw) -> AutotuneEvidence:
    return AutotuneEvidence(
        kernel="mm", function="mm_kernel", side=side, targets=targets, configs=configs, **kw
    )


def test_same_lists_say_so_and_targets_that_agree_share_a_line():
    both = ("sm_90", "gfx942")
    ce = CompilerEvidence(
        autotune=(
            _live("old", ("A=1, num_warps=4",), both),
            _live("new", ("A=1, num_warps=4",), both),
        )
    )
    assert _compiler(ce, full=True) == [
        "- mm: autotune configs, read on the runner: 1, the same old and new",
        "",
    ]
    assert _compiler(ce, full=False) == []  # the comment says only what changed


def test_a_list_on_one_side_only_and_untrusted_text_escaped():
    ce = CompilerEvidence(
        autotune=(_live("new", ("A=1 <b>`x`</b>",), best={"(64,)": "A=1"}, pruned=True),)
    )
    (line, _) = _compiler(ce, full=False)
    assert line.startswith(
        "- mm: autotune configs, read on the runner: new 1 (no autotuner on the old side)"
    )
    assert "pruned at run time" in line and "best: `(64,)` → `A=1`" in line
    assert "<b>" not in line


def test_results_files_bound_the_lists():
    with pytest.raises(ValidationError):
        _live("new", tuple(f"A={i}" for i in range(MAX_CONFIGS + 1)))
    with pytest.raises(ValidationError):
        _live("new", ("A" * (MAX_LABEL + 1),))
    merged = Evidence(compiler=CompilerEvidence(autotune=(_live("old", ("A=1",)),))).merge(
        Evidence(compiler=CompilerEvidence(autotune=(_live("new", ("A=2",)),)))
    )
    assert merged.compiler is not None and [a.side for a in merged.compiler.autotune] == [
        "old",
        "new",
    ]


@pytest.mark.slow
@pytest.mark.xdist_group("fixture-demo")  # beside test_demo's: one cold compile for both
def test_the_fixture_matmul_retune_shows_its_real_lists(tmp_path: Path) -> None:
    from bot.cli import main

    out = tmp_path / "review.md"
    assert main(["demo", "--full", "--out", str(out)]) == 0  # the job summary quotes the lists
    review = out.read_text()
    # the Hopper retune: BLOCK_SIZE_K 32 -> 64 on NVIDIA, the AMD list untouched
    assert (
        "- matmul on sm\\_90: autotune configs, read on the runner: old 8 → new 10; added: "
        "`BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, num_warps=8, "
        "num_stages=3`"
    ) in review
    assert "removed: `BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=32" in review
    assert (
        "- matmul on gfx90a, gfx942: autotune configs, read on the runner: 6, the same old and new"
    ) in review


def test_the_report_job_keeps_the_lists_of_a_results_file():
    from bot.contracts.evidence import CompilerRow
    from bot.contracts.results import ResultsFile
    from bot.jobs.report import merge_evidence

    row = CompilerRow(
        kernel="mm", side="new", language="triton", vendor="nvidia", target="sm_90", config="A=1"
    )
    compiler = CompilerEvidence(rows=(row,), autotune=(_live("new", ("A=1",)),))
    results = ResultsFile(
        head_sha="a" * 40, base_sha="b" * 40, vendor="nvidia", evidence=Evidence(compiler=compiler)
    )
    text = results.model_dump_json()
    merged = merge_evidence([ResultsFile.model_validate_json(text)], vendors=("nvidia",))
    assert merged.compiler is not None and merged.compiler.autotune == compiler.autotune
    hostile = text.replace('"configs":["A=1"]', '"configs":["' + "A" * (MAX_LABEL + 1) + '"]')
    with pytest.raises(ValidationError):
        ResultsFile.model_validate_json(hostile)
