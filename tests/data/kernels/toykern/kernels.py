"""Test kernels: a vector add, a row softmax picked by a heuristic, an autotuned matmul whose
config list depends on the vendor (its AMD list holds a tile that spills), and an fp32 dot in
IEEE precision (no tensor-core instruction can do it on NVIDIA)."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.heuristics(
    {
        "BLOCK": lambda args: triton.next_power_of_2(args["n_cols"]),
        "num_warps": lambda args: 8 if args["n_cols"] >= 2048 else 4,
    }
)
@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * out_stride + cols, num / tl.sum(num, axis=0), mask=mask)


def _on_amd() -> bool:
    try:
        return triton.runtime.driver.active.get_current_target().backend == "hip"
    except Exception:
        return False


if _on_amd():
    MATMUL_CONFIGS = [
        triton.Config({"BM": 128, "BN": 128, "BK": 64}, num_warps=4, num_stages=2),
        # deliberately too large for 4 waves: spills VGPRs on gfx942
        triton.Config({"BM": 256, "BN": 256, "BK": 64}, num_warps=4, num_stages=2),
    ]
else:
    MATMUL_CONFIGS = [
        triton.Config({"BM": 128, "BN": 128, "BK": 64}, num_warps=8, num_stages=3),
        triton.Config({"BM": 64, "BN": 64, "BK": 32}, num_warps=4, num_stages=4),
    ]


@triton.autotune(configs=MATMUL_CONFIGS, key=["M", "N", "K"])
@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
):  # fmt: skip
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        kmask = rk < K - k * BK
        x = tl.load(a, mask=(rm[:, None] < M) & kmask[None, :], other=0.0)
        y = tl.load(b, mask=kmask[:, None] & (rn[None, :] < N), other=0.0)
        acc += tl.dot(x, y)
        a += BK * stride_ak
        b += BK * stride_bk
    c = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def dot_ieee_kernel(a_ptr, b_ptr, c_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(a_ptr + r[:, None] * B + r[None, :])
    y = tl.load(b_ptr + r[:, None] * B + r[None, :])
    z = tl.dot(x, y, input_precision="ieee")
    tl.store(c_ptr + r[:, None] * B + r[None, :], z)


# One list for both vendors, with a register cap: PTX honours maxnreg, AMD's back end drops it.
CAPPED_CONFIGS = [triton.Config({"B": 64}, num_warps=4, maxnreg=64)]


@triton.autotune(configs=CAPPED_CONFIGS, key=["n"])
@triton.jit
def capped_dot_kernel(a_ptr, b_ptr, c_ptr, n, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(a_ptr + r[:, None] * B + r[None, :])
    y = tl.load(b_ptr + r[:, None] * B + r[None, :])
    tl.store(c_ptr + r[:, None] * B + r[None, :], tl.dot(x, y).to(c_ptr.dtype.element_ty))
