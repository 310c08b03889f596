"""A call through a module-level instance (``fp16_matmul.forward``, or a local bound to it) is
its class's method; a class attribute bound to a kernel of another module (``_2d_kernel =
triton_matmul_kernel._fp_matmul``) is that kernel where it is launched as
``__class__._2d_kernel[grid](...)`` / ``self._2d_kernel[grid](...)``; an object a factory
function builds is of the class the factory returns.

Shortened from microsoft/DeepSpeed (Apache-2.0) at 69d1b9f97879 (in tests/data/real_prs):
deepspeed/ops/transformer/inference/triton/ops.py (fused_gemm_gelu), matmul_ext.py (MatmulExt,
Fp16Matmul, the instance fp16_matmul) and triton_matmul_kernel.py (_fp_matmul).
"""

from __future__ import annotations

from bot.analysis.reach.extensions import ExtensionIndex
from bot.analysis.reach.follow import Side

PKG = "deepspeed/ops/transformer/inference/triton"
OPS = f"{PKG}/ops.py"
EXT = f"{PKG}/matmul_ext.py"
KERNELS = f"{PKG}/triton_matmul_kernel.py"

OPS_TEXT = """\
import deepspeed.ops.transformer.inference.triton.matmul_ext as matmul_ext


def fused_gemm_gelu(input, weight, bias, weight_out):
    intm_out = matmul_ext.matmul(input, weight, bias=bias, activation="gelu", use_triton=True)
    return matmul_ext.matmul(intm_out, weight_out, bias=None, activation="", use_triton=True)
"""

EXT_TEXT = """\
import torch
import triton
import deepspeed.ops.transformer.inference.triton.triton_matmul_kernel as triton_matmul_kernel


class MatmulExt(torch.autograd.Function):
    @staticmethod
    def forward(A, B, bias=None, activation="", use_triton=True):
        matmul = fp16_matmul
        C = matmul.forward(A, B, use_triton=use_triton, bias=bias, activation=activation)
        return C


class TritonMatmul(torch.autograd.Function):
    def __init__(self):
        super().__init__()


class Fp16Matmul(TritonMatmul):
    _2d_kernel = triton_matmul_kernel._fp_matmul

    @staticmethod
    def forward(A, B, use_triton=True, bias=None, activation=""):
        M, K = A.shape
        _, N = B.shape
        C = torch.empty((M, N), device=A.device, dtype=A.dtype)
        grid = lambda META: (triton.cdiv(M, META['BLOCK_M']) * triton.cdiv(N, META['BLOCK_N']), )
        __class__._2d_kernel[grid](A, B, C, M, N, K)
        return C


matmul = MatmulExt.forward
fp16_matmul = Fp16Matmul()
"""

KERNELS_TEXT = """\
import triton
import triton.language as tl


@triton.jit
def _fp_matmul(A, B, C, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    tl.store(C + pid, tl.load(A + pid) * tl.load(B + pid))
"""


def _side(files: dict[str, str]) -> Side:
    return Side(sorted(files), files.get, ExtensionIndex(sorted(files), files.get))


def _reached(ext_text: str = EXT_TEXT) -> set[str]:
    files = {OPS: OPS_TEXT, EXT: ext_text, KERNELS: KERNELS_TEXT}
    found = _side(files).follow(f"{PKG.replace('/', '.')}.ops.fused_gemm_gelu")
    return {k for reach in found.values() for k in reach.kernels}


def test_a_module_level_instance_calls_its_class_method_launching_a_class_attribute() -> None:
    assert _reached() == {"_fp_matmul"}


def test_an_instance_of_a_factory_s_class_is_followed_the_same() -> None:
    factory = EXT_TEXT.replace(
        "fp16_matmul = Fp16Matmul()",
        "def _make_matmul():\n    return Fp16Matmul()\n\n\nfp16_matmul = _make_matmul()",
    )
    assert _reached(factory) == {"_fp_matmul"}


def test_an_instance_rebound_later_says_nothing() -> None:
    # bound twice: which object the name holds when called is not known
    twice = EXT_TEXT + "fp16_matmul = TritonMatmul()\n"
    assert _reached(twice) == set()


def test_an_attribute_the_class_does_not_bind_says_nothing() -> None:
    unbound = EXT_TEXT.replace("    _2d_kernel = triton_matmul_kernel._fp_matmul\n", "")
    assert _reached(unbound) == set()
