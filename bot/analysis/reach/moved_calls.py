"""Calls moved from a compiled extension's ops to code that launches Python kernels, by role.

A switched call site (``call_sites``: what a function stopped and started referring to) is a
rewrite's evidence when, followed (``follow``), the names it stopped calling reach ops of an
extension module (``extensions``) and the names it started calling reach Triton kernels. A
class switched for another is followed per method, so ``forward`` pairs with ``forward`` and
``backward`` with ``backward``; a role on one side only pairs nothing.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from bot.analysis.model import Context
from bot.analysis.reach.extensions import ExtensionIndex
from bot.analysis.reach.follow import Op, Reach, Side, dotted
from bot.analysis.text import walk

Switch = tuple[str, set[str], set[str]]


@dataclass(frozen=True)
class MovedCall:
    where: str  # path::function, with ``::method`` for a class followed per method
    ops: tuple[Op, ...]  # what the old names reached
    kernels: tuple[str, ...]  # what the new names reach
    kept: bool  # the old name is still referred to at head (a flag keeps it)
    # where the kernels are defined, as (path, name): a file the diff leaves alone, too
    sites: tuple[tuple[str, str], ...] = ()


def sides(ctx: Context) -> tuple[Side, Side] | None:
    """Base and head as :class:`Side` readers, where the caller can read whole revisions."""
    old_read, new_read = ctx.old_whole or ctx.old_source, ctx.new_whole or ctx.new_source
    if old_read is None or new_read is None or ctx.old_files is None:
        return None
    old_paths = list(ctx.old_files)
    gone = {f.patch.old_path for f in ctx.files if f.patch.status == "deleted"}
    added = [f.patch.new_path for f in ctx.files if f.patch.new_path]
    new_paths = [p for p in old_paths if p not in gone] + [p for p in added if p]
    own = frozenset(p for f in ctx.files for p in (f.patch.old_path, f.patch.new_path) if p)
    return (
        Side(old_paths, old_read, ExtensionIndex(old_paths, old_read), own),
        Side(new_paths, new_read, ExtensionIndex(new_paths, new_read), own),
    )


def moved_calls(both: tuple[Side, Side] | None, switches: list[Switch]) -> list[MovedCall]:
    if both is None:
        return []
    old, new = both
    out = []
    for where, gone, added in switches:
        before: dict[str, Reach] = {}
        kept: dict[str, bool] = {}
        for name in sorted(gone):
            bare = name.startswith("~") and "." not in name
            if bare and not _alternatives(new, where, name[1:], added):
                continue  # kept beside the new calls, not instead of them
            for role, reach in _roles(_follow(old, where, name.lstrip("~"))):
                if reach.ops:
                    before.setdefault(role, Reach()).add(reach)
                    kept[role] = kept.get(role, False) or name.startswith("~")
        if not before:
            continue
        after: dict[str, Reach] = {}
        for name in sorted(added):
            for role, reach in _roles(_follow(new, where, name)):
                after.setdefault(role, Reach()).add(reach)
        for role in sorted(before):
            reached = after.get(role, Reach())
            kernels = reached.kernels
            if not kernels:
                continue
            ops = tuple(sorted(before[role].ops, key=lambda o: (o.extension.name, o.name)))
            out.append(
                MovedCall(
                    where=f"{where}::{role}" if role else where,
                    ops=ops,
                    kernels=tuple(sorted(kernels)),
                    kept=kept[role],
                    sites=tuple(sorted(x for x in reached.sites if x[1] in kernels)),
                )
            )
    return out


def keyed_kernels(both: tuple[Side, Side] | None, switches: list[Switch]) -> dict[str, set[str]]:
    """Per Python kernel at head, the string literals whose tests, in a function a switched
    call site newly calls, lead to it (``if strategy == "cell": return CellFn.apply(...)``):
    a role the old op may have chosen by the same literal."""
    if both is None:
        return {}
    out: dict[str, set[str]] = {}
    for where, gone, added in switches:
        path, _, func = where.partition("::")
        func = func.split("#", 1)[0]
        if not func or not gone:
            continue
        for name in sorted(added):
            for lit, kernels in both[1].keyed_kernels(path, func, name).items():
                for k in kernels:
                    out.setdefault(k, set()).add(lit)
    return out


def _follow(side: Side, where: str, name: str) -> dict[str, Reach]:
    """What ``name`` reaches, as a qualified name, else as written in the switching function
    (``where``: ``path::func``), where a call on a local or parameter, or a bare name (a
    function of that module, a name it imports), is resolved."""
    path, _, func = where.partition("::")
    func = func.split("#", 1)[0]
    found = side.follow(name, calls=side.calls_of(path, func, name) if func else ())
    if found or not func:
        return found
    reach = side.reach_call(path, func, name)
    return {"": reach} if reach.kernels or reach.ops else {}


def _alternatives(side: Side, where: str, kept: str, added: set[str]) -> bool:
    """Whether the switching function (``where``) calls ``kept`` and one of ``added`` in the
    two branches of one test (``if backend == "cuda": a(...) else: b(...)``): a choice
    between them, where calls in sequence are two steps."""
    path, _, func = where.partition("::")
    mod = side.module(path)
    node = mod.defs.get(func.split("#", 1)[0]) if mod is not None else None
    if node is None or isinstance(node, ast.ClassDef):
        return False
    wanted = {a.rsplit(".", 1)[-1] for a in added}

    def calls(nodes: list[ast.stmt] | list[ast.expr], names: set[str]) -> bool:
        return any(
            isinstance(sub, ast.Call) and (dotted(sub.func) or "").rsplit(".", 1)[-1] in names
            for n in nodes
            for sub in walk(n)
        )

    for sub in walk(node):
        if isinstance(sub, ast.If):
            body, orelse = list(sub.body), list(sub.orelse)
        elif isinstance(sub, ast.IfExp):
            body, orelse = [sub.body], [sub.orelse]  # type: ignore[list-item]
        else:
            continue
        if (calls(body, {kept}) and calls(orelse, wanted)) or (
            calls(orelse, {kept}) and calls(body, wanted)
        ):
            return True
    return False


def _roles(found: dict[str, Reach]) -> list[tuple[str, Reach]]:
    """Each role's reach, what an autograd Function's ``apply`` reaches only through its
    ``backward`` split off as a role of its own, so that backward pairs with backward."""
    out = []
    for role, reach in found.items():
        out.append((role, reach.forward()))
        if reach.back_kernels or reach.back_ops:
            out.append((f"{role}.backward" if role else "backward", reach.backward()))
    return out


def still_built(both: tuple[Side, Side] | None, names: set[str]) -> set[str]:
    """Which of the extension modules ``names`` head still builds or registers."""
    if both is None:
        return set(names)
    return {n for n in names if both[1].extensions.module(n) is not None}
