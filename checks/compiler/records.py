"""The compiler report's records, the flags raised about them, and the report holding both.

One record per compiled variant (kernel x config x target), in one unit across vendors:

- ``regs_per_thread``: registers per thread (NVIDIA, from ptxas) or VGPRs per lane (AMD, arch +
  acc VGPRs, which share one file of 512 on gfx90a/gfx942/gfx950).
- ``spill_bytes``: bytes per thread written to local/scratch memory by register spills. NVIDIA:
  ptxas' "bytes spill stores". AMD: ``.vgpr_spill_count`` x 4 (each spilled VGPR is a 4-byte
  scratch slot per lane); SGPR spills go to VGPR lanes, not memory, so they add to the count only.
- ``spill_count``: 32-bit registers spilled. NVIDIA: spill-store bytes / 4 (ptxas reports bytes
  only). AMD: ``.vgpr_spill_count + .sgpr_spill_count``. (Triton's own ``n_spills`` is neither:
  on both vendors it is the function's local-memory size / 4, read from the driver at load time.)
- ``stack_bytes``: NVIDIA stack frame, AMD private segment (scratch) per lane.
- ``shared_bytes``: shared memory / LDS per block: what Triton launches with plus static.
- occupancy: warps per SM (NVIDIA, computed) or waves per SIMD (AMD, recomputed with the LDS;
  what the AMD compiler printed is kept in ``compiler_occupancy_waves_per_simd``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from bot.contracts.base import Frozen, Vendor
from bot.contracts.evidence import AutotuneList, FlagKind, TritonLayout

Language = Literal["triton", "cuda", "hip"]


class KernelCompileRecord(Frozen):
    kernel: str  # the policy's kernel name
    function: str  # the compiled function: the @triton.jit name, or the CUDA/HIP kernel
    language: Language = "triton"
    config_label: str
    config: dict[str, Any] = Field(default_factory=dict)
    specialization: str = ""  # argument types, /16 = 16-byte divisible, =1 = fixed to 1
    autotuned: bool = False
    autotune_keys: tuple[str, ...] = ()  # the autotuner keys (served shapes) this variant serves
    shapes: tuple[str, ...] = ()  # served shapes and dtypes that compile to this variant
    vendor: Vendor
    target: str
    threads_per_block: int | None = None
    regs_per_thread: int | None = None
    max_regs_per_thread: int | None = None  # the cap on this target
    sgprs_per_wave: int | None = None  # AMD only
    spill_bytes: int | None = None
    spill_count: int | None = None
    spill_detail: str = ""  # the vendor's own words, e.g. "vgpr_spill_count=45 sgpr_spill_count=0"
    stack_bytes: int | None = None
    shared_bytes: int | None = None
    occupancy_warps_per_sm: int | None = None  # NVIDIA
    occupancy_waves_per_simd: int | None = None  # AMD
    occupancy_fraction: float | None = None
    occupancy_limiter: str | None = None
    compiler_occupancy_waves_per_simd: int | None = None  # AMD, as printed (blind to dynamic LDS)
    uses_dot: bool = False
    matrix_instr: str | None = None  # the most frequent matrix-core instruction
    matrix_instr_count: int = 0
    global_load_bits_max: int | None = None
    load_width_hist: dict[int, int] = Field(default_factory=dict)  # bits per thread -> count
    layouts: tuple[TritonLayout, ...] = ()  # Triton: the layouts of its main operations (C-1)
    compile_s: float | None = None
    cached: bool = False
    # a config option this target's back end refuses (maxnreg on AMD): Triton's error at launch;
    # the numbers are then those of the config compiled without the option
    launch_refused: str | None = None
    error: str | None = None
    error_stage: Literal["entry", "compile"] | None = None  # entry: the bench call itself failed


class Flag(Frozen):
    severity: Literal["error", "warning", "info"]
    kind: FlagKind
    kernel: str
    vendor: Vendor
    target: str
    config_label: str | None = None
    message: str


class CompilerReport(Frozen):
    triton_version: str | None = None
    targets: tuple[str, ...] = ()
    records: tuple[KernelCompileRecord, ...] = ()
    flags: tuple[Flag, ...] = ()
    configs_differ_per_vendor: dict[str, bool] = Field(default_factory=dict)
    wall_s: float | None = None
    compiled: int = 0  # variants compiled in this run
    cached: int = 0  # variants read from the cache
    notes: tuple[str, ...] = ()
    autotune: tuple[AutotuneList, ...] = ()  # the live autotune lists, per kernel and target
