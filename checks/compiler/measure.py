"""Turn one compile's output (PTX/AMDGCN text, ptxas log, Triton metadata) into record fields.

The units are the compiler report's (see ``checks.compiler.report``); the text parsing is in
``checks.compiler.isa_parse`` and the occupancy arithmetic in ``checks.compiler.occupancy``.
"""

from __future__ import annotations

import re
from typing import Any

from checks.compiler import isa_parse
from checks.compiler.occupancy import (
    Occupancy,
    amd_arch,
    amd_occupancy,
    known_target,
    nvidia_arch,
    nvidia_occupancy,
    parse_target,
)


def max_regs(target: str, options: dict[str, Any] | None = None) -> int | None:
    """The register cap per thread on ``target`` (None where its limits are not tabled)."""
    if not known_target(target):
        return None
    vendor, arch = parse_target(target)
    if vendor == "nvidia":
        cap = nvidia_arch(int(arch)).max_regs_per_thread
        maxnreg = (options or {}).get("maxnreg")
        return min(cap, int(maxnreg)) if maxnreg else cap
    return amd_arch(str(arch)).max_vgprs_per_thread


_DOT = re.compile(r"\btt\.dot(?:_scaled)?\b")


def measure(
    *,
    target: str,
    texts: dict[str, str],
    metadata: dict[str, Any],
    ptxas_log: str = "",
    cuobjdump_text: str = "",
    options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Record fields read from one Triton compile's texts (PTX or AMDGCN, TTIR) and metadata."""
    vendor, arch = parse_target(target)
    name = str(metadata.get("name", ""))
    num_warps = int(metadata.get("num_warps") or 4)
    dynamic_shared = int(metadata.get("shared") or 0)
    asm = texts.get("ptx" if vendor == "nvidia" else "amdgcn", "")
    fields: dict[str, Any] = {"uses_dot": bool(_DOT.search(texts.get("ttir", "")))}
    matrix = isa_parse.matrix_instructions(asm, vendor)
    if matrix:
        fields["matrix_instr"], _ = matrix.most_common(1)[0]
        fields["matrix_instr_count"] = sum(matrix.values())
    loads = isa_parse.global_load_widths(asm, vendor)
    fields["load_width_hist"] = dict(sorted(loads.items()))
    fields["global_load_bits_max"] = max(loads) if loads else None
    fields["max_regs_per_thread"] = max_regs(target, options)
    if vendor == "nvidia":
        fields.update(
            _nvidia(int(arch), name, num_warps, dynamic_shared, ptxas_log, cuobjdump_text)
        )
    else:
        fields.update(_amd(str(arch), name, num_warps, dynamic_shared, asm))
    return fields


def _nvidia(
    sm: int, name: str, num_warps: int, dynamic_shared: int, log: str, cuobjdump_text: str
) -> dict[str, Any]:
    usage = _pick_usage(isa_parse.parse_ptxas_log(log), name)
    static = (usage.static_shared_bytes or 0) if usage else 0
    if usage is None:
        usage = _pick_usage(isa_parse.parse_cuobjdump_resource_usage(cuobjdump_text), name)
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
        if known_target(f"sm_{sm}")
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
        **_occupancy_fields(occ),
    }


def _occupancy_fields(occ: Occupancy | None) -> dict[str, Any]:
    if occ is None:
        return {}
    return {
        "occupancy_warps_per_sm": occ.warps_per_sm,
        "occupancy_waves_per_simd": occ.waves_per_simd,
        "occupancy_fraction": occ.fraction,
        "occupancy_limiter": occ.limiter,
    }


def _amd(gfx: str, name: str, num_warps: int, dynamic_shared: int, asm: str) -> dict[str, Any]:
    usage = _pick_usage(isa_parse.parse_amdgcn(asm), name)
    if usage is None:
        return {"threads_per_block": num_warps * 64, "error": "no AMDGCN metadata"}
    return amd_fields(gfx, usage, waves_per_block=num_warps, dynamic_lds_bytes=dynamic_shared)


def amd_fields(
    gfx: str, usage: isa_parse.AmdUsage, *, waves_per_block: int, dynamic_lds_bytes: int = 0
) -> dict[str, Any]:
    """Record fields from one AMD kernel's usage (shared with the HIP report)."""
    known = known_target(gfx)
    wave = usage.wavefront_size or (amd_arch(gfx).wave_size if known else 64)
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
        **_occupancy_fields(occ),
        "compiler_occupancy_waves_per_simd": usage.reported_occupancy_waves_per_simd,
    }


def _pick_usage(found: list, name: str) -> Any:
    for usage in found:
        if usage.function == name:
            return usage
    return found[0] if len(found) == 1 else None
