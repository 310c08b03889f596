"""Kernels written as C++ classes (``scan.kernel_classes``): a class whose device ``operator()``
is the kernel, launched through CUTLASS's ``device_kernel<Kernel>``, is reported as a kernel
where the program says it is launched, and only there.

Excerpts of flashinfer-ai/flashinfer (Apache-2.0) at fb28d7242b35,
csrc/cute_sm120_mxfp8_groupwise/sm120_blockscaled/ (launch.cuh, kernel_impl.cuh,
moe_kernel_impl.cuh: the form the SM120 groupwise GEMM packages share) and
csrc/nv_internal/tensorrt_llm/cutlass_extensions/include/cutlass_extensions/
interleaved_numeric_conversion.h (a converter functor with a device ``operator()``, launched by
nothing). Shortened to the structure the rule reads; the changed lines are written for the test.
"""

from __future__ import annotations

from bot.analysis.scan.kernel_classes import launched_classes
from tests.diff_util import analysis_between

DIR = "csrc/cute_sm120_mxfp8_groupwise/sm120_blockscaled"

LAUNCH = """\
#include <cutlass/device_kernel.h>
#include "kernel_impl.cuh"
#include "moe_kernel_impl.cuh"

template <typename Kernel>
__forceinline__ void launch_kernel(typename Kernel::Params const& params, int num_sms,
                                   cudaStream_t stream) {
  cudaLaunchConfig_t launch_config;
  launch_config.gridDim = Kernel::get_grid_shape(num_sms);
  launch_config.blockDim = Kernel::get_block_shape();
  launch_config.dynamicSmemBytes = Kernel::kSmemSize;
  auto kernel_ptr = &cutlass::device_kernel<Kernel>;
  CUTE_CHECK_ERROR(cudaLaunchKernelEx(&launch_config, kernel_ptr, params));
}

template <typename KT>
void launch_moe_gemm(typename KT::ElementA* ptr_A, int M_padded, int N, int K, int num_sms,
                     cudaStream_t stream = 0) {
  using Kernel =
      std::conditional_t<KT::kGemmType == sm120_common::GemmType::MGroupedContiguousWithZeroPadding,
                         SM120BlockScaledMoeGemmKernel<KT>, SM120BlockScaledGemmKernel<KT>>;
  auto problem_shape = make_shape(M_padded, N, K, 1);
  launch_kernel<Kernel>(Kernel::to_underlying_arguments(problem_shape, ptr_A), num_sms, stream);
}
"""

KERNEL = """\
template <typename KT>
struct SM120BlockScaledGemmKernel {
  static constexpr int kNumTMAThreads = 128;
  struct Params {
    int m;
  };

  CUTE_DEVICE
  void operator()(Params const& params, char* smem_buf) {
    int warp_idx = cutlass::canonical_warp_idx_sync();
    bool is_tma_thread = warp_idx == 0 && cute::elect_one_sync();
    if (is_tma_thread) {
      prefetch_tma_descriptors(params);
    }
    __syncthreads();
  }
};
"""

MOE = """\
template <typename KT>
struct SM120BlockScaledMoeGemmKernel : SM120BlockScaledGemmKernel<KT> {
  using BaseKernel = SM120BlockScaledGemmKernel<KT>;
  using Params = typename BaseKernel::Params;

  CUTE_DEVICE
  void operator()(Params const& params, char* smem_buf) {
    int warp_idx = cutlass::canonical_warp_idx_sync();
    __syncthreads();
  }
};
"""

CONVERTER = """\
template <int N>
struct FastInterleavedAndBiasedNumericArrayConverter<half_t, uint8_t, N> {
  CUTLASS_DEVICE
  static result_type convert(source_type const& source) {
    static constexpr uint32_t I8s_TO_F16s_MAGIC_NUM = 0x64806480;
    return result;
  }

  CUTLASS_DEVICE
  result_type operator()(source_type const& s) { return convert(s); }
};
"""


def _files(**changed: str) -> dict[str, str]:
    files = {
        f"{DIR}/launch.cuh": LAUNCH,
        f"{DIR}/kernel_impl.cuh": KERNEL,
        f"{DIR}/moe_kernel_impl.cuh": MOE,
        f"{DIR}/numeric_conversion.h": CONVERTER,
    }
    files.update({f"{DIR}/{name.replace('_cuh', '.cuh').replace('_h', '.h')}": text
                  for name, text in changed.items()})  # fmt: skip
    return files


def test_names_behind_a_launch_template_and_a_type_choice() -> None:
    # device_kernel<Kernel> in launch_kernel, whose Kernel each call names through an alias
    # that picks one of two classes
    assert {"SM120BlockScaledGemmKernel", "SM120BlockScaledMoeGemmKernel"} <= launched_classes(
        LAUNCH
    )
    assert launched_classes(KERNEL) == set()


def test_a_launched_class_whose_operator_changed_is_a_kernel_body_change() -> None:
    head = KERNEL.replace(
        "__syncthreads();", "cute::arch::fence_barrier_init();\n    __syncthreads();"
    )
    # only the kernel's header changed: its launcher is read beside it
    analysis = analysis_between(_files(), _files(kernel_impl_cuh=head))
    found = [(c.kind, c.name, c.language) for c in analysis.changes]
    assert found == [("body", "SM120BlockScaledGemmKernel", "cuda")]


def test_a_functor_no_launch_names_is_not_a_kernel() -> None:
    head = CONVERTER.replace("0x64806480", "0x64806481")
    analysis = analysis_between(_files(), _files(numeric_conversion_h=head))
    assert [c.name for c in analysis.changes] == []


def test_a_guard_deriving_from_its_parameter_is_not_the_kernel() -> None:
    # MagiAttention's enable_sm90_or_later<FlashAttnFwdSm90<...>> form: the wrapper derives
    # from its template parameter, and the class inside it is the kernel
    guard = """\
template <class Kernel>
struct enable_sm90_or_later : Kernel {
  template <class... Args>
  CUTLASS_DEVICE void operator()(Args&&... args) {
    Kernel::operator()(std::forward<Args>(args)...);
  }
};
"""
    launch = LAUNCH.replace(
        "SM120BlockScaledMoeGemmKernel<KT>, SM120BlockScaledGemmKernel<KT>>",
        "SM120BlockScaledMoeGemmKernel<KT>, enable_sm90_or_later<SM120BlockScaledGemmKernel<KT>>>",
    )
    old = _files(launch_cuh=launch, kernel_impl_cuh=guard + KERNEL)
    new = _files(
        launch_cuh=launch,
        kernel_impl_cuh=guard.replace("Kernel::operator()", "Kernel::template operator()")
        + KERNEL.replace("warp_idx == 0", "warp_idx == 1"),
    )
    assert [(c.kind, c.name) for c in analysis_between(old, new).changes] == [
        ("body", "SM120BlockScaledGemmKernel")
    ]
