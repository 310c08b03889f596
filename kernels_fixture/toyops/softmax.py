"""Fused row-wise softmax in Triton: ``y[i, :] = exp(x[i, :] - max(x[i, :])) / sum(...)``.

The kernel is the one from the Triton tutorial (02-fused-softmax): one row per loop iteration held
entirely in registers, so each element is read from DRAM once and written once, and a persistent
grid sized from the kernel's occupancy loops over the rows. fp16 and bf16 rows are computed in
fp32 and rounded on the store.

The hand-written kernel (csrc/softmax.cu on NVIDIA, csrc/softmax.hip on AMD) is still in the tree
and still selectable: ``TOYOPS_SOFTMAX_IMPL=cuda``. It is our rollback for one release, in case the
Triton kernel regresses on a shape or a driver we have not measured; delete it, this flag and
``_cext.call("softmax", ...)`` in the release after.

Run ``python -m toyops.softmax`` for a correctness check on a 1823x781 matrix.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

from . import _cext

# Read once at import: "triton" (default) or "cuda" (the hand-written kernel, HIP on AMD).
IMPL = os.environ.get("TOYOPS_SOFTMAX_IMPL", "triton").strip().lower() or "triton"
if IMPL not in ("triton", "cuda"):
    raise ValueError(f"TOYOPS_SOFTMAX_IMPL must be 'triton' or 'cuda', not {IMPL!r}")

# Above this the row no longer fits in registers and spills; nothing we serve is that wide.
MAX_COLS = 65536


@triton.jit
def softmax_kernel(
    out_ptr,
    in_ptr,
    in_row_stride,  # elements between the starts of two input rows
    out_row_stride,
    n_rows,
    n_cols,
    BLOCK_SIZE: tl.constexpr,  # next power of two >= n_cols: a whole row per iteration
    NUM_STAGES: tl.constexpr,  # software-pipelining depth of the row loop
):
    # Persistent grid: program p handles rows p, p + P, p + 2P, ... where P is the grid size,
    # so a grid that exactly fills the GPU needs no second wave however many rows there are.
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=NUM_STAGES):
        col_offsets = tl.arange(0, BLOCK_SIZE)
        # BLOCK_SIZE is a power of two and n_cols usually is not: lanes past the end of the row
        # read -inf, which changes neither the max nor (as exp(-inf) = 0) the sum.
        mask = col_offsets < n_cols
        row = tl.load(
            in_ptr + row_idx * in_row_stride + col_offsets, mask=mask, other=-float("inf")
        )
        row = row.to(tl.float32)
        # Subtract the max for numerical stability: exp never overflows.
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        out = numerator / denominator
        out_ptrs = out_ptr + row_idx * out_row_stride + col_offsets
        tl.store(out_ptrs, out.to(out_ptr.dtype.element_ty), mask=mask)


def _num_warps(block_size: int) -> int:
    # Wider rows get more warps so that each thread holds a bounded slice of the row.
    if block_size >= 4096:
        return 16
    if block_size >= 2048:
        return 8
    return 4


def _num_stages(max_shared_mem: int) -> int:
    # Deeper pipelining of the row loop where shared memory allows it (Hopper: 228 KiB).
    return 4 if max_shared_mem > 200_000 else 2


def _num_stages_off_gpu() -> int:
    """The pipelining depth for the active driver's GPU, when the tensors are not on one.

    That is a compile-only driver building for another machine (give it what that GPU gets) or
    the interpreter (where it does not matter).
    """
    try:
        props = triton.runtime.driver.active.utils.get_device_properties(0)
        return _num_stages(int(props["max_shared_mem"]))
    except Exception:  # no driver, or one without device properties
        return 2


# (device index, dtype, BLOCK_SIZE, num_warps) -> (num_stages, programs that fill the GPU once)
_LAUNCH_CACHE: dict[tuple[int, torch.dtype, int, int], tuple[int, int]] = {}


def _persistent_launch(
    y: torch.Tensor, x: torch.Tensor, block_size: int, num_warps: int
) -> tuple[int, int]:
    """Pipelining depth and grid size from this GPU's limits and the compiled kernel's usage.

    Compiles the kernel ahead of the launch (``warmup``) to read its registers and shared memory,
    as the tutorial does. Called at the first launch for a row width, never at import.
    """
    index = x.device.index if x.device.index is not None else torch.cuda.current_device()
    key = (index, x.dtype, block_size, num_warps)
    cached = _LAUNCH_CACHE.get(key)
    if cached is not None:
        return cached
    driver = triton.runtime.driver.active
    props = driver.utils.get_device_properties(index)
    num_sm = props["multiprocessor_count"]
    num_regs = props["max_num_regs"]
    size_smem = props["max_shared_mem"]
    warp_size = props["warpSize"]
    num_stages = _num_stages(size_smem)
    kernel = softmax_kernel.warmup(
        y,
        x,
        x.stride(0),
        y.stride(0),
        x.shape[0],
        x.shape[1],
        BLOCK_SIZE=block_size,
        NUM_STAGES=num_stages,
        num_warps=num_warps,
        grid=(1,),
    )
    kernel._init_handles()
    n_regs = max(int(kernel.n_regs), 1)
    smem_per_program = int(kernel.metadata.shared)
    target = driver.get_current_target()
    if target.backend == "hip":
        # AMD: registers are counted per wavefront; CDNA has twice the VGPRs of RDNA.
        num_gprs = (
            num_regs * 2 if str(target.arch).startswith(("gfx90", "gfx94", "gfx95")) else num_regs
        )
        max_waves = props.get("max_threads_per_sm", 2048) // warp_size
        occupancy = min(num_gprs // warp_size // n_regs, max_waves) // num_warps
    else:
        occupancy = num_regs // (n_regs * warp_size * num_warps)
    if smem_per_program > 0:
        occupancy = min(occupancy, size_smem // smem_per_program)
    result = (num_stages, num_sm * max(occupancy, 1))
    _LAUNCH_CACHE[key] = result
    return result


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension of a 2-D tensor."""
    if IMPL == "cuda":
        # Rollback for one release: the hand-written kernel this Triton kernel replaces.
        return _cext.call("softmax", x)
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D tensor, got shape {tuple(x.shape)}")
    n_rows, n_cols = x.shape
    if n_cols > MAX_COLS:
        raise ValueError(f"softmax rows are limited to {MAX_COLS} columns, got {n_cols}")
    if x.numel() >= 2**31:
        raise ValueError(f"softmax handles fewer than 2**31 elements, got {x.numel()}")
    if x.stride(1) != 1:
        x = x.contiguous()
    y = torch.empty((n_rows, n_cols), device=x.device, dtype=x.dtype)
    if n_rows == 0 or n_cols == 0:
        return y
    block_size = triton.next_power_of_2(n_cols)
    num_warps = _num_warps(block_size)
    if x.is_cuda and not triton.knobs.runtime.interpret:
        num_stages, programs = _persistent_launch(y, x, block_size, num_warps)
        programs = min(programs, n_rows)
    else:
        # No GPU to size a persistent grid for (the interpreter, or a compile-only driver
        # building for another machine): one program per row.
        num_stages, programs = _num_stages_off_gpu(), n_rows
    softmax_kernel[(programs,)](
        y,
        x,
        x.stride(0),
        y.stride(0),
        n_rows,
        n_cols,
        BLOCK_SIZE=block_size,
        NUM_STAGES=num_stages,
        num_warps=num_warps,
    )
    return y


def _check(device: str) -> None:
    """Compare against torch on the tutorial's irregular 1823x781 matrix."""
    gen = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(1823, 781, generator=gen, device=device)
    torch.testing.assert_close(softmax(x), torch.softmax(x, dim=1), atol=1e-6, rtol=1e-4)
    print(f"softmax ({IMPL}): matches torch on 1823x781")


if __name__ == "__main__":
    _check("cuda" if torch.cuda.is_available() else "cpu")
