"""A changed C++ launcher changes only the launches its change reaches (``scan/cpp_slice``): the
statements that assign what a launch reads, the blocks around it, the macros it expands, its
error checks; not a guard, nor a value computed for another launch.

Shortened from exllamav3/exllamav3_ext/generator/sampling_fused.cu of turboderp-org/exllamav3
(MIT) at 3b5b08a502c1 (parent 70fc329f9abd): ``fused_sampler`` gains an optional bitmask, its
checks, and passes it to ``fs_partial_max_kernel`` (whose signature takes it); the launch of
``fs_select_kernel`` (in a launch macro of the function) and of ``fs_finalize_kernel`` pass what
they passed before.
"""

from __future__ import annotations

from tests.diff_util import analysis_between

PATH = "exllamav3/exllamav3_ext/generator/sampling_fused.cu"
BASE = """\
#define FS_THREADS 256

template <typename T>
__global__ __launch_bounds__(FS_THREADS)
void fs_partial_max_kernel(const T* logits, const half* mask, float* ws_max, int dim)
{
    ws_max[blockIdx.x] = (float) logits[threadIdx.x];
}

__global__ __launch_bounds__(FS_THREADS)
void fs_select_kernel(uint8_t* hist, int phase, int filters, int top_k, float top_p)
{
    hist[threadIdx.x] = phase;
}

__global__ void fs_finalize_kernel(ValIdx* ws_vi, uint64_t* out, int num_blocks)
{
    out[blockIdx.x] = ws_vi[threadIdx.x].idx;
}

void fused_sampler
(
    const at::Tensor& logits,
    const c10::optional<at::Tensor>& logit_mask,
    at::Tensor& out,
    at::Tensor& workspace,
    int mode,
    int filters,
    int top_k,
    float top_p,
    const c10::optional<at::Tensor>& histogram
)
{
    cudaStream_t stream = at::cuda::getCurrentCUDAStream().stream();
    int bsz = logits.size(0);
    int dim = logits.size(1);
    TORCH_CHECK(out.numel() == bsz, "fused_sampler: out must have bsz elements");

    const half* mask_ptr = nullptr;
    if (logit_mask.has_value())
    {
        mask_ptr = (const half*) logit_mask.value().data_ptr();
    }

    int num_blocks = MIN(CEIL_DIVIDE(dim, FS_THREADS * 4), FUSED_SAMPLER_MAX_BLOCKS);
    float* ws_max = (float*) workspace.data_ptr();
    ValIdx* ws_vi = (ValIdx*) (ws_max + bsz * FUSED_SAMPLER_MAX_BLOCKS);
    dim3 grid(num_blocks, bsz);

    uint8_t* hist_ptr = nullptr;
    if (mode == 3)
    {
        hist_ptr = (uint8_t*) histogram.value().data_ptr();
        cuda_check(cudaMemsetAsync(hist_ptr, 0, (size_t) bsz * FUSED_SAMPLER_HIST_STRIDE, stream));
    }

    if (mode >= 2)
        fs_partial_max_kernel<half><<<grid, FS_THREADS, 0, stream>>>
            ((const half*) logits.data_ptr(), mask_ptr, ws_max, dim);

    if (mode == 3)
    {
        #define FS_SELECT(PHASE) \\
            fs_select_kernel<<<bsz, FS_THREADS, 0, stream>>> \\
                (hist_ptr, PHASE, filters, top_k, top_p);
        FS_SELECT(0)
        FS_SELECT(1)
        #undef FS_SELECT
    }

    fs_finalize_kernel<<<bsz, FUSED_SAMPLER_MAX_BLOCKS, 0, stream>>>
    (
        ws_vi,
        (uint64_t*) out.data_ptr(),
        num_blocks
    );
}
"""
HEAD = (
    BASE.replace(
        "const half* mask, float* ws_max, int dim)",
        "const half* mask, const uint32_t* bits, float* ws_max, int dim, int bits_words)",
    )
    .replace(
        "    const c10::optional<at::Tensor>& logit_mask,\n",
        "    const c10::optional<at::Tensor>& logit_mask,\n"
        "    const c10::optional<at::Tensor>& logit_bitmask,\n",
    )
    .replace(
        "    int num_blocks = MIN(",
        "    const uint32_t* bits_ptr = nullptr;\n"
        "    int bits_words = 0;\n"
        "    if (logit_bitmask.has_value())\n"
        "    {\n"
        '        TORCH_CHECK(!mask_ptr, "fused_sampler: logit_mask and logit_bitmask are '
        'mutually exclusive");\n'
        "        const at::Tensor& bits = logit_bitmask.value();\n"
        '        TORCH_CHECK(bits.size(0) == 1 || bits.size(0) == bsz, "fused_sampler: bad bitmask '
        'batch dim");\n'
        "        bits_ptr = (const uint32_t*) bits.data_ptr();\n"
        "        bits_words = (int) bits.size(1);\n"
        "    }\n\n"
        "    int num_blocks = MIN(",
    )
    .replace(
        "mask_ptr, ws_max, dim);",
        "mask_ptr, bits_ptr, ws_max, dim, bits_words);",
    )
)


def _changes(before: str, after: str) -> list[tuple[str, str]]:
    return sorted((c.kind, c.name) for c in analysis_between({PATH: before}, {PATH: after}).changes)


def test_launches_a_launcher_s_change_does_not_reach_are_unchanged() -> None:
    assert _changes(BASE, HEAD) == [("body", "fs_partial_max_kernel")]


def test_a_value_a_launch_reads_computed_otherwise_changes_it() -> None:
    after = BASE.replace(
        "int num_blocks = MIN(CEIL_DIVIDE(dim, FS_THREADS * 4)",
        "int num_blocks = MIN(CEIL_DIVIDE(dim, FS_THREADS * 8)",
    )
    assert _changes(BASE, after) == [
        ("launch", "fs_finalize_kernel"),
        ("launch", "fs_partial_max_kernel"),
    ]


def test_a_launch_s_new_error_check_is_part_of_it_a_new_guard_is_not() -> None:
    checked = BASE.replace("        num_blocks\n    );\n", "        num_blocks\n    );\n"
                           "    cuda_check(cudaPeekAtLastError());\n")  # fmt: skip
    assert _changes(BASE, checked) == [  # it reports the error of any launch before it
        ("launch", "fs_finalize_kernel"),
        ("launch", "fs_partial_max_kernel"),
        ("launch", "fs_select_kernel"),
    ]
    guarded = BASE.replace(
        "    dim3 grid(",
        '    TORCH_CHECK(mode >= 0 && mode <= 3, "fused_sampler: bad mode");\n    dim3 grid(',
    )
    assert _changes(BASE, guarded) == []
