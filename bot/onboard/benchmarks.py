"""Find the benchmarks a repository already has, from source text.

Bench entry points written for kernel-review (``def op(shape, dtype, *, device, seed)``, see
docs/bench-entry.md) are found by their signature; they say nothing about shapes or dtypes.
Two forms of benchmark are read further, the ones ``checks/worker/bench_capture.py`` runs:

- a ``@triton.testing.perf_report(Benchmark(...))`` function: its ``x_names`` are the shape's
  dimensions, its ``x_vals`` the shapes, its ``line_vals`` the lines one may pick, its ``args``
  the fixed arguments (a ``dtype`` there is the dtype);
- a top-level function that calls ``do_bench``: its parameters without defaults are the shape's
  dimensions, and a module-level registry of shapes (a list named like ``SHAPES`` or ``SIZES``
  whose entries have that many integers) gives the shapes.

Values are read with a small evaluator that knows literals, arithmetic, ``range`` and list
comprehensions, so ``x_vals=[2**i for i in range(12, 28)]`` is understood; what it cannot read is
reported in ``notes`` and left for the maintainer. Pure: text in, records out.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Literal

from bot.onboard.values import Unknown, dotted, evaluate, module_constants

Form = Literal["entry", "perf_report", "do_bench"]

TIMERS = ("do_bench", "do_bench_cudagraph")
REGISTRY_RE = re.compile(r"SHAPE|SIZE|CASE|CONFIG", re.IGNORECASE)
NOT_DIMENSIONS = ("dtype", "device", "provider")

TORCH_FACTORIES = frozenset(
    f"torch.{name}" for name in ("randn", "rand", "randint", "zeros", "ones", "empty", "full")
)

# torch dtype attribute -> the policy's dtype name
TORCH_DTYPES = {
    "float16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "float32": "float32",
    "float": "float32",
    "float64": "float64",
    "double": "float64",
    "float8_e4m3fn": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
    "int8": "int8",
    "int32": "int32",
    "int64": "int64",
}


@dataclass(frozen=True)
class FoundBenchmark:
    form: Form
    path: str
    name: str  # the entry point, the perf_report object, or the do_bench function
    line: int
    dims: tuple[str, ...]  # what each dimension of a shape is called
    shapes: tuple[tuple[int, ...], ...]  # empty: none could be read
    lines: tuple[str, ...] = ()  # perf_report line_vals
    dtypes: tuple[str, ...] = ()  # empty: none could be read
    calls: frozenset[str] = frozenset()  # every name the function calls
    resolved_calls: frozenset[str] = frozenset()  # those calls through the file's imports
    takes_dtype: bool = False
    notes: tuple[str, ...] = ()
    module: str = ""  # the module an entry point is imported from

    def spec(self, line: str | None = None) -> str:
        """The policy's ``bench`` value for this benchmark (and one of its lines)."""
        if self.form == "entry":
            return f"{self.module}:{self.name}"
        return f"{self.form}:{self.path}:{self.name}" + (f"@{line}" if line else "")


def find_benchmarks(path: str, text: str, *, module: str = "") -> list[FoundBenchmark]:
    """Every benchmark in one Python file (``module`` is its import name); an unreadable file
    has none."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return []
    env = module_constants(tree)
    imports = imported_names(tree)
    local = {
        n.name
        for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    } | set(env)
    found: list[FoundBenchmark] = []
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        report = next((d for d in node.decorator_list if _is_perf_report(d)), None)
        if report is not None:
            found.append(_perf_report(path, node, report, tree, env))
        elif module and not node.name.startswith("_") and _is_entry_point(node):
            entry = _found("entry", path, node, (), (), [], [])
            found.append(dataclasses.replace(entry, module=module, dtypes=()))
        elif _calls_timer(node):
            found.append(_do_bench(path, node, tree, env))
    return [
        dataclasses.replace(b, resolved_calls=_resolved(node, imports, local))
        for b, node in zip(found, _benchmark_nodes(tree, found), strict=True)
    ]


def _benchmark_nodes(tree: ast.Module, found: list[FoundBenchmark]) -> list[ast.AST]:
    by_line = {
        n.lineno: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    return [by_line[b.line] for b in found]


def imported_names(tree: ast.Module) -> dict[str, str]:
    """What each name a module imports stands for: ``import a.b as c`` binds ``c`` to ``a.b``,
    ``from a.b import c`` binds ``c`` to ``a.b.c`` (anywhere in the file: benchmarks import in
    their functions too)."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    out[alias.asname] = alias.name
                else:
                    head = alias.name.split(".", 1)[0]
                    out[head] = head
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                out[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return out


def _resolved(fn: ast.AST, imports: dict[str, str], local: set[str]) -> frozenset[str]:
    """The dotted names ``fn`` calls, their first part spelled out through the file's imports;
    ``*.name`` for a name of unknown origin (a star import, a builtin), none for the file's own
    functions and the function's own names."""
    own = local | {
        n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    out = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and dotted(node.func):
            head, _, rest = dotted(node.func).partition(".")
            tail = f".{rest}" if rest else ""
            if head in imports:
                out.add(imports[head] + tail)
            elif head not in own:
                out.add(f"*.{head}{tail}")
    return frozenset(out)


def _is_entry_point(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """``def name(shape, dtype, *, device=..., seed=...)``: the bench entry-point signature."""
    positional = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    named = set(positional[2:]) | {a.arg for a in fn.args.kwonlyargs}
    return positional[:2] == ["shape", "dtype"] and {"device", "seed"} <= named


def _is_perf_report(decorator: ast.expr) -> bool:
    return isinstance(decorator, ast.Call) and dotted(decorator.func).endswith("perf_report")


def _calls_timer(fn: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call) and dotted(n.func).rsplit(".", 1)[-1] in TIMERS
        for n in ast.walk(fn)
    )


def _called_names(fn: ast.AST) -> frozenset[str]:
    return frozenset(
        dotted(n.func).rsplit(".", 1)[-1]
        for n in ast.walk(fn)
        if isinstance(n, ast.Call) and dotted(n.func)
    )


def _parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[list[str], list[str]]:
    """(parameters without a default, all parameter names)."""
    args = fn.args.posonlyargs + fn.args.args
    required = args[: len(args) - len(fn.args.defaults)]
    every = [a.arg for a in args + fn.args.kwonlyargs]
    return [a.arg for a in required], every


def _benchmark_calls(arg: ast.expr, tree: ast.Module) -> list[ast.Call]:
    """The ``Benchmark(...)`` calls a perf_report argument stands for: the call itself, a list
    of them, or a module-level name bound to either (or appended to in a loop)."""
    if isinstance(arg, ast.Call):
        return [arg]
    if isinstance(arg, (ast.List, ast.Tuple)):
        return [e for e in arg.elts if isinstance(e, ast.Call)]
    if isinstance(arg, ast.Name):
        calls: list[ast.Call] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == arg.id for t in node.targets
            ):
                calls += _benchmark_calls(node.value, tree) if node.value is not arg else []
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "append"
                and dotted(node.func.value) == arg.id
                and node.args
                and isinstance(node.args[0], ast.Call)
            ):
                calls.append(node.args[0])
        return calls
    return []


def _keywords(call: ast.Call) -> dict[str, ast.expr]:
    names = ("x_names", "x_vals", "line_arg", "line_vals")
    out = {k.arg: k.value for k in call.keywords if k.arg}
    for name, value in zip(names, call.args, strict=False):
        out.setdefault(name, value)
    return out


def _perf_report(
    path: str,
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    decorator: ast.Call,
    tree: ast.Module,
    env: dict[str, Any],
) -> FoundBenchmark:
    notes: list[str] = []
    calls = _benchmark_calls(decorator.args[0], tree) if decorator.args else []
    if len(calls) > 1:
        notes.append(f"{len(calls)} Benchmark configurations; read the first")
    dims: tuple[str, ...] = ()
    shapes: tuple[tuple[int, ...], ...] = ()
    lines: tuple[str, ...] = ()
    dtypes: list[str] = []
    if calls:
        kw = _keywords(calls[0])
        dims = tuple(str(x) for x in _read(kw.get("x_names"), env, notes, "x_names") or ())
        vals = _read(kw.get("x_vals"), env, notes, "x_vals") or ()
        shapes = _shapes(vals, len(dims), notes)
        lines = tuple(str(v) for v in _read(kw.get("line_vals"), env, notes, "line_vals") or ())
        fixed = kw.get("args")
        if isinstance(fixed, ast.Dict):
            for key, value in zip(fixed.keys, fixed.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "dtype":
                    dtypes += _dtype_names(value)
    else:
        notes.append("the perf_report argument is not a Benchmark(...) this reader can follow")
    return _found("perf_report", path, fn, dims, shapes, dtypes, notes, lines=lines)


def _do_bench(
    path: str, fn: ast.FunctionDef | ast.AsyncFunctionDef, tree: ast.Module, env: dict[str, Any]
) -> FoundBenchmark:
    required, _ = _parameters(fn)
    dims = tuple(a for a in required if a not in NOT_DIMENSIONS)
    notes: list[str] = []
    shapes: tuple[tuple[int, ...], ...] = ()
    for name, value in env.items():
        if not REGISTRY_RE.search(name) or not isinstance(value, (list, tuple)):
            continue
        read = _shapes(value, len(dims), [])
        if read:
            shapes = read
            notes.append(f"shapes from the registry {name}")
            break
    return _found("do_bench", path, fn, dims, shapes, [], notes)


def _found(
    form: Form,
    path: str,
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    dims: tuple[str, ...],
    shapes: tuple[tuple[int, ...], ...],
    dtypes: list[str],
    notes: list[str],
    *,
    lines: tuple[str, ...] = (),
) -> FoundBenchmark:
    """The record for benchmark function ``fn``; dtypes from its body when none were given,
    torch's default (float32) when it makes tensors without naming one."""
    dtypes = dtypes or _body_dtypes(fn)
    if not dtypes and _makes_tensors(fn):
        dtypes = ["float32"]
        notes = [*notes, "its tensors are made without a dtype: torch's default, float32"]
    return FoundBenchmark(
        form,
        path,
        fn.name,
        fn.lineno,
        dims,
        shapes,
        lines=lines,
        dtypes=tuple(dict.fromkeys(dtypes)),
        calls=_called_names(fn),
        takes_dtype="dtype" in _parameters(fn)[1],
        notes=tuple(notes),
    )


def _read(node: ast.expr | None, env: dict[str, Any], notes: list[str], what: str) -> Any:
    if node is None:
        return None
    try:
        return evaluate(node, env)
    except Unknown as exc:
        notes.append(f"could not read {what} ({exc})")
        return None


def _shapes(values: Any, ndims: int, notes: list[str]) -> tuple[tuple[int, ...], ...]:
    """Shapes of ``ndims`` positive integers from x_vals-like values; a scalar fills every
    dimension (as perf_report does)."""
    out: list[tuple[int, ...]] = []
    for value in values if isinstance(values, (list, tuple)) else ():
        if isinstance(value, bool):
            return ()
        if isinstance(value, int):
            shape = (value,) * max(ndims, 1)
        elif isinstance(value, (list, tuple)) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            shape = tuple(value)
        else:
            notes.append(f"an x value {value!r} is not integers")
            return ()
        if len(shape) != max(ndims, 1) or min(shape) < 1:
            return ()
        if shape not in out:
            out.append(shape)
    return tuple(out)


def _dtype_names(node: ast.expr) -> list[str]:
    name = dotted(node)
    if name.startswith("torch."):
        mapped = TORCH_DTYPES.get(name.split(".", 1)[1])
        return [mapped] if mapped else []
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        mapped = TORCH_DTYPES.get(node.value)
        return [mapped] if mapped else []
    return []


def _body_dtypes(fn: ast.AST) -> list[str]:
    """The dtypes the function's tensors are made in, in source order: ``dtype=torch.X``, or
    ``dtype=name`` after ``name = torch.X``."""
    bound: dict[str, list[str]] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and _dtype_names(node.value):
                bound[target.id] = _dtype_names(node.value)
    found = []
    for node in ast.walk(fn):
        if isinstance(node, ast.keyword) and node.arg == "dtype":
            value = node.value
            names = bound.get(value.id, []) if isinstance(value, ast.Name) else _dtype_names(value)
            found += [(value.lineno, value.col_offset, name) for name in names]
    return [name for *_, name in sorted(found)]


def _makes_tensors(fn: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and dotted(n.func) in TORCH_FACTORIES for n in ast.walk(fn))
