"""Bench entry points for kernels of flash-linear-attention (``fla-core``, fla-org/flash-linear-attention).

Each function follows the bench entry contract (docs/bench-entry.md): it builds seeded inputs
outside ``fn``, and ``fn`` runs the package's op once. Only torch, the package and the standard
library are imported here, because this module runs inside a generated repository as
``entries/fla.py``. The catalogue ``catalogue/fla.toml`` says which kernel each entry exercises.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

# Loose element-wise tolerances for the chunked scans: the kernels accumulate in fp32 but read and
# write bf16/fp16, and the references run in fp32, so a few ulps of the output's scale differ.
SCAN_TOL = {"float32": (2e-3, 2e-3), "float16": (2e-2, 2e-2), "bfloat16": (6e-2, 6e-2)}
NORM_TOL = {"float32": (1e-4, 1e-4), "float16": (1e-2, 1e-2), "bfloat16": (2e-2, 2e-2)}


def _dtype(name: str) -> torch.dtype:
    dt = getattr(torch, name, None)
    if not isinstance(dt, torch.dtype):
        raise ValueError(f"unknown dtype {name!r}: give a torch dtype name such as 'bfloat16'")
    return dt


def _rank(shape: tuple[int, ...], rank: int, what: str) -> tuple[int, ...]:
    if len(shape) != rank or any(int(s) < 1 for s in shape):
        raise ValueError(f"shape {tuple(shape)} is not {what}: give {rank} positive sizes")
    return tuple(int(s) for s in shape)


def _randn(
    size: tuple[int, ...], gen: torch.Generator, device: str, dt: torch.dtype, scale: float = 1.0
) -> torch.Tensor:
    return (torch.randn(size, generator=gen, device=device, dtype=torch.float32) * scale).to(dt)


def _gen(device: str, seed: int) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


def layer_norm(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """fla.modules.layernorm.layer_norm forward on (T, D); D <= 512 takes the autotuned tile kernel."""
    from fla.modules.norm.layernorm import layer_norm as fla_layer_norm

    t, d = _rank(shape, 2, "(tokens, features)")
    dt = _dtype(dtype)
    gen = _gen(device, seed)
    x = _randn((t, d), gen, device, dt)
    w = _randn((d,), gen, device, dt, 0.1) + 1
    b = _randn((d,), gen, device, dt, 0.1)
    atol, rtol = NORM_TOL[dtype]
    return {
        "fn": lambda: fla_layer_norm(x, w, b, eps=1e-5),
        "reference": lambda: F.layer_norm(x.float(), (d,), w.float(), b.float(), 1e-5).to(dt),
        "bytes_moved": 2 * x.numel() * x.element_size() + 2 * d * x.element_size(),
        "flops": 0,
        "atol": atol,
        "rtol": rtol,
        "inputs": [x, w, b],
    }


def layer_norm_bwd(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """fla's layer-norm backward: dx per row, dw/db as per-program partial sums (NS, D) summed after."""
    from fla.modules.norm.layernorm import layer_norm_bwd as fla_layer_norm_bwd

    t, d = _rank(shape, 2, "(tokens, features)")
    dt = _dtype(dtype)
    gen = _gen(device, seed)
    x = _randn((t, d), gen, device, dt)
    dy = _randn((t, d), gen, device, dt)
    w = _randn((d,), gen, device, dt, 0.1) + 1
    b = _randn((d,), gen, device, dt, 0.1)
    xf = x.float()
    mean = xf.mean(-1)
    rstd = torch.rsqrt(xf.var(-1, unbiased=False) + 1e-5)

    def fn() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        dx, dw, db, _ = fla_layer_norm_bwd(dy, x, w, b, mean=mean, rstd=rstd)
        return dx, dw, db

    def reference() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        xr = xf.clone().requires_grad_(True)
        wr = w.float().requires_grad_(True)
        br = b.float().requires_grad_(True)
        y = F.layer_norm(xr, (d,), wr, br, 1e-5)
        gx, gw, gb = torch.autograd.grad(y, (xr, wr, br), dy.float())
        return gx.to(dt), gw.to(dt), gb.to(dt)

    # dw and db are fp32 sums over T rows cast to the weight's dtype, as the reference's are: both
    # round nearly the same fp32 value, so the per-dtype tolerances hold at any T.
    atol, rtol = NORM_TOL[dtype]
    return {
        "fn": fn,
        "reference": reference,
        "bytes_moved": 3 * x.numel() * x.element_size() + 2 * t * 4 + 4 * d * x.element_size(),
        "flops": 0,
        "atol": atol,
        "rtol": rtol,
        "inputs": [x, dy, w, b],
    }


def l2norm(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """fla.modules.l2norm.l2norm on (T, D): each row divided by its L2 norm (D <= 512: tiled kernel)."""
    from fla.modules.norm.l2norm import l2norm as fla_l2norm

    t, d = _rank(shape, 2, "(tokens, features)")
    dt = _dtype(dtype)
    x = _randn((t, d), _gen(device, seed), device, dt)
    atol, rtol = NORM_TOL[dtype]
    return {
        "fn": lambda: fla_l2norm(x),
        "reference": lambda: F.normalize(x.float(), dim=-1, eps=1e-6).to(dt),
        "bytes_moved": 2 * x.numel() * x.element_size() + 4 * t,
        "flops": 0,
        "atol": atol,
        "rtol": rtol,
        "inputs": [x],
    }


def logsigmoid(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """fla.modules.activations.logsigmoid on (T, D): an element-wise kernel with 30 autotune configs."""
    from fla.modules.activations.ops import logsigmoid as fla_logsigmoid

    t, d = _rank(shape, 2, "(tokens, features)")
    dt = _dtype(dtype)
    x = _randn((t, d), _gen(device, seed), device, dt, 3.0)
    atol, rtol = NORM_TOL[dtype]
    return {
        "fn": lambda: fla_logsigmoid(x),
        "reference": lambda: F.logsigmoid(x.float()).to(dt),
        "bytes_moved": 2 * x.numel() * x.element_size(),
        "flops": 0,
        "atol": atol,
        "rtol": rtol,
        "inputs": [x],
    }


def swiglu(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """fla.modules.activations.swiglu(x, y) = silu(x) * y on two (T, D) inputs."""
    from fla.modules.activations.ops import swiglu as fla_swiglu

    t, d = _rank(shape, 2, "(tokens, features)")
    dt = _dtype(dtype)
    gen = _gen(device, seed)
    x = _randn((t, d), gen, device, dt)
    y = _randn((t, d), gen, device, dt)
    atol, rtol = NORM_TOL[dtype]
    return {
        "fn": lambda: fla_swiglu(x, y),
        "reference": lambda: (F.silu(x.float()) * y.float()).to(dt),
        "bytes_moved": 3 * x.numel() * x.element_size(),
        "flops": 0,
        "atol": atol,
        "rtol": rtol,
        "inputs": [x, y],
    }


def chunk_local_cumsum(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """fla.ops.utils.chunk_local_cumsum on log-gates g (B, T, H): prefix sums within 64-token chunks."""
    from fla.ops.utils.cumsum import chunk_local_cumsum as fla_cumsum

    bsz, t, h = _rank(shape, 3, "(batch, tokens, heads)")
    dt = _dtype(dtype)
    g = F.logsigmoid(_randn((bsz, t, h), _gen(device, seed), device, torch.float32)).to(dt)
    chunk = 64

    def reference() -> torch.Tensor:
        pad = (-t) % chunk
        gp = F.pad(g.float(), (0, 0, 0, pad)).view(bsz, (t + pad) // chunk, chunk, h)
        return gp.cumsum(2).view(bsz, t + pad, h)[:, :t]

    return {
        "fn": lambda: fla_cumsum(g, chunk_size=chunk),
        "reference": reference,
        "bytes_moved": g.numel() * (g.element_size() + 4),
        "flops": 0,
        "atol": 1e-3,
        "rtol": 1e-3,
        "inputs": [g],
    }


def causal_conv1d(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """fla.modules.causal_conv1d.causal_conv1d (Triton backend) on x (B, T, D): the depthwise
    causal convolution of width 4 with bias and SiLU, the short convolution of Mamba/DeltaNet layers."""
    from fla.modules.causal_conv1d import causal_conv1d as fla_causal_conv1d

    bsz, t, d = _rank(shape, 3, "(batch, tokens, channels)")
    dt = _dtype(dtype)
    gen = _gen(device, seed)
    width = 4
    x = _randn((bsz, t, d), gen, device, dt)
    w = _randn((d, width), gen, device, dt, 0.5)
    b = _randn((d,), gen, device, dt, 0.1)

    def reference() -> torch.Tensor:
        y = F.conv1d(
            x.float().transpose(1, 2), w.float()[:, None, :], b.float(), padding=width - 1, groups=d
        )
        return F.silu(y[..., :t]).transpose(1, 2).to(dt)

    atol, rtol = NORM_TOL[dtype]
    return {
        "fn": lambda: fla_causal_conv1d(x, w, b, activation="silu", backend="triton")[0],
        "reference": reference,
        "bytes_moved": 2 * x.numel() * x.element_size() + (width + 1) * d * x.element_size(),
        "flops": 2 * width * x.numel(),
        "atol": atol,
        "rtol": rtol,
        "inputs": [x, w, b],
    }


def _scan_inputs(
    shape: tuple[int, ...], dtype: str, device: str, seed: int, *, normalise_k: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.dtype]:
    bsz, t, h, d = _rank(shape, 4, "(batch, tokens, heads, head_dim)")
    dt = _dtype(dtype)
    gen = _gen(device, seed)
    q = _randn((bsz, t, h, d), gen, device, dt)
    k = _randn((bsz, t, h, d), gen, device, torch.float32)
    if normalise_k:
        k = F.normalize(k, dim=-1)
    k = k.to(dt)
    v = _randn((bsz, t, h, d), gen, device, dt)
    # log forget gates in (-0.5, 0): states decay, so long sequences stay well scaled
    g = (F.logsigmoid(_randn((bsz, t, h), gen, device, torch.float32)) / 8).to(dt)
    return q, k, v, g, dt


def chunk_fwd_h_split(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """fla.ops.common.chunk_h_split.chunk_fwd_h: the K^T V state over (B, T, H, D), in two passes.

    Pass one writes each 256-token split's unreduced state to a workspace (NS, H, K, V); pass two
    reduces the splits in order into the state at every split start and the final state.
    """
    from fla.ops.common.chunk_h_split import chunk_fwd_h

    _q, k, v, _g, _dt = _scan_inputs(shape, dtype, device, seed, normalise_k=True)
    bsz, t, h, d = k.shape
    split = 256

    def fn() -> tuple[torch.Tensor, torch.Tensor]:
        hr, ht = chunk_fwd_h(k, v, None, None, None, None, True, split_size=split)
        return hr, ht

    def reference() -> tuple[torch.Tensor, torch.Tensor]:
        ns = -(-t // split)
        kf, vf = k.float(), v.float()
        state = torch.zeros(bsz, h, d, d, device=k.device, dtype=torch.float32)
        starts = []
        for s in range(ns):
            starts.append(state.clone())
            sl = slice(s * split, min(t, (s + 1) * split))
            state = state + torch.einsum("bthk,bthv->bhkv", kf[:, sl], vf[:, sl])
        hr = torch.stack(starts, 1).reshape(bsz * ns, h, d, d)
        return hr, state

    atol, rtol = SCAN_TOL[dtype]
    return {
        "fn": fn,
        "reference": reference,
        "bytes_moved": 2 * k.numel() * k.element_size()
        + 2 * 4 * bsz * h * d * d * (-(-t // split)),
        "flops": 2 * bsz * t * h * d * d,
        "atol": atol * 4,
        "rtol": rtol,
        "inputs": [k, v],
    }


def chunk_simple_gla(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """fla.ops.simple_gla.chunk_simple_gla forward on (B, T, H, D): chunked scan with scalar gates."""
    from fla.ops.simple_gla import chunk_simple_gla as fla_chunk_simple_gla
    from fla.ops.simple_gla.naive import naive_chunk_simple_gla

    q, k, v, g, dt = _scan_inputs(shape, dtype, device, seed, normalise_k=True)
    bsz, t, h, d = q.shape
    scale = d**-0.5
    atol, rtol = SCAN_TOL[dtype]
    return {
        "fn": lambda: fla_chunk_simple_gla(q, k, v, g=g, scale=scale)[0],
        "reference": lambda: naive_chunk_simple_gla(q, k, v, g.float(), scale=scale)[0].to(dt),
        "bytes_moved": 4 * q.numel() * q.element_size() + g.numel() * g.element_size(),
        "flops": 4 * bsz * t * h * d * (d + 64),
        "atol": atol,
        "rtol": rtol,
        "inputs": [q, k, v, g],
    }


def chunk_gated_delta_rule(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """fla.ops.gated_delta_rule.chunk_gated_delta_rule forward on (B, T, H, D) (the Gated DeltaNet layer).

    Runs the chunk pipeline: gate cumsum, K K^T per chunk, triangular solve, WY representation,
    the inter-chunk state recurrence and the output kernel.
    """
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule as fla_chunk_gdr
    from fla.ops.gated_delta_rule.naive import naive_recurrent_gated_delta_rule

    q, k, v, g, dt = _scan_inputs(shape, dtype, device, seed, normalise_k=True)
    bsz, t, h, d = q.shape
    beta = torch.sigmoid(_randn((bsz, t, h), _gen(device, seed + 7919), device, torch.float32)).to(
        dt
    )
    scale = d**-0.5
    atol, rtol = SCAN_TOL[dtype]
    return {
        "fn": lambda: fla_chunk_gdr(q, k, v, g, beta, scale=scale)[0],
        "reference": lambda: naive_recurrent_gated_delta_rule(
            q.float(), k.float(), v.float(), beta.float(), g.float(), scale=scale
        )[0].to(dt),
        "bytes_moved": 4 * q.numel() * q.element_size() + 2 * g.numel() * g.element_size(),
        "flops": 6 * bsz * t * h * d * (d + 64),
        "atol": atol,
        "rtol": rtol,
        "inputs": [q, k, v, g, beta],
    }


def fused_recurrent_gated_delta_rule(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """fla.ops.gated_delta_rule.fused_recurrent_gated_delta_rule on (B, T, H, D), from a given state.

    The decode path: one program per (batch, head, value block) walks the tokens one by one,
    reading the initial state and writing the final one.
    """
    from fla.ops.gated_delta_rule import fused_recurrent_gated_delta_rule as fla_fused_gdr
    from fla.ops.gated_delta_rule.naive import naive_recurrent_gated_delta_rule

    q, k, v, g, dt = _scan_inputs(shape, dtype, device, seed, normalise_k=True)
    bsz, t, h, d = q.shape
    gen = _gen(device, seed + 7919)
    beta = torch.sigmoid(_randn((bsz, t, h), gen, device, torch.float32)).to(dt)
    h0 = _randn((bsz, h, d, d), gen, device, torch.float32, 0.1)
    scale = d**-0.5

    def fn() -> tuple[torch.Tensor, torch.Tensor]:
        o, ht = fla_fused_gdr(
            q, k, v, g=g, beta=beta, scale=scale, initial_state=h0, output_final_state=True
        )
        return o, ht

    def reference() -> tuple[torch.Tensor, torch.Tensor]:
        o, ht = naive_recurrent_gated_delta_rule(
            q.float(),
            k.float(),
            v.float(),
            beta.float(),
            g.float(),
            scale=scale,
            initial_state=h0,
            output_final_state=True,
        )
        return o.to(dt), ht.float()

    atol, rtol = SCAN_TOL[dtype]
    return {
        "fn": fn,
        "reference": reference,
        "bytes_moved": 4 * q.numel() * q.element_size() + 2 * h0.numel() * 4,
        "flops": 6 * bsz * t * h * d * d,
        "atol": atol,
        "rtol": rtol,
        "inputs": [q, k, v, g, beta, h0],
    }


def cross_entropy(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> dict[str, Any]:
    """fla.modules.fused_cross_entropy.cross_entropy_loss forward on logits (N, V), per-row losses.

    With V > 65536 each row's vocabulary is split into 64K blocks: the first kernel writes partial
    losses and log-sum-exps to a (NV, N) workspace, a second kernel reduces them.
    """
    from fla.modules.fused_cross_entropy import cross_entropy_loss

    n, vocab = _rank(shape, 2, "(rows, vocabulary)")
    dt = _dtype(dtype)
    gen = _gen(device, seed)
    logits = _randn((n, vocab), gen, device, dt, 2.0)
    target = torch.randint(0, vocab, (n,), generator=gen, device=device)
    return {
        "fn": lambda: cross_entropy_loss(logits, target)[0],
        "reference": lambda: F.cross_entropy(logits.float(), target, reduction="none"),
        "bytes_moved": logits.numel() * logits.element_size() + 12 * n,
        "flops": 0,
        "atol": 2e-3,
        "rtol": 2e-3,
        "inputs": [logits, target],
    }
