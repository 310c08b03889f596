"""Names a file imports from its own repository's modules that stand for Triton's: a project
decorator that applies ``triton.jit`` (``triton_jit = try_decorate(lambda: triton.jit)``, ``def
my_jit(**kw): return triton.jit(**kw)``), ``TritonConfig = triton.Config``, or ``triton`` itself
imported there and re-exported.

Each imported name is followed to its definition in the module it is imported from (absolute or
relative import; a re-export is followed further), read with the same reader as the file; a
name is bound to the Triton name its definition applies (the only ``triton.*`` decorator or
``Config`` its value or its function's ``return`` refers to). Pure but for ``read``.
"""

from __future__ import annotations

import ast
import posixpath
import re
from collections.abc import Callable

from bot.analysis.text import absolute, module_bindings, parse_python_or_none, walk

__all__ = ["triton_bindings"]

Read = Callable[[str], "str | None"]

# What a project's name may stand for: Triton's kernel decorator, its tuners, its configs.
_APPLIED = ("jit", "autotune", "heuristics", "Config")
_MAX_DEPTH = 3  # re-exports followed
_MAX_MODULES = 8  # modules read for one file
_DECORATOR = re.compile(r"(?m)^[ \t]*@[ \t]*([A-Za-z_]\w*)\b(?![ \t]*\.)")


def triton_bindings(path: str, text: str, read: Read) -> tuple[tuple[str, str], ...]:
    """``(local name, Triton dotted name)`` for the names ``path`` imports from modules of the
    repository that stand for Triton's (see the module's doc), sorted. Only modules a decorator of
    the file is imported from are read: the names that make a function a kernel."""
    tree = parse_python_or_none(text)
    if tree is None:
        return ()
    imports = _from_imports(path, tree)
    # ``@name`` or ``@name(...)``, not ``@name.attr``: the names that decorate by themselves
    decorators = set(_DECORATOR.findall(text))
    modules = {imports[name][0] for name in decorators if name in imports}
    if not modules:
        return ()
    resolver = _Resolver(path, read)
    out = []
    for local, (module, name) in imports.items():
        if module in modules and not _is_triton(module):
            bound = resolver.name(module, name, 0)
            if bound is not None:
                out.append((local, bound))
    return tuple(sorted(out))


def _is_triton(module: str) -> bool:
    return module == "triton" or module.startswith("triton.")


def _from_imports(path: str, tree: ast.Module) -> dict[str, tuple[str, str]]:
    """Module-level ``from M import n as local``: local -> (M made absolute, n)."""
    out: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            module = absolute(node.module, node.level, path)
            if not module:
                continue
            for a in node.names:
                if a.name != "*":
                    out[a.asname or a.name] = (module, a.name)
    return out


class _Resolver:
    def __init__(self, path: str, read: Read) -> None:
        self.path = path
        self.read = read
        self.modules: dict[str, tuple[str, ast.Module] | None] = {}

    def _module(self, module: str) -> tuple[str, ast.Module] | None:
        """The file of ``module`` (``a/b.py`` or ``a/b/__init__.py``, from the repository's root
        or from the importing file's top folder: a ``src/`` layout) and its tree."""
        if module not in self.modules:
            found = None
            if len(self.modules) < _MAX_MODULES:
                rel = module.replace(".", "/")
                top = self.path.split("/", 1)[0]
                roots = ["", top] if "/" in self.path and top != rel.split("/", 1)[0] else [""]
                for root in roots:
                    for candidate in (f"{rel}.py", f"{rel}/__init__.py"):
                        file = posixpath.join(root, candidate) if root else candidate
                        tree = parse_python_or_none(self.read(file))
                        if tree is not None:
                            found = (file, tree)
                            break
                    if found is not None:
                        break
            self.modules[module] = found
        return self.modules[module]

    def name(self, module: str, name: str, depth: int) -> str | None:
        """The Triton name ``name`` of ``module`` stands for, or None."""
        found = self._module(module) if depth <= _MAX_DEPTH else None
        if found is None:
            return None
        file, tree = found
        aliases: dict[str, str] = {}  # the module's own imports: local -> dotted
        for node in walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    aliases[a.asname or a.name.split(".")[0]] = (
                        a.name if a.asname else a.name.split(".")[0]
                    )
            elif isinstance(node, ast.ImportFrom):
                source = absolute(node.module, node.level, file)
                for a in node.names:
                    if source and a.name != "*":
                        aliases[a.asname or a.name] = f"{source}.{a.name}"
        if name in aliases:
            dotted = aliases[name]
            if _is_triton(dotted):
                return dotted
            parent, _, last = dotted.rpartition(".")
            return self.name(parent, last, depth + 1) if parent else None
        for stmt, _ in module_bindings(tree.body).get(name, []):
            value = getattr(stmt, "value", None)
            bound = _applied(value, aliases) if value is not None else None
            if bound is not None:
                return bound
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                returns = [r.value for r in walk(node) if isinstance(r, ast.Return) and r.value]
                found_in = {_applied(r, aliases) for r in returns} - {None}
                return found_in.pop() if len(found_in) == 1 else None
        return None


def _applied(value: ast.expr, aliases: dict[str, str]) -> str | None:
    """The one Triton decorator or ``Config`` ``value`` refers to (``triton.Config``,
    ``wrap(lambda: triton.jit)``, ``triton.jit(**kw)``), or None when none or several."""
    found = set()
    for node in walk(value):
        dotted = _dotted(node, aliases) if isinstance(node, ast.Attribute) else None
        if dotted and _is_triton(dotted) and dotted.rsplit(".", 1)[-1] in _APPLIED:
            found.add(dotted)
    return found.pop() if len(found) == 1 else None


def _dotted(node: ast.expr, aliases: dict[str, str]) -> str | None:
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value, aliases)
        return f"{base}.{node.attr}" if base else None
    return None
