"""A Triton -> Gluon port of the GPU stand-ins' ``scale`` (``tests/data/gpu_standins/base``):
the same ``y = 2 x + 0.5`` and entry point, in Gluon, its layout written out for the target's
warp size (32 lanes on NVIDIA, 64 on AMD CDNA)."""

from __future__ import annotations

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: gl.constexpr, LANES: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout(
        size_per_thread=[4], threads_per_warp=[LANES], warps_per_cta=[4], order=[0]
    )
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = offs < n
    gl.store(y_ptr + offs, gl.load(x_ptr + offs, mask=mask) * 2.0 + 0.5, mask=mask)


def scale(shape, dtype="float32", *, device="cuda", seed=0):
    (n,) = shape
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(n, generator=gen, device=device)
    lanes = triton.runtime.driver.active.get_current_target().warp_size

    def fn():
        y = torch.empty_like(x)
        scale_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024, LANES=lanes, num_warps=4)
        return y

    return {"fn": fn, "reference": lambda: x * 2.0 + 0.5, "bytes_moved": 8 * n, "flops": 2 * n}
