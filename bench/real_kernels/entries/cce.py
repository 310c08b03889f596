"""Bench entry points for Cut Cross-Entropy (``cut-cross-entropy``, apple/ml-cross-entropy).

Each function follows the bench entry contract (docs/bench-entry.md): it builds seeded inputs
outside ``fn``, and ``fn`` runs the package's op once. Only torch, the package and the standard
library are imported here, because this module runs inside a generated repository as
``entries/cce.py``.

Shapes are (B, V, D): B token embeddings of width D against a classifier of V rows. The logits
(B, V) are never materialised by the kernels; the references do materialise them, in fp32.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F


def _dtype(name: str) -> torch.dtype:
    dt = getattr(torch, name, None)
    if not isinstance(dt, torch.dtype):
        raise ValueError(f"unknown dtype {name!r}: give a torch dtype name such as 'bfloat16'")
    return dt


def _inputs(
    shape: tuple[int, ...], dtype: str, device: str, seed: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    if len(shape) != 3 or any(int(s) < 1 for s in shape):
        raise ValueError(
            f"shape {tuple(shape)} is not (tokens B, vocabulary V, width D): give 3 positive sizes"
        )
    b, v, d = (int(s) for s in shape)
    dt = _dtype(dtype)
    gen = torch.Generator(device=device).manual_seed(seed)
    e = (torch.randn((b, d), generator=gen, device=device) / d**0.25).to(dt)
    c = (torch.randn((v, d), generator=gen, device=device) / d**0.25).to(dt)
    targets = torch.randint(0, v, (b,), generator=gen, device=device)
    return e, c, targets


def lse_forward(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """The log-sum-exp of e @ c^T per row, without the logits: each (B, V) tile's partial LSE is
    merged into the row's running value under a spin lock (tl.atomic_cas) per block of rows."""
    from cut_cross_entropy.cce_lse_forward import cce_lse_forward_kernel

    e, c, _ = _inputs(shape, dtype, device, seed)
    b, v, d = e.shape[0], c.shape[0], e.shape[1]
    return {
        "fn": lambda: cce_lse_forward_kernel(e, c),
        "reference": lambda: torch.logsumexp(e.float() @ c.float().t(), dim=-1),
        "bytes_moved": (b + v) * d * e.element_size() + 4 * b,
        "flops": 2 * b * v * d,
        "atol": 2e-2,
        "rtol": 2e-3,
        "inputs": [e, c],
    }


def linear_cross_entropy(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """cut_cross_entropy.linear_cross_entropy forward, per-token losses: the LSE kernel above plus
    the indexed dot e_i . c_{target_i}, accumulated over D blocks with tl.atomic_add."""
    from cut_cross_entropy import linear_cross_entropy as cce_loss

    e, c, targets = _inputs(shape, dtype, device, seed)
    b, v, d = e.shape[0], c.shape[0], e.shape[1]
    return {
        "fn": lambda: cce_loss(e, c, targets, reduction="none", impl="cce"),
        "reference": lambda: F.cross_entropy(e.float() @ c.float().t(), targets, reduction="none"),
        "bytes_moved": (b + v) * d * e.element_size() + 12 * b,
        "flops": 2 * b * v * d,
        "atol": 2e-2,
        "rtol": 2e-3,
        "inputs": [e, c, targets],
    }


def linear_cross_entropy_bwd(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """The gradients of cut_cross_entropy.linear_cross_entropy (summed loss) with respect to e and c:
    the forward's LSE kernel, then _cce_backward_kernel, which recomputes each (B, V) tile's
    softmax and adds its share of dE and dC under spin locks (tl.atomic_cas) per block of rows.

    Gradient filtering is off (filter_eps=None), so the result is exact up to rounding.
    """
    from cut_cross_entropy import linear_cross_entropy as cce_loss

    e0, c0, targets = _inputs(shape, dtype, device, seed)
    b, v, d = e0.shape[0], c0.shape[0], e0.shape[1]
    e = e0.detach().requires_grad_(True)
    c = c0.detach().requires_grad_(True)

    def fn() -> tuple[torch.Tensor, torch.Tensor]:
        loss = cce_loss(e, c, targets, reduction="sum", filter_eps=None, impl="cce")
        de, dc = torch.autograd.grad(loss, (e, c))
        return de, dc

    def reference() -> tuple[torch.Tensor, torch.Tensor]:
        ef = e0.float().requires_grad_(True)
        cf = c0.float().requires_grad_(True)
        loss = F.cross_entropy(ef @ cf.t(), targets, reduction="sum")
        de, dc = torch.autograd.grad(loss, (ef, cf))
        return de.to(e0.dtype), dc.to(c0.dtype)

    return {
        "fn": fn,
        "reference": reference,
        "bytes_moved": 3 * (b + v) * d * e0.element_size() + 12 * b,
        "flops": 6 * b * v * d,
        "atol": 2e-2,
        "rtol": 2e-2,
        "inputs": [e, c, targets],
    }
