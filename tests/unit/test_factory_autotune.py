"""A kernel autotuned through what a factory of its module makes of it: ``autotune_kernel(
_get_splitk_kernel(n))``, where ``_get_splitk_kernel`` unrolls ``_fwd_kernel_splitK``'s varargs,
gets ``autotune_kernel``'s configs (``scan/triton._applied_autotune``) and the vendor test in
them (``reach/branches.LaunchPath``).

Shortened from xformers/ops/fmha/_triton/splitk_kernels.py in facebookresearch/xformers
(BSD-3-Clause) at c6c0ac31f1b0 (in tests/data/real_prs).
"""

from __future__ import annotations

import ast

from bot.analysis.reach.branches import LaunchPath
from bot.analysis.scan import scan_source

PATH = "xformers/ops/fmha/_triton/splitk_kernels.py"
SOURCE = """\
import sys
from typing import Callable, Dict

import torch
import triton
import triton.language as tl

from xformers.triton.vararg_kernel import unroll_varargs


@triton.jit
def _fwd_kernel_splitK(Q, Out, N_CTX_K, BLOCK_N: tl.constexpr, BOUNDS_CHECKS_N: tl.constexpr):
    start = tl.program_id(0) * BLOCK_N
    offs = start + tl.arange(0, BLOCK_N)
    tl.store(Out + offs, tl.load(Q + offs, mask=offs < N_CTX_K if BOUNDS_CHECKS_N else None))


def gen_config(block_m: int, block_n: int, stages: int, warps: int) -> triton.Config:
    return triton.Config({"BLOCK_M": block_m, "BLOCK_N": block_n}, num_stages=stages, num_warps=warps)


def _get_splitk_kernel(num_groups):
    _fwd_kernel_splitK_unrolled = unroll_varargs(_fwd_kernel_splitK, N=num_groups)
    kernel = triton.heuristics(
        {"BOUNDS_CHECKS_N": lambda args: bool(args["N_CTX_K"] % args["BLOCK_N"])}
    )(_fwd_kernel_splitK_unrolled)
    return kernel


def autotune_kernel(kernel: Callable):
    BLOCK_N_VALUES = [32, 64, 128]
    # On AMD num_stages has to be 0 or 1, but 0 sometimes produces NaN or incorrect results.
    STAGES_VALUES = [1] if torch.version.hip else [1, 2, 3]
    TRITON_CONFIGS = [
        gen_config(16, block_n, stages, 4)
        for block_n in BLOCK_N_VALUES
        for stages in STAGES_VALUES
    ]
    kernel = triton.autotune(configs=TRITON_CONFIGS, key=["N_CTX_K"])(kernel)
    return kernel


_fwd_kernel_splitK_autotune: Dict[int, triton.runtime.Autotuner] = {}
if sys.version_info >= (3, 9):
    for num_groups in [1, 2, 4, 8]:
        _fwd_kernel_splitK_autotune[num_groups] = autotune_kernel(
            _get_splitk_kernel(num_groups)
        )
"""


def test_a_kernel_handed_to_autotune_through_a_factory_gets_its_computed_configs():
    [kernel] = [k for k in scan_source(PATH, SOURCE).kernels if k.name == "_fwd_kernel_splitK"]
    assert "triton.autotune (applied by a call)" in kernel.decorators
    assert kernel.configs_computed


def test_the_vendor_test_in_those_configs_is_a_branch_of_the_kernel():
    branches = LaunchPath(ast.parse(SOURCE)).branches("_fwd_kernel_splitK", PATH)
    assert [(b.kind, b.condition, b.where) for b in branches] == [
        ("vendor", "torch.version.hip", "autotune_kernel")
    ]
