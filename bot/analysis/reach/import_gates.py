"""Kernels whose module is imported under a vendor or architecture test that changed.

``if SYSTEM == "ipex": from .ipex import QuantLinear / elif SYSTEM in {"cuda", "rocm"}: from
.triton import QuantLinear`` decides, in one module, on which vendors the kernels of another are
launched at all. When a diff puts a new vendor or architecture test around an import of a kernel-bearing
module (a vendor added, the module renamed and imported under a new test), each launched kernel
of that module is a ``launch`` change (a kernel only renamed with it too) with the new tests as
its vendor / architecture branches, whether or not the module itself changed.

The query: per Python file of the diff, its imports (module level, nested blocks too) with the
``if`` tests around them, at base and at head; an imported module is resolved to a file of its
side (``follow.Side``), read, and its launched kernels taken from its scan.
"""

from __future__ import annotations

import ast

from bot.analysis.model import Context, KernelChange, LaunchBranch
from bot.analysis.reach.branches import branch_note, test_kinds
from bot.analysis.reach.follow import Side, absolute
from bot.analysis.reach.moved_calls import sides
from bot.analysis.text import collapse, parse_python_or_none

_MAX_MODULES = 8
Gates = dict[str, set[tuple[str, int]]]  # imported module -> (a test as written, its line)


def gated_imports(tree: ast.Module, path: str) -> Gates:
    """Each module a file imports under ``if`` tests (module level, or in blocks and functions),
    with every test around the import (an ``elif``'s and the ``if``'s before it)."""
    out: Gates = {}

    def visit(body: list[ast.stmt], tests: tuple[ast.expr, ...]) -> None:
        for stmt in body:
            found = {(collapse(ast.unparse(t)), t.lineno) for t in tests}
            if isinstance(stmt, ast.ImportFrom) and tests:
                base = absolute(stmt.module, stmt.level, path)
                for a in stmt.names:
                    for module in (base, f"{base}.{a.name}"):
                        out.setdefault(module, set()).update(found)
            elif isinstance(stmt, ast.Import) and tests:
                for a in stmt.names:
                    out.setdefault(a.name, set()).update(found)
            elif isinstance(stmt, ast.If):
                visit(stmt.body, (*tests, stmt.test))
                visit(stmt.orelse, (*tests, stmt.test))
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.With, ast.Try)):
                visit(stmt.body, tests)

    visit(tree.body, ())
    return out


def _launched(side: Side, module: str) -> tuple[str, set[str]] | None:
    path = side.path_of(module)
    found = side.module(path) if path else None
    return (path, found.kernels) if path and found is not None and found.kernels else None


def import_gates(changes: list[KernelChange], ctx: Context) -> list[KernelChange]:
    both = sides(ctx)
    if both is None:
        return changes
    old_side, new_side = both
    out = list(changes)
    done = 0
    renames = {
        f.patch.old_path: f.patch.new_path
        for f in ctx.files
        if f.patch.status == "renamed" and f.patch.old_path and f.patch.new_path
    }
    for f in ctx.files:
        if not f.patch.path.endswith(".py"):
            continue
        old_tree = parse_python_or_none(f.old_text) if f.patch.old_path else None
        new_tree = parse_python_or_none(f.new_text) if f.patch.new_path else None
        if new_tree is None or f.patch.new_path is None:
            continue
        before = gated_imports(old_tree, f.patch.old_path or "") if old_tree else {}
        after = gated_imports(new_tree, f.patch.new_path)
        for module, gates in sorted(after.items()):
            vendor = [(g, line) for g, line in gates if test_kinds(g)]
            if not vendor or done >= _MAX_MODULES:
                continue
            new = _launched(new_side, module)
            if new is None:
                continue
            done += 1
            path, kernels = new
            olds = {
                g
                for mod, gs in before.items()
                for g, _ in gs
                if (old := old_side.path_of(mod)) is not None and renames.get(old, old) == path
            }
            if not [g for g, _ in vendor if g not in olds]:
                continue  # no vendor or architecture test around the import is new
            branches = [
                LaunchBranch(
                    kind=kind,  # type: ignore[arg-type]
                    path=f.patch.new_path,
                    line=line,
                    condition=g,
                    where=f"the import of {module} in {f.patch.new_path}",
                    note="",
                )
                for g, line in sorted(vendor)
                if g not in olds
                for kind in test_kinds(g)
            ]
            branches = [b.model_copy(update={"note": branch_note(b, ctx.policy)}) for b in branches]
            for kernel in sorted(kernels):
                out = _with_gate(out, kernel, path, branches, module, f.patch.new_path)
    return out


def _with_gate(
    changes: list[KernelChange],
    kernel: str,
    path: str,
    branches: list[LaunchBranch],
    module: str,
    where: str,
) -> list[KernelChange]:
    note = f"the tests its module {module} is imported under in {where} changed"
    for i, c in enumerate(changes):
        if c.name != kernel or path not in {c.path, *(r.path for r in (c.old, c.new) if r)}:
            continue
        kind = "launch" if c.kind in ("moved", "tuning") else c.kind
        changes[i] = c.model_copy(
            update={
                "kind": kind,
                "branches": [*c.branches, *branches],
                "notes": [*c.notes, note],
            }
        )
        return changes
    return [
        *changes,
        KernelChange(
            kind="launch",
            name=kernel,
            language="triton",
            path=path,
            branches=branches,
            notes=[note],
        ),
    ]
