"""A choice between a Triton path and an extension op pairs each new kernel with the part of the
op it takes over, at the place the choice is made: not every Triton kernel the path reaches with
every CUDA kernel the op runs.

Shortened from microsoft/DeepSpeed 69d1b9f97879 (Apache-2.0), ``DeepSpeed-Triton for
Inference``. ``TritonSelfAttention.forward`` picks ``compute_attention`` (Triton: a batched
matmul, ``matmul_4d_kernel``, a softmax, ``softmax_kernel`` or ``masked_softmax_kernel``, and the
batched matmul again) or ``ds_compute_attention``, which calls ``self.score_context_func``: a
``SoftmaxContextOp`` the constructor made, whose own constructor holds the extension's
``softmax_context_fp16``. That op's host code runs its two GEMMs through cuBLAS and its softmax
through ``attn_softmax_v2``, the one kernel of the repository it launches. So the softmax kernels
port ``attn_softmax_v2`` and the matmul kernel ports no kernel of the repository: it is new. The
op binding's other choice (``QKVGemmOp``: ``qkv_gemm_func`` with a layer norm kernel and the
GEMM kernel ``_fp_matmul``, or ``qkv_gemm_fp16``, whose layer norm is ``fused_ln``) has no new
kernel named like ``fused_ln``: nothing says which new kernel took it, so both do (N:M).
"""

from __future__ import annotations

from bot.analysis.model import KernelChange
from tests.diff_util import range_between

PT_BINDING = """\
template <typename T>
void ds_softmax_internal(T* attn_scores, at::Tensor& attn_mask, unsigned bsz, unsigned heads)
{
    launch_attn_softmax_v2((T*)attn_scores,
                           (attn_mask.sizes().size() > 1 ? (T*)attn_mask.data_ptr() : nullptr),
                           bsz,
                           heads,
                           InferenceContext::Instance().GetCurrentStream());
}

template <typename T>
void attention_unfused(T* prev_key_cont, T* query_cont, at::Tensor& attn_mask, T* prev_value_cont,
                       T* output, unsigned bsz, unsigned heads)
{
    T* workspace = (T*)InferenceContext::Instance().GetAttentionUnfusedWorkspace();
    cublas_strided_batched_gemm(InferenceContext::Instance().GetCublasHandle(),
                                soft_len, seq_len, k, &alpha, &gemm_beta,
                                (T*)prev_key_cont, (T*)query_cont, workspace,
                                CUBLAS_OP_T, CUBLAS_OP_N, bsz * heads);
    ds_softmax_internal<T>(workspace, attn_mask, bsz, heads);
    cublas_strided_batched_gemm(InferenceContext::Instance().GetCublasHandle(),
                                k, seq_len, soft_len, &alpha, &gemm_beta,
                                (T*)prev_value_cont, workspace, (T*)output,
                                CUBLAS_OP_N, CUBLAS_OP_N, bsz * heads);
}

template <typename T>
std::vector<at::Tensor> ds_softmax_context(at::Tensor& query_key_value, at::Tensor& attn_mask,
                                           int heads, unsigned layer_id)
{
    attention_unfused<T>(workspace + offset, (T*)query_cont, attn_mask,
                         workspace + offset + value_offset, temp_buf, bsz, heads);
    return {output, prev_key, prev_value};
}

template <typename T>
std::vector<at::Tensor> ds_qkv_gemm(at::Tensor& input)
{
    launch_fused_ln((T*)input.data_ptr(), (const T*)input.data_ptr(), input.size(0));
    return {input};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
#define DEF_OPS(_name, _dtype)                                                                    \\
    m.def("softmax_context_" #_name,                                                              \\
          &ds_softmax_context<_dtype>,                                                            \\
          "DeepSpeed attention with " #_name " (CUDA)");                                          \\
    m.def("qkv_gemm_" #_name, &ds_qkv_gemm<_dtype>, "DeepSpeed qkv gemm with " #_name " (CUDA)")

    DEF_OPS(fp32, float);
    DEF_OPS(fp16, __half);
}
"""
SOFTMAX_CU = """\
template <typename T, int iterations>
__global__ void attn_softmax_v2(T* vals, T* mask, int heads, int sequence_length)
{
    __shared__ float partialSum[MAX_WARP_NUM];
    vals[threadIdx.x] = vals[threadIdx.x] / partialSum[0];
}

#define LAUNCH_ATTN_SOFTMAX_V2(iterations)                          \\
    attn_softmax_v2<T, iterations><<<grid, block, 0, stream>>>(vals, mask, heads, sequence_length);

template <typename T>
void launch_attn_softmax_v2(T* vals, T* mask, int batch_size, int heads, cudaStream_t stream)
{
    LAUNCH_ATTN_SOFTMAX_V2(2);
}
"""
LAYER_NORM_CU = """\
template <typename T, int unRoll>
__global__ void fused_ln(T* output, const T* vals, int elems_per_row) { output[0] = vals[0]; }

template <typename T>
void launch_fused_ln(T* output, const T* vals, int elems_per_row)
{
    fused_ln<T, 1><<<grid, block, 0, stream>>>(output, vals, elems_per_row);
}
"""
BASE_OP = """\
import torch
from deepspeed.ops.op_builder import InferenceBuilder


class BaseOp(torch.nn.Module):
    inference_module = None

    def __init__(self, config):
        super(BaseOp, self).__init__()
        self.config = config
        if BaseOp.inference_module is None:
            builder = InferenceBuilder()
            BaseOp.inference_module = builder.load()
"""
SOFTMAX_CONTEXT_OP = """\
import torch
from .base import BaseOp


class SoftmaxContextOp(BaseOp):

    def __init__(self, config):
        super(SoftmaxContextOp, self).__init__(config)
        try:
            if self.config.dtype in [torch.float16, torch.int8]:
                self.softmax_context_func = self.inference_module.softmax_context_fp16
            elif self.config.dtype == torch.bfloat16:
                self.softmax_context_func = self.inference_module.softmax_context_bf16
            else:
                self.softmax_context_func = self.inference_module.softmax_context_fp32
        except AttributeError:
            self.softmax_context_func = self.softmax_context_fallback

    def softmax_context_fallback(self, query_key_value, attn_mask, heads, layer_id):
        raise NotImplementedError

    def forward(self, query_key_value, attn_mask, heads, layer_id):
        output = self.softmax_context_func(query_key_value, attn_mask, heads, layer_id)
        return output
"""
OP_BINDING_INIT = """\
from .softmax_context import SoftmaxContextOp
from .qkv_gemm import QKVGemmOp
"""
QKV_OP = """\
import torch
from .base import BaseOp


class QKVGemmOp(BaseOp):

    def __init__(self, config):
        super(QKVGemmOp, self).__init__(config)
        self.qkv_gemm_func = self.inference_module.qkv_gemm_fp16

    def forward(self, input):
        return self.qkv_gemm_func(input)
"""
QKV_OP_TRITON = QKV_OP.replace(
    "        self.qkv_gemm_func = self.inference_module.qkv_gemm_fp16\n",
    "        if self.config.use_triton and self.config.dtype == torch.float16:\n"
    "            from deepspeed.ops.transformer.inference.triton.ops import qkv_gemm_func as "
    "_triton_qkv_gemm_func\n"
    "            self.qkv_gemm_func = _triton_qkv_gemm_func\n"
    "        else:\n"
    "            self.qkv_gemm_func = self.inference_module.qkv_gemm_fp16  # type: ignore\n",
)
TRITON_INIT = """\
from .softmax import softmax
from .matmul_ext import score_4d_matmul, context_4d_matmul
"""
TRITON_SOFTMAX = """\
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(output_ptr, input_ptr, stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    row = tl.load(input_ptr + row_idx * stride + col_offsets, mask=col_offsets < n_cols,
                  other=-float('inf')).to(tl.float32)
    numerator = tl.exp(row - tl.max(row, axis=0))
    softmax_output = numerator / tl.sum(numerator, axis=0)
    tl.store(output_ptr + row_idx * stride + col_offsets, softmax_output, mask=col_offsets < n_cols)


@triton.jit
def masked_softmax_kernel(output_ptr, input_ptr, stride, mask_ptr, mask_stride, n_cols,
                          BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    row = tl.load(input_ptr + row_idx * stride + col_offsets, mask=col_offsets < n_cols,
                  other=-float('inf')).to(tl.float32)
    mask = tl.load(mask_ptr + col_offsets + row_idx * mask_stride, mask=col_offsets < n_cols,
                   other=0).to(tl.float32)
    numerator = tl.exp(row - tl.max(row, axis=0) + mask)
    softmax_output = numerator / tl.sum(numerator, axis=0)
    tl.store(output_ptr + row_idx * stride + col_offsets, softmax_output, mask=col_offsets < n_cols)


def softmax(input: torch.Tensor, mask: torch.Tensor = None, dim=-1) -> torch.Tensor:
    use_mask = False if mask is None else True
    input_arg = input.view(-1, input.shape[-1])
    n_rows, n_cols = input_arg.shape
    BLOCK_SIZE = max(triton.next_power_of_2(n_cols), 2)
    output = torch.empty_like(input)
    if use_mask:
        mask_stride = mask.shape[-1] if mask.shape[-2] > 1 else 0
        masked_softmax_kernel[(n_rows, )](output, input, input_arg.stride(0), mask, mask_stride,
                                          n_cols, BLOCK_SIZE=BLOCK_SIZE)
    else:
        softmax_kernel[(n_rows, )](output, input, input_arg.stride(0), n_cols,
                                   BLOCK_SIZE=BLOCK_SIZE)
    return output
"""
TRITON_MATMUL_KERNEL = """\
import triton
import triton.language as tl


@triton.jit
def _fp_matmul(A, B, C, M, N, K, bias, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
               stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
               SPLIT_K: tl.constexpr, ACC_TYPE: tl.constexpr, BIAS_ADD: tl.constexpr):
    # matrix multiplication
    pid = tl.program_id(0)
    pid_z = tl.program_id(1)
    rm = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_z * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = pid_z * BLOCK_K + tl.arange(0, BLOCK_K)
    A = A + (rm[:, None] * stride_am + rk[None, :] * stride_ak)
    B = B + (rk[:, None] * stride_bk + rn[None, :] * stride_bn)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_TYPE)
    for k in range(K, 0, -BLOCK_K * SPLIT_K):
        a = tl.load(A, mask=rk[None, :] < k, other=0.)
        b = tl.load(B, mask=rk[:, None] < k, other=0.)
        acc += tl.dot(a, b)
        A += BLOCK_K * SPLIT_K * stride_ak
        B += BLOCK_K * SPLIT_K * stride_bk
    # bias addition
    if BIAS_ADD:
        acc = acc + tl.load(bias + rn, mask=rn < N)[None, :]
    C = C + (rm[:, None] * stride_cm + rn[None, :] * stride_cn)
    tl.store(C, acc, mask=(rm < M)[:, None] & (rn < N)[None, :])


@triton.jit
def matmul_4d_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_SIZE_M: tl.constexpr,
                     BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs_am = (pid * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    a = tl.load(a_ptr + offs_am[:, None] * K + offs_k[None, :])
    b = tl.load(b_ptr + offs_k[:, None] * N + offs_bn[None, :])
    accumulator += tl.dot(a, b)
    tl.store(c_ptr + offs_am[:, None] * N + offs_bn[None, :], accumulator)
"""
MATMUL_EXT = """\
import torch
import triton
import deepspeed.ops.transformer.inference.triton.triton_matmul_kernel as triton_matmul_kernel


class Fp16Matmul:
    _2d_kernel = triton_matmul_kernel._fp_matmul
    _4d_kernel = triton_matmul_kernel.matmul_4d_kernel

    @staticmethod
    def _matmul(a, b):
        c = torch.empty((a.shape[0], b.shape[1]), device=a.device, dtype=a.dtype)
        grid = lambda META: (triton.cdiv(a.shape[0], META["BLOCK_M"]), )
        __class__._2d_kernel[grid](a, b, c, a.shape[0], b.shape[1], a.shape[1])
        return c

    @staticmethod
    def _score_4d_matmul(input, head_size, input_mask, scale=-1.0):
        output = torch.empty((B, H, M, N), device=q.device, dtype=q.dtype)
        grid = lambda META: (triton.cdiv(M, META["BLOCK_SIZE_M"]), H, B)
        __class__._4d_kernel[grid](q, k, output, M, N, K)
        return output

    @staticmethod
    def _context_4d_matmul(prob, input, head_size):
        output = torch.empty((B, M, H, K), device=v.device, dtype=v.dtype)
        grid = lambda META: (triton.cdiv(M, META["BLOCK_SIZE_M"]), H, B)
        __class__._4d_kernel[grid](prob, v, output, M, N, K)
        return output.view(batches, -1, d_model)


fp16_matmul = Fp16Matmul()
matmul = fp16_matmul._matmul
score_4d_matmul = fp16_matmul._score_4d_matmul
context_4d_matmul = fp16_matmul._context_4d_matmul
"""
TRITON_OPS = """\
import deepspeed.ops.transformer.inference.triton.matmul_ext as matmul_ext
from deepspeed.ops.transformer.inference.triton.layer_norm import layer_norm


def qkv_gemm_func(input, weight, q_scale, bias, gamma, beta, epsilon, add_bias, q_int8):
    qkv_input = layer_norm(input, gamma, beta, epsilon)
    qkv_out = matmul_ext.matmul(qkv_input, weight)
    return qkv_out, qkv_input
"""
TRITON_LAYER_NORM = """\
import torch
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(Out, A, Weight, Bias, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    a = tl.load(A + row * stride + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(a, axis=0) / N
    tl.store(Out + row * stride + cols, a - mean, mask=cols < N)


def layer_norm(a, weight, bias, eps):
    out = torch.empty_like(a)
    layer_norm_kernel[(a.shape[0], )](out, a, weight, bias, a.stride(0), a.shape[-1], eps,
                                      BLOCK_SIZE=1024)
    return out
"""
ATTENTION = """\
import math
import torch
import torch.nn as nn
from deepspeed.ops.transformer.inference.op_binding import SoftmaxContextOp, QKVGemmOp
from deepspeed.ops.transformer.inference.triton import (
    softmax,
    score_4d_matmul,
    context_4d_matmul,
)

minus_inf = -10000.0


class TritonSelfAttention(nn.Module):
    num_layers = 0

    def __init__(self, config, mp_group=None, q_scales=None, q_groups=1, merge_count=1):
        super(TritonSelfAttention, self).__init__()
        self.config = config
        self.qkv_func = QKVGemmOp(config)
        self.score_context_func = SoftmaxContextOp(config)
        self.head_size = config.hidden_size // config.heads
        self.scale = 1 / math.sqrt(self.head_size)
        self.triangular_masking = self.config.triangular_masking

    def ds_compute_attention(self, qkv_out, input_mask, layer_past, alibi):
        if isinstance(qkv_out, list):
            qkv_out = qkv_out[0]
        attn_key_value = self.score_context_func(
            query_key_value=qkv_out,
            attn_mask=((1 - input_mask).to(qkv_out.dtype) *
                       minus_inf) if input_mask.dtype == torch.int64 else input_mask,
            heads=self.num_attention_heads_per_partition,
            layer_id=self.config.layer_id)
        context_layer, key_layer, value_layer = attn_key_value
        return context_layer, key_layer, value_layer

    def forward(self, input, input_mask, layer_past=None, norm_w=None, norm_b=None, alibi=None,
                use_triton_attention=True):
        qkv_out = self.qkv_func(input=input, weight=self.attn_qkvw, bias=self.attn_qkvb,
                                gamma=norm_w, beta=norm_b)
        qkv = qkv_out[0]
        if use_triton_attention and (alibi is None):
            context_layer = compute_attention(qkv=qkv,
                                              input_mask=input_mask,
                                              scale=self.scale,
                                              layer_past=layer_past,
                                              alibi=alibi,
                                              head_size=self.head_size,
                                              triangular=self.triangular_masking)
            key_layer, value_layer = qkv[:, :, self.hidden_size:2 * self.hidden_size], qkv[:, :, 2 * self.hidden_size:]
        else:
            context_layer, key_layer, value_layer = self.ds_compute_attention(qkv_out=qkv_out,
                                                                              input_mask=input_mask,
                                                                              layer_past=layer_past,
                                                                              alibi=alibi)
        return (context_layer, key_layer, value_layer)


def compute_attention(qkv, input_mask, layer_past, alibi, scale, head_size, triangular=False):
    if isinstance(qkv, list):
        qkv = qkv[0]
    output = score_4d_matmul(qkv, head_size, triangular, scale)
    if triangular:
        output = softmax(output)
    else:
        output = softmax(output, input_mask)
    output = context_4d_matmul(output, qkv, head_size)
    return output
"""
CSRC = "csrc/transformer/inference/csrc"
OPS = "deepspeed/ops/transformer/inference"
BASE = {
    f"{CSRC}/pt_binding.cpp": PT_BINDING,
    f"{CSRC}/softmax.cu": SOFTMAX_CU,
    f"{CSRC}/layer_norm.cu": LAYER_NORM_CU,
    f"{OPS}/op_binding/__init__.py": OP_BINDING_INIT,
    f"{OPS}/op_binding/base.py": BASE_OP,
    f"{OPS}/op_binding/softmax_context.py": SOFTMAX_CONTEXT_OP,
    f"{OPS}/op_binding/qkv_gemm.py": QKV_OP,
}
HEAD = {
    **BASE,
    f"{OPS}/op_binding/qkv_gemm.py": QKV_OP_TRITON,
    f"{OPS}/triton/__init__.py": TRITON_INIT,
    f"{OPS}/triton/softmax.py": TRITON_SOFTMAX,
    f"{OPS}/triton/triton_matmul_kernel.py": TRITON_MATMUL_KERNEL,
    f"{OPS}/triton/matmul_ext.py": MATMUL_EXT,
    f"{OPS}/triton/ops.py": TRITON_OPS,
    f"{OPS}/triton/layer_norm.py": TRITON_LAYER_NORM,
    f"{OPS}/triton/attention.py": ATTENTION,
}


def _changes(head: dict[str, str]) -> dict[str, KernelChange]:
    return {c.name: c for c in range_between(BASE, head).changes}


def _olds(c: KernelChange) -> set[str]:
    return {r.name for r in [c.old, *c.old_variants] if r is not None}


def test_each_kernel_of_the_triton_path_pairs_with_the_part_of_the_op_it_takes() -> None:
    got = _changes(HEAD)
    for name in ("softmax_kernel", "masked_softmax_kernel"):
        assert (got[name].kind, _olds(got[name]), got[name].old_kernel_kept) == (
            "rewrite",
            {"attn_softmax_v2"},
            True,
        ), name
    # the op's GEMMs were cuBLAS calls, not kernels of the repository
    assert (got["matmul_4d_kernel"].kind, _olds(got["matmul_4d_kernel"])) == ("new", set())


def test_an_op_held_by_an_instance_attribute_is_followed_from_another_method() -> None:
    """``self.score_context_func(...)`` in ``ds_compute_attention`` runs what the constructor
    bound it to: without the op it reaches, the softmax kernels would stand beside nothing."""
    got = _changes(HEAD)
    assert got["softmax_kernel"].kind == "rewrite"
    evidence = " ".join(got["softmax_kernel"].evidence)
    assert "softmax_context" in evidence and "TritonSelfAttention.forward" in evidence


def test_no_new_kernel_named_like_the_old_one_leaves_the_role_to_all() -> None:
    """``QKVGemmOp``'s choice: neither ``layer_norm_kernel`` nor the GEMM ``_fp_matmul`` is
    named like ``fused_ln``, so the product is not set apart: both take the op's role."""
    got = _changes(HEAD)
    for name in ("layer_norm_kernel", "_fp_matmul"):
        assert got[name].kind == "rewrite" and "fused_ln" in _olds(got[name]), name


def test_a_kernel_beside_a_named_one_that_does_no_product_keeps_the_role() -> None:
    """Only a matrix product is set apart: the same path whose second kernel is not a GEMM
    (its ``tl.dot`` gone) leaves that kernel paired with the op's softmax."""
    no_product = TRITON_MATMUL_KERNEL.replace(
        "    accumulator += tl.dot(a, b)\n", "    accumulator += tl.sum(a, axis=1)[:, None] * b\n"
    )
    got = _changes({**HEAD, f"{OPS}/triton/triton_matmul_kernel.py": no_product})
    assert (got["matmul_4d_kernel"].kind, _olds(got["matmul_4d_kernel"])) == (
        "rewrite",
        {"attn_softmax_v2"},
    )
    assert _olds(got["softmax_kernel"]) == {"attn_softmax_v2"}


def _noise(path: str, line: str, count: int = 30) -> tuple[dict[str, str], dict[str, str]]:
    """A file of the diff at ``path`` whose ``count`` touched lines are each ``line``."""
    before = "import torch\n\n\ndef step(use_triton, x):\n    pass\n"
    after = before + "".join(line.format(i=i) for i in range(count))
    return {path: before}, {path: after}


def _softmax_pairs(extra_base: dict[str, str], extra_head: dict[str, str]) -> bool:
    changes = {
        c.name: c for c in range_between({**BASE, **extra_base}, {**HEAD, **extra_head}).changes
    }
    return _olds(changes["softmax_kernel"]) == {"attn_softmax_v2"}


def test_the_tests_choices_do_not_use_up_the_choices_followed() -> None:
    """A test comparing the Triton path with the op (DeepSpeed's own tests do, at base) is
    followed after the program's choices: thirty of them leave the attention's choice its turn."""
    base, head = _noise(
        "tests/unit/ops/transformer/inference/test_softmax.py",
        "    if use_triton:\n        y{i} = triton_softmax(x)\n    else:\n        y{i} = ref(x)\n",
    )
    assert _softmax_pairs(base, head)


def test_a_choice_with_one_alternative_is_not_followed() -> None:
    """``if layer_id == 1: log_dist(...)`` has nothing to stand beside: thirty of them in a file
    at base do not use up the choices followed before the attention's."""
    base, head = _noise(
        "deepspeed/inference/engine.py", "    if x.dim() == {i}:\n        print(x.shape)\n"
    )
    assert _softmax_pairs(base, head)


def test_the_diffs_own_files_do_not_use_up_the_files_followed() -> None:
    """Thirty touched files of the diff read before the attention's choice: the Triton modules
    it reaches, files of the diff too, are still read."""
    base: dict[str, str] = {}
    head: dict[str, str] = {}
    for i in range(30):
        b, h = _noise(f"deepspeed/module_inject/containers/model_{i}.py", "    y = {i}\n", 1)
        base.update(b)
        head.update(h)
    assert _softmax_pairs(base, head)


# hpcaitech/FastFold 3b046699218c (Apache-2.0), "Triton kernel (#78)", shortened: the layer norm
# and the softmax each get a Triton path beside their CUDA extension (kept in cuda_native/), one
# of the two picked by ``_triton_available`` in the new FusedLayerNorm.forward and
# FusedSoftmaxFunc.forward/backward. The extensions are built by a helper of setup.py and imported
# with importlib.import_module; the ops of both are bound as ``forward`` / ``backward`` too.
FF = "fastfold/model/fastnn/kernel"
FF_SETUP = """\
import os
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

ext_modules = []


def cuda_ext_helper(name, sources, extra_cuda_flags):
    return CUDAExtension(
        name=name,
        sources=[
            os.path.join('fastfold/model/fastnn/kernel/cuda_native/csrc', path) for path in sources
        ],
        extra_compile_args={'cxx': ['-O3'], 'nvcc': ['-O3', '--use_fast_math'] + extra_cuda_flags})


ext_modules.append(
    cuda_ext_helper('fastfold_layer_norm_cuda',
                    ['layer_norm_cuda.cpp', 'layer_norm_cuda_kernel.cu'],
                    extra_cuda_flags + cc_flag))

ext_modules.append(
    cuda_ext_helper('fastfold_softmax_cuda', ['softmax_cuda.cpp', 'softmax_cuda_kernel.cu'],
                    extra_cuda_flags + cc_flag))

setup(name='fastfold', ext_modules=ext_modules, cmdclass={'build_ext': BuildExtension})
"""
FF_LN_BINDING = """\
#include <torch/extension.h>

void cuda_layer_norm(at::Tensor* output, at::Tensor* mean, at::Tensor* invvar, at::Tensor* input,
                     int n1, int n2, at::IntArrayRef normalized_shape, at::Tensor* gamma,
                     at::Tensor* beta, double epsilon);

std::vector<at::Tensor> layer_norm_affine(at::Tensor input, at::IntArrayRef normalized_shape,
                                          at::Tensor gamma, at::Tensor beta, double epsilon) {
    at::Tensor output = at::empty_like(input, gamma.options().dtype(gamma.scalar_type()));
    cuda_layer_norm(&output, &mean, &invvar, &input, n1, n2, normalized_shape, &gamma, &beta,
                    epsilon);
    return {output, mean, invvar};
}

void cuda_layer_norm_gradient(at::Tensor* dout, at::Tensor* mean, at::Tensor* invvar,
                              at::Tensor* input, int n1, int n2, at::IntArrayRef normalized_shape,
                              at::Tensor* gamma, at::Tensor* beta, double epsilon,
                              at::Tensor* grad_input, at::Tensor* grad_gamma,
                              at::Tensor* grad_beta);

std::vector<at::Tensor> layer_norm_gradient_affine(at::Tensor dout, at::Tensor mean,
                                                   at::Tensor invvar, at::Tensor input,
                                                   at::IntArrayRef normalized_shape,
                                                   at::Tensor gamma, at::Tensor beta,
                                                   double epsilon) {
    at::Tensor grad_input = at::empty_like(input);
    cuda_layer_norm_gradient(&dout, &mean, &invvar, &input, n1, n2, normalized_shape, &gamma, &beta,
                             epsilon, &grad_input, &grad_gamma, &grad_beta);
    return {grad_input, grad_gamma, grad_beta};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("forward_affine", &layer_norm_affine, "LayerNorm forward (CUDA)");
    m.def("backward_affine", &layer_norm_gradient_affine, "LayerNorm backward (CUDA)");
}
"""
FF_LN_CU = """\
template <typename T>
__global__ void fastfold_layernorm(T* input, T* output, T* gamma, T* beta, float* mean,
                                   float* invvar, int rows, int cols, double epsilon) {
    int threadidx_x = threadIdx.x / 32;
    output[threadidx_x] = input[threadidx_x];
}

void cuda_layer_norm(at::Tensor* output, at::Tensor* mean, at::Tensor* invvar, at::Tensor* input,
                     int rows, int cols, at::IntArrayRef normalized_shape, at::Tensor* gamma,
                     at::Tensor* beta, double epsilon) {
    int grid = (rows + 3) / 4;
    dim3 block(128);
    fastfold_layernorm<float><<<grid, block>>>(
        (float*)input->data_ptr(), (float*)output->data_ptr(), (float*)gamma->data_ptr(),
        (float*)beta->data_ptr(), (float*)mean->data_ptr(), (float*)invvar->data_ptr(), rows, cols,
        epsilon);
}

template <typename T, typename U, typename V>
__global__ void cuComputePartGradGammaBeta(const V* __restrict__ dout, const T* __restrict__ input,
                                           const int n1, const int n2, U* part_grad_gamma,
                                           U* part_grad_beta) {
    part_grad_gamma[threadIdx.x] = dout[threadIdx.x];
}

template <typename U, typename V>
__global__ void cuComputeGradGammaBeta(const U* part_grad_gamma, const U* part_grad_beta,
                                       const int part_size, const int n1, const int n2,
                                       V* grad_gamma, V* grad_beta) {
    grad_gamma[threadIdx.x] = part_grad_gamma[threadIdx.x];
}

template <typename T, typename U, typename V>
__global__ void cuComputeGradInput(const V* __restrict__ dout, const T* __restrict__ input,
                                   const int n1, const int n2, T* grad_input) {
    grad_input[threadIdx.x] = dout[threadIdx.x];
}

template <typename T, typename U, typename V>
void HostLayerNormGradient(const V* dout, const U* mean, const U* invvar, at::Tensor* input,
                           int n1, int n2, T* grad_input, V* grad_gamma, V* grad_beta) {
    auto stream = at::cuda::getCurrentCUDAStream().stream();
    cuComputePartGradGammaBeta<<<blocks2, threads2, nshared2, stream>>>(
        dout, input->DATA_PTR<T>(), n1, n2, part_grad_gamma.DATA_PTR<U>(),
        part_grad_beta.DATA_PTR<U>());
    cuComputeGradGammaBeta<<<blocks3, threads3, nshared3, stream>>>(
        part_grad_gamma.DATA_PTR<U>(), part_grad_beta.DATA_PTR<U>(), part_size, n1, n2,
        grad_gamma, grad_beta);
    cuComputeGradInput<<<blocks1, threads1, nshared, stream>>>(
        dout, input->DATA_PTR<T>(), n1, n2, grad_input);
}

void cuda_layer_norm_gradient(at::Tensor* dout, at::Tensor* mean, at::Tensor* invvar,
                              at::Tensor* input, int n1, int n2, at::IntArrayRef normalized_shape,
                              at::Tensor* gamma, at::Tensor* beta, double epsilon,
                              at::Tensor* grad_input, at::Tensor* grad_gamma,
                              at::Tensor* grad_beta) {
    HostLayerNormGradient(dout->DATA_PTR<float>(), mean->DATA_PTR<float>(),
                          invvar->DATA_PTR<float>(), input, n1, n2,
                          grad_input->DATA_PTR<float>(), grad_gamma->DATA_PTR<float>(),
                          grad_beta->DATA_PTR<float>());
}
"""
FF_SM_BINDING = """\
#include <torch/extension.h>

at::Tensor softmax(at::Tensor input, long long rows, long long cols);
at::Tensor softmax_gradient(at::Tensor d_output, at::Tensor output, long long rows, long long cols);

at::Tensor fused_mask_softmax_forward(at::Tensor input, at::Tensor mask, long long rows,
                                      long long cols);
at::Tensor fused_mask_softmax_backward(at::Tensor d_output, at::Tensor input, at::Tensor mask,
                                       long long rows, long long cols);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("forward", &softmax, "Softmax forward (CUDA)");
    m.def("backward", &softmax_gradient, "Softmax backward (CUDA)");

    m.def("fused_mask_softmax_forward", &fused_mask_softmax_forward, "Softmax forward (CUDA)");
    m.def("fused_mask_softmax_backward", &fused_mask_softmax_backward, "Softmax forward (CUDA)");
}
"""
FF_SM_CU = """\
template <typename T, int cols_per_thread>
__global__ void fastfold_softmax(T *input, T *output, long long rows, long long cols) {
    output[threadIdx.x] = input[threadIdx.x];
}

at::Tensor softmax(at::Tensor input, long long rows, long long cols) {
    at::Tensor output = at::empty_like(input);
    fastfold_softmax<float, 1><<<grid, block>>>((float *)input.data_ptr(),
                                                (float *)output.data_ptr(), rows, cols);
    return output;
}

template <typename T>
__global__ void fastfold_softmax_grad(T *d_output, T *output, T *d_input, long long rows,
                                      long long cols) {
    d_input[threadIdx.x] = d_output[threadIdx.x] * output[threadIdx.x];
}

at::Tensor softmax_gradient(at::Tensor d_output, at::Tensor output, long long rows,
                            long long cols) {
    at::Tensor grad_input = at::empty_like(output);
    fastfold_softmax_grad<float><<<grid, block>>>((float *)d_output.data_ptr(),
                                                  (float *)output.data_ptr(),
                                                  (float *)grad_input.data_ptr(), rows, cols);
    return grad_input;
}

template <typename T, int cols_per_thread>
__global__ void fastfold_softmax_mask(T *input, T *mask, T *output, long long rows, long long cols,
                                      int head) {
    output[threadIdx.x] = input[threadIdx.x] * mask[threadIdx.x];
}

at::Tensor fused_mask_softmax_forward(at::Tensor input, at::Tensor mask, long long rows,
                                      long long cols) {
    fastfold_softmax_mask<float, 1>
        <<<grid, block>>>((float *)input.data_ptr(), (float *)mask.data_ptr(),
                          (float *)input.data_ptr(), rows, cols, head);
    return input;
}

template <typename T>
__global__ void fastfold_softmax_mask_grad(T *d_output, T *output, T *d_input, T *mask,
                                           long long rows, long long cols, int head) {
    d_input[threadIdx.x] = d_output[threadIdx.x] * mask[threadIdx.x];
}

at::Tensor fused_mask_softmax_backward(at::Tensor d_output, at::Tensor output, at::Tensor mask,
                                       long long rows, long long cols) {
    at::Tensor grad_input = at::empty_like(output);
    fastfold_softmax_mask_grad<float><<<grid, block>>>(
        (float *)d_output.data_ptr(), (float *)output.data_ptr(),
        (float *)grad_input.data_ptr(), (float *)mask.data_ptr(), rows, cols, head);
    return grad_input;
}
"""
_FF_LN_FUNCTION = """\
class FusedLayerNormAffineFunction(torch.autograd.Function):

    @staticmethod
    def forward(ctx, input, weight, bias, normalized_shape, eps):
        ctx.normalized_shape = normalized_shape
        ctx.eps = eps
        input_ = input.contiguous()
        output, mean, invvar = fastfold_layer_norm_cuda.forward_affine(
            input_, ctx.normalized_shape, weight, bias, ctx.eps)
        ctx.save_for_backward(input_, weight, bias, mean, invvar)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input_, weight_, bias_, mean, invvar = ctx.saved_tensors
        grad_input, grad_weight, grad_bias \\
            = fastfold_layer_norm_cuda.backward_affine(
                grad_output.contiguous(), mean, invvar,
                input_, ctx.normalized_shape,
                weight_, bias_, ctx.eps)
        return grad_input, grad_weight, grad_bias, None, None
"""
FF_LN_NATIVE_OLD = f"""\
import importlib
import numbers

import torch
from torch.nn.parameter import Parameter

global fastfold_layer_norm_cuda
fastfold_layer_norm_cuda = None


{_FF_LN_FUNCTION}

class MixedFusedLayerNorm(torch.nn.Module):

    def __init__(self, normalized_shape, eps=1e-5):
        super(MixedFusedLayerNorm, self).__init__()
        global fastfold_layer_norm_cuda
        if fastfold_layer_norm_cuda is None:
            fastfold_layer_norm_cuda = importlib.import_module("fastfold_layer_norm_cuda")
        self.normalized_shape = torch.Size(normalized_shape)
        self.eps = eps

    def forward(self, input):
        return FusedLayerNormAffineFunction.apply(input, self.weight, self.bias,
                                                  self.normalized_shape, self.eps)
"""
FF_LN_NATIVE_NEW = f"""\
import importlib

import torch

fastfold_layer_norm_cuda = importlib.import_module("fastfold_layer_norm_cuda")


{_FF_LN_FUNCTION}"""
FF_SM_NATIVE_OLD = """\
import importlib
from functools import reduce
from operator import mul

import torch

fastfold_softmax_cuda = importlib.import_module("fastfold_softmax_cuda")


class SoftmaxAffineFunction(torch.autograd.Function):

    @staticmethod
    def forward(ctx, input):
        input_ = input.contiguous()
        ctx.cols = input_.shape[-1]
        ctx.rows = reduce(mul, input.shape[:-1])
        output = fastfold_softmax_cuda.forward(input_, ctx.rows, ctx.cols)
        ctx.save_for_backward(output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        output = ctx.saved_tensors[0]
        grad_input = fastfold_softmax_cuda.backward(grad_output.contiguous(), output,
                                                    ctx.rows, ctx.cols)
        return grad_input


class FusedMaskSoftmaxFunction(torch.autograd.Function):

    @staticmethod
    def forward(ctx, input, mask):
        output = fastfold_softmax_cuda.fused_mask_softmax_forward(
            input.contiguous(), mask.contiguous(), ctx.rows, ctx.cols)
        ctx.save_for_backward(output, mask)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        output, mask_ = ctx.saved_tensors
        grad_input = fastfold_softmax_cuda.fused_mask_softmax_backward(
            grad_output.contiguous(), output, mask_, ctx.rows, ctx.cols)
        return grad_input.contiguous(), None


softmax = SoftmaxAffineFunction.apply
mask_softmax = FusedMaskSoftmaxFunction.apply
"""
FF_SM_NATIVE_NEW = """\
import importlib

fastfold_softmax_cuda = importlib.import_module("fastfold_softmax_cuda")


def softmax_cuda_kernel_wrapper(input_, mask_, bias_, rows, cols):
    if mask_ is not None:
        output = fastfold_softmax_cuda.fused_mask_softmax_forward(input_, mask_, rows, cols)
    else:
        output = fastfold_softmax_cuda.forward(input_, rows, cols)

    return output


def softmax_grad_cuda_kernel_wrapper(grad_output, output, mask_, rows, cols):
    if mask_ is not None:
        grad_input = fastfold_softmax_cuda.fused_mask_softmax_backward(grad_output, output, mask_, rows, cols)
    else:
        grad_input = fastfold_softmax_cuda.backward(grad_output, output, rows, cols)
    return grad_input
"""


def _ff_guard(imports: str) -> str:
    """FastFold's import of a Triton path, which sets ``_triton_available`` where it fails."""
    return (
        "_triton_available = True\n"
        "if _triton_available:\n"
        "    try:\n"
        f"{imports}\n"
        "    except ImportError:\n"
        '        logging.warning("Triton is not available, fallback to old kernel.")\n'
        "        _triton_available = False\n"
    )


FF_LAYER_NORM = """\
import logging

import torch

{guard}
from .cuda_native.layer_norm import FusedLayerNormAffineFunction


class FusedLayerNorm(torch.nn.Module):

    def __init__(self, normalized_shape, eps=1e-5):
        super(FusedLayerNorm, self).__init__()
        self.normalized_shape = torch.Size(normalized_shape)
        self.eps = eps

    def forward(self, input):
        if _triton_available:
            return LayerNormTritonFunc.apply(input, self.normalized_shape, self.weight, self.bias,
                                             self.eps)
        else:
            return FusedLayerNormAffineFunction.apply(input, self.weight, self.bias,
                                                      self.normalized_shape, self.eps)
""".format(guard=_ff_guard("        from .triton.layer_norm import LayerNormTritonFunc\n"))
FF_SOFTMAX = """\
from functools import reduce
from operator import mul
import logging

import torch

{guard}
from .cuda_native.softmax import softmax_cuda_kernel_wrapper
from .cuda_native.softmax import softmax_grad_cuda_kernel_wrapper


class FusedSoftmaxFunc(torch.autograd.Function):

    @staticmethod
    def forward(ctx, input, mask=None, bias=None):
        input_ = input.contiguous()
        ctx.cols = input_.shape[-1]
        ctx.rows = reduce(mul, input.shape[:-1])
        if _triton_available:
            output = softmax_triton_kernel_wrapper(input_, mask, bias, ctx.rows, ctx.cols)
        else:
            output = softmax_cuda_kernel_wrapper(input_, mask, bias, ctx.rows, ctx.cols)
        ctx.save_for_backward(output, mask)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        grad_output = grad_output.contiguous()
        output, mask_ = ctx.saved_tensors
        if _triton_available:
            grad_input = softmax_grad_triton_kernel_wrapper(grad_output, output, mask_, ctx.rows,
                                                            ctx.cols)
        else:
            grad_input = softmax_grad_cuda_kernel_wrapper(grad_output, output, mask_, ctx.rows,
                                                          ctx.cols)
        return grad_input, None, None


fused_softmax = FusedSoftmaxFunc.apply
""".format(
    guard=_ff_guard(
        "        from .triton.softmax import softmax_triton_kernel_wrapper\n"
        "        from .triton.softmax import softmax_grad_triton_kernel_wrapper\n"
    )
)
FF_TRITON_LN = """\
import torch
import triton
import triton.language as tl


@triton.jit
def _layer_norm_fwd_fused(Out, A, Weight, Bias, Mean, Rstd, stride, N, eps,
                          BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    a = tl.load(A + row * stride + cols, mask=cols < N, other=0.).to(tl.float32)
    mean = tl.sum(a, axis=0) / N
    tl.store(Mean + row, mean)
    tl.store(Out + row * stride + cols, a - mean, mask=cols < N)


@triton.jit
def _layer_norm_bwd_dx_fused(_DA, _DOut, _A, Weight, Mean, Rstd, stride, NumRows, NumCols, eps,
                             BLOCK_SIZE_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE_N)
    dout = tl.load(_DOut + pid * stride + cols, mask=cols < NumCols, other=0).to(tl.float32)
    tl.store(_DA + pid * stride + cols, dout, mask=cols < NumCols)


@triton.jit
def _layer_norm_bwd_dwdb(A, DOut, Mean, Var, DW, DB, M, N, BLOCK_SIZE_M: tl.constexpr,
                         BLOCK_SIZE_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    dw = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    tl.store(DW + cols, tl.sum(dw, axis=0), mask=cols < N)


class LayerNormTritonFunc(torch.autograd.Function):

    @staticmethod
    def forward(ctx, a_raw, normalized_shape, weight, bias, eps):
        a = a_raw.contiguous()
        y = torch.empty_like(a)
        M, N = a.reshape(-1, a.shape[-1]).shape
        mean = torch.empty((M,), dtype=torch.float32, device="cuda")
        rstd = torch.empty((M,), dtype=torch.float32, device="cuda")
        _layer_norm_fwd_fused[(M,)](y, a, weight, bias, mean, rstd, a.stride(0), N, eps,
                                    BLOCK_SIZE=1024)
        ctx.save_for_backward(a, weight, bias, mean, rstd)
        return y

    @staticmethod
    def backward(ctx, dout):
        a, weight, bias, mean, var = ctx.saved_tensors
        M, N = a.reshape(-1, a.shape[-1]).shape
        da = torch.empty_like(dout)
        _layer_norm_bwd_dx_fused[(M,)](da, dout, a, weight, mean, var, a.stride(0), M, N,
                                       ctx.eps, BLOCK_SIZE_N=1024)
        dweight = torch.empty((weight.shape[0],), dtype=weight.dtype, device=weight.device)
        dbias = torch.empty((weight.shape[0],), dtype=weight.dtype, device=weight.device)
        grid = lambda meta: [triton.cdiv(N, meta["BLOCK_SIZE_N"])]
        _layer_norm_bwd_dwdb[grid](a, dout, mean, var, dweight, dbias, M, N,
                                   BLOCK_SIZE_M=32, BLOCK_SIZE_N=128)
        return (da, None, dweight, dbias, None)
"""
FF_TRITON_SM = """\
import torch

import triton
import triton.language as tl


@triton.jit
def _softmax_core(input_ptrs, output_ptrs, mask_ptrs, bias_ptrs, col_offsets, n_cols,
                  use_mask: tl.constexpr, use_bias: tl.constexpr):

    row = tl.load(input_ptrs, mask=col_offsets < n_cols, other=-float('inf')).to(tl.float32)

    if use_bias:
        bias = tl.load(bias_ptrs, mask=col_offsets < n_cols, other=float("-inf")).to(tl.float32)
        row += bias

    if use_mask:
        mask = tl.load(mask_ptrs, mask=col_offsets < n_cols, other=float("-inf")).to(tl.float32)
        row = tl.where(mask == 0, float("-1e20"), row)

    row_minus_max = row - tl.max(row, axis=0)
    numerator = tl.exp(row_minus_max)
    denominator = tl.sum(numerator, axis=0)
    softmax_output = numerator / denominator

    tl.store(output_ptrs, softmax_output, mask=col_offsets < n_cols)


@triton.jit
def softmax_mask_bias_kernel(output_ptr, input_ptr, mask_ptr, bias_ptr, input_row_stride,
                             output_row_stride, n_cols, n_heads, BLOCK_SIZE: tl.constexpr,
                             use_mask: tl.constexpr, use_bias: tl.constexpr):
    row_idx = tl.program_id(0)
    col_offsets = tl.arange(0, BLOCK_SIZE)

    input_row_ptr = input_ptr + row_idx * input_row_stride
    output_row_ptr = output_ptr + row_idx * output_row_stride

    input_ptrs = input_row_ptr + col_offsets
    output_ptrs = output_row_ptr + col_offsets

    mask_ptrs = input_ptrs  # place holder, not use if use_mask == False
    if use_mask:
        mask_row_ptr = mask_ptr + (row_idx // (n_heads * n_cols)) * n_cols
        mask_ptrs = mask_row_ptr + col_offsets

    bias_ptrs = input_ptrs  # place holder, not use if use_bias == False
    if use_bias:
        bias_row_ptr = bias_ptr + (row_idx % (n_heads * n_cols)) * n_cols
        bias_ptrs = bias_row_ptr + col_offsets

    _softmax_core(input_ptrs, output_ptrs, mask_ptrs, bias_ptrs, col_offsets, n_cols, use_mask,
                  use_bias)


@triton.jit
def softmax_mask_grad_kernel(d_output_ptr, output_ptr, d_input_ptr, mask_ptr, d_output_row_stride,
                             output_row_stride, d_input_row_stride, n_cols, n_heads,
                             BLOCK_SIZE: tl.constexpr, is_bf16: tl.constexpr,
                             use_mask: tl.constexpr):
    row_idx = tl.program_id(0)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    output_row = tl.load(output_ptr + row_idx * output_row_stride + col_offsets,
                         mask=col_offsets < n_cols, other=float("-inf"))
    d_output_row = tl.load(d_output_ptr + row_idx * d_output_row_stride + col_offsets,
                           mask=col_offsets < n_cols, other=float("-inf"))
    row_sum = tl.sum(output_row * d_output_row, axis=0)
    tl.store(d_input_ptr + row_idx * d_input_row_stride + col_offsets,
             (d_output_row - row_sum) * output_row, mask=col_offsets < n_cols)


def softmax_triton_kernel_wrapper(x, mask, bias, n_rows, n_cols):
    y = torch.empty_like(x)
    n_heads = x.shape[2]
    num_warps = 1
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    if BLOCK_SIZE >= 1024:
        num_warps = 4
    _dispatch_kernel = softmax_mask_bias_kernel
    _grid = (n_rows,)
    _dispatch_kernel[_grid](y, x, mask, bias, x.stride(-2), y.stride(-2), n_cols, n_heads,
                            num_warps=num_warps, BLOCK_SIZE=BLOCK_SIZE,
                            use_mask=mask is not None, use_bias=bias is not None)
    return y


def softmax_grad_triton_kernel_wrapper(grad_output, output, mask, n_rows, n_cols):
    grad_input = torch.empty_like(grad_output)
    n_heads = output.shape[2]
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    _dispatch_kernel = softmax_mask_grad_kernel
    _grid = (n_rows,)
    _dispatch_kernel[_grid](grad_output, output, grad_input, mask, grad_output.stride(-2),
                            output.stride(-2), grad_output.stride(-2), n_cols, n_heads,
                            BLOCK_SIZE=BLOCK_SIZE, is_bf16=(output.dtype == torch.bfloat16),
                            use_mask=mask is not None)
    return grad_input
"""
FF_BASE = {
    "setup.py": FF_SETUP,
    f"{FF}/cuda_native/csrc/layer_norm_cuda.cpp": FF_LN_BINDING,
    f"{FF}/cuda_native/csrc/layer_norm_cuda_kernel.cu": FF_LN_CU,
    f"{FF}/cuda_native/csrc/softmax_cuda.cpp": FF_SM_BINDING,
    f"{FF}/cuda_native/csrc/softmax_cuda_kernel.cu": FF_SM_CU,
    f"{FF}/cuda_native/layer_norm.py": FF_LN_NATIVE_OLD,
    f"{FF}/cuda_native/softmax.py": FF_SM_NATIVE_OLD,
    f"{FF}/__init__.py": (
        "from .cuda_native.layer_norm import MixedFusedLayerNorm as LayerNorm\n"
        "from .cuda_native.softmax import softmax, mask_softmax\n"
    ),
}
FF_HEAD = {
    **FF_BASE,
    f"{FF}/cuda_native/layer_norm.py": FF_LN_NATIVE_NEW,
    f"{FF}/cuda_native/softmax.py": FF_SM_NATIVE_NEW,
    f"{FF}/__init__.py": (
        "from .layer_norm import FusedLayerNorm as LayerNorm\nfrom .softmax import fused_softmax\n"
    ),
    f"{FF}/layer_norm.py": FF_LAYER_NORM,
    f"{FF}/softmax.py": FF_SOFTMAX,
    f"{FF}/triton/__init__.py": "",
    f"{FF}/triton/layer_norm.py": FF_TRITON_LN,
    f"{FF}/triton/softmax.py": FF_TRITON_SM,
}
FF_LN_GRAD = {"cuComputePartGradGammaBeta", "cuComputeGradGammaBeta", "cuComputeGradInput"}


def test_each_triton_kernel_ports_the_kernels_of_its_own_op_and_role() -> None:
    """Two choices, two extensions, forward and backward: the layer norm's Triton kernels port
    the layer norm's CUDA kernels, the softmax's the softmax's, forward with forward."""
    got = {c.name: c for c in range_between(FF_BASE, FF_HEAD).changes}
    assert {k: (got[k].kind, got[k].old_kernel_kept) for k in got} == {
        k: ("rewrite", True)
        for k in (
            "_layer_norm_fwd_fused",
            "_layer_norm_bwd_dx_fused",
            "_layer_norm_bwd_dwdb",
            "softmax_mask_bias_kernel",
            "softmax_mask_grad_kernel",
        )
    }
    assert _olds(got["_layer_norm_fwd_fused"]) == {"fastfold_layernorm"}
    assert _olds(got["_layer_norm_bwd_dx_fused"]) == FF_LN_GRAD
    assert _olds(got["_layer_norm_bwd_dwdb"]) == FF_LN_GRAD
    assert _olds(got["softmax_mask_bias_kernel"]) <= {"fastfold_softmax", "fastfold_softmax_mask"}
    assert _olds(got["softmax_mask_grad_kernel"]) <= {
        "fastfold_softmax_grad",
        "fastfold_softmax_mask_grad",
    }


def test_a_wrapper_named_forward_is_no_evidence_for_another_extensions_forward() -> None:
    """The layer norm's Triton kernels are launched from LayerNormTritonFunc.forward/backward
    and the softmax extension binds ops named ``forward`` / ``backward``: that alone pairs no
    layer norm kernel with a softmax kernel, whichever file calls them."""
    got = {c.name: c for c in range_between(FF_BASE, FF_HEAD).changes}
    for name in ("_layer_norm_fwd_fused", "_layer_norm_bwd_dx_fused", "_layer_norm_bwd_dwdb"):
        assert not {o for o in _olds(got[name]) if "softmax" in o}, name
