"""A call of ``torch.ops.ns.op`` is followed to the implementations its own module registers
(``@torch.library.impl(lib, "op", "CUDA")``, ``reach/follow._op_impls``), so a new test around
it changes when the kernels they launch run; a kernel whose body changed too has that host
change named (``reach/import_gates._with_gate``).

Shortened from segment_anything_fast/flash_4.py in pytorch-labs/segment-anything-fast at
387488bc4c7a and its parent 92f729690013 (Apache-2.0; that pull request is in
tests/data/real_prs): the kernel's bias is scaled by log2(e), and ``_attention_rel_h_rel_w`` no
longer calls the op for a batch of one.
"""

from __future__ import annotations

from tests.diff_util import analysis_between

PATH = "segment_anything_fast/flash_4.py"

BEFORE = """\
import torch
import triton
import triton.language as tl


@triton.jit
def _fwd_kernel_aligned(Q, B0, Out, BLOCK_M: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    qk = tl.load(Q + offs)
    b0 = tl.load(B0 + offs)
    qk += (b0 + b0)
    tl.store(Out + offs, qk)


def _attention_rel_h_rel_w_kernel_aligned_device(q, rel_h_w, o):
    grid = (triton.cdiv(q.numel(), 64),)
    _fwd_kernel_aligned[grid](q, rel_h_w, o, BLOCK_M=64)


lib = torch.library.Library("customflash", "FRAGMENT")
lib.define("custom_flash_aligned(Tensor q, Tensor rel_h_w) -> Tensor")


@torch.library.impl(lib, "custom_flash_aligned", "CUDA")
def _attention_rel_h_rel_w_kernel_aligned(q, rel_h_w):
    o = torch.empty_like(q, memory_format=torch.contiguous_format)
    _attention_rel_h_rel_w_kernel_aligned_device(q, rel_h_w, o)
    return o


def _attention_rel_h_rel_w(q_, rel_h_w):
    if q_.size(-1) == 64:
        o = torch.ops.customflash.custom_flash_aligned(q_, rel_h_w)
        if o.numel() > 0:
            return o
    return q_ + rel_h_w
"""

BODY = BEFORE.replace("    qk += (b0 + b0)", "    qk += ((b0 + b0) * 1.44269504)")
AFTER = BODY.replace("    if q_.size(-1) == 64:", "    if q_.size(0) > 1 and q_.size(-1) == 64:")


def _changes(after: str) -> dict[str, tuple[str, list[str]]]:
    found = analysis_between({PATH: BEFORE}, {PATH: after}).changes
    return {c.name: (c.kind, c.host_changes) for c in found}


def test_a_new_test_around_the_op_call_is_the_changed_kernel_s_host_change():
    assert _changes(AFTER) == {
        "_fwd_kernel_aligned": ("body", [f"{PATH}: the host code that launches it changed"])
    }


def test_the_body_change_alone_has_no_host_change():
    assert _changes(BODY) == {"_fwd_kernel_aligned": ("body", [])}
