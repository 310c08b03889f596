"""Kernels whose launch a vendor decides in another file: an import under a vendor or
architecture test that changed, or a class's vendor data that changed.

``if SYSTEM == "ipex": from .ipex import QuantLinear / elif SYSTEM in {"cuda", "rocm"}: from
.triton import QuantLinear`` decides, in one module, on which vendors the kernels of another are
launched at all. When a diff puts a new vendor or architecture test around an import of a kernel-bearing
module (a vendor added, the module renamed and imported under a new test), each launched kernel
of that module is a ``launch`` change (a kernel only renamed with it too) with the new tests as
its vendor / architecture branches, whether or not the module itself changed.

The same holds for data: ``SUPPORTS_DEVICES = [DEVICE.CUDA, DEVICE.XPU]`` on a quantised linear
class decides on which vendors a backend selector picks it, and so where the kernels its methods
reach are launched. A class-level binding whose value names a vendor (``VENDORS``' words) and
changed makes each kernel the class reaches (``follow.Side.follow``, per method, across files)
a ``launch`` change with the binding as its vendor branch.

The query: per Python file of the diff, its imports (module level, nested blocks too) with the
``if`` tests around them, and its classes' bindings, at base and at head; an imported module or
a class is resolved in its side (``follow.Side``), read, and its launched kernels taken from its
scan.
"""

from __future__ import annotations

import ast

from bot.analysis.model import Context, KernelChange, LaunchBranch
from bot.analysis.reach.branches import branch_note, test_kinds, vendors_named
from bot.analysis.reach.follow import Side, absolute, module_of
from bot.analysis.reach.moved_calls import sides
from bot.analysis.text import collapse, parse_python_or_none, walk

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
                note = (
                    f"the tests its module {module} is imported under in {f.patch.new_path} changed"
                )
                out = _with_gate(out, kernel, path, branches, note)
        if old_tree is not None:
            out = _class_data(out, ctx, new_side, old_tree, new_tree, f.patch.new_path)
    return out


def _class_bindings(tree: ast.Module) -> dict[tuple[str, str], ast.stmt]:
    """``(class, name) -> statement`` of every class-level assignment of a module."""
    out: dict[tuple[str, str], ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                targets = (
                    stmt.targets if isinstance(stmt, ast.Assign) else
                    [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
                )  # fmt: skip
                for t in targets:
                    if isinstance(t, ast.Name):
                        out[(node.name, t.id)] = stmt
    return out


def _guards(tree: ast.Module) -> dict[str, set[str]]:
    """Per class, the tests of its constructor's guards (``if <test>: raise ...``)."""
    out: dict[str, set[str]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        for sub in node.body:
            if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and sub.name == "__init__":
                out[node.name] = {
                    collapse(ast.unparse(stmt.test))
                    for stmt in walk(sub)
                    if isinstance(stmt, ast.If)
                    and stmt.body
                    and isinstance(stmt.body[-1], ast.Raise)
                }
    return out


def _instance_kernels(side: Side, qualified: str) -> set[str]:
    """The kernels an instance of the class ``qualified`` launches: what its instance methods
    reach (a ``classmethod`` / ``staticmethod`` such as a ``validate`` probe runs without one)."""
    found = side.locate(qualified)
    if found is None:
        return set()
    mod, cls = found
    out: set[str] = set()
    for method, reach in side.follow(qualified).items():
        node = mod.defs.get(f"{cls}.{method}")
        decorators = {ast.unparse(d) for d in getattr(node, "decorator_list", [])}
        if not decorators & {"classmethod", "staticmethod"}:
            out |= reach.kernels
    return out


def _class_data(
    changes: list[KernelChange],
    ctx: Context,
    side: Side,
    old_tree: ast.Module,
    new_tree: ast.Module,
    path: str,
) -> list[KernelChange]:
    """Kernels reached by a class whose constructor's guards changed (``if infeatures % 256:
    raise``: the inputs its instances take), or whose vendor data changed (``SUPPORTS_DEVICES``
    dropping a vendor, then with that binding as a vendor branch): launch changes."""
    guards_old, guards_new = _guards(old_tree), _guards(new_tree)
    for cls in sorted(guards_new.keys() & guards_old.keys()):
        if guards_new[cls] == guards_old[cls]:
            continue
        changed = sorted(guards_new[cls] - guards_old[cls]) or sorted(guards_old[cls])
        note = (
            f"the checks {cls}.__init__ refuses inputs by changed (`{changed[0]}`): its instances, "
            "and the launches of the kernels they reach, take other inputs"
        )
        for kernel in sorted(_instance_kernels(side, f"{module_of(path)}.{cls}")):
            where = side.kernel_path(kernel)
            if where is not None:
                changes = _with_gate(changes, kernel, where, [], note)
    before = _class_bindings(old_tree)
    after = _class_bindings(new_tree)
    for (cls, name), stmt in sorted(after.items()):
        old = before.get((cls, name))
        if old is None or ast.dump(old) == ast.dump(stmt):
            continue
        was, now = collapse(ast.unparse(old)), collapse(ast.unparse(stmt))
        if not vendors_named(f"{was} {now}"):
            continue
        reached = _instance_kernels(side, f"{module_of(path)}.{cls}")
        branch = class_branch(
            cls,
            path,
            stmt.lineno,
            f"{cls}.{name}: {was.split('=', 1)[-1].strip()} -> {now.split('=', 1)[-1].strip()}",
        )
        branch = branch.model_copy(update={"note": branch_note(branch, ctx.policy)})
        for kernel in sorted(reached):
            where = side.kernel_path(kernel)
            if where is not None:
                note = f"{cls}.{name}, the vendor data of a class that launches it, changed"
                changes = _with_gate(changes, kernel, where, [branch], note)
    return changes


def class_branch(cls: str, path: str, line: int, condition: str) -> LaunchBranch:
    """A vendor branch a class of ``path`` makes: its vendor data, a vendor's class's method."""
    return LaunchBranch(
        kind="vendor",
        path=path,
        line=line,
        condition=condition,
        where=f"the class {cls} in {path}",
        note="",
    )


def _with_gate(
    changes: list[KernelChange],
    kernel: str,
    path: str,
    branches: list[LaunchBranch],
    note: str,
    keep_tuning: bool = False,
    host: str | None = None,
) -> list[KernelChange]:
    """``kernel`` with ``branches`` and ``note`` added: a launch change, or the change already
    found (a move becomes a launch change, and so does a tuning change unless ``keep_tuning``:
    the gate then only says when the retuned launch runs). A body change keeps its kind, with
    ``host`` (the file of the host code that changed) among its host changes."""
    for i, c in enumerate(changes):
        if c.name != kernel or path not in {c.path, *(r.path for r in (c.old, c.new) if r)}:
            continue
        kind = "launch" if c.kind == "moved" or (c.kind == "tuning" and not keep_tuning) else c.kind
        hosts = c.host_changes
        if host is not None and c.kind == "body":
            hosts = list(dict.fromkeys([*hosts, f"{host}: the host code that launches it changed"]))
        changes[i] = c.model_copy(
            update={
                "kind": kind,
                "branches": [*c.branches, *branches],
                "notes": [*c.notes, note],
                "host_changes": hosts,
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
