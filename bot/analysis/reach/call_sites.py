"""What each Python function stopped calling and started calling: call sites switched by role.

A rewrite rarely deletes the compiled op: the Python function that called it (an autograd
``forward``, a dispatcher) now calls a Triton wrapper instead. Per function present at base and at
head (``Class.method`` or ``function``), the names it refers to are compared; a compiled op is
seen through the ways real code reaches one:

- ``torch.ops.<ns>.<op>(...)`` -> ``op``;
- an extension module, ``semiring_cal_A.forward(...)`` -> ``semiring_cal_A.forward``;
- a loader called with the op's name, ``get_xformers_operator("index_select")`` -> ``index_select``
  (also through a class or module attribute holding it: ``IndexSelect.OPERATOR(...)``);
- a dispatch table or ``getattr``: ``OPS["index_select"]``, ``getattr(ops, "index_select")``.

``role_switches`` gives ``(where, no longer referred to, newly referred to)`` per function; the
pairing matches the first against C++ kernels, launchers and bindings, the second against Triton
kernels and their wrappers, so the forward pairs with the forward and the backward with the
backward.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_left

from bot.analysis.model import Context
from bot.analysis.reach.follow import absolute, dotted, imports_in
from bot.analysis.text import parse_python_or_none, source_kind, walk

Func = ast.FunctionDef | ast.AsyncFunctionDef


def _string_arg(call: ast.Call) -> str | None:
    """The op name a loader is called with: its one string argument."""
    strings = [
        a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
    ]
    return strings[0] if len(strings) == 1 and strings[0].isidentifier() else None


class _Names:
    """Module-level and class-level names bound to a loaded op: ``X = load("op")``."""

    def __init__(self, tree: ast.Module) -> None:
        self.ops: dict[str, str] = {}
        self.imports: dict[str, str] = {}  # local name -> module.name
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    self.imports[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.imports[a.asname] = a.name
        for node in tree.body:
            self._bind(node, "")
            if isinstance(node, ast.ClassDef):
                for sub in node.body:
                    self._bind(sub, f"{node.name}.")

    def _bind(self, node: ast.stmt, prefix: str) -> None:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            op = _string_arg(node.value) or _torch_op(node.value.func)
            if op:
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        self.ops[prefix + t.id] = op


def _torch_op(node: ast.AST) -> str | None:
    name = dotted(node)
    if name and name.startswith("torch.ops.") and name.count(".") >= 3:
        return name.split(".")[3]
    return None


def _refs(func: Func, names: _Names, path: str = "") -> set[str]:
    out: set[str] = set()
    nodes = list(walk(func))
    has_imports = path and any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in nodes)
    local = imports_in(func.body, path) if has_imports else {}
    for sub in nodes:
        if isinstance(sub, ast.Call):
            target = sub.func
            if isinstance(target, ast.Subscript):  # kernel[grid](...)
                target = target.value
            name = dotted(target)
            if name:
                head, dot, rest = name.partition(".")
                for q in sorted(local.get(head) or {names.imports.get(head, head)}):
                    out.add(q + dot + rest)
                if name in names.ops:
                    out.add(names.ops[name])
                op = _torch_op(target)
                if op:
                    out.add(op)
            if name == "getattr" and len(sub.args) >= 2:
                arg = sub.args[1]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    out.add(arg.value)
            loaded = _string_arg(sub)
            if loaded and name and name not in ("print", "getattr", "str", "format"):
                out.add(loaded)
            if isinstance(sub.func, ast.Call):  # load("op")(...)
                inner = _string_arg(sub.func)
                if inner:
                    out.add(inner)
        elif isinstance(sub, ast.Subscript):
            key = sub.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                out.add(key.value)  # OPS["op"]
        elif isinstance(sub, ast.Attribute):
            name = dotted(sub)
            if name and name in names.ops:
                out.add(names.ops[name])
    return out


def functions(tree: ast.Module) -> dict[str, Func]:
    """A module's functions and its classes' methods, by ``f`` / ``Cls.m``."""
    out: dict[str, Func] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    out[f"{node.name}.{sub.name}"] = sub
    return out


def touched(func: Func, lines: list[int]) -> bool:
    """Whether a line of ``lines`` (sorted) falls in ``func``, decorators included; by
    bisection, as every function of a file is asked (each testing every line was quadratic:
    12,000 functions with a changed line in each took most of two minutes)."""
    first = min([func.lineno, *(d.lineno for d in func.decorator_list)])
    last = func.end_lineno or func.lineno
    i = bisect_left(lines, first)
    return i < len(lines) and lines[i] <= last


def role_switches(ctx: Context) -> list[tuple[str, set[str], set[str]]]:
    """Per Python function whose references changed: ``(path::function, gone, new)``; a function
    that keeps calling a compiled op beside a new Triton call has that op in both sets' place as
    ``kept`` (reported as gone with a ``~`` prefix, so the pairing can tell the old was kept)."""
    out = []
    for f in ctx.files:
        if source_kind(f.patch.path) != "python" or not f.patch.hunks:
            continue
        old_tree, new_tree = parse_python_or_none(f.old_text), parse_python_or_none(f.new_text)
        if old_tree is None or new_tree is None:
            continue
        old_names, new_names = _Names(old_tree), _Names(new_tree)
        old_funcs, new_funcs = functions(old_tree), functions(new_tree)
        gone_funcs = [f for n, f in old_funcs.items() if n not in new_funcs]
        new_only = [f for n, f in new_funcs.items() if n not in old_funcs]
        gone = set().union(*(_refs(f, old_names) for f in gone_funcs)) if gone_funcs else set()
        new = set(new_names.imports.values()) - set(old_names.imports.values())
        new |= set().union(*(_refs(f, new_names) for f in new_only)) if new_only else set()
        if gone and new:  # functions removed, others imported or added in their place
            out.append((f.patch.path, gone - new, new - gone))
        added = sorted(n for n, _ in f.patch.added_lines())
        removed = sorted(n for n, _ in f.patch.removed_lines())
        rebound = any(  # ``import a as x`` -> ``from b import c as x``: every use of x switched
            old_names.imports.get(k, v) != v for k, v in new_names.imports.items()
        )
        path = f.patch.path
        for name, new_func in new_funcs.items():
            old_func = old_funcs.get(name)
            if old_func is None:
                continue
            if not (rebound or touched(new_func, added) or touched(old_func, removed)):
                continue  # unchanged: the same references on both sides
            before = _refs(old_func, old_names, f.patch.old_path or path)
            after = _refs(new_func, new_names, path)
            gone, new = before - after, after - before
            kept = {f"~{n}" for n in before & after}
            if new:
                out.append((f"{f.patch.path}::{name}", gone | kept, new))
    return out


_LINE_CALL = re.compile(r"((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)?\(")
_LOADED = re.compile(r"[A-Za-z_][\w.]*\(\s*[\"']([A-Za-z_]\w*)[\"']\s*\)")
_KEYED = re.compile(r"\[\s*[\"']([A-Za-z_]\w*)[\"']\s*\]")
_LINE_DEF = re.compile(r"^(\s*)(?:async\s+)?def\s+([A-Za-z_]\w*)")
_LINE_CLASS = re.compile(r"^(\s*)class\s+([A-Za-z_]\w*)")
_LINE_ALIAS = re.compile(
    r"^(\s*)([A-Za-z_]\w*)\s*=\s*[A-Za-z_][\w.]*\(\s*[\"']([A-Za-z_]\w*)[\"']\s*\)"
)
IMPORT_LINE = re.compile(r"^\s*from\s+([\w.]+)\s+import\s+\(?([^)]*)")
_NOT_CALLS = {"if", "for", "while", "return", "print", "def", "with", "assert", "not", "and", "or"}


def from_imports(lines: list[str], path: str = "") -> dict[str, str]:
    """``from m import a as b`` -> {"b": "m.a"}; ``from m import a`` -> {"a": "m.a"}; with the
    importing file's ``path``, a relative ``from .m import a`` as the module it names."""
    out = {}
    for line in lines:
        m = IMPORT_LINE.match(line.split("#")[0])
        if m:
            module = m.group(1)
            if path and module.startswith("."):
                level = len(module) - len(module.lstrip("."))
                module = absolute(module.lstrip(".") or None, level, path)
            for part in m.group(2).split(","):
                words = part.split()
                if len(words) == 1:
                    out[words[0]] = f"{module}.{words[0]}"
                elif len(words) == 3 and words[1] == "as":
                    out[words[2]] = f"{module}.{words[0]}"
    return out


def _line_aliases(lines: list[str]) -> dict[str, str]:
    """``OPERATOR = get_op("index_select")`` inside ``class IndexSelect`` -> that class's
    ``IndexSelect.OPERATOR`` (and a module-level ``X = load("op")`` -> ``X``) names ``op``."""
    out: dict[str, str] = {}
    cls, cls_indent = None, -1
    for line in lines:
        c = _LINE_CLASS.match(line)
        if c:
            cls, cls_indent = c.group(2), len(c.group(1))
            continue
        m = _LINE_ALIAS.match(line)
        if not m:
            continue
        indent = len(m.group(1))
        if cls is not None and indent > cls_indent:
            out[f"{cls}.{m.group(2)}"] = m.group(3)
        elif indent == 0:
            out[m.group(2)] = m.group(3)
    return out


def _line_refs(lines: list[str], aliases: dict[str, str], imports: dict[str, str]) -> set[str]:
    out: set[str] = set()
    for line in lines:
        code = line.split("#", 1)[0]
        if _LINE_DEF.match(code) or code.lstrip().startswith(("import ", "from ")):
            continue
        for m in _LINE_CALL.finditer(code):
            name = m.group(1)
            head, dot, rest = name.partition(".")
            if head in _NOT_CALLS:
                continue
            out.add(imports.get(head, head) + dot + rest)
            if name in aliases:
                out.add(aliases[name])
            if name.startswith("torch.ops.") and name.count(".") >= 3:
                out.add(name.split(".")[3])
        out.update(_LOADED.findall(code))
        out.update(_KEYED.findall(code))
        for alias, op in aliases.items():
            if alias in code:
                out.add(op)
    return out


def hunk_switches(ctx: Context, skip: set[str]) -> list[tuple[str, set[str], set[str]]]:
    """For Python files not read whole: per hunk and per function the hunk shows (its ``def``
    line in the hunk, else the hunk's section header), the references gone and new."""
    out = []
    for f in ctx.files:
        if source_kind(f.patch.path) != "python" or f.patch.path in skip or not f.patch.hunks:
            continue
        visible = [t for h in f.patch.hunks for _, t in h.old_lines()]
        aliases = _line_aliases((f.old_text or "").split("\n") + visible)
        shown_new = [t for h in f.patch.hunks for _, t in h.new_lines()]
        imports = (
            from_imports((f.old_text or "").split("\n") + visible, f.patch.old_path or ""),
            from_imports((f.new_text or "").split("\n") + shown_new, f.patch.path),
        )
        for index, h in enumerate(f.patch.hunks):
            units: dict[str, tuple[list[str], list[str]]] = {}
            unchanged: dict[str, list[str]] = {}  # the hunk's context lines, per unit
            for side, lines, changed in (
                (0, h.old_lines(), {n for n, _ in h.removed}),
                (1, h.new_lines(), {n for n, _ in h.added}),
            ):
                current = _section_name(h.section)
                for number, line in lines:
                    d = _LINE_DEF.match(line)
                    if d:
                        current = d.group(2)
                    if number in changed:
                        units.setdefault(current, ([], []))[side].append(line)
                    elif side == 1:
                        unchanged.setdefault(current, []).append(line)
            for name, (removed, added) in units.items():
                before = _line_refs(removed, aliases, imports[0])
                after = _line_refs(added, aliases, imports[1])
                if after - before:
                    # what the unit still calls beside the new calls, as far as the hunk shows
                    kept = _line_refs(unchanged.get(name, []), aliases, imports[0]) - after
                    where = f"{f.patch.path}::{name}#{index}" if name else f.patch.path
                    out.append((where, (before - after) | {f"~{n}" for n in kept}, after - before))
    return out


def _section_name(section: str) -> str:
    d = _LINE_DEF.match(section)
    if d:
        return d.group(2)
    c = _LINE_CLASS.match(section)
    return c.group(2) if c else ""
