"""A template argument bound to a template parameter the kernel never names is no part of its
launch (``scan/template_args``): dropping both is no change; changing a read one still is.

Shortened from gsplat/cuda/csrc/RasterizeToPixelsFromWorld3DGSParallelBatchFwd.cu of
nerfstudio-project/gsplat (Apache-2.0) at 22a01a288acb ("Improve compile times by removing
unused UseHitDistance template param"; in tests/data/real_prs as a negative control).
"""

from __future__ import annotations

from bot.analysis.scan.cpp import scan_cpp
from tests.diff_util import changes_between

PATH = "gsplat/cuda/csrc/RasterizeToPixelsFromWorld3DGSParallelBatchFwd.cu"
BEFORE = """\
#include <cuda_runtime.h>

// Batch-scan kernel: one CTA per tile, compact-CTA.
template<
    uint32_t CDIM,
    uint32_t TILE_SIZE,
    uint32_t CTA_SIZE,
    bool UseHitDistance,
    bool ForBackward,
    // When false (unsafe_masked_tile_outputs=True), the masked-tile safe-store
    // below compiles out.
    bool SAFE_MASKED_OUTPUTS,
    typename scalar_t
>
__global__ void
    __launch_bounds__(CTA_SIZE) rasterize_to_pixels_from_world_3dgs_fwd_batch_scan_kernel(
        const uint32_t n_isects,
        const scalar_t *__restrict__ colors,
        float *__restrict__ render_colors
    ) {
    uint32_t tile = blockIdx.x * TILE_SIZE + threadIdx.x;
    if (SAFE_MASKED_OUTPUTS && tile >= n_isects) {
        return;
    }
    render_colors[tile * CDIM] = ForBackward ? 0.f : colors[tile];
}

template <uint32_t CDIM, uint32_t TILE_SIZE, uint32_t CTA_SIZE, bool UseHitDistance, bool ForBackward>
void launch_rasterize_to_pixels_from_world_3dgs_parallel_batch_fwd_kernel(
    const at::Tensor colors, at::Tensor renders, uint32_t n_isects, cudaStream_t stream
) {
    const dim3 threads = {CTA_SIZE, 1, 1};
    const dim3 grid_batch_scan = {n_isects / TILE_SIZE, 1, 1};
    auto launch_batch_scan = [&]<bool SAFE_MASKED_OUTPUTS>()
    {
        rasterize_to_pixels_from_world_3dgs_fwd_batch_scan_kernel<
            CDIM,
            TILE_SIZE,
            CTA_SIZE,
            UseHitDistance,
            ForBackward,
            SAFE_MASKED_OUTPUTS,
            float
        ><<<grid_batch_scan, threads, 0, stream>>>(
            n_isects,
            colors.const_data_ptr<float>(),
            renders.data_ptr<float>()
        );
    };
    launch_batch_scan.template operator()<true>();
}
"""
AFTER = BEFORE.replace("    bool UseHitDistance,\n", "").replace(
    "            UseHitDistance,\n", ""
)


def test_an_unread_template_parameter_dropped_with_its_launch_argument_is_no_change():
    assert changes_between({PATH: BEFORE}, {PATH: AFTER}) == []


def test_a_template_argument_the_kernel_reads_is_still_part_of_the_launch():
    changed = BEFORE.replace(
        "            CTA_SIZE,\n            UseHitDistance,",
        "            128,\n            UseHitDistance,",
    )
    assert changes_between({PATH: BEFORE}, {PATH: changed}) == [
        "launch rasterize_to_pixels_from_world_3dgs_fwd_batch_scan_kernel"
    ]


def test_the_fingerprint_of_the_launcher_leaves_only_the_unread_argument_out():
    def digest(text: str) -> str | None:
        [site] = scan_cpp(PATH, text.split("\n"), complete=True).launches
        return site.wrapper_digest

    assert digest(BEFORE) == digest(AFTER)
    assert digest(BEFORE) != digest(
        BEFORE.replace("ForBackward,\n            SAFE", "true,\n            SAFE")
    )
