"""y = alpha * x, one program per block of elements."""

import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, alpha, n, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, alpha * x, mask=mask)


def scale(x, alpha):
    y = torch.empty_like(x)
    n = x.numel()
    scale_kernel[(triton.cdiv(n, 1024),)](x, y, alpha, n, BLOCK_SIZE=1024)
    return y
