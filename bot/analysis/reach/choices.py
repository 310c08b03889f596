"""Implementations kept side by side behind a choice: a compiled op and Triton kernels, both
reachable from one place, one of them picked at run time.

A pull request that ports an op to Triton often keeps the CUDA op and puts the new path beside
it: ``if os.environ["WKV"] == "fla": def RUN(...): chunk_rwkv6(...)`` / ``else: def RUN(...):
WKV_6.apply(...)`` at module level, ``if block_sparse_fwd is not None: return Fn.apply(...)``
/ ``else: return triton_fn(...)`` in the op, ``self.fn = triton_ops.f`` / ``self.fn =
module.f_fp16`` under a config flag in a constructor. No call site switches from one to the
other: both stay, and a test (an environment variable, a flag, a capability or vendor test, an
import that may have failed) picks one.

The query, per Python file of the diff read whole at head: each choice that the diff touches
(an ``if`` / ``elif`` / ``else`` chain, a conditional expression, a ``try`` and its ``except``
blocks) at module level or in a function, split into its alternatives. Each alternative is
followed (``follow.Side.reach_in``: its calls, the names it assigns, the functions it defines)
to the extension ops and Python kernels it reaches, per role (what only an autograd Function's
backward reaches is the role ``backward``). Where one alternative reaches ops and another
reaches kernels the first does not, the second's kernels took the role of the first's ops with
the old kept: a :class:`MovedCall` with ``kept``, paired as a call switch is
(``bot.analysis.pairing``), and the tests that lead to the kernels are raised on them as vendor
or architecture branches (``choice_gates``).
"""

from __future__ import annotations

import ast
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass

from bot.analysis.model import Context, KernelChange, LaunchBranch
from bot.analysis.reach.branches import LaunchPath, branch_note, test_kinds
from bot.analysis.reach.follow import Reach, Side
from bot.analysis.reach.moved_calls import MovedCall
from bot.analysis.text import collapse

Node = ast.stmt | ast.expr
Func = ast.FunctionDef | ast.AsyncFunctionDef
_MAX_CHOICES = 24  # followed per analysis
_MAX_SPLITS = 16  # nested choices inside one alternative, each followed on its own


@dataclass(frozen=True)
class Choice:
    """One choice between alternatives, in ``scope`` (``f`` / ``Cls.m``, ``""`` at module
    level) of the file at ``path``."""

    path: str
    scope: str
    line: int
    end: int
    arms: tuple[tuple[tuple[str, ...], tuple[Node, ...]], ...]  # (tests leading there, code)


@dataclass(frozen=True)
class KeptBeside:
    """A choice whose alternatives reach a compiled op and Python kernels, per role."""

    moved: MovedCall
    tests: tuple[str, ...]  # the tests that lead to the kernels' alternative
    flags: dict[str, set[str]]  # names made of vendor / architecture tests, in its scope
    path: str
    line: int


def _chain(node: ast.If, tests: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], list]]:
    """An ``if`` / ``elif`` / ``else`` chain's alternatives, each with its tests."""
    t = collapse(ast.unparse(node.test))
    out: list[tuple[tuple[str, ...], list]] = [((*tests, t), list(node.body))]
    rest = (*tests, f"not ({t})")
    if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
        return out + _chain(node.orelse[0], rest)
    return [*out, (rest, list(node.orelse))]


def choices(tree: ast.Module, path: str) -> Iterator[Choice]:
    """Every choice of a module: at module level, in its functions and its classes' methods."""

    def visit(body: list[ast.stmt], scope: str) -> Iterator[Choice]:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield from visit(stmt.body, f"{scope}.{stmt.name}" if scope else stmt.name)
                continue
            if isinstance(stmt, ast.ClassDef):
                if not scope:
                    yield from visit(stmt.body, stmt.name)
                continue
            end = stmt.end_lineno or stmt.lineno
            if isinstance(stmt, ast.If):
                arms = _chain(stmt)
                yield Choice(path, scope, stmt.lineno, end,
                             tuple((t, tuple(code)) for t, code in arms))  # fmt: skip
                for _, code in arms:
                    yield from visit(code, scope)
                continue
            if isinstance(stmt, ast.Try) and stmt.handlers:
                arms = [((), list(stmt.body) + list(stmt.orelse))]
                arms += [((f"except {ast.unparse(h.type) if h.type else ''}",), h.body)
                         for h in stmt.handlers]  # fmt: skip
                yield Choice(path, scope, stmt.lineno, end,
                             tuple((t, tuple(code)) for t, code in arms))  # fmt: skip
                for _, code in arms:
                    yield from visit(code, scope)
                continue
            if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)):
                yield from visit([*stmt.body, *getattr(stmt, "orelse", [])], scope)
                continue
            for sub in ast.walk(stmt):
                if isinstance(sub, ast.IfExp):
                    t = collapse(ast.unparse(sub.test))
                    arms2 = (((t,), (sub.body,)), ((f"not ({t})",), (sub.orelse,)))
                    yield Choice(path, scope, stmt.lineno, end, arms2)

    yield from visit(tree.body, "")


def _arm_reach(side: Side, path: str, code: list, scope: str, budget: list[int]) -> Reach:
    """What one alternative reaches: each choice nested in it followed alternative by
    alternative (a name defined in both of them is two implementations, not one)."""
    nested = [s for s in code if isinstance(s, ast.If)]
    if not nested or budget[0] <= 0:
        return side.reach_in(path, code, scope)
    budget[0] -= 1
    first = nested[0]
    rest = [s for s in code if s is not first]
    out = Reach()
    for _, alt in _chain(first):
        out.add(_arm_reach(side, path, rest + alt, scope, budget))
    return out


def _roles(reach: Reach) -> dict[str, Reach]:
    out = {"": reach.forward()}
    if reach.back_kernels or reach.back_ops:
        out["backward"] = Reach(kernels=set(reach.back_kernels), ops=set(reach.back_ops))
    return out


def _touched(choice: Choice, added: list[int]) -> bool:
    i = bisect_left(added, choice.line)
    return i < len(added) and added[i] <= choice.end


def _local_flags(tree: ast.Module, scope: str, flags: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module's flags and the names the function ``scope`` binds to a vendor or
    architecture test (``major, minor = torch.cuda.get_device_capability(x.device)``)."""
    out = {k: set(v) for k, v in flags.items()}
    node: ast.AST | None = tree
    for part in scope.split(".") if scope else []:
        body = getattr(node, "body", [])
        node = next((n for n in body if getattr(n, "name", None) == part), None)
    if node is None or node is tree:
        return out
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assign):
            for kind in test_kinds(ast.unparse(sub.value), out):
                for t in sub.targets:
                    out[kind] |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
    return out


def kept_beside(ctx: Context, both: tuple[Side, Side] | None) -> list[KeptBeside]:
    """Every choice of the diff's Python files whose alternatives reach an extension op on one
    side and Python kernels on another, per role."""
    if both is None:
        return []
    if ctx.side_by_side is not None:
        return list(ctx.side_by_side)
    ctx.side_by_side = out = _kept_beside(ctx, both[1])
    return list(out)


def _kept_beside(ctx: Context, side: Side) -> list[KeptBeside]:
    out: list[KeptBeside] = []
    followed = 0
    # files at base first: a choice beside an op the base already called is the usual place
    for f in sorted(ctx.files, key=lambda f: f.patch.old_path is None):
        path = f.patch.new_path
        if not path or not path.endswith(".py") or not f.patch.hunks:
            continue
        mod = side.module(path)
        if mod is None:
            continue
        added = sorted(n for n, _ in f.patch.added_lines())
        flags: dict[str, set[str]] | None = None
        device = {k.name for k in f.new.kernels} if f.new is not None else set()
        settled: list[tuple[int, int]] = []  # choices nothing nested in can pair anew
        for choice in choices(mod.tree, path):
            if choice.scope.split(".")[-1] in device:
                continue  # a test in a kernel's body: device code, not a choice of kernels
            if not _touched(choice, added) or followed >= _MAX_CHOICES:
                continue
            if any(a <= choice.line and choice.end <= b for a, b in settled):
                continue
            followed += 1
            reaches = [
                _roles(_arm_reach(side, path, list(code), choice.scope, [_MAX_SPLITS]))
                for _, code in choice.arms
            ]
            union = [r for arm in reaches for r in arm.values()]
            if not any(r.ops for r in union) or not any(r.kernels for r in union):
                settled.append((choice.line, choice.end))  # nothing to pair in it at all
            found = len(out)
            for i, j in ((i, j) for i in range(len(reaches)) for j in range(len(reaches))):
                if i == j:
                    continue
                for role, old in reaches[i].items():
                    new = reaches[j].get(role, Reach())
                    everything = {k for r in reaches[i].values() for k in r.kernels}
                    kernels = new.kernels - everything
                    # the repository's own ops: built or registered by it, or named like C++
                    # files of it (``torch.ops.fbgemm``), not PyTorch's (``torch.ops.aten``)
                    ops = {
                        o
                        for o in old.ops - new.ops
                        if o.extension.where or side.extensions.named_cpp(o.extension.name)
                    }
                    if not ops or not kernels:
                        continue
                    if {o.extension for o in ops} & {o.extension for o in new.ops}:
                        continue  # both reach the extension: other ops of it, not another way

                    if flags is None:
                        flags = LaunchPath(mod.tree).flags
                    where = f"{path}::{choice.scope or 'module level'}@{choice.line}"
                    out.append(
                        KeptBeside(
                            moved=MovedCall(
                                where=f"{where}::{role}" if role else where,
                                ops=tuple(sorted(ops, key=lambda o: (o.extension.name, o.name))),
                                kernels=tuple(sorted(kernels)),
                                kept=True,
                            ),
                            tests=choice.arms[j][0],
                            flags=_local_flags(mod.tree, choice.scope, flags),
                            path=path,
                            line=choice.line,
                        )
                    )
            if len(out) > found:
                settled.append((choice.line, choice.end))  # paired here, not again inside
    return out


def choice_gates(changes: list[KernelChange], ctx: Context) -> list[KernelChange]:
    """The vendor and architecture tests of each choice that leads to a rewrite's new kernels,
    raised on those kernels as its branches."""
    from bot.analysis.reach.moved_calls import sides

    if not any(c.kind == "rewrite" for c in changes):
        return changes
    both = sides(ctx)
    found = kept_beside(ctx, both)
    if not found:
        return changes
    out = list(changes)
    for k in found:
        branches = [
            LaunchBranch(
                kind=kind,  # type: ignore[arg-type]
                path=k.path,
                line=k.line,
                condition=t,
                where=f"the choice in {k.moved.where.split('::')[1]} ({k.path})",
                note="",
            )
            for t in k.tests
            for kind in test_kinds(t, k.flags)
        ]
        if not branches:
            continue
        branches = [b.model_copy(update={"note": branch_note(b, ctx.policy)}) for b in branches]
        for i, c in enumerate(out):
            if c.kind != "rewrite" or c.name not in k.moved.kernels:
                continue
            have = {(b.kind, b.condition) for b in c.branches}
            fresh = [b for b in branches if (b.kind, b.condition) not in have]
            if fresh:
                out[i] = c.model_copy(update={"branches": [*c.branches, *fresh]})
    return out
