"""Correctness before timing: poison, compare against the reference, digest for base vs head.

Runs inside a worker (tensors may be torch, on any device, or numpy arrays). Standard library
only at import. ``compare_digests`` is pure and runs in the parent: base and head outputs never
travel whole, only a digest (sampled elements at the same positions, chunk sums, NaN counts).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

CHUNK = 1 << 24
N_SAMPLES = 4096
N_PARTS = 64

DEFAULT_TOLERANCE = {  # (atol, rtol) when the entry point gives none
    "float64": (1e-7, 1e-7),
    "float32": (1e-4, 1e-4),
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
    "float8_e4m3fn": (1.25e-1, 1.25e-1),
    "float8_e5m2": (2.5e-1, 2.5e-1),
}


def dtype_name(x: Any) -> str:
    return str(getattr(x, "dtype", type(x).__name__)).replace("torch.", "")


def tolerance_for(dtype: str, atol: float | None, rtol: float | None) -> tuple[float, float]:
    d_atol, d_rtol = DEFAULT_TOLERANCE.get(dtype, (0.0, 0.0))
    return (d_atol if atol is None else float(atol), d_rtol if rtol is None else float(rtol))


def output_tolerance(dtypes: Any, atol: float | None, rtol: float | None) -> tuple[float, float]:
    """One output's (atol, rtol): the entry point's own where it gives them, else the loosest
    default of ``dtypes`` (the output's and its reference's): an fp32 statistic beside a bf16
    result is held to fp32's tolerance, the bf16 result to bf16's."""
    pairs = [tolerance_for(d, atol, rtol) for d in dtypes] or [tolerance_for("", atol, rtol)]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "detach")


def flatten_outputs(out: Any) -> list[Any]:
    """A call's output as a list of arrays (a tensor, or a tuple/list/dict of them)."""
    if isinstance(out, dict):
        return [a for k in sorted(out) for a in flatten_outputs(out[k])]
    if isinstance(out, (list, tuple)):
        return [a for item in out for a in flatten_outputs(item)]
    if _is_torch(out) or hasattr(out, "__array__"):
        return [out]
    import numpy as np

    return [np.asarray(out)]


def _flat64(x: Any, start: int, stop: int) -> Any:
    """Elements [start, stop) of x flattened, as float64 (torch stays on its device)."""
    if _is_torch(x):
        import torch

        return x.detach().reshape(-1)[start:stop].to(torch.float64)
    import numpy as np

    return np.asarray(x).reshape(-1)[start:stop].astype(np.float64)


def _numel(x: Any) -> int:
    return int(x.numel()) if _is_torch(x) else int(getattr(x, "size", 1))


def _shape(x: Any) -> list[int]:
    return [int(d) for d in getattr(x, "shape", ())]


def poison(reference_outputs: list[Any]) -> None:
    """Fill the CUDA caching allocator with NaN-patterned blocks of the outputs' sizes, so that an
    output the kernel allocates and then leaves partly unwritten shows NaN where it skipped.
    (0xFF bytes are NaN in float16, bfloat16, float32 and float64.) No-op off the GPU."""
    import sys

    torch = sys.modules.get("torch")
    if torch is None:
        return
    cuda = [r for r in reference_outputs if _is_torch(r) and r.is_cuda]
    if not cuda:
        return
    # Hand unused cached memory back first, then allocate many blocks of each output's size:
    # best fit hands out any stale free block of that size before fresh memory, so every free
    # block the kernel's output can land on is now a poisoned one.
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    blocks = []
    for ref in cuda:
        nbytes = max(1, ref.numel() * ref.element_size())
        free, _ = torch.cuda.mem_get_info(ref.device)
        count = max(1, min(64, max(2, (64 * 2**20) // nbytes), (free // 3) // nbytes))
        for _ in range(count):
            blocks.append(torch.empty(nbytes, dtype=torch.uint8, device=ref.device).fill_(255))
    torch.cuda.synchronize()
    del blocks  # back to the caching allocator's free lists, NaN bytes and all


def compare(
    out: Any, ref: Any, *, atol: float | None = None, rtol: float | None = None
) -> dict[str, Any]:
    """Element-wise ``|out - ref| <= atol + rtol * |ref|``; NaN only matches NaN. ``atol`` and
    ``rtol``: the entry point's, for every output; where None, each output's own dtype decides
    (``output_tolerance``)."""
    outs, refs = flatten_outputs(out), flatten_outputs(ref)
    if len(outs) != len(refs):
        return {"ok": False, "message": f"{len(outs)} outputs, reference has {len(refs)}"}
    bad_total, worst, first_bad = 0, 0.0, None
    for k, (o, r) in enumerate(zip(outs, refs, strict=True)):
        if _shape(o) != _shape(r):
            return {
                "ok": False,
                "message": f"output {k} has shape {_shape(o)}, reference {_shape(r)}",
            }
        n = _numel(o)
        tol = output_tolerance((dtype_name(o), dtype_name(r)), atol, rtol)
        for start in range(0, n, CHUNK):
            a, b = _flat64(o, start, start + CHUNK), _flat64(r, start, start + CHUNK)
            if _is_torch(b) and _is_torch(a) and a.device != b.device:
                a = a.to(b.device)
            bad, err = _bad_mask(a, b, *tol)
            n_bad = int(bad.sum())
            worst = max(worst, err)
            if n_bad and first_bad is None:
                idx = int(_first_true(bad)) + start
                first_bad = {
                    "output": k,
                    "index": idx,
                    "got": _item(a, idx - start),
                    "want": _item(b, idx - start),
                    "tol": tol,
                }
            bad_total += n_bad
    ok = bad_total == 0
    msg = (
        ""
        if ok
        else (
            f"{bad_total} elements differ from the reference; first at output "
            f"{first_bad['output']} index {first_bad['index']} (atol={first_bad['tol'][0]:g}, "
            f"rtol={first_bad['tol'][1]:g}): "
            f"got {first_bad['got']!r}, want {first_bad['want']!r}"
        )
    )
    return {"ok": ok, "bad_elements": bad_total, "max_abs_err": worst, "message": msg}


def _bad_mask(a: Any, b: Any, atol: float, rtol: float) -> tuple[Any, float]:
    if _is_torch(a):
        import torch

        close = torch.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
        finite = torch.isfinite(a) & torch.isfinite(b)
        diff = (a - b).abs()[finite]
        err = float(diff.max()) if diff.numel() else 0.0
        return ~close, err
    import numpy as np

    with np.errstate(invalid="ignore"):
        close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
        finite = np.isfinite(a) & np.isfinite(b)
        diff = np.abs(a - b)[finite]
    return ~close, float(diff.max()) if diff.size else 0.0


def _first_true(mask: Any) -> int:
    if _is_torch(mask):
        return int(mask.nonzero()[0, 0])
    import numpy as np

    return int(np.flatnonzero(mask)[0])


def _item(x: Any, i: int) -> float:
    return float(x[i])


# ------------------------------------------------------------------------------------- digests


def sample_indices(numel: int, k: int = N_SAMPLES) -> list[int]:
    """The same positions on both sides: the ends plus a fixed pseudo-random spread."""
    if numel <= k:
        return list(range(numel))
    state, out = 0x9E3779B97F4A7C15, {0, numel - 1}
    while len(out) < k:
        state = (state * 6364136223846793005 + 1442695040888963407) % 2**64
        out.add((state >> 11) % numel)
    return sorted(out)


def digest(out: Any) -> list[dict[str, Any]]:
    """A compact fingerprint of each output: shape, NaN/Inf counts, samples, chunk sums."""
    result = []
    for x in flatten_outputs(out):
        n = _numel(x)
        idx = sample_indices(n)
        if _is_torch(x):
            import torch

            flat = x.detach().reshape(-1)
            samples = (
                flat[torch.tensor(idx, dtype=torch.long, device=flat.device)]
                .to(torch.float64)
                .cpu()
                .tolist()
            )
        else:
            import numpy as np

            samples = np.asarray(x, dtype=np.float64).reshape(-1)[idx].tolist()
        parts, nan, inf = [], 0, 0
        bounds = [round(i * n / N_PARTS) for i in range(N_PARTS + 1)]
        for lo, hi in itertools.pairwise(bounds):
            if hi <= lo:
                continue
            s = sa = 0.0
            for start in range(lo, hi, CHUNK):
                a = _flat64(x, start, min(hi, start + CHUNK))
                finite = a[_finite(a)]
                s += float(finite.sum())
                sa += float(abs(finite).sum())
                nan += int(_isnan(a).sum())
                inf += int(_isinf(a).sum())
            parts.append([lo, hi, s, sa])
        result.append(
            {
                "shape": _shape(x),
                "dtype": dtype_name(x),
                "nan": nan,
                "inf": inf,
                "idx": idx,
                "samples": [_json_float(v) for v in samples],
                "parts": parts,
            }
        )
    return result


def _finite(a: Any) -> Any:
    if _is_torch(a):
        import torch

        return torch.isfinite(a)
    import numpy as np

    return np.isfinite(a)


def _isnan(a: Any) -> Any:
    if _is_torch(a):
        import torch

        return torch.isnan(a)
    import numpy as np

    return np.isnan(a)


def _isinf(a: Any) -> Any:
    if _is_torch(a):
        import torch

        return torch.isinf(a)
    import numpy as np

    return np.isinf(a)


def _json_float(v: float) -> float | str:
    return v if math.isfinite(v) else str(v)


def _as_float(v: float | str) -> float:
    return float(v)


def compare_digests(
    base: list[dict[str, Any]],
    head: list[dict[str, Any]],
    *,
    atol: float | None = None,
    rtol: float | None = None,
    scale: float = 1.0,
) -> str:
    """'' when head's outputs match base's within tolerance, else what differs. Pure.
    ``atol``/``rtol``: the entry points' own, else each output's dtypes decide
    (``output_tolerance``); ``scale`` widens either (two sides, each within tolerance of a
    reference, may be twice as far apart)."""
    if len(base) != len(head):
        return f"head returns {len(head)} outputs, base {len(base)}"
    for k, (b, h) in enumerate(zip(base, head, strict=True)):
        one = output_tolerance((b.get("dtype", ""), h.get("dtype", "")), atol, rtol)
        atol_k, rtol_k = scale * one[0], scale * one[1]
        if b["shape"] != h["shape"]:
            return f"output {k}: head shape {h['shape']}, base shape {b['shape']}"
        if b["nan"] != h["nan"] or b["inf"] != h["inf"]:
            return f"output {k}: head has {h['nan']} NaN / {h['inf']} Inf, base {b['nan']} / {b['inf']}"
        for i, bv, hv in zip(b["idx"], b["samples"], h["samples"], strict=True):
            x, y = _as_float(bv), _as_float(hv)
            if math.isnan(x) and math.isnan(y):
                continue
            if x == y:
                continue
            if not (math.isfinite(x) and math.isfinite(y)) or abs(x - y) > atol_k + rtol_k * abs(x):
                return (
                    f"output {k} element {i}: head {y!r}, base {x!r} "
                    f"(atol={atol_k:g}, rtol={rtol_k:g})"
                )
        for (lo, hi, bs, bsa), (_, _, hs, hsa) in zip(b["parts"], h["parts"], strict=True):
            allowed = atol_k * (hi - lo) + rtol_k * max(bsa, hsa) + 1e-9 * max(bsa, hsa, 1.0)
            if abs(bs - hs) > allowed:
                return f"output {k} elements {lo}..{hi - 1}: head sum {hs:.6g}, base sum {bs:.6g}"
    return ""
