"""Bench entry points for the test kernels, in the shape the policy's ``bench`` names."""

from __future__ import annotations

import torch
import triton

from toykern import kernels


def _gen(seed: int, device: str) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


def vector_add(shape, dtype, *, device="cuda", seed=0):
    (n,) = shape
    g = _gen(seed, device)
    x = torch.randn(n, dtype=getattr(torch, dtype), device=device, generator=g)
    y = torch.randn(n, dtype=getattr(torch, dtype), device=device, generator=g)

    def fn():
        out = torch.empty_like(x)
        kernels.add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out

    size = x.element_size()
    return {"fn": fn, "bytes_moved": 3 * n * size, "flops": 0, "reference": lambda: x + y}


def softmax(shape, dtype, *, device="cuda", seed=0):
    rows, cols = shape
    x = torch.randn(
        rows, cols, dtype=getattr(torch, dtype), device=device, generator=_gen(seed, device)
    )

    def fn():
        out = torch.empty_like(x)
        kernels.softmax_kernel[(rows,)](out, x, x.stride(0), out.stride(0), cols)
        return out

    nbytes = 2 * x.numel() * x.element_size()
    return {"fn": fn, "bytes_moved": nbytes, "flops": 0, "reference": lambda: torch.softmax(x, -1)}


def matmul(shape, dtype, *, device="cuda", seed=0):
    m, n, k = shape
    g = _gen(seed, device)
    a = torch.randn(m, k, dtype=getattr(torch, dtype), device=device, generator=g)
    b = torch.randn(k, n, dtype=getattr(torch, dtype), device=device, generator=g)

    def fn():
        c = torch.empty(m, n, dtype=a.dtype, device=a.device)

        def grid(meta):
            return (triton.cdiv(m, meta["BM"]), triton.cdiv(n, meta["BN"]))

        kernels.matmul_kernel[grid](
            a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
            c.stride(0), c.stride(1),
        )  # fmt: skip
        return c

    size = a.element_size()
    return {
        "fn": fn,
        "bytes_moved": (m * k + k * n + m * n) * size,
        "flops": 2 * m * n * k,
        "reference": lambda: (a.float() @ b.float()).to(a.dtype),
        "atol": 1e-1,
        "rtol": 1e-2,
    }


def dot_ieee(shape, dtype, *, device="cuda", seed=0):
    (b,) = shape
    g = _gen(seed, device)
    x = torch.randn(b, b, dtype=torch.float32, device=device, generator=g)
    y = torch.randn(b, b, dtype=torch.float32, device=device, generator=g)

    def fn():
        out = torch.empty_like(x)
        kernels.dot_ieee_kernel[(1,)](x, y, out, B=b)
        return out

    return {"fn": fn, "bytes_moved": 3 * b * b * 4, "flops": 2 * b**3, "reference": lambda: x @ y}


def capped_dot(shape, dtype, *, device="cuda", seed=0):
    (b,) = shape
    g = _gen(seed, device)
    x = torch.randn(b, b, dtype=getattr(torch, dtype), device=device, generator=g)
    y = torch.randn(b, b, dtype=getattr(torch, dtype), device=device, generator=g)

    def fn():
        out = torch.empty_like(x)
        kernels.capped_dot_kernel[(1,)](x, y, out, b)
        return out

    return {"fn": fn, "bytes_moved": 3 * b * b * 2, "flops": 2 * b**3, "reference": lambda: x @ y}


def vector_add_counting_cubins(shape, dtype, *, device="cuda", seed=0):
    """``vector_add``, having first written how many compiled kernels Triton's cache holds to
    ``cubins_seen`` in that cache: what a case sees of the cases compiled before it."""
    import os
    from pathlib import Path

    cache = os.environ.get("TRITON_CACHE_DIR")
    if cache:
        seen = len(list(Path(cache).rglob("*.cubin")))
        (Path(cache) / "cubins_seen").write_text(str(seen), encoding="utf-8")
    return vector_add(shape, dtype, device=device, seed=seed)
