"""A changed predicate decides which kernels an unchanged launcher runs
(``bot/analysis/reach/predicates``).

Shortened from lmdeploy/pytorch/kernels/cuda/utils.py and blocked_gemm_fp8.py in
InternLM/lmdeploy at c2e715809dc7 and its parent (Apache-2.0; that pull request is in
tests/data/real_prs): ``supports_tma()`` now also requires Triton 3.4, and the launcher, whose
file the diff does not touch, picks the TMA kernel or the other by it.
"""

from __future__ import annotations

from bot.analysis.classify import analyze_diff
from tests.diff_util import file_diff

UTILS = "lmdeploy/pytorch/kernels/cuda/utils.py"
GEMM = "lmdeploy/pytorch/kernels/cuda/blocked_gemm_fp8.py"

BEFORE = """\
import torch


def supports_tma():
    return torch.cuda.get_device_capability()[0] >= 9
"""
AFTER = """\
import torch
from packaging import version

TRITON_VERSION = version.parse(triton.__version__)


def supports_tma():
    ret = torch.cuda.get_device_capability()[0] >= 9
    if not ret:
        return False
    return TRITON_VERSION >= version.parse('3.4.0')
"""
LAUNCHER = """\
import triton
import triton.language as tl


@triton.jit
def _gemm_fp8_tma_kernel(A, B, C, BLOCK_M: tl.constexpr):
    pass


@triton.jit
def _gemm_fp8_kernel(A, B, C, BLOCK_M: tl.constexpr):
    pass


@triton.jit
def _quant_fp8_kernel(A, out, BLOCK: tl.constexpr):
    pass


def quant_fp8(A, out):
    _quant_fp8_kernel[(1,)](A, out, BLOCK=128)


def blocked_gemm_fp8(A, B, C):
    from .utils import supports_tma

    run_tma = supports_tma()
    if run_tma:
        _gemm_fp8_tma_kernel[(1,)](A, B, C, BLOCK_M=128)
    else:
        _gemm_fp8_kernel[(1,)](A, B, C, BLOCK_M=128)
    return C
"""


def _names(after: str) -> list[tuple[str, str]]:
    old = {UTILS: BEFORE, GEMM: LAUNCHER}
    new = {UTILS: after, GEMM: LAUNCHER}
    diff = file_diff(UTILS, BEFORE, after)
    analysis = analyze_diff(diff, old_source=old.get, new_source=new.get, old_files=sorted(old))
    return sorted((c.name, c.kind) for c in analysis.changes)


def test_the_kernels_a_changed_predicate_chooses_between_are_launch_changes():
    assert _names(AFTER) == [("_gemm_fp8_kernel", "launch"), ("_gemm_fp8_tma_kernel", "launch")]


def test_a_predicate_changed_in_a_comment_only_changes_no_launch():
    assert _names(BEFORE.replace("    return", "    # Hopper and later\n    return")) == []


def test_a_changed_function_the_launcher_does_not_test_changes_no_launch():
    other = "\n\ndef warp_size():\n    return 32\n"
    old = {UTILS: BEFORE + other, GEMM: LAUNCHER}
    new = {UTILS: BEFORE + other.replace("32", "64"), GEMM: LAUNCHER}
    diff = file_diff(UTILS, old[UTILS], new[UTILS])
    analysis = analyze_diff(diff, old_source=old.get, new_source=new.get, old_files=sorted(old))
    assert analysis.changes == []


# A predicate the launchers of its own file call, shortened from
# generative_recommenders/ops/triton/triton_jagged.py in meta-recsys/generative-recommenders
# (Apache-2.0): at 456ff31a76d7 (in tests/data/real_prs) ``_should_use_multirow()`` also returns
# true on AMD; at e2471050776f, a later pull request, it also reads a module-level switch.
JAGGED = "generative_recommenders/ops/triton/triton_jagged.py"
JAGGED_BEFORE = """\
import os

import torch
import triton
import triton.language as tl


def _should_use_multirow() -> bool:
    env = os.environ.get("JAGGED_USE_MULTIROW_MI350")
    if env is not None:
        return env == "1"
    return is_sm100_plus()


@triton.jit
def concat_2D_jagged(OffsetsA, ValuesA, Out, D, BLOCK_D: tl.constexpr):
    pass


@triton.jit
def concat_2D_jagged_multirow(OffsetsA, ValuesA, Out, D, BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr):
    pass


@triton.jit
def jagged_dense_broadcast_add_kernel(Offsets, Jagged, Dense, Out, BLOCK_D: tl.constexpr):
    pass


def _triton_concat_2D_jagged_internal(values_a, values_out, max_seq_len, B, offsets_a, D, BLOCK_D):
    use_multirow = _should_use_multirow()
    if use_multirow:

        def grid(meta):
            return (triton.cdiv(max_seq_len, meta["BLOCK_N"]), B)

        concat_2D_jagged_multirow[grid](offsets_a, values_a, values_out, D, BLOCK_D=BLOCK_D)
    else:
        concat_2D_jagged[(max_seq_len, B)](offsets_a, values_a, values_out, D, BLOCK_D=BLOCK_D)


def jagged_dense_broadcast_add(offsets, jagged, dense, out, B, max_seq_len):
    jagged_dense_broadcast_add_kernel[(B, max_seq_len)](offsets, jagged, dense, out, BLOCK_D=64)
"""
JAGGED_AMD = JAGGED_BEFORE.replace(
    "    return is_sm100_plus()",
    "    if torch.version.hip is not None:\n        return True\n    return is_sm100_plus()",
)
JAGGED_SWITCH = JAGGED_AMD.replace(
    "def _should_use_multirow",
    "SPLIT_CONCAT_2D_JAGGED_USE_MULTIROW = None\n\n\ndef _should_use_multirow",
).replace(
    "    return is_sm100_plus()",
    "    if SPLIT_CONCAT_2D_JAGGED_USE_MULTIROW is not None:\n"
    "        return SPLIT_CONCAT_2D_JAGGED_USE_MULTIROW\n"
    "    return is_sm100_plus()",
)


def _own_file(before: str, after: str) -> dict[str, tuple[str, list[str]]]:
    old, new = {JAGGED: before}, {JAGGED: after}
    diff = file_diff(JAGGED, before, after)
    analysis = analyze_diff(diff, old_source=old.get, new_source=new.get, old_files=[JAGGED])
    return {c.name: (c.kind, sorted(b.kind for b in c.branches)) for c in analysis.changes}


def test_a_predicate_called_in_its_own_file_changes_the_launches_it_chooses_between():
    assert _own_file(JAGGED_BEFORE, JAGGED_AMD) == {
        "concat_2D_jagged": ("launch", ["vendor"]),
        "concat_2D_jagged_multirow": ("launch", ["vendor"]),
    }


def test_the_predicates_new_tests_are_the_branches_named():
    # the later pull request adds a module-level switch, no vendor or architecture test
    assert _own_file(JAGGED_AMD, JAGGED_SWITCH) == {
        "concat_2D_jagged": ("launch", []),
        "concat_2D_jagged_multirow": ("launch", []),
    }
