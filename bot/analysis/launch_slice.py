"""The part of a host function that decides one launch: a backward slice over its statements.

A launch ``kernel[grid](args, ...)`` depends on the names its grid and arguments read, on the
statements that assign those names (or change them in place: ``out.zero_()``, ``x[i] = ...``),
on the names those statements read in turn, on the tests of the ``if`` / loops around any of
them, and on the defaults of the parameters among those names; a statement after the launch
only where a loop holds both. What is outside the slice cannot change what is launched: an
input assertion, a log line, a value computed after the launch for something else. ``launch_digest`` fingerprints the slice, so a host-wrapper change counts as a
launch change only when it reaches the launch.

The statements are indexed once per function (``FunctionSlices``); each launch's slice is a walk
over names, each statement visited once, so a function that launches every kernel of a large
file costs the sum of its slices, not launches times statements.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from bot.analysis.text import digest, is_tuning_name, walk

Func = ast.FunctionDef | ast.AsyncFunctionDef
_COMPOUND_HEADERS = (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)


def _loads(node: ast.AST) -> set[str]:
    return {n.id for n in walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _base(node: ast.AST) -> str | None:
    """The variable an attribute, subscript or method call is rooted at (``out`` of
    ``out[i].data``)."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _header(stmt: ast.stmt) -> tuple[set[str], set[str], str]:
    """``(defines, reads, text)`` of a statement, for a compound one its header only."""
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        defs = {n.id for n in walk(stmt.target) if isinstance(n, ast.Name)}
        return (
            defs,
            _loads(stmt.iter),
            f"for {ast.unparse(stmt.target)} in {ast.unparse(stmt.iter)}",
        )
    if isinstance(stmt, (ast.If, ast.While)):
        return set(), _loads(stmt.test), f"if {ast.unparse(stmt.test)}"
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        defs = {
            n.id
            for item in stmt.items
            if item.optional_vars is not None
            for n in walk(item.optional_vars)
            if isinstance(n, ast.Name)
        }
        reads = {n for item in stmt.items for n in _loads(item.context_expr)}
        return defs, reads, "with " + ", ".join(ast.unparse(i) for i in stmt.items)
    if isinstance(stmt, (ast.Assert, ast.Raise, ast.Pass, ast.Break, ast.Continue)):
        return set(), set(), ""  # changes nothing a launch reads
    defs = set()
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        targets = [stmt.target]
    elif isinstance(stmt, ast.Delete):
        targets = list(stmt.targets)
    for t in targets:
        for n in walk(t):
            if isinstance(n, ast.Name):
                defs.add(n.id)
        base = _base(t)
        if base:
            defs.add(base)  # ``x[i] = ...``, ``x.attr = ...``: x changed in place
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        base = _base(stmt.value.func)
        if base and isinstance(stmt.value.func, ast.Attribute):
            defs.add(base)  # ``out.zero_()``: a method may change its receiver
        defs |= {n for a in stmt.value.args for n in _loads(a)}  # ``fill(out)`` likewise
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return set(), set(), ""  # a docstring
    return defs, _loads(stmt), ast.unparse(stmt)


def _decided(launch: ast.Call, tuning: bool) -> set[str]:
    """The names a launch reads: outside its tuning options, or (``tuning``) in them alone."""
    options = [k for k in launch.keywords if k.arg and is_tuning_name(k.arg)]
    if tuning:
        return {n for k in options for n in _loads(k.value)}
    rest = [launch.func, *launch.args, *(k.value for k in launch.keywords if k not in options)]
    return {n for part in rest for n in _loads(part)}


class FunctionSlices:
    """One host function's statements, indexed by the names they define."""

    def __init__(self, func: Func, keep: Callable[[str], bool] = lambda _t: True) -> None:
        self.func = func
        self.keep = keep
        self.parent: dict[int, ast.stmt] = {}
        self.units: dict[int, tuple[ast.stmt, set[str], str]] = {}  # reads and text, by id
        self.defined_by: dict[str, list[ast.stmt]] = {}
        self.owner: dict[int, ast.stmt] = {}  # a call's statement, by the call's id
        todo: list[ast.stmt] = list(func.body)
        for s in func.body:
            self.parent[id(s)] = func
        while todo:
            stmt = todo.pop()
            defs, reads, text = _header(stmt)
            self.units[id(stmt)] = (stmt, reads, text)
            for name in defs:
                self.defined_by.setdefault(name, []).append(stmt)
            if not isinstance(stmt, _COMPOUND_HEADERS):
                for sub in walk(stmt):
                    if isinstance(sub, ast.Call):
                        self.owner[id(sub)] = stmt
            for block in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(stmt, block, []) or []:
                    if isinstance(child, ast.ExceptHandler):
                        for sub in child.body:
                            self.parent[id(sub)] = stmt
                            todo.append(sub)
                    elif isinstance(child, ast.stmt) and not isinstance(
                        child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
                    ):
                        self.parent[id(child)] = stmt
                        todo.append(child)
        self.defaults: dict[str, str] = {}
        args = func.args
        positional = [*args.posonlyargs, *args.args]
        for a, d in zip(
            positional[len(positional) - len(args.defaults) :], args.defaults, strict=True
        ):
            self.defaults[a.arg] = ast.unparse(d)
        for a, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
            if kw_default is not None:
                self.defaults[a.arg] = ast.unparse(kw_default)

    def _enclosing(self, stmt: ast.stmt) -> list[ast.stmt]:
        out = []
        at = self.parent.get(id(stmt))
        while at is not None and at is not self.func:
            out.append(at)
            at = self.parent.get(id(at))
        return out

    def launch_digest(self, launch: ast.Call, kernel: str, tuning: bool = False) -> str:
        """The fingerprint of what decides ``launch`` (less its own grid and arguments, which
        are compared apart): the statements and tests its names come through, and the defaults
        of the parameters among them. The names its tuning options read (``num_warps=``,
        ``BLOCK_*=``) are not followed, so a warp count chosen by a vendor test is no launch
        change; ``tuning``: the fingerprint of what those options alone read, every statement
        kept."""
        picked: dict[int, ast.stmt] = {}
        names = _decided(launch, tuning) - {kernel}
        holder = self.owner.get(id(launch))
        todo_stmts = self._enclosing(holder) if holder is not None else []
        # past the launch, a statement reaches it only through a loop around both
        looped = any(isinstance(s, (ast.For, ast.AsyncFor, ast.While)) for s in todo_stmts)
        end = (holder.end_lineno or holder.lineno) if holder is not None and not looped else None
        seen: set[str] = set()
        todo = list(names)
        while todo or todo_stmts:
            while todo_stmts:
                stmt = todo_stmts.pop()
                if id(stmt) in picked or stmt is holder:
                    continue
                picked[id(stmt)] = stmt
                todo += self.units[id(stmt)][1]
                todo_stmts += self._enclosing(stmt)
            if todo:
                name = todo.pop()
                if name in seen:
                    continue
                seen.add(name)
                todo_stmts += [
                    s for s in self.defined_by.get(name, []) if end is None or s.lineno <= end
                ]
        texts = []  # the launch's own grid and arguments are compared apart
        for stmt in sorted(picked.values(), key=lambda s: (s.lineno, s.col_offset)):
            text = self.units[id(stmt)][2]
            if text and (tuning or self.keep(text)):
                texts.append(text)
        texts += [f"{n}={self.defaults[n]}" for n in sorted(seen & self.defaults.keys())]
        return digest(texts)
