"""Recording what a real call site asks the compiler for, on a compile-only driver."""

from __future__ import annotations

import contextlib
import contextvars
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from bot.errors import CompilerError
from checks.compiler.targets import target_for
from checks.compiler.triton_compat._targets import gpu_target
from checks.compiler.triton_compat._variants import (
    _OPTION_KNOBS,
    CompileRequest,
    _arg_name,
    _config,
    _plain,
    _specialization,
    _tupled,
)


@dataclass
class _Context:
    tuned: dict[str, Any] = field(default_factory=dict)
    autotuned: bool = False
    autotune_key: str | None = None
    refused: str | None = None  # the back end refused a config option; recorded without it


_CONTEXT: contextvars.ContextVar[_Context | None] = contextvars.ContextVar(
    "kernel_review_compile_context", default=None
)
# the arguments of the JIT call being recorded: (args, kwargs, grid)
_CALL: contextvars.ContextVar[tuple | None] = contextvars.ContextVar(
    "kernel_review_jit_call", default=None
)


class _Properties:
    def __init__(self, target: Any) -> None:
        self._target = target

    def get_device_properties(self, device: Any = None) -> dict[str, int]:
        vendor = target_for(self._target.backend)
        return vendor.device_properties(self._target.arch, self._target.warp_size)


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
        return target_for(self.target.backend).device_capability(self.target.arch)

    def get_active_torch_device(self) -> Any:
        import torch

        return torch.device("cpu")

    def get_benchmarker(self) -> Callable[..., Any]:
        raise RuntimeError("a compile-only run does not benchmark")

    def map_python_to_cpp_type(self, ty: str) -> str:
        return ty


def _target_name(backend: str, arch: Any) -> str:
    """The target name of a Triton back end's architecture: ("cuda", 90) -> "sm_90"."""
    return target_for(backend).target_name(arch)


class Recorder:
    """Collects the compile requests of every Triton call made inside :func:`compile_only`."""

    def __init__(self, target_name: str) -> None:
        self.target_name = target_name
        self.requests: list[CompileRequest] = []
        self.functions: list[Any] = []
        self.tuners: list[Any] = []  # the autotuners the calls went through, in order

    def tuned_by(self, tuner: Any) -> None:
        if tuner not in self.tuners:
            self.tuners.append(tuner)

    def hook(self, *, key: Any, repr: str, fn: Any, compile: dict, **_: Any) -> bool:
        jit = fn.jit_function
        data = json.loads(compile["specialization_data"])
        options = {k: _tupled(v) for k, v in data["options"].items()}
        ctx = _CONTEXT.get() or _Context()
        constexprs = dict(compile["constants"])
        attrs = dict(compile["configs"][0])
        signature = dict(compile["signature"])
        spec = _specialization(jit, signature, constexprs, attrs, set(jit.constexprs))
        config = _config(jit, constexprs, options, ctx.tuned)
        if ctx.refused:  # the config as written names the option the back end refused
            config.update(
                {
                    k: _plain(v)
                    for k, v in ctx.tuned.items()
                    if k in _OPTION_KNOBS and k not in options
                }
            )
        request = CompileRequest(
            fn=jit,
            function=jit.__name__,
            signature=signature,
            constexprs=constexprs,
            attrs=attrs,
            options=options,
            config=config,
            specialization=spec,
            autotuned=ctx.autotuned,
            autotune_key=ctx.autotune_key,
            refused=ctx.refused,
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
                self.tuned_by(tuner)
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
        recorder.tuned_by(self)
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
            except KeyError as exc:
                _run_without_refused(self, args, kwargs, cfg.all_kwargs(), ctx, exc, recorder)
            except Exception as exc:
                recorder.failed(_base_name(self), tuned, ctx, exc)
            finally:
                _CONTEXT.reset(token)
        self.nargs = None
        return None

    return run


def _run_without_refused(
    tuner: Any,
    args: tuple,
    kwargs: dict,
    knobs: dict[str, Any],
    ctx: _Context,
    exc: KeyError,
    recorder: Recorder,
) -> None:
    """A config option the target's back end does not take (``maxnreg`` on AMD): Triton refuses
    the launch with a KeyError. Record that, and compile the config without the option, so the
    report can say what the kernel uses there."""
    text = str(exc)
    refused = [k for k in _OPTION_KNOBS if k in knobs and f"argument {k} was" in text]
    if not refused:
        recorder.failed(_base_name(tuner), ctx.tuned, ctx, exc)
        return
    kept = {k: v for k, v in knobs.items() if k not in refused}
    token = _CONTEXT.set(
        _Context(ctx.tuned, ctx.autotuned, ctx.autotune_key, f"KeyError: {text.strip(chr(39))}")
    )
    try:
        tuner.fn.run(*args, **kwargs, **kept)
    except Exception as again:
        recorder.failed(_base_name(tuner), ctx.tuned, ctx, again)
    finally:
        _CONTEXT.reset(token)


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
