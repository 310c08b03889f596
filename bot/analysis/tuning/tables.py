"""Tables of launch values: module-level names a launch's tuning reads, and what fills them.

A kernel's block sizes, warps and stages are often looked up rather than written at the launch:
a module-level dict or list keyed by shape, device and dtype (``CONFIGS = {(4096, "NVIDIA
H100"): {...}}``, a search space rebound under a test), read by the function whose result the
launch takes, or a module-level name a loader fills at run time (``global BEST_CONFIGS;
BEST_CONFIGS = _load_best_configs()``). When the table's literal or its loader changes, so does
the tuning of every launch handed its values. Queries on one module's tree:

- ``changed_tables``: the module-level names whose module-level bindings (in blocks too, with
  the tests above them) differ between the sides;
- ``readers``: the module's functions that read one of those names (each is then a changed
  function for ``tuning_helpers``, whose launches and callers are followed as for any other);
- ``fed_parameters``: the parameters of a launching function that its module's changed
  functions hand a value computed (through their own assignments, on any path) from a table or
  a changed function, as ``_device(q, best[0], best[1])`` after ``best = BEST_CONFIGS[key]``
  and ``BEST_CONFIGS = _load_best_configs()``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from bot.analysis.text import module_bindings, walk

Func = ast.FunctionDef | ast.AsyncFunctionDef
Code = Callable[[object], object]  # a tree as a value to compare, less annotations


def _bindings(tree: ast.Module) -> dict[str, list[ast.AST]]:
    """Module-level name -> the statements that bind it at module level, in ``if`` / ``try`` /
    ``with`` blocks too, each followed by the tests it sits under."""
    return {
        name: [x for stmt, tests in found for x in (stmt, *tests)]
        for name, found in module_bindings(tree.body).items()
    }


def changed_tables(old: ast.Module, new: ast.Module, code: Code) -> set[str]:
    """Module-level names (no function, class or import; no ``__all__``, ``__version__``)
    whose module-level bindings differ between ``old`` and ``new`` (a loader that fills a name
    at run time is a changed function of its own, followed by ``fed_parameters``)."""
    before, after = _bindings(old), _bindings(new)
    return {
        name
        for name, stmts in after.items()
        if name in before and not name.startswith("__") and code(stmts) != code(before[name])
    }


def readers(defs: dict[str, Func], tables: set[str]) -> set[str]:
    """The functions of ``defs`` that read a name of ``tables`` (and do not bind it locally
    without a ``global`` declaration)."""
    out = set()
    for name, func in defs.items():
        read = {n.id for n in walk(func) if isinstance(n, ast.Name) and n.id in tables}
        if not read:
            continue
        declared = {n for s in walk(func) if isinstance(s, ast.Global) for n in s.names}
        local = {
            n.id for n in walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        if read - (local - declared):
            out.add(name)
    return out


def _depends(func: Func) -> dict[str, set[str]]:
    """Local name -> the names its assignments in ``func`` read (anywhere in the function:
    what a name may hold on some path)."""
    out: dict[str, set[str]] = {}
    for s in walk(func):
        if isinstance(s, ast.Assign):
            targets, value = s.targets, s.value
        elif isinstance(s, (ast.AnnAssign, ast.AugAssign)) and s.value is not None:
            targets, value = [s.target], s.value
        else:
            continue
        read = {n.id for n in walk(value) if isinstance(n, ast.Name)}
        for t in targets:
            for n in walk(t):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    out.setdefault(n.id, set()).update(read)
    return out


def _reaches(expr: ast.expr, depends: dict[str, set[str]], sources: set[str]) -> bool:
    """Whether ``expr`` reads a name of ``sources``, directly or through the assignments."""
    todo = [n.id for n in walk(expr) if isinstance(n, ast.Name)]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in sources:
            return True
        todo.extend(depends.get(name, ()))
    return False


def fed_parameters(
    launcher: str, func: Func, callers: dict[str, Func], sources: set[str]
) -> dict[str, str]:
    """Parameter of ``func`` (called ``launcher`` in its module) -> the caller of ``callers``
    that hands it a value reaching a name of ``sources`` (tables, changed functions)."""
    params = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
    out: dict[str, str] = {}
    for caller, body in callers.items():
        depends: dict[str, set[str]] | None = None
        for c in walk(body):
            if not (isinstance(c, ast.Call) and isinstance(c.func, ast.Name)):
                continue
            if c.func.id != launcher:
                continue
            if depends is None:
                depends = _depends(body)
            positional = []
            for a in c.args:
                if isinstance(a, ast.Starred):
                    break  # ``f(*xs)``: the positions after it are not known
                positional.append(a)
            given = [
                *zip(params, positional, strict=False),
                *((k.arg, k.value) for k in c.keywords if k.arg),
            ]
            for param, arg in given:
                if param not in out and _reaches(arg, depends, sources):
                    out[param] = caller
    return out
