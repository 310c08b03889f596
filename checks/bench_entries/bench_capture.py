"""Benchmarks a repository already has, run as bench entry points inside the worker.

A policy may name, instead of a hand-written entry point (``module:function``, see
docs/bench-entry.md), a benchmark the repository already keeps:

- ``perf_report:PATH:NAME[@PROVIDER]``: ``NAME`` in the file ``PATH`` is a
  ``triton.testing.perf_report`` benchmark. A shape gives its ``x_names`` their values (a
  one-dimensional shape gives every x name the same value, as ``x_vals`` of scalars do),
  ``PROVIDER`` is the ``line_vals`` entry passed as ``line_arg``, and ``args`` are kept.
- ``do_bench:PATH:FUNCTION``: ``FUNCTION(*shape)`` builds its inputs and times its kernel with
  ``triton.testing.do_bench``.

In both, a ``dtype`` parameter of the benchmark function receives the case's dtype (a
``torch.dtype``, or the name where the benchmark's ``args`` or the parameter's default give it
as a string), and a
``device`` parameter the worker's device. The function is run with ``do_bench`` (and
``do_bench_cudagraph``) swapped for a capture: the first callable it would time is the case's
``fn``, and the benchmark stops there, so nothing after the timing runs. The tensors that
callable closes over are the case's ``inputs``. The file is loaded under a private name (its
``__main__`` block does not run) with ``perf_report(...).run`` made a no-op, so a script that
runs its sweep at import times nothing.

The checkout's code is imported (``load_entry``) with the top-level names of the bot's own
packages (``bot``, ``checks``, ``kernels_fixture``) given to the checkout: a repository with a
package of one of those names imports its own, and the helper programs that run as ``python -m
checks...`` (the compiler report, the first-call probe, compiling ahead) keep theirs.

The other forms a repository's benchmarks take (pytest-benchmark, asv, ``torch.utils.benchmark``
Timer) are run by ``bench_forms.py`` beside this file.

Standard library only, loaded by file path by ``main.py``; triton and torch are the measured
repository's own imports, looked up when a case is built.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import os
import re
import sys
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

# the bot's own top-level packages, and the folder they are installed in (this file is
# checks/bench_entries/bench_capture.py under it)
OWN_PACKAGES = ("bot", "checks", "kernels_fixture")
HOME = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# the checkout's own modules under those names, kept aside while the bot's are in place
_CHECKOUT_MODULES: dict[str, ModuleType] = {}
FORMS = ("perf_report", "do_bench")
SPEC_RE = re.compile(
    r"^(?P<form>perf_report|do_bench):(?P<path>[^:@\s]+\.py):(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"(@(?P<provider>[^:@\s]+))?$"
)
TIMERS = ("do_bench", "do_bench_cudagraph")


class NotFound(Exception):
    """The benchmark named by a spec is not in this checkout."""


class BadBenchmark(Exception):
    """The benchmark exists but cannot be run as a bench entry point; the message says why."""


class _Captured(BaseException):
    # BaseException: a benchmark's own ``except Exception`` around do_bench must not swallow it.
    def __init__(self, fn: Callable[[], Any]) -> None:
        super().__init__("captured")
        self.fn = fn


def is_file_spec(spec: str) -> bool:
    """Whether ``spec`` names a benchmark by file (``perf_report:...``, ``do_bench:...`` or one
    of ``bench_forms.FORMS``)."""
    return spec.partition(":")[0] in FORMS + _forms().FORMS


def _forms() -> ModuleType:
    """``bench_forms.py``, loaded once by file path (this module is loaded either way)."""
    name = "_kernel_review_worker_bench_forms"
    if name not in sys.modules:
        where = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_forms.py")
        spec = importlib.util.spec_from_file_location(name, where)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def load_file(root: str, path: str) -> Any:
    """The module in ``root/path``, loaded once under a private name (not as ``__main__``, so its
    ``if __name__ == "__main__":`` block does not run). Its folder is importable after the
    checkout, for benchmarks that import their neighbours; in a package (a folder with an
    ``__init__.py``), its relative imports are of that package's modules."""
    full = os.path.normpath(os.path.join(root, path))
    if not full.startswith(os.path.join(os.path.normpath(root), "")):
        raise NotFound(f"{path} is outside the checkout")
    if not os.path.isfile(full):
        raise NotFound(f"no file {path} in this checkout")
    name = "_kernel_review_bench_" + re.sub(r"\W", "_", os.path.relpath(full, root))
    if name in sys.modules:
        return sys.modules[name]
    folder = os.path.dirname(full)
    if folder not in sys.path:
        sys.path.append(folder)
    spec = importlib.util.spec_from_file_location(name, full)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    package = os.path.relpath(folder, root)
    if package != "." and os.path.isfile(os.path.join(folder, "__init__.py")):
        module.__package__ = package.replace(os.sep, ".")  # ``from . import base`` works
    sys.modules[name] = module
    try:
        with _no_report_runs():
            spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load_package_module(root: str, path: str) -> Any:
    """The module in ``root/path`` imported by its dotted name, from the highest folder above it
    that still has an ``__init__.py`` (``tritonbench/operators/softmax/operator.py`` as
    ``tritonbench.operators.softmax.operator``): for code that reads its own ``__module__``. A
    file outside a package is loaded as ``load_file`` loads it."""
    full = os.path.normpath(os.path.join(root, path))
    if not full.startswith(os.path.join(os.path.normpath(root), "")):
        raise NotFound(f"{path} is outside the checkout")
    if not os.path.isfile(full):
        raise NotFound(f"no file {path} in this checkout")
    parts = [os.path.splitext(os.path.basename(full))[0]]
    folder = os.path.dirname(full)
    while os.path.isfile(os.path.join(folder, "__init__.py")) and folder != os.path.normpath(root):
        parts.insert(0, os.path.basename(folder))
        folder = os.path.dirname(folder)
    if len(parts) == 1 or not all(p.isidentifier() for p in parts):
        return load_file(root, path)
    if folder not in sys.path:
        sys.path.append(folder)
    with _no_report_runs():
        return importlib.import_module(".".join(parts))


@contextlib.contextmanager
def _no_report_runs() -> Iterator[None]:
    """``perf_report(...).run(...)`` does nothing while a benchmark file is loaded: a script
    that runs its sweep at import (no ``__main__`` guard) must not time anything here."""
    try:
        import triton.testing as testing
    except ImportError:
        yield
        return
    mark = getattr(testing, "Mark", None)
    original = getattr(mark, "run", None)
    if mark is None or original is None:
        yield
        return
    mark.run = lambda self, *args, **kwargs: None
    try:
        yield
    finally:
        mark.run = original


def _own_name(name: str) -> bool:
    return name.partition(".")[0] in OWN_PACKAGES


def _is_bots(module: ModuleType) -> bool:
    """Whether ``module`` is one of the bot's own (installed under ``HOME``), not the checkout's."""
    where = getattr(module, "__file__", None) or next(iter(getattr(module, "__path__", ())), "")
    top = module.__name__.partition(".")[0]
    return bool(where) and os.path.abspath(where).startswith(os.path.join(HOME, top, ""))


@contextlib.contextmanager
def checkout_names() -> Iterator[None]:
    """While the checkout's code is imported, ``bot``, ``checks`` and ``kernels_fixture`` are the
    checkout's own (its modules of those names imported before come back); after, the bot's
    again. The bot's modules stay loaded throughout: what its code has bound keeps working.
    Nothing changes where no module of those names is loaded (a sweep's worker)."""
    bots = {n: m for n, m in sys.modules.items() if _own_name(n) and _is_bots(m)}
    for name in bots:
        del sys.modules[name]
    sys.modules.update(_CHECKOUT_MODULES)
    try:
        yield
    finally:
        for name in [n for n in sys.modules if _own_name(n)]:
            module = sys.modules.pop(name)
            if not _is_bots(module):
                _CHECKOUT_MODULES[name] = module
        sys.modules.update(bots)


def checkout_modules() -> list[ModuleType]:
    """The checkout's modules that ``checkout_names`` keeps aside (they hold kernels too)."""
    return list(_CHECKOUT_MODULES.values())


def entry_name(spec: str) -> str:
    """The function or benchmark a spec names (``NAME`` of ``module:NAME`` and of the file
    forms), for messages."""
    match = SPEC_RE.match(spec) or _forms().SPEC_RE.match(spec)
    return match["name"] if match else spec.rpartition(":")[2]


def load_entry(spec: str, root: str) -> Callable[..., dict[str, Any]]:
    """The bench entry point ``spec`` names, in either form: a file form through ``entry_for``,
    ``module:function`` imported (``root`` must already be importable). The sweep's worker, the
    compiler report and the first-call probe all resolve an entry point here, the checkout's
    code imported under ``checkout_names``."""
    with checkout_names():
        return _load_entry(spec, root)


def _load_entry(spec: str, root: str) -> Callable[..., dict[str, Any]]:
    if is_file_spec(spec):
        return entry_for(spec, root)
    module, _, name = spec.partition(":")
    target = getattr(importlib.import_module(module), name, None)
    if target is None:
        raise NotFound(f"module {module!r} has no {name!r}")
    return target


def first_entry(candidates: list[str], root: str) -> tuple[str, Callable[..., dict[str, Any]]]:
    """The first of ``candidates`` this checkout has, with its spec: the policy's ``bench``,
    then the fallbacks. ``NotFound`` naming why each is missing; ``BadBenchmark`` (with the
    spec) as ``load_entry`` raises it. A missing module counts as missing only when it is the entry's own
    (an import the entry's module makes that fails is the entry's error)."""
    missing = []
    for spec in candidates:
        try:
            return spec, load_entry(spec, root)
        except NotFound as exc:
            missing.append(f"{spec} ({exc})")
        except BadBenchmark as exc:
            raise BadBenchmark(f"{spec}: {exc}") from None
        except ModuleNotFoundError as exc:
            module = spec.partition(":")[0]
            if not (exc.name and (module == exc.name or module.startswith(exc.name + "."))):
                raise
            missing.append(f"{spec} (no module {exc.name!r} in this checkout)")
    raise NotFound("entry point not found: " + "; ".join(missing))


def entry_for(spec: str, root: str) -> Callable[..., dict[str, Any]]:
    """A bench entry point ``(shape, dtype, *, device, seed) -> dict`` for a file spec."""
    forms = _forms()
    form = spec.partition(":")[0]
    if form in forms.FORMS:
        # a tritonbench operator registers its benchmarks under its module's own dotted name
        load = load_package_module if form == "tritonbench" else load_file
        try:
            inner = forms.entry_for(
                spec, lambda path: load(root, path), forms.torch_if_loaded, capture
            )
        except forms.FormError as exc:
            raise BadBenchmark(str(exc)) from None
        except LookupError as exc:
            raise NotFound(str(exc)) from None

        def entry(*args: Any, **kwargs: Any) -> dict[str, Any]:
            try:
                return inner(*args, **kwargs)
            except forms.FormError as exc:
                raise BadBenchmark(str(exc)) from None

        return entry
    match = SPEC_RE.match(spec)
    if match is None:
        raise BadBenchmark(
            f"{spec!r} is not 'perf_report:PATH.py:NAME[@PROVIDER]' or 'do_bench:PATH.py:FUNCTION'"
        )
    module = load_file(root, match["path"])
    target = getattr(module, match["name"], None)
    if target is None:
        raise NotFound(f"{match['path']} has no {match['name']!r}")
    if match["form"] == "perf_report":
        return _perf_report_entry(target, match["name"], match["provider"])
    if not callable(target):
        raise BadBenchmark(f"{match['name']!r} in {match['path']} is not a function")
    return _do_bench_entry(target)


def _perf_report_entry(mark: Any, name: str, provider: str | None) -> Callable[..., dict[str, Any]]:
    fn = getattr(mark, "fn", None)
    benchmarks = getattr(mark, "benchmarks", None)
    if not callable(fn) or benchmarks is None:
        raise BadBenchmark(
            f"{name!r} is not a triton.testing.perf_report benchmark (no .fn and .benchmarks); "
            "name the object @triton.testing.perf_report(...) decorates"
        )
    benchmarks = list(benchmarks) if isinstance(benchmarks, (list, tuple)) else [benchmarks]

    def entry(shape: Any, dtype: str, *, device: str = "cuda", seed: int = 0) -> dict[str, Any]:
        bench = _pick(benchmarks, len(tuple(shape)), provider, dtype, name)
        kwargs = dict(getattr(bench, "args", None) or {})
        kwargs.update(_x_values(bench.x_names, tuple(shape), name))
        kwargs[bench.line_arg] = _line_value(bench, provider, name)
        return _case(fn, kwargs, dtype, device, seed)

    return entry


def _do_bench_entry(fn: Callable[..., Any]) -> Callable[..., dict[str, Any]]:
    def entry(shape: Any, dtype: str, *, device: str = "cuda", seed: int = 0) -> dict[str, Any]:
        names = dimension_parameters(fn)
        dims = tuple(int(d) for d in shape)
        if len(dims) != len(names) and not _takes_varargs(fn):
            raise BadBenchmark(
                f"{fn.__name__} takes {len(names)} dimension argument(s) ({', '.join(names)}), "
                f"the shape {list(dims)} has {len(dims)}"
            )
        return _case(fn, {}, dtype, device, seed, args=dims)

    return entry


def dimension_parameters(fn: Callable[..., Any]) -> list[str]:
    """The parameters a shape's dimensions fill: positional, without a default, not ``dtype`` or
    ``device``."""
    return [
        p.name
        for p in inspect.signature(fn).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        and p.default is p.empty
        and p.name not in ("dtype", "device")
    ]


def _takes_varargs(fn: Callable[..., Any]) -> bool:
    return any(p.kind == p.VAR_POSITIONAL for p in inspect.signature(fn).parameters.values())


def _pick(benchmarks: list[Any], ndims: int, provider: str | None, dtype: str, name: str) -> Any:
    """The benchmark of a perf_report list that serves this case: ``provider`` among its lines,
    ``ndims`` fits its x names; one whose ``args`` give the case's dtype first."""
    fits = [
        b
        for b in benchmarks
        if ndims in (1, len(b.x_names))
        and (provider is None or provider in [str(v) for v in b.line_vals])
    ]
    if not fits:
        sweeps = " or ".join(sorted({", ".join(b.x_names) for b in benchmarks}))
        lines = ", ".join(sorted({str(v) for b in benchmarks for v in b.line_vals}))
        raise BadBenchmark(
            f"no benchmark of {name!r} takes a {ndims}-dimensional shape"
            + (f" with line {provider!r}" if provider else "")
            + f"; it sweeps {sweeps} and its lines are {lines}"
        )
    same_dtype = [
        b for b in fits if str((getattr(b, "args", None) or {}).get("dtype", "")).endswith(dtype)
    ]
    return (same_dtype or fits)[0]


def _x_values(x_names: list[str], shape: tuple[int, ...], name: str) -> dict[str, int]:
    if len(shape) == len(x_names):
        return {x: int(v) for x, v in zip(x_names, shape, strict=True)}
    if len(shape) == 1:
        return {x: int(shape[0]) for x in x_names}
    raise BadBenchmark(
        f"{name!r} sweeps {', '.join(x_names)}; give shapes of {len(x_names)} dimensions (or one)"
    )


def _line_value(bench: Any, provider: str | None, name: str) -> Any:
    values = list(bench.line_vals)
    if provider is None:
        if len(values) == 1:
            return values[0]
        raise BadBenchmark(
            f"{name!r} compares {len(values)} lines ({', '.join(map(str, values))}); "
            f"name the one to measure: '...:{name}@{values[0]}'"
        )
    for value in values:
        if str(value) == provider:
            return value
    raise BadBenchmark(
        f"{name!r} has no line {provider!r}; its lines: {', '.join(map(str, values))}"
    )


def _case(
    fn: Callable[..., Any],
    kwargs: dict[str, Any],
    dtype: str,
    device: str,
    seed: int,
    *,
    args: tuple[int, ...] = (),
) -> dict[str, Any]:
    params = inspect.signature(fn).parameters
    torch = sys.modules.get("torch")
    if "dtype" in params:
        given = kwargs.get("dtype", params["dtype"].default)
        kwargs["dtype"] = (
            dtype if isinstance(given, str) or torch is None else getattr(torch, dtype)
        )
    if "device" in params:
        kwargs["device"] = device
    if torch is not None:
        torch.manual_seed(seed)
    timed = capture(fn, args, kwargs)
    return {"fn": timed, "bytes_moved": 0, "flops": 0, "inputs": closed_over_tensors(timed)}


def capture(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Callable[[], Any]:
    """Run ``fn(*args, **kwargs)`` with triton's timers replaced; the callable it asked to time."""
    import triton.testing as testing

    def timer(timed: Callable[[], Any], *_a: Any, **_k: Any) -> Any:
        raise _Captured(timed)

    originals = {t: getattr(testing, t) for t in TIMERS if hasattr(testing, t)}
    namespace = getattr(fn, "__globals__", {})
    rebound = {k: v for k, v in namespace.items() if any(v is o for o in originals.values())}
    try:
        for t in originals:
            setattr(testing, t, timer)
        for k in rebound:
            namespace[k] = timer
        fn(*args, **kwargs)
    except _Captured as captured:
        return captured.fn
    finally:
        for t, original in originals.items():
            setattr(testing, t, original)
        namespace.update(rebound)
    name = getattr(fn, "__name__", "the benchmark")
    raise BadBenchmark(f"{name} returned without calling triton.testing.do_bench; nothing to time")


def closed_over_tensors(fn: Callable[[], Any]) -> list[Any]:
    """The tensors (anything with ``numel`` and ``element_size``) a lambda closes over."""
    cells = getattr(fn, "__closure__", None) or ()
    out = []
    for cell in cells:
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if hasattr(value, "numel") and hasattr(value, "element_size"):
            out.append(value)
    return out
