"""B-6 (lane-level primitives in the C++ a rewrite replaces) and Part A's async-timing pitfall,
on small real-looking sources and on NVIDIA's reduction sample (tests/data/controls)."""

from __future__ import annotations

from bot.analysis.controls.async_timing import timed_regions
from bot.analysis.controls.lane_primitives import lane_sites
from tests.paths import DATA

REDUCTION = "csrc/reduction_kernel.cu"
SAMPLE = (DATA / "controls" / "cuda_samples" / "reduction_kernel.cu").read_text()


def _names(sources: dict[str, str], kernels: list[tuple[str, str]]) -> list[tuple[str, str, int]]:
    return [(family, name, line) for family, name, _, line in lane_sites(sources, kernels)]


def test_the_real_reduction_sample_shuffles_through_its_helper():
    # reduce7 calls warpReduceSum (a __device__ helper), whose loop is __shfl_down_sync
    sites = _names({REDUCTION: SAMPLE}, [(REDUCTION, "reduce7")])
    assert ("shuffle", "__shfl_down_sync()", 78) in sites
    assert ("vote", "__ballot_sync()", 499) in sites


def test_cooperative_groups_tiles_are_read_in_the_sample():
    sites = _names({REDUCTION: SAMPLE}, [(REDUCTION, "reduce4")])
    families = {f for f, _, _ in sites}
    assert families == {"tile", "shuffle"}
    assert ("shuffle", ".shfl_down()", 284) in sites
    # reduce0 is the shared-memory tree: barriers and shared memory, no lane primitive
    assert _names({REDUCTION: SAMPLE}, [(REDUCTION, "reduce0")]) == []


HIP_DPP = """\
#include <hip/hip_runtime.h>

__device__ inline float row_shr(float v) {
  // __shfl_down(v, 1) would be the portable spelling; DPP is one instruction on CDNA
  return __builtin_bit_cast(float, __builtin_amdgcn_update_dpp(0, __builtin_bit_cast(int, v),
                                                               0x111, 0xf, 0xf, false));
}

__global__ void scan_kernel(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? x[i] : 0.f;
  v += row_shr(v);
  unsigned long long live = __ballot(v > 0.f);
  int lane;
  asm volatile("v_mbcnt_lo_u32_b32 %0, -1, 0" : "=v"(lane));
  if (i < n) y[i] = v + __popcll(live) + lane;
}
"""


def test_dpp_votes_and_inline_asm_in_a_hip_kernel():
    sites = _names({"csrc/scan.hip": HIP_DPP}, [("csrc/scan.hip", "scan_kernel")])
    assert sites == [
        ("isa", "__builtin_amdgcn_update_dpp()", 5),
        ("vote", "__ballot()", 13),
        ("isa", "asm volatile()", 15),
    ]  # the comment's __shfl_down is not code


TIMED = """\
import time
from time import perf_counter

import torch
import triton

from toyops.softmax import softmax


def bench_wrong(x):
    t0 = time.perf_counter()
    for _ in range(100):
        softmax(x)
    return (time.perf_counter() - t0) / 100


def bench_synced(x):
    torch.cuda.synchronize()
    t0 = perf_counter()
    for _ in range(100):
        softmax(x)
    torch.cuda.synchronize()
    return (perf_counter() - t0) / 100


def _wait(y):
    torch.cuda.synchronize()
    return y


def bench_through_helper(x):
    t0 = time.time()
    _wait(softmax(x))
    return time.time() - t0


def bench_events(x):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    softmax(x)
    end.record()
    return start.elapsed_time(end)


def bench_item(x):
    t0 = time.perf_counter()
    total = softmax(x).sum().item()
    return time.perf_counter() - t0, total


def nothing_between():
    t0 = time.perf_counter()
    t1 = time.perf_counter()
    return t1 - t0
"""


def test_only_the_unsynchronised_wall_clock_region_is_found():
    assert timed_regions(TIMED) == [(11, "time.perf_counter", ["softmax"])]
