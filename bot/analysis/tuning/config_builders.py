"""What an autotune config list evaluates to, followed through the function that builds it.

``@triton.autotune(configs=[triton.Config({}, num_warps=2**i) for i in range(6)])`` and
``@triton.autotune(configs=warps_kernel_configs())``, where ``warps_kernel_configs`` (in this
module or one it imports from) returns that same list, try the same configs: moving a list into
a builder is no tuning change. A builder is followed when it takes no arguments and has one
``return``, and its list reads nothing but its own loop variables, builtins and ``triton``
(a module-level name it read could differ where the text does not).
"""

from __future__ import annotations

import ast
import builtins

from bot.analysis.model import KernelDef, SourceFn
from bot.analysis.reach.follow import imports_in
from bot.analysis.text import parse_python_or_none, walk

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
