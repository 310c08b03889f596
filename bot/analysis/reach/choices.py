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
import re
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass

from bot.analysis.model import Context, KernelChange, LaunchBranch
from bot.analysis.reach.branches import LaunchPath, branch_note, test_kinds, vendors_named
from bot.analysis.reach.follow import Op, Reach, Side, imports_in
from bot.analysis.reach.import_gates import class_branch
from bot.analysis.reach.moved_calls import MovedCall
from bot.analysis.text import collapse, is_test_path, walk

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
    scope: str = ""  # the function the choice is in


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
            for sub in walk(stmt):
                if isinstance(sub, ast.IfExp):
                    t = collapse(ast.unparse(sub.test))
                    arms2 = (((t,), (sub.body,)), ((f"not ({t})",), (sub.orelse,)))
                    yield Choice(path, scope, stmt.lineno, end, arms2)

    yield from visit(tree.body, "")


def _leaves(code: list, budget: list[int]) -> list[list]:
    """An alternative's code once per path through the choices nested in it (a name defined
    in two nested alternatives is two implementations, not one)."""
    nested = [s for s in code if isinstance(s, ast.If)]
    if not nested or budget[0] <= 0:
        return [code]
    budget[0] -= 1
    first = nested[0]
    rest = [s for s in code if s is not first]
    return [leaf for _, alt in _chain(first) for leaf in _leaves(rest + alt, budget)]


def _arm_reach(side: Side, path: str, code: list, scope: str) -> Reach:
    """What one alternative reaches."""
    out = Reach()
    for leaf in _leaves(code, [_MAX_SPLITS]):
        out.add(side.reach_in(path, leaf, scope))
    return out


def _defined_reach(side: Side, path: str, code: list) -> dict[str, Reach]:
    """What each function a module-level alternative defines reaches."""
    out: dict[str, Reach] = {}
    for leaf in _leaves(code, [_MAX_SPLITS]):
        for stmt in leaf:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                reach = side.reach_in(path, [stmt], beside=leaf)
                out.setdefault(stmt.name, Reach()).add(reach)
    return out


def _units(side: Side, path: str, choice: Choice) -> list[tuple[str, list[dict[str, Reach]]]]:
    """``(what is chosen, per alternative its reach by role)``: at module level, each name
    two alternatives define (``RUN_CUDA_RWKV6``: what one or the other definition runs), so
    a name one alternative alone defines pairs nothing; elsewhere, the alternatives whole."""
    if not choice.scope:
        named = [_defined_reach(side, path, list(code)) for _, code in choice.arms]
        shared = sorted(n for n in {n for d in named for n in d} if sum(n in d for d in named) > 1)
        if shared:
            return [(n, [_roles(d.get(n, Reach())) for d in named]) for n in shared]
    arms = [_roles(_arm_reach(side, path, list(code), choice.scope)) for _, code in choice.arms]
    return [(choice.scope or "module level", arms)]


def _roles(reach: Reach) -> dict[str, Reach]:
    out = {"": reach.forward()}
    if reach.back_kernels or reach.back_ops:
        out["backward"] = reach.backward()
    return out


def _open(choice: Choice) -> bool:
    """Whether two alternatives or more hold code that can reach anything (a call, an
    assignment, a definition): one alone has nothing to stand beside (``if flag: log(...)``),
    so following it is skipped and does not count against the choices followed."""
    return (
        sum(
            any(isinstance(n, _REACHING) for stmt in code for n in walk(stmt))
            for _, code in choice.arms
        )
        >= 2
    )


_REACHING = (ast.Call, ast.Assign, ast.AnnAssign, ast.FunctionDef, ast.AsyncFunctionDef)


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
    for sub in walk(node):
        if isinstance(sub, ast.Assign):
            for kind in test_kinds(ast.unparse(sub.value), out):
                for t in sub.targets:
                    out[kind] |= {n.id for n in walk(t) if isinstance(n, ast.Name)}
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


def _moved(
    side: Side, before: dict[str, Reach], new: Reach, role: str
) -> tuple[tuple[Op, ...], tuple[str, ...]] | None:
    """The ops one alternative reaches in ``role`` (``before``: its reach by role) and the
    kernels another reaches there instead (``new``), where the second took the first's role."""
    old = before[role]
    kernels = new.kernels - {k for r in before.values() for k in r.kernels}
    # the repository's own ops: built or registered by it, or named like C++ files of it
    # (``torch.ops.fbgemm``), not PyTorch's (``torch.ops.aten``)
    ops = {
        o
        for o in old.ops - new.ops
        if o.extension.where or side.extensions.named_cpp(o.extension.name)
    }
    if not ops or not kernels:
        return None
    if {o.extension for o in ops} & {o.extension for o in new.ops}:
        return None  # both reach the extension: other ops of it, not another way to one
    return tuple(sorted(ops, key=lambda o: (o.extension.name, o.name))), tuple(sorted(kernels))


def _kept_beside(ctx: Context, side: Side) -> list[KeptBeside]:
    out: list[KeptBeside] = []
    followed = 0
    # files at base first: a choice beside an op the base already called is the usual place;
    # tests last: a test comparing the two paths is not where the program picks one
    for f in sorted(
        ctx.files, key=lambda f: (is_test_path(f.patch.path), f.patch.old_path is None)
    ):
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
            if not _touched(choice, added) or not _open(choice) or followed >= _MAX_CHOICES:
                continue
            if any(a <= choice.line and choice.end <= b for a, b in settled):
                continue
            followed += 1
            units = _units(side, path, choice)
            union = [r for _, arms in units for arm in arms for r in arm.values()]
            if not any(r.ops for r in union) or not any(r.kernels for r in union):
                settled.append((choice.line, choice.end))  # nothing to pair in it at all
            found = len(out)
            for label, reaches in units:
                for i, j in ((i, j) for i in range(len(reaches)) for j in range(len(reaches))):
                    if i == j:
                        continue
                    for role in reaches[i]:
                        moved = _moved(side, reaches[i], reaches[j].get(role, Reach()), role)
                        if moved is None:
                            continue
                        if flags is None:
                            flags = LaunchPath(mod.tree).flags
                        where = f"{path}::{label}@{choice.line}"
                        out.append(
                            KeptBeside(
                                moved=MovedCall(
                                    where=f"{where}::{role}" if role else where,
                                    ops=moved[0],
                                    kernels=moved[1],
                                    kept=True,
                                ),
                                tests=choice.arms[j][0],
                                flags=_local_flags(mod.tree, choice.scope, flags),
                                path=path,
                                line=choice.line,
                                scope=choice.scope,
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
        branches += _vendor_routes(ctx, both[1], k) if both is not None else []
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


_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def _vendor_routes(ctx: Context, side: Side, k: KeptBeside) -> list[LaunchBranch]:
    """A method of a vendor's class (``RocmPlatform.get_attn_backend_cls``) that the diff
    makes import or call the function holding the choice: on that vendor, the choice is
    reached through it, one call away."""
    func = k.scope.split(".")[-1]
    if not func or "." in k.scope:
        return []
    out: list[LaunchBranch] = []
    for f in ctx.files:
        path = f.patch.new_path
        mod = side.module(path) if path and path.endswith(".py") else None
        if mod is None or path is None:
            continue
        added = sorted(n for n, _ in f.patch.added_lines())
        for cls in (n for n in mod.tree.body if isinstance(n, ast.ClassDef)):
            vendors = vendors_named(" ".join(_CAMEL.findall(cls.name)))
            if not vendors:
                continue
            for method in cls.body:
                if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                span = Choice(path, "", method.lineno, method.end_lineno or method.lineno, ())
                if not _touched(span, added):
                    continue
                named = {q for qs in imports_in(method.body, path).values() for q in qs}
                if not any(
                    q.rsplit(".", 1)[-1] == func and side.path_of(q.rsplit(".", 1)[0]) == k.path
                    for q in named
                ):
                    continue
                said = f"{cls.name}.{method.name} ({', '.join(vendors)}) imports {func}"
                out.append(class_branch(cls.name, path, method.lineno, said))
    return out
