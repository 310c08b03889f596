"""Bench entry points for Triton kernels of torchao (pytorch/ao).

Each function follows the bench entry contract (docs/bench-entry.md): it builds seeded inputs
outside ``fn``, and ``fn`` runs the package's op once. Only torch, the package and the standard
library are imported here, because this module runs inside a generated repository as
``entries/torchao.py``. torchao's compiled extensions are not needed: every op used here is a
Triton kernel launched from Python.
"""

from __future__ import annotations

from typing import Any

import torch

FP8 = torch.float8_e4m3fn
FP8_MAX = 448.0
EPS = 1e-12  # torchao.prototype.float8nocompile's EPS, the floor of an amax


def _dtype(name: str) -> torch.dtype:
    dt = getattr(torch, name, None)
    if not isinstance(dt, torch.dtype):
        raise ValueError(f"unknown dtype {name!r}: give a torch dtype name such as 'bfloat16'")
    return dt


def _rank(shape: tuple[int, ...], rank: int, what: str) -> tuple[int, ...]:
    if len(shape) != rank or any(int(s) < 1 for s in shape):
        raise ValueError(f"shape {tuple(shape)} is not {what}: give {rank} positive sizes")
    return tuple(int(s) for s in shape)


def _randn(size: tuple[int, ...], seed: int, device: str, dt: torch.dtype) -> torch.Tensor:
    gen = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(size, generator=gen, device=device, dtype=torch.float32).to(dt)


def _tensorwise(
    shape: tuple[int, ...], dtype: str, device: str, seed: int, algo_name: str
) -> dict[str, Any]:
    from torchao.float8.float8_training_tensor import LinearMMConfig
    from torchao.prototype.float8nocompile.kernels.fp8_dynamic_tensorwise import (
        KernelAlgorithm,
        hp_to_fp8_row_major,
    )

    m, n = _rank(shape, 2, "(rows, columns)")
    dt = _dtype(dtype)
    x = _randn((m, n), seed, device, dt)
    algo = KernelAlgorithm[algo_name]
    config = LinearMMConfig()

    def fn() -> tuple[torch.Tensor, torch.Tensor]:
        t = hp_to_fp8_row_major(x, FP8, config, algo=algo)
        return t._data, t._scale

    def reference() -> tuple[torch.Tensor, torch.Tensor]:
        amax = x.float().abs().amax().clamp(min=EPS)
        scale = (FP8_MAX / amax).to(torch.float32)
        return (x.float() * scale).clamp(-FP8_MAX, FP8_MAX).to(FP8), scale

    return {
        "fn": fn,
        "reference": reference,
        # the amax pass reads x, the cast pass reads it again and writes one byte per element
        "bytes_moved": 2 * x.numel() * x.element_size() + x.numel(),
        "flops": 0,
        # one e4m3 step is 1/8 of the value; the scale itself is exact up to fp32 rounding
        "atol": 1e-6,
        "rtol": 0.125,
        "inputs": [x],
    }


def fp8_tensorwise_atomic(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """float8nocompile's tensor-wise fp8 cast: a global amax by tl.atomic_max, a scale, then the cast."""
    return _tensorwise(shape, dtype, device, seed, "ATOMIC_MAX")


def fp8_tensorwise_reduction(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """The same cast with the amax in two passes: per-block maxima to a workspace, then one program reduces it."""
    return _tensorwise(shape, dtype, device, seed, "REDUCTION")


def fp8_blockwise_act_quant(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """torchao.kernel.blockwise_quantization.fp8_blockwise_act_quant on (M, G): rows of G blocks of 128.

    The op needs the last dimension divisible by 128, so the shape counts blocks: x is (M, 128 * G),
    and each 128-wide block gets its own scale (the DeepSeek-V3 activation quantizer).
    """
    from torchao.kernel.blockwise_quantization import fp8_blockwise_act_quant as act_quant

    m, g = _rank(shape, 2, "(rows, blocks of 128 columns)")
    dt = _dtype(dtype)
    x = _randn((m, 128 * g), seed, device, dt)

    def reference() -> tuple[torch.Tensor, torch.Tensor]:
        xb = x.float().view(m, g, 128)
        s = xb.abs().amax(-1) / FP8_MAX
        return (xb / s[..., None]).view(m, 128 * g).to(FP8), s

    return {
        "fn": lambda: act_quant(x, 128, FP8),
        "reference": reference,
        "bytes_moved": x.numel() * (x.element_size() + 1) + 4 * m * g,
        "flops": 0,
        "atol": 1e-6,
        "rtol": 0.125,
        "inputs": [x],
    }


def blockwise_fp8_gemm(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """torchao.kernel.blockwise_quantization.blockwise_fp8_gemm: (M, K) x (N, K)^T in e4m3 with 128-blocks of scales.

    ``dtype`` is the dtype the operands are drawn in before quantising (the op always writes bf16).
    Activations get one scale per row and 128 columns, weights one per 128 x 128 tile; the
    quantisation happens here, outside ``fn``, in torch.
    """
    from torchao.kernel.blockwise_quantization import blockwise_fp8_gemm as fp8_gemm

    m, n, k = _rank(shape, 3, "(M, N, K)")
    dt = _dtype(dtype)
    kb, nb = -(-k // 128), -(-n // 128)
    a = _randn((m, k), seed, device, dt).float()
    b = _randn((n, k), seed + 1, device, dt).float() / k**0.5

    a_pad = torch.nn.functional.pad(a, (0, kb * 128 - k)).view(m, kb, 128)
    a_s = (a_pad.abs().amax(-1) / FP8_MAX).clamp(min=1e-8)
    a_q = (a_pad / a_s[..., None]).view(m, kb * 128)[:, :k].to(FP8).contiguous()
    b_pad = torch.nn.functional.pad(b, (0, kb * 128 - k, 0, nb * 128 - n)).view(nb, 128, kb, 128)
    b_s = (b_pad.abs().amax((1, 3)) / FP8_MAX).clamp(min=1e-8)
    b_q = (b_pad / b_s[:, None, :, None]).view(nb * 128, kb * 128)[:n, :k].to(FP8).contiguous()
    a_s, b_s = a_s.contiguous(), b_s.contiguous()

    def reference() -> torch.Tensor:
        a_d = (a_q.float().view(m, k) * a_s.repeat_interleave(128, 1)[:, :k]).float()
        b_full = b_s.repeat_interleave(128, 0).repeat_interleave(128, 1)[:n, :k]
        return (a_d @ (b_q.float() * b_full).t()).to(torch.bfloat16)

    return {
        "fn": lambda: fp8_gemm(a_q, a_s, b_q, b_s, 128),
        "reference": reference,
        "bytes_moved": m * k + n * k + 2 * m * n + 4 * (a_s.numel() + b_s.numel()),
        "flops": 2 * m * n * k,
        "atol": 2e-2,
        "rtol": 2e-2,
        "inputs": [a_q, a_s, b_q, b_s],
    }


def hqq_mixed_mm(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """torchao.prototype.hqq.triton_mixed_mm: A (M, K) fp16 times a 4-bit weight (K, N), two values a
    byte, dequantised in the kernel as (q - zero) * scale with one zero and scale per 128 rows of K
    and column ("compute_bound": 18 autotune configs).

    The shape is (M, N, G) with K = 128 G, since K must be a whole number of groups. The scales and
    zeros are transposed views of (N rounded up to 256, G) buffers, the layout torchao's own test
    passes: the kernel reads a whole BLOCK_N of them for the last column block, so a ragged N
    stays inside the allocation.
    """
    from torchao.prototype.hqq.mixed_mm import pack_2xint4, triton_mixed_mm

    m, n, g = _rank(shape, 3, "(M, N, groups of 128 along K)")
    dt = _dtype(dtype)
    group = 128
    k = group * g
    gen = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn((m, k), generator=gen, device=device).to(dt)
    q = torch.randint(0, 16, (k, n), generator=gen, device=device, dtype=torch.uint8)
    n_pad = -(-n // 256) * 256
    # (N, G) buffers seen as (G, N): the kernel indexes scales with a unit stride along K's groups
    scales_buf = (torch.rand((n_pad, g), generator=gen, device=device) / 64 + 1 / 128).to(dt)
    zeros_buf = (torch.rand((n_pad, g), generator=gen, device=device) * 15).to(dt)
    scales, zeros = scales_buf[:n].t(), zeros_buf[:n].t()
    packed = pack_2xint4(q)

    def reference() -> torch.Tensor:
        w = (
            q.float() - zeros.float().repeat_interleave(group, 0)
        ) * scales.float().repeat_interleave(group, 0)
        return (a.float() @ w).to(dt)

    return {
        "fn": lambda: triton_mixed_mm(a, packed, scales, zeros, group_size=group),
        "reference": reference,
        "bytes_moved": a.numel() * a.element_size() + packed.numel() + 4 * g * n + 2 * m * n,
        "flops": 2 * m * n * k,
        "atol": 5e-2,
        "rtol": 2e-2,
        "inputs": [a, packed, scales, zeros],
    }
