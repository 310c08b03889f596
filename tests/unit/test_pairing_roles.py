"""Pairing by role when a new host module calls several new Triton wrappers side by side.

Shortened from predibase/lorax 902a68c425ec (Apache-2.0; in tests/data/real_prs):
server/punica_kernels/punica_kernels/bgmv/bgmv_impl.cuh (the CUDA bgmv_shrink_kernel and
bgmv_expand_kernel, kept) and the new server/lorax_server/utils/ops/bgmv_{shrink,expand,
expand_slice}.py and punica.py, whose add_lora_logits calls the Triton shrink then expand
(layers.py switches to it from the CUDA op's wrapper in sgmv.py). A
Triton wrapper called beside another is not the compiled op kept beside it, whatever its name;
and a new kernel whose operation is a paired one's with a word added is a variant of it.
"""

from __future__ import annotations

from bot.analysis.classify import analyze_diff
from tests.diff_util import file_diff

CUH = "server/punica_kernels/punica_kernels/bgmv/bgmv_impl.cuh"
CUH_TEXT = """\
template <int feat_in, int feat_out, typename T>
__global__ void bgmv_shrink_kernel(T* Y, const T* X, const T* W, const long* indicies) {
  Y[threadIdx.x] += X[threadIdx.x] * W[indicies[blockIdx.x]];
}

template <int feat_in, int feat_out, typename T>
__global__ void bgmv_expand_kernel(T* Y, const T* X, const T* W, const long* indicies) {
  Y[blockIdx.x] += X[threadIdx.x] * W[indicies[threadIdx.x]];
}

template <int feat_in, int feat_out, typename T>
void bgmv_kernel(T* Y, const T* X, const T* W, const long* indicies, int batch_size) {
  if constexpr (feat_in < feat_out) {
    bgmv_shrink_kernel<feat_in, feat_out, T><<<batch_size, 32>>>(Y, X, W, indicies);
  } else {
    bgmv_expand_kernel<feat_in, feat_out, T><<<batch_size, 32>>>(Y, X, W, indicies);
  }
}
"""


def _op(name: str, extra: str = "") -> str:
    return f"""\
import triton
import triton.language as tl


@triton.jit
def _{name}_kernel(input_ptr, lora_ptr, out_ptr, N, BLOCK_N: tl.constexpr{extra}):
    offs = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(out_ptr + offs, tl.load(input_ptr + offs) * tl.load(lora_ptr + offs))


def {name}(inputs, lora, out):
    _{name}_kernel[(triton.cdiv(out.numel(), 64),)](inputs, lora, out, out.numel(), BLOCK_N=64)
"""


OPS = "server/lorax_server/utils/ops"
FILES = {
    f"{OPS}/bgmv_shrink.py": _op("bgmv_shrink"),
    f"{OPS}/bgmv_expand.py": _op("bgmv_expand"),
    f"{OPS}/bgmv_expand_slice.py": _op("bgmv_expand_slice", ", SLICE: tl.constexpr"),
    "server/lorax_server/utils/punica.py": """\
from lorax_server.utils.ops.bgmv_expand import bgmv_expand
from lorax_server.utils.ops.bgmv_expand_slice import bgmv_expand_slice
from lorax_server.utils.ops.bgmv_shrink import bgmv_shrink


class PunicaWrapper:
    def add_lora_logits(self, y, x, wa_t_all, wb_t_all, buffer):
        bgmv_shrink(x, wa_t_all, buffer)
        bgmv_expand(buffer, wb_t_all, y)

    def expand_slice_decode(self, y, x, w_t_all):
        bgmv_expand_slice(x, w_t_all, y)
""",
}


SGMV = "server/lorax_server/utils/sgmv.py"
SGMV_TEXT = """\
import punica_kernels as _kernels


def add_lora_a_bgmv(v, x, wa_T_all, indicies, layer_idx):
    _kernels.dispatch_bgmv(v, x, wa_T_all, indicies, layer_idx, 1.0)
"""
LAYERS = "server/lorax_server/utils/layers.py"
LAYERS_BEFORE = """\
from lorax_server.utils.sgmv import add_lora_a_bgmv


def forward_lora(result, input, lora_a, indices, layer_id):
    add_lora_a_bgmv(result, input, lora_a, indices, layer_id)
"""
LAYERS_AFTER = """\
from lorax_server.utils.punica import PunicaWrapper


def forward_lora(result, input, lora_a, indices, layer_id):
    PunicaWrapper().add_lora_logits(result, input, lora_a, lora_a, result)
"""


def _rewrites() -> dict[str, list[str]]:
    diff = file_diff(LAYERS, LAYERS_BEFORE, LAYERS_AFTER)
    diff += "".join(file_diff(path, None, text) for path, text in FILES.items())
    old = {CUH: CUH_TEXT, SGMV: SGMV_TEXT, LAYERS: LAYERS_BEFORE}
    new = {**FILES, SGMV: SGMV_TEXT, LAYERS: LAYERS_AFTER}
    analysis = analyze_diff(
        diff, old_source=old.get, new_source=new.get, old_files=sorted(old), thrifty=False
    )
    return {
        c.name: sorted(r.name for r in [c.old, *c.old_variants] if r is not None)
        for c in analysis.changes
        if c.kind == "rewrite"
    }


def test_wrappers_called_side_by_side_do_not_pair_crosswise():
    found = _rewrites()
    assert found["_bgmv_shrink_kernel"] == ["bgmv_shrink_kernel"]
    assert found["_bgmv_expand_kernel"] == ["bgmv_expand_kernel"]


def test_a_variant_of_a_paired_kernel_replaces_the_same_kernel():
    assert _rewrites()["_bgmv_expand_slice_kernel"] == ["bgmv_expand_kernel"]
