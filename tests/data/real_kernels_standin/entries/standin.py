"""Stand-in entries for the real-kernel suite's driver tests: two Triton kernels written for the
tests (a scaled add, and a row sum split over column blocks that meet in ``tl.atomic_add``),
following the bench entry contract. They import only torch, triton and the standard library,
as the suite's entries do; on the CPU they run in Triton's interpreter (``TRITON_INTERPRET=1``).
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def _scaled_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, 2.0 * x + y, mask=mask)


@triton.jit
def _row_sum_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * cols + offs, mask=offs < cols, other=0.0)
    tl.atomic_add(out_ptr + row, tl.sum(x, axis=0))


def _randn(shape: tuple[int, ...], dtype: str, device: str, seed: int) -> torch.Tensor:
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(shape, generator=gen, device=device, dtype=torch.float32)
    return x.to(getattr(torch, dtype))


def scaled_add(shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0) -> dict:
    """out = 2 x + y over all elements of ``shape``."""
    n = math.prod(shape)
    x, y = _randn((n,), dtype, device, seed), _randn((n,), dtype, device, seed + 1)
    out = torch.empty_like(x)

    def fn() -> torch.Tensor:
        _scaled_add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
        return out

    return {
        "fn": fn,
        "reference": lambda: (2.0 * x.float() + y.float()).to(x.dtype),
        "inputs": [x, y],
        "bytes_moved": 3 * n * x.element_size(),
        "flops": 2 * n,
        "atol": 1e-5,
        "rtol": 1e-5,
    }


def row_sum(shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0) -> dict:
    """Each row's sum, every column block's partial sum added with ``tl.atomic_add``."""
    rows, cols = shape
    x = _randn((rows, cols), dtype, device, seed)
    out = torch.empty(rows, dtype=torch.float32, device=device)

    def fn() -> torch.Tensor:
        out.zero_()
        _row_sum_kernel[(rows, triton.cdiv(cols, BLOCK))](x, out, cols, BLOCK=BLOCK)
        return out

    return {
        "fn": fn,
        "reference": lambda: x.float().sum(dim=1),
        "inputs": [x],
        "bytes_moved": rows * cols * x.element_size() + rows * 4,
        "flops": rows * cols,
        "atol": 1e-3 * math.sqrt(cols),
        "rtol": 1e-4,
    }
