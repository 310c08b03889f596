"""The toolchain floors a build script states as code: ``version_checks(text)``.

A ``setup.py`` often bounds the PyTorch it builds against with a comparison, not a requirement
string: ``assert torch_ver >= [1, 5]``, or ``major, minor = map(int, m.groups())`` then
``if major < 2 or (major == 2 and minor < 7): raise RuntimeError(...)``. Such a check is a pin
as much as ``torch>=2.7`` is. It is found from the program, not from its messages: a value is a
toolchain version where it reads one (``torch.__version__``, ``triton.__version__``, the
modules ``packages.py`` names; ``torch.version.cuda`` and ``.hip``; ``version("torch")`` and
``get_distribution("torch")``), or is assigned from an expression that holds one; a check is a
comparison (an order or an equality) between such a value and a constant (``7``, ``"2.1"``,
``(2, 1)``, ``Version("2.1")``), stated with the ``and`` / ``or`` / ``not`` around it. Each
check is one pin: its package, the expression as text (the spec), where ``"version check"``, a
module constant it names written as its value (``TORCH_TARGET_MINOR = 11``: ``11``). A side
that is not valid Python (a diff's lines alone, most often) cannot be read: None, not "no
checks".

``same_checks(old, new)``: whether two sides' checks bound the version alike, each pair
evaluated over small values of the names it compares (``major < 2 or (major == 2 and minor <
11)`` and ``(major, minor) < (2, 11)`` are one bound re-expressed, not a moved pin). Pure.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterator, Sequence

from bot.toolchain.packages import PACKAGES
from bot.toolchain.pins import Pin, canonical, is_toolchain

__all__ = ["WHERE", "same_checks", "version_checks"]

WHERE = "version check"
# the module each toolchain package provides, first package first (``triton`` before its builds)
_MODULES = {p.module: p.name for p in reversed(PACKAGES) if p.module}
_BUILT_WITH = {"cuda": "cuda", "hip": "rocm"}  # torch.version.cuda: the CUDA torch was built with
_ORDER = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
_VERSION_TEXT = re.compile(r"\d+(?:\.\d+)*\S*")


def version_checks(text: str) -> list[Pin] | None:
    """The version checks of toolchain packages ``text`` (a Python build script) states; None
    when it is not Python."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    tree = _Constants(_module_constants(tree)).visit(tree)
    aliases = _module_aliases(tree)
    tainted = _tainted_names(tree, aliases)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found: dict[tuple[str, str], int] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        if not any(isinstance(op, _ORDER) for op in node.ops):
            continue  # `in ["571"]` picks a build, `is not None` a vendor: neither bounds
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


def _module_constants(tree: ast.Module) -> dict[str, ast.Constant]:
    """Names the module binds once, to a number or a string, and never again."""
    bound: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and node.value:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for name in (n for t in targets for n in _targets(t)):
                bound.setdefault(name, []).append(node.value)
    return {
        name: values[0]
        for name, values in bound.items()
        if len(values) == 1 and isinstance(values[0], ast.Constant) and _constant(values[0])
    }


class _Constants(ast.NodeTransformer):
    """Each read of a module constant written as its value."""

    def __init__(self, constants: dict[str, ast.Constant]) -> None:
        self.constants = constants

    def visit_Name(self, node: ast.Name) -> ast.expr:
        found = self.constants.get(node.id) if isinstance(node.ctx, ast.Load) else None
        return ast.copy_location(ast.Constant(found.value), node) if found else node


_PROBES = range(16)  # the values each compared name takes when two checks are evaluated
_MAX_NAMES = 3
# what a check evaluated over probes may hold: names, numbers, tuples, comparisons, and/or/not
_EVALUATED = (
    ast.Expression, ast.Constant, ast.Name, ast.Load, ast.Tuple, ast.List, ast.Compare,
    ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq, ast.BoolOp, ast.And, ast.Or,
    ast.UnaryOp, ast.Not, ast.USub,
)  # fmt: skip


def _truth(tree: ast.Expression, names: list[str]) -> list[bool] | None:
    """The check's value at each combination of probe values of ``names``; None when it holds
    anything but ``_EVALUATED`` (a call, an attribute) or compares unlike values."""
    if not all(isinstance(n, _EVALUATED) for n in ast.walk(tree)):
        return None
    code = compile(tree, "<version check>", "eval")  # nothing in it can call or look up
    try:
        return [
            bool(eval(code, {"__builtins__": {}}, dict(zip(names, combo, strict=True))))
            for combo in itertools.product(_PROBES, repeat=len(names))
        ]
    except TypeError:  # an int against a tuple
        return None


def _same(old: str, new: str) -> bool:
    """Whether two checks hold for the same values of the names they compare."""
    if old == new:
        return True
    try:
        trees = [ast.parse(old, mode="eval"), ast.parse(new, mode="eval")]
    except SyntaxError:
        return False
    names = [sorted({n.id for n in ast.walk(t) if isinstance(n, ast.Name)}) for t in trees]
    if names[0] != names[1] or not 0 < len(names[0]) <= _MAX_NAMES:
        return False
    truths = [_truth(t, names[0]) for t in trees]
    return truths[0] is not None and truths[0] == truths[1]


def same_checks(old: Sequence[Pin], new: Sequence[Pin]) -> bool:
    """Whether two sides' version checks bound each package alike, check by check in order."""
    return [p.package for p in old] == [p.package for p in new] and all(
        _same(a.spec, b.spec) for a, b in zip(old, new, strict=True)
    )
