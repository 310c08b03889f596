"""Kernels whose launch a condition one call above (or more) decides: the tests around a call.

``if triton_kernel_applicable(x.is_cuda): return triton_matmul(...)`` in a selector decides
whether the kernels ``triton_matmul`` launches run at all, though neither the launcher nor the
kernel changed; ``if IS_COREX_TORCH: ... else: _decode_softmax_reducev_fwd(...)`` does the same
for a vendor. When a diff changes the tests around a call in a function of a changed Python file
(an ``if`` / ``else`` / conditional expression around it, or an earlier ``if <test>: return``
in the same block), every kernel the callee reaches (``follow.Side``, across files) is a
``launch`` change of its own (a change already found keeps its kind) with the vendor and
architecture tests among the new ones as its branches.

The query: per function present at base and at head, its calls with the tests that guard each,
grouped by callee as written; a callee whose set of guards differs is followed on the side that
holds the new guards (base for a guard removed).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from bot.analysis.model import Context, FileSides, KernelChange, LaunchBranch
from bot.analysis.reach.branches import LaunchPath, branch_note, test_kinds
from bot.analysis.reach.call_sites import functions
from bot.analysis.reach.follow import Side, dotted
from bot.analysis.reach.import_gates import _with_gate
from bot.analysis.reach.moved_calls import sides
from bot.analysis.text import collapse, parse_python_or_none

Func = ast.FunctionDef | ast.AsyncFunctionDef
_MAX_CALLEES = 24  # per analysis: each is followed across files
Guards = dict[str, set[tuple[str, ...]]]  # callee as written -> the test sets around its calls


def _exits(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def guarded_calls(func: ast.FunctionDef | ast.AsyncFunctionDef) -> Guards:
    """Each call ``func`` makes under at least one test, with the tests (``not (t)`` for an
    ``else`` branch, or for code after an ``if t: return``)."""
    out: Guards = {}

    def calls(node: ast.AST, tests: tuple[str, ...]) -> None:
        if isinstance(node, ast.IfExp):
            t = collapse(ast.unparse(node.test))
            calls(node.test, tests)
            calls(node.body, (*tests, t))
            calls(node.orelse, (*tests, f"not ({t})"))
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return
        if isinstance(node, ast.Call) and tests:
            name = dotted(node.func)
            if name:
                out.setdefault(name, set()).add(tuple(sorted(tests)))
        for child in ast.iter_child_nodes(node):
            calls(child, tests)

    def block(body: list[ast.stmt], tests: tuple[str, ...]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.If):
                t = collapse(ast.unparse(stmt.test))
                calls(stmt.test, tests)
                block(stmt.body, (*tests, t))
                block(stmt.orelse, (*tests, f"not ({t})"))
                if _exits(stmt.body) and not stmt.orelse:
                    tests = (*tests, f"not ({t})")
            elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)):
                for part in ("iter", "test", "items"):
                    value = getattr(stmt, part, None)
                    for n in value if isinstance(value, list) else [value] if value else []:
                        calls(n, tests)
                block(stmt.body, tests)
                block(getattr(stmt, "orelse", []) or [], tests)
            elif isinstance(stmt, ast.Try):
                block(stmt.body, tests)
                for h in stmt.handlers:
                    block(h.body, tests)
                block(stmt.orelse, tests)
                block(stmt.finalbody, tests)
            elif not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                calls(stmt, tests)

    block(func.body, ())
    return out


def function_lines(func: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> list[str]:
    """A function's lines, less their indentation (a class around it may have moved)."""
    return [ln.strip() for ln in lines[func.lineno - 1 : func.end_lineno or func.lineno]]


def changed_functions(
    ctx: Context,
) -> Iterator[tuple[FileSides, ast.Module, str, Func, Func]]:
    """Each function (``f`` / ``Cls.m``) of a Python file of the diff present on both sides whose
    text changed: ``(file, head tree, name, base function, head function)``."""
    for f in ctx.files:
        if not f.patch.path.endswith(".py") or not f.patch.old_path or not f.patch.new_path:
            continue
        old_tree, new_tree = parse_python_or_none(f.old_text), parse_python_or_none(f.new_text)
        if old_tree is None or new_tree is None:
            continue
        olds, news = functions(old_tree), functions(new_tree)
        old_lines, new_lines = (f.old_text or "").split("\n"), (f.new_text or "").split("\n")
        for name in sorted(olds.keys() & news.keys()):
            if function_lines(olds[name], old_lines) != function_lines(news[name], new_lines):
                yield f, new_tree, name, olds[name], news[name]


_HOLDER = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\.(?=[A-Za-z_]\w*\b)")


def _held(guards: set[tuple[str, ...]]) -> set[tuple[str, ...]]:
    """Guards compared by the attributes they read, not by what holds them: ``ctx.backend``
    read as ``meta.backend`` after ``meta = ctx.meta`` is the same test (a refactor of where
    the flags live); the tests themselves are kept as written for the report."""
    return {tuple(sorted(_HOLDER.sub(".", t) for t in g)) for g in guards}


def call_gates(changes: list[KernelChange], ctx: Context) -> list[KernelChange]:
    both = sides(ctx)
    return changes if both is None else _gates(list(changes), ctx, *both)


def _gates(
    out: list[KernelChange], ctx: Context, old_side: Side, new_side: Side
) -> list[KernelChange]:
    followed = 0
    flags: dict[str, dict[str, set[str]]] = {}  # per file
    for f, new_tree, name, old_func, new_func in changed_functions(ctx):
        before, after = guarded_calls(old_func), guarded_calls(new_func)
        for callee in sorted(before.keys() | after.keys()):
            was, now = before.get(callee, set()), after.get(callee, set())
            if _held(was) == _held(now) or followed >= _MAX_CALLEES:
                continue
            followed += 1
            side, path, gates = (
                (new_side, f.patch.new_path, now) if now else (old_side, f.patch.old_path, was)
            )
            if path is None:  # the file is gone on that side: nothing there to reach
                continue
            reach = side.reach_call(path, name, callee)
            if not reach.kernels:
                continue
            fresh = sorted({t for g in gates - was for t in g} or {t for g in gates for t in g})
            path = f.patch.new_path or ""
            if path not in flags:
                flags[path] = LaunchPath(new_tree).flags
            where = f"the call to {callee} in {name} ({path})"
            out = _gate(out, side, reach.kernels, where, fresh, flags[path], ctx)
    return out


def _gate(
    changes: list[KernelChange],
    side: Side,
    kernels: set[str],
    where: str,
    tests: list[str],
    flags: dict[str, set[str]],
    ctx: Context,
) -> list[KernelChange]:
    path = where.rsplit("(", 1)[-1].rstrip(")")
    branches = [
        LaunchBranch(kind=kind, path=path, line=0, condition=t, where=where, note="")  # type: ignore[arg-type]
        for t in tests
        for kind in test_kinds(t, flags)
    ]
    branches = [b.model_copy(update={"note": branch_note(b, ctx.policy)}) for b in branches]
    shown = f"`{tests[0]}`" if tests else "other tests"
    note = f"the tests around {where} changed (now {shown}): when its launches run changed"
    for kernel in sorted(kernels):
        at = side.kernel_path(kernel)
        if at is not None:
            changes = _with_gate(changes, kernel, at, branches, note)
    return changes
