"""Occupancy from a kernel's resource usage, per architecture: warps per SM (NVIDIA) and waves
per SIMD (AMD).

NVIDIA does not print occupancy, so it is computed the way the CUDA occupancy calculator does:
registers are allocated per warp in units of 256, shared memory per block in units of 128 bytes
plus the 1 KB the runtime reserves per block (sm_80 and later), and the number of resident blocks
is the smallest of the register, shared-memory, warp and block limits.

AMD's compiler prints ``Occupancy`` (waves per SIMD) but computes it without the LDS a kernel is
launched with; Triton allocates all of its LDS dynamically, so the number printed for a Triton
kernel ignores LDS entirely. It is recomputed here from VGPRs (unified arch + acc file of 512 per
lane on gfx90a/gfx942/gfx950, allocated in granules of 8), SGPRs (800 per SIMD on gfx9, granules of
16), and LDS per CU, with a workgroup's waves spread over the CU's four SIMDs.

The tables hold each architecture's per-SM/CU limits and one representative device's unit count
(used for the device properties a compile-only run reports).
"""

from __future__ import annotations

from typing import Literal

from bot.contracts.base import Frozen, Vendor
from bot.errors import PolicyError


class NvidiaArch(Frozen):
    sm: int
    device: str
    sm_count: int
    regs_per_sm: int = 65536
    max_regs_per_thread: int = 255
    reg_alloc_unit: int = 256  # registers per warp, allocation granule
    max_warps_per_sm: int
    max_blocks_per_sm: int
    shared_per_sm_bytes: int
    shared_per_block_bytes: int
    reserved_shared_per_block_bytes: int = 1024
    shared_alloc_unit_bytes: int = 128
    warp_size: int = 32


class AmdArch(Frozen):
    gfx: str
    device: str
    cu_count: int
    simds_per_cu: int = 4
    vgprs_per_simd_lane: int = 512
    max_vgprs_per_thread: int = 512
    vgpr_granule: int = 8
    sgprs_per_simd: int = 800
    sgpr_granule: int = 16
    max_waves_per_simd: int = 8
    max_workgroups_per_cu: int = 16
    lds_per_cu_bytes: int = 65536
    wave_size: int = 64


NVIDIA_ARCHS: dict[int, NvidiaArch] = {
    a.sm: a
    for a in (
        NvidiaArch(
            sm=80,
            device="A100",
            sm_count=108,
            max_warps_per_sm=64,
            max_blocks_per_sm=32,
            shared_per_sm_bytes=167936,
            shared_per_block_bytes=166912,
        ),
        NvidiaArch(
            sm=86,
            device="A10",
            sm_count=72,
            max_warps_per_sm=48,
            max_blocks_per_sm=16,
            shared_per_sm_bytes=102400,
            shared_per_block_bytes=101376,
        ),
        NvidiaArch(
            sm=89,
            device="L40S",
            sm_count=142,
            max_warps_per_sm=48,
            max_blocks_per_sm=24,
            shared_per_sm_bytes=102400,
            shared_per_block_bytes=101376,
        ),
        NvidiaArch(
            sm=90,
            device="H100/H200",
            sm_count=132,
            max_warps_per_sm=64,
            max_blocks_per_sm=32,
            shared_per_sm_bytes=233472,
            shared_per_block_bytes=232448,
        ),
        NvidiaArch(
            sm=100,
            device="B200",
            sm_count=148,
            max_warps_per_sm=64,
            max_blocks_per_sm=32,
            shared_per_sm_bytes=233472,
            shared_per_block_bytes=232448,
        ),
        NvidiaArch(
            sm=120,
            device="RTX 5090",
            sm_count=170,
            max_warps_per_sm=48,
            max_blocks_per_sm=32,
            shared_per_sm_bytes=102400,
            shared_per_block_bytes=101376,
        ),
    )
}

AMD_ARCHS: dict[str, AmdArch] = {
    a.gfx: a
    for a in (
        AmdArch(gfx="gfx90a", device="MI250X (one GCD)", cu_count=110),
        AmdArch(gfx="gfx942", device="MI300X", cu_count=304),
        AmdArch(gfx="gfx950", device="MI355X", cu_count=256, lds_per_cu_bytes=163840),
    )
}


class Occupancy(Frozen):
    """How many warps (NVIDIA, per SM) or waves (AMD, per SIMD) of this kernel can be resident."""

    vendor: Vendor
    target: str
    blocks_per_unit: int  # blocks per SM, or workgroups per CU
    warps_per_sm: int | None = None
    waves_per_simd: int | None = None
    fraction: float  # of the architecture's maximum
    limiter: Literal["registers", "sgprs", "shared", "warps", "blocks", "none"]


def sm_number(name: str) -> int | None:
    """``sm_90``, ``sm_90a``, ``sm_100f`` -> 90, 90, 100; None for a name that is not one."""
    text = name.strip().lower()
    digits = text[3:].rstrip("af")
    return int(digits) if text.startswith("sm_") and digits.isdigit() else None


def gfx_name(name: str) -> str | None:
    """``gfx942`` -> "gfx942" (lower case); None for a name that is not one."""
    text = name.strip().lower()
    return text if text.startswith("gfx") and len(text) > 3 else None


def nvidia_arch(sm: int) -> NvidiaArch:
    if sm not in NVIDIA_ARCHS:
        known = ", ".join(f"sm_{k}" for k in NVIDIA_ARCHS)
        raise PolicyError(
            f"no occupancy table for sm_{sm}", hint=f"use one of the known targets: {known}"
        )
    return NVIDIA_ARCHS[sm]


def amd_arch(gfx: str) -> AmdArch:
    if gfx not in AMD_ARCHS:
        known = ", ".join(AMD_ARCHS)
        raise PolicyError(
            f"no occupancy table for {gfx}", hint=f"use one of the known targets: {known}"
        )
    return AMD_ARCHS[gfx]


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def nvidia_occupancy(
    sm: int, *, regs_per_thread: int, shared_bytes: int, warps_per_block: int
) -> Occupancy:
    """Resident warps per SM for a block of ``warps_per_block`` warps."""
    arch = nvidia_arch(sm)
    limits: dict[str, int] = {
        "blocks": arch.max_blocks_per_sm,
        "warps": arch.max_warps_per_sm // warps_per_block,
    }
    if regs_per_thread > 0:
        per_warp = _round_up(regs_per_thread * arch.warp_size, arch.reg_alloc_unit)
        limits["registers"] = (arch.regs_per_sm // per_warp) // warps_per_block
    per_block = _round_up(shared_bytes + arch.reserved_shared_per_block_bytes, 128)
    if shared_bytes > arch.shared_per_block_bytes:
        limits["shared"] = 0
    elif per_block > 0:
        limits["shared"] = arch.shared_per_sm_bytes // per_block
    blocks, resident, fraction, limiter = _pick(limits, warps_per_block, arch.max_warps_per_sm)
    return Occupancy(
        vendor="nvidia",
        target=f"sm_{sm}",
        blocks_per_unit=blocks,
        warps_per_sm=resident,
        fraction=fraction,
        limiter=limiter,  # type: ignore[arg-type]
    )


def amd_occupancy(
    gfx: str, *, vgprs: int, sgprs: int | None, lds_bytes: int, waves_per_block: int
) -> Occupancy:
    """Resident waves per SIMD for a workgroup of ``waves_per_block`` waves."""
    arch = amd_arch(gfx)
    simds = arch.simds_per_cu
    max_waves_per_cu = arch.max_waves_per_simd * simds
    limits: dict[str, int] = {"warps": max_waves_per_cu // waves_per_block}
    # each multi-wave workgroup holds one of the CU's barriers; single-wave ones hold none
    if waves_per_block > 1:
        limits["blocks"] = arch.max_workgroups_per_cu
    if vgprs > 0:
        waves = min(arch.max_waves_per_simd, arch.vgprs_per_simd_lane // _round_up(vgprs, 8))
        limits["registers"] = _groups_from_waves_per_simd(waves, waves_per_block, simds)
    if sgprs:
        waves = min(
            arch.max_waves_per_simd,
            arch.sgprs_per_simd // _round_up(sgprs, arch.sgpr_granule),
        )
        limits["sgprs"] = _groups_from_waves_per_simd(waves, waves_per_block, simds)
    if lds_bytes > arch.lds_per_cu_bytes:
        limits["shared"] = 0
    elif lds_bytes > 0:
        limits["shared"] = arch.lds_per_cu_bytes // lds_bytes
    # a workgroup's waves are spread over the CU's SIMDs
    blocks, resident, fraction, limiter = _pick(
        limits, waves_per_block, arch.max_waves_per_simd, units=simds
    )
    return Occupancy(
        vendor="amd",
        target=gfx,
        blocks_per_unit=blocks,
        waves_per_simd=resident,
        fraction=fraction,
        limiter=limiter,  # type: ignore[arg-type]
    )


def _groups_from_waves_per_simd(waves_per_simd: int, waves_per_block: int, simds: int) -> int:
    """Workgroups per CU when each SIMD holds at most ``waves_per_simd`` waves."""
    return (waves_per_simd * simds) // waves_per_block


_PREFERENCE = ("registers", "sgprs", "shared", "warps", "blocks")


def _pick(
    limits: dict[str, int], warps_per_block: int, max_per_unit: int, *, units: int = 1
) -> tuple[int, int, float, str]:
    """(blocks, resident warps per unit, fraction of ``max_per_unit``, limiter), the resident
    warps of a block spread over ``units`` (an AMD CU's SIMDs). The tightest limit wins; on a
    tie, a resource (registers, shared memory) is named."""
    limiter = min(limits, key=lambda k: (limits[k], _PREFERENCE.index(k)))
    blocks = max(limits[limiter], 0)
    resident = blocks * warps_per_block // units
    fraction = round(resident / max_per_unit, 4)
    return blocks, resident, fraction, "none" if fraction >= 1.0 else limiter
