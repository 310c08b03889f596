"""Bench entry points for FlagGems' Triton operators (PyPI ``flag-gems``, pinned in wheels.txt).

Each function follows the bench entry contract (docs/bench-entry.md): it builds seeded inputs of
the given shape and dtype outside ``fn`` and returns ``fn`` (one call of the FlagGems operator),
the bytes one call moves, and a torch reference computed in float32.

FlagGems is configured before its import, for every process that loads this module:

- ``GEMS_VENDOR=nvidia``: the vendor is named instead of found by running every vendor's
  device-query command (``nvidia-smi``, ``rocm-smi``, ...) in a subprocess at import, which also
  lets the module import in a process that sees no GPU (the compile-only helpers, a CPU check);
- ``FLAGGEMS_CACHE_DIR`` and ``FLAGGEMS_DB_URL``: a fresh folder per process, removed at exit,
  for FlagGems' generated code and its SQLite database of autotuning results. By default both
  live in ``~/.flaggems``, shared by every process of the user: base and head would then read
  each other's tuned configs, and a second run would skip autotuning altogether. Private to the
  process, each side autotunes on its first call, as a plain ``triton.autotune`` kernel does.

A ``FLAGGEMS_CACHE_DIR`` or ``GEMS_VENDOR`` already set in the environment is left as it is,
except a cache folder this module made in another process (a parent that loaded it).
"""

from __future__ import annotations

import atexit
import math
import os
import shutil
import tempfile
from collections.abc import Callable
from typing import Any

_OWNER = "FLAGGEMS_CACHE_OWNER_PID"  # the process that made FLAGGEMS_CACHE_DIR below


def _remove_cache(path: str, pid: int) -> None:
    if os.getpid() == pid:  # not in a forked child that exits through Python
        shutil.rmtree(path, ignore_errors=True)


# a folder this module made in another process (a parent that loaded it) is not reused either
if "FLAGGEMS_CACHE_DIR" not in os.environ or os.environ.get(_OWNER, str(os.getpid())) != str(
    os.getpid()
):
    _CACHE = tempfile.mkdtemp(prefix="flaggems-")
    atexit.register(_remove_cache, _CACHE, os.getpid())
    os.environ["FLAGGEMS_CACHE_DIR"] = _CACHE
    os.environ["FLAGGEMS_DB_URL"] = f"sqlite:///{_CACHE}/tuned_configs.db"
    os.environ[_OWNER] = str(os.getpid())
os.environ.setdefault(
    "FLAGGEMS_DB_URL", f"sqlite:///{os.environ['FLAGGEMS_CACHE_DIR']}/tuned_configs.db"
)
os.environ.setdefault("GEMS_VENDOR", "nvidia")

import flag_gems  # noqa: E402  (configured by the environment above)
import torch  # noqa: E402

Case = dict[str, Any]


def _gen(device: str, seed: int) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


def _randn(
    shape: tuple[int, ...], dtype: str, device: str, gen: torch.Generator, scale: float = 1.0
) -> torch.Tensor:
    x = torch.randn(shape, generator=gen, device=device, dtype=torch.float32)
    return (x * scale).to(getattr(torch, dtype))


def _size(dtype: str) -> int:
    return torch.empty((), dtype=getattr(torch, dtype)).element_size()


def _dims(shape: tuple[int, ...], rank: int, name: str) -> tuple[int, ...]:
    if len(shape) != rank or any(int(d) < 1 for d in shape):
        raise ValueError(
            f"{name} takes a shape of {rank} positive sizes, got {tuple(shape)}; "
            f"give {rank} dimensions as the catalogue's shapes do"
        )
    return tuple(int(d) for d in shape)


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


def softmax(shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0) -> Case:
    """flag_gems.softmax over the last dimension of a (rows, cols) matrix."""
    rows, cols = _dims(shape, 2, "softmax")
    x = _randn((rows, cols), dtype, device, _gen(device, seed))
    return _case(
        lambda: flag_gems.softmax(x, -1),
        lambda: torch.softmax(x.float(), dim=-1).to(x.dtype),
        2 * x.numel() * x.element_size(),
        [x],
    )


def _layer_norm_inputs(
    shape: tuple[int, ...], dtype: str, device: str, seed: int, name: str
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    rows, cols = _dims(shape, 2, name)
    gen = _gen(device, seed)
    x = _randn((rows, cols), dtype, device, gen)
    w = (1.0 + 0.1 * torch.randn((cols,), generator=gen, device=device)).to(x.dtype)
    b = (0.1 * torch.randn((cols,), generator=gen, device=device)).to(x.dtype)
    return x, w, b


def layer_norm(shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0) -> Case:
    """flag_gems.layer_norm forward over the last dimension; checks y, mean and rstd."""
    x, w, b = _layer_norm_inputs(shape, dtype, device, seed, "layer_norm")
    rows, cols = x.shape
    eps = 1e-5

    def reference() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        xf = x.float()
        mean = xf.mean(dim=1)
        rstd = torch.rsqrt(xf.var(dim=1, unbiased=False) + eps)
        y = torch.nn.functional.layer_norm(xf, (cols,), w.float(), b.float(), eps)
        return y.to(x.dtype), mean, rstd

    def fn() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        y, mean, rstd = flag_gems.layer_norm(x, [cols], w, b, eps)
        return y, mean.reshape(rows), rstd.reshape(rows)

    esize = x.element_size()
    moved = 2 * x.numel() * esize + 2 * cols * esize + 2 * rows * 4
    return _case(fn, reference, moved, [x, w, b], atol=2e-2, rtol=1e-2)


def layer_norm_backward(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> Case:
    """flag_gems.layer_norm_backward: dx per row, then dw and db reduced over the rows."""
    x, w, b = _layer_norm_inputs(shape, dtype, device, seed, "layer_norm_backward")
    rows, cols = x.shape
    eps = 1e-5
    dy = _randn((rows, cols), dtype, device, _gen(device, seed + 7919))
    xf = x.float()
    mean = xf.mean(dim=1)
    rstd = torch.rsqrt(xf.var(dim=1, unbiased=False) + eps)

    def fn() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return flag_gems.layer_norm_backward(dy, x, [cols], mean, rstd, w, b, [True, True, True])

    def reference() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        xr = xf.clone().requires_grad_(True)
        wr = w.float().requires_grad_(True)
        br = b.float().requires_grad_(True)
        y = torch.nn.functional.layer_norm(xr, (cols,), wr, br, eps)
        dx, dw, db = torch.autograd.grad(y, (xr, wr, br), dy.float())
        return dx.to(x.dtype), dw.to(w.dtype), db.to(b.dtype)

    esize = x.element_size()
    # dx reads dy and x and writes dx; dw/db read dy and x again and write two vectors
    moved = 5 * x.numel() * esize + 3 * cols * esize + 4 * rows * 4
    # dw and db sum `rows` terms: their error grows with the row count
    atol = 2e-2 * max(1.0, math.sqrt(rows) / 8)
    return _case(fn, reference, moved, [dy, x, w, b], atol=atol, rtol=2e-2)


def rms_norm(shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0) -> Case:
    """flag_gems.rms_norm over the last dimension of a (rows, cols) matrix."""
    x, w, _ = _layer_norm_inputs(shape, dtype, device, seed, "rms_norm")
    cols = x.shape[1]
    eps = 1e-5

    def reference() -> torch.Tensor:
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps) * w.float()
        return y.to(x.dtype)

    esize = x.element_size()
    return _case(
        lambda: flag_gems.rms_norm(x, [cols], w, eps),
        reference,
        2 * x.numel() * esize + cols * esize,
        [x, w],
        atol=2e-2,
        rtol=1e-2,
    )


def _gated_inputs(
    shape: tuple[int, ...], dtype: str, device: str, seed: int, name: str
) -> tuple[torch.Tensor, torch.Tensor]:
    rows, cols = _dims(shape, 2, name)
    gen = _gen(device, seed)
    return _randn((rows, cols), dtype, device, gen), _randn((rows, cols), dtype, device, gen)


def silu_and_mul(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> Case:
    """flag_gems.silu_and_mul(a, b) = silu(a) * b, the SwiGLU gate of an MLP."""
    a, b = _gated_inputs(shape, dtype, device, seed, "silu_and_mul")
    return _case(
        lambda: flag_gems.silu_and_mul(a, b),
        lambda: (torch.nn.functional.silu(a.float()) * b.float()).to(a.dtype),
        3 * a.numel() * a.element_size(),
        [a, b],
    )


def gelu_and_mul(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> Case:
    """flag_gems.gelu_and_mul(a, b, "tanh") = gelu_tanh(a) * b, the GeGLU gate of an MLP."""
    a, b = _gated_inputs(shape, dtype, device, seed, "gelu_and_mul")
    return _case(
        lambda: flag_gems.gelu_and_mul(a, b, "tanh"),
        lambda: (torch.nn.functional.gelu(a.float(), approximate="tanh") * b.float()).to(a.dtype),
        3 * a.numel() * a.element_size(),
        [a, b],
    )


def cross_entropy(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> Case:
    """flag_gems.cross_entropy_loss on (tokens, vocab) logits and class targets, mean reduction.

    A per-row loss kernel (autotuned over its block sizes) writes a float32 workspace, and a
    one-program kernel sums it: a two-pass reduction.
    """
    rows, vocab = _dims(shape, 2, "cross_entropy")
    gen = _gen(device, seed)
    x = _randn((rows, vocab), dtype, device, gen)
    target = torch.randint(0, vocab, (rows,), generator=gen, device=device)

    def reference() -> torch.Tensor:
        loss = torch.nn.functional.cross_entropy(x.float(), target)
        return loss.to(x.dtype)

    moved = x.numel() * x.element_size() + rows * (8 + 4 + 4) + x.element_size()
    return _case(
        lambda: flag_gems.cross_entropy_loss(x, target),
        reference,
        moved,
        [x, target],
        atol=2e-2,
        rtol=1e-2,
    )


def sum_all(shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0) -> Case:
    """flag_gems.sum of a whole vector: per-block partial sums into a workspace, then one more
    program sums the workspace (a two-pass split reduction)."""
    (n,) = _dims(shape, 1, "sum_all")
    x = _randn((n,), dtype, device, _gen(device, seed))
    # the partial sums are stored in the input's dtype (sqrt(n) of them, each of size about
    # n ** 0.25), so their rounding errors add up to about 2.4e-4 * sqrt(n) for float16 (eight
    # times that for bfloat16)
    atol = max(1e-2, 4e-3 * math.sqrt(n)) * (8 if dtype == "bfloat16" else 1)
    return _case(
        lambda: flag_gems.sum(x),
        lambda: x.float().sum().to(x.dtype),
        n * x.element_size() + x.element_size(),
        [x],
        atol=atol,
        rtol=2e-2,
    )


def argmax(shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0) -> Case:
    """flag_gems.argmax of a whole vector: per-block maxima and their indices into a workspace,
    then one program picks among them (a two-pass split reduction)."""
    (n,) = _dims(shape, 1, "argmax")
    gen = _gen(device, seed)
    # normal values below 4 and one 8 at a random place: the maximum is unique in any dtype
    x = torch.randn((n,), generator=gen, device=device).clamp(-4.0, 4.0)
    where = torch.randint(0, n, (1,), generator=gen, device=device)
    x = x.index_fill(0, where, 8.0).to(getattr(torch, dtype))
    return _case(
        lambda: flag_gems.argmax(x),
        lambda: x.float().argmax(),
        n * x.element_size() + 8,
        [x],
        atol=0.0,
        rtol=0.0,
    )


def cumsum(shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0) -> Case:
    """flag_gems.cumsum along the last dimension of a (rows, cols) matrix."""
    rows, cols = _dims(shape, 2, "cumsum")
    x = _randn((rows, cols), dtype, device, _gen(device, seed))
    atol = 2e-2 * max(1.0, math.sqrt(cols) / 8)
    return _case(
        lambda: flag_gems.cumsum(x, 1),
        lambda: x.float().cumsum(1).to(x.dtype),
        2 * x.numel() * x.element_size(),
        [x],
        atol=atol,
        rtol=2e-2,
    )


def _matrices(
    m: int, n: int, k: int, dtype: str, device: str, seed: int, batch: tuple[int, ...] = ()
) -> tuple[torch.Tensor, torch.Tensor]:
    gen = _gen(device, seed)
    # scaled so that the products are of order one whatever k is
    a = _randn((*batch, m, k), dtype, device, gen, scale=k**-0.25)
    b = _randn((*batch, k, n), dtype, device, gen, scale=k**-0.25)
    return a, b


def mm(shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0) -> Case:
    """flag_gems.mm of an (M, K) by a (K, N) matrix; shape is (M, N, K). Autotuned (libtuner)."""
    m, n, k = _dims(shape, 3, "mm")
    a, b = _matrices(m, n, k, dtype, device, seed)
    esize = a.element_size()
    return _case(
        lambda: flag_gems.mm(a, b),
        lambda: (a.float() @ b.float()).to(a.dtype),
        (m * k + k * n + m * n) * esize,
        [a, b],
        flops=2 * m * n * k,
        atol=2e-2,
        rtol=2e-2,
    )


def bmm(shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0) -> Case:
    """flag_gems.bmm of (B, M, K) by (B, K, N); shape is (B, M, N, K). Autotuned (libtuner)."""
    batch, m, n, k = _dims(shape, 4, "bmm")
    a, b = _matrices(m, n, k, dtype, device, seed, (batch,))
    esize = a.element_size()
    return _case(
        lambda: flag_gems.bmm(a, b),
        lambda: torch.bmm(a.float(), b.float()).to(a.dtype),
        batch * (m * k + k * n + m * n) * esize,
        [a, b],
        flops=2 * batch * m * n * k,
        atol=2e-2,
        rtol=2e-2,
    )


def addmm(shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0) -> Case:
    """flag_gems.addmm(bias, a, b) = bias + a @ b with a row-vector bias; shape is (M, N, K)."""
    m, n, k = _dims(shape, 3, "addmm")
    a, b = _matrices(m, n, k, dtype, device, seed)
    bias = _randn((n,), dtype, device, _gen(device, seed + 104729))
    esize = a.element_size()
    return _case(
        lambda: flag_gems.addmm(bias, a, b),
        lambda: (bias.float() + a.float() @ b.float()).to(a.dtype),
        (m * k + k * n + m * n + n) * esize,
        [bias, a, b],
        flops=2 * m * n * k,
        atol=2e-2,
        rtol=2e-2,
    )


def embedding_backward(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> Case:
    """flag_gems.embedding_dense_backward: each token's gradient row added into its word's row
    of a float32 table with tl.atomic_add; shape is (tokens, dim, vocab)."""
    tokens, dim, vocab = _dims(shape, 3, "embedding_backward")
    gen = _gen(device, seed)
    grad = _randn((tokens, dim), dtype, device, gen)
    indices = torch.randint(0, vocab, (tokens,), generator=gen, device=device)

    def reference() -> torch.Tensor:
        table = torch.zeros((vocab, dim), dtype=torch.float32, device=device)
        table.index_add_(0, indices, grad.float())
        return table.to(grad.dtype)

    esize = grad.element_size()
    # zero the float32 table, add the token rows into it, cast it to the gradient's dtype
    moved = tokens * (dim * esize + 8) + vocab * dim * (4 + 4 + 4 + esize)
    return _case(
        lambda: flag_gems.embedding_dense_backward(grad, indices, vocab, -1, False),
        reference,
        moved,
        [grad, indices],
        atol=2e-2,
        rtol=1e-2,
    )


def count_nonzero(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> Case:
    """flag_gems.count_nonzero of a whole vector: each program adds its count into one int64
    with tl.atomic_add."""
    (n,) = _dims(shape, 1, "count_nonzero")
    gen = _gen(device, seed)
    x = _randn((n,), dtype, device, gen)
    x = torch.where(torch.rand((n,), generator=gen, device=device) < 0.5, torch.zeros_like(x), x)
    return _case(
        lambda: flag_gems.count_nonzero(x),
        lambda: torch.count_nonzero(x),
        n * x.element_size() + 8,
        [x],
        atol=0.0,
        rtol=0.0,
    )


def index_select(
    shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0
) -> Case:
    """flag_gems.index_select along the last dimension: (rows, cols) gathered by cols random
    column indices (with repeats)."""
    rows, cols = _dims(shape, 2, "index_select")
    gen = _gen(device, seed)
    x = _randn((rows, cols), dtype, device, gen)
    index = torch.randint(0, cols, (cols,), generator=gen, device=device)
    return _case(
        lambda: flag_gems.index_select(x, 1, index),
        lambda: torch.index_select(x, 1, index),
        2 * x.numel() * x.element_size() + index.numel() * 8,
        [x, index],
        atol=0.0,
        rtol=0.0,
    )
