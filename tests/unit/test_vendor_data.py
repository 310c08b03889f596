"""Vendors are data, and a helper's definition chosen by an architecture test is on the kernel's
launch path (``bot/analysis/reach/branches``).

The enum test is from ktransformers/operators/triton_attention.py in kvcache-ai/ktransformers at
4890f18605bd (Apache-2.0); the helper chosen by capability is shortened from
lmdeploy/pytorch/kernels/pagedattention.py in InternLM/lmdeploy at 77f5f9712335 (Apache-2.0).
Both pull requests are in tests/data/real_prs.
"""

from __future__ import annotations

from bot.analysis.reach.branches import LaunchPath, vendors_named
from bot.analysis.reach.branches import test_kinds as kinds_of


def test_a_vendor_enum_member_is_a_vendor_test_naming_its_vendor():
    test = "device_manager.gpu_vendor == GPUVendor.Iluvatar"
    assert kinds_of(test) == ["vendor"]
    assert vendors_named(test) == ["iluvatar"]
    assert kinds_of("config.vendor_name == 'x'") == []  # no vendor's word


PAGED = """\
import torch
import triton
import triton.language as tl

_NV_CAP = torch.cuda.get_device_capability()
if _NV_CAP[0] >= 8:

    @triton.jit
    def _convert_pv(p, v):
        p = p.to(v.dtype)
        return p, v

else:

    @triton.jit
    def _convert_pv(p, v):
        v = v.to(p.dtype)
        return p, v


@triton.jit
def _fwd_kernel(P, V, Out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p, v = _convert_pv(tl.load(P + offs), tl.load(V + offs))
    tl.store(Out + offs, p * v)


def paged_attention_fwd(p, v, out):
    _fwd_kernel[(1,)](p, v, out, BLOCK=64)
"""


def test_the_test_choosing_a_helper_definition_is_an_arch_branch_of_its_callers():
    module = LaunchPath.parse(PAGED)
    assert module is not None
    found = [(b.kind, b.condition) for b in module.branches("_fwd_kernel", "p.py")]
    assert ("arch", "_NV_CAP[0] >= 8") in found
    unrelated = PAGED.replace("p, v = _convert_pv(", "p, v = (").replace(
        "tl.load(V + offs))", "tl.load(V + offs))"
    )
    module = LaunchPath.parse(unrelated)
    assert module is not None
    assert not [b for b in module.branches("_fwd_kernel", "p.py") if b.kind == "arch"]
