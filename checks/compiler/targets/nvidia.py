"""NVIDIA: ``sm_XX`` targets, PTX and ptxas, warps of 32, C++ kernels through nvcc."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from checks.compiler import isa_parse
from checks.compiler.cxx_report import nvcc_report
from checks.compiler.occupancy import NVIDIA_ARCHS, sm_number
from checks.compiler.profile import ncu
from checks.compiler.profile.counters import KernelCounters, total
from checks.compiler.records import KernelCompileRecord
from checks.compiler.resources import nvidia_fields, nvidia_max_regs
from checks.compiler.targets.base import Arch, Compiled, VendorTarget


class Nvidia(VendorTarget):
    vendor = "nvidia"
    display = "NVIDIA"
    backend = "cuda"
    lane_width = 32
    asm_stage = "ptx"
    example = "sm_90"
    register_word = "registers"
    spill_unit = "local memory per thread"
    matrix_words = "wgmma/mma"
    cxx_suffix = ".cu"
    cxx_compiler = "nvcc"
    cxx_missing = "no nvcc here"
    warp_word = "warps"
    honours_maxnreg = True
    profiler = "ncu"
    profile_region = "cuda"
    accesses_unit = "shared load+store wavefronts"
    conflicts_unit = "bank conflicts"

    def parse(self, name: str) -> Arch | None:
        return sm_number(name)

    def target_name(self, arch: Arch) -> str:
        return f"sm_{arch}"

    def known_archs(self) -> tuple[Arch, ...]:
        return tuple(NVIDIA_ARCHS)

    def triton_target(self, arch: Arch) -> tuple[str, Arch, int]:
        return "cuda", arch, 32

    def device_limits(self, arch: Arch) -> tuple[int, int, int]:
        a = NVIDIA_ARCHS.get(int(arch)) or NVIDIA_ARCHS[90]
        return a.shared_per_block_bytes, a.regs_per_sm, a.sm_count

    def device_capability(self, arch: Arch) -> tuple[int, int]:
        return divmod(int(arch), 10)

    def max_regs(self, arch: Arch, options: dict[str, Any] | None = None) -> int | None:
        return nvidia_max_regs(int(arch), options)

    def matrix_instructions(self, text: str) -> Counter[str]:
        return isa_parse.ptx_matrix_instructions(text)

    def global_load_widths(self, text: str) -> Counter[int]:
        return isa_parse.ptx_load_widths(text)

    def usage_fields(self, arch: Arch, compiled: Compiled) -> dict[str, Any]:
        c = compiled
        return nvidia_fields(
            int(arch), c.function, c.num_warps, c.dynamic_shared, c.compile_log, c.resource_dump
        )

    def wants_resource_dump(self, compile_log: str) -> bool:
        """ptxas printed no ``Used N registers`` line: read the cubin with cuobjdump instead."""
        return "Used " not in compile_log

    def occupancy_resident(self, record: KernelCompileRecord) -> tuple[int | None, str]:
        return record.occupancy_warps_per_sm, "warps/SM"

    def cxx_report(
        self, kernel: str, source: Path, targets: list[str]
    ) -> list[KernelCompileRecord]:
        return nvcc_report(kernel, source, targets)

    def profile_prefix(self, out_dir: Path) -> list[str]:
        return ncu.command(str(out_dir / "ncu.csv"))

    def read_profile(self, out_dir: Path) -> tuple[list[KernelCounters], str | None]:
        path = out_dir / "ncu.csv"
        text = path.read_text(errors="replace") if path.is_file() else ""
        return ncu.parse(text), ncu.refusal(text)

    def smem_totals(self, counters: KernelCounters) -> tuple[int | None, int | None]:
        return total(counters, ncu.ACCESSES), total(counters, ncu.CONFLICTS)
