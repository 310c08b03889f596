"""Launch tuning chosen by a changed host function, in any module: the kernels it tunes.

A launch-tuning helper (``get_num_warps_stages(head_dim, block, is_hopper)``) changes in one
module; launches in other modules, unchanged, take their ``num_warps`` / ``num_stages`` /
``BLOCK_*`` options from it (``num_warps, num_stages = get_num_warps_stages(...)``). Each such
kernel now runs with other tuning values for some inputs: a tuning change made by the helper.
From the program's structure: the changed functions are those of the diff's Python files whose
code differs (with the functions of their module that call them), a launch's options are read as
values (``launch_values``: its host function's assignments substituted), and a call in an
option's value is resolved through its module's imports to the function it names. A table of
launch values (``tables``) counts as a changed function's result: a module-level config table
whose literal or loader changed makes the functions reading it changed, an option reading the
table is tuned by it, and so is an option reading a parameter that a changed function of the
launcher's module hands it from the table (``best = CONFIGS[key]; _launch(q, best[0])``).
"""

from __future__ import annotations

import ast
import posixpath

from bot.analysis.launch_values import LaunchValues
from bot.analysis.model import PYTHON_LANGUAGES, Context, KernelChange, KernelDef
from bot.analysis.reach.call_sites import functions, touched
from bot.analysis.reach.follow import dotted, imports_in, module_of
from bot.analysis.scan import scan_source
from bot.analysis.text import is_tuning_name, parse_python_or_none, source_kind, walk
from bot.analysis.tuning.tables import changed_tables, fed_parameters, readers

Func = ast.FunctionDef | ast.AsyncFunctionDef
_MAX_FILES = 40  # modules read besides the diff's, nearest the changed module first
_MAX_CHARS = 400_000  # a module longer than this is not read for launches


_NOT_RUN = frozenset({"annotation", "returns", "type_comment"})


def _code(node: object) -> object:
    """What a tree runs, as a value to compare: annotations (``n: int``, ``-> (int, int)``)
    and docstrings left out (the tree is not changed: trees are shared)."""
    if isinstance(node, list):
        return [_code(x) for x in node]
    if not isinstance(node, ast.AST):
        return node
    if isinstance(node, ast.AnnAssign):  # ``x: int = v`` runs as ``x = v``
        if node.value is None:
            return None
        node = ast.Assign(targets=[node.target], value=node.value)
    fields = [(f, getattr(node, f, None)) for f in node._fields if f not in _NOT_RUN]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and ast.get_docstring(node):
        fields = [(f, node.body[1:] if f == "body" else v) for f, v in fields]
    return (type(node).__name__, [(f, _code(v)) for f, v in fields])


def _launches(func: Func) -> bool:
    """Whether ``func`` launches a kernel: ``k[grid](...)``, or CuTe's ``k(...).launch(...)``."""
    return any(
        isinstance(c, ast.Call)
        and (
            isinstance(c.func, ast.Subscript)
            or (isinstance(c.func, ast.Attribute) and c.func.attr == "launch")
        )
        for c in walk(func)
    )


def _changed_functions(ctx: Context) -> tuple[set[str], set[str]]:
    """Qualified names of the host functions the diff changes (both sides define them, their
    code differs; or they read a changed table, ``tables``), with the functions of their module
    that call one of them by name; and the qualified names of the changed tables."""
    read_old = ctx.old_whole or ctx.old_source
    read_new = ctx.new_whole or ctx.new_source
    if read_old is None or read_new is None:
        return set(), set()
    out: set[str] = set()
    tables: set[str] = set()
    for f in ctx.files:
        path = f.patch.new_path
        if f.patch.old_path != path or path is None or source_kind(path) != "python":
            continue
        old = parse_python_or_none(read_old(path))
        new = parse_python_or_none(read_new(path))
        if old is None or new is None:
            continue
        kernels = {k.name for s in (f.old, f.new) if s for k in s.kernels}
        # a host function that launches kernels itself is compared at its launches
        # (module-level functions: a method is not reached through a module's names)
        before = functions(old)
        defs = {
            n: d
            for n, d in functions(new).items()
            if "." not in n and n not in kernels and not _launches(d)
        }
        added = sorted(n for n, _ in f.patch.added_lines())
        removed = sorted(n for n, _ in f.patch.removed_lines())
        changed = {
            n
            for n, d in defs.items()
            if n in before
            and (touched(d, added) or touched(before[n], removed))
            and _code(d) != _code(before[n])
        }
        found = changed_tables(old, new, _code)
        changed |= readers(defs, found)
        while True:  # the module's own callers of a changed function
            more = {
                n
                for n, d in defs.items()
                if n not in changed
                and any(
                    isinstance(c, ast.Call)
                    and isinstance(c.func, ast.Name)
                    and c.func.id in changed
                    for c in walk(d)
                )
            }
            if not more:
                break
            changed |= more
        module = module_of(path)
        out |= {f"{module}.{n}" for n in changed}
        tables |= {f"{module}.{n}" for n in found}
    return out, tables


def _word(node: ast.AST) -> str | None:
    """The name a ``Name`` or an ``Attribute`` node ends with."""
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def _named(called: str, changed: set[str]) -> str | None:
    """The changed function a qualified name is (a package under ``src/`` or another root may
    be imported by a shorter name than its path gives)."""
    for q in changed:
        if q == called or q.endswith("." + called):
            return q
    return None


def _candidates(ctx: Context, changed: set[str]) -> list[str]:
    """Python modules to read for launches: the diff's, then the others nearest a changed
    module's directory."""
    homes = {q.rsplit(".", 1)[0].replace(".", "/") for q in changed}
    diff = sorted(p for p in ctx.diff_paths if source_kind(p) == "python")
    rest = [p for p in ctx.old_files or () if p.endswith(".py") and p not in ctx.diff_paths]

    def distance(p: str) -> tuple[int, str]:
        here = posixpath.dirname(p)
        shared = max(len(posixpath.commonpath([here, posixpath.dirname(h)]) or "") for h in homes)
        return (-shared, p)

    return diff + sorted(rest, key=distance)[:_MAX_FILES]


def _resolver(tree: ast.Module, path: str) -> dict[str, set[str]]:
    """Local name -> the qualified names it may stand for: imports, and the module's own
    functions."""
    names = imports_in(tree.body, path)
    for name in functions(tree):
        if "." not in name:
            names.setdefault(name, set()).add(f"{module_of(path)}.{name}")
    return names


def _read_names(value: str) -> set[str]:
    """The names an option's value reads."""
    try:
        tree = ast.parse(value, mode="eval")
    except SyntaxError:
        return set()
    return {n.id for n in walk(tree) if isinstance(n, ast.Name)}


def _calls_changed(
    value: str, names: dict[str, set[str]], changed: set[str], tables: set[str], module: str
) -> str | None:
    """The changed function a call in an option's value names, or the changed table it reads,
    if any."""
    try:
        tree = ast.parse(value, mode="eval")
    except SyntaxError:
        return None
    for node in walk(tree):
        call = isinstance(node, ast.Call)
        if call:
            assert isinstance(node, ast.Call)
            read = dotted(node.func)
        elif isinstance(node, (ast.Name, ast.Attribute)) and tables:
            read = dotted(node)
        else:
            continue
        if read is None:
            continue
        head, _, tail = read.partition(".")
        within = (f"{module}.{head}",) if f"{module}.{head}" in tables else ()
        for q in (*names.get(head, ()), *within):
            hit = _named(f"{q}.{tail}" if tail else q, changed if call else tables)
            if hit is not None:
                return hit
    return None


def tuning_helpers(changes: list[KernelChange], ctx: Context) -> list[KernelChange]:
    """``changes`` with the kernels whose launch-time tuning options a changed host function
    (any module) computes, as tuning changes; kernels already named are left as they are."""
    changed, tables = _changed_functions(ctx)
    read = ctx.new_whole or ctx.new_source
    if not (changed or tables) or read is None:
        return changes
    bare = {q.rsplit(".", 1)[-1] for q in changed | tables}
    out = list(changes)
    named = {(c.name, c.path) for c in changes}
    for path in _candidates(ctx, changed | tables):
        text = read(path)
        if not text or len(text) > _MAX_CHARS or not any(b in text for b in bare):
            continue
        tree = parse_python_or_none(text)
        if tree is None:
            continue
        names = _resolver(tree, path)
        module = module_of(path)
        defs = functions(tree)
        # this module's changed functions and tables: what its callers may hand a launcher
        here = {n for n in defs if f"{module}.{n}" in changed}
        sources = here | {q.rsplit(".", 1)[-1] for q in tables if q.rsplit(".", 1)[0] == module}
        callers = {n: defs[n] for n in here}
        kernels: dict[str, KernelDef] | None = None
        for wrapper, func in defs.items():
            if not _launches(func):
                continue
            fed = fed_parameters(wrapper, func, callers, sources) if "." not in wrapper else {}
            if not fed and not any(_word(n) in bare for n in walk(func)):
                continue
            values = LaunchValues(func)
            for call in walk(func):
                if id(call) not in values.options or not isinstance(call, ast.Call):
                    continue
                launched = call.func
                if isinstance(launched, ast.Attribute) and isinstance(launched.value, ast.Call):
                    launched = launched.value.func  # CuTe's ``k(args).launch(...)``
                kernel = dotted(launched.value if isinstance(launched, ast.Subscript) else launched)
                tuned: dict[str, str] = {}
                for option, value in values.options[id(call)].items():
                    if not is_tuning_name(option):
                        continue
                    hit = _calls_changed(value, names, changed, tables, module)
                    if hit is None:  # a parameter a changed caller hands a table's value
                        given = sorted(_read_names(value) & fed.keys())
                        hit = f"{module}.{fed[given[0]]}" if given else None
                    if hit is not None:
                        tuned[option] = hit
                if kernel is None or not tuned:
                    continue
                if kernels is None:
                    kernels = {
                        k.name: k
                        for k in scan_source(path, text).kernels
                        if k.language in PYTHON_LANGUAGES
                    }
                k = kernels.get(kernel)
                if k is None or (k.name, k.path) in named:
                    continue  # a kernel of this module only: one imported is told by its own
                named.add((k.name, k.path))
                helpers = sorted(set(tuned.values()))
                note = (
                    f"its launch in {wrapper} ({path}) takes {', '.join(sorted(tuned))} from "
                    f"{', '.join(helpers)}, which changed"
                )
                out.append(
                    KernelChange(
                        kind="tuning",
                        name=k.name,
                        language=k.language,
                        path=k.path,
                        old=k.ref(),
                        new=k.ref(),
                        notes=[note],
                    )
                )
    return out
