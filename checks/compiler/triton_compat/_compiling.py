"""Compiling one recorded request for any target, with ptxas' log and the stage times."""

from __future__ import annotations

import contextlib
import io
import time
from dataclasses import dataclass
from typing import Any

from checks.compiler.triton_compat._targets import gpu_target
from checks.compiler.triton_compat._variants import CompileRequest, _plain


@dataclass
class CompileOutput:
    """What one ``triton.compile`` produced, with the times Triton's listener reported."""

    texts: dict[str, str]  # "ttir", and "ptx" or "amdgcn"
    binary: bytes  # cubin or hsaco
    metadata: dict[str, Any]
    ptxas_log: str
    wall_s: float
    stage_us: list[tuple[str, int]]
    cache_hit: bool
    launcher_error: str | None = None  # why the launcher was not built (``launcher=True``)


def _source_type(fn: Any, default: type) -> type:
    """The source a JIT function compiles from: Gluon's ``@gluon.jit`` functions carry their own
    (layouts written out, no layout inference), Triton's the plain ``ASTSource``."""
    is_gluon = getattr(fn, "is_gluon", None)
    if callable(is_gluon) and is_gluon():
        from triton.experimental.gluon._runtime import GluonASTSource

        return GluonASTSource
    return default


def compile_request(
    req: CompileRequest, target_name: str, *, fresh: bool = True, launcher: bool = False
) -> CompileOutput:
    """Compile one recorded request for ``target_name`` (``fresh``: bypass Triton's cache, so
    ptxas runs and its log is read). ``launcher``: also build the C launcher a GPU process
    needs before its first launch of this kernel (``build_launcher``), into the same cache."""
    import triton
    from triton import knobs
    from triton.compiler import ASTSource

    target = gpu_target(target_name)
    src = _source_type(req.fn, ASTSource)(req.fn, req.signature, req.constexprs, req.attrs)
    events: list[dict[str, Any]] = []
    outer = knobs.compilation.listener

    def listener(**kw: Any) -> None:
        events.append(kw)
        if outer is not None:
            outer(**kw)

    out = io.StringIO()
    with (
        knobs.nvidia.scope(),
        knobs.compilation.scope(),
        contextlib.redirect_stdout(out),
    ):
        knobs.nvidia.dump_ptxas_log = True
        knobs.compilation.always_compile = fresh
        knobs.compilation.listener = listener
        start = time.perf_counter()
        kernel = triton.compile(src, target=target, options=dict(req.options))
        wall = time.perf_counter() - start
    launcher_error = None
    if launcher:
        try:
            build_launcher(target.backend, src, kernel.metadata)
        except Exception as exc:  # no C compiler or driver library here: the GPU process builds it
            launcher_error = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    meta = kernel.metadata._asdict()
    meta["target"] = target_name
    texts = {k: v for k, v in kernel.asm.items() if isinstance(v, str)}
    binary = kernel.asm.get("cubin") or kernel.asm.get("hsaco") or b""
    times = events[-1]["times"] if events else None
    return CompileOutput(
        texts=texts,
        binary=binary if isinstance(binary, bytes) else b"",
        metadata={k: _plain(v) for k, v in meta.items()},
        ptxas_log=out.getvalue(),
        wall_s=wall,
        stage_us=[("ir", times.ir_initialization), *times.lowering_stages] if times else [],
        cache_hit=bool(events and events[-1]["cache_hit"]),
        launcher_error=launcher_error,
    )


def _driver_module(backend: str) -> Any:
    if backend == "cuda":
        from triton.backends.nvidia import driver
    elif backend == "hip":
        from triton.backends.amd import driver
    else:
        raise ValueError(f"no Triton driver for back end {backend!r}")
    return driver


def build_launcher(backend: str, src: Any, metadata: Any) -> None:
    """Build (or find in Triton's cache) the launcher of a compiled kernel: C that Triton
    compiles with the system's compiler, keyed by the kernel's signature, and that every fresh
    process builds before its first launch. Loading it does not touch a GPU."""
    driver = _driver_module(backend)
    cls = driver.CudaLauncher if backend == "cuda" else driver.HIPLauncher
    cls(src, metadata)


def build_driver_utils(backend: str) -> None:
    """Build (or find in Triton's cache) the driver's C utilities, which a fresh process builds
    at its first Triton call on a GPU."""
    driver = _driver_module(backend)
    (driver.CudaUtils if backend == "cuda" else driver.HIPUtils)()
