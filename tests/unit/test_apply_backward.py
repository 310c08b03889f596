"""An autograd Function's ``apply`` reaches its ``backward`` too, as a role of its own.

Shortened from auto_gptq/nn_modules/qlinear/qlinear_triton.py and triton_utils/kernels.py in
AutoGPTQ/AutoGPTQ at 0891ea4036e4 (MIT; that pull request is in tests/data/real_prs): the layer's
forward applies QuantLinearFunction, whose backward launches the transposed kernel.
"""

from __future__ import annotations

from bot.analysis.reach.extensions import ExtensionIndex
from bot.analysis.reach.follow import Side
from bot.analysis.reach.moved_calls import _roles

PATH = "auto_gptq/nn_modules/qlinear/qlinear_triton.py"
SOURCE = """\
import torch
import triton
import triton.language as tl


@triton.jit
def quant_matmul_248_kernel(a_ptr, c_ptr, M, BLOCK_SIZE_M: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    tl.store(c_ptr + offs, tl.load(a_ptr + offs, mask=offs < M), mask=offs < M)


@triton.jit
def transpose_quant_matmul_248_kernel(a_ptr, c_ptr, M, BLOCK_SIZE_M: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    tl.store(c_ptr + offs, tl.load(a_ptr + offs, mask=offs < M), mask=offs < M)


class QuantLinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, qweight):
        output = torch.empty_like(input)
        quant_matmul_248_kernel[(1,)](input, output, input.shape[0], BLOCK_SIZE_M=64)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        grad_input = torch.empty_like(grad_output)
        transpose_quant_matmul_248_kernel[(1,)](
            grad_output, grad_input, grad_output.shape[0], BLOCK_SIZE_M=64
        )
        return grad_input, None


class QuantLinear(torch.nn.Module):
    def forward(self, x):
        return QuantLinearFunction.apply(x, self.qweight)
"""


def test_apply_reaches_forward_and_backward_kernels_each_in_its_role():
    read = {PATH: SOURCE}.get
    side = Side([PATH], read, ExtensionIndex([PATH], read))
    reach = side.follow("auto_gptq.nn_modules.qlinear.qlinear_triton.QuantLinear")["forward"]
    assert reach.kernels == {"quant_matmul_248_kernel", "transpose_quant_matmul_248_kernel"}
    assert reach.back_kernels == {"transpose_quant_matmul_248_kernel"}
    roles = {role: r.kernels for role, r in _roles({"forward": reach})}
    assert roles == {
        "forward": {"quant_matmul_248_kernel"},
        "forward.backward": {"transpose_quant_matmul_248_kernel"},
    }
