"""Triton kernels in Python source: ``ast`` on whole files, patterns on diff lines.

A kernel is a function decorated (directly, or stacked under ``@triton.autotune`` /
``@triton.heuristics``) with ``triton.jit``, resolved through the file's imports (``import triton
as tr``, ``from triton import jit``). ``@triton.autotune(configs=...)`` is followed through a
module-level name, a ``+`` of lists or a no-argument helper that returns a list, and each
``triton.Config`` becomes a :class:`TritonConfig`. Launches are ``kernel[grid](...)`` calls.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import re
from collections.abc import Iterator

from bot.analysis.languages import (
    MARKER_WORDS,
    UNRECOGNISED,
    decorator_role,
    imports_gpu_module,
    kernel_like,
)
from bot.analysis.launch_slice import FunctionSlices
from bot.analysis.launch_values import LaunchValues
from bot.analysis.model import (
    MAX_PER_FILE,
    FileScan,
    KernelDef,
    Language,
    LaunchSite,
)
from bot.analysis.same_code import (
    normal_function,
    with_einops_axes_named_in_order,
    without_unread_parameters,
)
from bot.analysis.scan.triton_config import Autotune, _dotted, _literal
from bot.analysis.text import (
    JIT_CALL,
    children,
    collapse,
    digest,
    is_tuning_line,
    is_tuning_name,
    module_bindings,
    parse_python,
    python_digest,
    walk,
)

# x[grid](...), or a CuPy kernel(grid=..., args=...): without a DSL's name or these, no kernels
_LAUNCH_HINT = re.compile(r"\]\s*\(|\bgrid\s*=")
_DSL_HINT = re.compile("|".join((*MARKER_WORDS, "__global__")))


@contextlib.contextmanager
def _canonical_locals(func: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[None]:
    """Within the block, ``func``'s local variables (names it assigns, less its parameters and
    those it declares ``global``/``nonlocal``) are named ``_v0``, ``_v1``, ... in the order they
    first appear: two kernels that differ only by a local renamed throughout (``l`` to ``l_i``)
    compile to the same program, and read the same here. The names are put back on exit (no
    copy of the tree)."""
    params = {a.arg for a in walk(func.args) if isinstance(a, ast.arg)}
    names = [n for s in func.body for n in walk(s) if isinstance(n, ast.Name)]
    declared = {
        n for s in func.body for x in walk(s) if isinstance(x, (ast.Global, ast.Nonlocal))
        for n in x.names
    }  # fmt: skip
    order: dict[str, str] = {}
    for n in names:
        if isinstance(n.ctx, (ast.Store, ast.Del)) and n.id not in params | declared:
            order.setdefault(n.id, f"_v{len(order)}")
    with _names_as([(n, order[n.id]) for n in names if n.id in order]):
        yield


@contextlib.contextmanager
def _names_as(renames: list[tuple[ast.Name, str]]) -> Iterator[None]:
    """Within the block, each ``Name`` node reads as the name given; put back on exit."""
    before = [(n, n.id) for n, _ in renames]
    for n, name in renames:
        n.id = name
    try:
        yield
    finally:
        for n, name in before:
            n.id = name


@contextlib.contextmanager
def _modules_spelled_out(
    func: ast.FunctionDef | ast.AsyncFunctionDef, modules: dict[str, str], imported: dict[str, str]
) -> Iterator[None]:
    """Within the block, each name of ``func`` bound to a module by an import alias is written as
    the module's dotted name: ``tl.load`` after ``import triton.language as tl`` and
    ``triton.language.load`` are one program, so renaming the alias is no change. ``modules``
    holds ``import M as N`` names; ``imported`` the names of ``from P import M as N``, written out
    only where ``func`` uses the name as a namespace alone (``tle.program_id(0)``), as a module
    is used (a function called by its bare name keeps it). Annotations (``x: tl.constexpr``)
    too; names ``func`` assigns or takes as parameters are left. Put back on exit (no copy)."""
    names = [n for s in (func.args, *func.body) for n in walk(s) if isinstance(n, ast.Name)]
    if not names or not (modules or imported):
        yield
        return
    params = {a.arg for a in walk(func.args) if isinstance(a, ast.arg)}
    left = params | {n.id for n in names if not isinstance(n.ctx, ast.Load)}
    bases = {
        id(a.value) for s in (func.args, *func.body) for a in walk(s)
        if isinstance(a, ast.Attribute) and isinstance(a.value, ast.Name)
    }  # fmt: skip
    bare = {n.id for n in names if id(n) not in bases}
    spelled = {k: v for k, v in imported.items() if k not in bare} | modules
    with _names_as([(n, spelled[n.id]) for n in names if n.id in spelled and n.id not in left]):
        yield


# ------------------------------------------------------------------------------ whole files


def _signature_without_defaults(args: ast.arguments) -> str:
    """A signature's parameters, annotations and defaults as text, except the defaults of
    ``constexpr`` parameters: those an autotuner's configs may set instead."""

    def one(a: ast.arg, default: ast.expr | None) -> str:
        annotation = ast.unparse(a.annotation) if a.annotation is not None else ""
        keep = default is not None and "constexpr" not in annotation
        return f"{a.arg}:{annotation}={ast.unparse(default) if keep and default else ''}"

    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    defaults += args.defaults
    parts = [one(a, d) for a, d in zip(positional, defaults, strict=True)]
    parts += [f"*{args.vararg.arg}" if args.vararg else "*"]
    parts += [one(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    parts += [f"**{args.kwarg.arg}"] if args.kwarg else []
    return ", ".join(parts)


def may_hold_kernels(text: str, markers: tuple[str, ...] = ()) -> bool:
    """Whether Python ``text`` shows anything a kernel or a launch is made of (a DSL's word, a
    policy marker, a ``kernel[grid](...)`` launch): a file without is not parsed at all."""
    hinted = any(m.rsplit(".", 1)[-1] in text for m in markers)
    return hinted or bool(_DSL_HINT.search(text) or _LAUNCH_HINT.search(text))


def scan_python(
    path: str, text: str, markers: tuple[str, ...] = (), bound: tuple[tuple[str, str], ...] = ()
) -> FileScan:
    """``markers``: the policy's ``kernel_decorators`` (dotted names, as resolved or written);
    ``bound``: names the file imports that the repository binds to Triton's (``bound_names``)."""
    if not may_hold_kernels(text, markers):
        return FileScan(path=path, kind="python", language=None, complete=True)
    try:
        tree = without_unread_parameters(parse_python(text))
        if "einops" in text:  # no pattern to rename otherwise: no walk over the tree
            tree = with_einops_axes_named_in_order(tree)
        reader = _Reader(path, tree, text.split("\n"), markers, dict(bound))
        reader.read(tree)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        if isinstance(exc, SyntaxError):
            why = (
                f"is not valid Python (line {exc.lineno})" if exc.lineno else "is not valid Python"
            )
        else:
            why = "is nested too deeply to read as Python"
        from bot.analysis.scan.triton_lines import scan_python_lines

        lines = [line.rstrip("\r") for line in text.split("\n")]
        scan = scan_python_lines(path, lines, (), markers=markers)
        note = f"{path} {why}; its kernels were found by patterns"
        return scan.model_copy(update={"notes": (*scan.notes, note)})
    kernels = tuple(reader.kernels)
    notes = (
        (
            f"{path} has more than {MAX_PER_FILE} kernels: {MAX_PER_FILE} of them were read, "
            "the others not analysed",
        )
        if reader.over_cap
        else ()
    )
    return FileScan(
        path=path,
        kind="python",
        language="triton" if kernels else None,
        complete=True,
        kernels=kernels,
        launches=tuple(reader.launches),
        tuning_constants=reader.tuning_constants(),
        notes=notes,
    )


def deco_kind(
    dotted: str | None, markers: tuple[str, ...] = (), written: str | None = None
) -> tuple[str, Language] | None:
    """``(kind, language)``: kind ``jit`` (a kernel), ``autotune``, ``heuristics``, ``factory``
    (``@tilelang.jit``) or ``host`` (``@cute.jit``), by the languages' decorators."""
    found = decorator_role(dotted, markers, written)
    if found is None or dotted is None:
        return None
    role, language = found
    if role == "tuner":
        return ("heuristics" if dotted.endswith("heuristics") else "autotune"), language
    return ("jit" if role == "kernel" else role), language


def _kernel_language(found: list[tuple[str, Language] | None]) -> Language:
    """The language of a function's kernel (or factory) decorator; Triton's when none says."""
    for f in found:
        if f is not None and f[0] in ("jit", "factory", "host"):
            return f[1]
    return "triton"


class _Reader:
    def __init__(
        self,
        path: str,
        tree: ast.Module,
        lines: list[str],
        markers: tuple[str, ...] = (),
        bound: dict[str, str] | None = None,
    ) -> None:
        self.path = path
        self.lines = lines
        self.markers = markers
        self.aliases: dict[str, str] = {}
        self.modules: dict[str, str] = {}  # an import alias of a module -> the module's name
        self.assigns: dict[str, ast.expr] = {}
        self.funcs: dict[str, ast.FunctionDef] = {}
        self.kernels: list[KernelDef] = []
        self.launches: list[LaunchSite] = []
        self.over_cap = False  # a kernel past MAX_PER_FILE was left unread
        self._wrappers: dict[int, tuple[dict[str, str], int, int]] = {}  # by the node's id
        self._locals: dict[int, dict[str, ast.expr]] = {}  # by the node's id
        self._slices: dict[int, FunctionSlices] = {}  # by the host function's id
        self._values: dict[int, LaunchValues] = {}
        for node in tree.body:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.assigns[target.id] = node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                if node.value is not None:
                    self.assigns[node.target.id] = node.value
            elif isinstance(node, ast.FunctionDef):
                self.funcs[node.name] = node
        self.defs = module_bindings(tree.body)  # in ifs and trys too
        self.autotune = Autotune(self.assigns, self.defs, self.funcs, bound)
        imported: list[str] = []
        functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []  # one walk for both
        for walked in walk(tree):
            if isinstance(walked, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.append(walked)
            elif isinstance(walked, ast.Import):
                for a in walked.names:
                    imported.append(a.name)
                    if a.asname:
                        self.aliases[a.asname] = a.name
                        self.modules[a.asname] = a.name
            elif isinstance(walked, ast.ImportFrom) and walked.module and walked.level == 0:
                imported.append(walked.module)
                for a in walked.names:
                    self.aliases[a.asname or a.name] = f"{walked.module}.{a.name}"
        self.aliases.update(bound or {})  # ``from project import triton_jit``: ``triton.jit``
        imported += (bound or {}).values()
        self.gpu_file = imports_gpu_module(imported)
        self.kernel_names = {
            f.name
            for f in functions
            if any(k and k[0] == "jit" for k in self._kinds(f.decorator_list))
        }

    def _kinds(self, decorators: list[ast.expr]) -> list[tuple[str, Language] | None]:
        return [
            deco_kind(_dotted(d, self.aliases), self.markers, _dotted(d, {})) for d in decorators
        ]

    def _launch_language(
        self, node: ast.Call, wrapper: ast.FunctionDef | ast.AsyncFunctionDef | None
    ) -> Language:
        """``k[grid](...)`` is Triton's (Gluon's too); ``k(...).launch(...)`` is CuTe's when a
        ``@cute.jit`` function launches it, else an unrecognised language's."""
        if isinstance(node.func, ast.Subscript):
            return "triton"
        found = self._kinds(wrapper.decorator_list) if wrapper is not None else []
        return "cute" if any(f and f[1] == "cute" for f in found) else "unrecognised"

    def _hosts(self, node: ast.AST) -> bool:
        """Whether a ``@cute.jit`` function is host code: it launches a kernel
        (``k(...).launch(grid=...)``) or calls one of the file's kernels by name."""
        if _launches_in(node):
            return True
        called = {_dotted(c.func, {}) for c in walk(node) if isinstance(c, ast.Call)}
        return any(c and c.rsplit(".", 1)[-1] in self.kernel_names for c in called)

    def _has_prim_func(self, node: ast.AST) -> bool:
        return any(
            isinstance(sub, ast.FunctionDef)
            and any((k or ("",))[0] == "jit" for k in self._kinds(sub.decorator_list))
            for sub in walk(node)
            if sub is not node
        )

    def tuning_constants(self) -> dict[str, str]:
        return {
            name: ast.unparse(value)
            for name, value in self.assigns.items()
            if is_tuning_name(name) or (name.isupper() and "CONFIG" in name)
        }

    def read(self, tree: ast.Module) -> None:
        """One pass over the tree: kernels, launches with the function around them, and what
        tells a jit helper from a kernel (see ``_mark_helpers``)."""
        Func = ast.FunctionDef | ast.AsyncFunctionDef
        todo: list[tuple[ast.AST, ast.FunctionDef | ast.AsyncFunctionDef | None]] = [(tree, None)]
        jit_nodes: set[int] = set()
        jitted = {  # module level: ``k = triton.jit(k)``
            stmt.value.args[0].id
            for stmt in tree.body
            if isinstance(stmt, ast.Assign)
            and isinstance(stmt.value, ast.Call)
            and (self._kinds([stmt.value.func])[0] or ("",))[0] == "jit"
            and stmt.value.args
            and isinstance(stmt.value.args[0], ast.Name)
        }
        jitted |= self._jitted_in_functions(tree)
        tables: dict[str, str] | None = None  # read on the first ``K["key"][grid](...)``
        applied: list[tuple[str, ast.Call, ast.AST | None]] = []  # k = triton.autotune(...)(k)
        self.handed_to: list[tuple[str, str]] = []  # f(k): (function, name)
        called: set[str] = set()  # called by name inside a jit function
        used: set[str] = set()  # launched, handed on, or aliased
        while todo:
            node, around = todo.pop()
            if isinstance(node, Func):
                if len(self.kernels) >= MAX_PER_FILE and not self.over_cap:
                    found = self._kinds(node.decorator_list)
                    self.over_cap = (around is None and node.name in jitted) or any(
                        f is not None and f[0] in ("jit", "factory", "host") for f in found
                    )
                if around is None and node.name in jitted and len(self.kernels) < MAX_PER_FILE:
                    # ``k = triton.jit(k)`` after an undecorated ``def k``
                    self.kernels.append(self._kernel(node, [None] * len(node.decorator_list),
                                                     "triton", around))  # fmt: skip
                    jit_nodes.add(id(node))
                elif node.decorator_list and len(self.kernels) < MAX_PER_FILE:
                    found = self._kinds(node.decorator_list)
                    kinds = [f[0] if f else None for f in found]
                    language = _kernel_language(found)
                    if "jit" in kinds:
                        self.kernels.append(self._kernel(node, kinds, language, around))
                        jit_nodes.add(id(node))
                    elif "factory" in kinds and not self._has_prim_func(node):
                        # ``@tilelang.jit`` over a body that opens ``T.Kernel``: the kernel itself
                        self.kernels.append(self._kernel(node, kinds, language, around))
                    elif "host" in kinds and not self._hosts(node):
                        # ``@cute.jit`` that launches nothing: a device function kernels call
                        helper = self._kernel(node, kinds, language, around)
                        self.kernels.append(helper.model_copy(update={"launched": False}))
                        jit_nodes.add(id(node))
                    elif (
                        self.gpu_file
                        and not _launches_in(node)
                        and any(
                            kind is None and kernel_like(_dotted(d, self.aliases))
                            for d, kind in zip(node.decorator_list, kinds, strict=True)
                        )
                    ):
                        # A kernel-like decorator no language claims, in a file importing a
                        # GPU module: a kernel in a language the analysis cannot read (one
                        # that launches ``k(...).launch(grid=...)`` is its host launcher).
                        self.kernels.append(self._kernel(node, kinds, UNRECOGNISED.name, around))
                around = node
            elif isinstance(node, ast.Call):
                in_jit = around is not None and id(around) in jit_nodes
                inner = node.func
                if (
                    isinstance(inner, ast.Call)
                    and (self._kinds([inner.func])[0] or ("",))[0] == "autotune"
                    and node.args
                    and isinstance(node.args[0], ast.Name)
                ):
                    applied.append((node.args[0].id, inner, around))
                if isinstance(node.func, ast.Name):
                    for value in node.args:
                        if isinstance(value, ast.Name):
                            self.handed_to.append((node.func.id, value.id))
                        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
                            self.handed_to.append((node.func.id, f"{value.func.id}()"))
                if in_jit and isinstance(node.func, ast.Name):
                    called.add(node.func.id)
                if in_jit:  # ``tl.reduce(x, 0, combine)``: a combine function is a helper too
                    handed = [*node.args, *(kw.value for kw in node.keywords)]
                    called.update(a.id for a in handed if isinstance(a, ast.Name))
                if not in_jit:  # inside a kernel, a function handed on is a combine function
                    for value in (*node.args, *(kw.value for kw in node.keywords)):
                        if isinstance(value, ast.Name):
                            used.add(value.id)  # handed on: autotune(...)(k), a launcher table
                cute = _dsl_launch(node)
                if cute is not None and len(self.launches) < MAX_PER_FILE:
                    self.launches.append(self._launch(node, cute, around))
                factory = (
                    _cupy_factory(node, self._bindings(around))
                    if around is not None and _cupy_call(node)
                    else None
                )
                if factory is not None and len(self.launches) < MAX_PER_FILE:
                    self.launches.append(self._cupy_launch(node, factory, around))
                if isinstance(node.func, ast.Subscript) and len(self.launches) < MAX_PER_FILE:
                    name = self._wrapped(node.func.value) or _dotted(node.func.value, {})
                    if name is None:  # ``K["pck"][grid](...)``: the kernel the table holds
                        if tables is None and isinstance(node.func.value, ast.Subscript):
                            tables = _kernel_tables(tree)
                        name = _table_entry(node.func.value, tables or {})
                    elif name:
                        bindings = self._bindings(around) if around is not None else {}
                        name = _bound_kernel(name.split(".")[-1], around, bindings)
                    if name:
                        self.launches.append(self._launch(node, name, around))
            elif (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and "__global__" in node.value
                and len(self.kernels) < MAX_PER_FILE
            ):
                self.kernels += _kernels_in_string(self.path, node, around)
            elif isinstance(node, (ast.BinOp, ast.JoinedStr)) and (joined := _joined_source(node)):
                # ``r"""...""" + str(n) + r"""..."""``: one source, its values as names
                if "__global__" in joined and len(self.kernels) < MAX_PER_FILE:
                    source = ast.Constant(value=joined, lineno=node.lineno)
                    self.kernels += _kernels_in_string(self.path, source, around)
                continue
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.attr in ("run", "warmup", "fn", "__getitem__")
            ):
                used.add(node.value.id)
            elif around is None and isinstance(node, ast.Name):
                used.add(node.id)  # module-level aliases and tables: ``KERNELS = {..: k}``
            todo.extend([(child, around) for child in children(node)])
        self.kernels.sort(key=lambda k: k.line_start)
        self.launches.sort(key=lambda x: x.line)
        used.update(x.kernel for x in self.launches)
        self._applied_autotune(applied, tree)
        self._mark_helpers(called, used)

    def _jitted_in_functions(self, tree: ast.Module) -> set[str]:
        """Module-level functions a factory makes kernels of: ``triton.jit(kernel)`` inside a
        function, where ``kernel`` is the module-level function or a local assigned from it
        (``kernel = k``, ``kernel = copy_func(kernel, ...)``)."""
        if not any(JIT_CALL.search(line) for line in self.lines):
            return set()  # most files: read no further
        plain = {
            s.name
            for s in tree.body
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and not s.decorator_list
        }
        out: set[str] = set()
        for func in tree.body:
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            sources: dict[str, set[str]] = {}  # local -> the names its values are made of
            for node in walk(func):
                if isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target = node.targets[0]
                    value = node.value
                    while isinstance(value, ast.Call) and value.args:
                        value = value.args[0]  # copy_func(kernel, ...): the function copied
                    if isinstance(target, ast.Name) and isinstance(value, ast.Name):
                        sources.setdefault(target.id, set()).add(value.id)
            for node in walk(func):
                if (
                    isinstance(node, ast.Call)
                    and node.args
                    and isinstance(node.args[0], ast.Name)
                    and (self._kinds([node.func])[0] or ("",))[0] == "jit"
                ):
                    names, todo = set(), [node.args[0].id]
                    while todo:
                        name = todo.pop()
                        if name not in names:
                            names.add(name)
                            todo.extend(sources.get(name, ()))
                    out |= names & plain
        return out

    def _wrapped(self, value: ast.expr) -> str | None:
        """The kernel of ``wrap_triton(k)[grid](...)`` (``torch.library.wrap_triton``,
        ``capture_triton``, any one-argument call handed a kernel of the file or an imported
        name): the call returns the kernel to launch."""
        if not (
            isinstance(value, ast.Call)
            and len(value.args) == 1
            and not value.keywords
            and isinstance(value.args[0], ast.Name)
        ):
            return None
        name = value.args[0].id
        return name if name in self.kernel_names or name in self.aliases else None

    def _mark_helpers(self, called: set[str], used: set[str]) -> None:
        """A jit function another jit function of the file calls, and that nothing launches
        (``k[grid](...)``, ``k.run``, ``k.warmup``, passed as a value), is a helper."""
        self.kernels = [
            k.model_copy(update={"launched": False})
            if k.name in called and k.name not in used and k.language in ("triton", "gluon")
            else k
            for k in self.kernels
        ]

    def _kernel(
        self,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        kinds: list,
        language: Language,
        around: ast.FunctionDef | ast.AsyncFunctionDef | None,
    ) -> KernelDef:
        configs = None
        configs_source = None
        built_by = None
        computed = False
        key: tuple[str, ...] = ()
        heuristics: dict[str, str] = {}
        for deco, kind in zip(node.decorator_list, kinds, strict=True):
            if kind == "autotune" and isinstance(deco, ast.Call):
                configs, configs_source, computed, key, built_by = self.autotune.read(deco)
            elif kind == "heuristics" and isinstance(deco, ast.Call) and deco.args:
                values = deco.args[0]
                if isinstance(values, ast.Dict):
                    for k, v in zip(values.keys, values.values, strict=True):
                        if k is not None:
                            heuristics[str(_literal(k))] = ast.unparse(v)
        body = node.body
        first = body[0]
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
            and len(body) > 1
        ):
            body = body[1:]
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        end = node.end_lineno or node.lineno
        stripped = copy.copy(node)
        stripped.decorator_list = []
        stripped.body = body
        if language == "tilelang" and around is not None:
            stripped = around  # a prim_func is made by its factory: the factory is its code
        normal = normal_function(stripped)  # text-only differences put in one form
        with _canonical_locals(normal), _modules_spelled_out(normal, self.modules, self.aliases):
            code = python_digest([ast.unparse(normal)])
            code_without_defaults = digest(
                [_signature_without_defaults(node.args)]
            ) + python_digest([ast.unparse(s) for s in normal.body])
        return KernelDef(
            language=language,
            name=node.name,
            path=self.path,
            line_start=start,
            line_end=end,
            body_start=body[0].lineno,
            body_end=end,
            digest=code,
            digest_without_defaults=code_without_defaults,
            decorators=tuple(
                ast.unparse(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list
            ),
            configs=configs,
            configs_source=configs_source,
            autotune_key=key,
            heuristics=heuristics,
            constexprs=_constexprs(node.args),
            params=tuple(a.arg for a in (*node.args.posonlyargs, *node.args.args)),
            configs_computed=computed,
            configs_built_by=built_by,
        )

    def _applied_autotune(
        self, applied: list[tuple[str, ast.Call, ast.AST | None]], tree: ast.Module
    ) -> None:
        """``k = triton.autotune(...)(k)``, also inside a function handed the kernel
        (``def autotune_kernel(kernel): return triton.autotune(...)(kernel)``), or handed what
        a factory of the module makes of it (``autotune_kernel(_get_splitk_kernel(n))``, whose
        body unrolls ``_fwd_kernel_splitK``: the kernels the factory names)."""
        by_name = {k.name: i for i, k in enumerate(self.kernels)}
        made = {name[:-2] for _, name in self.handed_to if name.endswith("()")}
        factories = {
            f.name: {n.id for n in walk(f) if isinstance(n, ast.Name)} & by_name.keys()
            for f in (walk(tree) if made and applied else ())
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name in made
        }
        handed: dict[str, set[str]] = {}  # function -> kernels it is called with
        for func, name in self.handed_to:
            kernels = factories.get(name[:-2], set()) if name.endswith("()") else {name}
            handed.setdefault(func, set()).update(kernels)
        for name, call, around in applied:
            targets = {name}
            if isinstance(around, (ast.FunctionDef, ast.AsyncFunctionDef)):
                params = {a.arg for a in (*around.args.posonlyargs, *around.args.args)}
                if name in params:
                    targets = handed.get(around.name, set())
            configs, source, computed, key, built_by = self.autotune.read(call)
            for target in targets & by_name.keys():
                k = self.kernels[by_name[target]]
                self.kernels[by_name[target]] = k.model_copy(
                    update={
                        "decorators": (*k.decorators, "triton.autotune (applied by a call)"),
                        "configs": configs,
                        "configs_source": source,
                        "configs_computed": computed,
                        "configs_built_by": built_by,
                        "autotune_key": key,
                    }
                )

    def _wrapper(
        self, wrapper: ast.FunctionDef | ast.AsyncFunctionDef
    ) -> tuple[dict[str, str], int, int]:
        """The tuning values a launching function assigns and its lines, once
        per function: one function that launches every kernel of a file was walked per launch."""
        if id(wrapper) in self._wrappers:
            return self._wrappers[id(wrapper)]
        tuning: dict[str, str] = {}
        for stmt in walk(wrapper):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
                if isinstance(target, ast.Name) and is_tuning_name(target.id):
                    key = f"{target.id} (in {wrapper.name})"
                    value = ast.unparse(stmt.value)
                    tuning[key] = f"{tuning[key]}; {value}" if key in tuning else value
        start = min([wrapper.lineno, *(d.lineno for d in wrapper.decorator_list)])
        end = wrapper.end_lineno or wrapper.lineno
        self._wrappers[id(wrapper)] = (tuning, start, end)
        return self._wrappers[id(wrapper)]

    def _bindings(self, around: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, ast.expr]:
        """Each name's first assignment in ``around`` (in ``ast.walk``'s order), once per
        function."""
        if id(around) not in self._locals:
            found: dict[str, ast.expr] = {}
            for stmt in walk(around):
                if isinstance(stmt, ast.Assign):
                    for t in stmt.targets:
                        if isinstance(t, ast.Name):
                            found.setdefault(t.id, stmt.value)
            self._locals[id(around)] = found
        return self._locals[id(around)]

    def _cupy_launch(
        self, node: ast.Call, factory: str, wrapper: ast.FunctionDef | ast.AsyncFunctionDef | None
    ) -> LaunchSite:
        """``kernel(grid=..., block=..., args=(...))`` of a kernel a factory compiled
        (``cupy.RawKernel``): named by the factory, which the kernel's ``built_by`` names."""
        kw = {k.arg: ast.unparse(k.value) for k in node.keywords if k.arg}
        positional = [ast.unparse(a) for a in node.args]
        grid = kw.get("grid", positional[0] if positional else "")
        block = kw.get("block", positional[1] if len(positional) > 1 else "")
        args = kw.get("args", positional[2] if len(positional) > 2 else "")
        digest_ = None
        if wrapper is not None:
            if id(wrapper) not in self._slices:
                self._slices[id(wrapper)] = FunctionSlices(wrapper, lambda t: not is_tuning_line(t))
            digest_ = self._slices[id(wrapper)].launch_digest(node, factory)
        return LaunchSite(
            kernel=factory,
            language="cuda",
            path=self.path,
            line=node.lineno,
            grid=collapse(f"{grid}; block={block}" if block else grid),
            args=collapse(args),
            wrapper=wrapper.name if wrapper is not None else None,
            wrapper_digest=digest_,
        )

    def _launch(
        self, node: ast.Call, kernel: str, wrapper: ast.FunctionDef | ast.AsyncFunctionDef | None
    ) -> LaunchSite:
        """``k[grid](args, num_warps=...)``, or CuTe's ``k(args).launch(grid=..., block=...)``."""
        tuning: dict[str, str] = {}
        if isinstance(node.func, ast.Subscript):
            grid, call, options = ast.unparse(node.func.slice), node, node.keywords
        else:
            assert isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Call)
            call = node.func.value
            grid = next((ast.unparse(k.value) for k in node.keywords if k.arg == "grid"), "")
            options = [k for k in node.keywords if k.arg != "grid"]
            tuning.update({k.arg: ast.unparse(k.value) for k in options if k.arg})
            options = call.keywords
        args = [ast.unparse(a) for a in call.args]
        for kw in options:
            text = ast.unparse(kw.value)
            if kw.arg and is_tuning_name(kw.arg):
                tuning[kw.arg] = text
            else:
                args.append(f"{kw.arg or '**'}={text}")
        w_start = w_end = None
        w_digest = v_digest = t_digest = u_digest = None
        if wrapper is not None:
            w_tuning, w_start, w_end = self._wrapper(wrapper)
            tuning.update(w_tuning)
            if id(wrapper) not in self._slices:
                self._slices[id(wrapper)] = FunctionSlices(wrapper, lambda t: not is_tuning_line(t))
            w_digest = self._slices[id(wrapper)].launch_digest(node, kernel)
            t_digest = self._slices[id(wrapper)].launch_digest(node, kernel, tuning=True)
            if id(wrapper) not in self._values:
                self._values[id(wrapper)] = LaunchValues(wrapper)
            v_digest = self._values[id(wrapper)].digest(node)
            u_digest = self._values[id(wrapper)].digest(node, untuned=True)
        return LaunchSite(
            kernel=kernel,
            language=self._launch_language(node, wrapper),
            path=self.path,
            line=node.lineno,
            grid=collapse(grid),
            args=collapse(", ".join(args)),
            tuning=tuning,
            wrapper=wrapper.name if wrapper is not None else None,
            wrapper_start=w_start,
            wrapper_end=w_end,
            wrapper_digest=w_digest,
            value_digest=v_digest,
            untuned_digest=u_digest,
            tuning_digest=t_digest,
        )


def _joined_source(node: ast.expr) -> str | None:
    """A string built by ``+`` from literals and values (``str(n)``, names, f-string fields), or
    an f-string, as one text: each value is written as a name made of its expression
    (``str(l1_size + 8)`` is ``l1_size_8``), so two versions compare by what is written around
    the values. ``None`` unless a piece is a string literal with a line break (source text)."""
    pieces: list[str | ast.expr] = []

    def add(part: ast.expr) -> None:
        if isinstance(part, ast.BinOp) and isinstance(part.op, ast.Add):
            add(part.left)
            add(part.right)
        elif isinstance(part, ast.JoinedStr):
            for value in part.values:
                add(value.value if isinstance(value, ast.FormattedValue) else value)
        elif isinstance(part, ast.Constant) and isinstance(part.value, str):
            pieces.append(part.value)
        else:
            pieces.append(part)

    add(node)
    if not any(isinstance(p, str) and "\n" in p for p in pieces):
        return None  # checked before any value is written out: most sums are arithmetic
    out = []
    for p in pieces:
        if isinstance(p, ast.Call) and ast.unparse(p.func) == "str" and p.args:
            p = p.args[0]
        out.append(p if isinstance(p, str) else re.sub(r"\W+", "_", ast.unparse(p)).strip("_"))
    return "".join(out)


def _kernels_in_string(
    path: str, node: ast.Constant, around: ast.FunctionDef | ast.AsyncFunctionDef | None
) -> list[KernelDef]:
    """CUDA kernels written in a Python string (compiled at run time: ``cupy.RawKernel``,
    ``load_inline``), at their lines in the Python file."""
    from bot.analysis.scan.cpp import scan_cpp

    first = node.lineno
    lines: list[str | None] = [line.rstrip("\r") for line in str(node.value).split("\n")]
    scan = scan_cpp(path, lines, complete=True, line_at=lambda n: first + n - 1)
    host = around.name if around is not None else None
    return [k.model_copy(update={"built_by": host}) for k in scan.kernels]


def _cupy_call(node: ast.Call) -> bool:
    """``name(grid=..., args=...)``: CuPy's way to launch a compiled kernel."""
    given = {k.arg for k in node.keywords}
    return isinstance(node.func, ast.Name) and {"grid", "args"} <= given


def _cupy_factory(node: ast.Call, bindings: dict[str, ast.expr]) -> str | None:
    """The function whose result ``node`` (a :func:`_cupy_call`) launches: ``kernel =
    make_kernel(...)`` bound in the same function."""
    if not isinstance(node.func, ast.Name):
        return None
    value = bindings.get(node.func.id)
    if not isinstance(value, ast.Call):
        return None
    name = _dotted(value.func, {})
    return name.rsplit(".", 1)[-1] if name else None


def _kernel_tables(tree: ast.Module) -> dict[str, str]:
    """Kernels stored in a table under a literal key, anywhere in the module (``_K["pck"] =
    tk.pck_partials_kernel``, ``{"pck": pck_kernel}``): key -> the stored name's last part, for
    keys that name one thing only."""
    found: dict[str, set[str]] = {}
    for node in walk(tree):
        pairs: list[tuple[ast.expr | None, ast.expr]] = []
        if isinstance(node, ast.Dict):
            pairs = list(zip(node.keys, node.values, strict=True))
        elif isinstance(node, ast.Assign):
            pairs = [(t.slice, node.value) for t in node.targets if isinstance(t, ast.Subscript)]
        for key, value in pairs:
            name = _dotted(value, {}) if isinstance(value, (ast.Name, ast.Attribute)) else None
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and name:
                found.setdefault(key.value, set()).add(name.rsplit(".", 1)[-1])
    return {k: next(iter(v)) for k, v in found.items() if len(v) == 1}


def _table_entry(node: ast.expr, tables: dict[str, str]) -> str | None:
    """``K["pck"]`` of a launch ``K["pck"][grid](...)``: the kernel the tables hold under
    ``"pck"``."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        key = node.slice.value
        return tables.get(key) if isinstance(key, str) else None
    return None


def _bound_kernel(
    name: str,
    around: ast.FunctionDef | ast.AsyncFunctionDef | None,
    bindings: dict[str, ast.expr],
) -> str | None:
    """The kernel a launch ``name[grid](...)`` runs: a local ``kernel = _fwd_kernel`` is followed
    to ``_fwd_kernel``; a parameter, or a local bound to anything else, is no kernel's name.
    ``bindings``: each name's first assignment in ``around``."""
    if around is None:
        return name
    params = {a.arg for a in (*around.args.posonlyargs, *around.args.args, *around.args.kwonlyargs)}
    if name in params:
        return None
    value = bindings.get(name)
    if value is None:
        return name
    if isinstance(value, ast.Attribute):
        return value.attr
    if isinstance(value, ast.Name):
        return value.id
    return None


def _dsl_launch(node: ast.Call) -> str | None:
    """The kernel a CuTe-style ``kernel(args).launch(grid=..., ...)`` launches, if it is one."""
    func = node.func
    if not (
        isinstance(func, ast.Attribute)
        and func.attr == "launch"
        and isinstance(func.value, ast.Call)
        and any(k.arg in ("grid", "block") for k in node.keywords)
    ):
        return None
    name = _dotted(func.value.func, {})
    return name.rsplit(".", 1)[-1] if name else None


def _launches_in(node: ast.AST) -> bool:
    return any(isinstance(sub, ast.Call) and _dsl_launch(sub) for sub in walk(node))


def _constexprs(args: ast.arguments) -> dict[str, str | None]:
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    defaults: dict[str, str | None] = {}
    positional = [*args.posonlyargs, *args.args]
    for arg, default in zip(
        positional[len(positional) - len(args.defaults) :], args.defaults, strict=True
    ):
        defaults[arg.arg] = ast.unparse(default)
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if kw_default is not None:
            defaults[arg.arg] = ast.unparse(kw_default)
    return {
        a.arg: defaults.get(a.arg)
        for a in every
        if a.annotation is not None and ast.unparse(a.annotation).endswith("constexpr")
    }
