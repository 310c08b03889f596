"""Kernels whose launch a changed predicate decides, in files the diff does not touch.

``run_tma = supports_tma()`` then ``if run_tma: _gemm_fp8_tma_kernel[...] else:
_gemm_fp8_kernel[...]`` in an unchanged launcher: when ``supports_tma`` changes (a Triton
version now required), which of the two kernels runs changes with it. A function of a changed
Python file whose code changed and that returns a value is a predicate here; the Python files of
its package (and the diff's) that import it are read, and the file that defines it (its own
launchers call it by its bare name: ``if _should_use_multirow(): multirow_kernel[...]``); in each
function an ``if`` whose test calls it, or reads a local assigned from a call to it, makes every
kernel launched under either branch (directly, or through a function the branch calls) a
``launch`` change naming it, with the vendor and architecture tests the predicate gained (or
lost) as its branches.
"""

from __future__ import annotations

import ast
import posixpath

from bot.analysis.model import Context, KernelChange, LaunchBranch
from bot.analysis.reach.branches import branch_note, test_kinds
from bot.analysis.reach.call_gates import changed_functions
from bot.analysis.reach.call_sites import functions
from bot.analysis.reach.follow import Side, imports_in, module_of
from bot.analysis.reach.import_gates import _with_gate
from bot.analysis.reach.moved_calls import sides
from bot.analysis.text import collapse, parse_python_or_none, walk

_MAX_FILES = 24  # read per analysis, besides the diff's own


def _returns_value(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(n, ast.Return) and n.value is not None for n in walk(func))


def _tests(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The tests of the ``if`` / ``while`` statements and conditional expressions in ``func``."""
    tests = (ast.If, ast.IfExp, ast.While)
    return {collapse(ast.unparse(n.test)) for n in walk(func) if isinstance(n, tests)}


def _predicates(ctx: Context) -> dict[str, tuple[str, list[LaunchBranch]]]:
    """``qualified name -> (path, branches)`` of each module-level function of a changed Python
    file whose code changed and that returns a value; the branches are the vendor and
    architecture tests it gained or lost."""
    out: dict[str, tuple[str, list[LaunchBranch]]] = {}
    for f, _tree, name, before, after in changed_functions(ctx):
        if "." in name or not _returns_value(after):
            continue
        if ast.dump(before) == ast.dump(after):  # comments or layout only
            continue
        path = f.patch.new_path or ""
        where = f"{name} ({path})"
        branches = [
            LaunchBranch(kind=kind, path=path, line=0, condition=t, where=where, note="")  # type: ignore[arg-type]
            for t in sorted(_tests(after) ^ _tests(before))
            for kind in test_kinds(t)
        ]
        branches = [b.model_copy(update={"note": branch_note(b, ctx.policy)}) for b in branches]
        out[f"{module_of(path)}.{name}"] = (path, branches)
    return out


def predicate_gates(changes: list[KernelChange], ctx: Context) -> list[KernelChange]:
    both = sides(ctx)
    preds = _predicates(ctx) if both is not None else {}
    if both is None or not preds:
        return changes
    side = both[1]
    owners = {p for p, _ in preds.values()}
    dirs = {posixpath.dirname(p) for p in owners}
    short = {q.rsplit(".", 1)[1] for q in preds}
    paths = [p for p in side.paths if p.endswith(".py") and posixpath.dirname(p) in dirs]
    out = list(changes)
    read = 0
    for path in sorted(set(paths) | owners):
        if path not in owners:
            read += 1
            if read > _MAX_FILES:
                continue
        text = side.read(path)
        if text is None or not any(n in text for n in short):
            continue
        tree = parse_python_or_none(text)
        if tree is not None:
            out = _gated(out, side, path, tree, preds)
    return out


def _gated(
    changes: list[KernelChange],
    side: Side,
    path: str,
    tree: ast.Module,
    preds: dict[str, tuple[str, list[LaunchBranch]]],
) -> list[KernelChange]:
    top = imports_in(tree.body, path)
    own = {q.rsplit(".", 1)[1]: q for q, (p, _) in preds.items() if p == path}
    for fname, func in functions(tree).items():
        if fname in own:
            continue  # the predicate itself
        local = {**top, **imports_in(func.body, path)}
        called = own | {
            name: q for name, qs in local.items() for q in qs if q in preds
        }  # local name -> the predicate it imports
        if not called:
            continue
        flags = dict(called)
        for node in walk(func):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                callee = node.value.func
                if isinstance(callee, ast.Name) and callee.id in called:
                    for t in node.targets:
                        if isinstance(t, ast.Name):
                            flags[t.id] = called[callee.id]
        for node in walk(func):
            if not isinstance(node, ast.If):
                continue
            read = {n.id for n in walk(node.test) if isinstance(n, ast.Name)} & flags.keys()
            if not read:
                continue
            pred = flags[sorted(read)[0]]
            owner, branches = preds[pred]
            note = (
                f"{pred.rsplit('.', 1)[1]} (changed in {owner}) decides, in {fname}, "
                "whether this launch runs"
            )
            for kernel in sorted(_launched_under(side, path, fname, node)):
                where = side.kernel_path(kernel) or path
                changes = _with_gate(changes, kernel, where, branches, note, keep_tuning=True)
    return changes


def _launched_under(side: Side, path: str, fname: str, node: ast.If) -> set[str]:
    """The kernels launched in either branch of ``node``: ``k[grid](...)`` there, or what a
    function called there reaches."""
    mod = side.module(path)
    out: set[str] = set()
    for stmt in [*node.body, *node.orelse]:
        for sub in walk(stmt):
            if not isinstance(sub, ast.Call):
                continue
            if isinstance(sub.func, ast.Subscript) and isinstance(sub.func.value, ast.Name):
                if mod is not None and sub.func.value.id in mod.kernels:
                    out.add(sub.func.value.id)
            elif isinstance(sub.func, (ast.Name, ast.Attribute)):
                name = ast.unparse(sub.func)
                out |= side.reach_call(path, fname, name).kernels
    return out
