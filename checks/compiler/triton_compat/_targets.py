"""Supported Triton versions, compile targets, and Triton's own tools and set-up."""

from __future__ import annotations

import os
from typing import Any

from bot.errors import CompilerError
from bot.toolchain.requirements import series as release_series
from checks.compiler.targets import parse_target

SUPPORTED_SERIES = ((3, 5), (3, 6))


def check_triton_version(version: str | None = None) -> str:
    """The installed (or given) Triton version, if this module supports it; else CompilerError."""
    if version is None:
        try:
            import triton
        except ImportError as exc:
            raise CompilerError(
                "Triton is not installed",
                hint="install the measuring extra: pip install 'kernel-review[gpu]'",
            ) from exc
        version = triton.__version__
    series = release_series(version)
    if series is None:
        raise CompilerError(
            f"cannot read the Triton version {version!r} (not a PEP 440 version)",
            hint="reinstall Triton from a release: pip install 'kernel-review[gpu]'",
        )
    if series not in SUPPORTED_SERIES:
        wanted = ", ".join(f"{a}.{b}.x" for a, b in SUPPORTED_SERIES)
        raise CompilerError(
            f"Triton {version} is not supported by the compiler report (supported: {wanted})",
            hint=f"install a supported Triton (pip install 'triton>={SUPPORTED_SERIES[0][0]}."
            f"{SUPPORTED_SERIES[0][1]},<{SUPPORTED_SERIES[-1][0]}.{SUPPORTED_SERIES[-1][1] + 1}')",
        )
    return version


def gpu_target(name: str) -> Any:
    """``sm_90`` -> ``GPUTarget("cuda", 90, 32)``; ``gfx942`` -> ``GPUTarget("hip", "gfx942", 64)``."""
    from triton.backends.compiler import GPUTarget

    vendor, arch = parse_target(name)
    return GPUTarget(*vendor.triton_target(arch))


def backend_hash(name: str) -> str:
    """The compiler back end's own version key (ptxas version for NVIDIA, LLVM for AMD)."""
    from triton.compiler.compiler import make_backend

    return str(make_backend(gpu_target(name)).hash())


def warm_up(*, gpu: bool = False, kept_key: bool = True) -> None:
    """Pay Triton's one-off set-up in this process: its key (every compile and every cache
    lookup needs it; with ``kept_key``, taken from where an earlier run kept it,
    ``checks/worker/triton_key.py``, else made as any process of Triton's makes it), importing
    the code generator and, on a GPU, creating the driver (which builds its C utilities on first
    use when the cache is empty)."""
    import triton.compiler.code_generator  # noqa: F401

    if kept_key:
        from bot.outputs import triton_key_dir
        from checks.worker import triton_key

        triton_key.warm(str(triton_key_dir()))
    else:
        from triton.runtime.cache import triton_key as tritons_own

        tritons_own()
    if gpu:
        from triton.runtime.driver import driver

        driver.active.get_current_target()
        _ = driver.active.utils


def nvidia_tool(binary: str) -> str:
    """Path of a tool the Triton wheel ships (``ptxas``, ``cuobjdump``, ``nvdisasm``)."""
    from triton import knobs

    return str(getattr(knobs.nvidia, binary).path)


def set_cache_dir(path: str) -> None:
    """Point Triton's on-disk kernel cache at ``path`` (read at each compile)."""
    from triton import knobs

    os.makedirs(path, exist_ok=True)
    knobs.cache.dir = path
