"""A class decides where and for which inputs the kernels its instances reach are launched: its
vendor data (``SUPPORTS_DEVICES``) and its constructor's guards. A change to either, in a file
that holds no kernel, is a launch change of those kernels in the file that does.

Shortened from ModelCloud/GPTQModel at the parent of c78abcc88341 (Apache-2.0):
gptqmodel/nn_modules/qlinear/tritonv2.py (TritonV2QuantLinear) and triton_utils/dequant.py; the
guard is the one AutoGPTQ/AutoGPTQ 0891ea4036e4 (MIT) changes in its QuantLinear. Both pull
requests are in tests/data/real_prs.
"""

from __future__ import annotations

from bot.analysis.classify import analyze_diff
from bot.analysis.model import Analysis
from tests.diff_util import file_diff

LINEAR = "gptqmodel/nn_modules/qlinear/tritonv2.py"
DEQUANT = "gptqmodel/nn_modules/triton_utils/dequant.py"

LINEAR_TEXT = """\
import torch
import triton
import triton.language as tl

from ..triton_utils.dequant import QuantLinearFunction


class DEVICE:
    CUDA = "cuda"
    XPU = "xpu"


class TritonV2QuantLinear(torch.nn.Module):
    SUPPORTS_BITS = [2, 4, 8]
    SUPPORTS_DEVICES = [DEVICE.CUDA, DEVICE.XPU]

    def __init__(self, bits, in_features, out_features):
        super().__init__()
        if in_features % 32 != 0 or out_features % 32 != 0:
            raise NotImplementedError("in_feature or out_feature must be divisible by 32.")
        self.bits = bits

    @classmethod
    def validate(cls, **args):
        return triton_xpu_available()

    def forward(self, x):
        fn = QuantLinearFunction if self.training else QuantLinearFunction
        return fn.apply(x, self.qweight, self.scales, self.bits)


def triton_test_add(x, y):
    @triton.jit
    def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_elements
        tl.store(output_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)

    output = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, output, x.numel(), BLOCK_SIZE=1024)
    return output


def triton_xpu_available():
    return triton_test_add(torch.ones(8, device="xpu"), torch.ones(8, device="xpu")) is not None
"""

DEQUANT_TEXT = """\
import torch
import triton
import triton.language as tl


@triton.jit
def dequant_kernel(q_ptr, s_ptr, out_ptr, numels, bits: tl.constexpr, X_BLOCK: tl.constexpr):
    offs = tl.program_id(0) * X_BLOCK + tl.arange(0, X_BLOCK)
    q = tl.load(q_ptr + offs // (32 // bits), mask=offs < numels)
    tl.store(out_ptr + offs, (q & ((1 << bits) - 1)) * tl.load(s_ptr), mask=offs < numels)


def dequant(qweight, scales, bits):
    out = torch.empty(qweight.numel() * (32 // bits), device=qweight.device)
    dequant_kernel[(triton.cdiv(out.numel(), 1024),)](qweight, scales, out, out.numel(), bits, X_BLOCK=1024)
    return out


class QuantLinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, qweight, scales, bits):
        return torch.matmul(x, dequant(qweight, scales, bits))
"""


def _analyse(after: str) -> Analysis:
    diff = file_diff(LINEAR, LINEAR_TEXT, after)
    old = {LINEAR: LINEAR_TEXT, DEQUANT: DEQUANT_TEXT}
    new = {LINEAR: after, DEQUANT: DEQUANT_TEXT}
    return analyze_diff(
        diff, old_source=old.get, new_source=new.get, old_files=sorted(old), thrifty=False
    )


def test_vendor_data_dropping_a_vendor_is_a_launch_change_of_what_instances_launch():
    after = LINEAR_TEXT.replace("[DEVICE.CUDA, DEVICE.XPU]", "[DEVICE.CUDA]")
    [change] = _analyse(after).changes  # not add_kernel: only the classmethod probe reaches it
    assert (change.name, change.kind, change.path) == ("dequant_kernel", "launch", DEQUANT)
    [branch] = change.branches
    assert branch.kind == "vendor" and "intel" in branch.note


def test_a_constructor_guard_that_changed_is_a_launch_change():
    after = LINEAR_TEXT.replace(
        "% 32 != 0 or out_features % 32", "% 256 != 0 or out_features % 256"
    )
    [change] = _analyse(after).changes
    assert (change.name, change.kind, change.branches) == ("dequant_kernel", "launch", [])


def test_data_that_names_no_vendor_and_other_methods_change_nothing():
    after = LINEAR_TEXT.replace("SUPPORTS_BITS = [2, 4, 8]", "SUPPORTS_BITS = [4, 8]")
    after = after.replace("super().__init__()", "super().__init__()\n        self.name = 'q'")
    assert not _analyse(after).changes
