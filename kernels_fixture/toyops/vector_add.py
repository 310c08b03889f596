"""Vector addition in Triton: ``out = x + y`` for two tensors of the same shape and dtype.

The kernel is the one from the Triton tutorial (01-vector-add) with a larger block: each program
moves BLOCK_SIZE elements, which the compiler splits into 16-byte loads and stores per thread when
the pointers and the length allow it. One source serves NVIDIA and AMD.

Run ``python -m toyops.vector_add`` for a correctness check on ragged lengths.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# 4096 elements per program and 8 warps: 16 elements per thread on NVIDIA (four 16-byte vectors
# of float32), enough bytes in flight per SM to saturate HBM at large sizes.
BLOCK_SIZE = 4096
NUM_WARPS = 8


@triton.jit
def vector_add_kernel(
    x_ptr,  # pointer to the first input
    y_ptr,  # pointer to the second input
    out_ptr,  # pointer to the output
    n_elements,  # number of elements in each tensor
    BLOCK_SIZE: tl.constexpr,  # elements handled by one program
):
    # Program `pid` handles elements [pid * BLOCK_SIZE, (pid + 1) * BLOCK_SIZE).
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    # The last block overhangs the end of the tensor unless n_elements is a multiple of
    # BLOCK_SIZE: the mask keeps those lanes from reading or writing out of bounds.
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    # Add in fp32 and round once on the store, as torch does for fp16 and bf16: the result is
    # bit-identical to torch's, and a memory-bound kernel does not notice the conversion.
    out = x.to(tl.float32) + y.to(tl.float32)
    tl.store(out_ptr + offsets, out.to(out_ptr.dtype.element_ty), mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``x + y`` computed by the Triton kernel; both tensors on the same device, same shape."""
    if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device:
        raise ValueError(
            f"vector_add needs two tensors of one shape, dtype and device; got "
            f"{tuple(x.shape)} {x.dtype} on {x.device} and {tuple(y.shape)} {y.dtype} on {y.device}"
        )
    x = x.contiguous()
    y = y.contiguous()
    out = torch.empty_like(x)
    n_elements = out.numel()
    if n_elements == 0:
        return out
    if n_elements >= 2**31:
        raise ValueError(f"vector_add handles fewer than 2**31 elements, got {n_elements}")
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    vector_add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=NUM_WARPS)
    return out


def _check(device: str) -> None:
    """Compare against torch on lengths that do not divide the block size."""
    gen = torch.Generator(device=device).manual_seed(0)
    for n in (1, 17, 98432, BLOCK_SIZE * 3 + 5):
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            x = torch.randn(n, generator=gen, device=device, dtype=dtype)
            y = torch.randn(n, generator=gen, device=device, dtype=dtype)
            # Exact, except that the interpreter rounds fp32 to bf16 by truncation (one ulp).
            tol = 2**-7 if dtype == torch.bfloat16 else 0.0
            torch.testing.assert_close(vector_add(x, y), x + y, atol=tol, rtol=tol)
    print("vector_add: matches torch on lengths 1, 17, 98432 and 3 * BLOCK_SIZE + 5")


if __name__ == "__main__":
    _check("cuda" if torch.cuda.is_available() else "cpu")
