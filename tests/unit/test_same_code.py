"""A change of text alone is not a change of the kernel (bot/analysis/same_code.py).

Excerpts, shortened, from three real pull requests of tests/data/real_prs:

- FlagOpen/FlagAttention 548382d704db (Apache-2.0), src/flag_attn/total.py: the unread local
  ``input_dtype = Q.dtype.element_ty`` removed from ``_total_attention_kernel``;
- FlagOpen/FlagAttention 7b91f0039c73 (Apache-2.0), src/flag_attn/flash.py: in
  ``_bwd_preprocess``, ``if not DIVISIBLE_M:`` right after ``if DIVISIBLE_M:`` became ``else:``;
- Dao-AILab/causal-conv1d fcf86720f137 (BSD-3-Clause), csrc/causal_conv1d_fwd.cu: an
  ``#ifndef USE_ROCM`` / ``#else`` pair in the launcher replaced by a ``ROCM_ONLY(x)`` macro
  defined per vendor at the top of the file.
"""

from __future__ import annotations

from bot.analysis.classify import analyze_diff
from bot.analysis.same_code import same_cpp_program
from tests.diff_util import file_diff

TOTAL = "src/flag_attn/total.py"
TOTAL_BEFORE = """\
import triton
import triton.language as tl


@triton.jit
def _total_attention_kernel(Q, K, L, TA, sm_scale, M, N, BLOCK_M: tl.constexpr):
    input_dtype = Q.dtype.element_ty
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    q = tl.load(Q + offs_m)
    l = tl.load(L + offs_m)
    tl.store(TA + offs_m, tl.exp(q * sm_scale - l))
"""
TOTAL_AFTER = TOTAL_BEFORE.replace("    input_dtype = Q.dtype.element_ty\n", "")

FLASH = "src/flag_attn/flash.py"
FLASH_BEFORE = """\
import triton
import triton.language as tl


@triton.jit
def _bwd_preprocess(Out, DO, Delta, M, BLOCK_M: tl.constexpr, DIVISIBLE_M: tl.constexpr):
    off_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    if DIVISIBLE_M:
        o = tl.load(Out + off_m).to(tl.float32)
        do = tl.load(DO + off_m).to(tl.float32)
    if not DIVISIBLE_M:
        mask_m = off_m < M
        o = tl.load(Out + off_m, mask=mask_m).to(tl.float32)
        do = tl.load(DO + off_m, mask=mask_m).to(tl.float32)
    tl.store(Delta + off_m, o * do)
"""
FLASH_AFTER = FLASH_BEFORE.replace("    if not DIVISIBLE_M:", "    else:")

CU = "csrc/causal_conv1d_fwd.cu"
CU_LAUNCHER = """\

template<typename Ktraits>
__global__ void causal_conv1d_fwd_kernel(ConvParamsBase params) { params.out_ptr = 0; }

template<int kNThreads, int kWidth, typename input_t, typename weight_t>
void causal_conv1d_fwd_launch(ConvParamsBase &params, cudaStream_t stream) {
    auto kernel = &causal_conv1d_fwd_kernel<Ktraits>;
    if (kSmemSize >= 48 * 1024) {
@SET@    }
    kernel<<<grid, Ktraits::kNThreads, kSmemSize, stream>>>(params);
}
"""
WARNING = 'std::cerr << "Warning (causal_conv1d fwd launch): non-op on AMD" << std::endl'
CU_BEFORE = (
    "#ifndef USE_ROCM\n"
    "    #include <cub/block/block_load.cuh>\n"
    "#else\n"
    "    #include <hipcub/hipcub.hpp>\n"
    "    namespace cub = hipcub;\n"
    "#endif\n"
) + CU_LAUNCHER.replace(
    "@SET@",
    "        #ifndef USE_ROCM\n"
    "        C10_CUDA_CHECK(cudaFuncSetAttribute(\n"
    "            kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemSize));\n"
    "        #else\n"
    "        // There is a slight signature discrepancy in HIP and CUDA FuncSetAttribute.\n"
    "        C10_CUDA_CHECK(cudaFuncSetAttribute(\n"
    "            (void *) kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemSize));\n"
    f"        {WARNING};\n"
    "        #endif\n",
)
CU_AFTER = (
    "#ifndef USE_ROCM\n"
    "    #include <cub/block/block_load.cuh>\n"
    "    #define ROCM_ONLY(x)\n"
    "#else\n"
    "    #include <hipcub/hipcub.hpp>\n"
    "    namespace cub = hipcub;\n"
    "    #define ROCM_ONLY(x) x\n"
    "#endif\n"
) + CU_LAUNCHER.replace(
    "@SET@",
    "        // There is a slight signature discrepancy in HIP and CUDA FuncSetAttribute.\n"
    "        C10_CUDA_CHECK(cudaFuncSetAttribute(\n"
    "            ROCM_ONLY((void *)) kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemSize));\n"
    f"        ROCM_ONLY({WARNING});\n",
)


def _changes(path: str, before: str, after: str) -> list[str]:
    old, new = {path: before}, {path: after}
    analysis = analyze_diff(
        file_diff(path, before, after), old_source=old.get, new_source=new.get, old_files=[path]
    )
    return [f"{c.kind} {c.name}" for c in analysis.changes]


def test_an_unread_local_removed_is_no_change():
    assert _changes(TOTAL, TOTAL_BEFORE, TOTAL_AFTER) == []


def test_from_the_diff_alone_an_unread_local_removed_is_left_unclassified():
    analysis = analyze_diff(file_diff(TOTAL, TOTAL_BEFORE, TOTAL_AFTER))
    assert analysis.changes == []
    assert [u.path for u in analysis.unclassified] == [TOTAL]
    assert "_total_attention_kernel: " in analysis.unclassified[0].why  # the kernel, and why
    read = TOTAL_BEFORE.replace("tl.load(Q + offs_m)", "tl.load(Q + offs_m).to(input_dtype)")
    gone = read.replace("    input_dtype = Q.dtype.element_ty\n", "")
    analysis = analyze_diff(file_diff(TOTAL, read, gone))  # a line the diff shows reads it
    assert [f"{c.kind} {c.name}" for c in analysis.changes] == ["body _total_attention_kernel"]


def test_a_local_that_is_read_removed_is_a_body_change():
    after = TOTAL_AFTER.replace("tl.exp(q * sm_scale - l)", "tl.exp(q * sm_scale)")
    assert _changes(TOTAL, TOTAL_BEFORE, after) == ["body _total_attention_kernel"]


def test_an_unread_local_from_a_call_with_an_effect_is_kept():
    before = TOTAL_AFTER.replace(
        "    q = tl.load(Q + offs_m)\n",
        "    q = tl.load(Q + offs_m)\n    old = tl.atomic_add(L, 1.0)\n",
    )
    assert _changes(TOTAL, before, TOTAL_AFTER) == ["body _total_attention_kernel"]


def test_if_not_after_if_on_the_same_test_is_else():
    assert _changes(FLASH, FLASH_BEFORE, FLASH_AFTER) == []
    flipped = FLASH_AFTER.replace("    if DIVISIBLE_M:", "    if not DIVISIBLE_M:", 1)
    assert _changes(FLASH, FLASH_BEFORE, flipped) == ["body _bwd_preprocess"]  # branches swapped


def test_if_not_with_else_is_the_if_with_the_branches_swapped():
    swapped = FLASH_AFTER.replace("    if DIVISIBLE_M:", "    if not DIVISIBLE_M:", 1)
    body_a, body_b = (
        "        o = tl.load(Out + off_m).to(tl.float32)\n        do = tl.load(DO + off_m).to(tl.float32)\n",
        "        mask_m = off_m < M\n        o = tl.load(Out + off_m, mask=mask_m).to(tl.float32)\n"
        "        do = tl.load(DO + off_m, mask=mask_m).to(tl.float32)\n",
    )
    swapped = swapped.replace(body_a, "@A@").replace(body_b, body_a).replace("@A@", body_b)
    assert _changes(FLASH, FLASH_AFTER, swapped) == []


def test_a_branch_that_changes_its_test_is_not_merged():
    before = FLASH_BEFORE.replace(
        "        do = tl.load(DO + off_m).to(tl.float32)\n    if not",
        "        do = tl.load(DO + off_m).to(tl.float32)\n        DIVISIBLE_M = False\n    if not",
    )
    after = FLASH_AFTER.replace(
        "        do = tl.load(DO + off_m).to(tl.float32)\n    else",
        "        do = tl.load(DO + off_m).to(tl.float32)\n        DIVISIBLE_M = False\n    else",
    )
    assert _changes(FLASH, before, after) == ["body _bwd_preprocess"]


def test_a_macro_expanding_to_the_old_vendor_branches_is_the_same_program():
    assert same_cpp_program(CU_BEFORE, CU_AFTER)
    assert _changes(CU, CU_BEFORE, CU_AFTER) == []


def test_a_macro_expanding_to_other_code_on_one_vendor_is_a_change():
    dropped_cast = CU_AFTER.replace("#define ROCM_ONLY(x) x", "#define ROCM_ONLY(x)")
    assert not same_cpp_program(CU_BEFORE, dropped_cast)
    assert not same_cpp_program(CU_BEFORE, CU_AFTER.replace("48 * 1024", "64 * 1024"))
    assert _changes(CU, CU_BEFORE, CU_AFTER.replace("48 * 1024", "64 * 1024")) == [
        "launch causal_conv1d_fwd_kernel"
    ]


def test_alternative_tokens_and_comments_are_the_same_program():
    before = 'void f(int a) { TORCH_CHECK(a % 8 == 0 and a > 0, "x"); }\n'
    after = '// checked\nvoid f(int a) { TORCH_CHECK(a % 8 == 0 && a > 0, "x"); }\n'
    assert same_cpp_program(before, after)
    assert not same_cpp_program(before, after.replace("&&", "||"))


# PyTorch's deprecated C++ spellings, shortened from two real pull requests:
# mobiusml/hqq 0d2f2e35fc8c (Apache-2.0; in tests/data/real_prs), hqq/kernels/hqq_aten_cuda_kernel.cu,
# where the project's own dispatch macro AT_DISPATCHER is handed W_r.scalar_type() instead of
# W_r.type(); and 66RING/tiny-flash-attention 22c59917fb94 (MIT),
# flash_attention_cuda/csrc/self_attention.cu, the same for AT_DISPATCH_FLOATING_TYPES_AND_HALF.
HQQ = """\
#define AT_DISPATCHER(TYPE, NAME, ...) AT_DISPATCH_FLOATING_TYPES_AND_HALF(TYPE, NAME, __VA_ARGS__)

template <typename scalar_t>
__global__ void dequantize_8bit_u8_kernel(unsigned char* Wq, scalar_t* scale, scalar_t* W_r, int n) {
\tint i = blockIdx.x * blockDim.x + threadIdx.x;
\tif (i < n) W_r[i] = (scalar_t)Wq[i] * scale[0];
}

torch::Tensor dequantize_8bit_u8(torch::Tensor &Wq_packed, torch::Tensor &scale, torch::Tensor &W_r) {
\tint n = W_r.numel();
\tint blocks = cdiv(n, BLOCK_SIZE);
\tAT_DISPATCHER(W_r.type(), "dequantize_8bit_u8", ([&] {
\t\tdequantize_8bit_u8_kernel<scalar_t><<<blocks, BLOCK_SIZE>>>(Wq_packed.data_ptr<unsigned char>(),
\t\t\tscale.data_ptr<scalar_t>(), W_r.data_ptr<scalar_t>(), n);
\t}));
\treturn W_r;
}
"""
TINY_FA = """\
template <typename T>
__global__ void row_softmax(T* input, T* output, int n) { output[threadIdx.x] = input[threadIdx.x]; }

torch::Tensor self_attention_cuda(torch::Tensor q, torch::Tensor k, torch::Tensor v) {
  auto qk = torch::empty({m, m}, q.options());
  dim3 sm_block(m, 1, 1);
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(qk.type(), "softmax(QK)", ([&] {
                              row_softmax<scalar_t><<<1, sm_block>>>(
                                  qk.data<scalar_t>(), qk.data<scalar_t>(), m);
                             }));
  return qk;
}
"""


def test_a_deprecated_dispatch_type_spelled_anew_is_the_same_program():
    hqq_after = HQQ.replace("W_r.type()", "W_r.scalar_type()")
    assert same_cpp_program(HQQ, hqq_after)
    assert _changes("hqq/kernels/hqq_aten_cuda_kernel.cu", HQQ, hqq_after) == []
    after = TINY_FA.replace("qk.type()", "qk.scalar_type()").replace(".data<", ".data_ptr<")
    assert same_cpp_program(TINY_FA, after)


def test_from_the_diff_alone_a_deprecated_spelling_is_named_unclassified_not_a_change():
    path = "hqq/kernels/hqq_aten_cuda_kernel.cu"
    hqq_after = HQQ.replace("W_r.type()", "W_r.scalar_type()")
    analysis = analyze_diff(file_diff(path, HQQ, hqq_after))
    assert analysis.changes == []
    assert [u.path for u in analysis.unclassified] == [path]
    changed = analyze_diff(file_diff(path, HQQ, HQQ.replace("W_r.type()", "Wq_packed.type()")))
    assert [f"{c.kind} {c.name}" for c in changed.changes] == ["launch dequantize_8bit_u8_kernel"]


# Shortened from rusty1s/pytorch_scatter (MIT), csrc/cuda/scatter_cuda.cu at 7cabb535f5a7, the base
# of two real pull requests (both in tests/data/real_prs): 7126aebe7d21 spells the optionals
# std::optional / std::nullopt, f4696b75534c sets the device with c10::cuda::MaybeSetDevice.
SCATTER = """\
template <typename scalar_t>
__global__ void scatter_kernel(const scalar_t *src_data, scalar_t *out_data, int E) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < E) out_data[i] = src_data[i];
}

std::tuple<torch::Tensor, torch::optional<torch::Tensor>>
scatter_cuda(torch::Tensor src, torch::Tensor index, int64_t dim,
             torch::optional<torch::Tensor> optional_out,
             torch::optional<int64_t> dim_size, std::string reduce) {
  cudaSetDevice(src.get_device());
  torch::Tensor out;
  if (optional_out.has_value())
    out = optional_out.value().contiguous();
  else
    out = torch::empty(src.sizes(), src.options());
  torch::optional<torch::Tensor> arg_out = torch::nullopt;
  auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_ALL_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16, src.scalar_type(), "_", [&] {
    auto src_data = src.data_ptr<scalar_t>();
    auto out_data = out.data_ptr<scalar_t>();
    scatter_kernel<scalar_t>
        <<<BLOCKS(src.numel()), THREADS, 0, stream>>>(src_data, out_data, src.numel());
  });
  return std::make_tuple(out, arg_out);
}
"""


def test_optionals_spelled_std_and_maybe_set_device_are_the_same_program():
    path = "csrc/cuda/scatter_cuda.cu"
    spelled = SCATTER.replace("torch::optional", "std::optional").replace(
        "torch::nullopt", "std::nullopt"
    )
    maybe = SCATTER.replace("cudaSetDevice(", "c10::cuda::MaybeSetDevice(")
    for after in (spelled, maybe):
        assert same_cpp_program(SCATTER, after)
        assert _changes(path, SCATTER, after) == []
    # another device, or another type, is still a change of the launch's host code
    other = maybe.replace("(src.get_device", "(index.get_device")
    assert not same_cpp_program(SCATTER, other)
    assert _changes(path, SCATTER, other) == ["launch scatter_kernel"]
    assert not same_cpp_program(SCATTER, SCATTER.replace("torch::optional<int64_t>", "int64_t"))


def test_type_outside_a_dispatch_macro_is_still_compared():
    # ``x.type()`` elsewhere (a string, a comparison) is not the scalar type: left as written
    before = TINY_FA.replace("auto qk =", 'TORCH_CHECK(q.type() == k.type(), "x");\n  auto qk =')
    after = before.replace("q.type() == k.type()", "q.scalar_type() == k.scalar_type()")
    assert not same_cpp_program(before, after)
    changed = HQQ.replace("W_r.type()", "Wq_packed.scalar_type()")
    assert not same_cpp_program(HQQ, changed)
    assert _changes("hqq/kernels/hqq_aten_cuda_kernel.cu", HQQ, changed) == [
        "launch dequantize_8bit_u8_kernel"
    ]


# An unread kernel parameter removed, shortened from src/ffpa_attn/triton/_ffpa_bwd.py of
# xlite-dev/ffpa-attn b8da57e79fdd (in tests/data/real_prs; licence in its case.toml):
# num_k_blocks, never read by _ffpa_bwd_decode_dq_reduce_kernel, leaves its signature and launch.
# (pytorch/ao 4ae435e427a9, BSD-3-Clause, in tests/data/real_prs, is the other way round: a
# parameter only the autotune key names is added to two kernels and their launches.)
FFPA = "src/ffpa_attn/triton/_ffpa_bwd.py"
FFPA_BEFORE = """\
import triton
import triton.language as tl


@triton.jit
def _ffpa_bwd_decode_dq_reduce_kernel(
  PartialDQ, WrittenKBlocks, DQ, stride_pqk, nheads, seqlen_q, num_k_blocks, headdim,
  BLOCK_K: tl.constexpr, BLOCK_M: tl.constexpr,
):
  off_hb = tl.program_id(2)
  offs_k = tl.arange(0, BLOCK_K)
  offs_m = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
  written_k_blocks = tl.load(WrittenKBlocks + off_hb)
  acc = tl.zeros([BLOCK_M], dtype=tl.float32)
  for start_k in range(0, written_k_blocks, BLOCK_K):
    k_blocks = start_k + offs_k
    acc += tl.sum(tl.load(PartialDQ + k_blocks[:, None] * stride_pqk + offs_m[None, :]), axis=0)
  tl.store(DQ + offs_m, acc, mask=offs_m < seqlen_q)


def _ffpa_attn_backward_triton_impl(partial_dq, written_k_blocks, dq, nheads, seqlen_q, num_k_blocks, headdim):
  _ffpa_bwd_decode_dq_reduce_kernel[(1, triton.cdiv(seqlen_q, 64), nheads)](
    partial_dq,
    written_k_blocks,
    dq,
    partial_dq.stride(2),
    nheads,
    seqlen_q,
    num_k_blocks,
    headdim,
    BLOCK_K=64,
    BLOCK_M=64,
  )
"""
FFPA_AFTER = FFPA_BEFORE.replace(
    " seqlen_q, num_k_blocks, headdim,", " seqlen_q, headdim,"
).replace("    num_k_blocks,\n", "")


def test_an_unread_parameter_removed_with_its_argument_is_no_change():
    assert _changes(FFPA, FFPA_BEFORE, FFPA_AFTER) == []


def test_a_read_parameter_removed_or_an_argument_kept_is_a_change():
    read = FFPA_BEFORE.replace("mask=offs_m < seqlen_q", "mask=offs_m < seqlen_q * num_k_blocks")
    after = FFPA_AFTER.replace("mask=offs_m < seqlen_q", "mask=offs_m < seqlen_q * num_k_blocks")
    assert _changes(FFPA, read, after) != []
    # the signature loses the parameter, the launch still passes the argument: shifted values
    kept = FFPA_BEFORE.replace(" seqlen_q, num_k_blocks, headdim,", " seqlen_q, headdim,")
    assert _changes(FFPA, FFPA_BEFORE, kept) != []
