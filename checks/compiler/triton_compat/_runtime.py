"""A running process's view: compile and autotune events, and the kernels it compiled."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from checks.compiler.triton_compat._live import live_config_label
from checks.compiler.triton_compat._recording import (
    _base_name,
    _target_name,
    _tuner_key,
    autotune_key,
)
from checks.compiler.triton_compat._variants import _config, _specialization, config_label


@dataclass
class CompileEvent:
    function: str
    target: str
    cache_hit: bool
    total_us: int
    stage_us: list[tuple[str, int]]
    hash: str = ""  # Triton's hash of the compiled variant: the same in every cache directory


@dataclass
class AutotuneEvent:
    function: str
    key: str
    config: str
    bench_s: float | None  # None: the key was already tuned in this process


@contextlib.contextmanager
def observe_compiles_and_autotuning() -> Iterator[tuple[list[CompileEvent], list[AutotuneEvent]]]:
    """Collect Triton's compile events (listener) and each autotuner decision while inside."""
    from triton import knobs
    from triton.runtime import autotuner

    compiles: list[CompileEvent] = []
    tunes: list[AutotuneEvent] = []
    original_run = autotuner.Autotuner.run

    def listener(*, src: Any, metadata: dict, times: Any, cache_hit: bool, **_: Any) -> None:
        target: Any = metadata.get("target")
        name = (
            _target_name(target.backend, target.arch)
            if hasattr(target, "backend")
            else _target_name(target["backend"], target["arch"])
        )
        compiles.append(
            CompileEvent(
                function=getattr(src, "name", "?"),
                target=name,
                cache_hit=cache_hit,
                total_us=int(times.total),
                # a cache hit runs no stage: its whole time is the cache lookup and load
                stage_us=(
                    [("cache_lookup", int(times.total))]
                    if cache_hit
                    else [("ir", times.ir_initialization), *times.lowering_stages]
                ),
                hash=str(metadata.get("hash") or ""),
            )
        )

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        key = autotune_key(self, args, kwargs)
        fresh = len(self.configs) > 1 and _tuner_key(self, args, kwargs) not in self.cache
        if fresh:
            self.bench_time = None
        result = original_run(self, *args, **kwargs)
        tunes.append(
            AutotuneEvent(
                function=_base_name(self),
                key=key,
                config=live_config_label(self.best_config),
                bench_s=getattr(self, "bench_time", None) if fresh else None,
            )
        )
        return result

    saved_listener = knobs.compilation.listener
    knobs.compilation.listener = listener
    autotuner.Autotuner.run = run
    try:
        yield compiles, tunes
    finally:
        knobs.compilation.listener = saved_listener
        autotuner.Autotuner.run = original_run


@dataclass
class ModuleBuild:
    """A C module Triton built or loaded from its cache: a kernel's launcher, the driver's
    utilities. Keyed by its source, as Triton's cache is."""

    name: str
    key: str
    ms: float


@contextlib.contextmanager
def observe_module_builds() -> Iterator[list[ModuleBuild]]:
    """Collect each C module the GPU drivers build (or load) while inside: a launcher is
    compiled with the system's C compiler into the Triton cache, once per distinct source, and
    Triton's compile listener does not see it."""
    import hashlib
    import importlib
    import time

    builds: list[ModuleBuild] = []
    patched: list[tuple[Any, Any]] = []
    for name in ("triton.backends.nvidia.driver", "triton.backends.amd.driver"):
        try:
            module: Any = importlib.import_module(name)
        except Exception:  # a backend this Triton lacks, or cannot import here
            continue
        original = getattr(module, "compile_module_from_src", None)
        if original is None:
            continue

        def timed(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            src = kwargs.get("src", args[0] if args else "")
            start = time.perf_counter()
            try:
                return _original(*args, **kwargs)
            finally:
                builds.append(
                    ModuleBuild(
                        name=str(kwargs.get("name", args[1] if len(args) > 1 else "")),
                        key=hashlib.sha256(str(src).encode()).hexdigest()[:16],
                        ms=round((time.perf_counter() - start) * 1000.0, 3),
                    )
                )

        module.compile_module_from_src = timed
        patched.append((module, original))
    try:
        yield builds
    finally:
        for module, original in patched:
            module.compile_module_from_src = original


def find_kernels(modules: list[Any]) -> list[Any]:
    """The Triton kernels (JIT functions, autotuners, heuristics) defined at module level."""
    from triton.runtime.jit import KernelInterface

    found: list[Any] = []
    for module in modules:
        for value in list(vars(module).values()):
            if isinstance(value, KernelInterface) and value not in found:
                found.append(value)
    return found


def forget_compiled(kernels: list[Any]) -> None:
    """Drop the in-process compiled kernels and autotuner choices, as a fresh process has none."""
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    for kernel in kernels:
        node = kernel
        while node is not None:
            if isinstance(node, Autotuner):
                node.cache.clear()
            if isinstance(node, JITFunction):
                node.device_caches.clear()
            node = getattr(node, "fn", None)
            if not hasattr(node, "run"):
                break


def compiled_variants(kernels: list[Any]) -> list[dict[str, Any]]:
    """What this process compiled and loaded, with the driver's own numbers (needs a GPU):
    ``n_regs`` and ``n_spills`` (Triton's: local memory size / 4), keyed like the report
    (``function``, ``config_label``, ``specialization``)."""
    from triton.runtime.jit import JITFunction

    jits: list[Any] = []
    for kernel in kernels:
        node = kernel
        while node is not None and not isinstance(node, JITFunction):
            node = getattr(node, "fn", None)
        if node is not None and node not in jits:
            jits.append(node)
    out = []
    for jit in jits:
        for device, cache in list(jit.device_caches.items()):
            if isinstance(device, str):  # a compile-only device key
                continue
            for compiled in list(cache[0].values()):
                if not hasattr(compiled, "metadata"):
                    continue
                compiled._init_handles()
                src, meta = compiled.src, compiled.metadata
                options = {"num_warps": meta.num_warps, "num_stages": meta.num_stages}
                constexprs = dict(src.constants)
                out.append(
                    {
                        "function": jit.__name__,
                        "config_label": config_label(_config(jit, constexprs, options, {})),
                        "specialization": _specialization(
                            jit,
                            dict(src.signature),
                            constexprs,
                            dict(src.attrs),
                            set(jit.constexprs),
                        ),
                        "n_regs": int(compiled.n_regs),
                        "n_spills": int(compiled.n_spills),
                        "shared_bytes": int(meta.shared),
                        "num_warps": int(meta.num_warps),
                        "hash": compiled.hash,
                    }
                )
    return out
