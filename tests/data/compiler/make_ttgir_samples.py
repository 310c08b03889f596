"""Write the Triton GPU IR samples of this folder: a row softmax (the Triton tutorial's kernel,
BLOCK_SIZE=1024, fp16, 4 warps) and a 128x128x64 fp16 tile dot (8 warps, 3 stages), each
cross-compiled for sm_90 and gfx942 with no GPU. Triton 3.6.0.

    python tests/data/compiler/make_ttgir_samples.py
"""

from __future__ import annotations

from pathlib import Path

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

HERE = Path(__file__).parent


@triton.jit
def softmax_kernel(
    out_ptr,
    in_ptr,
    in_row_stride,
    out_row_stride,
    n_rows,
    n_cols,
    BLOCK_SIZE: tl.constexpr,
    NUM_STAGES: tl.constexpr,
):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=NUM_STAGES):
        col_offsets = tl.arange(0, BLOCK_SIZE)
        mask = col_offsets < n_cols
        row = tl.load(
            in_ptr + row_idx * in_row_stride + col_offsets, mask=mask, other=-float("inf")
        )
        row = row.to(tl.float32)
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        out = numerator * (1.0 / denominator)
        out_ptrs = out_ptr + row_idx * out_row_stride + col_offsets
        tl.store(out_ptrs, out.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def mm(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(a + rm[:, None] * K + rk[None, :] + k)
        y = tl.load(b + rk[:, None] * N + rn[None, :] + k * N)
        acc += tl.dot(x, y)
    tl.store(c + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


def main() -> None:
    targets = {"sm_90": GPUTarget("cuda", 90, 32), "gfx942": GPUTarget("hip", "gfx942", 64)}
    softmax = ASTSource(
        softmax_kernel,
        {"out_ptr": "*fp16", "in_ptr": "*fp16", "in_row_stride": "i32", "out_row_stride": "i32"}
        | {"n_rows": "i32", "n_cols": "i32", "BLOCK_SIZE": "constexpr", "NUM_STAGES": "constexpr"},
        {"BLOCK_SIZE": 1024, "NUM_STAGES": 1},
    )
    dot = ASTSource(
        mm,
        {"a": "*fp16", "b": "*fp16", "c": "*fp16", "M": "i32", "N": "i32", "K": "i32"}
        | {"BM": "constexpr", "BN": "constexpr", "BK": "constexpr"},
        {"BM": 128, "BN": 128, "BK": 64},
    )
    for name, target in targets.items():
        k = triton.compile(softmax, target=target, options={"num_warps": 4})
        (HERE / f"softmax_{name}.ttgir").write_text(k.asm["ttgir"])
        k = triton.compile(dot, target=target, options={"num_warps": 8, "num_stages": 3})
        (HERE / f"dot_{name}.ttgir").write_text(k.asm["ttgir"])


if __name__ == "__main__":
    main()
