"""Run one bench case once under a profiler: ``python -m checks.compiler.profile.driver JOB``.

The case is built and called once outside the profiled region (JIT compile, autotuning, the
first-call work), then once inside it, between the profiler's own start and stop calls, so the
profile holds the launches of one call and nothing else. Job: ``{"repo_root", "bench", "shape",
"dtype", "region": "cuda" | "roctx", "out"}``; the answer is ``{"ok": true}`` or
``{"fatal": message}`` in ``out``.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from pathlib import Path
from typing import Any

from checks.bench_entries import bench_capture  # standard library only


def _region(kind: str) -> tuple[Any, Any]:
    """(start, stop) of the profiled region: the CUDA profiler API, or ROCTx's pause/resume."""
    if kind == "roctx":
        # rocprofv3's ROCTx (rocprofiler-sdk), else roctracer's: both export pause and resume
        for name in ("librocprofiler-sdk-roctx.so", "libroctx64.so"):
            try:
                lib = ctypes.CDLL(name)
            except OSError:
                continue
            return lib.roctxProfilerResume, lib.roctxProfilerPause
        raise OSError("no ROCTx library (librocprofiler-sdk-roctx.so) to mark the profiled call")
    import torch

    cudart = torch.cuda.cudart()
    return cudart.cudaProfilerStart, cudart.cudaProfilerStop


def run(job: dict) -> dict:
    import torch

    root = job["repo_root"]
    sys.path[:0] = [os.path.join(root, p) for p in job.get("python_path") or ()] + [root]
    entry = bench_capture.load_entry(job["bench"], root)
    case = entry(tuple(job["shape"]), job["dtype"], device="cuda", seed=0)
    case["fn"]()
    torch.cuda.synchronize()
    start, stop = _region(job["region"])
    args = (0,) if job["region"] == "roctx" else ()  # ROCTx takes a thread id: 0, this one
    start(*args)
    case["fn"]()
    torch.cuda.synchronize()
    stop(*args)
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
    # a normal exit, not ``checks.worker.exiting.end_now``: the profiler's collector in this
    # process may write its data at exit
    raise SystemExit(main(sys.argv[1:]))
