"""The kernel the protocol proof measures: ``y = 2 * x + 0.5`` over ``n`` float32 elements.

A memory-bound Triton kernel whose time is set by ``n``: the proof picks ``n`` for kernel times
near 5 us, 15 us, 130 us and 1.5 ms, and a larger ``n`` for "a kernel 3% slower", found by
measuring (``bench/proof_calibrate.py``). Both are multiples of 16: Triton specializes ``n``
divisible by 16, and only then are the masked loads and stores 128 bits wide. Two worker processes that load this file compile the kernel twice (each has its own
Triton cache): that is the A/A pair. On the CPU the same arithmetic runs in torch.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def scale_shift_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x * 2.0 + 0.5, mask=mask)


def scale_shift(shape, dtype="float32", *, device="cuda", seed=0):
    """Bench entry point: ``shape = (n,)``; the output buffer is allocated once per entry call."""
    (n,) = (int(d) for d in shape)
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(n, generator=gen, device=device, dtype=torch.float32)
    y = torch.empty_like(x)
    if device == "cpu":

        def fn():
            torch.add(x * 2.0, 0.5, out=y)
            return y

    else:
        grid = (triton.cdiv(n, BLOCK),)

        def fn():
            scale_shift_kernel[grid](x, y, n, BLOCK=BLOCK)
            return y

    return {
        "fn": fn,
        "reference": lambda: x * 2.0 + 0.5,
        "bytes_moved": 8 * n,
        "flops": 2 * n,
        "inputs": [x],
        "atol": 1e-6,
        "rtol": 1e-6,
    }
