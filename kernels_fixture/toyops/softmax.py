"""Fused row-wise softmax in Triton: ``y[i, :] = exp(x[i, :] - max(x[i, :])) / sum(...)``.

The kernel is the one from the Triton tutorial (02-fused-softmax): one row per loop iteration held
entirely in registers, so each element is read from DRAM once and written once. fp16 and bf16 rows
are computed in fp32 and rounded on the store. How it is launched (``launch_plan``): on NVIDIA one
program per row, which the hardware scheduler balances over the SMs and which loads straight into
registers; on AMD the tutorial's persistent grid, sized from the kernel's occupancy, with a
software-pipelined loop over the rows.

The hand-written kernel (csrc/softmax.cu on NVIDIA, csrc/softmax.hip on AMD) is still in the tree
and still selectable: ``TOYOPS_SOFTMAX_IMPL=cuda``. It is our rollback for one release, in case the
Triton kernel regresses on a shape or a driver we have not measured; delete it, this flag and
``_cext.call("softmax", ...)`` in the release after.

Run ``python -m toyops.softmax`` for a correctness check on a 1823x781 matrix.
"""

from __future__ import annotations

import os
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from . import _cext
from .matmul import active_backend

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
    # Program p handles rows p, p + P, p + 2P, ... where P is the grid size: with one program per
    # row that is one row; with a persistent grid that exactly fills the GPU, no second wave is
    # needed however many rows there are.
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
        # One division per row, then a multiply per element: a full fp32 division is a dozen
        # instructions, and the product is within two roundings of the quotient.
        out = numerator * (1.0 / denominator)
        out_ptrs = out_ptr + row_idx * out_row_stride + col_offsets
        tl.store(out_ptrs, out.to(out_ptr.dtype.element_ty), mask=mask)


# Bytes of the row each lane holds. NVIDIA: measured on an H200 (bench/results/h200/fixture_tune.md):
# 4 warps were best for rows up to 16 KiB (1024 and 4096 fp32 columns, 4096 fp16) and 4 to 16
# were within 1% at 32 KiB; 16 warps on a 1024-column row ran 1.7x slower. AMD: the tutorial's denser packing, not measured.
BYTES_PER_LANE = {"cuda": 128, "hip": 32}


class LaunchPlan(NamedTuple):
    """How a row width is launched: warps per program, pipelining depth, and the grid kind."""

    num_warps: int
    num_stages: int
    persistent: bool  # a grid that fills the GPU once, looping over rows; else one program per row


def _num_warps(block_size: int, element_size: int, backend: str) -> int:
    """Warps so that each of 32 lanes holds about BYTES_PER_LANE[backend] bytes of the row, 4 to 16."""
    lanes = block_size * element_size // BYTES_PER_LANE[backend]
    return min(max(lanes // 32, 4), 16)


def _num_stages(max_shared_mem: int) -> int:
    # Deeper pipelining of the persistent row loop where shared memory allows it (228 KiB on
    # Hopper, 64 KiB on CDNA).
    return 4 if max_shared_mem > 200_000 else 2


def launch_plan(
    block_size: int, element_size: int, backend: str, max_shared_mem: int | None = None
) -> LaunchPlan:
    """The launch for rows of ``block_size`` (padded) elements of ``element_size`` bytes.

    ``backend`` is ``"cuda"`` or ``"hip"``; ``max_shared_mem`` (bytes per SM or CU) sizes the
    persistent loop's pipelining (``None``: unknown, 2 stages).

    NVIDIA: one program per row and no pipelining. The hardware scheduler hands rows to SMs as
    they free up (no tail of programs with one row more than the others), each program loads its
    row straight into registers rather than through shared memory, and there is nothing to size
    on the first call. On an H200 the hand-written one-block-per-row kernel beat the persistent
    grid at every fp32 size we measured (1823x781, 4096x4096, 32768x1024).
    AMD: the tutorial's persistent grid with a pipelined row loop.
    """
    num_warps = _num_warps(block_size, element_size, backend)
    if backend == "hip":
        return LaunchPlan(num_warps, _num_stages(max_shared_mem or 0), True)
    return LaunchPlan(num_warps, 1, False)


def _device_properties(index: int | None = None) -> dict | None:
    """The active Triton driver's properties of a device (of the compile-only driver's target
    when building for another machine); ``None`` without a driver."""
    try:
        driver = triton.runtime.driver.active
        if index is None:
            index = driver.get_current_device()
        return driver.utils.get_device_properties(index)
    except Exception:  # no driver (the interpreter on a CPU), or one without device properties
        return None


# (device index, dtype, BLOCK_SIZE, num_warps, num_stages) -> programs that fill the GPU once
_GRID_CACHE: dict[tuple[int, torch.dtype, int, int, int], int] = {}


def persistent_grid(
    y: torch.Tensor, x: torch.Tensor, block_size: int, num_warps: int, num_stages: int
) -> int:
    """Programs that fill the GPU once: SMs x resident programs per SM, from this GPU's limits and
    the compiled kernel's registers and shared memory.

    Compiles the kernel ahead of the launch (``warmup``) to read its usage, as the tutorial does.
    Called at the first launch for a row width, never at import.
    """
    index = x.device.index if x.device.index is not None else torch.cuda.current_device()
    key = (index, x.dtype, block_size, num_warps, num_stages)
    cached = _GRID_CACHE.get(key)
    if cached is not None:
        return cached
    driver = triton.runtime.driver.active
    props = driver.utils.get_device_properties(index)
    num_sm = props["multiprocessor_count"]
    num_regs = props["max_num_regs"]
    size_smem = props["max_shared_mem"]
    warp_size = props["warpSize"]
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
    programs = num_sm * max(occupancy, 1)
    _GRID_CACHE[key] = programs
    return programs


def launch(
    y: torch.Tensor,
    x: torch.Tensor,
    *,
    programs: int,
    block_size: int,
    num_warps: int,
    num_stages: int,
) -> None:
    """Run the kernel on a grid of ``programs`` (at most one per row): ``y = softmax(x)``."""
    softmax_kernel[(programs,)](
        y,
        x,
        x.stride(0),
        y.stride(0),
        x.shape[0],
        x.shape[1],
        BLOCK_SIZE=block_size,
        NUM_STAGES=num_stages,
        num_warps=num_warps,
    )


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
    on_gpu = x.is_cuda and not triton.knobs.runtime.interpret
    backend = active_backend()
    max_shared_mem = None
    if backend == "hip":
        # Off the GPU (a compile-only driver building for another machine) these are the
        # target's; under the interpreter there are none, and the plan does not matter.
        props = _device_properties(x.device.index if on_gpu else None)
        max_shared_mem = props["max_shared_mem"] if props else None
    plan = launch_plan(block_size, x.element_size(), backend, max_shared_mem)
    programs = n_rows
    if plan.persistent and on_gpu:
        # Off the GPU there is no GPU to size the grid for; the grid does not change the code.
        programs = min(persistent_grid(y, x, block_size, plan.num_warps, plan.num_stages), n_rows)
    launch(
        y,
        x,
        programs=programs,
        block_size=block_size,
        num_warps=plan.num_warps,
        num_stages=plan.num_stages,
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
