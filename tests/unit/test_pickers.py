"""A kernel launched through a function pointer a picker returns is the launched kernel
(``reach/pickers.picked_kernels``), in both shapes real code writes a picker in.

- a struct's static method of the picker's name returning template instances, from
  exllamav2/exllamav2_ext/cuda/comp_units/kernel_select.cuh and q_gemm_kernel.cuh of
  turboderp/exllamav2 (MIT) at 072d11f16318 (its two autotuner pull requests are in
  tests/data/real_prs);
- a free function returning an instance per ``#if``, from
  autogptq_extension/exllamav2/cuda/q_gemm_kernel_gptq.cuh and q_gemm.cu of AutoGPTQ/AutoGPTQ
  (MIT) at 9f7d37072917.

Shortened: signatures and bodies cut to what the picker reads.
"""

from __future__ import annotations

from bot.analysis.reach.pickers import picked_kernels

EXL2 = {
    "cuda/q_gemm.cu": """\
#include "comp_units/kernel_select.cuh"
void gemm_half_q_half_cuda_part(const half* a, half* c, int block_kn_size)
{
    fp_gemm_half_q_half_kernel kernel = pick_gemm_half_q_half_kernel(max_m, b->kernel_p, r_weights != NULL, mul_r_weights, block_kn_size);
    if (!kernel) return;
    kernel<<<gridDim, blockDim, 0, stream>>>(a, c);
}
""",
    "cuda/comp_units/kernel_select.cuh": """\
#include "../q_gemm_kernel.cuh"
fp_gemm_half_q_half_kernel pick_gemm_half_q_half_kernel(const int max_m, const int perm, bool r_weights, bool mul_r_weights, int kn_size);

template <int max_m, bool use_r_weights, bool mul_r_weights>
struct map_m_count_exl2_a {
    static constexpr fp_gemm_half_q_half_kernel pick_gemm_half_q_half_kernel(const int perm, const int kn_size)
    {
        if (kn_size == 32)
        {
            switch (perm)
            {
                case 0b00000010: return gemm_half_q_half_kernel<max_m, 0b00000010, use_r_weights, mul_r_weights, 32>;
                default: return NULL;
            }
        }
        return NULL;
    }
};
""",
    "cuda/q_gemm_kernel.cuh": """\
typedef void (*fp_gemm_half_q_half_kernel)(const half*, half*);

template <int m_count, int kernel_p, bool use_r_weights, bool mul_r_weights, int block_kn_size>
__global__ void gemm_half_q_half_kernel(const half* __restrict__ a, half* __restrict__ c)
{
    c[threadIdx.x] = a[threadIdx.x];
}

__global__ void clear_kernel(half* __restrict__ c)
{
    c[threadIdx.x] = 0;
}
""",
}

AUTOGPTQ = {
    "exllamav2/cuda/q_gemm.cu": """\
#include "q_gemm_kernel_gptq.cuh"
void gemm_half_q_half_cuda_part(const half* a, half* c, int m_count)
{
    fp_gemm_half_q_half_gptq_kernel kernel = pick_gemm_half_q_half_gptq_kernel(true, m_count);
    kernel<<<gridDim, blockDim>>>(a, c);
}
""",
    "exllamav2/cuda/q_gemm_kernel_gptq.cuh": """\
typedef void (*fp_gemm_half_q_half_gptq_kernel)(const half*, half*);

template <bool first_block, int m_count>
__global__ void gemm_half_q_half_gptq_kernel(const half* __restrict__ a, half* __restrict__ c)
{
    c[threadIdx.x] = a[threadIdx.x];
}

fp_gemm_half_q_half_gptq_kernel pick_gemm_half_q_half_gptq_kernel(bool first_block, const int m_count)
{
    #if BLOCK_M_SIZE_MAX >= 1
    if (m_count == 1) return gemm_half_q_half_gptq_kernel<true, 1>;
    #endif
    #if BLOCK_M_SIZE_MAX >= 2
    if (m_count == 2) return gemm_half_q_half_gptq_kernel<true, 2>;
    #endif
    return NULL;
}
""",
}


def test_a_struct_method_table_returns_the_kernel() -> None:
    got = picked_kernels("cuda/q_gemm.cu", "pick_gemm_half_q_half_kernel", EXL2.get)
    assert got == {"gemm_half_q_half_kernel"}


def test_a_free_function_picker_returns_the_kernel() -> None:
    got = picked_kernels(
        "exllamav2/cuda/q_gemm.cu", "pick_gemm_half_q_half_gptq_kernel", AUTOGPTQ.get
    )
    assert got == {"gemm_half_q_half_gptq_kernel"}


def test_a_function_that_returns_no_kernel_is_no_picker() -> None:
    assert picked_kernels("cuda/q_gemm.cu", "gemm_half_q_half_cuda_part", EXL2.get) == set()
    # the header that defines the picker is not included: nothing is guessed
    alone = {k: v for k, v in AUTOGPTQ.items() if k.endswith(".cu")}
    assert (
        picked_kernels("exllamav2/cuda/q_gemm.cu", "pick_gemm_half_q_half_gptq_kernel", alone.get)
        == set()
    )


# One host function, two launches in the two branches of an ``if`` / ``else``: a change in one
# branch changes that launch's host code only (``scan.cpp._other_branches``). Shortened from
# gemm_half_q_half_cuda_part in exllamav2/exllamav2_ext/cuda/q_gemm.cu of turboderp/exllamav2
# (MIT) at 072d11f16318, where at_select gained arguments in the EXL2 branch; AutoGPTQ/AutoGPTQ's
# autogptq_extension/exllamav2/cuda/q_gemm.cu (MIT, 9f7d37072917) splits the same way.
PART = """\
void gemm_half_q_half_cuda_part(const half* a, QMatrix* b, half* c, int size_m, int m_count)
{
    if (!b->is_gptq)
    {
        int block_kn_size = 64;
        AT_Result* atr = at_get(b->device, size_m, size_k, size_n);
        at_select(atr);
        block_kn_size = atr->best;
        fp_gemm_half_q_half_kernel kernel = pick_gemm_half_q_half_kernel(max_m, b->kernel_p, block_kn_size);
        kernel<<<gridDim, blockDim, 0, stream>>>(a, c);
    }
    else
    {
        fp_gemm_half_q_half_gptq_kernel kernel = pick_gemm_half_q_half_gptq_kernel(true, m_count);
        kernel<<<gridDim, blockDim, 0, stream>>>(a, c);
    }
}
"""


def _digests(text: str) -> dict[str, str | None]:
    from bot.analysis.scan import scan_source

    return {x.kernel: x.wrapper_digest for x in scan_source("cuda/q_gemm.cu", text).launches}


def test_a_change_in_one_branch_is_not_the_other_branch_s_launch() -> None:
    before = _digests(PART)
    after = _digests(
        PART.replace("at_select(atr);", "at_select(atr, b->device, size_m, size_k, size_n);")
    )
    assert after["pick_gemm_half_q_half_kernel"] != before["pick_gemm_half_q_half_kernel"]
    assert after["pick_gemm_half_q_half_gptq_kernel"] == before["pick_gemm_half_q_half_gptq_kernel"]
    # before the if, both launches' host code changed
    shared = _digests(PART.replace("    if (!b->is_gptq)", "    c = a;\n    if (!b->is_gptq)"))
    assert (
        shared["pick_gemm_half_q_half_gptq_kernel"] != before["pick_gemm_half_q_half_gptq_kernel"]
    )
