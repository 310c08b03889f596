"""A kernel whose body changed and whose launch changed with it is reported as a body change
that names the host code launching it among its host changes (``cross_file``), not only in a
note: the launch passes a new constexpr and the wrapper allocates the output in another dtype.

Shortened from lightx2v/common/ops/mm/triton_kernels.py of ModelTC/LightX2V (Apache-2.0) at
9bf26c36f5b1 ("update triton quant kernels"; in tests/data/real_prs).
"""

from __future__ import annotations

from tests.diff_util import analysis_between

PATH = "lightx2v/common/ops/mm/triton_kernels.py"
BEFORE = """\
import torch
import triton.language as tl
from triton import jit, next_power_of_2


@jit
def fp8_quantize_kernel(X, OUT, SCALES, HDIM, BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0)
    x_ptr = X + row_idx * HDIM
    out_ptr = OUT + row_idx * HDIM
    h_offset = tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + h_offset, mask=h_offset < HDIM).to(tl.bfloat16)
    absmax = tl.maximum(tl.max(tl.abs(x)), 1e-8)
    x_scale = absmax / 448.0
    x_scaled = tl.clamp(x / x_scale, -448.0, 448.0)
    tl.store(out_ptr + h_offset, x_scaled, mask=h_offset < HDIM)
    tl.store(SCALES + row_idx, x_scale)


def fp8_quantize_triton(x):
    x_shape_orig = x.shape
    x = x.view(-1, x_shape_orig[-1])
    out_scaled = torch.empty(x_shape_orig, dtype=torch.bfloat16, device=x.device)
    scales = torch.empty(x.shape[0], dtype=torch.bfloat16, device=x.device)
    BLOCK_SIZE = next_power_of_2(x_shape_orig[-1])
    grid = (x.shape[0],)
    fp8_quantize_kernel[grid](x, out_scaled, scales, x_shape_orig[-1], BLOCK_SIZE, num_warps=8)
    return out_scaled.to(torch.float8_e4m3fn), scales
"""
AFTER = (
    BEFORE.replace(
        "BLOCK_SIZE: tl.constexpr):", "BLOCK_SIZE: tl.constexpr, FP8_MAX_VAL: tl.constexpr):"
    )
    .replace(".to(tl.bfloat16)", ".to(tl.float32)")
    .replace("absmax / 448.0", "absmax / FP8_MAX_VAL")
    .replace("-448.0, 448.0", "-FP8_MAX_VAL, FP8_MAX_VAL")
    .replace("x_shape_orig, dtype=torch.bfloat16", "x_shape_orig, dtype=torch.float32")
    .replace("BLOCK_SIZE, num_warps=8)", "BLOCK_SIZE, FP8_MAX_VAL=448.0, num_warps=8)")
)


def test_a_body_change_names_the_launch_that_changed_with_it():
    [change] = analysis_between({PATH: BEFORE}, {PATH: AFTER}).changes
    assert (change.kind, change.name) == ("body", "fp8_quantize_kernel")
    assert change.host_changes == [f"{PATH}: the host code that launches it changed"]


def test_a_body_change_alone_names_no_host_change():
    body_only = BEFORE.replace(".to(tl.bfloat16)", ".to(tl.float32)")
    [change] = analysis_between({PATH: BEFORE}, {PATH: body_only}).changes
    assert (change.kind, change.host_changes) == ("body", [])
