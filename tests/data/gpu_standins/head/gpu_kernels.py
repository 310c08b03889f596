"""GPU stand-ins, head side: the same names as base, each a different rewrite of ``y = 2 x + 0.5``:
``same`` is identical, ``padded`` does 10% more work, ``unwritten`` skips the odd elements of its
output (only poisoning catches it: the memory may hold a correct result from before),
``out_of_bounds`` stores far outside its buffer (an illegal memory access that ends the context).
"""

from __future__ import annotations

import time

import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + 0.5, mask=mask)


@triton.jit
def even_only_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = (offs < n) & (offs % 2 == 0)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + 0.5, mask=mask)


@triton.jit
def far_store_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    far = offs.to(tl.int64) + (1 << 40)
    tl.store(y_ptr + far, tl.load(x_ptr + offs, mask=mask), mask=mask)


def _entry(shape, device, seed, kernel, extra=0.0):
    (n,) = shape
    m = n + int(n * extra)
    gen = torch.Generator(device=device).manual_seed(seed)
    x_full = torch.randn(m, generator=gen, device=device)
    x = x_full[:n]

    def fn():
        y = torch.empty(m, device=device)
        kernel[(triton.cdiv(m, 1024),)](x_full, y, m, BLOCK=1024)
        return y[:n]

    return {"fn": fn, "reference": lambda: x * 2.0 + 0.5, "bytes_moved": 8 * n, "flops": 2 * n}


def same(shape, dtype="float32", *, device="cuda", seed=0):
    return _entry(shape, device, seed, scale_kernel)


def padded(shape, dtype="float32", *, device="cuda", seed=0):
    return _entry(shape, device, seed, scale_kernel, extra=0.10)


def unwritten(shape, dtype="float32", *, device="cuda", seed=0):
    return _entry(shape, device, seed, even_only_kernel)


def out_of_bounds(shape, dtype="float32", *, device="cuda", seed=0):
    return _entry(shape, device, seed, far_store_kernel)


scale = same


def legacy_stream(shape, dtype="float32", *, device="cuda", seed=0):
    """``scale`` launched as bitsandbytes 0.50 launches its quantize kernels: the output made on
    the current stream, the kernel sent to the legacy default stream. Eagerly the same; a CUDA
    graph captured on another stream does not hold the kernel (it runs once, at the capture)."""
    (n,) = shape
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(n, generator=gen, device=device)

    def fn():
        y = torch.empty_like(x)
        with torch.cuda.stream(torch.cuda.default_stream(x.device)):
            scale_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y

    return {"fn": fn, "reference": lambda: x * 2.0 + 0.5, "bytes_moved": 8 * n, "flops": 2 * n}


def waits_inside(shape, dtype="float32", *, device="cuda", seed=0):
    """``scale`` twice with a wait for the GPU between (``.item()``, as an op that reads a count
    back does) and a slow host after it (0.3 ms of Python work): timed between two events, the
    call's time is mostly the host's, whose pace differs from one process to the next."""
    (n,) = shape
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(n, generator=gen, device=device)

    def fn():
        y = torch.empty_like(x)
        scale_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        if y[:1].sum().item() == float("inf"):
            raise ValueError("not reached")
        until = time.perf_counter() + 3e-4
        while time.perf_counter() < until:
            pass
        z = torch.empty_like(x)
        scale_kernel[(triton.cdiv(n, 1024),)](x, z, n, BLOCK=1024)
        torch.cuda._sleep(1000)  # a spin kernel of the op's own (the timer's marker must differ)
        return z

    return {"fn": fn, "reference": lambda: x * 2.0 + 0.5, "bytes_moved": 16 * n, "flops": 4 * n}
