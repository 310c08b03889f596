"""What a Triton kernel's decorators read from its module, and the kernels a change there tunes.

``@triton.autotune(configs=get_autotune_config(), prune_configs_by={"early_config_prune":
kernel_config_pruner}, ...)`` does not hold its search space: the functions and module-level
names it names do (a config builder, a pruner, ``get_autotune_config = get_config_amd`` under
``if IS_HIP:``), and what those read in turn. A change to any of them changes which configs the
autotuner tries, with the kernel's text unchanged: a ``tuning`` change of every launched kernel
whose decorators reach it, with the changed names as the cause (``via_helpers``).

The query is on one module's structure: from the names in a kernel's decorators, through the
module's functions (top level and class methods by their name) and module-level bindings (with
the ``if`` tests they sit under), a few steps deep; a unit changed when its syntax tree (no
comments, no line numbers) differs between base and head. Host functions that launch the kernel
are not on this path (a changed launcher is ``compare_launches``'s), nor are the kernels' own
bodies or the jit helpers they call (``compare``, ``fold_helpers``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from bot.analysis.model import (
    PYTHON_LANGUAGES,
    Context,
    FileScan,
    FileSides,
    KernelChange,
    KernelDef,
)
from bot.analysis.reach.helpers import caused_change
from bot.analysis.text import JIT_CALL, module_bindings, parse_python_or_none, walk
from bot.analysis.tuning.config_builders import built_configs

_DEPTH = 4
_MAX_UNITS = 64

Func = ast.FunctionDef | ast.AsyncFunctionDef


class _Module:
    """One side of one file: its functions and module-level bindings, by name."""

    def __init__(self, tree: ast.Module, text: str) -> None:
        self.funcs: dict[str, list[Func]] = {}
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.funcs.setdefault(node.name, []).append(node)
            elif isinstance(node, ast.ClassDef):
                for sub in node.body:
                    if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self.funcs.setdefault(sub.name, []).append(sub)
        self.bindings = module_bindings(tree.body)
        # a decorator applied by a call: ``...)(kernel)`` or ``jit(kernel)`` somewhere
        applied = ")(" in text or JIT_CALL.search(text) is not None
        self.appliers = _appliers(tree) if applied else {}

    def units(self, name: str) -> Iterator[ast.AST]:
        yield from self.funcs.get(name, [])
        for stmt, tests in self.bindings.get(name, []):
            yield stmt
            yield from tests

    def reads(self, kernel: Func, skip: set[str]) -> dict[str, str]:
        """Name -> the syntax of what it binds, for every name the decorators of ``kernel``
        reach, or the functions that apply them by a call (``skip``: the file's jit functions,
        whose changes are their own)."""
        out: dict[str, str] = {}
        roots = [n for d in kernel.decorator_list for n in _names(d)] + self.appliers.get(
            kernel.name, []
        )
        todo = [(n, 1) for n in roots]
        while todo and len(out) < _MAX_UNITS:
            name, depth = todo.pop()
            if name in out or name in skip or name == kernel.name:
                continue
            units = list(self.units(name))
            if not units:
                continue
            out[name] = "\n".join(ast.dump(u) for u in units)
            if depth < _DEPTH:
                todo += [(n, depth + 1) for u in units for n in _names(u)]
        return out


_APPLIED = frozenset({"autotune", "heuristics", "jit"})


def _applied(func: ast.expr) -> bool:
    """``triton.autotune`` / ``triton.heuristics`` / ``triton.jit`` (by their last name)."""
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in _APPLIED


def _appliers(tree: ast.Module) -> dict[str, list[str]]:
    """Kernel name -> the module-level functions that apply a decorator to it by a call
    (``triton.autotune(configs=build(...))(kernel)`` in a getter, ``triton.heuristics(...)(
    triton.jit(kernel))`` in a factory): what they read tunes the kernel as a decorator would."""
    out: dict[str, list[str]] = {}
    for func in tree.body:
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        applies = any(
            isinstance(n, ast.Call)
            and len(n.args) == 1
            and _applied(n.func.func if isinstance(n.func, ast.Call) else n.func)
            for n in walk(func)
        )
        if applies:
            for name in _names(func) - {func.name}:
                out.setdefault(name, []).append(func.name)
    return out


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in walk(node) if isinstance(n, ast.Name)}


def _kernel_nodes(tree: ast.Module, kernels: list[KernelDef]) -> dict[str, Func]:
    """The function definitions of ``kernels``, by name (the first one of a name)."""
    wanted = {k.name for k in kernels}
    out: dict[str, Func] = {}
    for node in tree.body:
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.name in wanted
            and node.name not in out
        ):
            out[node.name] = node
    return out


def _read(scan: FileScan | None, text: str | None) -> tuple[_Module, dict[str, Func]] | None:
    tree = parse_python_or_none(text)
    if scan is None or tree is None:
        return None
    kernels = [k for k in scan.kernels if k.language in PYTHON_LANGUAGES]
    return _Module(tree, text or ""), _kernel_nodes(tree, kernels)


def _same_built_list(
    changed: list[str], old: KernelDef, new: KernelDef, f: FileSides, ctx: Context
) -> bool:
    """Whether the changed names are only the config builders the autotune call names, and
    the lists they build are the same (a list moved into a builder)."""
    named = {
        n for k in (old, new) if k.configs_source
        for n in re.findall(r"[A-Za-z_]\w*", k.configs_source)
    }  # fmt: skip
    if not set(changed) <= named:
        return False
    before = built_configs(old, f.old_text, ctx.old_source)
    return before is not None and before == built_configs(new, f.new_text, ctx.new_source)


def decorator_reads(changes: list[KernelChange], ctx: Context) -> list[KernelChange]:
    """Add a ``tuning`` change for each launched kernel, unchanged so far, whose decorators
    reach a function or module-level name that changed."""
    out = list(changes)
    reported = {(c.name, c.path) for c in changes} | {
        (c.name, r.path) for c in changes for r in (c.old, c.new) if r is not None
    }
    for f in ctx.files:
        if f.old is None or f.new is None or not (f.old.complete and f.new.complete):
            continue
        old = _read(f.old, f.old_text)
        new = _read(f.new, f.new_text)
        if old is None or new is None:
            continue
        jit = {k.name for s in (f.old, f.new) for k in s.kernels} | {
            h.name for s in (f.old, f.new) for h in s.helpers
        }
        for k in f.new.kernels:
            if not k.launched or (k.name, k.path) in reported or k.language not in PYTHON_LANGUAGES:
                continue
            old_k = f.old.kernel(k.name)
            node_old, node_new = old[1].get(k.name), new[1].get(k.name)
            if old_k is None or node_old is None or node_new is None:
                continue
            before = old[0].reads(node_old, jit)
            after = new[0].reads(node_new, jit)
            changed = sorted(
                n for n in before.keys() | after.keys() if before.get(n) != after.get(n)
            )
            if not changed or _same_built_list(changed, old_k, k, f, ctx):
                continue
            note = (
                f"its autotune decorator reads {', '.join(changed)}, which changed: the configs "
                "it tries may differ"
            )
            out.append(caused_change("tuning", old_k, k, changed, note))
    return out
