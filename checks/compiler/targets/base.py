"""What the compiler report needs to know about one GPU vendor, asked of one object.

A ``VendorTarget`` answers every vendor-specific question in ``checks/``: which compile targets
are its own and what their architecture is, the Triton ``GPUTarget`` and device properties a
compile-only run presents, where its resource usage is read from, its register cap, its matrix
and global-load instructions, how wide its warps are, and the words the review uses. A new
vendor is one new subclass listed in ``checks.compiler.targets.VENDOR_TARGETS``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from bot.contracts.base import Vendor
from bot.errors import PolicyError
from checks.compiler.profile.counters import KernelCounters
from checks.compiler.records import KernelCompileRecord

Arch = int | str  # an NVIDIA SM number (90), an AMD gfx name ("gfx942")


@dataclass(frozen=True)
class Compiled:
    """One Triton compile, as far as its resource usage is read from it."""

    function: str  # the compiled function's name
    num_warps: int
    dynamic_shared: int  # bytes of shared memory / LDS it is launched with
    asm: str  # the instruction text (the target's ``asm_stage``)
    compile_log: str = ""  # what the assembler printed (ptxas -v)
    resource_dump: str = ""  # a resource dump of the binary, where ``wants_resource_dump``


class VendorTarget(ABC):
    vendor: ClassVar[Vendor]
    display: ClassVar[str]  # "NVIDIA"
    backend: ClassVar[str]  # Triton's back-end name: "cuda", "hip"
    lane_width: ClassVar[int]  # threads per warp (wave) that a num_warps counts in
    asm_stage: ClassVar[str]  # the Triton stage holding the instruction text: "ptx", "amdgcn"
    example: ClassVar[str]  # a target name, for messages: "sm_90"
    register_word: ClassVar[str]  # what a register is called per thread: "registers", "VGPRs"
    spill_unit: ClassVar[str]  # where spills go: "local memory per thread"
    matrix_words: ClassVar[str]  # the matrix instructions a tl.dot should become: "wgmma/mma"
    cxx_suffix: ClassVar[str]  # the C++ kernels this vendor compiles: ".cu"
    cxx_compiler: ClassVar[str]  # the program that compiles them: "nvcc"
    cxx_missing: ClassVar[str]  # why a C++ kernel is not compiled where that program is missing
    warp_word: ClassVar[str]  # what a num_warps counts: "warps", "wavefronts"
    honours_maxnreg: ClassVar[bool]  # whether a triton.Config's maxnreg reaches the compiler
    profiler: ClassVar[str]  # the program that reads shared-memory counters: "ncu"
    profile_region: ClassVar[Literal["cuda", "roctx"]]  # how the profiled process marks its region
    accesses_unit: ClassVar[str]  # what its shared-memory access count counts
    conflicts_unit: ClassVar[str]  # what its bank-conflict count counts

    @abstractmethod
    def parse(self, name: str) -> Arch | None:
        """The architecture of target ``name`` when it is one of this vendor's, else None."""

    def arch(self, name: str) -> Arch:
        """The architecture of target ``name``; a PolicyError when it is not this vendor's."""
        arch = self.parse(name)
        if arch is None:
            raise PolicyError(
                f"{name!r} is not a {self.display} compile target",
                hint=f"name {self.display} targets like {self.example!r}",
            )
        return arch

    @abstractmethod
    def target_name(self, arch: Arch) -> str:
        """The target's name from its architecture: 90 -> "sm_90"."""

    @abstractmethod
    def known_archs(self) -> tuple[Arch, ...]:
        """The architectures whose limits (occupancy, register cap) are tabled."""

    def known(self, arch: Arch) -> bool:
        return arch in self.known_archs()

    @abstractmethod
    def triton_target(self, arch: Arch) -> tuple[str, Arch, int]:
        """Triton's ``GPUTarget(backend, arch, warp_size)`` arguments for ``arch``."""

    @abstractmethod
    def device_limits(self, arch: Arch) -> tuple[int, int, int]:
        """(shared memory per block in bytes, registers per SM or CU, SMs or CUs) of one
        representative device of ``arch``."""

    def device_properties(self, arch: Arch, warp_size: int) -> dict[str, int]:
        """What the driver would report for a device of ``arch`` (a compile-only run)."""
        shared, regs, units = self.device_limits(arch)
        return {
            "max_shared_mem": shared,
            "max_num_regs": regs,
            "multiprocessor_count": units,
            "warpSize": warp_size,
            "sm_clock_rate": 0,
            "mem_clock_rate": 0,
            "mem_bus_width": 0,
        }

    @abstractmethod
    def device_capability(self, arch: Arch) -> tuple[int, int]:
        """``torch.cuda.get_device_capability`` of a device of ``arch``."""

    @abstractmethod
    def max_regs(self, arch: Arch, options: dict[str, Any] | None = None) -> int | None:
        """The register cap per thread (None where the architecture is not tabled)."""

    @abstractmethod
    def matrix_instructions(self, text: str) -> Counter[str]:
        """Matrix-core instructions in this vendor's instruction text, by mnemonic."""

    @abstractmethod
    def global_load_widths(self, text: str) -> Counter[int]:
        """Histogram of global-load widths in bits per thread in the instruction text."""

    @abstractmethod
    def usage_fields(self, arch: Arch, compiled: Compiled) -> dict[str, Any]:
        """Record fields (registers, spills, shared memory, occupancy) of one compile."""

    def wants_resource_dump(self, compile_log: str) -> bool:
        """Whether a compile's log lacks the usage, so the binary's resource dump is needed."""
        return False

    @abstractmethod
    def occupancy_resident(self, record: KernelCompileRecord) -> tuple[int | None, str]:
        """A record's resident warps and this vendor's unit for them: (32, "warps/SM"),
        (4, "waves/SIMD")."""

    @abstractmethod
    def profile_prefix(self, out_dir: Path) -> list[str]:
        """The profiler command that runs one process and writes its counters under
        ``out_dir``; the process's own command follows it."""

    @abstractmethod
    def read_profile(self, out_dir: Path) -> tuple[list[KernelCounters], str | None]:
        """The counters per GPU kernel the profiler wrote, and why there are none where the
        profiler said (a permission refusal)."""

    @abstractmethod
    def smem_totals(self, counters: KernelCounters) -> tuple[int | None, int | None]:
        """(shared-memory accesses, bank conflicts) of one kernel's counters."""

    @abstractmethod
    def cxx_report(
        self, kernel: str, source: Path, targets: list[str]
    ) -> list[KernelCompileRecord]:
        """Compile one C++ kernel file for each of ``targets`` and report every kernel in it."""
