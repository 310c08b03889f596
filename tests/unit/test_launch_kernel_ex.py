"""``cudaLaunchKernelEx(&config, kernel, args...)`` launches its second argument (the first is
the ``cudaLaunchConfig_t``), through a local pointer to a template instance as well.

Two real excerpts, shortened: csrc/smxx/decode/combine/combine.cu of deepseek-ai/FlashMLA at
9241ae3ef9ba (MIT; that pull request is in tests/data/real_prs), and
cpp/tensorrt_llm/kernels/mlaKernels.cu of NVIDIA/TensorRT-LLM (Apache-2.0).
"""

from __future__ import annotations

from bot.analysis.scan import scan_source

FLASHMLA = """\
template <typename ElementT, int HEAD_DIM_V, int BLOCK_SIZE_M, int NUM_SPLITS, int NUM_THREADS>
__global__ void __launch_bounds__(NUM_THREADS)
flash_fwd_mla_combine_kernel(__grid_constant__ const CombineParams params) {
    const int batch_s_q_idx = blockIdx.x;
}

template <typename ElementT>
void run_flash_mla_combine_kernel(CombineParams &params) {
    auto combine_kernel = &flash_fwd_mla_combine_kernel<ElementT, 512, 8, 64, 128>;
    cudaLaunchConfig_t combine_kernel_config = {
        dim3(params.b * params.s_q, 1, ku::ceil_div(params.h_q, BLOCK_SIZE_M)),
        dim3(NUM_THREADS, 1, 1),
        smem_size,
        params.stream,
        attribute,
        1
    };
    CHECK_CUDA(cudaLaunchKernelEx(&combine_kernel_config, combine_kernel, params));
}
"""
TRTLLM = """\
template <typename T, int BLOCK_SIZE, int K_DIM, int ROPE_DIM, typename KVCacheBuffer>
__global__ void applyMLARopeAndAssignQKVKernelGeneration(T* qkv_output, T const* q_pe, int head_num)
{
    int const head_idx = blockIdx.y;
}

template <typename T, typename KVCacheBuffer>
void invokeMLARopeGeneration(MlaParams<T>& params, KVCacheBuffer kv_cache_buffer, cudaStream_t stream)
{
    auto* kernel_instance = &applyMLARopeAndAssignQKVKernelGeneration<T, 256, 512, 64, KVCacheBuffer>;
    cudaLaunchConfig_t config;
    config.gridDim = grid;
    config.blockDim = 256;
    config.stream = stream;
    cudaLaunchKernelEx(&config, kernel_instance, params.q_buf, params.q_pe, params.head_num);
}
"""


def _launched(path: str, text: str) -> list[tuple[str, str]]:
    return [(x.kernel, x.grid) for x in scan_source(path, text).launches]


def test_the_kernel_is_the_second_argument():
    assert _launched("csrc/smxx/decode/combine/combine.cu", FLASHMLA) == [
        ("flash_fwd_mla_combine_kernel", "&combine_kernel_config")
    ]
    assert _launched("cpp/tensorrt_llm/kernels/mlaKernels.cu", TRTLLM) == [
        ("applyMLARopeAndAssignQKVKernelGeneration", "&config")
    ]


def test_cuda_launch_kernel_keeps_the_kernel_first():
    plain = TRTLLM.replace(
        "cudaLaunchKernelEx(&config, kernel_instance,",
        "cudaLaunchKernel(kernel_instance, grid, 256,",
    )
    assert [k for k, _ in _launched("a.cu", plain)] == ["applyMLARopeAndAssignQKVKernelGeneration"]
