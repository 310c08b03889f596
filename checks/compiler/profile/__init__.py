"""Shared-memory (LDS) traffic of measured kernels, read from the vendor's profiler (Part C-3).

The C++ kernel wrote its shared memory explicitly; in Triton it is the compiler's (a reduction
across warps, a layout conversion, a pipelined load), so any traffic there is news to the
author. On a GPU runner each side's bench entry point runs once more under the profiler
(``driver``): Nsight Compute on NVIDIA (``ncu``), rocprofv3 on AMD (``rocprof``); the target's
``checks.compiler.targets`` implementation says which, and ``smem`` runs both sides, bounded by
the policy's ``[profile]`` table, and turns the counters into evidence.
"""
