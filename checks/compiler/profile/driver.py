"""Run one bench case once under a profiler: ``python -m checks.compiler.profile.driver JOB``.

The case is built and called once outside the profiled region (JIT compile, autotuning, the
first-call work), then once inside it, between the profiler's own start and stop calls, so the
profile holds the launches of one call and nothing else. Job: ``checks.job_files.ProfileRun``;
the answer is ``Profiled`` (the counters are in the profiler's own output), or the failure.
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Any

from checks import job_child  # standard library only
from checks.bench_entries import bench_capture  # standard library only
from checks.job_files import Profiled, ProfileRun


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


def run(job: ProfileRun) -> Profiled:
    import torch

    root = job.repo_root
    sys.path[:0] = [os.path.join(root, p) for p in job.python_path] + [root]
    entry = bench_capture.load_entry(job.bench, root)
    case = entry(job.shape, job.dtype, device="cuda", seed=0)
    case["fn"]()
    torch.cuda.synchronize()
    start, stop = _region(job.region)
    args = (0,) if job.region == "roctx" else ()  # ROCTx takes a thread id: 0, this one
    start(*args)
    case["fn"]()
    torch.cuda.synchronize()
    stop(*args)
    return Profiled()


if __name__ == "__main__":
    # a normal exit, not ``job_child.run_and_exit``: the profiler's collector in this process
    # may write its data at exit
    raise SystemExit(job_child.main(sys.argv[1:], ProfileRun, run))
