"""Everything that touches Triton's internals lives here, checked against Triton 3.6.x.

What it relies on (``triton/runtime/jit.py``, ``runtime/autotuner.py``, ``compiler/compiler.py``,
``knobs.py``):

- ``triton.runtime.driver.driver`` holds the active driver; ``JITFunction.run`` asks it for the
  current device, stream and ``GPUTarget``, and builds one binder per device key. A compile-only
  driver that answers with a chosen target lets a real call site specialise its arguments
  (types, divisibility by 16, AMD's 2 GB pointer range) exactly as it would on that GPU.
- ``knobs.runtime.jit_cache_hook`` is called before each compile with the signature,
  constexprs, attributes and full options (in ``specialization_data``); returning True skips the
  compile and the launch. The hook records a :class:`CompileRequest` and returns True.
- ``Autotuner.run`` would benchmark; while recording it is replaced by a loop that sends each
  config (after ``early_config_prune``) to the kernel once. ``Heuristics.run`` is wrapped to note
  the values it sets.
- ``triton.compile(ASTSource(...), target=GPUTarget(...), options=...)`` compiles for any target
  on a CPU. ``knobs.nvidia.dump_ptxas_log`` prints ptxas' ``-v`` log; ``knobs.compilation.listener``
  reports per-stage times and whether Triton's cache answered.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import io
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from bot.errors import CompilerError
from checks.occupancy import AMD_ARCHS, NVIDIA_ARCHS, parse_target

SUPPORTED_SERIES = ((3, 6),)


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
    parts = version.split("+")[0].split(".")
    try:
        series = (int(parts[0]), int(parts[1]))
    except (IndexError, ValueError) as exc:
        raise CompilerError(f"cannot read the Triton version {version!r}") from exc
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
    if vendor == "nvidia":
        return GPUTarget("cuda", arch, 32)
    gfx = str(arch)
    major = int(gfx[3:-2]) if gfx[3:-2].isdigit() else 9
    return GPUTarget("hip", gfx, 32 if major >= 10 else 64)


def backend_hash(name: str) -> str:
    """The compiler back end's own version key (ptxas version for NVIDIA, LLVM for AMD)."""
    from triton.compiler.compiler import make_backend

    return str(make_backend(gpu_target(name)).hash())


def warm_up() -> None:
    """Pay Triton's one-off compile set-up (hashing its own sources) in this process."""
    from triton.runtime.cache import triton_key

    triton_key()


def nvidia_tool(binary: str) -> str:
    """Path of a tool the Triton wheel ships (``ptxas``, ``cuobjdump``, ``nvdisasm``)."""
    from triton import knobs

    return str(getattr(knobs.nvidia, binary).path)


# --------------------------------------------------------------------- compile-only recording


@dataclass
class CompileRequest:
    """One compile a call site asked for, for one target: everything ``triton.compile`` needs."""

    fn: Any
    function: str
    signature: dict[str, str]
    constexprs: dict[tuple[int, ...], Any]
    attrs: dict[tuple[int, ...], Any]
    options: dict[str, Any]
    config: dict[str, Any]
    autotuned: bool
    autotune_key: str | None = None
    error: str | None = None
    specialization: str = ""  # e.g. "x_ptr:*fp32/16, n:i32, stride_bn=1"
    call: tuple | None = field(default=None, repr=False)  # (args, kwargs, grid) while recording

    @property
    def label(self) -> str:
        return config_label(self.config)

    def cache_key(self, target: str) -> str:
        """Source (with dependencies) + specialization + options + target + toolchain."""
        import triton

        parts = [
            triton.__version__,
            target,
            backend_hash(target),
            self.fn.cache_key if self.fn is not None else self.function,
            json.dumps(self.signature, sort_keys=True),
            repr(sorted((k, _plain(v)) for k, v in self.constexprs.items())),
            repr(sorted(self.attrs.items())),
            repr(sorted(self.options.items())),
            self.error or "",
        ]
        return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def config_label(config: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items())


@dataclass
class _Context:
    tuned: dict[str, Any] = field(default_factory=dict)
    autotuned: bool = False
    autotune_key: str | None = None


_CONTEXT: contextvars.ContextVar[_Context | None] = contextvars.ContextVar(
    "kernel_review_compile_context", default=None
)
# the arguments of the JIT call being recorded: (args, kwargs, grid)
_CALL: contextvars.ContextVar[tuple | None] = contextvars.ContextVar(
    "kernel_review_jit_call", default=None
)
_OPTION_KNOBS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


class _Properties:
    def __init__(self, target: Any) -> None:
        self._target = target

    def get_device_properties(self, device: Any = None) -> dict[str, int]:
        vendor, arch = parse_target(_target_name(self._target))
        if vendor == "nvidia":
            a = NVIDIA_ARCHS.get(int(arch)) or NVIDIA_ARCHS[90]
            return {
                "max_shared_mem": a.shared_per_block_bytes,
                "max_num_regs": a.regs_per_sm,
                "multiprocessor_count": a.sm_count,
                "warpSize": 32,
                "sm_clock_rate": 0,
                "mem_clock_rate": 0,
                "mem_bus_width": 0,
            }
        b = AMD_ARCHS.get(str(arch)) or AMD_ARCHS["gfx942"]
        return {
            "max_shared_mem": b.lds_per_cu_bytes,
            "max_num_regs": b.vgprs_per_simd_lane * b.wave_size * b.simds_per_cu,
            "multiprocessor_count": b.cu_count,
            "warpSize": self._target.warp_size,
            "sm_clock_rate": 0,
            "mem_clock_rate": 0,
            "mem_bus_width": 0,
        }


class _CompileOnlyDriver:
    """Answers JITFunction.run as a GPU of the chosen target would; launches nothing."""

    def __init__(self, target: Any) -> None:
        self.target = target
        self.device = f"compile-only:{target.backend}:{target.arch}"
        self.utils = _Properties(target)

    @classmethod
    def is_active(cls) -> bool:
        return False

    def get_current_target(self) -> Any:
        return self.target

    def get_current_device(self) -> str:
        return self.device

    def set_current_device(self, device: Any) -> None:
        return None

    def get_current_stream(self, device: Any = None) -> int:
        return 0

    def get_device_capability(self, device: Any = None) -> tuple[int, int]:
        if self.target.backend == "cuda":
            return divmod(int(self.target.arch), 10)
        return (9, 4)

    def get_active_torch_device(self) -> Any:
        import torch

        return torch.device("cpu")

    def get_benchmarker(self) -> Callable[..., Any]:
        raise RuntimeError("a compile-only run does not benchmark")

    def map_python_to_cpp_type(self, ty: str) -> str:
        return ty


def _target_name(target: Any) -> str:
    return f"sm_{target.arch}" if target.backend == "cuda" else str(target.arch)


def _plain(value: Any) -> Any:
    """A JSON-able stand-in for a constexpr value (dtypes become their names)."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return str(value)


def _tupled(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tupled(v) for v in value)
    return value


def _specialization(
    jit: Any, signature: dict[str, str], constexprs: dict, attrs: dict, declared: set[int]
) -> str:
    """How Triton specialised the non-constexpr arguments: types, 16-byte divisibility (``/16``)
    and integers fixed to 1 (``=1``)."""
    parts = []
    for i, name in enumerate(jit.arg_names):
        if i in declared:
            continue
        ty = signature.get(name, "?")
        if ty == "constexpr":
            parts.append(f"{name}={_plain(constexprs.get((i,)))}")
            continue
        hints = attrs.get((i,), [])
        div = any(h[0] == "tt.divisibility" for h in hints)
        parts.append(f"{name}:{ty}{'/16' if div else ''}")
    return ", ".join(parts)


def _arg_name(fn: Any, path: tuple[int, ...]) -> str:
    name = fn.arg_names[path[0]]
    return name + "".join(f"[{i}]" for i in path[1:])


def _config(jit: Any, constexprs: dict, options: dict, tuned: dict[str, Any]) -> dict[str, Any]:
    """What picks this variant: the declared constexprs, the autotune/heuristic values that are
    not kernel arguments (e.g. ``matrix_instr_nonkdim``), ``num_warps`` and ``num_stages``, and
    other options only where a config set them to something other than the default."""
    declared = set(jit.constexprs)
    config: dict[str, Any] = {}
    for path, value in constexprs.items():
        if path[0] in declared and isinstance(value, (bool, int, float, str)):
            config[_arg_name(jit, path)] = value
    for name, value in tuned.items():
        if name not in jit.arg_names and name not in _OPTION_KNOBS and value is not None:
            config[name] = _plain(value)
    for knob in _OPTION_KNOBS:
        value = options.get(knob)
        if knob in ("num_warps", "num_stages") or (knob in tuned and value not in (None, 0, 1)):
            config[knob] = value
    return config


class Recorder:
    """Collects the compile requests of every Triton call made inside :func:`compile_only`."""

    def __init__(self, target_name: str) -> None:
        self.target_name = target_name
        self.requests: list[CompileRequest] = []
        self.functions: list[Any] = []

    def hook(self, *, key: Any, repr: str, fn: Any, compile: dict, **_: Any) -> bool:
        jit = fn.jit_function
        data = json.loads(compile["specialization_data"])
        options = {k: _tupled(v) for k, v in data["options"].items()}
        ctx = _CONTEXT.get() or _Context()
        constexprs = dict(compile["constants"])
        attrs = dict(compile["configs"][0])
        signature = dict(compile["signature"])
        spec = _specialization(jit, signature, constexprs, attrs, set(jit.constexprs))
        request = CompileRequest(
            fn=jit,
            function=jit.__name__,
            signature=signature,
            constexprs=constexprs,
            attrs=attrs,
            options=options,
            config=_config(jit, constexprs, options, ctx.tuned),
            specialization=spec,
            autotuned=ctx.autotuned,
            autotune_key=ctx.autotune_key,
        )
        request.call = _CALL.get()
        self.requests.append(request)
        if jit not in self.functions:
            self.functions.append(jit)
        return True

    def failed(self, function: str, config: dict[str, Any], ctx: _Context, exc: Exception) -> None:
        self.requests.append(
            CompileRequest(
                fn=None,
                function=function,
                signature={},
                constexprs={},
                attrs={},
                options={},
                config={k: _plain(v) for k, v in config.items() if v is not None},
                autotuned=ctx.autotuned,
                autotune_key=ctx.autotune_key,
                error=f"{type(exc).__name__}: {exc}".splitlines()[0][:500],
            )
        )

    def expand_autotuned(self, kernels: list[Any], start: int = 0) -> None:
        """Send the other configs of an autotuner to a call that bypassed it.

        Code that launches ``kernel.fn`` with one config off the GPU (there is nothing to time)
        still ships the autotuner: when a recorded call's config belongs to a module-level
        autotuner of the same kernel, the rest of that autotuner's configs are recorded with the
        same arguments, as autotuning on the GPU would compile them.
        """
        tuners = _autotuners(kernels)
        for req in list(self.requests[start:]):
            if req.autotuned or req.fn is None or req.call is None:
                continue
            for tuner, jit in tuners:
                match = next((c for c in tuner.configs if _matches(c, req)), None)
                if jit is not req.fn or match is None:
                    continue
                args, kwargs, grid = req.call
                used = match.all_kwargs()
                rest = {k: v for k, v in kwargs.items() if k not in used}
                key = autotune_key(tuner, args, rest)
                req.autotuned, req.autotune_key = True, key
                req.config = _config(req.fn, req.constexprs, req.options, used)
                for cfg in tuner.configs:
                    if cfg is match:
                        continue
                    ctx = _Context(tuned=cfg.all_kwargs(), autotuned=True, autotune_key=key)
                    token = _CONTEXT.set(ctx)
                    try:
                        req.fn.run(*args, grid=grid, warmup=False, **rest, **cfg.all_kwargs())
                    except Exception as exc:
                        self.failed(req.function, ctx.tuned, ctx, exc)
                    finally:
                        _CONTEXT.reset(token)
                break


def _autotuners(kernels: list[Any]) -> list[tuple[Any, Any]]:
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    found = []
    for kernel in kernels:
        node, tuner = kernel, None
        while node is not None and not isinstance(node, JITFunction):
            if isinstance(node, Autotuner) and tuner is None:
                tuner = node
            node = getattr(node, "fn", None)
        if tuner is not None and node is not None:
            found.append((tuner, node))
    return found


def _matches(cfg: Any, req: CompileRequest) -> bool:
    names = {_arg_name(req.fn, p): v for p, v in req.constexprs.items()}
    for k, v in cfg.all_kwargs().items():
        if k in req.fn.arg_names:
            if names.get(k) != v:
                return False
        elif k in req.options and req.options[k] != v:
            return False
    return True


def _tuner_key(tuner: Any, args: tuple, kwargs: dict) -> tuple:
    named = {**dict(zip(tuner.arg_names, args, strict=False)), **kwargs}
    named = {k: v for k, v in named.items() if k in tuner.arg_names}
    key = [named[k] for k in tuner.keys if k in named]
    key += [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
    return tuple(key)


def autotune_key(tuner: Any, args: tuple, kwargs: dict) -> str:
    """The key the autotuner caches its choice under (as ``Autotuner.run`` computes it)."""
    return repr(_tuner_key(tuner, args, kwargs))


def _base_name(kernel: Any) -> str:
    fn = kernel
    while hasattr(fn, "fn"):
        fn = fn.fn
    return getattr(fn, "__name__", str(fn))


def _recording_autotuner_run(recorder: Recorder) -> Callable[..., Any]:
    def run(self: Any, *args: Any, **kwargs: Any) -> None:
        self.nargs = dict(zip(self.arg_names, args, strict=False))
        key = autotune_key(self, args, kwargs)
        configs = list(self.configs)
        if self.early_config_prune:
            with contextlib.suppress(Exception):
                configs = list(self.early_config_prune(self.configs, self.nargs, **kwargs))
        outer = _CONTEXT.get() or _Context()
        for cfg in configs:
            tuned = {**outer.tuned, **cfg.all_kwargs()}
            ctx = _Context(tuned=tuned, autotuned=True, autotune_key=key)
            token = _CONTEXT.set(ctx)
            try:
                self.fn.run(*args, **kwargs, **cfg.all_kwargs())
            except Exception as exc:
                recorder.failed(_base_name(self), tuned, ctx, exc)
            finally:
                _CONTEXT.reset(token)
        self.nargs = None
        return None

    return run


def _recording_heuristics_run(self: Any, *args: Any, **kwargs: Any) -> Any:
    outer = _CONTEXT.get() or _Context()
    tuned = dict(outer.tuned)
    for name, heur in self.values.items():
        kwargs[name] = heur({**dict(zip(self.arg_names, args, strict=False)), **kwargs})
        tuned[name] = kwargs[name]
    token = _CONTEXT.set(_Context(tuned, outer.autotuned, outer.autotune_key))
    try:
        return self.fn.run(*args, **kwargs)
    finally:
        _CONTEXT.reset(token)


@contextlib.contextmanager
def compile_only(target_name: str) -> Iterator[Recorder]:
    """Make ``target_name`` the active GPU for Triton without launching anything.

    Import the user's modules and call their entry points inside this block: every
    ``kernel[grid](...)`` is specialised for the target and recorded instead of compiled and
    launched; autotuned kernels send each of their configs once.
    """
    from triton import knobs
    from triton.runtime import autotuner, jit
    from triton.runtime.driver import driver

    if knobs.runtime.interpret:
        raise CompilerError(
            "TRITON_INTERPRET=1 is set, so Triton kernels are interpreted, not compiled",
            hint="unset TRITON_INTERPRET for the compiler report",
        )
    target = gpu_target(target_name)
    recorder = Recorder(target_name)
    compile_driver = _CompileOnlyDriver(target)
    saved = (
        driver._active,
        knobs.runtime.jit_cache_hook,
        autotuner.Autotuner.run,
        autotuner.Heuristics.run,
        jit.JITFunction.run,
    )
    original_jit_run = saved[4]

    def jit_run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        token = _CALL.set((args, dict(kwargs), grid))
        try:
            return original_jit_run(self, *args, grid=grid, warmup=warmup, **kwargs)
        finally:
            _CALL.reset(token)

    driver.set_active(compile_driver)
    knobs.runtime.jit_cache_hook = recorder.hook
    autotuner.Autotuner.run = _recording_autotuner_run(recorder)
    autotuner.Heuristics.run = _recording_heuristics_run
    jit.JITFunction.run = jit_run
    try:
        yield recorder
    finally:
        driver._active = saved[0]
        knobs.runtime.jit_cache_hook = saved[1]
        autotuner.Autotuner.run = saved[2]
        autotuner.Heuristics.run = saved[3]
        jit.JITFunction.run = saved[4]
        for fn in recorder.functions:
            fn.device_caches.pop(compile_driver.device, None)


# ----------------------------------------------------------------------------------- compiling


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


def compile_request(req: CompileRequest, target_name: str, *, fresh: bool = True) -> CompileOutput:
    """Compile one recorded request for ``target_name`` (``fresh``: bypass Triton's cache, so
    ptxas runs and its log is read)."""
    import triton
    from triton import knobs
    from triton.compiler import ASTSource

    target = gpu_target(target_name)
    src = ASTSource(req.fn, req.signature, req.constexprs, req.attrs)
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
    )


# ------------------------------------------------------------------- first-call instrumentation


@dataclass
class CompileEvent:
    function: str
    target: str
    cache_hit: bool
    total_us: int
    stage_us: list[tuple[str, int]]


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
        target = metadata.get("target")
        name = (
            _target_name(target)
            if hasattr(target, "backend")
            else (f"sm_{target['arch']}" if target.get("backend") == "cuda" else target["arch"])
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
                config=str(self.best_config),
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


def set_cache_dir(path: str) -> None:
    """Point Triton's on-disk kernel cache at ``path`` (read at each compile)."""
    from triton import knobs

    os.makedirs(path, exist_ok=True)
    knobs.cache.dir = path
