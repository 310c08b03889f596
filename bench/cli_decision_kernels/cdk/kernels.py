"""Two Triton kernels and their launchers. Each can do extra work on purpose: ``n_extra``
elements (scaled add) or ``m_extra`` rows (row sum) are processed a second time into a scratch
buffer, real loads and stores that make a head measurably slower without a sleep."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK = 1024
BLOCK_N = 1024


@triton.jit
def _scaled_add(x_ptr, y_ptr, out_ptr, scratch_ptr, n, n_extra, alpha, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    n_blocks = tl.cdiv(n, BLOCK)
    if pid < n_blocks:
        offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, alpha * x + y, mask=mask)
    else:  # the extra work: the first n_extra elements again, into scratch
        offs = (pid - n_blocks).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n_extra
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(scratch_ptr + offs, alpha * x + y, mask=mask)


def scaled_add(x, y, out, scratch, n_extra: int, alpha: float = 2.0):
    n = x.numel()
    grid = (triton.cdiv(n, BLOCK) + triton.cdiv(n_extra, BLOCK),)
    _scaled_add[grid](x, y, out, scratch, n, n_extra, alpha, BLOCK=BLOCK)
    return out


@triton.jit
def _row_sum(x_ptr, out_ptr, scratch_ptr, M, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    if row < M:
        src = row
        dst = out_ptr + row
    else:  # the extra work: row (row - M) summed again, into scratch
        src = row - M
        dst = scratch_ptr + (row - M)
    base = x_ptr + src.to(tl.int64) * N
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        acc += tl.load(base + cols, mask=cols < N, other=0.0).to(tl.float32)
    tl.store(dst, tl.sum(acc, axis=0).to(dst.dtype.element_ty))


def row_sum(x, out, scratch, m_extra: int):
    m, n = x.shape
    _row_sum[(m + m_extra,)](x, out, scratch, m, n, BLOCK_N=BLOCK_N)
    return out


def zeros_like_scratch(count: int, like: torch.Tensor) -> torch.Tensor:
    return torch.empty(max(count, 1), dtype=like.dtype, device=like.device)
