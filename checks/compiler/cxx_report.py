"""The compiler report for the C++ side of a rewrite: CUDA through nvcc, HIP through hipcc.

CUDA: each ``.cu`` file is compiled to PTX (``nvcc -ptx``), then assembled with ``ptxas -v``:
the log gives registers, spills, stack and static shared memory per kernel; the PTX gives the
threads per block (``.maxntid``/``.reqntid``, i.e. ``__launch_bounds__``), the matrix
instructions (``mma``/``wmma``/``wgmma``) and the global-load widths.

HIP: the same numbers come from AMDGCN assembly (``hipcc --cuda-device-only -S``, or a
``--save-temps`` ``.s`` file: the ``amdhsa.kernels`` metadata) or from the
``-Rpass-analysis=kernel-resource-usage`` remarks. Where hipcc is missing, recorded text is
parsed the same way.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Literal

from bot.errors import CompilerError
from bot.outputs import cache_root
from checks.compiler import isa_parse
from checks.compiler.occupancy import NVIDIA_ARCHS, gfx_name, nvidia_occupancy, sm_number
from checks.compiler.records import KernelCompileRecord
from checks.compiler.resources import amd_fields, amd_max_regs, nvidia_max_regs
from checks.procs import launch
from checks.worker_env import scrubbed_env

_ENTRY = re.compile(r"\.entry\s+(\w+)\s*\(")
# nvcc's reports, kept by what was compiled: the preprocessed source (every header it includes,
# line markers left out: they name the checkout's temporary folder), the target, the flags and
# the toolkit. A demo or a review run again reads them instead of compiling (about 2 s a file).
NVCC_CACHE_VERSION = "1"
_LINE_MARKER = re.compile(rb"^# \d+ .*$", re.M)
_NTID = re.compile(r"\.(?:maxntid|reqntid)\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?")


def _short(name: str) -> str:
    """A demangled kernel name without return type, namespaces or parameters:
    ``void (anonymous namespace)::k<float, 4>(float const*, int)`` (GNU c++filt) and
    ``void <unnamed>::k<float, 4>(const float *, int)`` (cu++filt) both give ``k<float, 4>``."""
    name = name.replace("(anonymous namespace)::", "")
    depth, cut, last_scope = 0, len(name), 0
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            cut = i
            break
        elif ch == " " and depth == 0:
            last_scope = i + 1  # after the return type
        elif name.startswith("::", i) and depth == 0:
            last_scope = i + 2
    return name[last_scope:cut]


def demangle(names: list[str]) -> dict[str, str]:
    """Mangled -> short readable C++ names (via ``cu++filt`` or ``c++filt`` when present)."""
    tool = shutil.which("cu++filt") or shutil.which("c++filt")
    if not tool or not names:
        return {n: n for n in names}
    done = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True)
    out = done.stdout.splitlines()
    if len(out) != len(names):
        return {n: n for n in names}
    short = {n: _short(d) if d != n else "" for n, d in zip(names, out, strict=True)}
    return {n: s if s and not s.startswith("<") else _bare(n) for n, s in short.items()}


def _bare(mangled: str) -> str:
    """The function name inside an Itanium-mangled name a demangler did not know."""
    m = re.match(r"_Z(\d+)", mangled)
    return mangled[m.end() : m.end() + int(m.group(1))] if m else mangled


def ptx_entries(ptx: str) -> dict[str, str]:
    """Each ``.entry`` function's PTX text, by mangled name."""
    starts = [(m.start(), m.group(1)) for m in _ENTRY.finditer(ptx)]
    out = {}
    for i, (pos, name) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(ptx)
        out[name] = ptx[pos:end]
    return out


def threads_per_block(entry_ptx: str) -> int | None:
    m = _NTID.search(entry_ptx)
    if not m:
        return None
    n = 1
    for g in m.groups():
        n *= int(g) if g else 1
    return n


def nvidia_records(
    kernel: str, target: str, ptx: str, ptxas_log: str, *, source: str = ""
) -> list[KernelCompileRecord]:
    """Records for every kernel in one PTX file and the ``ptxas -v`` log of assembling it."""
    sm = sm_number(target) or 0
    usage = {u.function: u for u in isa_parse.parse_ptxas_log(ptxas_log)}
    entries = ptx_entries(ptx)
    names = demangle(list(entries))
    records = []
    for mangled, text in entries.items():
        u = usage.get(mangled)
        threads = threads_per_block(text)
        matrix = isa_parse.ptx_matrix_instructions(text)
        loads = isa_parse.ptx_load_widths(text)
        fields: dict = {
            "kernel": kernel,
            "function": names.get(mangled, mangled),
            "language": "cuda",
            "config_label": f"threads={threads}" if threads else "threads=?",
            "config": {"threads_per_block": threads, "source": source},
            "vendor": "nvidia",
            "target": target,
            "threads_per_block": threads,
            "max_regs_per_thread": nvidia_max_regs(sm),
            "matrix_instr": matrix.most_common(1)[0][0] if matrix else None,
            "matrix_instr_count": sum(matrix.values()),
            "load_width_hist": dict(sorted(loads.items())),
            "global_load_bits_max": max(loads) if loads else None,
        }
        if u is None:
            fields["error"] = "ptxas reported nothing for this kernel"
            fields["error_stage"] = "compile"
        else:
            spill = u.spill_store_bytes or 0
            fields.update(
                regs_per_thread=u.regs_per_thread,
                spill_bytes=spill,
                spill_count=-(-spill // 4),
                spill_detail=f"{spill} bytes spill stores, {u.spill_load_bytes} bytes spill "
                "loads (ptxas)",
                stack_bytes=u.stack_bytes,
                shared_bytes=u.static_shared_bytes or 0,
            )
            if threads and sm in NVIDIA_ARCHS:
                occ = nvidia_occupancy(
                    sm,
                    regs_per_thread=u.regs_per_thread,
                    shared_bytes=u.static_shared_bytes or 0,
                    warps_per_block=-(-threads // 32),
                )
                fields.update(
                    occupancy_warps_per_sm=occ.warps_per_sm,
                    occupancy_fraction=occ.fraction,
                    occupancy_limiter=occ.limiter,
                )
        records.append(KernelCompileRecord(**fields))
    return records


@functools.cache
def _nvcc_include_flags() -> list[str]:
    """torch's headers (the folders ``torch.utils.cpp_extension.include_paths()`` gives for the
    CPU), found without importing torch (3 s of a 2-core machine), and Python's."""
    import importlib.util
    import sysconfig

    flags = []
    spec = importlib.util.find_spec("torch")
    for root in (spec.submodule_search_locations or []) if spec else []:
        include = Path(root) / "include"
        for path in (include, include / "torch" / "csrc" / "api" / "include"):
            if path.is_dir():
                flags += ["-I", str(path)]
    flags += ["-I", sysconfig.get_paths()["include"]]
    return flags


def nvcc_report(
    kernel: str,
    source: Path,
    targets: list[str],
    *,
    nvcc: str | None = None,
    extra_flags: tuple[str, ...] = (),
    timeout_s: float = 300.0,
) -> list[KernelCompileRecord]:
    """Compile one ``.cu`` file for each NVIDIA target and report every kernel in it.

    A file that does not compile gives one error record per target (reported, not raised).
    """
    nvcc = nvcc or shutil.which("nvcc")
    if nvcc is None:
        raise CompilerError(
            "nvcc is not on PATH, so the CUDA kernels cannot be compiled",
            hint="install the CUDA toolkit or put its bin/ on PATH",
        )
    ptxas = str(Path(nvcc).resolve().parent / "ptxas")
    if not Path(ptxas).exists():
        ptxas = shutil.which("ptxas") or ptxas
    includes = _nvcc_include_flags()  # torch's headers: what they hold is in the key, not where
    flags = ["-O3", "-std=c++17", *extra_flags]
    records: list[KernelCompileRecord] = []
    for target in targets:
        arch = target.rstrip("af") + ("a" if target.endswith("a") else "")
        key = _nvcc_key(nvcc, arch, flags, includes, source, timeout_s)
        kept = _nvcc_cached(key)
        if kept is not None:
            records += kept
            continue
        found = _nvcc_target(
            kernel, source, target, arch, nvcc, ptxas, [*flags, *includes], timeout_s
        )
        if key is not None and all(r.error is None for r in found):
            _nvcc_keep(key, found)
        records += found
    return records


def _compiler(cmd: list[str], scratch: str, timeout_s: float) -> launch.Ran:
    """A compiler run on a checkout's source as every process that reads a checkout's code is
    run (``checks.procs.launch``): the scrubbed environment, confined where the run is (only
    ``scratch`` writable), its whole tree killed at ``timeout_s`` (then TimeoutExpired)."""
    tool = launch.Launch(tuple(cmd), scrubbed_env(), Path.cwd(), writable=(Path(scratch),))
    ran = launch.run(tool, timeout_s)
    if ran.timed_out:
        raise subprocess.TimeoutExpired(cmd, timeout_s)
    return ran


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _nvcc_target(
    kernel: str,
    source: Path,
    target: str,
    arch: str,
    nvcc: str,
    ptxas: str,
    flags: list[str],
    timeout_s: float,
) -> list[KernelCompileRecord]:
    """One ``.cu`` file compiled for one target: its kernels' records, or one error record."""
    with tempfile.TemporaryDirectory(prefix="kr-nvcc-") as tmp:
        ptx_path = Path(tmp) / "k.ptx"
        cmd = [nvcc, "-ptx", f"-arch={arch}", *flags, "-o", str(ptx_path), str(source)]
        done = _compiler(cmd, tmp, timeout_s)
        if done.returncode == 0:
            log = _compiler(
                [ptxas, "-v", f"--gpu-name={arch}", str(ptx_path), "-o", str(ptx_path) + ".o"],
                tmp,
                timeout_s,
            )
            if log.returncode == 0:
                ptx = ptx_path.read_text()
                said = _text(log.stderr + log.stdout)
                return nvidia_records(kernel, target, ptx, said, source=source.name)
            done = log
    lines = _text(done.stderr or done.stdout).strip().splitlines()
    message = [ln.strip() for ln in lines if "error" in ln.lower()] or lines[-3:]
    error = " | ".join(message[:3])[:600] or f"nvcc exited with {done.returncode}"
    return [_compile_error(kernel, source, "cuda", target, error)]


def _compile_error(
    kernel: str, source: Path, language: Literal["cuda", "hip"], target: str, error: str
) -> KernelCompileRecord:
    """The one record of a C++ file that did not compile for ``target``."""
    return KernelCompileRecord(
        kernel=kernel,
        function=source.name,
        language=language,
        config_label="-",
        vendor="nvidia" if language == "cuda" else "amd",
        target=target,
        error=error,
        error_stage="compile",
    )


@functools.cache
def _nvcc_version(nvcc: str) -> str:
    done = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60)
    return done.stdout


def _nvcc_key(
    nvcc: str,
    arch: str,
    flags: list[str],
    includes: list[str],
    source: Path,
    timeout_s: float,
) -> str | None:
    """What nvcc would compile for ``arch`` with ``flags``, hashed: the source as preprocessed
    with ``includes`` (another checkout or environment with the same headers shares it); None
    where it cannot be preprocessed (the compile then says why)."""
    with tempfile.TemporaryDirectory(prefix="kr-nvcc-") as tmp:
        out = Path(tmp) / "k.ii"
        cmd = [nvcc, "-E", f"-arch={arch}", *flags, *includes, "-o", str(out), str(source)]
        done = _compiler(cmd, tmp, timeout_s)
        if done.returncode != 0 or not out.is_file():
            return None
        text = _LINE_MARKER.sub(b"", out.read_bytes())
    h = hashlib.sha256()
    for part in (NVCC_CACHE_VERSION, _nvcc_version(nvcc), arch, json.dumps(flags), source.name):
        h.update(part.encode() + b"\0")
    h.update(text)
    return h.hexdigest()


def _nvcc_cache_path(key: str) -> Path:
    return cache_root() / "nvcc" / f"{key}.json"


def _nvcc_cached(key: str | None) -> list[KernelCompileRecord] | None:
    if key is None:
        return None
    try:
        rows = json.loads(_nvcc_cache_path(key).read_text())
        return [KernelCompileRecord.model_validate({**r, "cached": True}) for r in rows]
    except (OSError, ValueError):
        return None


def _nvcc_keep(key: str, records: list[KernelCompileRecord]) -> None:
    path = _nvcc_cache_path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps([r.model_dump(mode="json") for r in records]))
        tmp.replace(path)
    except OSError:
        pass  # a cache that cannot be written only costs the next run a compile


def hip_records(kernel: str, target: str, text: str, *, source: str = "") -> list:
    """Records from hipcc output for one AMD target: AMDGCN assembly or resource remarks."""
    usages = isa_parse.parse_amdgcn(text) or isa_parse.parse_amdgpu_remarks(text)
    gfx = gfx_name(target) or target
    names = demangle([u.function for u in usages])
    matrix = isa_parse.amdgcn_matrix_instructions(text)
    loads = isa_parse.amdgcn_load_widths(text)
    records = []
    for u in usages:
        wave = u.wavefront_size or 64
        threads = u.max_flat_workgroup_size  # __launch_bounds__, else the 1024 default
        fields = amd_fields(gfx, u, waves_per_block=-(-(threads or 256) // wave))
        label = f"threads={threads}" if threads else "threads=256 (assumed)"
        records.append(
            KernelCompileRecord(
                kernel=kernel,
                function=names.get(u.function, u.function),
                language="hip",
                config_label=label,
                config={"threads_per_block": threads, "source": source},
                vendor="amd",
                target=target,
                max_regs_per_thread=amd_max_regs(gfx),
                **fields,
                # one text may hold several kernels: instructions are per file, not per kernel
                matrix_instr=matrix.most_common(1)[0][0] if matrix else None,
                matrix_instr_count=sum(matrix.values()),
                load_width_hist=dict(sorted(loads.items())),
                global_load_bits_max=max(loads) if loads else None,
            )
        )
    return records


def hipcc_report(
    kernel: str, source: Path, targets: list[str], *, timeout_s: float = 300.0
) -> list[KernelCompileRecord]:
    """Compile one ``.hip`` file with hipcc for each AMD target (needs ROCm's hipcc)."""
    hipcc = shutil.which("hipcc")
    if hipcc is None:
        raise CompilerError(
            "hipcc is not on PATH, so the HIP kernels cannot be compiled here",
            hint="run the report on a ROCm machine, or parse recorded hipcc output "
            "with checks.compiler.cxx_report.hip_records",
        )
    records = []
    for target in targets:
        with tempfile.TemporaryDirectory(prefix="kr-hipcc-") as tmp:
            out = Path(tmp) / "k.s"
            cmd = [hipcc, f"--offload-arch={target}", "--cuda-device-only", "-O3", "-S"]
            done = _compiler([*cmd, "-o", str(out), str(source)], tmp, timeout_s)
            if done.returncode == 0 and out.is_file():
                records += hip_records(kernel, target, out.read_text(), source=source.name)
                continue
        error = _text(done.stderr or done.stdout).strip()[-600:] or "hipcc failed"
        records.append(_compile_error(kernel, source, "hip", target, error))
    return records
