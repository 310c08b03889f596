"""A call split by a new test into two calls of the same function, one per branch, still runs
on every path: what it is handed changed, not whether its launches run
(``reach/call_gates._always``).

Shortened from triton_kernels.py in KellerJordan/modded-nanogpt at 02801b7e005a and its parent
410c0d7cf46c (MIT; that pull request is in tests/data/real_prs): ``BLOCK_SIZE_K`` becomes
``128 if use_fp8 else 64`` in the launcher ``linear_relu_square``, and
``FusedLinearReLUSquareFunction.forward`` calls it with FP8 arguments when ``W1_f8`` is given,
as before otherwise.
"""

from __future__ import annotations

from tests.diff_util import analysis_between

PATH = "triton_kernels.py"

BEFORE = """\
import torch
import triton
import triton.language as tl


@triton.jit
def linear_relu_square_kernel(a_ptr, c_ptr, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_K: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    x = tl.load(a_ptr + offs) + tl.sum(tl.load(a_ptr + tl.arange(0, BLOCK_SIZE_K)))
    tl.store(c_ptr + offs, x * x)


def linear_relu_square(a, b, a_f8=None, b_f8=None, dequant_scale_ptr=None):
    use_fp8 = a_f8 is not None
    c = torch.empty_like(a)
    BLOCK_SIZE_M = 128
    BLOCK_SIZE_K = 64
    grid = (triton.cdiv(a.numel(), BLOCK_SIZE_M),)
    linear_relu_square_kernel[grid](
        a, c, BLOCK_SIZE_M=BLOCK_SIZE_M, BLOCK_SIZE_K=BLOCK_SIZE_K
    )
    return c


class FusedLinearReLUSquareFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, W1, W2):
        post = linear_relu_square(x.view((-1, x.shape[-1])), W1)
        return post @ W2
"""

AFTER = BEFORE.replace(
    "    BLOCK_SIZE_K = 64", "    BLOCK_SIZE_K = 128 if use_fp8 else 64"
).replace(
    """    def forward(ctx, x, W1, W2):
        post = linear_relu_square(x.view((-1, x.shape[-1])), W1)
""",
    """    def forward(ctx, x, W1, W2, W1_f8=None, dequant_scale=None, x_f8=None):
        x_flat = x.view((-1, x.shape[-1]))
        if W1_f8 is not None:
            x_f8 = x_f8.view((-1, x_f8.shape[-1]))
            post = linear_relu_square(x_flat, W1, a_f8=x_f8, b_f8=W1_f8, dequant_scale_ptr=dequant_scale)
        else:
            post = linear_relu_square(x_flat, W1)
""",
)


def _kinds(before: str, after: str) -> dict[str, str]:
    return {c.name: c.kind for c in analysis_between({PATH: before}, {PATH: after}).changes}


def test_a_call_in_both_branches_of_a_new_test_keeps_the_block_size_change_tuning():
    assert AFTER != BEFORE
    assert _kinds(BEFORE, AFTER) == {"linear_relu_square_kernel": "tuning"}


def test_a_call_in_one_branch_only_is_a_launch_change():
    one_branch = AFTER.replace(
        """        else:
            post = linear_relu_square(x_flat, W1)
""",
        """        else:
            post = x_flat @ W1.T
""",
    )
    assert _kinds(BEFORE, one_branch) == {"linear_relu_square_kernel": "launch"}
