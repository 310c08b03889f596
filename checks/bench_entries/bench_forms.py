"""Benchmark forms other than ``triton.testing``'s, run as bench entry points in the worker.

Each form names a benchmark the repository keeps by file, as ``FORM:PATH:NAME[@LINE]``, and is
run by calling it with a stand-in for its timer that captures, instead of timing, the callable
it was given: that callable is the case's ``fn`` (the tensors it closes over its ``inputs``).

- ``pytest_benchmark:PATH:TEST[@VALUE]``: a pytest test taking pytest-benchmark's ``benchmark``
  fixture. Its ``@pytest.mark.parametrize`` arguments are filled from the case: an argument
  whose values are tuples of integers takes the whole shape, else the integer arguments take its
  dimensions in order; an argument whose values are dtypes (``torch.float16``, ``"float16"``)
  takes the case's dtype; any other argument takes ``VALUE`` where it is one of its values, else
  its first value. ``benchmark(fn, *args, **kwargs)`` and ``benchmark.pedantic(fn, args=...,
  kwargs=..., setup=...)`` are captured, also through helpers the test passes ``benchmark`` to.
- ``asv:PATH:CLASS.METHOD[@VALUE]``: an airspeed velocity benchmark, a ``time_*`` method of a
  class with ``params`` (and ``param_names``). Its parameters are filled as above; the class is
  made, its ``setup(*params)`` run, and the case's ``fn`` calls the method with the parameters.
- ``run_input:PATH:FUNCTION[@VALUE]``: a function taking one input object, which the script
  hands to a runner of its own (``run_benchmarks(bench_test_fn=FUNCTION, x_values=[...],
  kernel_providers=[...], **configs)``). The input object is made from the function's
  annotated class: each of its fields takes the values of the call's list keyword named after
  it (``x_values`` for ``x``, ``kernel_providers`` for ``kernel_provider``), filled as a test's
  parameters above (a dict's ``dtype`` is the case's dtype), and the function runs with
  ``triton.testing.do_bench`` captured.
- ``timer:PATH:FUNCTION``: a function of the shape's dimensions that times its kernel with
  ``torch.utils.benchmark.Timer(stmt, setup=..., globals=...)``; the statement (its setup run
  once) in the timer's globals is the case's ``fn``.
- ``bench_class:PATH:TEST[@VALUE]``: a test that makes an object of a benchmark class and calls
  its ``run()`` (FlagGems' form: ``bench = base.UnaryPointwiseBenchmark(op_name="abs",
  torch_op=torch.abs, dtypes=...); bench.run()``), the class making each input with
  ``get_input_iter(dtype)`` from its ``shapes`` and timing ``op(*args, **kwargs)`` in
  ``get_latency``. The test is called (its parameters filled as above) with ``run`` captured;
  the object gets the case's shape and dtype, its first input is the case's, and the case's
  ``fn`` calls its ``gems_op`` where it has one. Where it has none, the op is its ``torch_op``
  as ``run()`` times it, inside the ``with`` statements ``run()`` holds around that
  ``get_latency`` call (FlagGems' ``with flag_gems.use_gems(exclude=[...]):``, its kernels
  registered in place of torch's), read from its source on the path its ``if`` tests take for
  the object, and entered once for the rest of the process. ``run()`` itself is not called (it
  reads the configuration pytest's hooks set up).

- ``tritonbench:PATH:OPERATOR.METHOD``: a ``@register_benchmark`` method of a tritonbench
  operator (a ``BenchmarkOperator`` subclass, tritonbench's form: ``def triton_add(self, x,
  y): ... return _inner``). The operator object is made without its constructor, with the
  attributes its methods read for a forward run (``device``, ``dtype``, ``name``, ``mode``,
  ``tb_args`` with every option off); its ``get_input_iter()`` is walked to the first input
  whose first tensor has the case's shape, or whose ``get_x_val`` is it, and no further than
  the first larger one (operators yield their sizes in increasing order; none of the case's
  shape: its first input, the tensors shaped like its first tensor made anew in the case's
  shape), and the method called with that input returns the case's ``fn``.

Standard library only, loaded by ``bench_capture.py``; the benchmark's own imports (pytest,
torch) are looked up when a case is built.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import inspect
import itertools
import math
import posixpath
import re
import sys
import textwrap
import typing
from collections.abc import Callable, Iterator, Sequence
from typing import Any

FORMS = ("pytest_benchmark", "asv", "timer", "run_input", "bench_class", "tritonbench")
SPEC_RE = re.compile(
    r"^(?P<form>pytest_benchmark|asv|timer|run_input|bench_class|tritonbench):"
    r"(?P<path>[^:@\s]+\.py):"
    r"(?P<name>[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?)(@(?P<value>[^:@\s]+))?$"
)
# a dtype's name as a parameter value gives it (``"float16"``, ``"torch.bfloat16"``, ``"int8"``)
DTYPE_RE = re.compile(r"^(torch\.)?(b?float|u?int|complex)\d+(_\w+)?$")


class FormError(Exception):
    """The benchmark cannot be run as a bench entry point; the message says why."""


class _Captured(BaseException):
    # BaseException: a benchmark's own ``except Exception`` must not swallow it.
    def __init__(self, fn: Callable[[], Any]) -> None:
        super().__init__("captured")
        self.fn = fn


class CaptureBenchmark:
    """pytest-benchmark's ``benchmark`` fixture, capturing what it is asked to time."""

    def __call__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        raise _Captured(lambda: fn(*args, **kwargs))

    def pedantic(
        self,
        fn: Callable[..., Any],
        args: Sequence[Any] = (),
        kwargs: dict[str, Any] | None = None,
        setup: Callable[[], Any] | None = None,
        **_options: Any,
    ) -> Any:
        if setup is not None:
            made = setup()
            if made is not None:
                args, kwargs = made
        call_args, call_kwargs = tuple(args), dict(kwargs or {})
        raise _Captured(lambda: fn(*call_args, **call_kwargs))

    def __getattr__(self, name: str) -> Any:  # extra_info, group, name, ...: accepted, unused
        return {} if name == "extra_info" else None


def entry_for(
    spec: str,
    module_of: Callable[[str], Any],
    torch_module: Callable[[], Any],
    triton_capture: Callable[..., Callable[[], Any]] | None = None,
) -> Callable[..., dict[str, Any]]:
    """A bench entry point ``(shape, dtype, *, device, seed) -> dict`` for a spec of these forms;
    ``module_of(path)`` loads the benchmark's file; ``triton_capture(fn, args, kwargs)`` runs a
    function with ``triton.testing.do_bench`` captured (``bench_capture.capture``)."""
    match = SPEC_RE.match(spec)
    if match is None:
        raise FormError(
            f"{spec!r} is not 'pytest_benchmark:PATH.py:TEST[@VALUE]', "
            "'asv:PATH.py:CLASS.METHOD[@VALUE]', 'timer:PATH.py:FUNCTION', "
            "'run_input:PATH.py:FUNCTION[@VALUE]', 'bench_class:PATH.py:TEST[@VALUE]' or "
            "'tritonbench:PATH.py:Operator.METHOD'"
        )
    form, path, name, value = match["form"], match["path"], match["name"], match["value"]
    module = module_of(path)
    owner, _, attr = name.rpartition(".")
    holder = getattr(module, owner, None) if owner else module
    target = getattr(holder, attr, None) if holder is not None else None
    if target is None:
        raise LookupError(f"{path} has no {name!r}")

    def entry(shape: Any, dtype: str, *, device: str = "cuda", seed: int = 0) -> dict[str, Any]:
        torch = torch_module()
        if torch is not None:
            torch.manual_seed(seed)
        dims = tuple(int(d) for d in shape)
        if form == "pytest_benchmark":
            fn = _pytest_case(target, Case(dims, dtype, device, value, torch))
        elif form == "asv":
            fn = _asv_case(holder, attr, dims, dtype, value, torch)
        elif form == "run_input":
            assert triton_capture is not None
            fn = _run_input_case(module, target, dims, dtype, value, torch, triton_capture)
        elif form == "bench_class":
            fn = _bench_class_case(target, Case(dims, dtype, device, value, torch))
        elif form == "tritonbench":
            fn = _tritonbench_case(holder, attr, path, Case(dims, dtype, device, value, torch))
        else:
            fn = _timer_case(target, dims, dtype, device, torch)
        return {"fn": fn, "bytes_moved": 0, "flops": 0, "inputs": closed_over_tensors(fn)}

    return entry


# --------------------------------------------------------------------------- parameters


def fill(
    names: Sequence[str],
    values: Sequence[Sequence[Any]],
    dims: tuple[int, ...],
    dtype: str,
    value: str | None,
    torch: Any,
) -> dict[str, Any]:
    """Each parameter's value for a case (see the module's docstring)."""
    out: dict[str, Any] = {}
    shaped = [
        n for n, vs in zip(names, values, strict=True) if vs and all(_int_tuple(v) for v in vs)
    ]
    ints = [n for n, vs in zip(names, values, strict=True) if vs and all(_int(v) for v in vs)]
    if shaped:
        out[shaped[0]] = tuple(dims)
    elif ints:
        if len(dims) not in (1, len(ints)):
            raise FormError(
                f"its integer parameters are {', '.join(ints)}; give shapes of {len(ints)} "
                f"dimensions (got {list(dims)})"
            )
        out.update({n: dims[min(i, len(dims) - 1)] for i, n in enumerate(ints)})
    for name, options in zip(names, values, strict=True):
        if name in out:
            continue
        if options and all(_dtype_name(v) for v in options):
            as_text = isinstance(options[0], str)
            out[name] = dtype if as_text or torch is None else getattr(torch, dtype)
            continue
        chosen = [v for v in options if value is not None and str(v) == value]
        if not options:
            raise FormError(f"its parameter {name!r} has no values")
        out[name] = (chosen or list(options))[0]
    return out


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int_tuple(v: Any) -> bool:
    return isinstance(v, (tuple, list)) and bool(v) and all(_int(x) for x in v)


def _dtype_name(v: Any) -> bool:
    return (isinstance(v, str) and bool(DTYPE_RE.match(v))) or type(v).__name__ == "dtype"


# ---------------------------------------------------------------------------- pytest


def _parametrized(test: Callable[..., Any]) -> tuple[list[str], list[list[Any]]]:
    """The names and values of ``test``'s ``@pytest.mark.parametrize`` arguments."""
    names: list[str] = []
    values: list[list[Any]] = []
    for mark in getattr(test, "pytestmark", []):
        if getattr(mark, "name", "") != "parametrize" or len(mark.args) < 2:
            continue
        argnames, argvalues = mark.args[0], list(mark.args[1])
        split = (
            [a.strip() for a in argnames.split(",")]
            if isinstance(argnames, str)
            else list(argnames)
        )
        rows = []
        for v in argvalues:  # pytest.param(...) is a ParameterSet: its values are a tuple
            param_set = type(v).__name__ == "ParameterSet"
            rows.append(tuple(v.values) if param_set else (v,) if len(split) == 1 else tuple(v))
        for index, name in enumerate(split):
            names.append(name)
            values.append(_unique(row[index] for row in rows))
    return names, values


def _unique(items: Iterator[Any]) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if not any(item is o or (type(item) is type(o) and item == o) for o in out):
            out.append(item)
    return out


@dataclasses.dataclass(frozen=True)
class Case:
    """What a test form is called for: the shape, dtype, device, ``@VALUE`` and torch."""

    dims: tuple[int, ...]
    dtype: str
    device: str
    value: str | None
    torch: Any


def _pytest_case(test: Callable[..., Any], case: Case) -> Callable[[], Any]:
    if "benchmark" not in inspect.signature(test).parameters:
        raise FormError(f"{test.__name__} takes no 'benchmark' fixture")
    fixtures = {"benchmark": CaptureBenchmark(), "device": case.device}
    return _run_captured(test, (), call_arguments(test, case, fixtures))


def call_arguments(
    test: Callable[..., Any], case: Case, fixtures: dict[str, Any]
) -> dict[str, Any]:
    """A test's arguments for a case: its ``parametrize`` arguments filled, then ``fixtures``
    where it takes them (a parameter wins over a fixture of its name); one that only pytest can
    make is refused, named."""
    names, values = _parametrized(test)
    kwargs = fill(names, values, case.dims, case.dtype, case.value, case.torch)
    params = inspect.signature(test).parameters
    kwargs |= {k: v for k, v in fixtures.items() if k in params and k not in kwargs}
    missing = [p for p in params if p not in kwargs and params[p].default is params[p].empty]
    if missing:
        raise FormError(
            f"{test.__name__} needs the fixture(s) {', '.join(missing)}, which only pytest can "
            "make; write a bench entry point (docs/bench-entry.md)"
        )
    return {k: v for k, v in kwargs.items() if k in params}


# ------------------------------------------------------------------------------- asv


def _asv_case(
    cls: Any, method: str, dims: tuple[int, ...], dtype: str, value: str | None, torch: Any
) -> Callable[[], Any]:
    if not inspect.isclass(cls):
        raise FormError(f"name the asv benchmark as CLASS.{method}")
    params = getattr(cls, "params", None)
    if params and not isinstance(params[0], (list, tuple)):
        params = [params]
    params = [list(p) for p in params or []]
    names = list(getattr(cls, "param_names", None) or [f"param{i + 1}" for i in range(len(params))])
    filled = fill(names, params, dims, dtype, value, torch) if params else {}
    args = [filled[n] for n in names]
    instance = cls()
    setup = getattr(instance, "setup", None)
    if callable(setup):
        setup(*args)
    timed = getattr(instance, method)
    return lambda: timed(*args)


# ------------------------------------------------------------------------- run input


def handing_call(tree: ast.Module, name: str) -> dict[str, ast.expr] | None:
    """The keywords of the script's call that hands the function ``name`` over (``runner(fn=name,
    x_values=[...], **configs)``), a ``**configs`` read through the dict literal the script binds
    to that name; None where the script hands ``name`` to no call."""
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call):
            continue
        given = [*call.args, *(k.value for k in call.keywords)]
        if not any(isinstance(a, ast.Name) and a.id == name for a in given):
            continue
        out: dict[str, ast.expr] = {}
        for keyword in call.keywords:
            if keyword.arg:
                out[keyword.arg] = keyword.value
            elif isinstance(keyword.value, ast.Name):
                out.update(_bound_dict(tree, keyword.value.id))
        return out
    return None


def _bound_dict(tree: ast.Module, name: str) -> dict[str, ast.expr]:
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
            and isinstance(node.value, ast.Dict)
        ):
            return {
                k.value: v
                for k, v in zip(node.value.keys, node.value.values, strict=True)
                if isinstance(k, ast.Constant) and isinstance(k.value, str)
            }
    return {}


def field_keyword(field: str, keywords: Sequence[str]) -> str | None:
    """The call's keyword that lists a field's values: the field's plural (``kernel_providers``
    for ``kernel_provider``) or the field with a suffix (``x_values`` for ``x``)."""
    for keyword in keywords:
        if keyword in (field + "s", field + "es"):
            return keyword
    return next((k for k in keywords if k.startswith(field + "_")), None)


def _evaluated(node: ast.expr, env: dict[str, Any]) -> Any:
    """``node``'s value in the module's namespace; a dict literal key by key and a list item by
    item, leaving out what cannot be evaluated (``args.overwrite`` of a ``__main__`` block)."""
    if isinstance(node, ast.Dict):
        out = {}
        for key, value in zip(node.keys, node.values, strict=True):
            with contextlib.suppress(Exception):
                out[_evaluated(key, env) if key is not None else None] = _evaluated(value, env)
        return out
    if isinstance(node, ast.List):
        return [_evaluated(e, env) for e in node.elts]
    return eval(compile(ast.Expression(node), "<benchmark call>", "eval"), env)


def _run_input_case(
    module: Any,
    fn: Callable[..., Any],
    dims: tuple[int, ...],
    dtype: str,
    value: str | None,
    torch: Any,
    triton_capture: Callable[..., Callable[[], Any]],
) -> Callable[[], Any]:
    source = inspect.getsource(module)
    keywords = handing_call(ast.parse(source), fn.__name__) or {}
    lists: dict[str, list[Any]] = {}
    for keyword, node in keywords.items():
        with contextlib.suppress(Exception):
            got = _evaluated(node, vars(module))
            if isinstance(got, (list, tuple)) and got:
                lists[keyword] = list(got)
    param = next(iter(inspect.signature(fn).parameters), None)
    cls = typing.get_type_hints(fn).get(param) if param else None
    if not inspect.isclass(cls):
        raise FormError(f"{fn.__name__}'s parameter has no class annotation to make it from")
    fields = (
        [f.name for f in dataclasses.fields(cls)]
        if dataclasses.is_dataclass(cls)
        else [p for p in inspect.signature(cls).parameters if p != "self"]
    )
    named = {f: field_keyword(f, list(lists)) for f in fields}
    chosen = [f for f, k in named.items() if k]
    if not chosen:
        raise FormError(
            f"the script's call handing {fn.__name__} over lists no values for the fields of "
            f"{cls.__name__} ({', '.join(fields)})"
        )
    values = [lists[named[f]] for f in chosen]  # type: ignore[index]
    filled = fill(chosen, values, dims, dtype, value, torch)
    for f, v in filled.items():  # a config dict's dtype is the case's
        if isinstance(v, dict) and "dtype" in v:
            given = v["dtype"]
            filled[f] = {
                **v,
                "dtype": dtype
                if isinstance(given, str) or torch is None
                else getattr(torch, dtype),
            }
    return triton_capture(fn, (cls(**filled),), {})


# ----------------------------------------------------------------------- bench class


class _Made(BaseException):
    def __init__(self, bench: Any) -> None:
        super().__init__("made")
        self.bench = bench


# (``run()``'s file, the ``with`` statement's line) -> the context entered for the process
_HELD: dict[tuple[str, int], Any] = {}


def _bench_classes(test: Callable[..., Any]) -> list[type]:
    """The benchmark classes (``get_input_iter`` and ``run``) the test's module reaches: its
    own, and those of the modules it imports (``from . import base``)."""
    seen: list[type] = []
    for value in list(getattr(test, "__globals__", {}).values()):
        members = list(vars(value).values()) if inspect.ismodule(value) else [value]
        for item in members:
            if (
                inspect.isclass(item)
                and callable(getattr(item, "get_input_iter", None))
                and callable(getattr(item, "run", None))
                and item not in seen
            ):
                seen.append(item)
    return seen


def _made_bench(test: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """The benchmark object ``test`` makes, caught at its ``run()``."""

    def made(self: Any, *_a: Any, **_k: Any) -> Any:
        raise _Made(self)

    owners = {
        c for cls in _bench_classes(test) for c in cls.__mro__ if "run" in vars(c)
    }  # every class that defines a ``run`` of its own
    originals = {c: vars(c)["run"] for c in owners}
    for c in owners:
        setattr(c, "run", made)  # noqa: B010  (any class: no ``run`` declared to the checker)
    try:
        test(**kwargs)
    except _Made as got:
        return got.bench
    finally:
        for c, original in originals.items():
            setattr(c, "run", original)  # noqa: B010
    raise FormError(f"{test.__name__} made no benchmark object whose run() it called")


def _first_input(bench: Any, dims: tuple[int, ...], dtype: Any) -> tuple[list[Any], dict]:
    """The object's first input for one shape: its ``shapes`` set to that shape alone (a shape
    in a 1-tuple where its ``get_input_iter`` unpacks one), split by its own
    ``unpack_to_args_kwargs`` where it has one."""
    made = None
    for shapes in ([tuple(dims)], [(tuple(dims),)]):
        bench.shapes = shapes
        try:
            made = next(iter(bench.get_input_iter(dtype)))
            break
        except (TypeError, ValueError):
            continue
        except StopIteration:
            raise FormError(
                f"{type(bench).__name__}.get_input_iter made no input for the shape {list(dims)}"
            ) from None
    if made is None:
        raise FormError(f"{type(bench).__name__}.get_input_iter takes no shape {list(dims)}")
    unpack = getattr(bench, "unpack_to_args_kwargs", None)
    if callable(unpack):
        args, kwargs = unpack(made)
        return list(args), dict(kwargs)
    return list(made if isinstance(made, (tuple, list)) else (made,)), {}


def _monkeypatch(test: Callable[..., Any]) -> Any:
    try:
        import pytest
    except ImportError:
        raise FormError(
            f"{test.__name__} takes pytest's monkeypatch fixture, and pytest is not installed"
        ) from None
    return pytest.MonkeyPatch()


def _contexts_around_timing(bench: Any) -> list[tuple[ast.withitem, int]]:
    """The ``with`` items ``run()`` holds around its ``self.get_latency(self.torch_op, ...)``
    call, on the path its ``if`` tests take for this object (an ``if`` it cannot evaluate: its
    first branch that reaches the call), each with its statement's line."""
    run = type(bench).run
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(run)))
    except (OSError, TypeError, SyntaxError):
        return []
    scope = {**getattr(run, "__globals__", {}), "self": bench}

    def times_torch_op(node: ast.AST) -> bool:
        return any(
            isinstance(n, ast.Call)
            and _source(n.func) == "self.get_latency"
            and bool(n.args)
            and _source(n.args[0]) == "self.torch_op"
            for n in ast.walk(node)
        )

    def walk(body: list[ast.stmt], held: list[tuple[ast.withitem, int]]) -> list | None:
        for stmt in body:
            if not times_torch_op(stmt):
                continue
            if isinstance(stmt, ast.If):
                try:
                    taken = [stmt.body if eval(_code(stmt.test), scope) else stmt.orelse]
                except Exception:
                    taken = [stmt.body, stmt.orelse]
                for branch in taken:
                    found = walk(branch, held)
                    if found is not None:
                        return found
                continue
            if isinstance(stmt, (ast.With, ast.AsyncWith)):
                return walk(stmt.body, held + [(i, stmt.lineno) for i in stmt.items])
            inner = [b for f in ("body", "orelse", "finalbody") for b in getattr(stmt, f, [])]
            inner += [b for h in getattr(stmt, "handlers", []) for b in h.body]
            if inner:
                return walk(inner, held)
            return held
        return None

    first = tree.body[0] if tree.body else None
    body = first.body if isinstance(first, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
    return walk(body, []) or []


def _source(node: ast.AST) -> str:
    return ast.unparse(node)


def _code(node: ast.expr) -> Any:
    return compile(ast.Expression(node), "<benchmark run>", "eval")


def _hold_contexts(bench: Any) -> None:
    """Enter, for the rest of the process, what ``run()`` holds around the timing of its
    ``torch_op`` (FlagGems' ``with flag_gems.use_gems(...):``), once per ``with`` statement."""
    run = type(bench).run
    where = getattr(getattr(run, "__code__", None), "co_filename", "")
    start = getattr(getattr(run, "__code__", None), "co_firstlineno", 1) - 1
    scope = {**getattr(run, "__globals__", {}), "self": bench}
    for item, line in _contexts_around_timing(bench):
        key = (where, start + line)
        if key in _HELD:
            continue
        try:
            context = eval(_code(item.context_expr), scope)
            context.__enter__()
        except Exception as exc:
            raise FormError(
                f"{type(bench).__name__}.run() times its op inside `with "
                f"{_source(item.context_expr)}`, which could not be entered here: "
                f"{type(exc).__name__}: {exc}"[:600]
            ) from None
        _HELD[key] = context


def _bench_class_case(test: Callable[..., Any], case: Case) -> Callable[[], Any]:
    params = inspect.signature(test).parameters
    # pytest's own monkeypatch, its changes kept for the process
    fixtures = {"monkeypatch": _monkeypatch(test)} if "monkeypatch" in params else {}
    kwargs = call_arguments(test, case, fixtures)
    dims, dtype, torch = case.dims, case.dtype, case.torch
    bench = _made_bench(test, kwargs)
    if getattr(bench, "is_backward", False):
        raise FormError(
            f"{test.__name__} times a backward pass, which this form does not run; write a "
            "bench entry point (docs/bench-entry.md)"
        )
    as_dtype = getattr(torch, dtype) if torch is not None else dtype
    bench.device = case.device
    bench.dtypes = bench.to_bench_dtypes = [as_dtype]
    bench.to_bench_metrics = ["latency"]
    args, call_kwargs = _first_input(bench, dims, as_dtype)
    op = getattr(bench, "gems_op", None)
    if op is None:
        op = getattr(bench, "torch_op", None)
        if not callable(op):
            raise FormError(f"{type(bench).__name__} has neither a gems_op nor a torch_op")
        _hold_contexts(bench)
    return lambda: op(*args, **call_kwargs)


# ----------------------------------------------------------------------------- Timer


class _Args(argparse.Namespace):
    """tritonbench's parsed arguments, as its operators read them: every option not given (None),
    so ``self.tb_args.production_shapes`` and the like are off."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return None


MAX_INPUTS = 10_000  # a tritonbench operator's inputs walked looking for the case's shape


def _tritonbench_case(cls: Any, method: str, path: str, case: Case) -> Callable[[], Any]:
    """A tritonbench operator's benchmark for one case: the operator object is made without its
    constructor (which parses tritonbench's command line and sets its run up), with what its
    methods read set as tritonbench sets it for a forward run (``device``, ``dtype``, ``name``,
    ``mode``, ``tb_args`` with every option off); ``get_input_iter()`` is walked to the first
    input whose first tensor has the case's shape (or whose ``get_x_val`` is it), and the
    benchmark method called with that input: the function it returns is the case's ``fn``."""
    if not isinstance(cls, type) or not callable(getattr(cls, method, None)):
        raise FormError(f"{cls!r} is not a class with a method {method!r}")
    op: Any = object.__new__(cls)
    base = next((c for c in cls.__mro__ if c.__name__ == "BenchmarkOperator"), None)
    modes = getattr(sys.modules.get(base.__module__ if base else ""), "Mode", None)
    fields: dict[str, Any] = {
        "device": case.device,
        "dtype": getattr(case.torch, case.dtype) if case.torch is not None else case.dtype,
        "name": posixpath.basename(posixpath.dirname(path)) or cls.__name__,
        "tb_args": _Args(),
        "extra_args": [],
        "mode": getattr(modes, "FWD", "fwd"),
        "requires_grad": True,
    }
    for key, value in fields.items():
        setattr(op, key, value)
    seen: list[str] = []
    first: Any = None
    size = math.prod(case.dims)
    try:
        for inputs in itertools.islice(op.get_input_iter(), MAX_INPUTS):
            if inputs is None:  # TorchBench's iterators end in ``while True: yield None``
                break
            found = _input_shapes(op, inputs)
            first = inputs if first is None else first
            if case.dims in found:
                return _benchmark_fn(op, method, inputs)
            if len(seen) < 4:
                seen.append(str(list(found[0])) if found else "?")
            if found and len(found[0]) == len(case.dims) and math.prod(found[0]) > size:
                break  # past the case's size: operators yield their sizes in increasing order
        resized = _resized(first, case) if first is not None else None
        if resized is not None:
            return _benchmark_fn(op, method, resized)
    except AttributeError as exc:
        raise FormError(
            f"the operator reads {exc.name or exc}, which kernel-review does not set (it sets "
            f"{', '.join(fields)}): give it a default in the class"
        ) from exc
    raise FormError(
        f"{cls.__name__}.get_input_iter() yields no input of shape {list(case.dims)} (its "
        f"first: {', '.join(seen) or 'none'}), and its first input's tensors have another "
        "number of dimensions: give the policy's shapes from those it yields"
    )


def _benchmark_fn(op: Any, method: str, inputs: Any) -> Callable[[], Any]:
    op.example_inputs = inputs
    made = getattr(op, method)
    fn = made(**inputs) if isinstance(inputs, dict) else made(*_as_tuple(inputs))
    if not callable(fn):
        raise FormError(f"{method} returned {type(fn).__name__}, not a function")
    return fn


def _resized(inputs: Any, case: Case) -> Any:
    """The operator's first input with the case's shape, for a shape it does not yield (a served
    shape, the sweep's ragged ones): each tensor shaped like its first tensor made anew in that
    shape (random values of its dtype, on its device), the rest kept; None where the first
    tensor has another number of dimensions."""
    values = list(inputs.values()) if isinstance(inputs, dict) else list(_as_tuple(inputs))
    tensors = [v for v in values if hasattr(v, "shape") and hasattr(v, "dtype")]
    if not tensors or len(tensors[0].shape) != len(case.dims) or case.torch is None:
        return None
    like = tuple(tensors[0].shape)
    torch = case.torch

    def remade(v: Any) -> Any:
        if not (hasattr(v, "shape") and tuple(v.shape) == like):
            return v
        if v.is_floating_point():
            new = torch.randn(case.dims, dtype=v.dtype, device=v.device)
        else:
            new = torch.randint(0, 8, case.dims, dtype=v.dtype, device=v.device)
        return new.requires_grad_(v.requires_grad) if v.is_floating_point() else new

    if isinstance(inputs, dict):
        return {k: remade(v) for k, v in inputs.items()}
    return tuple(remade(v) for v in values)


def _as_tuple(inputs: Any) -> tuple[Any, ...]:
    return tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)


def _input_shapes(op: Any, inputs: Any) -> list[tuple[int, ...]]:
    """The shapes an input may be named by: its first tensor's, and what ``get_x_val`` says of
    it (a GEMM's ``(M, N, K)``)."""
    out = []
    values = inputs.values() if isinstance(inputs, dict) else _as_tuple(inputs)
    first = next((v for v in values if hasattr(v, "shape") and hasattr(v, "dtype")), None)
    if first is not None:
        out.append(tuple(int(d) for d in first.shape))
    with contextlib.suppress(Exception):
        x = op.get_x_val(inputs)
        out.append((int(x),) if isinstance(x, int) else tuple(int(d) for d in x))
    return out


def _timer_case(
    fn: Callable[..., Any], dims: tuple[int, ...], dtype: str, device: str, torch: Any
) -> Callable[[], Any]:
    if torch is None:
        raise FormError("a torch.utils.benchmark.Timer benchmark needs torch")
    import torch.utils.benchmark as tbench

    made: list[Callable[[], Any]] = []

    class Timer:
        def __init__(
            self, stmt: str = "pass", setup: str = "pass", globals: dict | None = None, **_k: Any
        ) -> None:
            scope = dict(globals or {})
            exec(compile(setup, "<timer setup>", "exec"), scope)
            code = compile(stmt, "<timer stmt>", "exec")
            made.append(_bind(code, scope))

        def _captured(self, *_a: Any, **_k: Any) -> Any:
            raise _Captured(made[-1])

        timeit = blocked_autorange = adaptive_autorange = repeat = autorange = _captured

    kwargs: dict[str, Any] = {}
    params = inspect.signature(fn).parameters
    if "dtype" in params:
        kwargs["dtype"] = getattr(torch, dtype)
    if "device" in params:
        kwargs["device"] = device
    names = [p for p in params if p not in kwargs and params[p].default is params[p].empty]
    if len(names) != len(dims):
        raise FormError(
            f"{fn.__name__} takes {len(names)} dimension argument(s) ({', '.join(names)}), the "
            f"shape {list(dims)} has {len(dims)}"
        )
    original = tbench.Timer
    with _swapped(tbench, "Timer", Timer), _rebound(fn, original, Timer):
        return _run_captured(fn, dims, kwargs)


def _bind(code: Any, scope: dict[str, Any]) -> Callable[[], Any]:
    def run() -> Any:
        exec(code, scope)

    run.__kernel_review_scope__ = scope  # type: ignore[attr-defined]
    return run


@contextlib.contextmanager
def _swapped(owner: Any, name: str, value: Any) -> Iterator[None]:
    original = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, original)


@contextlib.contextmanager
def _rebound(fn: Callable[..., Any], original: Any, value: Any) -> Iterator[None]:
    """The names ``fn``'s module bound to ``original`` (``from torch.utils.benchmark import
    Timer``) rebound to ``value`` meanwhile."""
    namespace = getattr(fn, "__globals__", {})
    rebound = [k for k, v in namespace.items() if v is original]
    for k in rebound:
        namespace[k] = value
    try:
        yield
    finally:
        for k in rebound:
            namespace[k] = original


# ---------------------------------------------------------------------------- common


def _run_captured(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Callable[[], Any]:
    try:
        fn(*args, **kwargs)
    except _Captured as captured:
        return captured.fn
    name = getattr(fn, "__name__", "the benchmark")
    raise FormError(f"{name} returned without timing anything; nothing to measure")


def closed_over_tensors(fn: Callable[[], Any]) -> list[Any]:
    """The tensors a captured callable reaches: its closure's, its arguments', a Timer's
    globals', a bound method's object's."""
    seen: list[Any] = []
    stack: list[Any] = [fn]
    for _ in range(64):
        if not stack:
            break
        item = stack.pop()
        cells = getattr(item, "__closure__", None) or ()
        values: list[Any] = []
        for cell in cells:
            with contextlib.suppress(ValueError):
                values.append(cell.cell_contents)
        values += list(getattr(item, "__kernel_review_scope__", {}).values())
        if inspect.ismethod(item):  # a bound method: an asv benchmark's state
            values += list(getattr(item.__self__, "__dict__", {}).values())
        for v in itertools.chain(values, *(x for x in values if isinstance(x, (tuple, list)))):
            if hasattr(v, "numel") and hasattr(v, "element_size"):
                if not any(v is s for s in seen):
                    seen.append(v)
            elif getattr(v, "__closure__", None) or inspect.ismethod(v):
                stack.append(v)
    return seen


def torch_if_loaded() -> Any:
    return sys.modules.get("torch")
