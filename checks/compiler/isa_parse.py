"""Read what a GPU compiler wrote: resource usage, matrix instructions and global-load widths.

Pure text parsing, shared by the Triton report and the C++ report, because the two toolchains
end in the same back ends:

- ``ptxas -v`` (what ``nvcc -Xptxas -v`` and Triton's ``TRITON_DUMP_PTXAS_LOG`` print);
- ``cuobjdump --dump-resource-usage`` on a cubin or an object file;
- AMDGCN assembly from LLVM's AMDGPU back end (Triton's ``amdgcn`` stage, ``hipcc --save-temps``):
  the ``amdhsa.kernels`` metadata block and the ``; Occupancy:`` comment;
- ``hipcc -Rpass-analysis=kernel-resource-usage`` remarks;
- PTX and AMDGCN instruction text for ``wgmma``/``mma``/``tcgen05.mma`` and ``v_mfma``/``v_wmma``,
  and for the width of each global load.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from bot.contracts.base import Frozen


class NvidiaUsage(Frozen):
    """One function's resource usage as ptxas or cuobjdump reports it (per thread unless named)."""

    function: str
    arch: str | None = None
    regs_per_thread: int
    stack_bytes: int = 0
    spill_store_bytes: int | None = None  # ptxas only; cuobjdump does not report spills
    spill_load_bytes: int | None = None
    static_shared_bytes: int | None = None
    barriers: int | None = None


class AmdUsage(Frozen):
    """One kernel's resource usage from AMDGCN metadata or resource-usage remarks."""

    function: str
    arch: str | None = None
    vgprs: int  # what occupancy is computed from: arch + acc VGPRs on gfx90a and later
    arch_vgprs: int | None = None
    agprs: int | None = None
    sgprs: int | None = None
    vgpr_spill_count: int = 0
    sgpr_spill_count: int = 0
    scratch_bytes_per_lane: int = 0
    static_lds_bytes: int = 0
    wavefront_size: int | None = None
    max_flat_workgroup_size: int | None = None
    reported_occupancy_waves_per_simd: int | None = None


# ------------------------------------------------------------------------------------ NVIDIA

_PTXAS_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_PTXAS_PROPS = re.compile(r"Function properties for (\S+)")
_PTXAS_FRAME = re.compile(
    r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads"
)
_PTXAS_USED = re.compile(r"Used (\d+) registers(.*)")


def parse_ptxas_log(text: str) -> list[NvidiaUsage]:
    """Every entry function in a ``ptxas -v`` log, in order of appearance."""
    found: dict[str, dict] = {}
    current: str | None = None
    for line in text.splitlines():
        if m := _PTXAS_ENTRY.search(line):
            current = m.group(1)
            found.setdefault(current, {"function": current})["arch"] = m.group(2)
        elif m := _PTXAS_PROPS.search(line):
            current = m.group(1)
            found.setdefault(current, {"function": current})
        elif (m := _PTXAS_FRAME.search(line)) and current is not None:
            entry = found[current]
            entry["stack_bytes"] = int(m.group(1))
            entry["spill_store_bytes"] = int(m.group(2))
            entry["spill_load_bytes"] = int(m.group(3))
        elif (m := _PTXAS_USED.search(line)) and current is not None:
            entry = found[current]
            entry["regs_per_thread"] = int(m.group(1))
            rest = m.group(2)
            if b := re.search(r"used (\d+) barriers", rest):
                entry["barriers"] = int(b.group(1))
            smem = re.search(r"(\d+) bytes smem", rest)
            entry["static_shared_bytes"] = int(smem.group(1)) if smem else 0
    return [NvidiaUsage(**v) for v in found.values() if "regs_per_thread" in v]


_CUOBJ_ARCH = re.compile(r"^arch = (sm_\w+)", re.MULTILINE)
_CUOBJ_FUNC = re.compile(r"^\s*Function ([^:\s]+):\s*\n\s*(.*)$", re.MULTILINE)


def parse_cuobjdump_resource_usage(text: str) -> list[NvidiaUsage]:
    """Every function in ``cuobjdump --dump-resource-usage`` output (cubin or fatbin)."""
    out: list[NvidiaUsage] = []
    arches = [(m.start(), m.group(1)) for m in _CUOBJ_ARCH.finditer(text)]
    for m in _CUOBJ_FUNC.finditer(text):
        fields = dict(re.findall(r"([A-Z]+(?:\[\d+\])?):(\d+)", m.group(2)))
        if "REG" not in fields:
            continue
        arch = None
        for pos, name in arches:
            if pos < m.start():
                arch = name
        out.append(
            NvidiaUsage(
                function=m.group(1),
                arch=arch,
                regs_per_thread=int(fields["REG"]),
                stack_bytes=int(fields.get("STACK", 0)),
                static_shared_bytes=int(fields.get("SHARED", 0)),
            )
        )
    return out


# --------------------------------------------------------------------------------------- AMD

_AMD_META = re.compile(r"\.amdgpu_metadata\s*\n(.*?)\.end_amdgpu_metadata", re.DOTALL)
_AMD_ITEM_KEY = re.compile(r"^(?:  - |    )\.([a-z_]+):\s*(\S.*)?$")
_AMD_TARGET = re.compile(r"^amdhsa\.target:\s*\S*--(gfx\w+)", re.MULTILINE)
_AMD_KINFO = re.compile(r"; Kernel info:(.*?)(?=; Kernel info:|\Z)", re.DOTALL)


def _amd_vgprs(arch_vgprs: int | None, agprs: int | None, total: int | None) -> int:
    if total is not None:
        return total
    # gfx90a and later allocate arch and acc VGPRs from one file; arch VGPRs are 4-aligned
    arch = arch_vgprs or 0
    acc = agprs or 0
    return ((arch + 3) // 4) * 4 + acc if acc else arch


def parse_amdgcn(text: str) -> list[AmdUsage]:
    """Every kernel in AMDGCN assembly, from its ``amdhsa.kernels`` metadata block."""
    block = _AMD_META.search(text)
    if block is None:
        return []
    meta = block.group(1)
    target = _AMD_TARGET.search(meta)
    kernels: list[dict[str, str]] = []
    in_kernels = False
    for line in meta.splitlines():
        if line.startswith("amdhsa.kernels:"):
            in_kernels = True
            continue
        if in_kernels and line and not line.startswith(" "):
            in_kernels = False
        if not in_kernels:
            continue
        if line.startswith("  - "):
            kernels.append({})
        m = _AMD_ITEM_KEY.match(line)
        if m and kernels and m.group(2) is not None:
            kernels[-1][m.group(1)] = m.group(2).strip()
    occupancy = _amd_reported_occupancy(text)
    out: list[AmdUsage] = []
    for k in kernels:
        name = k.get("name", "?")
        agprs = _int(k.get("agpr_count"))
        arch_vgprs = re.search(rf"\.set\s+{re.escape(name)}\.num_vgpr,\s*(\d+)", text)
        out.append(
            AmdUsage(
                function=name,
                arch=target.group(1) if target else None,
                vgprs=_int(k.get("vgpr_count")) or 0,
                arch_vgprs=int(arch_vgprs.group(1)) if arch_vgprs else None,
                agprs=agprs,
                sgprs=_int(k.get("sgpr_count")),
                vgpr_spill_count=_int(k.get("vgpr_spill_count")) or 0,
                sgpr_spill_count=_int(k.get("sgpr_spill_count")) or 0,
                scratch_bytes_per_lane=_int(k.get("private_segment_fixed_size")) or 0,
                static_lds_bytes=_int(k.get("group_segment_fixed_size")) or 0,
                wavefront_size=_int(k.get("wavefront_size")),
                max_flat_workgroup_size=_int(k.get("max_flat_workgroup_size")),
                reported_occupancy_waves_per_simd=occupancy.get(name),
            )
        )
    return out


def _amd_reported_occupancy(text: str) -> dict[str, int]:
    """``; Occupancy: N`` per function: the back end's waves per SIMD, blind to dynamic LDS."""
    found: dict[str, int] = {}
    for m in _AMD_KINFO.finditer(text):
        before = text[: m.start()]
        names = re.findall(r"\.size\s+([\w.$]+),\s*\.Lfunc_end", before)
        occ = re.search(r"; Occupancy: (\d+)", m.group(1))
        if names and occ:
            found[names[-1]] = int(occ.group(1))
    return found


_REMARK_TAG = re.compile(r"\s*\[-Rpass-analysis=kernel-resource-usage\]\s*$")
_REMARK = re.compile(r"remark:\s+(.*)$")


def parse_amdgpu_remarks(text: str) -> list[AmdUsage]:
    """``-Rpass-analysis=kernel-resource-usage`` remarks (hipcc), one entry per function."""
    rows: list[dict[str, str]] = []
    for raw in text.splitlines():
        if "kernel-resource-usage" not in raw:
            continue
        m = _REMARK.search(_REMARK_TAG.sub("", raw))
        if not m:
            continue
        body = m.group(1).strip()
        key, _, value = body.rpartition(": ")
        if key == "Function Name":
            rows.append({"name": value.strip()})
        elif rows and key:
            rows[-1][key] = value.strip()
    out = []
    for r in rows:
        arch_vgprs = _int(r.get("VGPRs"))
        agprs = _int(r.get("AGPRs"))
        out.append(
            AmdUsage(
                function=r["name"],
                vgprs=_amd_vgprs(arch_vgprs, agprs, None),
                arch_vgprs=arch_vgprs,
                agprs=agprs,
                sgprs=_int(r.get("TotalSGPRs", r.get("SGPRs"))),
                vgpr_spill_count=_int(r.get("VGPRs Spill")) or 0,
                sgpr_spill_count=_int(r.get("SGPRs Spill")) or 0,
                scratch_bytes_per_lane=_int(r.get("ScratchSize [bytes/lane]")) or 0,
                static_lds_bytes=_int(r.get("LDS Size [bytes/block]")) or 0,
                reported_occupancy_waves_per_simd=_int(r.get("Occupancy [waves/SIMD]")),
            )
        )
    return out


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value.strip().strip("'\""))
    except ValueError:
        return None


# --------------------------------------------------------------------- instructions in the text

_PTX_MATRIX = re.compile(
    r"(?<![\w.])(wgmma\.mma_async[\w.:]*|tcgen05\.mma[\w.:]*|wmma\.mma[\w.:]*|"
    r"mma\.sp[\w.:]*|mma\.sync[\w.:]*)"
)
_AMD_MATRIX = re.compile(r"\b(v_mfma_\w+|v_smfmac_\w+|v_wmma_\w+|v_swmmac_\w+)")
_NOISE = (".sync", ".aligned")


def _count_matrix(pattern: re.Pattern[str], body: str) -> Counter[str]:
    found: Counter[str] = Counter()
    for m in pattern.finditer(body):
        name = m.group(1).rstrip(".;")
        for noise in _NOISE:
            name = name.replace(noise, "")
        found[name] += 1
    return found


def _ptx_body(text: str) -> str:
    return re.sub(r"//[^\n]*", "", text)


def _amdgcn_body(text: str) -> str:
    return re.sub(r";[^\n]*", "", text)


def ptx_matrix_instructions(text: str) -> Counter[str]:
    """Matrix-core instructions (``wgmma``, ``tcgen05.mma``, ``mma``, ``wmma``) in PTX text."""
    return _count_matrix(_PTX_MATRIX, _ptx_body(text))


def amdgcn_matrix_instructions(text: str) -> Counter[str]:
    """Matrix-core instructions (``v_mfma``, ``v_wmma`` and their sparse forms) in AMDGCN."""
    return _count_matrix(_AMD_MATRIX, _amdgcn_body(text))


_PTX_TYPE_BITS = {"8": 8, "16": 16, "32": 32, "64": 64, "128": 128}
_PTX_LD = re.compile(r"(?<![\w.])ld\.global((?:\.[\w:]+)*)")
_PTX_CP_ASYNC = re.compile(
    r"(?<![\w.])cp\.async\.c[ag]\.shared(?:::cta)?\.global[\w.:]*\s*\[[^\]]*\],\s*\[[^\]]*\],\s*(0x[0-9a-fA-F]+|\d+)"
)
_AMD_LOAD = re.compile(
    r"\b(?:global|buffer|flat)_load_(?:lds_)?"
    r"(dwordx4|dwordx3|dwordx2|dword|b128|b96|b64|b32|d16_hi_b16|d16_b16|"
    r"ubyte_d16_hi|ubyte_d16|sbyte_d16_hi|sbyte_d16|ubyte|sbyte|ushort|sshort|"
    r"short_d16_hi|short_d16|u16|i16|u8|i8)\b"
)
_AMD_LOAD_BITS = {
    "dwordx4": 128,
    "b128": 128,
    "dwordx3": 96,
    "b96": 96,
    "dwordx2": 64,
    "b64": 64,
    "dword": 32,
    "b32": 32,
}


def ptx_load_widths(text: str) -> Counter[int]:
    """Histogram of global-load widths in bits per thread (``ld.global``/``cp.async``) in PTX."""
    body = _ptx_body(text)
    hist: Counter[int] = Counter()
    for m in _PTX_LD.finditer(body):
        mods = m.group(1).split(".")
        vec = next((int(x[1:]) for x in mods if re.fullmatch(r"v\d", x)), 1)
        size = next(
            (_PTX_TYPE_BITS[x[1:]] for x in mods if re.fullmatch(r"[bsuf](8|16|32|64|128)", x)),
            None,
        )
        if size is not None:
            hist[vec * size] += 1
    for m in _PTX_CP_ASYNC.finditer(body):
        hist[int(m.group(1), 0) * 8] += 1
    return hist


def amdgcn_load_widths(text: str) -> Counter[int]:
    """Histogram of global-load widths in bits per lane (``global_load``/``buffer_load``/
    ``flat_load``) in AMDGCN."""
    hist: Counter[int] = Counter()
    for m in _AMD_LOAD.finditer(_amdgcn_body(text)):
        kind = m.group(1)
        bits = _AMD_LOAD_BITS.get(kind)
        if bits is None:
            bits = 8 if ("byte" in kind or kind in ("u8", "i8")) else 16
        hist[bits] += 1
    return hist


def pick_usage(found: list, name: str) -> Any:
    """The parsed usage of function ``name``, or the only one there is (else None)."""
    for usage in found:
        if usage.function == name:
            return usage
    return found[0] if len(found) == 1 else None
