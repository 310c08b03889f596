"""Run one bench case once under a profiler: ``python -m checks.compiler.profile.driver JOB``.

The case is built and called once outside the profiled region (JIT compile, autotuning, the
first-call work), then once inside it, between the profiler's own start and stop calls, so the
profile holds the launches of one call and nothing else. Job: ``{"repo_root", "bench", "shape",
"dtype", "region": "cuda" | "roctx", "out"}``; the answer is ``{"ok": true}`` or
``{"fatal": message}`` in ``out``.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import sys
from pathlib import Path
from typing import Any


def _region(kind: str) -> tuple[Any, Any]:
    """(start, stop) of the profiled region: the CUDA profiler API, or ROCTx's pause/resume."""
    if kind == "roctx":
        lib = ctypes.CDLL("libroctx64.so")
        return (lambda: lib.roctxProfilerResume(0)), (lambda: lib.roctxProfilerPause(0))
    import torch

    cudart = torch.cuda.cudart()
    return cudart.cudaProfilerStart, cudart.cudaProfilerStop


def run(job: dict) -> dict:
    import torch

    sys.path.insert(0, job["repo_root"])
    module, _, attr = job["bench"].partition(":")
    entry = getattr(importlib.import_module(module), attr)
    case = entry(tuple(job["shape"]), job["dtype"], device="cuda", seed=0)
    case["fn"]()
    torch.cuda.synchronize()
    start, stop = _region(job["region"])
    start()
    case["fn"]()
    torch.cuda.synchronize()
    stop()
    return {"ok": True}


def main(argv: list[str]) -> int:
    job = json.loads(Path(argv[0]).read_text())
    try:
        result = run(job)
    except Exception as exc:
        result = {"fatal": f"{type(exc).__name__}: {exc}"[:600]}
    Path(job["out"]).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
