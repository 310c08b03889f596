"""A ``@triton.jit`` function that its own file neither calls nor launches, imported and called by
a kernel of another file, is that kernel's helper: not a kernel of its own.

The files are shortened excerpts of flashinfer/triton/kernels/quant.py and activation.py in
flashinfer-ai/flashinfer at f72745bacc42 (Apache-2.0; the pull request of tests/data/real_prs that
adds them).
"""

from __future__ import annotations

from bot.analysis.classify import analyze_diff
from bot.analysis.model import Analysis
from tests.diff_util import file_diff

QUANT = "flashinfer/triton/kernels/quant.py"
ACT = "flashinfer/triton/kernels/activation.py"

QUANT_TEXT = '''\
import triton  # type: ignore[import]
import triton.language as tl  # type: ignore[import]


@triton.jit
def scale_and_clamp(x, scale, dtype):
    """Scales a value and clamps it to the range of the target dtype."""
    if dtype == tl.float8e4nv:
        clamp_min = -448.0
        clamp_max = 448.0
    else:
        clamp_min = -65504.0
        clamp_max = 65504.0
    return tl.clamp(x.to(tl.float32) * scale, clamp_min, clamp_max).to(dtype)
'''

ACT_TEXT = """\
import triton  # type: ignore[import]
import triton.language as tl  # type: ignore[import]

from flashinfer.triton.kernels.quant import scale_and_clamp


@triton.jit
def silu_and_mul_kernel(o_ptr, o_scale_ptr, x_ptr, d, BLOCK_SIZE: tl.constexpr):
    i = tl.program_id(axis=0).to(tl.int64)
    offs = tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + i * 2 * d + offs).to(tl.float32)
    y = tl.load(x_ptr + i * 2 * d + d + offs).to(tl.float32)
    result = x * tl.sigmoid(x) * y
    if o_scale_ptr is not None:
        o_scale = tl.load(o_scale_ptr)
        result = scale_and_clamp(result, o_scale, o_ptr.dtype.element_ty)
    tl.store(o_ptr + i * d + offs, result)


def silu_and_mul(x, out, scale=None):
    silu_and_mul_kernel[(x.shape[0],)](out, scale, x, x.shape[-1] // 2, BLOCK_SIZE=1024)
"""


def _analyse(old: dict[str, str], new: dict[str, str]) -> Analysis:
    diff = "".join(file_diff(p, old.get(p), new[p]) for p in new)
    return analyze_diff(diff, old_source=old.get, new_source=new.get)


def test_a_helper_added_in_another_module_is_not_a_new_kernel():
    analysis = _analyse({}, {QUANT: QUANT_TEXT, ACT: ACT_TEXT})
    assert [(c.kind, c.name) for c in analysis.changes] == [("new", "silu_and_mul_kernel")]


def test_a_helper_changed_in_another_module_changes_its_callers_body():
    wider = QUANT_TEXT.replace("-448.0", "-480.0").replace("= 448.0", "= 480.0")
    act = ACT_TEXT.replace("BLOCK_SIZE=1024", "BLOCK_SIZE=1024,")  # both files in the diff
    analysis = _analyse({QUANT: QUANT_TEXT, ACT: ACT_TEXT}, {QUANT: wider, ACT: act})
    [change] = analysis.changes
    assert (change.kind, change.name, change.via_helpers) == (
        "body",
        "silu_and_mul_kernel",
        ["scale_and_clamp"],
    )


def test_a_jit_function_launched_elsewhere_is_still_a_kernel():
    launched = ACT_TEXT + "\n\ndef clamp(x, s):\n    scale_and_clamp[(1,)](x, s, x.dtype)\n"
    analysis = _analyse({}, {QUANT: QUANT_TEXT, ACT: launched})
    assert {c.name for c in analysis.changes} == {"silu_and_mul_kernel", "scale_and_clamp"}
