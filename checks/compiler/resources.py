"""Record fields from one kernel's resource usage, per vendor: registers, spills, stack, shared
memory and occupancy, in the compiler report's units (``checks.compiler.records``).

Shared by the Triton report (through ``checks.compiler.targets``) and the C++ report
(``checks.compiler.cxx_report``); the text parsing is in ``checks.compiler.isa_parse`` and the
occupancy arithmetic in ``checks.compiler.occupancy``.
"""

from __future__ import annotations

from typing import Any

from checks.compiler import isa_parse
from checks.compiler.occupancy import (
    AMD_ARCHS,
    NVIDIA_ARCHS,
    Occupancy,
    amd_occupancy,
    nvidia_occupancy,
)


def occupancy_fields(occ: Occupancy | None) -> dict[str, Any]:
    if occ is None:
        return {}
    return {
        "occupancy_warps_per_sm": occ.warps_per_sm,
        "occupancy_waves_per_simd": occ.waves_per_simd,
        "occupancy_fraction": occ.fraction,
        "occupancy_limiter": occ.limiter,
    }


# ------------------------------------------------------------------------------------ NVIDIA


def nvidia_max_regs(sm: int, options: dict[str, Any] | None = None) -> int | None:
    """The register cap per thread on ``sm_<sm>``, lowered by a ``maxnreg`` option."""
    if sm not in NVIDIA_ARCHS:
        return None
    cap = NVIDIA_ARCHS[sm].max_regs_per_thread
    maxnreg = (options or {}).get("maxnreg")
    return min(cap, int(maxnreg)) if maxnreg else cap


def nvidia_fields(
    sm: int, name: str, num_warps: int, dynamic_shared: int, log: str, cuobjdump_text: str
) -> dict[str, Any]:
    """Fields from a ptxas ``-v`` log, else from ``cuobjdump --dump-resource-usage``."""
    usage = isa_parse.pick_usage(isa_parse.parse_ptxas_log(log), name)
    static = (usage.static_shared_bytes or 0) if usage else 0
    if usage is None:
        usage = isa_parse.pick_usage(isa_parse.parse_cuobjdump_resource_usage(cuobjdump_text), name)
        if usage is None:
            return {"threads_per_block": num_warps * 32, "error": "no ptxas or cuobjdump output"}
        # cuobjdump's SHARED counts the 1 KiB the driver reserves on sm_90+; occupancy adds it
        static = usage.static_shared_bytes or 0
        if sm >= 90 and static >= 1024:
            static -= 1024
    shared = dynamic_shared + static
    occ = (
        nvidia_occupancy(
            sm,
            regs_per_thread=usage.regs_per_thread,
            shared_bytes=shared,
            warps_per_block=num_warps,
        )
        if sm in NVIDIA_ARCHS
        else None
    )
    spill = usage.spill_store_bytes
    return {
        "threads_per_block": num_warps * 32,
        "regs_per_thread": usage.regs_per_thread,
        "spill_bytes": spill,
        "spill_count": None if spill is None else -(-spill // 4),
        "spill_detail": (
            f"{usage.spill_store_bytes} bytes spill stores, {usage.spill_load_bytes} bytes spill "
            "loads (ptxas)"
            if spill is not None
            else "cuobjdump reports no spill counts"
        ),
        "stack_bytes": usage.stack_bytes,
        "shared_bytes": shared,
        **occupancy_fields(occ),
    }


# --------------------------------------------------------------------------------------- AMD


def amd_max_regs(gfx: str) -> int | None:
    """The VGPR cap per lane on ``gfx`` (None where its limits are not tabled)."""
    return AMD_ARCHS[gfx].max_vgprs_per_thread if gfx in AMD_ARCHS else None


def amd_asm_fields(
    gfx: str, name: str, num_warps: int, dynamic_shared: int, asm: str
) -> dict[str, Any]:
    """Fields from the ``amdhsa.kernels`` metadata of AMDGCN assembly."""
    usage = isa_parse.pick_usage(isa_parse.parse_amdgcn(asm), name)
    if usage is None:
        return {"threads_per_block": num_warps * 64, "error": "no AMDGCN metadata"}
    return amd_fields(gfx, usage, waves_per_block=num_warps, dynamic_lds_bytes=dynamic_shared)


def amd_fields(
    gfx: str, usage: isa_parse.AmdUsage, *, waves_per_block: int, dynamic_lds_bytes: int = 0
) -> dict[str, Any]:
    """Fields from one AMD kernel's usage (shared by the Triton and the HIP report)."""
    known = gfx in AMD_ARCHS
    wave = usage.wavefront_size or (AMD_ARCHS[gfx].wave_size if known else 64)
    lds = dynamic_lds_bytes + usage.static_lds_bytes
    occ = (
        amd_occupancy(
            gfx,
            vgprs=usage.vgprs,
            sgprs=usage.sgprs,
            lds_bytes=lds,
            waves_per_block=waves_per_block,
        )
        if known
        else None
    )
    return {
        "threads_per_block": waves_per_block * wave,
        "regs_per_thread": usage.vgprs,
        "sgprs_per_wave": usage.sgprs,
        "spill_bytes": usage.vgpr_spill_count * 4,
        "spill_count": usage.vgpr_spill_count + usage.sgpr_spill_count,
        "spill_detail": (
            f"vgpr_spill_count={usage.vgpr_spill_count} sgpr_spill_count={usage.sgpr_spill_count}"
        ),
        "stack_bytes": usage.scratch_bytes_per_lane,
        "shared_bytes": lds,
        **occupancy_fields(occ),
        "compiler_occupancy_waves_per_simd": usage.reported_occupancy_waves_per_simd,
    }
