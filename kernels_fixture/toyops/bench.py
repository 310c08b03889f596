"""Bench entry points: shape and dtype in; a callable, its memory traffic, flops and a reference out.

Every entry is ``entry(shape, dtype, *, device="cuda", seed=0) -> dict`` with keys ``fn`` (runs
the operator once on fixed inputs and returns the output), ``bytes_moved`` (bytes read plus
written by one call), ``flops`` (0 for memory-bound operators), ``reference`` (torch on the same
inputs, computed in fp32), ``atol``/``rtol`` and ``inputs``. Different seeds give independent
inputs. Shapes: ``vector_add`` takes any shape (the element count is what matters),
``softmax`` takes ``(rows, cols)``, ``matmul`` takes ``(M, N, K)``. Dtypes: ``float32``,
``float16``, ``bfloat16``.

``vector_add``, ``softmax`` and ``matmul`` run toyops' own kernels, whatever implements them;
the ``*_ref`` entries run the torch operator on the same inputs (the vendor library's speed,
for comparison), and ``matmul_cxx`` the hand-written tiled matmul in ``csrc/``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch

from . import _cext
from .matmul import matmul as _matmul
from .softmax import softmax as _softmax
from .vector_add import vector_add as _vector_add

_DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "fp32": torch.float32,
    "fp16": torch.float16,
    "bf16": torch.bfloat16,
}

# (atol, rtol). bf16 allows one ulp (2**-7): the Triton interpreter rounds fp32 to bf16 by
# truncation. fp32 matmul on a GPU runs as tf32.
_ELEMENTWISE_TOL = {
    torch.float32: (1e-6, 1e-6),
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1e-2, 1e-2),
}
_SOFTMAX_TOL = {
    torch.float32: (1e-6, 1e-4),
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1e-2, 1e-2),
}
_MATMUL_TOL = {
    torch.float32: (1e-2, 1e-2),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (2e-2, 2e-2),
}


def _dtype(name: str) -> torch.dtype:
    try:
        return _DTYPES[name]
    except KeyError:
        raise ValueError(f"unsupported dtype {name!r}: use float32, float16 or bfloat16") from None


def _dims(shape: Sequence[int], count: int | None, what: str) -> tuple[int, ...]:
    dims = tuple(int(d) for d in shape)
    if (count is not None and len(dims) != count) or not dims or min(dims) < 1:
        raise ValueError(f"{what}, got {tuple(shape)}")
    return dims


def _randn(
    shape: tuple[int, ...],
    dtype: torch.dtype,
    gen: torch.Generator,
    device: str,
    scale: float = 1.0,
) -> torch.Tensor:
    x = torch.randn(shape, generator=gen, device=device, dtype=torch.float32)
    if scale != 1.0:
        x.mul_(scale)
    return x.to(dtype)


def _case(
    fn: Callable[[], torch.Tensor],
    reference: Callable[[], torch.Tensor],
    inputs: list[torch.Tensor],
    bytes_moved: int,
    flops: int,
    tol: tuple[float, float],
) -> dict[str, Any]:
    return {
        "fn": fn,
        "bytes_moved": int(bytes_moved),
        "flops": int(flops),
        "reference": reference,
        "atol": tol[0],
        "rtol": tol[1],
        "inputs": inputs,
    }


def _vector_add_case(
    shape: Sequence[int], dtype: str, device: str, seed: int, op: Callable
) -> dict[str, Any]:
    dims = _dims(shape, None, "vector_add needs a shape of positive sizes")
    dt = _dtype(dtype)
    gen = torch.Generator(device=device).manual_seed(seed)
    x = _randn(dims, dt, gen, device)
    y = _randn(dims, dt, gen, device)
    n = math.prod(dims)
    return _case(
        lambda: op(x, y),
        lambda: (x.float() + y.float()).to(dt),
        [x, y],
        3 * n * x.element_size(),
        0,
        _ELEMENTWISE_TOL[dt],
    )


def _softmax_case(
    shape: Sequence[int], dtype: str, device: str, seed: int, op: Callable
) -> dict[str, Any]:
    rows, cols = _dims(shape, 2, "softmax needs a (rows, cols) shape of positive sizes")
    dt = _dtype(dtype)
    gen = torch.Generator(device=device).manual_seed(seed)
    x = _randn((rows, cols), dt, gen, device)
    return _case(
        lambda: op(x),
        lambda: torch.softmax(x.float(), dim=-1).to(dt),
        [x],
        2 * rows * cols * x.element_size(),
        0,
        _SOFTMAX_TOL[dt],
    )


def _matmul_case(
    shape: Sequence[int], dtype: str, device: str, seed: int, op: Callable
) -> dict[str, Any]:
    M, N, K = _dims(shape, 3, "matmul needs an (M, N, K) shape of positive sizes")
    dt = _dtype(dtype)
    gen = torch.Generator(device=device).manual_seed(seed)
    # Scaled so that c has unit variance whatever K is: the tolerances then mean the same thing.
    a = _randn((M, K), dt, gen, device, scale=K**-0.25)
    b = _randn((K, N), dt, gen, device, scale=K**-0.25)
    return _case(
        lambda: op(a, b),
        lambda: (a.float() @ b.float()).to(dt),
        [a, b],
        (M * K + K * N + M * N) * a.element_size(),
        2 * M * N * K,
        _MATMUL_TOL[dt],
    )


def vector_add(
    shape: Sequence[int], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """toyops.vector_add on two random tensors of ``shape``."""
    return _vector_add_case(shape, dtype, device, seed, _vector_add)


def softmax(
    shape: Sequence[int], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """toyops.softmax on a random ``(rows, cols)`` matrix."""
    return _softmax_case(shape, dtype, device, seed, _softmax)


def matmul(
    shape: Sequence[int], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """toyops.matmul on random ``(M, K)`` and ``(K, N)`` matrices, ``shape = (M, N, K)``."""
    return _matmul_case(shape, dtype, device, seed, _matmul)


def vector_add_ref(
    shape: Sequence[int], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """torch's ``x + y`` on the same inputs as ``vector_add``."""
    return _vector_add_case(shape, dtype, device, seed, torch.add)


def softmax_ref(
    shape: Sequence[int], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """torch.softmax on the same input as ``softmax``."""
    return _softmax_case(shape, dtype, device, seed, lambda x: torch.softmax(x, dim=-1))


def matmul_ref(
    shape: Sequence[int], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """torch.matmul (cuBLAS / hipBLASLt) on the same inputs as ``matmul``."""
    return _matmul_case(shape, dtype, device, seed, torch.matmul)


def matmul_cxx(
    shape: Sequence[int], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """The hand-written tiled matmul (csrc/matmul.cu, csrc/matmul.hip); needs a GPU."""
    return _matmul_case(shape, dtype, device, seed, lambda a, b: _cext.call("matmul", a, b))
