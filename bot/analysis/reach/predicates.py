"""Kernels whose launch a changed predicate decides, in files the diff does not touch.

``run_tma = supports_tma()`` then ``if run_tma: _gemm_fp8_tma_kernel[...] else:
_gemm_fp8_kernel[...]`` in an unchanged launcher: when ``supports_tma`` changes (a Triton
version now required), which of the two kernels runs changes with it. A function of a changed
Python file whose code changed and that returns a value is a predicate here; the Python files of
its package (and the diff's) that import it are read, and in each function an ``if`` whose test
calls it, or reads a local assigned from a call to it, makes every kernel launched under either
branch (directly, or through a function the branch calls) a ``launch`` change naming it.
"""

from __future__ import annotations

import ast
import posixpath

from bot.analysis.model import Context, KernelChange
from bot.analysis.reach.call_gates import changed_functions
from bot.analysis.reach.call_sites import functions
from bot.analysis.reach.follow import Side, imports_in, module_of
from bot.analysis.reach.import_gates import _with_gate
from bot.analysis.reach.moved_calls import sides
from bot.analysis.text import parse_python_or_none

_MAX_FILES = 24  # read per analysis, besides the diff's own


def _returns_value(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(func))


def changed_predicates(ctx: Context) -> dict[str, str]:
    """``qualified name -> path`` of each module-level function of a changed Python file whose
    code changed and that returns a value."""
    out: dict[str, str] = {}
    for f, _tree, name, before, after in changed_functions(ctx):
        if "." in name or not _returns_value(after):
            continue
        if ast.dump(before) != ast.dump(after):  # not comments or layout only
            out[f"{module_of(f.patch.new_path or '')}.{name}"] = f.patch.new_path or ""
    return out


def predicate_gates(changes: list[KernelChange], ctx: Context) -> list[KernelChange]:
    both = sides(ctx)
    preds = changed_predicates(ctx) if both is not None else {}
    if both is None or not preds:
        return changes
    side = both[1]
    dirs = {posixpath.dirname(p) for p in preds.values()}
    short = {q.rsplit(".", 1)[1] for q in preds}
    paths = [p for p in side.paths if p.endswith(".py") and posixpath.dirname(p) in dirs]
    out = list(changes)
    read = 0
    for path in sorted(set(paths)):
        if path in preds.values():
            continue
        read += 1
        if read > _MAX_FILES:
            break
        text = side.read(path)
        if text is None or not any(n in text for n in short):
            continue
        tree = parse_python_or_none(text)
        if tree is not None:
            out = _gated(out, side, path, tree, preds)
    return out


def _gated(
    changes: list[KernelChange], side: Side, path: str, tree: ast.Module, preds: dict[str, str]
) -> list[KernelChange]:
    top = imports_in(tree.body, path)
    for fname, func in functions(tree).items():
        local = {**top, **imports_in(func.body, path)}
        called = {
            name: q for name, qs in local.items() for q in qs if q in preds
        }  # local name -> the predicate it imports
        if not called:
            continue
        flags = dict(called)
        for node in ast.walk(func):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                callee = node.value.func
                if isinstance(callee, ast.Name) and callee.id in called:
                    for t in node.targets:
                        if isinstance(t, ast.Name):
                            flags[t.id] = called[callee.id]
        for node in ast.walk(func):
            if not isinstance(node, ast.If):
                continue
            read = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)} & flags.keys()
            if not read:
                continue
            pred = flags[sorted(read)[0]]
            note = (
                f"{pred.rsplit('.', 1)[1]} (changed in {preds[pred]}) decides, in {fname}, "
                "whether this launch runs"
            )
            for kernel in sorted(_launched_under(side, path, fname, node)):
                where = side.kernel_path(kernel) or path
                changes = _with_gate(changes, kernel, where, [], note)
    return changes


def _launched_under(side: Side, path: str, fname: str, node: ast.If) -> set[str]:
    """The kernels launched in either branch of ``node``: ``k[grid](...)`` there, or what a
    function called there reaches."""
    mod = side.module(path)
    out: set[str] = set()
    for stmt in [*node.body, *node.orelse]:
        for sub in ast.walk(stmt):
            if not isinstance(sub, ast.Call):
                continue
            if isinstance(sub.func, ast.Subscript) and isinstance(sub.func.value, ast.Name):
                if mod is not None and sub.func.value.id in mod.kernels:
                    out.add(sub.func.value.id)
            elif isinstance(sub.func, (ast.Name, ast.Attribute)):
                name = ast.unparse(sub.func)
                out |= side.reach_call(path, fname, name).kernels
    return out
