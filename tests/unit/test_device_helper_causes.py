"""Which changed C++ names a kernel is reported through (``reach/host_cpp``, ``via_helpers``).

A kernel is named as changed through the ``__device__`` functions and types whose code changed
and that it reaches; not through what the new side alone defines (a macro, a typedef of a new
vendor block: whatever uses it changed its own text), not through another type's member alias
of the same name, and a member function only where it is called (not wherever its type is made).
A change under ``if constexpr (...)`` is its function's: the block is no function of its own.

Shortened from csrc/utils.cuh and csrc/dequant_impl_packed.cu of microsoft/VPTQ (MIT) at
f169d8d68c12 ("support rocm"), and from deep_gemm/include/deep_gemm/ (scheduler.cuh,
fp8_gemm.cuh, fp8_wgrad_gemm.cuh) of deepseek-ai/DeepGEMM (MIT) at 0c88cd01392c; both pull
requests are in tests/data/real_prs.
"""

from __future__ import annotations

from tests.diff_util import analysis_between

UTILS_OLD = """\
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>

namespace cuda {

template <typename T>
struct TypeVec2 {
  typedef __half2 type;
};

template <typename T, int GROUPSIZE>
__device__ __forceinline__ void ldg_vec_x(T* __restrict__ dst_t32, const uint32_t* __restrict__ src_u32) {
  uint32_t* dst_u32 = (uint32_t*)dst_t32;
  const int2* src = (const int2*)src_u32;
  if constexpr (GROUPSIZE == 2) {
    *dst_u32 = __ldg(src_u32);
  } else if constexpr (GROUPSIZE == 4) {
    *(int2*)dst_u32 = __ldg(src);
  }
}

}  // namespace cuda
"""
UTILS_NEW = (
    UTILS_OLD.replace(
        "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n",
        """\
#if defined(USE_ROCM)
  #include <hip/hip_fp16.h>
  #define VPTQ_LDG(arg) __ldg(arg)
  #define WARP_SIZE warpSize
typedef __hip_bfloat16 __bfloat16;
#else
  #include <cuda_fp16.h>
  #include <cuda_bf16.h>
  #define WARP_SIZE 32
  #define VPTQ_LDG(arg) *(arg)
typedef __nv_bfloat16 __bfloat16;
#endif
""",
    )
    .replace("*dst_u32 = __ldg(src_u32);", "*dst_u32 = VPTQ_LDG(src_u32);")
    .replace("*(int2*)dst_u32 = __ldg(src);", "*(int2*)dst_u32 = VPTQ_LDG(src);")
    .replace(
        "}  // namespace cuda\n",
        """\
template <typename T>
T __device__ __forceinline__ ZERO_VALUE(T a) {
  return T(0.0f);
}

}  // namespace cuda
""",
    )
)
KERNEL_OLD = """\
#include "utils.cuh"

template <typename T>
struct C10ToNvType {
  typedef __nv_bfloat16 type;
};

template <typename scalar_t, int GROUPSIZE>
__global__ void WqA16WithOutliers_PackIndice(scalar_t* out, const uint32_t* idx) {
  using VecType = typename cuda::TypeVec2<scalar_t>::type;
  scalar_t tmp_output[GROUPSIZE];
  cuda::ldg_vec_x<scalar_t, GROUPSIZE>(tmp_output, idx);
  int warpid = threadIdx.x / 32;
  out[warpid] = tmp_output[0] + scalar_t(0.0f);
}
"""
KERNEL_NEW = (
    KERNEL_OLD.replace("typedef __nv_bfloat16 type;", "typedef __bfloat16 type;")
    .replace("threadIdx.x / 32;", "threadIdx.x / WARP_SIZE;")
    .replace("scalar_t(0.0f);\n}", "cuda::ZERO_VALUE(scalar_t());\n}")
)


def test_a_helper_s_change_is_named_without_the_new_vendor_block_it_starts_using():
    old = {"csrc/utils.cuh": UTILS_OLD, "csrc/dequant_impl_packed.cu": KERNEL_OLD}
    new = {"csrc/utils.cuh": UTILS_NEW, "csrc/dequant_impl_packed.cu": KERNEL_NEW}
    [change] = analysis_between(old, new).changes
    assert (change.kind, change.name) == ("body", "WqA16WithOutliers_PackIndice")
    # not VPTQ_LDG, WARP_SIZE, __bfloat16, ZERO_VALUE (new), nor C10ToNvType's `type`
    assert change.via_helpers == ["ldg_vec_x"]


SCHEDULER_OLD = """\
#pragma once

template <GemmType kGemmType, uint32_t BLOCK_M>
struct Scheduler {
    int* grouped_layout;
    uint32_t current_iter = 0;

    __device__ __forceinline__ explicit Scheduler(int* layout) : grouped_layout(layout) {}

    __device__ __forceinline__ uint32_t get_global_idx(const uint32_t& shape_dim, const uint32_t& block_size,
                                                       const uint32_t& block_idx, const uint32_t& m_block_idx = 0) {
        if constexpr (kGemmType == GemmType::Normal) {
            return block_idx * block_size;
        } else if constexpr (kGemmType == GemmType::GroupedContiguous) {
            auto offset = __ldg(grouped_layout + m_block_idx * BLOCK_M);
            return offset * shape_dim + block_idx * block_size;
        }
    }

    __device__ __forceinline__ bool get_next_block(uint32_t& m_block_idx, uint32_t& n_block_idx) {
        ++ current_iter;
        return current_iter < 4;
    }
};
"""
SCHEDULER_NEW = SCHEDULER_OLD.replace(
    "auto offset = __ldg(grouped_layout + m_block_idx * BLOCK_M);",
    "auto offset = max(0, __ldg(grouped_layout + m_block_idx * BLOCK_M));",
)
GEMM = """\
#include "scheduler.cuh"

template <GemmType kGemmType, uint32_t BLOCK_M>
__global__ void fp8_gemm_kernel(float* out, int* grouped_layout, uint32_t shape_k) {
    auto scheduler = Scheduler<kGemmType, BLOCK_M>(grouped_layout);
    uint32_t m_block_idx, n_block_idx;
    while (scheduler.get_next_block(m_block_idx, n_block_idx)) {
        out[scheduler.get_global_idx(shape_k, BLOCK_M, m_block_idx)] = 0.0f;
    }
}
"""
WGRAD = """\
#include "scheduler.cuh"

template <uint32_t BLOCK_M>
__global__ void fp8_wgrad_gemm_kernel(float* out) {
    auto scheduler = Scheduler<GemmType::Normal, BLOCK_M>(nullptr);
    uint32_t m_block_idx, n_block_idx;
    while (scheduler.get_next_block(m_block_idx, n_block_idx)) {
        out[m_block_idx] = scheduler.current_iter;
    }
}
"""


def test_a_member_function_changed_under_if_constexpr_changes_the_kernels_that_call_it():
    base = "deep_gemm/include/deep_gemm/"
    old = {
        base + "scheduler.cuh": SCHEDULER_OLD,
        base + "fp8_gemm.cuh": GEMM,
        base + "fp8_wgrad_gemm.cuh": WGRAD,
    }
    new = {**old, base + "scheduler.cuh": SCHEDULER_NEW}
    [change] = analysis_between(old, new).changes  # fp8_wgrad_gemm_kernel only makes one
    assert (change.kind, change.name) == ("body", "fp8_gemm_kernel")
    assert change.via_helpers == ["Scheduler", "get_global_idx"]


# Shortened from csrc/flashfftconv/conv1d/conv1d_bhl.cu of HazyResearch/flash-fft-conv
# (Apache-2.0) at 0d3fef42cac2; its pull request 22463d93f5e0 (in tests/data/real_prs) moves
# the __device__ helpers unchanged into a new shared.h that the file includes.
HELPERS = """\
__forceinline__ __device__ float __hfma(const float a, const float b, const float c)
{
    return a * b + c;
}

template<typename T>
__forceinline__ __device__ void set_value(T* dst, T src)
{
    *dst = src;
}
"""
CONV = """\
template<typename T, typename U>
__global__ void conv1d_kernel(const T *__restrict__ u, const U *__restrict__ weights, T *__restrict__ out, uint L)
{
    T tmp;
    T weight;
    set_value(&weight, weights[0]);
    tmp = __hfma(u[threadIdx.x], weight, tmp);
    set_value(&out[threadIdx.x], tmp);
}

torch::Tensor conv1d_cuda_bhl(torch::Tensor u, torch::Tensor weight)
{
    auto out = torch::empty_like(u);
    conv1d_kernel<float, float><<<1, 256>>>(
        static_cast<float *>(u.data_ptr()), static_cast<float *>(weight.data_ptr()),
        static_cast<float *>(out.data_ptr()), u.size(-1));
    return out;
}
"""


def test_helpers_moved_unchanged_into_a_header_are_not_a_change_of_the_kernels_calling_them():
    path = "csrc/flashfftconv/conv1d/conv1d_bhl.cu"
    old = {path: "#include <cuda_fp16.h>\n\n" + HELPERS + "\n" + CONV}
    new = {
        "csrc/flashfftconv/conv1d/shared.h": "#pragma once\n#include <cuda_fp16.h>\n\n" + HELPERS,
        path: '#include "shared.h"\n\n' + CONV,
    }
    assert analysis_between(old, new).changes == []
    # changed on the way, the helper changes the kernel
    new["csrc/flashfftconv/conv1d/shared.h"] = new["csrc/flashfftconv/conv1d/shared.h"].replace(
        "a * b + c", "a * b - c"
    )
    [change] = analysis_between(old, new).changes
    assert (change.kind, change.name, change.via_helpers) == ("body", "conv1d_kernel", ["__hfma"])
