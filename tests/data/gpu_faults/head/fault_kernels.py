"""GPU faults, head side: ``good`` is the base kernel; every other name is the same operation
broken one way, each a fault the sweep must report with its own status and survive:

- ``out_of_bounds``: stores far outside its buffer (an illegal address that ends the context);
- ``infinite_loop``: spins on a flag nobody sets (the kernel never returns);
- ``larger_than_the_card``: allocates twice the GPU's memory;
- ``too_much_shared_memory``: a 256x256 tile matmul pipelined six stages deep, far over a
  block's shared memory (Triton's OutOfResources at launch);
- ``rejected_syntax``: a ``try`` block, which Triton's front end does not accept
  (UnsupportedLanguageConstruct, a CompilationError, on the first call);
- ``wrong_result``: adds 0.25 instead of 0.5.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + 0.5, mask=mask)


@triton.jit
def far_store_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    far = offs.to(tl.int64) + (1 << 40)
    tl.store(y_ptr + far, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def spin_kernel(x_ptr, y_ptr, flag_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    flag = tl.load(flag_ptr, volatile=True)
    while flag == 0:
        flag = tl.load(flag_ptr, volatile=True)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + 0.5, mask=mask)


@triton.jit
def deep_pipeline_kernel(x_ptr, y_ptr, K, BLOCK: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.arange(0, BLOCK)[:, None]
    cols = tl.arange(0, BLOCK)[None, :]
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(x_ptr + rows * K + (k + ks)[None, :]).to(tl.float16)
        b = tl.load(x_ptr + (k + ks)[:, None] * BLOCK + cols).to(tl.float16)
        acc += tl.dot(a, b)
    tl.store(y_ptr + rows * BLOCK + cols, acc)


@triton.jit
def rejected_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(x_ptr + offs, mask=mask)
    try:
        y = y * 2.0 + 0.5
    except ValueError:
        y = y
    tl.store(y_ptr + offs, y, mask=mask)


@triton.jit
def off_by_a_quarter_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + 0.25, mask=mask)


def _entry(shape, device, seed, launch):
    (n,) = shape
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(n, generator=gen, device=device)

    def fn():
        y = torch.empty_like(x)
        launch(x, y, n)
        return y

    return {"fn": fn, "reference": lambda: x * 2.0 + 0.5, "bytes_moved": 8 * n, "flops": 2 * n}


def _grid(n):
    return (triton.cdiv(n, 1024),)


def good(shape, dtype="float32", *, device="cuda", seed=0):
    return _entry(shape, device, seed, lambda x, y, n: scale_kernel[_grid(n)](x, y, n, BLOCK=1024))


def out_of_bounds(shape, dtype="float32", *, device="cuda", seed=0):
    return _entry(
        shape, device, seed, lambda x, y, n: far_store_kernel[_grid(n)](x, y, n, BLOCK=1024)
    )


def infinite_loop(shape, dtype="float32", *, device="cuda", seed=0):
    flag = torch.zeros(1, dtype=torch.int32, device=device)
    return _entry(
        shape, device, seed, lambda x, y, n: spin_kernel[_grid(n)](x, y, flag, n, BLOCK=1024)
    )


def larger_than_the_card(shape, dtype="float32", *, device="cuda", seed=0):
    def launch(x, y, n):
        total = torch.cuda.get_device_properties(x.device).total_memory
        scratch = torch.empty(2 * total, dtype=torch.uint8, device=x.device)
        scale_kernel[_grid(n)](x, y, n, BLOCK=1024)
        del scratch

    return _entry(shape, device, seed, launch)


def too_much_shared_memory(shape, dtype="float32", *, device="cuda", seed=0):
    def launch(x, y, n):
        # 256x256 tiles, 64 deep, 6 stages in flight: over 300 KiB of shared memory
        deep_pipeline_kernel[(1,)](x, y, 256, BLOCK=256, BLOCK_K=64, num_warps=8, num_stages=6)

    return _entry(shape, device, seed, launch)


def rejected_syntax(shape, dtype="float32", *, device="cuda", seed=0):
    return _entry(
        shape, device, seed, lambda x, y, n: rejected_kernel[_grid(n)](x, y, n, BLOCK=1024)
    )


def wrong_result(shape, dtype="float32", *, device="cuda", seed=0):
    return _entry(
        shape, device, seed, lambda x, y, n: off_by_a_quarter_kernel[_grid(n)](x, y, n, BLOCK=1024)
    )
