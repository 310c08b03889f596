"""AMD: ``gfxNNN`` targets, AMDGCN assembly, waves of 64, C++ kernels through hipcc."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from checks.compiler import isa_parse
from checks.compiler.cxx_report import hipcc_report
from checks.compiler.occupancy import AMD_ARCHS, gfx_name
from checks.compiler.profile import rocprof
from checks.compiler.profile.counters import KernelCounters, total
from checks.compiler.records import KernelCompileRecord
from checks.compiler.resources import amd_asm_fields, amd_max_regs
from checks.compiler.targets.base import Arch, Compiled, VendorTarget


class Amd(VendorTarget):
    vendor = "amd"
    display = "AMD"
    backend = "hip"
    lane_width = 64
    asm_stage = "amdgcn"
    example = "gfx942"
    register_word = "VGPRs"
    spill_unit = "scratch per lane"
    matrix_words = "mfma/wmma"
    cxx_suffix = ".hip"
    cxx_compiler = "hipcc"
    cxx_missing = "no hipcc on this machine (the HIP side needs a ROCm runner)"
    warp_word = "wavefronts"
    profiler = "rocprofv3"
    profile_region = "roctx"
    accesses_unit = "LDS instructions"
    conflicts_unit = "LDS bank-conflict cycles"
    honours_maxnreg = False  # HIPOptions has no maxnreg: parse_options drops it

    def parse(self, name: str) -> Arch | None:
        return gfx_name(name)

    def target_name(self, arch: Arch) -> str:
        return str(arch)

    def known_archs(self) -> tuple[Arch, ...]:
        return tuple(AMD_ARCHS)

    def triton_target(self, arch: Arch) -> tuple[str, Arch, int]:
        """RDNA (gfx10 and later) runs waves of 32; CDNA (gfx9) waves of 64."""
        gfx = str(arch)
        major = int(gfx[3:-2]) if gfx[3:-2].isdigit() else 9
        return "hip", gfx, 32 if major >= 10 else 64

    def device_limits(self, arch: Arch) -> tuple[int, int, int]:
        b = AMD_ARCHS.get(str(arch)) or AMD_ARCHS["gfx942"]
        return b.lds_per_cu_bytes, b.vgprs_per_simd_lane * b.wave_size * b.simds_per_cu, b.cu_count

    def device_capability(self, arch: Arch) -> tuple[int, int]:
        return (9, 4)

    def max_regs(self, arch: Arch, options: dict[str, Any] | None = None) -> int | None:
        return amd_max_regs(str(arch))

    def matrix_instructions(self, text: str) -> Counter[str]:
        return isa_parse.amdgcn_matrix_instructions(text)

    def global_load_widths(self, text: str) -> Counter[int]:
        return isa_parse.amdgcn_load_widths(text)

    def usage_fields(self, arch: Arch, compiled: Compiled) -> dict[str, Any]:
        c = compiled
        return amd_asm_fields(str(arch), c.function, c.num_warps, c.dynamic_shared, c.asm)

    def occupancy_resident(self, record: KernelCompileRecord) -> tuple[int | None, str]:
        return record.occupancy_waves_per_simd, "waves/SIMD"

    def cxx_report(
        self, kernel: str, source: Path, targets: list[str]
    ) -> list[KernelCompileRecord]:
        return hipcc_report(kernel, source, targets)

    def profile_prefix(self, out_dir: Path) -> list[str]:
        return rocprof.command(str(out_dir))

    def read_profile(self, out_dir: Path) -> tuple[list[KernelCounters], str | None]:
        return rocprof.read_dir(out_dir), None

    def smem_totals(self, counters: KernelCounters) -> tuple[int | None, int | None]:
        return total(counters, rocprof.ACCESSES), total(counters, rocprof.CONFLICTS)
