"""Triton kernels added beside a CUDA op that stays, one of the two picked by a test: a rewrite
with the old kernel kept, paired by role (forward with forward, backward with backward), the
test's architecture condition raised on the new kernels.

Shortened from two real pull requests (both in tests/data/real_prs):

- hao-ai-lab/FastVideo a37b39d83c11 (Apache-2.0): ``block_sparse_attn`` applies the CUDA
  autograd Function when the ``vsa_cuda`` extension (setup_vsa.py; vsa.cpp's PYBIND11_MODULE
  binds ``block_sparse_fwd``/``_bwd`` through ``torch::wrap_pybind_function``) imported, else the
  new Triton ``attention_sparse`` (``_attention_sparse.apply``); the capability test is
  hao-ai-lab/FastVideo e0ad145152db's dispatcher (``major, minor =
  torch.cuda.get_device_capability(...)``).
- JL-er/RWKV-PEFT 4a6ae20e86ec (Apache-2.0): ``if os.environ["WKV"] == 'fla':`` defines
  ``RUN_CUDA_RWKV6`` to call the vendored Triton ``chunk_rwkv6`` (re-exported by its package's
  ``__init__.py``), ``else:`` the ``load()``-built ``wkv6`` extension through an autograd
  Function, as before.

Below them, microsoft/DeepSpeed 69d1b9f97879 (an op binding's attribute beside a Triton function
under a flag) and, from another repository than those three, pytorch/FBGEMM 99e0a253bdb7 (a new
dispatcher picking the Triton MX4 dequantize or the kept ``torch.ops.fbgemm`` op).
"""

from __future__ import annotations

from bot.analysis.model import KernelChange
from tests.diff_util import analysis_between

SETUP = """\
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

source_files = ['vsa.cpp']
setup(name='vsa', ext_modules=[CUDAExtension('vsa_cuda', sources=source_files)],
      cmdclass={'build_ext': BuildExtension})
"""
BINDING = """\
#include <torch/extension.h>
extern std::vector<torch::Tensor> block_sparse_attention_forward(torch::Tensor q);
extern std::vector<torch::Tensor> block_sparse_attention_backward(torch::Tensor q);
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("block_sparse_fwd", torch::wrap_pybind_function(block_sparse_attention_forward), "fwd");
    m.def("block_sparse_bwd", torch::wrap_pybind_function(block_sparse_attention_backward), "bwd");
}
"""
CU = """\
template<int D> __global__ void fwd_attend_ker(const float* q) { }
template<int D> __global__ void bwd_attend_ker(const float* q) { }

std::vector<torch::Tensor>
block_sparse_attention_forward(torch::Tensor q) {
    fwd_attend_ker<64><<<grid, (128), mem_size, stream>>>(q.data_ptr<float>());
    return {q};
}

std::vector<torch::Tensor>
block_sparse_attention_backward(torch::Tensor q) {
    bwd_attend_ker<64><<<grid, threads, 72000, stream>>>(q.data_ptr<float>());
    return {q};
}
"""
OLD_OP = """\
import torch
try:
    from vsa_cuda import block_sparse_fwd, block_sparse_bwd
except ImportError:
    block_sparse_fwd = None
    block_sparse_bwd = None


class BlockSparseAttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q):
        o, lse = block_sparse_fwd(q)
        return o

    @staticmethod
    def backward(ctx, grad_output):
        return block_sparse_bwd(grad_output)


def block_sparse_attn(q):
    return BlockSparseAttentionFunction.apply(q)
"""
TRITON = """\
import torch
import triton
import triton.language as tl


@triton.jit
def _attn_fwd_sparse(Q, Out, BLOCK: tl.constexpr):
    tl.store(Out + tl.arange(0, BLOCK), tl.load(Q + tl.arange(0, BLOCK)))


@triton.jit
def _attn_bwd(DO, DQ, BLOCK: tl.constexpr):
    tl.store(DQ + tl.arange(0, BLOCK), tl.load(DO + tl.arange(0, BLOCK)))


class _attention_sparse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q):
        o = torch.empty_like(q)
        _attn_fwd_sparse[(1,)](q, o, BLOCK=128)
        return o

    @staticmethod
    def backward(ctx, do):
        dq = torch.empty_like(do)
        _attn_bwd[(1,)](do, dq, BLOCK=128)
        return dq


attention_sparse = _attention_sparse.apply
"""


def _op(test: str, triton_call: str = "block_sparse_attn_triton(q)") -> str:
    return OLD_OP.replace(
        "import torch\n",
        "import torch\nfrom .block_sparse_attn_triton import attention_sparse as "
        "block_sparse_attn_triton\n",
    ).replace(
        "    return BlockSparseAttentionFunction.apply(q)\n",
        "    major, minor = torch.cuda.get_device_capability(q.device)\n"
        f"    if {test}:\n"
        "        return BlockSparseAttentionFunction.apply(q)\n"
        "    else:\n"
        f"        return {triton_call}\n",
    )


def _kept_rewrite(old: dict[str, str], new: dict[str, str], kernel: str, olds: set[str]) -> None:
    """``kernel`` is reported as a rewrite of exactly ``olds``, the old kernels kept."""
    got = {c.name: c for c in analysis_between(old, new).changes}[kernel]
    assert got.kind == "rewrite" and got.old_kernel_kept
    assert {r.name for r in [got.old, *got.old_variants] if r} == olds


BASE = {
    "csrc/attn/setup_vsa.py": SETUP,
    "csrc/attn/vsa.cpp": BINDING,
    "csrc/attn/vsa/block_sparse_h100.cu": CU,
    "csrc/attn/vsa/__init__.py": OLD_OP,
}


def _by_name(new_files: dict[str, str]) -> dict[str, KernelChange]:
    analysis = analysis_between(BASE, {**BASE, **new_files})
    return {c.name: c for c in analysis.changes}


def test_a_triton_path_beside_a_kept_extension_op_is_a_rewrite_paired_by_role() -> None:
    got = _by_name(
        {
            "csrc/attn/vsa/block_sparse_attn_triton.py": TRITON,
            # moved to a new module, where it picks one of the two: no call site switches
            "csrc/attn/vsa/__init__.py": "from .vsa import block_sparse_attn\n",
            "csrc/attn/vsa/vsa.py": _op("major == 9 and block_sparse_fwd is not None"),
        }
    )
    fwd, bwd = got["_attn_fwd_sparse"], got["_attn_bwd"]
    assert (fwd.kind, bwd.kind) == ("rewrite", "rewrite")
    assert {r.name for r in [fwd.old, *fwd.old_variants] if r} == {"fwd_attend_ker"}
    assert {r.name for r in [bwd.old, *bwd.old_variants] if r} == {"bwd_attend_ker"}
    assert fwd.old_kernel_kept and bwd.old_kernel_kept
    # the capability the dispatcher reads through a local name picks the Triton path
    assert [(b.kind, b.condition) for b in fwd.branches if b.kind == "arch"] == [
        ("arch", "not (major == 9 and block_sparse_fwd is not None)")
    ]


def test_a_choice_between_triton_and_torch_pairs_nothing() -> None:
    """The CUDA op is still called, but not from the choice: the Triton kernels' alternative
    is plain torch, so they replace no CUDA kernel and stay new."""
    op = OLD_OP.replace(
        "import torch\n",
        "import torch\nfrom .block_sparse_attn_triton import attention_sparse\n",
    ) + (
        "\n\ndef sparse_attn(q):\n"
        "    if q.is_cuda:\n"
        "        return attention_sparse(q)\n"
        "    return torch.softmax(q @ q.T, -1) @ q\n"
    )
    got = _by_name(
        {"csrc/attn/vsa/block_sparse_attn_triton.py": TRITON, "csrc/attn/vsa/__init__.py": op}
    )
    assert (got["_attn_fwd_sparse"].kind, got["_attn_bwd"].kind) == ("new", "new")


def test_a_choice_beside_a_pytorch_op_pairs_nothing() -> None:
    """PyTorch's own op (``torch.ops.aten``) is no kernel of the repository: a Triton path
    beside it replaces nothing (xlite-dev/ffpa-attn's backward picks between the two)."""
    op = _op("major == 9", "torch.ops.aten._efficient_attention_backward(q, q, q)").replace(
        "return BlockSparseAttentionFunction.apply(q)", "return block_sparse_attn_triton(q)"
    )
    got = _by_name(
        {
            "csrc/attn/vsa/block_sparse_attn_triton.py": TRITON,
            "csrc/attn/vsa/__init__.py": "from .vsa import block_sparse_attn\n",
            "csrc/attn/vsa/vsa.py": op,
        }
    )
    assert (got["_attn_fwd_sparse"].kind, got["_attn_bwd"].kind) == ("new", "new")


OP_CPP = """\
#include <torch/extension.h>
void cuda_forward(int B, float *r, float *y);
void cuda_backward(int B, float *r, float *gy);
void forward(int64_t B, torch::Tensor &r, torch::Tensor &y) {
    cuda_forward(B, r.data_ptr<float>(), y.data_ptr<float>());
}
void backward(int64_t B, torch::Tensor &r, torch::Tensor &gy) {
    cuda_backward(B, r.data_ptr<float>(), gy.data_ptr<float>());
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("forward", &forward, "wkv6 forward");
    m.def("backward", &backward, "wkv6 backward");
}
"""
WKV_CU = """\
__global__ void kernel_forward(const int B, const float *r, float *y) { y[0] = r[0]; }
__global__ void kernel_backward_111(const int B, const float *r, float *gr) { gr[0] = r[0]; }

void cuda_forward(int B, float *r, float *y) {
    kernel_forward<<<dim3(B), dim3(64)>>>(B, r, y);
}
void cuda_backward(int B, float *r, float *gy) {
    kernel_backward_111<<<dim3(B), dim3(64)>>>(B, r, gy);
}
"""
CUDA_PATH = """\
from torch.utils.cpp_extension import load
wkv6_cuda = load(name="wkv6", sources=["cuda/wkv6_op.cpp", f"cuda/wkv6_cuda.cu"])

class WKV_6(torch.autograd.Function):
    @staticmethod
    def forward(ctx, B, r):
        y = torch.empty_like(r)
        wkv6_cuda.forward(B, r, y)
        return y

    @staticmethod
    def backward(ctx, gy):
        gr = torch.empty_like(gy)
        wkv6_cuda.backward(ctx.B, gy, gr)
        return (None, gr)

def RUN_CUDA_RWKV6(B, r):
    return WKV_6.apply(B, r)
"""
# the vendored chunk kernels, in the shape of the Triton file above
CHUNK = (
    TRITON.replace("attention_sparse = _attention_sparse.apply", "chunk_rwkv6 = Chunk.apply")
    .replace("_attention_sparse", "Chunk")
    .replace("_attn_fwd_sparse", "chunk_rwkv6_fwd_kernel_h")
    .replace("_attn_bwd", "chunk_rwkv6_bwd_kernel_dh")
)
# the RWKV-5 path, in the same alternative but under a name the other does not define: its
# kernels, named as RWKV-6's, are no old side of the rewrite
CUDA_PATH_5 = CUDA_PATH.replace("wkv6", "wkv5").replace("WKV_6", "WKV_5").replace("RWKV6", "RWKV5")
RWKV_BASE = {
    "cuda/wkv6_op.cpp": OP_CPP,
    "cuda/wkv6_cuda.cu": WKV_CU,
    "cuda/wkv5_op.cpp": OP_CPP,
    "cuda/wkv5_cuda.cu": WKV_CU,
    "src/model.py": "import os\nimport torch\n" + CUDA_PATH + CUDA_PATH_5,
}


def test_a_module_level_choice_that_defines_one_name_twice_pairs_by_role() -> None:
    both = CUDA_PATH + CUDA_PATH_5
    indented = "".join(f"    {line}" if line else "\n" for line in both.splitlines(True))
    model = (
        "import os\nimport torch\nfrom fla.ops.rwkv6 import chunk_rwkv6\n"
        "if os.environ['WKV'] == 'fla':\n"
        "    def RUN_CUDA_RWKV6(B, r):\n"
        "        return chunk_rwkv6(r)\n"
        "else:\n" + indented
    )
    new = {
        **RWKV_BASE,
        "src/model.py": model,
        "fla/ops/rwkv6/__init__.py": "from .chunk import chunk_rwkv6\n",
        "fla/ops/rwkv6/chunk.py": CHUNK,
    }
    got = {c.name: c for c in analysis_between(RWKV_BASE, new).changes}
    fwd, bwd = got["chunk_rwkv6_fwd_kernel_h"], got["chunk_rwkv6_bwd_kernel_dh"]
    assert (fwd.kind, bwd.kind) == ("rewrite", "rewrite")
    assert {(r.path, r.name) for r in [fwd.old, *fwd.old_variants] if r} == {
        ("cuda/wkv6_cuda.cu", "kernel_forward")
    }
    assert {(r.path, r.name) for r in [bwd.old, *bwd.old_variants] if r} == {
        ("cuda/wkv6_cuda.cu", "kernel_backward_111")
    }
    assert fwd.old_kernel_kept and bwd.old_kernel_kept
    assert not [b for b in fwd.branches if b.kind in ("vendor", "arch")]  # an env flag


# microsoft/DeepSpeed 69d1b9f97879 (Apache-2.0), shortened: the op binding holds the extension an
# op builder loads (in a base class of another file); its ops are bound by a macro, and the
# layer norm is launched by a macro too.
PT_BINDING = """\
template <typename T>
void ds_layer_norm_internal(T* workspace, at::Tensor& input)
{
    launch_fused_ln(workspace, (const T*)input.data_ptr(), input.size(0));
}

template <typename T>
std::vector<at::Tensor> ds_qkv_gemm(at::Tensor& input)
{
    ds_layer_norm_internal<T>((T*)input.data_ptr(), input);
    return {input};
}

template <typename T>
std::vector<at::Tensor> ds_rms_qkv(at::Tensor& input) { return {input}; }

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
#define DEF_OPS(_name, _dtype)                                                                    \\
    m.def("qkv_gemm_" #_name, &ds_qkv_gemm<_dtype>, "DeepSpeed qkv gemm with " #_name " (CUDA)"); \\
    m.def("rms_qkv_gemm_" #_name, &ds_rms_qkv<_dtype>, "DeepSpeed rms qkv gemm (CUDA)")

    DEF_OPS(fp32, float);
    DEF_OPS(fp16, __half);
}
"""
LAYER_NORM_CU = """\
template <typename T, int unRoll>
__global__ void fused_ln(T* output, const T* vals, int elems_per_row) { output[0] = vals[0]; }

#define LAUNCH_FUSED_LN(unRollFactor)                                   \\
    fused_ln<T, unRollFactor><<<grid, block, 0, stream>>>(output, vals, elems_per_row);

template <typename T>
void launch_fused_ln(T* output, const T* vals, int elems_per_row)
{
    LAUNCH_FUSED_LN(1);
}
"""
QKV_OP = """\
import torch
from .base import BaseOp


class QKVGemmOp(BaseOp):

    def __init__(self, config):
        super(QKVGemmOp, self).__init__(config)
        if self.config.norm_type == 'layernorm':
            self.qkv_gemm_func = self.inference_module.qkv_gemm_fp16
        else:
            self.qkv_gemm_func = self.inference_module.rms_qkv_gemm_fp16

    def forward(self, input):
        return self.qkv_gemm_func(input)
"""
TRITON_LN = """\
import torch
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(Out, A, N, BLOCK_SIZE: tl.constexpr):
    cols = tl.arange(0, BLOCK_SIZE)
    tl.store(Out + cols, tl.load(A + cols, mask=cols < N), mask=cols < N)


def qkv_gemm_func(input):
    out = torch.empty_like(input)
    layer_norm_kernel[(1,)](out, input, input.shape[-1], BLOCK_SIZE=1024)
    return out
"""
DS_BASE = {
    "csrc/transformer/inference/csrc/pt_binding.cpp": PT_BINDING,
    "csrc/transformer/inference/csrc/layer_norm.cu": LAYER_NORM_CU,
    "deepspeed/ops/transformer/inference/op_binding/qkv_gemm.py": QKV_OP,
}


def test_an_op_held_by_an_attribute_beside_a_triton_function_under_a_flag() -> None:
    choice = QKV_OP.replace(
        "            self.qkv_gemm_func = self.inference_module.qkv_gemm_fp16\n",
        "            if self.config.use_triton:\n"
        "                from deepspeed.ops.transformer.inference.triton.ops import qkv_gemm_func\n"
        "                self.qkv_gemm_func = qkv_gemm_func\n"
        "            else:\n"
        "                self.qkv_gemm_func = self.inference_module.qkv_gemm_fp16\n",
    )
    new = {
        **DS_BASE,
        "deepspeed/ops/transformer/inference/op_binding/qkv_gemm.py": choice,
        "deepspeed/ops/transformer/inference/triton/ops.py": TRITON_LN,
    }
    # the flag's choice, not the norm type's: the RMS op is of the same extension
    _kept_rewrite(DS_BASE, new, "layer_norm_kernel", {"fused_ln"})


# pytorch/FBGEMM 99e0a253bdb7 (BSD-3-Clause), shortened: a new function of quantize_utils.py
# picks the new Triton MX4 dequantize or the CUDA op ``torch.ops.fbgemm.dequantize_mx_cuda``,
# which stays; the Triton wrapper is re-exported by the package under a try/except.
MX_CU = """\
__global__ void dequantize_mx4_to_float_kernel(const uint8_t* input, float* output) {
  output[threadIdx.x] = input[threadIdx.x];
}

DLL_PUBLIC at::Tensor dequantize_mx_cuda(const at::Tensor& input, const int64_t mx_group_size) {
  auto output = at::empty(input.numel() * 2, input.options().dtype(at::kFloat));
  dequantize_mx4_to_float_kernel<<<gridDim, blockDim, 0, at::cuda::getCurrentCUDAStream()>>>(
      input.data_ptr<uint8_t>(), output.data_ptr<float>());
  return output;
}
"""
UTILS = """\
import torch

TORCH_HALF_MAX: float = torch.finfo(torch.float16).max


def fp32_to_fp16_with_clamp(tensor: torch.Tensor) -> torch.Tensor:
    return torch.clamp(tensor, -TORCH_HALF_MAX, TORCH_HALF_MAX).half()
"""
MX_CHOICE = """\


def mx4_to_fp32(tensor: torch.Tensor, group_size: int = 32, use_triton: bool = False):
    if use_triton:
        return dequantize_mx4(tensor, group_size)
    else:
        out = torch.ops.fbgemm.dequantize_mx_cuda(tensor.view(-1), group_size)
        return out.view(list(tensor.shape[:-1]) + [-1])
"""
MX_TRITON = """\
import torch
import triton
import triton.language as tl


@triton.jit
def _kernel_dequantize_mx4(A, out, M, GROUP_SIZE: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(out + offs, tl.load(A + offs, mask=offs < M).to(tl.float32), mask=offs < M)


def triton_dequantize_mx4(a: torch.Tensor, group_size: int = 32) -> torch.Tensor:
    out = torch.empty(a.numel() * 2, device=a.device, dtype=torch.float32)
    _kernel_dequantize_mx4[(triton.cdiv(a.numel(), 1024),)](a, out, a.numel(), group_size, 1024)
    return out
"""
MX_PACKAGE = """\
try:
    from .quantize import triton_dequantize_mx4 as dequantize_mx4
except ImportError:
    from .quantize_ref import py_dequantize_mx4 as dequantize_mx4  # noqa: F401
"""


def test_a_new_dispatcher_picks_a_triton_wrapper_or_a_kept_torch_library_op() -> None:
    base = {
        "fbgemm_gpu/src/quantize_ops/quantize_mx.cu": MX_CU,
        "fbgemm_gpu/fbgemm_gpu/quantize_utils.py": UTILS,
    }
    utils = UTILS.replace(
        "import torch\n", "import torch\n\nfrom fbgemm_gpu.triton import dequantize_mx4\n"
    )
    new = {
        **base,
        "fbgemm_gpu/fbgemm_gpu/quantize_utils.py": utils + MX_CHOICE,
        "fbgemm_gpu/fbgemm_gpu/triton/__init__.py": MX_PACKAGE,
        "fbgemm_gpu/fbgemm_gpu/triton/quantize.py": MX_TRITON,
    }
    _kept_rewrite(base, new, "_kernel_dequantize_mx4", {"dequantize_mx4_to_float_kernel"})


# hao-ai-lab/FastVideo e0ad145152db (Apache-2.0), shortened: the ROCm platform class's backend
# picker now imports the sliding-tile dispatcher, whose choice leads AMD to the Triton kernel.
ROCM = """\
class RocmPlatform(Platform):

    @classmethod
    def get_attn_backend_cls(cls, selected_backend):
        if selected_backend == AttentionBackendEnum.FLASH_ATTN:
            return "fastvideo.attention.backends.flash_attn.FlashAttentionBackend"
        raise ValueError(f"Invalid attention backend for {cls.device_name}")
"""
ROCM_ROUTED = ROCM.replace(
    "        raise ValueError",
    "        if selected_backend == AttentionBackendEnum.SLIDING_TILE_ATTN:\n"
    "            from csrc.attn.vsa.vsa import block_sparse_attn  # noqa: F401\n"
    '            return "fastvideo.attention.backends.sliding_tile_attn.Backend"\n'
    "        raise ValueError",
)


def test_a_vendor_class_that_newly_imports_the_dispatcher_is_a_vendor_branch() -> None:
    new = {
        "csrc/attn/vsa/block_sparse_attn_triton.py": TRITON,
        "csrc/attn/vsa/__init__.py": "from .vsa import block_sparse_attn\n",
        "csrc/attn/vsa/vsa.py": _op("major == 9 and block_sparse_fwd is not None"),
    }
    base = {**BASE, "fastvideo/platforms/rocm.py": ROCM}
    routed = "RocmPlatform.get_attn_backend_cls (amd) imports block_sparse_attn"
    for platform, expected in ((ROCM_ROUTED, [routed]), (ROCM, [])):
        got = analysis_between(base, {**base, **new, "fastvideo/platforms/rocm.py": platform})
        fwd = next(c for c in got.changes if c.name == "_attn_fwd_sparse")
        assert [b.condition for b in fwd.branches if b.kind == "vendor"] == expected
