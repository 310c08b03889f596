"""A compiled op the repository neither builds nor registers (``torch.ops`` of an installed
package) is a dependency's: a new Triton kernel a call site switches to in its place is new to
the repository, not a rewrite of an op whose source it holds (``pairing._unseen_ops``); where
the repository registers the op (``TORCH_LIBRARY``), the same switch is a rewrite of it.

Shortened from ModelTC/lightllm d4c0b537bd9a (Apache-2.0; in tests/data/real_prs):
lightllm/common/fused_moe/grouped_fused_moe.py's ``fused_experts_impl`` stops calling
``ops.silu_and_mul`` (lightllm/common/vllm_kernel/_ops.py: ``torch.ops.vllm_total.silu_and_mul``,
an op of the installed ``vllm_total`` package) and calls the new ``silu_and_mul_fwd``
(moe_silu_and_mul.py).
"""

from __future__ import annotations

from tests.diff_util import analysis_between

FUSED = "lightllm/common/fused_moe/grouped_fused_moe.py"
OPS = "lightllm/common/vllm_kernel/_ops.py"
TRITON = "lightllm/common/fused_moe/moe_silu_and_mul.py"


def _fused(call: str, imported: str) -> str:
    return f"""\
import torch
{imported}


def fused_experts_impl(hidden_states, w1, w2, N):
    intermediate_cache1 = torch.empty((hidden_states.shape[0], N))
    intermediate_cache2 = torch.empty((hidden_states.shape[0], N // 2))
    {call}
    return intermediate_cache2
"""


OPS_TEXT = """\
import torch

import vllm_total


def silu_and_mul(out, x):
    torch.ops.vllm_total.silu_and_mul(out, x)
"""

TRITON_TEXT = """\
import triton
import triton.language as tl


@triton.jit
def _silu_and_mul_kernel(input_ptr, output_ptr, size_n, BLOCK_N: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    gate = tl.load(input_ptr + offs, mask=offs < size_n, other=0.0).to(tl.float32)
    up = tl.load(input_ptr + offs + size_n, mask=offs < size_n, other=0.0)
    gate = gate / (1 + tl.exp(-gate))
    tl.store(output_ptr + offs, up * gate.to(up.dtype), mask=offs < size_n)


def silu_and_mul_fwd(input, output):
    size_n = output.shape[-1]
    _silu_and_mul_kernel[(triton.cdiv(size_n, 128),)](input, output, size_n, BLOCK_N=128)
"""

OLD = {
    FUSED: _fused(
        "ops.silu_and_mul(intermediate_cache2, intermediate_cache1)",
        "from lightllm.common.vllm_kernel import _ops as ops",
    ),
    OPS: OPS_TEXT,
}
NEW = {
    FUSED: _fused(
        "silu_and_mul_fwd(intermediate_cache1, intermediate_cache2)",
        "from .moe_silu_and_mul import silu_and_mul_fwd",
    ),
    OPS: OPS_TEXT,
    TRITON: TRITON_TEXT,
}

BINDINGS = "csrc/vllm_total/torch_bindings.cpp"
BINDINGS_TEXT = """\
#include <torch/library.h>

void silu_and_mul(torch::Tensor& out, torch::Tensor& input);

TORCH_LIBRARY(vllm_total, ops) {
  ops.def("silu_and_mul(Tensor! out, Tensor input) -> ()");
  ops.impl("silu_and_mul", torch::kCUDA, &silu_and_mul);
}
"""


def test_a_kernel_taking_the_place_of_a_dependencys_op_is_new():
    [change] = analysis_between(OLD, NEW).changes
    assert (change.kind, change.name) == ("new", "_silu_and_mul_kernel")


def test_a_kernel_taking_the_place_of_an_op_the_repository_registers_is_its_rewrite():
    old, new = {**OLD, BINDINGS: BINDINGS_TEXT}, {**NEW, BINDINGS: BINDINGS_TEXT}
    [change] = analysis_between(old, new).changes
    assert (change.kind, change.name) == ("rewrite", "_silu_and_mul_kernel")
    assert change.old is not None and change.old.name == "vllm_total.silu_and_mul"
