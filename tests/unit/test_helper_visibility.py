"""A changed ``__device__`` helper changes the kernels whose files can see it (the file itself
and the local headers it includes, transitively), not every kernel that uses a name it also
defines (``reach/host_cpp._Includes``).

Shortened from csrc/selective_scan/ of state-spaces/mamba (Apache-2.0) at 9babf40c2acb (in
tests/data/real_prs): reverse_scan.cuh's ``WarpReverseScan`` constructor masks the lane id by
``WARP_THREADS`` on ROCm, whose definition moves to a per-architecture ladder; only
selective_scan_bwd_kernel.cuh includes that header. Both ``WarpReverseScan`` and the forward
kernel's cub ``BlockLoad`` have a nested ``TempStorage`` (here sized by ``WARP_THREADS``, so
that the name collision the real header reaches through ``BlockReverseScan`` fits in a few
lines).
"""

from __future__ import annotations

from bot.analysis.classify import analyze_diff
from tests.diff_util import MemoryRevision, file_diff

HEADER = "csrc/selective_scan/reverse_scan.cuh"
BEFORE = """\
#pragma once
#include <cub/config.cuh>

#ifndef USE_ROCM
    #define WARP_THREADS CUB_WARP_THREADS(0)
#else
    #define WARP_THREADS HIPCUB_WARP_THREADS
#endif

template <typename T, int LOGICAL_WARP_THREADS>
struct WarpReverseScan {
    struct TempStorage { T partials[WARP_THREADS]; };
    unsigned int lane_id;

    explicit __device__ __forceinline__
    WarpReverseScan()
        : lane_id(threadIdx.x & 0x1f)
    {}
};
"""
AFTER = BEFORE.replace(
    "    #define WARP_THREADS HIPCUB_WARP_THREADS\n",
    "    #if defined(__AMDGCN_WAVEFRONT_SIZE)\n"
    "        #define WARP_THREADS __AMDGCN_WAVEFRONT_SIZE\n"
    "    #else\n"
    "        #define WARP_THREADS 64\n"
    "    #endif\n",
).replace(
    "        : lane_id(threadIdx.x & 0x1f)\n",
    "#ifndef USE_ROCM\n"
    "        : lane_id(threadIdx.x & 0x1f)  // CUDA: 32-thread warps, mask = 31\n"
    "#else\n"
    "        : lane_id(threadIdx.x & (WARP_THREADS - 1))  // ROCm: the wavefront size\n"
    "#endif\n",
)
FILES = {
    "csrc/selective_scan/selective_scan_bwd_kernel.cuh": """\
#include <cub/block/block_load.cuh>
#include "reverse_scan.cuh"

template<typename Ktraits>
__global__ void selective_scan_bwd_kernel(float* x) {
    __shared__ typename WarpReverseScan<float, 32>::TempStorage smem_reverse_scan;
    WarpReverseScan<float, 32> warp_scan;
    x[threadIdx.x] = 0.f;
}
""",
    "csrc/selective_scan/selective_scan_fwd_kernel.cuh": """\
#include <cub/block/block_load.cuh>
#include "selective_scan_common.h"

template<typename Ktraits>
__global__ void selective_scan_fwd_kernel(float* x) {
    __shared__ typename Ktraits::BlockLoadT::TempStorage smem_load;
    x[threadIdx.x] = 1.f;
}
""",
}


def test_only_the_kernel_that_includes_the_changed_header_changes() -> None:
    old = {HEADER: BEFORE, **FILES}
    new = {HEADER: AFTER, **FILES}
    analysis = analyze_diff(
        file_diff(HEADER, BEFORE, AFTER),
        old_source=old.get,
        new_source=new.get,
        old_files=sorted(old),
        thrifty=False,
    )
    assert [(c.kind, c.name, c.via_helpers) for c in analysis.changes] == [
        ("body", "selective_scan_bwd_kernel", ["WARP_THREADS", "WarpReverseScan"])
    ]


# Shortened from csrc/selective_scan/selective_scan.h and selective_scan_fwd_kernel.cuh of
# state-spaces/mamba (Apache-2.0) at 126bbf2573a5 (in tests/data/real_prs), where the params
# struct's index_t widens to 64 bits in a header that holds no kernel marker.
PARAMS = "csrc/selective_scan/selective_scan.h"
PARAMS_BEFORE = """\
#pragma once

struct SSMParamsBase {
    using index_t = uint32_t;

    int batch, dim, seqlen, dstate, n_groups, n_chunks;
    int dim_ngroups_ratio;
    bool is_variable_B;
    bool is_variable_C;

    index_t A_d_stride;
    index_t A_dstate_stride;
};
"""
# the field's type changed, five lines into the struct: the diff's context does not show its name
PARAMS_AFTER = PARAMS_BEFORE.replace("    index_t A_d_stride;", "    uint64_t A_d_stride;")
KERNEL = {
    "csrc/selective_scan/selective_scan_fwd_kernel.cuh": """\
#include "selective_scan.h"

template<typename Ktraits>
__global__ void selective_scan_fwd_kernel(SSMParamsBase params) {
    float *A = reinterpret_cast<float *>(params.A_ptr) + threadIdx.x * params.A_d_stride;
    A[0] = 0.f;
}
"""
}


def test_a_header_without_a_kernel_marker_is_read_whole() -> None:
    from bot.analysis.repo import analyze_range

    base = MemoryRevision({PARAMS: PARAMS_BEFORE, **KERNEL})
    head = MemoryRevision({PARAMS: PARAMS_AFTER, **KERNEL})
    analysis = analyze_range(
        base,
        head,
        file_diff(PARAMS, PARAMS_BEFORE, PARAMS_AFTER),
        None,
        old_files=sorted(base.files),
        thrifty=False,  # as analyze_repo reads
    )
    assert [(c.kind, c.name, c.via_helpers) for c in analysis.changes] == [
        ("body", "selective_scan_fwd_kernel", ["SSMParamsBase"])
    ]
