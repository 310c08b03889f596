"""Find the benchmarks a repository already has, from source text.

Bench entry points written for kernel-review (``def op(shape, dtype, *, device, seed)``, see
docs/bench-entry.md) are found by their signature; they say nothing about shapes or dtypes.
Two forms of benchmark are read further, the ones ``checks/bench_entries/bench_capture.py`` runs:

- a ``@triton.testing.perf_report(Benchmark(...))`` function: its ``x_names`` are the shape's
  dimensions, its ``x_vals`` the shapes, its ``line_vals`` the lines one may pick, its ``args``
  the fixed arguments (a ``dtype`` there is the dtype);
- a top-level function that calls ``do_bench``: its parameters without defaults are the shape's
  dimensions, and a module-level registry of shapes (a list named like ``SHAPES`` or ``SIZES``
  whose entries have that many integers) gives the shapes.

Four more forms, run by ``checks/bench_entries/bench_forms.py``:

- a pytest test taking pytest-benchmark's ``benchmark`` fixture: its ``parametrize`` arguments
  give the shapes (an argument of integer tuples, else the integer arguments' product), the
  dtypes (an argument of dtypes) and the values one may pick (the first argument of strings);
- an asv benchmark: a ``time_*`` method of a class with ``params``, read the same way through
  its ``param_names``;
- a function that times with ``torch.utils.benchmark.Timer``: as a do_bench function;
- a function of one input object that the script hands to a runner of its own (the form is
  recognised from that call, ``bench_forms.handing_call``): the call's integer list is the
  sweep, the string list the function compares with the values one may pick, its dicts'
  ``dtype`` the dtypes;
- a test that makes a benchmark object naming its op and calls its ``run()`` (FlagGems'
  ``bench = base.UnaryPointwiseBenchmark(op_name="abs", torch_op=torch.abs,
  dtypes=consts.FLOAT_DTYPES); bench.run()``): ``op_name`` names the op it measures, the
  ``dtypes`` are read where the file's package defines them (``consts.py``), the shapes from
  its ``shapes=`` or the package's shapes file (a YAML mapping of op names and class names, the
  class's bases in turn, to ``shapes:`` lists).

Values are read with a small evaluator that knows literals, arithmetic, ``range`` and list
comprehensions, so ``x_vals=[2**i for i in range(12, 28)]`` is understood; what it cannot read is
reported in ``notes`` and left for the maintainer. Pure: text in, records out.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import dataclasses
import functools
import itertools
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeGuard

from bot.analysis.text import parse_python_or_none
from bot.onboard.values import Unknown, dotted, evaluate, module_constants
from bot.policy.model import BenchForm
from checks.bench_entries.bench_forms import handing_call

Form = Literal["entry", BenchForm]  # an entry point, or a benchmark named by file

TIMERS = ("do_bench", "do_bench_cudagraph")
BUILTINS = frozenset(dir(builtins))
REGISTRY_RE = re.compile(r"SHAPE|SIZE|CASE|CONFIG", re.IGNORECASE)
NOT_DIMENSIONS = ("dtype", "device", "provider")
MAX_PRODUCT = 64  # parameter combinations read as shapes

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
    # for a line (a string the function compares with), what the branch it guards calls
    line_calls: tuple[tuple[str, frozenset[str]], ...] = ()
    takes_dtype: bool = False
    notes: tuple[str, ...] = ()
    module: str = ""  # the module an entry point is imported from
    op_name: str = ""  # the op a benchmark object names (``op_name="abs"``)

    def spec(self, line: str | None = None) -> str:
        """The policy's ``bench`` value for this benchmark (and one of its lines)."""
        if self.form == "entry":
            return f"{self.module}:{self.name}"
        return f"{self.form}:{self.path}:{self.name}" + (f"@{line}" if line else "")


# Text every form's benchmark holds (a decorator, a timer, a parameter or method name): a file
# without any holds none and is not parsed. ``shape`` and ``seed`` for entry points.
FORM_HINT_RE = re.compile(r"perf_report|do_bench|Timer|benchmark|op_name|def\s+time_")


def may_hold_benchmark(text: str) -> bool:
    """Whether ``text`` holds what one of the forms needs (``find_benchmarks`` finds none in a
    file that does not)."""
    return bool(FORM_HINT_RE.search(text)) or ("shape" in text and "seed" in text)


def find_benchmarks(
    path: str,
    text: str,
    *,
    module: str = "",
    texts: Mapping[str, str] | None = None,
    trees: dict[str, ast.Module | None] | None = None,
) -> list[FoundBenchmark]:
    """Every benchmark in one Python file (``module`` is its import name; ``texts``, the
    repository's files, for what a benchmark reads from its package; ``trees``, those files
    parsed, kept across calls); an unreadable file has none."""
    if not may_hold_benchmark(text):
        return []
    tree = parse_python_or_none(text)
    if tree is None:
        return []
    return _benchmarks_in(path, tree, module, _Files(texts or {}, trees))


def _benchmarks_in(path: str, tree: ast.Module, module: str, files: _Files) -> list[FoundBenchmark]:
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
        elif (
            len(_parameters(node)[1]) == 1
            and _calls_timer(node)
            and handing_call(tree, node.name) is not None
        ):
            found.append(_run_input(path, node, handing_call(tree, node.name) or {}, env))
        elif "benchmark" in _parameters(node)[1] and node.name.startswith("test"):
            found.append(_parametrized("pytest_benchmark", path, node, _marks(node), env))
        elif (made := _made_object(node)) is not None:
            found.append(_bench_class(node, made, _Package(path, tree, files), env))
        elif _calls_timer(node):
            found.append(_do_bench(path, node, tree, env))
        elif _calls_torch_timer(node):
            found.append(dataclasses.replace(_do_bench(path, node, tree, env), form="timer"))
    found += _asv(path, tree, env)
    found += _tritonbench(path, tree, env)
    if not found:
        return []
    nodes = {
        n.lineno: n
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }
    return [
        dataclasses.replace(
            b,
            # the op a benchmark object names is the op it measures, wherever it is defined
            resolved_calls=_resolved(nodes[b.line], imports, local)
            | ({f"*.{b.op_name}"} if b.op_name else set()),
        )
        for b in found
    ]


def _all_args(args: ast.arguments) -> list[ast.arg]:
    rest = [a for a in (args.vararg, args.kwarg) if a is not None]
    return args.posonlyargs + args.args + args.kwonlyargs + rest


def _run_input(
    path: str, fn: ast.FunctionDef | ast.AsyncFunctionDef, call: dict[str, ast.expr], env: dict
) -> FoundBenchmark:
    """A function of one input object that the script hands to its runner: the runner call's
    list of integers is the sweep, its list of strings whose values the function compares with
    the values one may pick (else its first), the ``dtype`` of its list of dicts the dtypes."""
    notes: list[str] = []
    dims: tuple[str, ...] = ()
    shapes: tuple[tuple[int, ...], ...] = ()
    choices: list[tuple[str, ...]] = []
    dtypes: list[str] = []
    for keyword, node in call.items():
        if isinstance(node, ast.Name) and node.id == fn.name:
            continue
        try:
            value = _static(node, env)
        except Unknown as exc:
            notes.append(f"could not read {keyword} ({exc})")
            continue
        if not isinstance(value, list) or not value:
            continue
        if _all_ints(value) and not shapes:
            dims, shapes = (keyword,), tuple(dict.fromkeys((v,) for v in value))
        elif all(isinstance(v, str) for v in value):
            choices.append(tuple(value))
        elif all(isinstance(v, dict) for v in value):
            dtypes += [d for v in value if (d := _dtype_of(v.get("dtype")))]
    compared = {
        c.value
        for n in ast.walk(fn)
        if isinstance(n, ast.Compare)
        for c in ast.walk(n)
        if isinstance(c, ast.Constant) and isinstance(c.value, str)
    }
    # the values one picks are those the function tells apart (``input.provider == "mine"``)
    picked = [c for c in choices if compared & set(c)] + choices
    lines = picked[0] if picked else ()
    found = _found("run_input", path, fn, dims, shapes, dtypes, notes, lines=lines)
    return dataclasses.replace(found, takes_dtype=bool(dtypes))


def _static(node: ast.expr, env: dict[str, Any]) -> Any:
    """A runner call's keyword value: dicts key by key (what cannot be read left out), lists item
    by item, ``torch.X`` as its name, anything else through the evaluator."""
    if isinstance(node, ast.Dict):
        out = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                with contextlib.suppress(Unknown):
                    out[key.value] = _static(value, env)
        return out
    if isinstance(node, ast.List) and any(isinstance(e, ast.Dict) for e in node.elts):
        return [_static(e, env) for e in node.elts]
    return _value(node, env)


def _made_object(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.Call | None:
    """The call ``fn`` makes a benchmark object with (``bench = X(op_name="abs", ...)``) when it
    then calls that object's ``run()``."""
    for node in ast.walk(fn):
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
        ):
            continue
        named = {k.arg: k.value for k in node.value.keywords if k.arg}
        op = named.get("op_name")
        if not (isinstance(op, ast.Constant) and isinstance(op.value, str)):
            continue
        runs = f"{node.targets[0].id}.run"
        if any(isinstance(n, ast.Call) and dotted(n.func) == runs for n in ast.walk(fn)):
            return node.value
    return None


def _bench_class(
    fn: ast.FunctionDef | ast.AsyncFunctionDef, made: ast.Call, package: _Package, env: dict
) -> FoundBenchmark:
    """A test that makes a benchmark object and runs it: its op from ``op_name``, its dtypes
    from ``dtypes=`` (or a parametrized dtype), its shapes from ``shapes=`` or the package's
    shapes file."""
    named = {k.arg: k.value for k in made.keywords if k.arg}
    op_name = str(getattr(named["op_name"], "value", ""))
    found = _parametrized("bench_class", package.path, fn, _marks(fn), env)
    notes = list(found.notes)
    dtypes = list(found.dtypes)
    if "dtypes" in named and not dtypes:
        dtypes = package.dtypes(named["dtypes"], notes)
    elif not dtypes:
        dtypes = package.class_dtypes(dotted(made.func), notes)
    dims: tuple[str, ...] = ()
    desc = named.get("shape_desc")
    if isinstance(desc, ast.Constant) and isinstance(desc.value, str):
        dims = tuple(d.strip() for d in desc.value.split(",") if d.strip())
    shapes: tuple[tuple[int, ...], ...] = ()
    if "shapes" in named:
        values = _read(named["shapes"], env, notes, "shapes") or ()
        shapes = _shapes(values, len(values[0]) if values and _listed(values[0]) else 1, notes)
    else:
        keys = [op_name, *(c for c, _, _ in package.class_chain(dotted(made.func)))]
        shapes, file_dims, where = package.yaml_shapes(keys)
        dims = dims or file_dims
        if where:
            notes.append(f"shapes from {where}")
    return dataclasses.replace(
        found,
        dims=dims,
        shapes=shapes,
        dtypes=tuple(dict.fromkeys(dtypes)),
        takes_dtype=True,
        notes=tuple(notes),
        op_name=op_name,
    )


def _listed(value: Any) -> bool:
    return isinstance(value, (list, tuple))


@dataclass(frozen=True)
class _Files:
    """The repository's files, and those of them parsed so far (by path)."""

    texts: Mapping[str, str]
    trees: dict[str, ast.Module | None] | None = None


class _Package:
    """What a benchmark file reads from its package's other files: its modules' dtype lists,
    its classes' bases, its YAML shapes files."""

    def __init__(self, path: str, tree: ast.Module, files: _Files) -> None:
        self.path = path
        self.folder = posixpath.dirname(path)
        self.tree = tree
        self.files = files
        self.texts = files.texts
        self.modules: dict[str, str] = {}  # ``from . import consts``: consts -> its path
        self.names: dict[str, tuple[str, str]] = {}  # ``from .consts import X``: X -> (path, X)
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                for alias in node.names:
                    bound = alias.asname or alias.name
                    if node.module:
                        self.names[bound] = (self._sibling(node.module), alias.name)
                    else:
                        self.modules[bound] = self._sibling(alias.name)

    def _sibling(self, module: str) -> str:
        return posixpath.join(self.folder, module.replace(".", "/") + ".py")

    def _tree(self, path: str) -> ast.Module | None:
        trees = self.files.trees
        if trees is not None and path in trees:
            return trees[path]
        tree = parse_python_or_none(self.texts.get(path))
        if trees is not None:
            trees[path] = tree
        return tree

    def dtypes(self, node: ast.expr, notes: list[str]) -> list[str]:
        """The dtype names of ``[torch.float16, ...]``, of ``consts.FLOAT_DTYPES`` defined so in
        a sibling module, and of sums of those."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.dtypes(node.left, notes) + self.dtypes(node.right, notes)
        if isinstance(node, (ast.List, ast.Tuple)):
            return [d for e in node.elts for d in _dtype_names(e)]
        owner, _, name = dotted(node).rpartition(".")
        tree = self._tree(self.modules[owner]) if owner in self.modules else self.tree
        if not owner and name in self.names:  # ``from .consts import FLOAT_DTYPES``
            path, name = self.names[name]
            tree = self._tree(path)
        value = next(
            (
                n.value
                for n in (tree.body if tree else [])
                if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
            ),
            None,
        )
        if value is None or value is node:
            notes.append(f"could not read the dtypes {dotted(node) or 'given'}")
            return []
        return self.dtypes(value, notes)

    def class_chain(self, name: str) -> list[tuple[str, ast.ClassDef | None, str]]:
        """The class ``name`` (``base.UnaryPointwiseBenchmark``) and its bases, nearest first
        (every base, breadth first): each name, its statement and its file, as far as the
        package's files define them."""
        out: list[tuple[str, ast.ClassDef | None, str]] = []
        queue = [(name, self)]
        while queue and len(out) < 16:
            dotted_name, where = queue.pop(0)
            owner, _, cls = dotted_name.rpartition(".")
            path = where.modules.get(owner, "") if owner else ""
            if not owner and cls in where.names:  # ``from .base import Benchmark``
                path, cls = where.names[cls]
            if not cls or cls in [c for c, _, _ in out]:
                continue
            tree = (where._tree(path) if path else None) or where.tree
            node = next(
                (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), None
            )
            out.append((cls, node, path or where.path))
            home = _Package(path, tree, self.files) if path else where
            queue += [(dotted(b), home) for b in (node.bases if node else ()) if dotted(b)]
        return out

    def class_dtypes(self, name: str, notes: list[str]) -> list[str]:
        """The dtypes the class ``name`` or a base of it defaults to (``DEFAULT_DTYPES``)."""
        for _, node, path in self.class_chain(name):
            for stmt in node.body if node else ():
                if isinstance(stmt, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "DEFAULT_DTYPES" for t in stmt.targets
                ):
                    tree = self._tree(path) or self.tree
                    return _Package(path, tree, self.files).dtypes(stmt.value, notes)
        return []

    def yaml_shapes(
        self, keys: list[str]
    ) -> tuple[tuple[tuple[int, ...], ...], tuple[str, ...], str]:
        """The ``shapes:`` of the first of ``keys`` a YAML file beside the benchmark has, its
        ``shape_desc`` as dimension names, and where they were read."""
        files = sorted(
            p
            for p in self.texts
            if posixpath.dirname(p) == self.folder and p.endswith((".yaml", ".yml"))
        )
        for key in keys:
            for path in files:
                block = yaml_block(self.texts[path], key)
                if block is not None and block[0]:
                    shapes, desc = block
                    dims = tuple(d.strip() for d in desc.split(",") if d.strip())
                    return shapes, dims, f"{path} ({key})"
        return (), (), ""


YAML_KEY_RE = re.compile(r"^(?P<key>[A-Za-z_][\w.]*):\s*(&(?P<anchor>\w+))?\s*(#.*)?$")


@functools.lru_cache(maxsize=8)
def _yaml_blocks(text: str) -> tuple[dict[str, list[str]], dict[str, str]]:
    """A shapes file's top-level keys, each with its indented lines, and its anchors' keys
    (every benchmark of a package reads the same file: read once)."""
    blocks: dict[str, list[str]] = {}
    anchors: dict[str, str] = {}
    current = None
    for line in text.splitlines():
        match = YAML_KEY_RE.match(line)
        if match:
            current = match["key"]
            blocks[current] = []
            if match["anchor"]:
                anchors[match["anchor"]] = current
        elif current is not None and line.startswith((" ", "\t")):
            blocks[current].append(line.strip())
    return blocks, anchors


def yaml_block(text: str, key: str) -> tuple[tuple[tuple[int, ...], ...], str] | None:
    """``key``'s ``shapes:`` (``- [64, 64]`` items) and ``shape_desc`` in a YAML mapping of the
    form shapes files use; ``<<: *anchor`` takes an anchored block's. None where it has no
    ``key``. A reader of that form only, not of YAML."""
    blocks, anchors = _yaml_blocks(text)
    seen: set[str] = set()
    while key in blocks and key not in seen:
        seen.add(key)
        lines = blocks[key]
        merged = next((ln.split("*", 1)[1].strip() for ln in lines if ln.startswith("<<:")), None)
        shapes: list[tuple[int, ...]] = []
        desc = ""
        for ln in lines:
            item = ln.split("#", 1)[0].strip()
            if item.startswith("- [") and item.endswith("]"):
                with contextlib.suppress(ValueError, SyntaxError):
                    value = ast.literal_eval(item[2:])
                    if _all_ints(value) and value:
                        shapes.append(tuple(value))
            elif item.startswith("shape_desc:"):
                desc = item.split(":", 1)[1].strip().strip("\"'")
        if shapes or merged is None:
            return tuple(dict.fromkeys(shapes)), desc
        key = anchors.get(merged, "")
    return None


def _calls_torch_timer(fn: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call) and dotted(n.func).rsplit(".", 1)[-1] == "Timer"
        for n in ast.walk(fn)
    )


def _marks(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[ast.expr, ast.expr]]:
    """``(argnames, argvalues)`` of each ``@pytest.mark.parametrize`` of ``fn``."""
    return [
        (d.args[0], d.args[1])
        for d in fn.decorator_list
        if isinstance(d, ast.Call) and dotted(d.func).endswith("parametrize") and len(d.args) >= 2
    ]


def _param_values(node: ast.expr, env: dict[str, Any], width: int) -> list[tuple[Any, ...]]:
    """The rows of a parametrize argument list (``pytest.param(...)`` read as its values;
    ``torch.float16`` as ``"torch.float16"``)."""
    if isinstance(node, ast.Name) and isinstance(env.get(node.id), (list, tuple)):
        return [v if width > 1 and isinstance(v, tuple) else (v,) for v in env[node.id]]
    if not isinstance(node, (ast.List, ast.Tuple)):
        raise Unknown(f"a {type(node).__name__} of values")
    rows = []
    for element in node.elts:
        if isinstance(element, ast.Call) and dotted(element.func).endswith("param"):
            rows.append(tuple(_value(a, env) for a in element.args))
        elif width > 1 and isinstance(element, (ast.Tuple, ast.List)):
            rows.append(tuple(_value(a, env) for a in element.elts))
        else:
            rows.append((_value(element, env),))
    return rows


def _value(node: ast.expr, env: dict[str, Any]) -> Any:
    name = dotted(node)
    if name.startswith("torch."):
        return name
    return evaluate(node, env)


def _dtype_of(value: Any) -> str | None:
    return TORCH_DTYPES.get(str(value).removeprefix("torch."))


def _read_params(
    names: list[str], values: list[list[Any]], notes: list[str]
) -> tuple[tuple[str, ...], tuple[tuple[int, ...], ...], list[str], tuple[str, ...], bool]:
    """(dims, shapes, dtypes, lines, takes_dtype) from named parameter values, as the worker
    fills them (``bench_forms.fill``)."""
    dims: tuple[str, ...] = ()
    shapes: tuple[tuple[int, ...], ...] = ()
    dtypes: list[str] = []
    lines: tuple[str, ...] = ()
    ints = []
    for name, vals in zip(names, values, strict=True):
        if not vals:
            continue
        if all(isinstance(v, (tuple, list)) and v and _all_ints(v) for v in vals):
            if not shapes:
                dims, shapes = (name,), tuple(tuple(v) for v in vals)
        elif _all_ints(vals):
            ints.append((name, vals))
        elif all(_dtype_of(v) for v in vals):
            dtypes += [d for v in vals if (d := _dtype_of(v))]
        elif all(isinstance(v, str) for v in vals) and not lines:
            lines = tuple(vals)
    if not shapes and ints:
        dims = tuple(n for n, _ in ints)
        product = list(itertools.islice(itertools.product(*(v for _, v in ints)), MAX_PRODUCT))
        shapes = tuple(dict.fromkeys(product))
        if len(product) == MAX_PRODUCT:
            notes.append(f"the first {MAX_PRODUCT} combinations of {', '.join(dims)}")
    return dims, shapes, dtypes, lines, bool(dtypes)


def _all_ints(values: Any) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) for v in values)


def _parametrized(
    form: Form,
    path: str,
    fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
    marks: list[tuple[ast.expr, ast.expr]],
    env: dict[str, Any],
    *,
    name: str = "",
) -> FoundBenchmark:
    """A pytest-benchmark test or an asv benchmark class, from its parameters' names and
    values."""
    notes: list[str] = []
    names: list[str] = []
    values: list[list[Any]] = []
    for argnames, argvalues in marks:
        try:
            split = _argnames(evaluate(argnames, env))
            rows = _param_values(argvalues, env, len(split))
        except Unknown as exc:
            notes.append(f"could not read a parameter's values ({exc})")
            continue
        for index, arg in enumerate(split):
            names.append(arg)
            values.append(list(dict.fromkeys(r[index] for r in rows if len(r) > index)))
    dims, shapes, dtypes, lines, takes_dtype = _read_params(names, values, notes)
    found = _found(form, path, fn, dims, shapes, dtypes, notes, lines=lines)
    return dataclasses.replace(found, name=name or fn.name, takes_dtype=takes_dtype)


def _argnames(value: Any) -> list[str]:
    if isinstance(value, str):
        return [a.strip() for a in value.split(",") if a.strip()]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise Unknown("parameter names that are not strings")


def _asv(path: str, tree: ast.Module, env: dict[str, Any]) -> list[FoundBenchmark]:
    """asv benchmarks: the first ``time_*`` method of each class with ``params`` (its own or a
    base class's of the same module)."""
    out = []
    classes: dict[str, dict[str, ast.expr]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        attrs = {
            t.id: n.value
            for n in node.body
            if isinstance(n, ast.Assign)
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        timed = [
            n.name
            for n in node.body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("time_")
        ]
        for base in node.bases:  # params set on a base class of the same module
            attrs = {**classes.get(dotted(base), {}), **attrs}
        classes[node.name] = attrs
        params = attrs.get("params")
        if not timed or not isinstance(params, (ast.List, ast.Tuple)) or not params.elts:
            continue
        nested = isinstance(params.elts[0], (ast.List, ast.Tuple, ast.Name))
        lists = list(params.elts) if nested else [params]
        try:
            names = _argnames(evaluate(attrs["param_names"], env))
        except (KeyError, Unknown):
            names = [f"param{i + 1}" for i in range(len(lists))]
        marks: list[tuple[ast.expr, ast.expr]] = [
            (ast.Constant(n), v) for n, v in zip(names, lists, strict=False)
        ]
        out.append(_parametrized("asv", path, node, marks, env, name=f"{node.name}.{timed[0]}"))
    return out


# tritonbench's precisions (``DEFAULT_PRECISION``) as the policy's dtypes
PRECISIONS = {"fp32": "float32", "tf32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def _tritonbench(path: str, tree: ast.Module, env: dict[str, Any]) -> list[FoundBenchmark]:
    """tritonbench operators: each ``@register_benchmark`` method of a ``BenchmarkOperator``
    subclass. The shapes are what ``get_input_iter`` loops over (read through its own
    assignments, or the ``get_x_vals()`` it calls), named after the loop's variables; the dtype
    is the class's ``DEFAULT_PRECISION`` (float32 without one: the operator's tensors are then
    made in torch's default)."""
    out = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or not any(
            dotted(b).rsplit(".", 1)[-1] == "BenchmarkOperator" for b in node.bases
        ):
            continue
        methods = {
            n.name: n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        notes: list[str] = []
        dims, shapes = _input_sweep(methods, env, notes)
        precision = next(
            (
                n.value
                for n in node.body
                if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "DEFAULT_PRECISION" for t in n.targets)
            ),
            None,
        )
        dtype = PRECISIONS.get(str(getattr(precision, "value", "")), "")
        if not dtype:
            notes.append("no DEFAULT_PRECISION: torch's default dtype, float32")
        for method in methods.values():
            if not any(
                dotted(_callee(d)).endswith("register_benchmark") for d in method.decorator_list
            ):
                continue
            found = _found("tritonbench", path, method, dims, shapes, [dtype or "float32"], notes)
            out.append(
                dataclasses.replace(found, name=f"{node.name}.{method.name}", takes_dtype=True)
            )
    return out


def _callee(node: ast.expr) -> ast.expr:
    return node.func if isinstance(node, ast.Call) else node


def _input_sweep(
    methods: Mapping[str, ast.FunctionDef | ast.AsyncFunctionDef],
    env: dict[str, Any],
    notes: list[str],
) -> tuple[tuple[str, ...], tuple[tuple[int, ...], ...]]:
    """What ``get_input_iter`` loops over: the first ``for`` whose values read as integers or
    tuples of them, with its variables as the dimensions' names."""
    method = methods.get("get_input_iter")
    if method is None:
        notes.append("no get_input_iter method")
        return (), ()
    scope = dict(env)
    for stmt in method.body:  # its own constants: ``M = 4096; shapes = [(M, 128 * i) ...]``
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                with contextlib.suppress(Unknown):
                    scope[target.id] = evaluate(stmt.value, scope)
    for loop in ast.walk(method):
        if not isinstance(loop, ast.For):
            continue
        values = _sweep_values(loop.iter, methods, scope)
        if not isinstance(values, (list, tuple)) or not values:
            continue
        target = loop.target
        names = (
            [e.id for e in target.elts if isinstance(e, ast.Name)]
            if isinstance(target, ast.Tuple)
            else []
        )
        dims = tuple(names) if names else (dotted(target) or "x",)
        width = len(values[0]) if isinstance(values[0], (list, tuple)) else 1
        shapes = _shapes(values, width, notes)
        if shapes:
            return (dims if len(dims) == width else ()), shapes
    notes.append("could not read the shapes get_input_iter loops over")
    return (), ()


def _sweep_values(
    node: ast.expr, methods: Mapping[str, ast.FunctionDef | ast.AsyncFunctionDef], scope: dict
) -> Any:
    """A loop's values: read, or what ``self.method()`` of the operator returns."""
    if isinstance(node, ast.Call) and dotted(node.func).startswith("self.") and not node.args:
        called = methods.get(dotted(node.func).removeprefix("self."))
        returned = [n for n in ast.walk(called) if isinstance(n, ast.Return)] if called else []
        node = returned[0].value if len(returned) == 1 and returned[0].value else node
    try:
        return evaluate(node, scope)
    except Unknown:
        return None


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
    """The dotted names ``fn`` calls (or hands to a call), their first part spelled out through the file's imports;
    ``*.name`` for a name of unknown origin (a star import, a builtin), none for the file's own
    functions and the function's own names."""
    own = local | {
        n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    own |= {a.arg for n in ast.walk(fn) if isinstance(n, ast.arguments) for a in _all_args(n)}
    out = set()
    for name in _callees(fn):
        head, _, rest = name.partition(".")
        tail = f".{rest}" if rest else ""
        if head in imports:
            out.add(imports[head] + tail)
        elif head not in own and head not in BUILTINS:  # ``range(...)`` calls no op
            out.add(f"*.{head}{tail}")
    return frozenset(out)


def _is_entry_point(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """``def name(shape, dtype, *, device=..., seed=...)``: the bench entry-point signature."""
    positional = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    named = set(positional[2:]) | {a.arg for a in fn.args.kwonlyargs}
    return positional[:2] == ["shape", "dtype"] and {"device", "seed"} <= named


def _is_perf_report(decorator: ast.expr) -> TypeGuard[ast.Call]:
    return isinstance(decorator, ast.Call) and dotted(decorator.func).endswith("perf_report")


def _calls_timer(fn: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call) and dotted(n.func).rsplit(".", 1)[-1] in TIMERS
        for n in ast.walk(fn)
    )


def _callees(fn: ast.AST) -> list[str]:
    """The dotted names ``fn`` uses as values: those it calls, hands to a call (``benchmark(op,
    x)``: a timer is given the function it times) or binds (``norm = l2norm``)."""
    return [
        dotted(n)
        for n in ast.walk(fn)
        if isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Load) and dotted(n)
    ]


def _called_names(fn: ast.AST) -> frozenset[str]:
    return frozenset(name.rsplit(".", 1)[-1] for name in _callees(fn))


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
    fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
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
        line_calls=_line_calls(fn),
        form=form,
        path=path,
        name=fn.name,
        line=fn.lineno,
        dims=dims,
        shapes=shapes,
        lines=lines,
        dtypes=tuple(dict.fromkeys(dtypes)),
        calls=_called_names(fn),
        takes_dtype=not isinstance(fn, ast.ClassDef) and "dtype" in _parameters(fn)[1],
        notes=tuple(notes),
    )


def _line_calls(fn: ast.AST) -> tuple[tuple[str, frozenset[str]], ...]:
    """For each string an ``if`` of ``fn`` tests with (``provider == "triton"``,
    ``provider.startswith("fused")``), the names its branch uses."""
    out: dict[str, frozenset[str]] = {}
    for node in ast.walk(fn):
        if not isinstance(node, ast.If):
            continue
        called = frozenset(name.rsplit(".", 1)[-1] for part in node.body for name in _callees(part))
        for const in ast.walk(node.test):  # == "triton", .startswith("fused"), in (...)
            if isinstance(const, ast.Constant) and isinstance(const.value, str):
                out[const.value] = out.get(const.value, frozenset()) | called
    for node in ast.walk(fn):
        if isinstance(node, ast.IfExp):
            called = frozenset(n.rsplit(".", 1)[-1] for n in _callees(node.body))
            for const in ast.walk(node.test):
                if isinstance(const, ast.Constant) and isinstance(const.value, str):
                    out[const.value] = out.get(const.value, frozenset()) | called
    return tuple(out.items())


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
