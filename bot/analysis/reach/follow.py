"""What a Python name reaches, across modules: the Python kernels it launches and the compiled
extension ops it calls.

A rewrite's call-site switch often names neither kernel: ``make_quant`` picks ``QuantLinear``
from ``qlinear_triton`` instead of ``qlinear``, an op binding takes ``triton.ops.qkv_gemm_func``
instead of ``inference_module.qkv_gemm_fp16``, a module imports ``triton_kernels as backend``
instead of ``sputnik_backend as backend``. Each name is followed through the files of its side
(imports, module-level and function-local, relative ones too; ``self.method``; a class's
methods; an autograd Function's ``apply``, which runs its ``forward`` and, differentiated, its
``backward``; names a module binds to others: a package's re-export, a star import, a
module-level alias such as ``f = Fn.apply``) to what it launches
(``kernel[grid](...)``) and to the extension ops it calls (``reach.extensions``), a few calls
deep and a bounded number of files. A class is followed per method: its ``forward`` and its
``backward`` are roles of their own, so a switch pairs forward with forward. A function called
with literals, passed or left to its defaults (``fp32_to_mx4(x)`` with ``use_triton: bool =
True``), is followed on the paths they take (``call_values``, ``launch_values.decided``): what
only a branch they rule out reaches (``if use_triton:`` under ``use_triton=False``) is not
reached.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from bot.analysis.launch_values import decided
from bot.analysis.model import PYTHON_LANGUAGES, KernelDef
from bot.analysis.reach.extensions import Extension, ExtensionIndex, loaded_extensions, torch_op
from bot.analysis.scan import scan_read
from bot.analysis.text import (
    absolute,
    children,
    module_bindings,
    module_of,
    parse_python_or_none,
    walk,
)

Reader = Callable[[str], "str | None"]
Func = ast.FunctionDef | ast.AsyncFunctionDef

_DEPTH = 5
# Methods too many objects have for a call on an untyped receiver to say which class it is (nor,
# as a kernel's wrapper, which kernel an op of that name stands for).
COMMON_METHODS = frozenset(
    [
        "forward",
        "backward",
        "apply",
        "run",
        "get",
        "set",
        "update",
        "item",
        "to",
        "cuda",
        "cpu",
        "view",
        "size",
        "copy",
        "clone",
        "append",
        "extend",
        "pop",
        "items",
        "keys",
        "values",
        "format",
        "join",
        "split",
        "strip",
        "read",
        "write",
        "close",
        "open",
        "load",
        "save",
        "reset",
        "step",
        "train",
        "eval",
        "zero_",
        "fill_",
        "add",
        "add_",
        "mul",
        "sum",
        "mean",
        "max",
        "min",
        "reshape",
        "contiguous",
        "float",
        "half",
        "int",
        "long",
        "numpy",
        "tolist",
        "detach",
    ]
)
# What compiles a CUDA source string at run time (CuPy).
_COMPILERS = frozenset(["RawKernel", "RawModule", "ElementwiseKernel", "ReductionKernel"])
_MAX_FILES = 24
_MAX_FUNCS = 200
_MAX_BINDINGS = 6  # of one instance attribute, followed


@dataclass(frozen=True)
class Op:
    """One op of an extension module, as Python calls it."""

    extension: Extension
    name: str


@dataclass
class Reach:
    kernels: set[str] = field(default_factory=set)  # Python kernels launched
    ops: set[Op] = field(default_factory=set)
    # of those, what only an autograd Function's backward reaches (its role is backward)
    back_kernels: set[str] = field(default_factory=set)
    back_ops: set[Op] = field(default_factory=set)
    # where the kernels launched are defined, as (path, name): two modules may each define a
    # kernel of one name (a decay and a no-decay variant)
    sites: set[tuple[str, str]] = field(default_factory=set)

    def add(self, other: Reach) -> None:
        self.kernels |= other.kernels
        self.ops |= other.ops
        self.back_kernels |= other.back_kernels
        self.back_ops |= other.back_ops
        self.sites |= other.sites

    def forward(self) -> Reach:
        """What runs in the forward role: all but what only a backward reaches."""
        kernels = self.kernels - self.back_kernels
        sites = {x for x in self.sites if x[1] in kernels}
        return Reach(kernels=kernels, ops=self.ops - self.back_ops, sites=sites)

    def backward(self) -> Reach:
        """What runs in the backward role only."""
        sites = {x for x in self.sites if x[1] in self.back_kernels}
        return Reach(kernels=set(self.back_kernels), ops=set(self.back_ops), sites=sites)


def _launched(mod: _Module, name: str) -> Reach:
    """The kernel ``name`` of ``mod``, launched."""
    return Reach(kernels={name}, sites={(mod.path, name)})


def imports_in(nodes: Sequence[ast.AST], path: str) -> dict[str, set[str]]:
    """Every import in ``nodes`` (nested blocks too, not nested functions' own): local name ->
    qualified names (several where branches import the same name from different modules)."""
    out: dict[str, set[str]] = {}
    todo = list(nodes)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.ImportFrom):
            base = absolute(node.module, node.level, path)
            for a in node.names:
                out.setdefault(a.asname or a.name, set()).add(
                    f"{base}.{a.name}" if base else a.name
                )
        elif isinstance(node, ast.Import):
            for a in node.names:
                local = a.asname or a.name.split(".")[0]
                out.setdefault(local, set()).add(a.name if a.asname else local)
        elif (imported := _import_module(node)) is not None:
            out.setdefault(imported[0], set()).add(imported[1])
        elif not isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
        ):  # an import is a statement: expressions hold none, and are not walked
            todo.extend([c for c in children(node) if isinstance(c, _HOLD_STATEMENTS)])
    return out


_HOLD_STATEMENTS = (ast.stmt, ast.excepthandler, ast.match_case)


def _import_module(node: ast.AST) -> tuple[str, str] | None:
    """``(name, module)`` of ``name = importlib.import_module("module")``: an import written as
    a call (``fastfold_softmax_cuda = importlib.import_module("fastfold_softmax_cuda")``, how
    apex-style code imports its extensions)."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
        return None
    target, value = node.targets[0], node.value
    if not (isinstance(target, ast.Name) and isinstance(value, ast.Call) and value.args):
        return None
    callee = dotted(value.func) or ""
    module = value.args[0]
    if callee.rsplit(".", 1)[-1] != "import_module" or not isinstance(module, ast.Constant):
        return None
    if not isinstance(module.value, str) or module.value.startswith("."):
        return None
    return target.id, module.value


def _kernel_aliases(tree: ast.Module, kernels: set[str]) -> dict[str, str]:
    """Module-level names bound to a kernel of the module: ``_fwd = _fwd_kernel_impl``,
    ``_fwd_autotune = triton.autotune(configs=...)(_fwd_kernel_impl)``."""
    out: dict[str, str] = {}
    for stmt in tree.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            continue
        target, value = stmt.targets[0], stmt.value
        if not isinstance(target, ast.Name) or target.id in kernels:
            continue
        if isinstance(value, ast.Call) and len(value.args) == 1:
            value = value.args[0]  # a decorator applied by a call
        if isinstance(value, ast.Name) and value.id in kernels:
            out[target.id] = value.id
    return out


def _raw_sources(tree: ast.Module, kernels: Sequence[KernelDef]) -> dict[str, set[str]]:
    """The CUDA kernels a module holds as source strings, by their names and by the
    module-level names their sources are bound to (``_SRC_PCK = r\"\"\"...\"\"\"``)."""
    raw = [k for k in kernels if k.language not in PYTHON_LANGUAGES]
    out: dict[str, set[str]] = {k.name: {k.name} for k in raw}
    for stmt in tree.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            continue
        target = stmt.targets[0]
        last = stmt.end_lineno or stmt.lineno
        held = {k.name for k in raw if stmt.lineno <= k.line_start <= last}
        if isinstance(target, ast.Name) and held:
            out.setdefault(target.id, set()).update(held)
    return out


def _raw_ops(mod: _Module, call: ast.Call) -> set[Op]:
    """A call handed a source-string kernel by name or by source (``cp.RawKernel(src, name)``,
    ``_kernel(cp, "fused_decode_pck", _SRC_PCK)``): the kernels it compiles and runs, as ops of
    the module that holds them."""
    named: set[str] = set()
    held: set[str] = set()
    for arg in (*call.args, *(k.value for k in call.keywords)):
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            if arg.value in mod.raw.get(arg.value, ()):  # the kernel's own name
                named.add(arg.value)
        elif isinstance(arg, ast.Name) and arg.id not in mod.raw.get(arg.id, ()):
            held |= mod.raw.get(arg.id, set())  # a name its source is bound to
    callee = dotted(call.func) or ""
    if callee.rsplit(".", 1)[-1] not in _COMPILERS and not held:
        return set()  # a name mentioned (a log line), not compiled
    names = (named & held) or named or held
    if not names:
        return set()
    ext = Extension(
        name=mod.name,
        how=f"cupy.RawKernel in {mod.path.rsplit('/', 1)[-1]}",
        where=mod.path,
        sources=(mod.path,),
    )
    return {Op(ext, n) for n in names}


def dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _chosen(func: ast.AST) -> dict[str, list[str]]:
    """Local names a function binds to other names (``fn = A``, ``fn = A if flag else B``):
    the names a call through them may reach."""
    out: dict[str, list[str]] = {}
    for sub in walk(func):
        if isinstance(sub, ast.Assign) and len(sub.targets) == 1:
            target = sub.targets[0]
        elif isinstance(sub, ast.AnnAssign) and sub.value is not None:
            target = sub.target  # ``fn: Callable = A if flag else B``
        else:
            continue
        if not isinstance(target, ast.Name) or sub.value is None:
            continue
        values = (
            [sub.value.body, sub.value.orelse] if isinstance(sub.value, ast.IfExp) else [sub.value]
        )
        names = [d for v in values if (d := dotted(v))]
        if names and len(names) == len(values):
            out.setdefault(target.id, []).extend(names)
    return out


@dataclass
class _Module:
    path: str
    name: str
    tree: ast.Module
    imports: dict[str, set[str]]
    defs: dict[str, Func | ast.ClassDef]  # "f", "Cls", "Cls.method"
    launches: dict[str, set[str]]  # host function ("f" / "Cls.m") -> kernels it launches
    kernels: set[str]
    loaded: dict[str, Extension]  # names bound to a load() build
    # CUDA kernels whose source is a string of this module (``cupy.RawKernel``), by what a
    # call names them with: the kernel's name as a literal, or the module name holding its source
    raw: dict[str, set[str]] = field(default_factory=dict)
    # module-level names bound to another name (``lightning_attn2 = LightningAttention2.apply``)
    aliases: dict[str, list[str]] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    # module-level names bound to what a call returns (``fp16_matmul = Fp16Matmul()``), by the
    # name called: an instance of that class, or of the class a factory function returns
    instances: dict[str, str] = field(default_factory=dict)


def _module_aliases(
    body: Sequence[ast.stmt], defs: dict[str, Func | ast.ClassDef]
) -> dict[str, list[str]]:
    """Module-level ``name = other`` (``other`` a name or attribute, not a def of its own
    name), in ``if`` / ``try`` blocks too (``fn = a`` or ``fn = b`` by a vendor test): what a
    call through ``name`` reaches is what each ``other`` reaches."""
    out: dict[str, list[str]] = {}
    for name, found in module_bindings(body).items():
        values = [stmt.value for stmt, _ in found if isinstance(stmt, (ast.Assign, ast.AnnAssign))]
        targets = [d for v in values if v is not None and (d := dotted(v)) and d != name]
        if targets and name not in defs:
            out[name] = list(dict.fromkeys(targets))
    return out


def _module_instances(tree: ast.Module, defs: dict[str, Func | ast.ClassDef]) -> dict[str, str]:
    """Module-level ``name = f(...)`` bound once, by ``f`` as written: what ``name.method``
    calls is ``f``'s class's method when ``f`` is a class or a factory returning one."""
    out: dict[str, str] = {}
    for name, found in module_bindings(tree.body).items():
        if len(found) != 1 or name in defs or not isinstance(found[0][0], ast.Assign):
            continue
        value = found[0][0].value
        if isinstance(value, ast.Call) and (callee := dotted(value.func)):
            out[name] = callee
    return out


def _class_attributes(node: ast.ClassDef) -> dict[str, str]:
    """A class body's ``attr = other`` (a name or attribute, ``_2d_kernel =
    kernels._fp_matmul``), bound once: what ``Cls.attr`` / ``self.attr`` / ``__class__.attr``
    refers to."""
    bound = _module_aliases(node.body, {})
    return {name: targets[0] for name, targets in bound.items() if len(targets) == 1}


def _instance_attributes(node: ast.ClassDef) -> dict[str, list[tuple[str, Func]]]:
    """A class's methods' ``self.attr = other`` (a name or attribute: ``self.fn =
    self.inference_module.softmax_context_fp16``) and ``self.attr = Cls(...)`` (an instance:
    ``self.score_context_func = SoftmaxContextOp(config)``), each with the method binding it
    (whose own imports name it): what ``self.attr(...)`` in another method runs, every
    binding of it (a flag or a dtype picks one)."""
    out: dict[str, list[tuple[str, Func]]] = {}
    for method in node.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for sub in walk(method):
            if not (isinstance(sub, ast.Assign) and len(sub.targets) == 1):
                continue
            target, value = sub.targets[0], sub.value
            if not (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            ):
                continue
            named = dotted(value.func if isinstance(value, ast.Call) else value)
            if named and named != f"self.{target.attr}":
                found = out.setdefault(target.attr, [])
                if len(found) < _MAX_BINDINGS and all(n != named for n, _ in found):
                    found.append((named, method))
    return out


def _returned_calls(node: Func) -> list[str]:
    """The names a function's ``return f(...)`` statements call, as written."""
    return [
        d
        for sub in walk(node)
        if isinstance(sub, ast.Return) and isinstance(sub.value, ast.Call)
        if (d := dotted(sub.value.func))
    ]


_FLAGS = (bool, str, type(None))  # the literals a parameter picks a path by
_Seen = set[tuple[str, str]]  # the functions followed, by file and name
_At = ast.Call | None  # the call a name is followed by, where known


def call_values(func: Func, call: ast.Call | None) -> dict[str, str]:
    """The parameters of ``func`` that hold a literal (a bool, None, a string) at ``call``: one
    the call passes so, or one it leaves to such a default (``use_triton: bool = True``); none
    the function assigns again (``use_triton = False`` on a CPU tensor), and none at all where
    the call spreads ``*args`` or ``**kwargs`` (what it passes is not known)."""
    if call is None or any(isinstance(a, ast.Starred) for a in call.args):
        return {}
    if any(k.arg is None for k in call.keywords):
        return {}
    args = func.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    if positional and positional[0] in ("self", "cls"):
        positional = positional[1:]
    given: dict[str, ast.expr] = dict(
        zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True)
    )
    given.update(
        {a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None}
    )
    given.update(zip(positional, call.args, strict=False))
    given.update({k.arg: k.value for k in call.keywords if k.arg is not None})
    out = {
        name: ast.unparse(value)
        for name, value in given.items()
        if isinstance(value, ast.Constant) and isinstance(value.value, _FLAGS)
    }
    if out:  # the function's own assignments, read only where a literal is there to lose
        for n in walk(func):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                out.pop(n.id, None)
    return out


def taken_nodes(func: Func, values: dict[str, str]) -> list[ast.AST]:
    """Every node of ``func`` on the paths its parameters' literal ``values`` take: of a test
    they decide (``if use_triton:``, ``if not use_triton``, ``if x.is_cuda and use_triton``
    when false), the test and the branch taken, and nothing after it where that branch returns;
    every node where ``values`` is empty."""
    if not values:
        return list(walk(func))
    out: list[ast.AST] = []
    try:
        _taken(func, values, out)
    except RecursionError:
        return list(walk(func))
    return out


def _launched_in(kernel: str, nodes: list[ast.AST], func: Func) -> bool:
    """Whether a kernel the function ``func`` launches is named on the paths taken (``nodes``),
    or nowhere in it (launched through a name bound to it, not told apart so)."""

    def named(found: Iterable[ast.AST]) -> bool:
        return any(
            (isinstance(n, ast.Name) and n.id == kernel)
            or (isinstance(n, ast.Attribute) and n.attr == kernel)
            for n in found
        )

    return named(nodes) or not named(walk(func))


def _taken(node: ast.AST, values: dict[str, str], out: list[ast.AST]) -> bool:
    """Adds what of ``node`` runs to ``out``; whether, as a statement, it ends its block."""
    if isinstance(node, (ast.If, ast.IfExp)) and (answer := decided(node.test, values)) is not None:
        out.extend(walk(node.test))
        branch = node.body if answer else node.orelse
        if isinstance(branch, list):
            return _block(branch, values, out)
        _taken(branch, values, out)
        return False
    out.append(node)
    for value in (getattr(node, name, None) for name in node._fields):
        if isinstance(value, ast.AST):
            _taken(value, values, out)
        elif isinstance(value, list):
            _block([v for v in value if isinstance(v, ast.AST)], values, out)
    return isinstance(node, (ast.Return, ast.Raise))


def _block(items: list, values: dict[str, str], out: list[ast.AST]) -> bool:
    """Adds what of a block runs; whether it ends (what follows runs on the path not taken)."""
    return any(_taken(item, values, out) and isinstance(item, ast.stmt) for item in items)


def _each(calls: Sequence[ast.Call]) -> list[ast.Call | None]:
    """The calls to follow a name by, one at a time; where none is known, the name alone."""
    return list(calls) or [None]


def _branch_nodes(nodes: Sequence[ast.AST]) -> list[ast.AST]:
    """Every node of ``nodes`` but the bodies of the functions, classes and lambdas they
    define (followed as definitions, not run in place)."""
    out: list[ast.AST] = []
    todo = list(nodes)
    while todo:
        node = todo.pop()
        out.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(children(node))
    return out


class Side:
    """One revision's Python, read lazily: modules by name, the extension index."""

    def __init__(
        self,
        paths: Sequence[str],
        read: Reader,
        extensions: ExtensionIndex,
        own: frozenset[str] = frozenset(),
    ) -> None:
        self.paths = list(paths)
        # the diff's files: read whatever their number (the analysis reads them anyway); the
        # bound is on the files a name is followed to outside the diff
        self.own = own
        self._outside = 0
        self.read = read
        self.extensions = extensions
        self._by_module: dict[str, str] = {}
        for p in self.paths:
            if p.endswith(".py"):
                self._by_module.setdefault(module_of(p), p)
        self._modules: dict[str, _Module | None] = {}
        self._owners: dict[tuple[str, str], list[str]] = {}
        self._chosen: dict[int, dict[str, list[str]]] = {}  # by the function node's id
        self._classes_of: dict[tuple[str, str, int], list[str]] = {}  # see ``_classes``
        self._instance_attrs: dict[tuple[str, str], dict[str, list[tuple[str, Func]]]] = {}

    def chosen(self, func: Func) -> dict[str, list[str]]:
        """``_chosen`` of a function of a module read (made once: a long function is walked
        by every call followed from it)."""
        if id(func) not in self._chosen:
            self._chosen[id(func)] = _chosen(func)
        return self._chosen[id(func)]

    def path_of(self, module: str) -> str | None:
        if module in self._by_module:
            return self._by_module[module]
        tail = "." + module  # a package under src/ or another root
        hits = [p for m, p in self._by_module.items() if m.endswith(tail)]
        return hits[0] if len(hits) == 1 else None

    def module(self, path: str) -> _Module | None:
        if path in self._modules:
            return self._modules[path]
        self._modules[path] = None
        if path not in self.own:
            self._outside += 1
            if self._outside > _MAX_FILES:
                return None
        text = self.read(path)
        tree = parse_python_or_none(text)
        if text is None or tree is None:
            return None
        defs: dict[str, Func | ast.ClassDef] = {}
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defs[node.name] = node
            if isinstance(node, ast.ClassDef):
                for sub in node.body:
                    if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        defs[f"{node.name}.{sub.name}"] = sub
        scan = scan_read(path, text, self.read)
        kernels = {k.name for k in scan.kernels if k.language in PYTHON_LANGUAGES and k.launched}
        aliases = _kernel_aliases(tree, kernels)
        launches: dict[str, set[str]] = {}
        for x in scan.launches:
            if x.wrapper and x.language in PYTHON_LANGUAGES:
                launches.setdefault(x.wrapper, set()).add(aliases.get(x.kernel, x.kernel))
        mod = _Module(
            path=path,
            name=module_of(path),
            tree=tree,
            imports=imports_in(tree.body, path),
            defs=defs,
            launches=launches,
            kernels=kernels,
            loaded=loaded_extensions(path, tree, self.paths),
            raw=_raw_sources(tree, scan.kernels),
            aliases=_module_aliases(tree.body, defs),
            lines=text.split("\n"),
            instances=_module_instances(tree, defs),
        )
        self._modules[path] = mod
        return mod

    def kernel_path(self, name: str) -> str | None:
        """The file of the modules read so far that defines the launched kernel ``name``."""
        for mod in self._modules.values():
            if mod is not None and name in mod.kernels:
                return mod.path
        return None

    def locate(self, qualified: str) -> tuple[_Module, str] | None:
        """``pkg.mod.Cls.method`` -> (the module, ``Cls.method``), the longest module first."""
        parts = qualified.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            path = self.path_of(".".join(parts[:cut]))
            if path is None:
                continue
            mod = self.module(path)
            if mod is not None:
                return mod, ".".join(parts[cut:])
            return None
        return None

    def extension_op(self, qualified: str, mod: _Module | None = None) -> Op | None:
        """The extension op ``qualified`` names: ``ext.op`` for an imported extension module,
        a ``load()``-bound name or a loader's result, ``torch.ops.ns.op``."""
        t = torch_op(qualified)
        if t is not None:
            ext = self.extensions.library(t[0], self.extensions.named_cpp(t[0], t[1]))
            return Op(ext or Extension(name=t[0], how="torch.ops", where=""), t[1])
        head, _, rest = qualified.rpartition(".")
        if not head:
            return None
        if mod is not None and head.split(".")[0] in mod.loaded:
            return Op(mod.loaded[head.split(".")[0]], rest)
        ext = self.extensions.module(head)
        if ext is not None:
            return Op(ext, rest)
        return None

    def follow(
        self, qualified: str, depth: int = _DEPTH, calls: Sequence[ast.Call] = ()
    ) -> dict[str, Reach]:
        """Per role, what ``qualified`` reaches: a function's is role ``""``, a class's one per
        method; an extension op reached directly is role ``""`` too. A name a module binds to
        another (a package's re-export, ``from .m import *``, ``f = Cls.apply``) is followed to
        what it is bound to. ``calls``: the calls made of it, where known; a function is then
        followed on the paths their literal arguments take, each call's (``call_values``)."""
        op = self.extension_op(qualified)
        if op is not None:
            return {"": Reach(ops={op})}
        found = self.locate(qualified)
        if found is None:
            return {}
        mod, name = found
        node = mod.defs.get(name)
        bound = self._bound(mod, name, qualified) if node is None and depth > 0 else []
        if bound:
            out: dict[str, Reach] = {}
            for q in bound:
                for role, reach in self.follow(q, depth - 1, calls).items():
                    out.setdefault(role, Reach()).add(reach)
            if out:
                return out
        if isinstance(node, ast.ClassDef):
            out = {}
            for sub in node.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    reach = self._walk(mod, f"{name}.{sub.name}", _DEPTH, set())
                    if reach.kernels or reach.ops:
                        out[sub.name] = reach
            return out
        if node is not None:
            reach = Reach()
            for call in _each(calls):
                reach.add(self._walk(mod, name, _DEPTH, set(), call))
            return {"": reach}
        op = self.extension_op(qualified, mod)
        return {"": Reach(ops={op})} if op is not None else {}

    def reach_call(self, path: str, func: str, called: str) -> Reach:
        """What the call ``called`` (as written, ``mod.f`` / ``self.m`` / ``f``) made in the
        function ``func`` (``f`` / ``Cls.m``) of the module at ``path`` reaches."""
        mod = self.module(path)
        node = mod.defs.get(func) if mod is not None else None
        if mod is None or node is None or isinstance(node, ast.ClassDef):
            return Reach()
        cls = func.split(".")[0] if "." in func else None
        out = Reach()
        local = imports_in(node.body, mod.path)
        head, dot, rest = called.partition(".")
        calls = self.calls_of(path, func, called)
        for alias in self.chosen(node).get(head, [head]):
            for qualified in self._resolve(mod, alias + dot + rest, local, cls):
                for call in _each(calls):
                    out.add(self._reach_of(mod, qualified, _DEPTH, set(), call))
        return out

    def calls_of(self, path: str, func: str, called: str) -> list[ast.Call]:
        """The calls the function ``func`` (``f`` / ``Cls.m``) of the module at ``path`` makes
        of ``called`` (as written, or qualified: matched by its last name), launches aside."""
        mod = self.module(path)
        node = mod.defs.get(func) if mod is not None else None
        if node is None or isinstance(node, ast.ClassDef):
            return []
        last = called.rsplit(".", 1)[-1]
        return [
            sub
            for sub in walk(node)
            if isinstance(sub, ast.Call) and (dotted(sub.func) or "").rsplit(".", 1)[-1] == last
        ]

    def keyed_kernels(self, path: str, func: str, called: str) -> dict[str, set[str]]:
        """Per string literal that the function the call ``called`` (made in ``func`` of the
        module at ``path``) compares with (``if strategy == "cell":``), the Python kernels the
        branch under that test reaches."""
        mod = self.module(path)
        node = mod.defs.get(func) if mod is not None else None
        if mod is None or node is None or isinstance(node, ast.ClassDef):
            return {}
        cls = func.split(".")[0] if "." in func else None
        local = imports_in(node.body, mod.path)
        out: dict[str, set[str]] = {}
        head, dot, rest = called.partition(".")
        named = [called] if self.locate(called) is not None else []  # qualified already
        for alias in self.chosen(node).get(head, [head]):
            for qualified in named or self._resolve(mod, alias + dot + rest, local, cls):
                found = self.locate(qualified)
                target = found[0].defs.get(found[1]) if found is not None else None
                if found is None or target is None or isinstance(target, ast.ClassDef):
                    continue
                for sub in walk(target):
                    if not isinstance(sub, ast.If) or not (
                        literals := _compared_literals(sub.test)
                    ):
                        continue
                    reach = self.reach_in(found[0].path, sub.body, found[1])
                    for lit in literals:
                        out.setdefault(lit, set()).update(reach.kernels)
        return out

    def definition(self, path: str, func: str, called: str) -> str | None:
        """The text of the function or class the call ``called`` made in ``func`` of the module
        at ``path`` resolves to (the autograd Function of ``Fn.apply``), through the names
        modules bind to others; None where it resolves to none."""
        mod = self.module(path)
        node = mod.defs.get(func) if mod is not None else None
        if mod is None or node is None or isinstance(node, ast.ClassDef):
            return None
        cls = func.split(".")[0] if "." in func else None
        local = imports_in(node.body, mod.path)
        head, dot, rest = called.partition(".")
        for alias in self.chosen(node).get(head, [head]):
            for qualified in self._resolve(mod, alias + dot + rest, local, cls):
                if (text := self._definition(qualified, _DEPTH)) is not None:
                    return text
        return None

    def _definition(self, qualified: str, depth: int) -> str | None:
        found = self.locate(qualified)
        if found is None:
            return None
        mod, name = found
        for candidate in (name, name.rpartition(".")[0]):  # ``Fn.apply``: the class
            if (node := mod.defs.get(candidate)) is not None:
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                return "\n".join(mod.lines[first - 1 : node.end_lineno or node.lineno])
        for q in self._bound(mod, name, qualified) if depth > 0 else []:
            if (text := self._definition(q, depth - 1)) is not None:
                return text
        return None

    def reach_in(
        self, path: str, nodes: Sequence[ast.AST], scope: str = "", beside: Sequence[ast.AST] = ()
    ) -> Reach:
        """What one branch of a test reaches: the calls in ``nodes`` (statements or expressions
        of the module at ``path``, in its function ``scope`` or at module level), the names
        they assign (``self.fn = ops.f``: what a later call of it runs) and the functions they
        define (a ``def`` in the branch is what its name runs). Classes and functions defined
        in the branch or ``beside`` it (the rest of the branch, where ``nodes`` is one
        definition of it), and extensions they load, are resolved before the module's own."""
        mod = self.module(path)
        if mod is None:
            return Reach()
        stmts = [n for n in [*nodes, *beside] if isinstance(n, ast.stmt)]
        defs: dict[str, Func | ast.ClassDef] = {}
        for found in (s for n in stmts for s in walk(n)):
            if isinstance(found, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defs.setdefault(found.name, found)
            if isinstance(found, ast.ClassDef):
                for method in found.body:
                    if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        defs.setdefault(f"{found.name}.{method.name}", method)
        imports = [n for n in mod.tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        tree = ast.Module(body=[*imports, *stmts], type_ignores=[])
        loaded = loaded_extensions(path, tree, self.paths)
        view = replace(mod, defs={**mod.defs, **defs}, loaded={**mod.loaded, **loaded})
        cls = scope.split(".")[0] if "." in scope else None
        outer = mod.defs.get(scope)
        local = imports_in([*(outer.body if outer is not None else []), *nodes, *beside], path)
        out = Reach()
        seen: set[tuple[str, str]] = set()
        depth = _DEPTH + 2  # the branch's own definitions, then a package's re-export
        for sub in _branch_nodes(nodes):
            target: ast.AST | None
            if isinstance(sub, ast.Call):
                target = sub.func.value if isinstance(sub.func, ast.Subscript) else sub.func
            elif isinstance(sub, ast.Assign):
                target = sub.value
            else:
                target = sub if sub in nodes and isinstance(sub, ast.expr) else None
            called = dotted(target) if target is not None else None
            for qualified in self._resolve(view, called, local, cls) if called else []:
                out.add(self._reach_of(view, qualified, depth, seen))
        for node in (s for n in nodes for s in walk(n)):
            if (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and defs.get(node.name) is node
            ):
                out.add(self._walk(view, node.name, depth, seen))
        return out

    def _walk(self, mod: _Module, name: str, depth: int, seen: _Seen, call: _At = None) -> Reach:
        """What the function or class ``name`` of ``mod`` reaches; called by ``call``, only on
        the paths the literals it passes or leaves to defaults take (``call_values``)."""
        out = Reach()
        node = mod.defs.get(name)
        values = call_values(node, call) if isinstance(node, Func) else {}
        key = (mod.path, name + "".join(f" {k}={v}" for k, v in sorted(values.items())))
        if key in seen or depth <= 0 or len(seen) > _MAX_FUNCS:
            return out
        seen.add(key)
        if isinstance(node, ast.ClassDef):  # a class called: what its __init__ / __call__ run
            for method in ("__init__", "__call__", "forward"):
                if f"{name}.{method}" in mod.defs:
                    out.add(self._walk(mod, f"{name}.{method}", depth - 1, seen))
            return out
        if node is None:
            return out
        nodes = taken_nodes(node, values)
        for kernel in mod.launches.get(name, set()):
            if values and not _launched_in(kernel, nodes, node):
                continue  # launched on a path the call does not take
            out.kernels.add(kernel)
            out.sites |= self._kernel_sites(mod, kernel)
        cls = name.split(".")[0] if "." in name else None
        local = imports_in(node.body, mod.path)
        chosen = self.chosen(node)
        for sub in nodes:
            if not isinstance(sub, ast.Call):
                continue
            if mod.raw:
                out.ops |= _raw_ops(mod, sub)
            target = sub.func.value if isinstance(sub.func, ast.Subscript) else sub.func
            called = dotted(target)
            if not called:
                continue
            head, dot, rest = called.partition(".")
            for alias in chosen.get(head, [called]):
                for qualified in self._resolve(
                    mod, alias + dot + rest if alias != called else called, local, cls
                ):
                    out.add(self._reach_of(mod, qualified, depth, seen, sub))
        return out

    def _resolve(
        self, mod: _Module, called: str, local: dict[str, set[str]], cls: str | None
    ) -> list[str]:
        head, dot, rest = called.partition(".")
        if head in ("self", "cls", "__class__") and cls and rest:
            return [f"{mod.name}.{cls}.{rest}"]
        if impls := _op_impls(mod, called):
            return impls
        if head in local or head in mod.imports:
            return [q + dot + rest for q in sorted(local.get(head) or mod.imports[head])]
        if head in mod.defs or head in mod.loaded or head in mod.aliases:
            return [f"{mod.name}.{called}"]
        if head in mod.instances and rest and self._classes(mod, mod.instances[head], _DEPTH):
            return [f"{mod.name}.{called}"]  # a method of the instance's class
        if head == "torch":
            return [called]
        if rest:  # ``wrapper.add_lora(...)`` on a local or parameter: the one class that has it
            return self._method_owner(mod, rest.rsplit(".", 1)[-1])
        return []

    def _method_owner(self, mod: _Module, method: str) -> list[str]:
        """``module.Cls.method`` when exactly one class of ``mod`` and of the modules it imports
        from defines ``method`` (a name common to many objects is no evidence: none)."""
        if method in COMMON_METHODS or method.startswith("_"):
            return []
        key = (mod.path, method)
        if key not in self._owners:
            modules = [mod]
            for qualified in sorted({q for qs in mod.imports.values() for q in qs}):
                found = self.locate(qualified)
                other = found[0] if found is not None else None
                if other is None and (path := self.path_of(qualified)) is not None:
                    other = self.module(path)
                if other is not None and all(other is not m for m in modules):
                    modules.append(other)
            owners = sorted(
                f"{m.name}.{name}"
                for m in modules
                for name in m.defs
                if name.count(".") == 1 and name.endswith("." + method)
            )
            self._owners[key] = owners if len(owners) == 1 else []
        return self._owners[key]

    def _applied(self, mod: _Module, cls: str, depth: int, seen: set[tuple[str, str]]) -> Reach:
        """``Fn.apply(...)`` of an autograd Function: its ``forward`` runs, and its ``backward``
        when the result is differentiated (both launch at the call)."""
        out = Reach()
        if f"{cls}.forward" in mod.defs:
            out.add(self._walk(mod, f"{cls}.forward", depth - 1, seen))
        if f"{cls}.backward" in mod.defs:
            back = self._walk(mod, f"{cls}.backward", depth - 1, seen)
            out.back_kernels |= back.kernels - out.kernels
            out.back_ops |= back.ops - out.ops
            out.add(back)
        return out

    def _reach_of(
        self, mod: _Module, qualified: str, depth: int, seen: _Seen, call: _At = None
    ) -> Reach:
        """What ``qualified`` (as ``mod`` names it) reaches; ``call``: the call made of it,
        whose literal arguments pick the paths a function takes."""
        if qualified.startswith(mod.name + "."):
            name = qualified[len(mod.name) + 1 :]
            if name.split(".")[0] in mod.loaded:
                op = self.extension_op(name, mod)
                return Reach(ops={op}) if op else Reach()
            if name in mod.kernels:
                return _launched(mod, name)
            if name.endswith(".apply") and name[: -len(".apply")] in mod.defs:
                return self._applied(mod, name[: -len(".apply")], depth, seen)
            if name in mod.defs:
                return self._walk(mod, name, depth - 1, seen, call)
        op = self.extension_op(qualified)
        if op is not None:
            return Reach(ops={op})
        found = self.locate(qualified)
        if found is None:
            return Reach()
        other, name = found
        if name in other.kernels:
            return _launched(other, name)
        if name.endswith(".apply") and name[: -len(".apply")] in other.defs:
            return self._applied(other, name[: -len(".apply")], depth, seen)
        if name in other.defs:
            return self._walk(other, name, depth - 1, seen, call)
        bound = self._bound(other, name, qualified) if depth > 0 else []
        out = Reach()
        for q in bound:
            out.add(self._reach_of(other, q, depth - 1, seen, call))
        return out if bound else self._held_op(name)

    def _kernel_sites(self, mod: _Module, kernel: str) -> set[tuple[str, str]]:
        """Where a kernel ``mod`` launches as ``kernel`` is defined: in ``mod``, or in the
        module it imports the name from."""
        if kernel in mod.kernels:
            return {(mod.path, kernel)}
        out = set()
        for q in sorted(mod.imports.get(kernel, ())):
            found = self.locate(q)
            if found is not None and found[1] in found[0].kernels:
                out.add((found[0].path, found[1]))
        return out

    def _bound(self, mod: _Module, name: str, qualified: str) -> list[str]:
        """The qualified names ``mod``'s own ``name`` (or ``name.attr``) is bound to, where it
        is no def of ``mod``: an import (a package's re-export, ``from ._fwd import f``), a
        module-level alias (``f = Cls.apply``, ``f = other.g``), or a star import of a module
        that defines or binds it."""
        head, dot, rest = name.partition(".")
        node = mod.defs.get(head)
        if isinstance(node, ast.ClassDef) and rest:  # ``Cls.attr``: a class attribute's value
            attr, dot, rest = rest.partition(".")
            value = _class_attributes(node).get(attr)
            if value is not None:
                resolved = self._resolve(mod, value, {}, None)
            else:  # set on the instance: ``self.attr = ...`` in a method, as its imports name it
                resolved = [
                    q
                    for named, method in self._instance_attributes(mod, node).get(attr, [])
                    for q in self._resolve(mod, named, imports_in(method.body, mod.path), head)
                ]
            return [q + dot + rest for q in resolved if q != qualified]
        if node is not None:
            return []
        if head in mod.instances and rest:  # ``obj.method``: the method of obj's class
            return [f"{c}.{rest}" for c in self._classes(mod, mod.instances[head], _DEPTH)]
        if head in mod.imports:
            out = [q + dot + rest for q in sorted(mod.imports[head])]
        elif head in mod.aliases:
            out = [
                q + dot + rest
                for target in mod.aliases[head]
                for q in self._resolve(mod, target, {}, None)
            ]
        else:
            out = []
            for star in sorted(mod.imports.get("*", ())):
                path = self.path_of(star[: -len(".*")])
                other = self.module(path) if path is not None else None
                if (
                    other is not None
                    and other is not mod
                    and (head in other.defs or head in other.imports or head in other.aliases)
                ):
                    out.append(f"{other.name}.{name}")
        return [q for q in out if q != qualified]

    def _instance_attributes(
        self, mod: _Module, node: ast.ClassDef
    ) -> dict[str, list[tuple[str, Func]]]:
        """``_instance_attributes`` of a class of a module read (made once per class)."""
        key = (mod.path, node.name)
        if key not in self._instance_attrs:
            self._instance_attrs[key] = _instance_attributes(node)
        return self._instance_attrs[key]

    def _classes(self, mod: _Module, callee: str, depth: int) -> list[str]:
        """The classes, qualified, whose instance a call of ``callee`` (as written in ``mod``)
        returns: the class called, or those a factory function returns (``return Cls(...)``)."""
        key = (mod.path, callee, depth)
        if key in self._classes_of:
            return self._classes_of[key]
        self._classes_of[key] = []  # a factory returning its own call's result
        out: list[str] = []
        for q in self._resolve(mod, callee, {}, None):
            found = self.locate(q)
            if found is None:
                continue
            other, name = found
            node = other.defs.get(name)
            if isinstance(node, ast.ClassDef):
                out.append(f"{other.name}.{name}")
            elif node is not None and depth > 0:
                for returned in _returned_calls(node):
                    out += self._classes(other, returned, depth - 1)
        self._classes_of[key] = list(dict.fromkeys(out))
        return self._classes_of[key]

    def _held_op(self, name: str) -> Reach:
        """``Cls.inference_module.qkv_gemm_fp16``: an op of an extension held in an attribute
        not followed to its build (set in a base class of another file, by an op builder's
        ``load()``), where a C++ file named like the attribute registers that op."""
        holder, _, op = name.rpartition(".")
        if "." not in holder:
            return Reach()
        ext = self.extensions.holder(holder.rsplit(".", 1)[-1], op)
        return Reach(ops={Op(ext, op)}) if ext is not None else Reach()


def _compared_literals(test: ast.expr) -> list[str]:
    """The strings a test compares with ``==`` (``strategy == "cell"``, ``"cell" == s``)."""
    out = []
    for sub in walk(test):
        if isinstance(sub, ast.Compare) and all(isinstance(o, ast.Eq) for o in sub.ops):
            for side in (sub.left, *sub.comparators):
                if isinstance(side, ast.Constant) and isinstance(side.value, str):
                    out.append(side.value)
    return out


def _op_impls(mod: _Module, called: str) -> list[str]:
    """``torch.ops.ns.op``'s implementations registered in the calling module itself
    (``@torch.library.impl(lib, "op", "CUDA")``, ``@torch.library.impl("ns::op", ...)``,
    ``@torch.library.custom_op("ns::op")``): what the op runs, qualified."""
    parts = called.split(".")
    if len(parts) != 4 or parts[1] != "ops":
        return []
    ns, op = parts[2], parts[3]
    out = []
    for name, node in mod.defs.items():
        for deco in (
            getattr(node, "decorator_list", []) if not isinstance(node, ast.ClassDef) else []
        ):
            if not isinstance(deco, ast.Call) or dotted(deco.func) not in _REGISTRARS:
                continue
            named = [a.value for a in deco.args if isinstance(a, ast.Constant)]
            if op in named or f"{ns}::{op}" in named:
                out.append(f"{mod.name}.{name}")
    return out


_REGISTRARS = {
    "torch.library.impl",
    "torch.library.custom_op",
    "torch.library.register_kernel",
    "library.impl",
    "library.custom_op",
}
