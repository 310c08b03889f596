"""The toolchain floors a build script states as code: ``version_checks(text)``.

A ``setup.py`` often bounds the PyTorch it builds against with a comparison, not a requirement
string: ``assert torch_ver >= [1, 5]``, or ``major, minor = map(int, m.groups())`` then
``if major < 2 or (major == 2 and minor < 7): raise RuntimeError(...)``. Such a check is a pin
as much as ``torch>=2.7`` is. It is found from the program, not from its messages: a value is a
toolchain version where it reads one (``torch.__version__``, ``triton.__version__``, the
modules ``packages.py`` names; ``torch.version.cuda`` and ``.hip``; ``version("torch")`` and
``get_distribution("torch")``), or is assigned from an expression that holds one; a check is a
comparison between such a value and a constant (``7``, ``"2.1"``, ``(2, 1)``,
``Version("2.1")``), stated with the ``and`` / ``or`` / ``not`` around it. Each check is one pin:
its package, the expression as text (the spec), where ``"version check"``. A side that is not
valid Python (a diff's lines alone) states none. Pure.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from bot.toolchain.packages import PACKAGES
from bot.toolchain.pins import Pin, canonical, is_toolchain

__all__ = ["WHERE", "version_checks"]

WHERE = "version check"
# the module each toolchain package provides, first package first (``triton`` before its builds)
_MODULES = {p.module: p.name for p in reversed(PACKAGES) if p.module}
_BUILT_WITH = {"cuda": "cuda", "hip": "rocm"}  # torch.version.cuda: the CUDA torch was built with
_VERSION_TEXT = re.compile(r"\d+(?:\.\d+)*\S*")


def version_checks(text: str) -> list[Pin]:
    """The version checks of toolchain packages ``text`` (a Python build script) states."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    aliases = _module_aliases(tree)
    tainted = _tainted_names(tree, aliases)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found: dict[tuple[str, str], int] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        packages = [p for o in operands if (p := _package_of(o, aliases, tainted))]
        if not packages or not any(_constant(o) for o in operands):
            continue
        whole: ast.expr = node
        while isinstance(parent := parents.get(whole), ast.BoolOp | ast.UnaryOp):
            whole = parent
        found.setdefault((packages[0], ast.unparse(whole)), node.lineno)
    return [
        Pin(package, spec, WHERE, line)
        for (package, spec), line in sorted(found.items(), key=lambda kv: kv[1])
    ]


def _module_aliases(tree: ast.Module) -> dict[str, str]:
    """Local names bound to a toolchain module (``import torch as th``: th is torch)."""
    out = {module: package for module, package in _MODULES.items() if "." not in module}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in _MODULES and alias.asname:
                    out[alias.asname] = _MODULES[alias.name]
    return out


def _source(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """The package whose version ``node`` reads directly, or None."""
    if isinstance(node, ast.Attribute):
        base = node.value
        if node.attr == "__version__" and isinstance(base, ast.Name):
            return aliases.get(base.id)
        if (
            node.attr in _BUILT_WITH
            and isinstance(base, ast.Attribute)
            and base.attr == "version"
            and isinstance(base.value, ast.Name)
            and aliases.get(base.value.id) == "torch"
        ):
            return _BUILT_WITH[node.attr]
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        first = node.args[0]
        if (
            name in ("version", "get_distribution", "distribution")
            and isinstance(first, ast.Constant)
            and isinstance(first.value, str)
            and is_toolchain(first.value)
        ):
            return canonical(first.value)
    return None


def _package_of(node: ast.AST, aliases: dict[str, str], tainted: dict[str, str]) -> str | None:
    """The package whose version ``node`` holds: read there, or through a tainted name. A
    comparison's operands are not looked into: its result is a decision on the version (a flag,
    a list of compile flags), not the version."""
    if isinstance(node, ast.Name) and node.id in tainted:
        return tainted[node.id]
    if (package := _source(node, aliases)) is not None:
        return package
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, ast.Compare) and (found := _package_of(child, aliases, tainted)):
            return found
    return None


def _targets(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Tuple | ast.List | ast.Starred):
        for elt in node.elts if not isinstance(node, ast.Starred) else [node.value]:
            yield from _targets(elt)


def _tainted_names(tree: ast.Module, aliases: dict[str, str]) -> dict[str, str]:
    """Names assigned from an expression that holds a toolchain version, and its package (to a
    fixed point: ``v = torch.__version__``, ``m = re.match(..., v)``, ``major, minor = m...``)."""
    assigns = [
        (targets, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None
        for targets in (node.targets if isinstance(node, ast.Assign) else [node.target],)
    ]
    tainted: dict[str, str] = {}
    grew = True
    while grew:
        grew = False
        for targets, value in assigns:
            names = [n for t in targets for n in _targets(t) if n not in tainted]
            if names and (package := _package_of(value, aliases, tainted)) is not None:
                tainted.update(dict.fromkeys(names, package))
                grew = True
    return tainted


def _constant(node: ast.AST) -> bool:
    """A version constant: a number, a version string, a tuple or list of them, or a call of
    one (``Version("2.1")``)."""
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, str):
            return _VERSION_TEXT.fullmatch(value) is not None
        return isinstance(value, int | float) and not isinstance(value, bool)
    if isinstance(node, ast.Tuple | ast.List):
        return bool(node.elts) and all(_constant(e) for e in node.elts)
    if isinstance(node, ast.Call):
        return len(node.args) == 1 and not node.keywords and _constant(node.args[0])
    return False
