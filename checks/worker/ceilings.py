"""Physical ceilings of a device: a large device-to-device copy (GB/s, reads + writes) and a large
bf16 matmul (TFLOP/s) on random data. Measured once per GPU and cached on disk.

``measure`` runs inside a worker (torch handed in); the cache functions run in the parent and use
only the standard library.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

COPY_BYTES_GPU = 2 * 2**30
MATMUL_N_GPU = 8192
COPY_BYTES_CPU = 64 * 2**20
MATMUL_N_CPU = 512


def measure(torch: Any, device: str) -> dict[str, Any]:
    """Best of several timed repetitions of a copy and a matmul (best = what the device can do)."""
    if device == "cpu":
        return _measure_cpu(torch)
    nbytes, n = COPY_BYTES_GPU, MATMUL_N_GPU
    free, _total = torch.cuda.mem_get_info()
    while 2 * nbytes > free // 2 and nbytes > 64 * 2**20:
        nbytes //= 2
    copy_s = _time_copy(torch, nbytes)
    mm_s = _time_matmul(torch, n)
    torch.cuda.empty_cache()
    return {
        "copy_gbps": 2 * nbytes / copy_s / 1e9,
        "matmul_tflops": 2 * n**3 / mm_s / 1e12,
        "matmul_dtype": "bfloat16",
        "copy_bytes": nbytes,
        "matmul_n": n,
        "timing": "cuda-events",
    }


def _time_copy(torch: Any, nbytes: int) -> float:
    src = torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    return _best_cuda(torch, lambda: dst.copy_(src), reps=10)


def _time_matmul(torch: Any, n: int) -> float:
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    return _best_cuda(torch, lambda: a @ b, reps=10)


def _best_cuda(torch: Any, fn: Any, *, reps: int) -> float:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(reps):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        best = min(best, s.elapsed_time(e) / 1000.0)
    return best


def _measure_cpu(torch: Any) -> dict[str, Any]:
    nbytes, n = COPY_BYTES_CPU, MATMUL_N_CPU
    if torch is None:
        import numpy as np

        src = np.random.default_rng(0).integers(0, 255, nbytes, dtype=np.uint8)
        dst = np.empty_like(src)
        a = np.random.default_rng(1).standard_normal((n, n), dtype=np.float32)

        def copy() -> None:
            np.copyto(dst, src)

        def mm() -> None:
            a @ a

    else:
        src = torch.randint(0, 255, (nbytes,), dtype=torch.uint8)
        dst = torch.empty_like(src)
        a = torch.randn(n, n)

        def copy() -> None:
            dst.copy_(src)

        def mm() -> None:
            a @ a

    def best(fn: Any) -> float:
        fn()
        out = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            fn()
            out = min(out, time.perf_counter() - t0)
        return out

    return {
        "copy_gbps": 2 * nbytes / best(copy) / 1e9,
        "matmul_tflops": 2 * n**3 / best(mm) / 1e12,
        "matmul_dtype": "float32",
        "copy_bytes": nbytes,
        "matmul_n": n,
        "timing": "cpu",
    }


# ---------------------------------------------------------------------------- cache (parent side)


def cache_key(env: dict[str, Any]) -> str:
    parts = [
        env.get("vendor"),
        env.get("device_uuid") or env.get("device_name"),
        env.get("driver_version"),
        env.get("torch_version"),
    ]
    return "|".join(str(p) for p in parts)


def load_cached(cache_dir: Path, env: dict[str, Any]) -> dict[str, Any] | None:
    path = cache_dir / "ceilings.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    entry = data.get(cache_key(env)) if isinstance(data, dict) else None
    return entry if isinstance(entry, dict) else None


def store_cached(cache_dir: Path, env: dict[str, Any], ceilings: dict[str, Any]) -> None:
    path = cache_dir / "ceilings.json"
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            data = data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            data = {}
        data[cache_key(env)] = ceilings
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # a cache that cannot be written only costs a re-measurement next time
