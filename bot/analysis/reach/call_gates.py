"""Kernels whose launch a host change one call above (or more) decides: the tests around a
call, and the values handed to it.

``if triton_kernel_applicable(x.is_cuda): return triton_matmul(...)`` in a selector decides
whether the kernels ``triton_matmul`` launches run at all, though neither the launcher nor the
kernel changed; ``if IS_COREX_TORCH: ... else: _decode_softmax_reducev_fwd(...)`` does the same
for a vendor. When a diff changes the tests around a call in a function of a changed Python file
(an ``if`` / ``else`` / conditional expression around it, or an earlier ``if <test>: return``
in the same block), every kernel the callee reaches (``follow.Side``, across files, through an
autograd Function's ``apply``) is a ``launch`` change of its own (a change already found keeps
its kind) with the vendor and architecture tests among the new ones as its branches. An
``assert t`` counts where it makes a call dead (the call is under ``not (t)``): removing it
makes the call run.

The values a call is handed count the same way (``launch_values``: each argument with the
function's own assignments substituted, under the tests around the call): ``m = 64`` chosen by
``d % 64 == 0`` instead of ``64 % d`` changes the head dimension every launch behind
``lightning_attn2(q1, k1, v, s)`` gets: a launch change (a kernel already found retuned keeps
its kind, the cause named). Only where the callee reads the same on both sides: one changed
with its callers (arguments repacked into an object) is compared where it is, by its own
launches and calls. Parameters only renamed (same place, neither name on the other side: a
formatter pass) are read under their new names, so the values handed on read the same. A
kernel's own body (device code) calls no launcher and is skipped.

The query: per function present at base and at head, its calls with the tests that guard each
and the fingerprint of the values each is handed, grouped by callee as written; a callee whose
set of guards differs is followed on the side that holds the new guards (base for a guard
removed), one whose values differ on the head.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterator

from bot.analysis.launch_values import LaunchValues
from bot.analysis.model import Context, FileSides, KernelChange, LaunchBranch
from bot.analysis.reach.branches import LaunchPath, branch_note, test_kinds
from bot.analysis.reach.call_sites import functions
from bot.analysis.reach.follow import Reach, Side, dotted
from bot.analysis.reach.import_gates import _with_gate
from bot.analysis.reach.moved_calls import sides
from bot.analysis.text import collapse, digest, parse_python_or_none, walk

Func = ast.FunctionDef | ast.AsyncFunctionDef
_MAX_CALLEES = 24  # per analysis: each is followed across files
Guards = dict[str, set[tuple[str, ...]]]  # callee as written -> the test sets around its calls
_NEVER = ("<never runs>",)  # the guards of a call its tests and the asserts before it contradict


def _exits(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def _dead(tests: tuple[str, ...], asserted: tuple[str, ...]) -> bool:
    """Whether a call under ``tests``, after ``asserted``, can never run: a test and its
    negation both hold."""
    facts = set(tests) | set(asserted)
    return any(f"not ({t})" in facts for t in facts)


def guarded_calls(func: ast.FunctionDef | ast.AsyncFunctionDef) -> Guards:
    """Each call ``func`` makes under at least one test, with the tests (``not (t)`` for an
    ``else`` branch, or for code after an ``if t: return``); a call that the tests and the
    asserts before it contradict has the guards ``_NEVER``."""
    out: Guards = {}

    def calls(node: ast.AST, tests: tuple[str, ...], asserted: tuple[str, ...] = ()) -> None:
        if isinstance(node, ast.IfExp):
            t = collapse(ast.unparse(node.test))
            calls(node.test, tests, asserted)
            calls(node.body, (*tests, t), asserted)
            calls(node.orelse, (*tests, f"not ({t})"), asserted)
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return
        if isinstance(node, ast.Call) and tests:
            name = dotted(node.func)
            if name:
                guards = _NEVER if _dead(tests, asserted) else tuple(sorted(set(tests)))
                out.setdefault(name, set()).add(guards)
        for child in ast.iter_child_nodes(node):
            calls(child, tests, asserted)

    def block(body: list[ast.stmt], tests: tuple[str, ...], asserted: tuple[str, ...]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.Assert):
                calls(stmt.test, tests, asserted)
                asserted = (*asserted, collapse(ast.unparse(stmt.test)))
            elif isinstance(stmt, ast.If):
                t = collapse(ast.unparse(stmt.test))
                calls(stmt.test, tests, asserted)
                block(stmt.body, (*tests, t), asserted)
                block(stmt.orelse, (*tests, f"not ({t})"), asserted)
                if _exits(stmt.body) and not stmt.orelse:
                    tests = (*tests, f"not ({t})")
            elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)):
                for part in ("iter", "test", "items"):
                    value = getattr(stmt, part, None)
                    for n in value if isinstance(value, list) else [value] if value else []:
                        calls(n, tests, asserted)
                block(stmt.body, tests, asserted)
                block(getattr(stmt, "orelse", []) or [], tests, asserted)
            elif isinstance(stmt, ast.Try):
                block(stmt.body, tests, asserted)
                for h in stmt.handlers:
                    block(h.body, tests, asserted)
                block(stmt.orelse, tests, asserted)
                block(stmt.finalbody, tests, asserted)
            elif not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                calls(stmt, tests, asserted)

    block(func.body, (), ())
    return out


_CHAIN = re.compile(r"\b([A-Za-z_]\w*)(?:\.[A-Za-z_]\w*)*\.([A-Za-z_]\w*)\b")


def parameter_renames(old: Func, new: Func) -> dict[str, str]:
    """The parameters of ``old`` that ``new`` takes in the same place under another name, where
    neither name is a parameter of the other side (``selected_E`` -> ``expert_indices``): a
    rename, not a reorder."""

    def names(f: Func) -> list[str]:
        a = f.args
        return [p.arg for p in (*a.posonlyargs, *a.args, a.vararg, *a.kwonlyargs, a.kwarg) if p]

    was, now = names(old), names(new)
    if len(was) != len(now):
        return {}
    return {a: b for a, b in zip(was, now, strict=True) if a != b and a not in now and b not in was}


def fed_calls(
    func: ast.FunctionDef | ast.AsyncFunctionDef, renamed: dict[str, str] | None = None
) -> dict[str, list[str]]:
    """Per callee as written (a launch ``k[grid](...)`` aside: its own rule compares it), the
    fingerprints of the values its calls are handed: each argument with ``func``'s own
    assignments substituted, under the tests around the call (``launch_values``). An attribute
    chain is read by its root and its last attribute (``ctx.meta.causal`` as ``ctx.causal``
    after ``meta = ctx.meta``: where a flag is held moved, not what it is). A function too
    large for its values to be written out gives none. ``renamed``: its parameters read
    under their names on the other side (``parameter_renames``)."""
    values = LaunchValues(func, calls=True, renamed=renamed)
    out: dict[str, list[str]] = {}
    for sub in walk(func):
        if not isinstance(sub, ast.Call) or isinstance(sub.func, ast.Subscript):
            continue
        name = dotted(sub.func)
        record = values.records.get(id(sub))
        if name and record is not None and (sub.args or sub.keywords):
            out.setdefault(name, []).append(digest([_CHAIN.sub(r"\1..\2", record)]))
    return {k: sorted(v) for k, v in out.items()}


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


def _always(guards: set[tuple[str, ...]], func: Func, callee: str) -> bool:
    """Whether ``func`` calls ``callee`` on every path: outside any test, or in every branch
    of its tests (``if t: f(a) else: f(b)`` picks what ``f`` is handed, not whether it runs)."""
    if not guards:
        return any(isinstance(n, ast.Call) and dotted(n.func) == callee for n in walk(func))
    held = {frozenset(g) for g in guards}
    while frozenset() not in held:
        merged = {g - {t} for g in held for t in g if (g - {t}) | {f"not ({t})"} in held}
        if merged <= held:
            return False
        held |= merged
    return True


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
        if name in {k.name for s in (f.old, f.new) if s for k in s.kernels}:
            continue  # device code: what it calls is compiled into it, not launched
        before, after = guarded_calls(old_func), guarded_calls(new_func)
        guarded = set()
        for callee in sorted(before.keys() | after.keys()):
            was, now = before.get(callee, set()), after.get(callee, set())
            if _held(was) == _held(now) or followed >= _MAX_CALLEES:
                continue
            if _always(was, old_func, callee) and _always(now, new_func, callee):
                continue  # called on every path on both sides: when it runs did not change
            followed += 1
            guarded.add(callee)
            side, path, gates = (
                (new_side, f.patch.new_path, now) if now else (old_side, f.patch.old_path, was)
            )
            if path is None:  # the file is gone on that side: nothing there to reach
                continue
            reach = side.reach_call(path, name, callee)
            if not reach.kernels:
                continue
            fresh = sorted(
                ({t for g in gates - was for t in g} or {t for g in gates for t in g}) - {*_NEVER}
            )
            common = set.intersection(*(set(g) for g in gates)) if gates else set()
            fresh.sort(key=lambda t: t not in common)  # a test every call is under first
            path = f.patch.new_path or ""
            if path not in flags:
                flags[path] = LaunchPath(new_tree).flags
            where = f"the call to {callee} in {name} ({path})"
            shown = f"now `{fresh[0]}`" if fresh else "other tests"
            if _NEVER in was or _NEVER in now:
                shown = "an assert before it decides whether it can run at all"
            note = f"the tests around {where} changed ({shown}): when its launches run changed"
            out = _gate(out, side, reach, where, fresh, note, flags[path], ctx)
        fed_before = fed_calls(old_func, parameter_renames(old_func, new_func))
        fed_after = fed_calls(new_func)
        for callee in sorted((fed_before.keys() & fed_after.keys()) - guarded):
            if fed_before[callee] == fed_after[callee] or followed >= _MAX_CALLEES:
                continue
            if f.patch.new_path is None or f.patch.old_path is None:
                continue
            followed += 1
            if _signature(old_side.definition(f.patch.old_path, name, callee)) != _signature(
                new_side.definition(f.patch.new_path, name, callee)
            ):
                continue  # changed with its callers: its own launches and calls say what changed
            reach = new_side.reach_call(f.patch.new_path, name, callee)
            if reach.kernels:
                out = _fed(out, new_side, reach, callee, name, f.patch.new_path)
    return out


def _signature(definition: str | None) -> str | None:
    """What a callee takes: a function's parameters, a class's whole text. Its body may change
    while its callers hand it other values (a launch retuned inside, dk allocated as float32
    by the caller): the values still reach the same parameters."""
    tree = parse_python_or_none(textwrap.dedent(definition)) if definition is not None else None
    node = tree.body[0] if tree is not None and tree.body else None
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return ast.unparse(node.args)
    return definition


def _fed(
    changes: list[KernelChange], side: Side, reach: Reach, callee: str, caller: str, path: str
) -> list[KernelChange]:
    note = (
        f"what {caller} ({path}) hands to {callee} is computed differently: what its launches "
        "are given changed"
    )
    for kernel, at in _sites(side, reach):
        changes = _with_gate(changes, kernel, at, [], note, keep_tuning=True, host=path)
    return changes


def _sites(side: Side, reach: Reach) -> list[tuple[str, str]]:
    """``(kernel, path)`` of each kernel ``reach`` launches, where its module is known."""
    out = {(k, p) for p, k in reach.sites}
    for kernel in reach.kernels - {k for k, _ in out}:
        at = side.kernel_path(kernel)
        if at is not None:
            out.add((kernel, at))
    return sorted(out)


def _gate(
    changes: list[KernelChange],
    side: Side,
    reach: Reach,
    where: str,
    tests: list[str],
    note: str,
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
    for kernel, at in _sites(side, reach):
        changes = _with_gate(changes, kernel, at, branches, note, host=path)
    return changes
