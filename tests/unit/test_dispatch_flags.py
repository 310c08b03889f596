"""A call site switched from a compiled op to a dispatcher whose flag picks an existing Triton
kernel: the flag's literal (a default the call leaves, or an argument it passes) decides the
path the call takes, so the kernel on the path taken is a rewrite of the op's kernel, paired by
role though its file is not in the diff, and a kernel only on the path not taken is nothing.

The dispatcher and its kernel are triton_transformer/bmm.py of lucidrains/triton-transformer
(MIT) at 689abae86476, shortened (the kernel's body cut to a copy, its autotune configs to
one): ``fused_relu_squared(x, w, use_triton = False)`` returns ``triton_relu_squared(x, w)``
(``_relu_squared.apply``, whose forward launches ``bmm_kernel`` through ``triton_bmm``) under
``if use_triton:``, else PyTorch. Its caller there, ``FeedForward.forward`` in
triton_transformer/transformer.py, is kept in shape; the compiled op it calls at base
(``torch.ops.ff_ext.relu_squared``) and that op's CUDA file are written for the test.
"""

from __future__ import annotations

from tests.diff_util import analysis_between

BMM = """\
import torch
from torch import autograd
import torch.nn.functional as F

import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({'BLOCK_SIZE_M': 128, 'BLOCK_SIZE_N': 128, 'BLOCK_SIZE_K': 32, 'GROUP_SIZE_M': 8}, num_stages=4, num_warps=4),
    ],
    key=['M', 'N', 'K'],
)
@triton.jit
def bmm_kernel(
    x_ptr, y_ptr, o_ptr,
    M, N, K,
    **meta,
):
    BLOCK_SIZE_M = meta['BLOCK_SIZE_M']
    offs = tl.program_id(1) * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=offs < M), mask=offs < M)

def triton_bmm(x, y, activation = None):
    B, M, K = x.shape
    _, K, N = y.shape
    o = torch.empty((B, M, N), device = x.device, dtype = x.dtype)
    grid = lambda META: (
        B, triton.cdiv(M, META['BLOCK_SIZE_M']) * triton.cdiv(N, META['BLOCK_SIZE_N']),
    )
    bmm_kernel[grid](
        x, y, o,
        M, N, K,
        ACTIVATION = activation
    )
    return o

@triton.jit
def relu_squared_activation(x):
    return tl.where(x > 0, x * x, 0.)

class _relu_squared(autograd.Function):
    @classmethod
    def forward(self, ctx, x, w):
        o = triton_bmm(x, w, activation = relu_squared_activation)
        if x.requires_grad:
            ctx.save_for_backward(x, w, o)
        return o

triton_relu_squared = _relu_squared.apply

def fused_relu_squared(x, w, use_triton = False):
    if use_triton:
        return triton_relu_squared(x, w)

    return F.relu(x @ w) ** 2
"""

OP = """\
#include <torch/extension.h>

__global__ void relu_squared_kernel(const float* x, const float* w, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float v = x[i] * w[i]; out[i] = v > 0.f ? v * v : 0.f; }
}

at::Tensor relu_squared_cuda(const at::Tensor& x, const at::Tensor& w) {
    auto out = at::empty_like(x);
    int n = x.numel();
    relu_squared_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), w.data_ptr<float>(),
                                                  out.data_ptr<float>(), n);
    return out;
}

TORCH_LIBRARY(ff_ext, m) {
    m.def("relu_squared(Tensor x, Tensor w) -> Tensor");
}

TORCH_LIBRARY_IMPL(ff_ext, CUDA, m) {
    m.impl("relu_squared", relu_squared_cuda);
}
"""

FF_BEFORE = """\
import torch
from torch import nn


class FeedForward(nn.Module):
    def __init__(self, dim, mult = 4):
        super().__init__()
        self.proj_in_weight = nn.Parameter(torch.randn(dim, dim * mult))

    def forward(self, x):
        x = torch.ops.ff_ext.relu_squared(x, self.proj_in_weight)
        return x
"""


def _ff_after(call: str) -> str:
    return f"""\
import torch
from torch import nn

from triton_transformer.bmm import fused_relu_squared


class FeedForward(nn.Module):
    def __init__(self, dim, mult = 4):
        super().__init__()
        self.proj_in_weight = nn.Parameter(torch.randn(dim, dim * mult))

    def forward(self, x):
        x = {call}
        return x
"""


def _reported(call: str) -> dict[str, tuple[str, list[str], list[str]]]:
    """Per kernel reported: its kind, the old kernels it replaces, its host changes."""
    old = {
        "triton_transformer/bmm.py": BMM,
        "csrc/ff_ext/relu_squared.cu": OP,
        "triton_transformer/transformer.py": FF_BEFORE,
    }
    new = {**old, "triton_transformer/transformer.py": _ff_after(call)}
    return {
        c.name: (
            c.kind,
            sorted(r.name for r in [c.old, *c.old_variants] if r is not None),
            c.host_changes,
        )
        for c in analysis_between(old, new).changes
    }


def test_the_flag_passed_true_takes_the_triton_path_a_rewrite_of_the_ops_kernel() -> None:
    reported = _reported("fused_relu_squared(x, self.proj_in_weight, use_triton = True)")
    assert reported == {
        "bmm_kernel": (
            "rewrite",
            ["relu_squared_kernel"],
            [
                "triton_transformer/transformer.py: FeedForward.forward now reaches it in place "
                "of relu_squared (its own file is unchanged)"
            ],
        )
    }


def test_the_flag_left_to_its_false_default_takes_the_pytorch_path_nothing_reported() -> None:
    assert _reported("fused_relu_squared(x, self.proj_in_weight)") == {}


def test_tests_on_a_flag_are_answered_where_its_literal_settles_them() -> None:
    import ast

    from bot.analysis.launch_values import decided

    def answer(test: str, values: dict[str, str]) -> bool | None:
        return decided(ast.parse(test, mode="eval").body, values)

    on, off = {"use_triton": "True"}, {"use_triton": "False"}
    assert [answer("use_triton", on), answer("not use_triton", on)] == [True, False]
    assert answer("x.is_cuda and use_triton", off) is False
    assert answer("x.is_cuda and use_triton", on) is None  # the tensor's device decides
    assert answer("x.is_cuda or use_triton", on) is True
    assert answer('backend == "triton"', {"backend": "'cuda'"}) is False
    assert answer("scale is None", {"scale": "None"}) is True
    assert answer("use_triton", {"other": "True"}) is None
