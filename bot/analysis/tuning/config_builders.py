"""What an autotune config list evaluates to, followed through the function that builds it.

``@triton.autotune(configs=[triton.Config({}, num_warps=2**i) for i in range(6)])`` and
``@triton.autotune(configs=warps_kernel_configs())``, where ``warps_kernel_configs`` (in this
module or one it imports from) returns that same list, try the same configs: moving a list into
a builder is no tuning change. A builder is followed when it takes no arguments and has one
``return``, and its list reads nothing but its own loop variables, builtins and ``triton``
(a module-level name it read could differ where the text does not).

From the diff's lines alone (``lists_moved_into_builders``): a changed block of lines whose
removed and added parts are the same code once each call of such a builder is replaced by the
list it returns is no change, and neither are the configs of a builder that stands for the
list it replaced. The builder's lines must be shown from its ``def`` to its ``return`` (any
statement after it would be unreachable), in the block's file or in the file of the diff that
block's shown imports take it from.
"""

from __future__ import annotations

import ast
import builtins
import itertools
import re
import textwrap
from collections.abc import Sequence

from bot.analysis.diff import FilePatch, Hunk
from bot.analysis.model import Context, KernelDef, SourceFn
from bot.analysis.reach.follow import dotted, imports_in
from bot.analysis.scan.shown_imports import shown_imports
from bot.analysis.text import module_of, parse_python_or_none, source_kind, walk

_KNOWN = set(dir(builtins)) | {"triton"}


def _defined(tree: ast.Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    defs = [
        n for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name
    ]  # fmt: skip
    return defs[0] if len(defs) == 1 else None


def _returned(func: ast.FunctionDef | ast.AsyncFunctionDef | None) -> ast.expr | None:
    """The one returned value of ``func`` when it takes no parameters."""
    if func is None:
        return None
    args = func.args
    if args.posonlyargs or args.args or args.vararg or args.kwonlyargs or args.kwarg:
        return None
    returns = [s for s in walk(func) if isinstance(s, ast.Return)]
    if len(returns) != 1 or returns[0].value is None:
        return None
    return returns[0].value


def _builder(
    kernel: KernelDef, text: str | None, read: SourceFn | None
) -> tuple[ast.expr, ast.FunctionDef | ast.AsyncFunctionDef | None] | None:
    """``(the configs expression, the function it calls with no arguments)``: the function
    defined in ``text`` (the kernel's file) or in the module the file imports it from."""
    if kernel.configs_source is None:
        return None
    try:
        expr = ast.parse(kernel.configs_source, mode="eval").body
    except SyntaxError:
        return None
    if not (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and not expr.args
        and not expr.keywords
    ):
        return expr, None
    tree = parse_python_or_none(text)
    if tree is None:
        return None
    name = expr.func.id
    found = _defined(tree, name)
    if found is None and read is not None:
        for qualified in imports_in(tree.body, kernel.path).get(name, set()):
            module, _, attr = qualified.rpartition(".")
            stem = module.replace(".", "/")
            for path in (f"{stem}.py", f"{stem}/__init__.py"):
                other = parse_python_or_none(read(path))
                if other is not None:
                    found = _defined(other, attr)
                    break
    return expr, found


def tuned_names(kernel: KernelDef, text: str | None, read: SourceFn | None) -> set[str]:
    """The parameters ``kernel``'s autotuner and heuristics set: its configs' keys, read from
    the configs or, for a list a builder makes, from the ``Config({"name": ...})`` calls in the
    builder."""
    names = set(kernel.heuristics)
    if kernel.configs is not None:
        return names | {k for c in kernel.configs for k in c.kwargs}
    found = _builder(kernel, text, read)
    if found is None:
        return names
    for node in walk(found[1] or found[0]):
        if (
            isinstance(node, ast.Call)
            and ast.unparse(node.func).endswith("Config")
            and node.args
            and isinstance(node.args[0], ast.Dict)
        ):
            names |= {
                k.value for k in node.args[0].keys
                if isinstance(k, ast.Constant) and isinstance(k.value, str)
            }  # fmt: skip
    return names


def _self_contained(expr: ast.expr) -> bool:
    bound = {
        n.id for c in walk(expr) if isinstance(c, ast.comprehension)
        for n in walk(c.target) if isinstance(n, ast.Name)
    }  # fmt: skip
    loads = {n.id for n in walk(expr) if isinstance(n, ast.Name)}
    return loads <= bound | _KNOWN


def built_configs(kernel: KernelDef, text: str | None, read: SourceFn | None) -> str | None:
    """``kernel``'s config list as text, a no-argument builder's call replaced by the list it
    returns (from ``text``, the kernel's file, or the module it imports the builder from, read
    through ``read``); ``None`` when there is no list or the builder cannot be followed."""
    found = _builder(kernel, text, read)
    if found is None:
        return None
    expr, func = found
    if func is not None:
        returned = _returned(func)
        if returned is None:
            return None
        expr = returned
    return ast.unparse(expr) if _self_contained(expr) else None


# ------------------------------------------------------------------------- the diff's lines

_NO_ARGUMENT_DEF = re.compile(r"^(\s*)(?:async\s+)?def\s+([A-Za-z_]\w*)\s*\(\s*\)")
Numbered = Sequence[tuple[int, str]]
_MAX_BUILDER_LINES = 60


def shown_builders(lines: Numbered) -> dict[str, tuple[ast.expr, int, int]]:
    """The builders ``lines`` (numbered, one side of a file's diff) show from their ``def`` to
    their one ``return`` of a list of ``Config`` calls that reads only its own loop variables,
    builtins and ``triton``: name -> (that list, the def's line, the return's last line)."""
    out: dict[str, tuple[ast.expr, int, int]] = {}
    ordered = sorted(lines)
    for at, (number, text) in enumerate(ordered):
        m = _NO_ARGUMENT_DEF.match(text) if "def" in text else None
        if m is None:
            continue
        indent = len(m.group(1))
        taken = [text]
        returned = "return" in text.split(":", 1)[-1]  # a body on the def's line
        for later, line in [(number, text), *ordered[at + 1 : at + _MAX_BUILDER_LINES]]:
            if later != number:
                if later != number + len(taken):
                    break  # a line the diff does not show
                if line.strip() and len(line) - len(line.lstrip()) <= indent:
                    break  # the function ended
                taken.append(line)
                returned = returned or line.lstrip().startswith("return")
            if not returned:
                continue
            whole, found = _builder_shown("\n".join(t[indent:] for t in taken))
            if found is not None:
                out[m.group(2)] = (found, number, later)
            if whole:
                break
    return out


def _builder_shown(text: str) -> tuple[bool, ast.expr | None]:
    """Whether ``text`` is one whole function ending in a ``return`` (not yet, while the return
    goes on), and the list it returns when it is a builder."""
    tree = parse_python_or_none(text)
    func = tree.body[0] if tree is not None and len(tree.body) == 1 else None
    if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False, None
    if not isinstance(func.body[-1], ast.Return):
        return False, None  # a return before the function's last statement
    returned = _returned(func)
    if returned is None or not _self_contained(returned) or not _makes_configs(returned):
        return True, None
    return True, returned


def _makes_configs(expr: ast.expr) -> bool:
    """Whether ``expr`` calls ``Config`` (``triton.Config``): a list of configs."""
    return any(
        isinstance(n, ast.Call) and (dotted(n.func) or "").rsplit(".", 1)[-1] == "Config"
        for n in walk(expr)
    )


def lists_moved_into_builders(ctx: Context) -> dict[str, tuple[set[int], set[int]]]:
    """Per Python file read from its diff lines, the numbers of its removed and added lines
    that are no change: blocks where a list became a call of a builder returning it (or the
    reverse), and the builders' own lines that stand for a list so replaced. Found once per
    analysis (kept in ``ctx``)."""
    if ctx.moved_lists is None:
        ctx.moved_lists = _moved_lists(ctx)
    return ctx.moved_lists


def _moved_lists(ctx: Context) -> dict[str, tuple[set[int], set[int]]]:
    files = [
        f.patch
        for f in ctx.files
        if source_kind(f.patch.path) == "python"
        and not all(s is None or s.complete for s in (f.old, f.new))
    ]
    builders = {
        (p.path, side): shown_builders([x for h in p.hunks for x in lines(h)])
        for p in files
        for side, lines in (("old", Hunk.old_lines), ("new", Hunk.new_lines))
    }
    out: dict[str, tuple[set[int], set[int]]] = {}
    if not any(builders.values()):
        return out
    for p in files:
        reachable = {side: _reachable(p, side, files, builders) for side in ("old", "new")}
        if not any(reachable.values()):
            continue
        for gone, came in _blocks(p):
            used: list[tuple[str, str, str]] = []
            old = _with_lists([t for _, t in gone], reachable["old"], used, "old")
            new = _with_lists([t for _, t in came], reachable["new"], used, "new")
            if not used or old is None or old != new:
                continue
            removed, added = out.setdefault(p.path, (set(), set()))
            removed.update(n for n, _ in gone)
            added.update(n for n, _ in came)
            for path, side, name in used:  # the builder's lines stand for the list
                _, first, last = builders[(path, side)][name]
                changed = out.setdefault(path, (set(), set()))[0 if side == "old" else 1]
                changed.update(range(first, last + 1))
    return out


def _reachable(
    p: FilePatch,
    side: str,
    files: list[FilePatch],
    builders: dict[tuple[str, str], dict[str, tuple[ast.expr, int, int]]],
) -> dict[str, tuple[str, str, ast.expr]]:
    """The builders a block of ``p`` can call on ``side``: name -> (path, side, list). Its own,
    and those its shown imports take from another file of the diff."""
    out = {name: (p.path, side, b[0]) for name, b in builders[(p.path, side)].items()}
    lines = [x for h in p.hunks for x in (h.old_lines() if side == "old" else h.new_lines())]
    for name, qualified in shown_imports(lines, p.path).items():
        if len(qualified) != 1 or name in out:
            continue
        module, _, attr = next(iter(qualified)).rpartition(".")
        for other in files:
            found = builders[(other.path, side)].get(attr)
            if found is not None and f".{module_of(other.path)}".endswith(f".{module}"):
                out[name] = (other.path, side, found[0])
    return out


def _blocks(p: FilePatch) -> list[tuple[Numbered, Numbered]]:
    """Each run of removed lines and the added lines that replace them (between the same two
    lines of context), numbered."""
    out: list[tuple[Numbered, Numbered]] = []
    for h in p.hunks:
        marks = [(0, 0), *((o, n) for o, n, _ in h.context), (1 << 60, 1 << 60)]
        for (o1, n1), (o2, n2) in itertools.pairwise(marks):
            gone = [x for x in h.removed if o1 < x[0] < o2]
            came = [x for x in h.added if n1 < x[0] < n2]
            if gone and came:
                out.append((gone, came))
    return out


def _with_lists(
    lines: list[str],
    reachable: dict[str, tuple[str, str, ast.expr]],
    used: list[tuple[str, str, str]],
    side: str,
) -> str | None:
    """``lines`` (statements, or the arguments of a call such as ``configs=[...],``) as a tree
    dumped, each call of a builder of ``reachable`` replaced by its list (noted in ``used``);
    ``None`` when they parse neither way."""
    text = textwrap.dedent("\n".join(lines))
    tree: ast.AST | None = None  # parsed anew: the tree is changed below
    forms = ((text, "exec"), (f"f(\n{text}\n)", "eval"), (f"{text}\ndef _(): pass", "exec"))
    for source, mode in forms:  # statements, a call's arguments, decorators
        try:
            tree = ast.parse(source, mode=mode)
            break
        except (SyntaxError, ValueError, RecursionError):
            continue
    if tree is None:
        return None

    class _Inline(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            if isinstance(node.func, ast.Name) and not node.args and not node.keywords:
                found = reachable.get(node.func.id)
                if found is not None:
                    used.append((found[0], found[1], node.func.id))
                    return found[2]
            return node

    return ast.dump(_Inline().visit(tree))
