"""Matrix multiplication in Triton: ``c = a @ b`` for fp16, bf16 (and fp32 as tf32) inputs.

The kernel is the one from the Triton tutorial (03-matrix-multiplication): each program computes a
BLOCK_SIZE_M x BLOCK_SIZE_N tile of ``c``, walking K in BLOCK_SIZE_K steps with an fp32
accumulator; ``tl.dot`` lowers to the matrix instructions (wgmma on Hopper, MFMA on CDNA). Programs
are ordered in groups of GROUP_SIZE_M rows of tiles so that neighbouring programs reuse the same
columns of ``b`` from L2. Ragged M, N and K are handled with masks, and the wrapper tells the
kernel the largest power of two dividing K, N and the row strides (``DIVISOR``), so that shapes
such as 1000x1000 still get 16-byte loads.

Tiles, warps and pipelining depth are autotuned per (M, N, K): the list at the decorator is for
NVIDIA; AMD gets its own list (``AMD_CONFIGS``), because ``num_warps`` counts 32-wide warps on
NVIDIA and 64-wide wavefronts on AMD, and a config tuned on one is not tuned on the other.

Run ``python -m toyops.matmul`` for a correctness check on ragged shapes.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        # Hopper, large problems: 128x256 and 256x128 tiles keep two warpgroups of wgmma busy;
        # 3 stages of 64-wide K slices (144 KiB) fit in shared memory next to the epilogue.
        triton.Config(
            {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8},
            num_stages=3,
            num_warps=8,
        ),
        triton.Config(
            {"BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8},
            num_stages=3,
            num_warps=8,
        ),
        # 128x128 tiles: twice the programs of the above for mid-sized problems, and a
        # 128-wide K slice that halves the loop's trips (3 stages: 192 KiB).
        triton.Config(
            {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8},
            num_stages=3,
            num_warps=8,
        ),
        triton.Config(
            {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8},
            num_stages=4,
            num_warps=8,
        ),
        triton.Config(
            {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8},
            num_stages=4,
            num_warps=4,
        ),
        # Skinny and small problems: one warpgroup per 64-row wgmma, and enough tiles to
        # cover the 132 SMs (1000x1000 makes 128 tiles of 128x64 or 64x128, 256 of 64x64).
        triton.Config(
            {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8},
            num_stages=4,
            num_warps=4,
        ),
        triton.Config(
            {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8},
            num_stages=4,
            num_warps=4,
        ),
        triton.Config(
            {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8},
            num_stages=3,
            num_warps=4,
        ),
        triton.Config(
            {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8},
            num_stages=4,
            num_warps=4,
        ),
        triton.Config(
            {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8},
            num_stages=3,
            num_warps=4,
        ),
    ],
    key=["M", "N", "K"],
)
@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    # Strides: how many elements to step to move one row / one column of each matrix.
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr,
    # A power of two (at most 16) that divides K, N and the row strides; see _divisor().
    DIVISOR: tl.constexpr = 1,
):  # fmt: skip
    # Triton only knows that an integer argument is a multiple of 16 when it is one. Rounding
    # down to a multiple of DIVISOR changes nothing (the wrapper checked that DIVISOR divides
    # these values) and shows the compiler the divisor: with K = N = 1000 (multiples of 8) it
    # turns 2-byte loads without pipelining into 16-byte asynchronous copies to shared memory.
    K = K // DIVISOR * DIVISOR
    N = N // DIVISOR * DIVISOR
    stride_am = stride_am // DIVISOR * DIVISOR
    stride_bk = stride_bk // DIVISOR * DIVISOR
    stride_cm = stride_cm // DIVISOR * DIVISOR

    # Map the program id to the tile of c it computes, in grouped order: GROUP_SIZE_M rows of
    # tiles are walked column by column, so the programs running together share tiles of b in L2.
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    # Pointers to the first K slice of the a and b tiles. Rows past M and columns past N wrap
    # around (% M, % N): they load valid memory and their results are masked off at the store.
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    # Accumulate in fp32 whatever the input type; the compiler pipelines this loop
    # (num_stages slices in flight) and lowers tl.dot to the matrix instructions.
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        # The last K slice overhangs K unless BLOCK_SIZE_K divides it: pad it with zeros.
        k_remaining = K - k * BLOCK_SIZE_K
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_remaining, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_remaining, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c = accumulator.to(c_ptr.dtype.element_ty)

    # Write the tile back, masking the rows and columns past the edge of c.
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


def _amd_config(m: int, n: int, k: int, group: int, num_warps: int = 8) -> triton.Config:
    # CDNA (MI200/MI300): 16x16 MFMA instructions, 2 stages (the LDS is 64 KiB), and 8
    # wavefronts of 64 lanes for the large tiles.
    return triton.Config(
        {
            "BLOCK_SIZE_M": m,
            "BLOCK_SIZE_N": n,
            "BLOCK_SIZE_K": k,
            "GROUP_SIZE_M": group,
            "matrix_instr_nonkdim": 16,
        },
        num_stages=2,
        num_warps=num_warps,
    )


AMD_CONFIGS = [
    _amd_config(256, 256, 64, 4),
    _amd_config(256, 128, 64, 4),
    _amd_config(128, 128, 64, 4),
    _amd_config(128, 64, 64, 4, num_warps=4),
    _amd_config(64, 64, 64, 4, num_warps=4),
    _amd_config(32, 64, 64, 6, num_warps=4),
]

# The same kernel with the AMD list; the NVIDIA list stays at the decorator above.
matmul_kernel_amd = triton.autotune(configs=AMD_CONFIGS, key=["M", "N", "K"])(matmul_kernel.fn)

# Keys of a Config that are kernel arguments, as opposed to backend options such as
# matrix_instr_nonkdim, which only the AMD compiler understands.
_META_PARAMETERS = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M")

# The last driver asked and its backend. Holding the driver keeps its id from being reused by
# another driver (a compile-only one for another vendor) while it is cached.
_BACKEND: tuple[object, str] | None = None


def active_backend() -> str:
    """``"cuda"`` or ``"hip"``: the backend of the active Triton driver (``"cuda"`` without one)."""
    global _BACKEND
    try:
        driver = triton.runtime.driver.active
    except RuntimeError:  # no GPU driver at all: a CPU-only machine running the interpreter
        return "cuda"
    if _BACKEND is None or _BACKEND[0] is not driver:
        _BACKEND = (driver, driver.get_current_target().backend)
    return _BACKEND[1]


def autotune_configs(backend: str) -> list[triton.Config]:
    """The autotune list used on ``backend`` (``"cuda"`` or ``"hip"``)."""
    return list(AMD_CONFIGS if backend == "hip" else matmul_kernel.configs)


def _divisor(*values: int) -> int:
    """The largest power of two, up to 16, that divides every value (the kernel's DIVISOR)."""
    divisor = 16
    while divisor > 1 and any(v % divisor for v in values):
        divisor //= 2
    return divisor


def _launch_kwargs(config: triton.Config) -> dict:
    if triton.knobs.runtime.interpret:
        # The interpreter runs the kernel as Python: only the kernel's own meta-parameters apply.
        return {k: v for k, v in config.kwargs.items() if k in _META_PARAMETERS}
    return config.all_kwargs()


def matmul(
    a: torch.Tensor, b: torch.Tensor, *, config: triton.Config | None = None
) -> torch.Tensor:
    """``a @ b`` for 2-D ``a`` (M, K) and ``b`` (K, N) of one dtype on one device.

    ``config`` pins one launch configuration instead of autotuning. Under the interpreter
    (``TRITON_INTERPRET=1``) there is nothing to time, so the first config of the active
    backend's list is used.
    """
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(
            f"matmul needs (M, K) @ (K, N) matrices, got {tuple(a.shape)} @ {tuple(b.shape)}"
        )
    if a.dtype != b.dtype or a.device != b.device:
        raise ValueError(
            f"matmul needs one dtype and device, got {a.dtype} on {a.device} and {b.dtype} on {b.device}"
        )
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    if M == 0 or N == 0:
        return c
    if K == 0:
        return c.zero_()
    args = (
        a,
        b,
        c,
        M,
        N,
        K,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
    )

    def grid(meta: dict) -> tuple[int]:
        return (triton.cdiv(M, meta["BLOCK_SIZE_M"]) * triton.cdiv(N, meta["BLOCK_SIZE_N"]),)

    divisor = _divisor(K, N, a.stride(0), b.stride(0), c.stride(0))
    backend = active_backend()
    if config is None and triton.knobs.runtime.interpret:
        config = autotune_configs(backend)[0]
    if config is not None:
        matmul_kernel.fn[grid](*args, **_launch_kwargs(config), DIVISOR=divisor)
    elif backend == "hip":
        matmul_kernel_amd[grid](*args, DIVISOR=divisor)
    else:
        matmul_kernel[grid](*args, DIVISOR=divisor)
    return c


def _check(device: str) -> None:
    """Compare against torch (fp32 math) on ragged shapes."""
    gen = torch.Generator(device=device).manual_seed(0)
    for M, N, K in ((1, 1, 1), (17, 33, 65), (127, 255, 129), (512, 512, 512)):
        for dtype in (torch.float16, torch.bfloat16):
            a = torch.randn(M, K, generator=gen, device=device).to(dtype)
            b = torch.randn(K, N, generator=gen, device=device).to(dtype)
            expected = (a.float() @ b.float()).to(dtype)
            torch.testing.assert_close(matmul(a, b), expected, atol=2e-2 * K**0.5, rtol=2e-2)
    print("matmul: matches torch on (1,1,1), (17,33,65), (127,255,129) and (512,512,512)")


if __name__ == "__main__":
    _check("cuda" if torch.cuda.is_available() else "cpu")
