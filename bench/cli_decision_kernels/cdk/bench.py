"""Bench entry points (``entry(shape, dtype, *, device, seed) -> dict``) for the two kernels.

``EXTRA`` is the share of extra work a head does: ``"kernel"`` for every shape of that kernel,
``"kernel:AxB"`` for one shape; the base and an identical head leave it empty."""

from __future__ import annotations

import math

import torch

from . import kernels

EXTRA: dict[str, float] = {}
_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def extra_share(name: str, shape: tuple[int, ...]) -> float:
    return EXTRA.get(f"{name}:{'x'.join(map(str, shape))}", EXTRA.get(name, 0.0))


def _interpreter_fix(device: str) -> None:
    """On the CPU the kernels run in Triton's interpreter; the build script copies the fixture's
    NumPy fix for it beside this file."""
    if device == "cpu":
        try:
            from . import interpreter_compat
        except ImportError:
            return
        interpreter_compat.apply()


def _randn(shape, dtype, device, seed):
    _interpreter_fix(device)
    g = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(shape, generator=g, device=device, dtype=torch.float32).to(_DTYPES[dtype])


def scaled_add(shape, dtype, *, device="cuda", seed=0):
    n = math.prod(shape)
    x = _randn((n,), dtype, device, seed)
    y = _randn((n,), dtype, device, seed + 7919)
    out = torch.empty_like(x)
    n_extra = min(n, 16 * round(extra_share("scaled_add", tuple(shape)) * n / 16))
    scratch = kernels.zeros_like_scratch(n_extra, x)
    return {
        "fn": lambda: kernels.scaled_add(x, y, out, scratch, n_extra),
        "reference": lambda: (2.0 * x.float() + y.float()).to(x.dtype),
        "inputs": [x, y],
        "bytes_moved": 3 * n * x.element_size(),
        "flops": 2 * n,
        "atol": 1e-2 if dtype == "bfloat16" else 1e-5,
        "rtol": 1e-2 if dtype == "bfloat16" else 1e-5,
    }


def row_sum(shape, dtype, *, device="cuda", seed=0):
    m, n = shape
    x = _randn((m, n), dtype, device, seed)
    out = torch.empty(m, dtype=x.dtype, device=device)
    m_extra = min(m, round(extra_share("row_sum", tuple(shape)) * m))
    scratch = kernels.zeros_like_scratch(m_extra, out)
    return {
        "fn": lambda: kernels.row_sum(x, out, scratch, m_extra),
        "reference": lambda: x.float().sum(dim=1).to(x.dtype),
        "inputs": [x],
        "bytes_moved": m * n * x.element_size() + m * x.element_size(),
        "flops": m * n,
        "atol": 1e-2 * math.sqrt(n),
        "rtol": 1e-2 if dtype == "bfloat16" else 1e-4,
    }
