"""Bench entry points for bitsandbytes' compiled CUDA kernels (PyPI ``bitsandbytes``).

Each entry calls one of the package's torch ops (``torch.ops.bitsandbytes.*``), which on a CUDA
tensor dispatch to the kernels of ``libbitsandbytes_cuda<version>.so`` (the library matching
``torch.version.cuda``); on a CPU tensor the same op runs the package's CPU implementation, so
the entries can be checked without a GPU. Inputs are built outside ``fn`` (quantized inputs with
the package's own quantize op, on the same device); the one in-place op, the 8-bit optimizer
step, copies its parameter and states inside ``fn`` so that every call starts from the same
state, and counts those copies in its bytes.

4-bit ops use NF4 with blocks of 64 (the package's default for ``Linear4bit``); 8-bit blockwise
ops the signed dynamic map with blocks of 256 (the optimizers' block size).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import bitsandbytes.functional as bnbf
import torch

Case = dict[str, Any]
OPS = torch.ops.bitsandbytes
BLOCK_4BIT = 64
BLOCK_8BIT = 256


def _gen(device: str, seed: int) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


def _dims(shape: tuple[int, ...], rank: int, name: str) -> tuple[int, ...]:
    if len(shape) != rank or any(int(d) < 1 for d in shape):
        raise ValueError(
            f"{name} takes a shape of {rank} positive sizes, got {tuple(shape)}; "
            f"give {rank} dimensions as the catalogue's shapes do"
        )
    return tuple(int(d) for d in shape)


def _float_dtype(dtype: str, name: str) -> torch.dtype:
    dt = getattr(torch, dtype, None)
    if dt not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(
            f"{name} runs on float16, bfloat16 or float32 data, got dtype {dtype!r}; "
            "name one of those in the catalogue"
        )
    return dt


def _randn(
    shape: tuple[int, ...], dt: torch.dtype, device: str, gen: torch.Generator
) -> torch.Tensor:
    return torch.randn(shape, generator=gen, device=device, dtype=torch.float32).to(dt)


def _blocks(n: int, block: int) -> int:
    return -(-n // block)


def _case(
    fn: Callable[[], Any],
    reference: Callable[[], Any] | None,
    bytes_moved: int,
    inputs: list[torch.Tensor],
    flops: int = 0,
    atol: float | None = None,
    rtol: float | None = None,
) -> Case:
    case: Case = {"fn": fn, "bytes_moved": int(bytes_moved), "flops": int(flops), "inputs": inputs}
    if reference is not None:
        case["reference"] = reference
    if atol is not None:
        case["atol"] = atol
    if rtol is not None:
        case["rtol"] = rtol
    return case


def _nf4_dequantized(
    packed: torch.Tensor, absmax: torch.Tensor, n: int, device: str
) -> torch.Tensor:
    """NF4 codes back to float32 in torch: high nibble first, one absmax per 64 values."""
    code = bnbf.get_4bit_type("nf4", device=device)
    flat = packed.reshape(-1)
    nibbles = torch.stack(((flat >> 4) & 0xF, flat & 0xF), dim=1).reshape(-1)[:n].long()
    scale = absmax.float().repeat_interleave(BLOCK_4BIT)[:n]
    return code[nibbles] * scale


def quantize_4bit(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> Case:
    """bitsandbytes::quantize_4bit: a (rows, cols) matrix to NF4, two codes a byte, one float32
    absmax per block of 64. No reference: a value on a code's midpoint may round either way,
    which changes a whole byte, so head's output is compared with base's."""
    rows, cols = _dims(shape, 2, "quantize_4bit")
    dt = _float_dtype(dtype, "quantize_4bit")
    w = _randn((rows, cols), dt, device, _gen(device, seed))
    n = w.numel()
    moved = n * w.element_size() + (n + 1) // 2 + 4 * _blocks(n, BLOCK_4BIT)
    return _case(
        lambda: OPS.quantize_4bit(w, BLOCK_4BIT, "nf4", torch.uint8),
        None,
        moved,
        [w],
        atol=0.0,
        rtol=0.0,
    )


def dequantize_4bit(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> Case:
    """bitsandbytes::dequantize_4bit: NF4 codes of a (rows, cols) matrix back to ``dtype``."""
    rows, cols = _dims(shape, 2, "dequantize_4bit")
    dt = _float_dtype(dtype, "dequantize_4bit")
    w = _randn((rows, cols), dt, device, _gen(device, seed))
    packed, absmax = OPS.quantize_4bit(w, BLOCK_4BIT, "nf4", torch.uint8)
    n = w.numel()
    moved = (n + 1) // 2 + 4 * absmax.numel() + n * w.element_size()
    return _case(
        lambda: OPS.dequantize_4bit(packed, absmax, BLOCK_4BIT, "nf4", [rows, cols], dt),
        lambda: _nf4_dequantized(packed, absmax, n, device).reshape(rows, cols).to(dt),
        moved,
        [packed, absmax],
    )


def quantize_blockwise(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> Case:
    """bitsandbytes::quantize_blockwise: a (rows, cols) matrix to 8-bit codes of the signed
    dynamic map, one float32 absmax per block of 256. No reference (a midpoint may round either
    way): head's output is compared with base's."""
    rows, cols = _dims(shape, 2, "quantize_blockwise")
    dt = _float_dtype(dtype, "quantize_blockwise")
    x = _randn((rows, cols), dt, device, _gen(device, seed))
    code = bnbf.create_dynamic_map(signed=True).to(device)
    n = x.numel()
    moved = n * x.element_size() + n + 4 * _blocks(n, BLOCK_8BIT) + 4 * code.numel()
    return _case(
        lambda: OPS.quantize_blockwise(x, code, BLOCK_8BIT),
        None,
        moved,
        [x, code],
        atol=0.0,
        rtol=0.0,
    )


def dequantize_blockwise(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> Case:
    """bitsandbytes::dequantize_blockwise: 8-bit dynamic-map codes back to ``dtype``."""
    rows, cols = _dims(shape, 2, "dequantize_blockwise")
    dt = _float_dtype(dtype, "dequantize_blockwise")
    x = _randn((rows, cols), dt, device, _gen(device, seed))
    code = bnbf.create_dynamic_map(signed=True).to(device)
    q, absmax = OPS.quantize_blockwise(x, code, BLOCK_8BIT)
    n = x.numel()

    def reference() -> torch.Tensor:
        scale = absmax.float().repeat_interleave(BLOCK_8BIT)[:n]
        return (code[q.reshape(-1).long()] * scale).reshape(rows, cols).to(dt)

    moved = n + 4 * absmax.numel() + 4 * code.numel() + n * x.element_size()
    return _case(
        lambda: OPS.dequantize_blockwise(q, absmax, code, BLOCK_8BIT, dt),
        reference,
        moved,
        [q, absmax, code],
    )


def gemv_4bit(shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0) -> Case:
    """bitsandbytes::gemv_4bit: one token's activations (1, K) times an NF4 weight (N, K)
    transposed, the decode step of a 4-bit quantized linear layer; shape is (N, K).

    The kernel reads whole blocks of 64 along K, and the package sends it only layers whose K
    is a multiple of 64 (others go to dequantize and matmul), so K is rounded up to one. CUDA
    only: on CPU it raises ValueError (see there).
    """
    n_out, k_in = _dims(shape, 2, "gemv_4bit")
    if torch.device(device).type == "cpu":
        raise ValueError(
            "gemv_4bit measures bitsandbytes' CUDA kernel; on CPU the package's gemv_4bit wants "
            "weights repacked for its own CPU kernel (and aborts on some sizes), so it would not "
            "compute this product: run this entry with device='cuda'"
        )
    k_in = _blocks(k_in, BLOCK_4BIT) * BLOCK_4BIT
    dt = _float_dtype(dtype, "gemv_4bit")
    gen = _gen(device, seed)
    w = _randn((n_out, k_in), dt, device, gen)
    x = (torch.randn((1, k_in), generator=gen, device=device) * k_in**-0.5).to(dt)
    packed, absmax = OPS.quantize_4bit(w, BLOCK_4BIT, "nf4", torch.uint8)
    code = bnbf.get_4bit_type("nf4", device=device)
    numel = n_out * k_in

    def reference() -> torch.Tensor:
        wq = _nf4_dequantized(packed, absmax, numel, device).reshape(n_out, k_in)
        return (x.float() @ wq.t()).to(dt)

    moved = numel // 2 + 4 * absmax.numel() + k_in * x.element_size() + n_out * x.element_size()
    return _case(
        lambda: OPS.gemv_4bit(x, packed, [n_out, k_in], absmax, code, BLOCK_4BIT),
        reference,
        moved,
        [x, packed, absmax, code],
        flops=2 * numel,
        atol=2e-2,
        rtol=2e-2,
    )


def adam_8bit_step(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> Case:
    """bitsandbytes::optimizer_update_8bit_blockwise("adam"): one Adam step of a (n,) parameter
    with both moments stored as 8-bit blockwise codes, as ``bnb.optim.Adam8bit`` runs it.

    The step updates the parameter, the codes and the absmax values in place, so ``fn`` first
    copies them from the pristine state (five copies, counted in ``bytes_moved``) and returns the
    updated parameter and moments. No reference (the requantized moments are codes): head's
    output is compared with base's.
    """
    (n,) = _dims(shape, 1, "adam_8bit_step")
    dt = _float_dtype(dtype, "adam_8bit_step")
    gen = _gen(device, seed)
    p0 = _randn((n,), dt, device, gen)
    g = (torch.randn((n,), generator=gen, device=device) * 1e-2).to(dt)
    m = torch.randn((n,), generator=gen, device=device) * 1e-3
    v = torch.randn((n,), generator=gen, device=device).square() * 1e-6
    qmap1 = bnbf.create_dynamic_map(signed=True).to(device)
    qmap2 = bnbf.create_dynamic_map(signed=False).to(device)
    s1_0, a1_0 = OPS.quantize_blockwise(m, qmap1, BLOCK_8BIT)
    s2_0, a2_0 = OPS.quantize_blockwise(v, qmap2, BLOCK_8BIT)
    p, s1, s2, a1, a2 = (t.clone() for t in (p0, s1_0, s2_0, a1_0, a2_0))

    def fn() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        for dst, src in ((p, p0), (s1, s1_0), (s2, s2_0), (a1, a1_0), (a2, a2_0)):
            dst.copy_(src)
        OPS.optimizer_update_8bit_blockwise(
            "adam", g, p, s1, s2, 0.9, 0.999, 0.0, 0.0, 1e-8, 10, 1e-3,
            qmap1, qmap2, a1, a2, 0.0, 1.0, False,
        )  # fmt: skip
        return p, s1, s2

    esize = p.element_size()
    absmax_bytes = 4 * a1.numel()
    step = n * esize + 2 * n * esize + 4 * n + 4 * absmax_bytes  # g; p, s1, s2, absmax r+w
    copies = 2 * (n * esize + 2 * n + 2 * absmax_bytes)
    return _case(fn, None, step + copies, [g, p0, s1_0, s2_0, a1_0, a2_0], atol=0.0, rtol=0.0)
