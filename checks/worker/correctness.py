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


NARROW_FLOATS = ("float16", "bfloat16", "float32")


def _flat(x: Any, start: int, stop: int, *, narrow: bool = False) -> Any:
    """Elements [start, stop) of x flattened, as float64 (torch stays on its device). With
    ``narrow``, a torch tensor of a float type of 32 bits or fewer comes as float32 instead:
    its values are exact there and the work on them reads half the bytes (on a GPU, the checks
    of a large output wait on that memory traffic)."""
    if _is_torch(x):
        import torch

        flat = x.detach().reshape(-1)[start:stop]
        if narrow and dtype_name(x) in NARROW_FLOATS:
            return flat.to(torch.float32)
        return flat.to(torch.float64)
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
            blocks.append(_nan_block(torch, nbytes, ref.device))
    torch.cuda.synchronize()
    del blocks  # back to the caching allocator's free lists, NaN bytes and all


def keep_inputs(inputs: Any) -> Any:
    """A callable that puts ``inputs`` (the entry point's ``inputs``) back to their values now.
    Called before each checked call of the kernel and of its reference, it gives every call the
    inputs the entry point made: a kernel that writes its inputs in place (a fused cross entropy
    writing the gradient into the logits) is checked on what its reference sees."""
    import sys

    tensors = [t for t in (inputs or ()) if _is_torch(t)]
    saved = [t.detach().clone() for t in tensors]

    def restore() -> None:
        if tensors:
            with sys.modules["torch"].no_grad():
                for tensor, kept in zip(tensors, saved, strict=True):
                    tensor.copy_(kept)

    return restore


def own_outputs(out: Any, inputs: Any) -> Any:
    """``out`` with each output tensor that shares memory with an input cloned (an in-place
    kernel returns its input), so putting the inputs back leaves it as computed."""
    places = [t.untyped_storage().data_ptr() for t in (inputs or ()) if _is_torch(t)]
    if not places:
        return out

    def own(x: Any) -> Any:
        shared = _is_torch(x) and x.untyped_storage().data_ptr() in places
        return x.clone() if shared else x

    if isinstance(out, (tuple, list)):
        return type(out)(own(x) for x in out)
    return own(out)


def _nan_block(torch: Any, nbytes: int, device: Any) -> Any:
    """``nbytes`` of 0xFF bytes on ``device``: NaN in every float type ``poison`` covers."""
    return torch.empty(nbytes, dtype=torch.uint8, device=device).fill_(255)


def tolerance_problem(name: str, value: float | None) -> str:
    """'' when ``value`` is a tolerance the checks can mean (None, or a finite number of 0 or
    more; the short way's slack relies on it), else what is wrong."""
    if value is None or (math.isfinite(value) and value >= 0):
        return ""
    return f"{name} must be a number of 0 or more, not {value!r}"


def compare(
    out: Any, ref: Any, *, atol: float | None = None, rtol: float | None = None
) -> dict[str, Any]:
    """Element-wise ``|out - ref| <= atol + rtol * |ref|``; NaN only matches NaN. ``atol`` and
    ``rtol``: the entry point's, for every output; where None, each output's own dtype decides
    (``output_tolerance``)."""
    for name, value in (("atol", atol), ("rtol", rtol)):
        problem = tolerance_problem(name, value)
        if problem:
            raise ValueError(problem)
    outs, refs = flatten_outputs(out), flatten_outputs(ref)
    if len(outs) != len(refs):
        return {"ok": False, "message": f"{len(outs)} outputs, reference has {len(refs)}"}
    bad_total, worst = 0, 0.0
    first_bad: Any = None
    for k, (o, r) in enumerate(zip(outs, refs, strict=True)):
        if _shape(o) != _shape(r):
            return {
                "ok": False,
                "message": f"output {k} has shape {_shape(o)}, reference {_shape(r)}",
            }
        tol = output_tolerance((dtype_name(o), dtype_name(r)), atol, rtol)
        starts = list(range(0, _numel(o), CHUNK))
        for start, (n_bad, err, idx, got, want) in zip(
            starts, _rows(o, r, starts, tol), strict=True
        ):
            worst = max(worst, float(err))
            if n_bad and first_bad is None:
                first_bad = {
                    "output": k,
                    "index": int(idx) + start,
                    "got": float(got),
                    "want": float(want),
                    "tol": tol,
                }
            bad_total += int(n_bad)
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


def _rows(o: Any, r: Any, starts: list[int], tol: tuple[float, float]) -> list[list[float]]:
    """(bad elements, worst finite error, first bad index, got, want) per chunk. On a GPU they
    stay on the device until one transfer per output (no wait per chunk). Two torch tensors go
    the short way first (``_chunk_close``: 8 passes over a chunk instead of about 20, which on
    a GPU is the time of a large output's check); only a chunk it cannot pass is looked at
    element by element, so the rows are the same either way."""
    if not (_is_torch(o) and _is_torch(r)):
        return _host([_chunk_errors(o, r, start, tol) for start in starts])
    short = _host([_chunk_close(o, r, start, tol) for start in starts])
    again = [start for start, (_, slack) in zip(starts, short, strict=True) if not slack >= 0]
    redone = dict(zip(again, _host([_chunk_errors(o, r, s, tol) for s in again]), strict=True))
    return [
        redone.get(start) or [0.0, worst, 0.0, 0.0, 0.0]
        for start, (worst, _) in zip(starts, short, strict=True)
    ]


def _chunk_close(o: Any, r: Any, start: int, tol: tuple[float, float]) -> Any:
    """One chunk of two torch tensors: (largest |difference|, smallest allowed - |difference|),
    with torch.isclose's own allowed error (``atol + |rtol * ref|``, the same operations in the
    same order, so the same bits). A slack of 0 or more (NaN is not) means every element is
    within tolerance and every difference is finite: what ``_chunk_errors`` would find with no
    bad element, and its worst error is the largest difference. A NaN or infinity on either
    side makes the slack NaN or negative, and the chunk is looked at element by element."""
    import torch

    narrow = {dtype_name(o), dtype_name(r)} <= set(NARROW_FLOATS)
    a = _flat(o, start, start + CHUNK, narrow=narrow)
    b = _flat(r, start, start + CHUNK, narrow=narrow)
    if a.device != b.device:
        a = a.to(b.device)
    atol, rtol = tol
    diff = torch.sub(a, b).abs_()
    worst = diff.max()
    allowed = torch.mul(b, rtol).abs_().add_(atol)
    slack = allowed.sub_(diff).min()
    return torch.stack([worst, slack]).to(torch.float64)


def _chunk_errors(o: Any, r: Any, start: int, tol: tuple[float, float]) -> Any:
    """One chunk of an output against its reference: a row of (bad elements, worst finite
    |difference|, index of the first bad element (0 if none), its value, the reference's).
    Two torch tensors of float types of 32 bits or fewer are compared in float32 (their values
    and the tolerance's bound are held there far closer than any tolerance), any other pair in
    float64."""
    narrow = _is_torch(o) and _is_torch(r) and {dtype_name(o), dtype_name(r)} <= set(NARROW_FLOATS)
    a = _flat(o, start, start + CHUNK, narrow=narrow)
    b = _flat(r, start, start + CHUNK, narrow=narrow)
    atol, rtol = tol
    if _is_torch(a):
        import torch

        if _is_torch(b) and a.device != b.device:
            a = a.to(b.device)
        bad = ~torch.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
        finite = torch.isfinite(a) & torch.isfinite(b)
        err: Any = torch.where(finite, (a - b).abs(), 0.0).max()  # numpy's below: a float
        # a 1-element index: indexing with a 0-dim one reads it back to the host (.item()),
        # which on a GPU is a wait per chunk
        idx: Any = bad.to(torch.uint8).argmax().reshape(1)
        n_bad = bad.sum().to(torch.float64)
        f64 = torch.float64
        return torch.cat(
            [n_bad.reshape(1), err.reshape(1).to(f64), idx.to(f64), a[idx].to(f64), b[idx].to(f64)]
        )
    import numpy as np

    with np.errstate(invalid="ignore"):
        bad = ~np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
        finite = np.isfinite(a) & np.isfinite(b)
        err = float(np.abs(a - b)[finite].max()) if finite.any() else 0.0
    idx = int(np.argmax(bad))
    return [int(bad.sum()), err, idx, float(a[idx]), float(b[idx])]


def _host(rows: list[Any]) -> list[list[float]]:
    """Rows of numbers as Python lists: torch rows stacked and copied off the device at once."""
    if rows and _is_torch(rows[0]):
        import torch

        return torch.stack(rows).cpu().tolist()
    return [[float(v) for v in r] for r in rows]


def exercise(torch: Any, device: str) -> None:
    """Run the checks once on a small output of each float type they read, so that a case's
    first check or recheck does not wait for their GPU functions to load (a GPU loads each on
    its first call: a fresh worker's first recheck took 0.2 s on the H200, later ones 0.01 s).
    Both ways of each: the short one, and the element-by-element one that an output with a NaN
    or an infinity takes; and on a GPU the fill ``poison`` makes its blocks with."""
    g = torch.Generator(device=device).manual_seed(0)
    if device != "cpu":  # what ``poison`` runs (not ``poison`` itself: it empties the cache)
        torch.cuda.mem_get_info()
        _nan_block(torch, 4096, device)
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        out = torch.randn(4096, generator=g, device=device, dtype=torch.float32).to(dtype)
        ref = out.clone()
        compare(out, ref)
        digest(out)
        out[:2] = torch.tensor([math.nan, math.inf])
        compare(out, ref)
        digest(out)


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
        bounds = [round(i * n / N_PARTS) for i in range(N_PARTS + 1)]
        spans = [(lo, hi) for lo, hi in itertools.pairwise(bounds) if hi > lo]
        sums = _part_sums(x, spans)
        if _is_torch(x):
            import torch

            flat = x.detach().reshape(-1)
            picked = flat[torch.tensor(idx, dtype=torch.long, device=flat.device)]
            samples = picked.to(torch.float64).cpu().tolist()
        else:
            import numpy as np

            samples = np.asarray(x, dtype=np.float64).reshape(-1)[idx].tolist()
        result.append(
            {
                "shape": _shape(x),
                "dtype": dtype_name(x),
                "nan": int(sum(r[2] for r in sums)),
                "inf": int(sum(r[3] for r in sums)),
                "idx": idx,
                "samples": [_json_float(v) for v in samples],
                "parts": [[lo, hi, r[0], r[1]] for (lo, hi), r in zip(spans, sums, strict=True)],
            }
        )
    return result


def _part_sums(x: Any, spans: list[tuple[int, int]]) -> list[list[float]]:
    """Per part [lo, hi) of x: (sum of the finite elements, sum of their |values|, NaN, Inf),
    summed in float64 over the part's chunks. On a GPU the chunks' rows stay on the device until
    one transfer per output. A torch chunk is first summed the short way (``_sums_short``: 3
    passes instead of about 10); only a chunk whose sums are not finite, so that it holds a NaN
    or an infinity, is counted the long way."""
    pieces = [
        (part, start, min(hi, start + CHUNK))
        for part, (lo, hi) in enumerate(spans)
        for start in range(lo, hi, CHUNK)
    ]
    if _is_torch(x):
        rows = [[s, sa, 0.0, 0.0] for s, sa in _host([_sums_short(x, a, b) for _, a, b in pieces])]
        again = [i for i, (s, sa, _, _) in enumerate(rows) if not math.isfinite(s + sa)]
        for i, row in zip(again, _host([_sums(x, *pieces[i][1:]) for i in again]), strict=True):
            rows[i] = row
    else:
        rows = [[float(v) for v in _sums(x, a, b)] for _, a, b in pieces]
    totals: list[list[float]] = [[0.0, 0.0, 0.0, 0.0] for _ in spans]
    for (part, _, _), row in zip(pieces, rows, strict=True):
        totals[part] = [t + v for t, v in zip(totals[part], row, strict=True)]
    return totals


def _sums_short(x: Any, start: int, stop: int) -> Any:
    """Elements [start, stop) of a torch tensor: (sum, sum of |values|) in float64. Both are
    finite only when every element is, and then they are ``_sums``' first two (for a float type
    of 32 bits or fewer, read as float32, always then: 2^24 of its values cannot overflow)."""
    import torch

    a = _flat(x, start, stop, narrow=True)
    f64 = torch.float64
    return torch.stack([a.sum(dtype=f64), a.abs().sum(dtype=f64)])


def _sums(x: Any, start: int, stop: int) -> Any:
    """Elements [start, stop) of x: (sum of the finite ones, sum of their |values|, NaN, Inf),
    in float64."""
    a = _flat(x, start, stop, narrow=True)
    if _is_torch(a):
        import torch

        f64 = torch.float64
        kept: Any = torch.where(torch.isfinite(a), a, 0.0)
        nan, inf = torch.isnan(a).sum(), torch.isinf(a).sum()
        return torch.stack(
            [kept.sum(dtype=f64), kept.abs().sum(dtype=f64), nan.to(f64), inf.to(f64)]
        )
    import numpy as np

    kept = np.where(np.isfinite(a), a, 0.0)
    return np.array(
        [kept.sum(), np.abs(kept).sum(), np.isnan(a).sum(), np.isinf(a).sum()], dtype=np.float64
    )


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
