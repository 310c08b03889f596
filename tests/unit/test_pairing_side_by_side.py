"""A Triton implementation offered beside a CUDA one under the same name is a rewrite, the old
kernel kept: its wrapper has the name of a function at base in a module named like the wrapper's,
and the CUDA kernel is in a file of that name.

Shortened from flashinfer-ai/flashinfer f72745bacc42 (Apache-2.0; in tests/data/real_prs):
flashinfer/activation.py (the CUDA ``silu_and_mul``, through a loaded module),
include/flashinfer/activation.cuh (``act_and_mul_kernel``) and the new
flashinfer/triton/activation.py and flashinfer/triton/kernels/activation.py.
"""

from __future__ import annotations

from bot.analysis.classify import analyze_diff
from tests.diff_util import file_diff

CUH = "include/flashinfer/activation.cuh"
CUH_TEXT = """\
template <typename T, float (*Activation)(const float&)>
__global__ void act_and_mul_kernel(T* __restrict__ out, const T* __restrict__ input, const int d) {
  const int64_t offset = blockIdx.x * 2 * d;
  for (int64_t idx = threadIdx.x; idx < d; idx += blockDim.x) {
    out[blockIdx.x * d + idx] = Activation(input[offset + idx]) * input[offset + d + idx];
  }
}
"""
OLD_PY = "flashinfer/activation.py"
OLD_PY_TEXT = """\
import torch


def get_act_and_mul_module(act_func_name: str):
    from . import _kernels

    return _kernels


def silu_and_mul(input: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
    out = torch.empty(input.shape[:-1] + (input.shape[-1] // 2,), device=input.device)
    get_act_and_mul_module("silu").silu_and_mul(out, input)
    return out
"""
KERNELS = "flashinfer/triton/kernels/activation.py"
KERNELS_TEXT = """\
import triton
import triton.language as tl


@triton.jit
def silu_and_mul_kernel(o_ptr, x_ptr, d, BLOCK_SIZE: tl.constexpr):
    i = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + i * 2 * d + offs, mask=offs < d).to(tl.float32)
    y = tl.load(x_ptr + i * 2 * d + d + offs, mask=offs < d).to(tl.float32)
    tl.store(o_ptr + i * d + offs, x * tl.sigmoid(x) * y, mask=offs < d)
"""
WRAPPER = "flashinfer/triton/activation.py"


def _wrapper(name: str) -> str:
    return f"""\
import torch
import triton

from flashinfer.triton.kernels.activation import silu_and_mul_kernel


def {name}(x: torch.Tensor) -> torch.Tensor:
    b, n = x.shape
    o = torch.empty((b, n // 2), dtype=x.dtype, device=x.device)
    silu_and_mul_kernel[(b, triton.cdiv(n // 2, 1024))](o, x, n // 2, BLOCK_SIZE=1024)
    return o
"""


def _changes(wrapper_name: str) -> list[str]:
    new = {KERNELS: KERNELS_TEXT, WRAPPER: _wrapper(wrapper_name), OLD_PY: OLD_PY_TEXT}
    old = {CUH: CUH_TEXT, OLD_PY: OLD_PY_TEXT}
    diff = file_diff(KERNELS, None, KERNELS_TEXT) + file_diff(WRAPPER, None, new[WRAPPER])
    analysis = analyze_diff(diff, old_source=old.get, new_source=new.get, old_files=sorted(old))
    return [
        f"{c.kind} {c.name}" + (f" <- {c.old.name} kept={c.old_kernel_kept}" if c.old else "")
        for c in analysis.changes
    ]


def test_a_same_named_triton_wrapper_beside_the_cuda_one_is_a_rewrite_old_kept():
    assert _changes("silu_and_mul") == [
        "rewrite silu_and_mul_kernel <- act_and_mul_kernel kept=True"
    ]


def test_a_wrapper_of_another_name_is_a_new_kernel():
    assert _changes("fused_silu") == ["new silu_and_mul_kernel"]
