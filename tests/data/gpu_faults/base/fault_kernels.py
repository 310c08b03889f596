"""GPU faults, base side: one correct Triton kernel, ``y = 2 x + 0.5``, under every name the head
side breaks, so each case fails on the head alone."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + 0.5, mask=mask)


def good(shape, dtype="float32", *, device="cuda", seed=0):
    (n,) = shape
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(n, generator=gen, device=device)

    def fn():
        y = torch.empty_like(x)
        scale_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y

    return {"fn": fn, "reference": lambda: x * 2.0 + 0.5, "bytes_moved": 8 * n, "flops": 2 * n}


out_of_bounds = infinite_loop = larger_than_the_card = too_much_shared_memory = good
rejected_syntax = wrong_result = good
