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
from bot.analysis.text import parse_python_or_none

_KNOWN = set(dir(builtins)) | {"triton"}


def _returned(tree: ast.Module, name: str) -> ast.expr | None:
    """The one returned list of ``def name()`` at ``tree``'s top level (no parameters)."""
    defs = [
        n for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name
    ]  # fmt: skip
    if len(defs) != 1:
        return None
    args = defs[0].args
    if args.posonlyargs or args.args or args.vararg or args.kwonlyargs or args.kwarg:
        return None
    returns = [s for s in ast.walk(defs[0]) if isinstance(s, ast.Return)]
    if len(returns) != 1 or returns[0].value is None:
        return None
    return returns[0].value


def _self_contained(expr: ast.expr) -> bool:
    bound = {
        n.id for c in ast.walk(expr) if isinstance(c, ast.comprehension)
        for n in ast.walk(c.target) if isinstance(n, ast.Name)
    }  # fmt: skip
    loads = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
    return loads <= bound | _KNOWN


def built_configs(kernel: KernelDef, text: str | None, read: SourceFn | None) -> str | None:
    """``kernel``'s config list as text, a no-argument builder's call replaced by the list it
    returns (from ``text``, the kernel's file, or the module it imports the builder from, read
    through ``read``); ``None`` when there is no list or the builder cannot be followed."""
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
        return ast.unparse(expr) if _self_contained(expr) else None
    tree = parse_python_or_none(text)
    if tree is None:
        return None
    name = expr.func.id
    returned = _returned(tree, name)
    if returned is None and read is not None:
        for qualified in imports_in(tree.body, kernel.path).get(name, set()):
            module, _, attr = qualified.rpartition(".")
            for path in (
                module.replace(".", "/") + ".py",
                module.replace(".", "/") + "/__init__.py",
            ):
                other = parse_python_or_none(read(path))
                if other is not None:
                    returned = _returned(other, attr)
                    break
    if returned is None or not _self_contained(returned):
        return None
    return ast.unparse(returned)
