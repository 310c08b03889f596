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
