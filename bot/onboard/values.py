"""A small, safe evaluator for the values benchmarks write inline.

``x_vals=[2**i for i in range(12, 28)]``, ``SHAPES = [(M, 4096) for M in (1, 16, 128)]``: literals,
arithmetic, ``range``, ``list``/``tuple`` and comprehensions over them, and names bound at module
level to such values. Anything else (a call, an attribute, a name it does not know) raises
:class:`Unknown` saying what stopped it. Nothing is executed.
"""

from __future__ import annotations

import ast
import itertools
import operator
from collections.abc import Callable
from typing import Any

MAX_ITEMS = 10_000  # the longest sequence a range or comprehension may make
MAX_EXPONENT = 64

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.LShift: operator.lshift,
    ast.Pow: operator.pow,
    ast.Div: operator.truediv,
}


class Unknown(Exception):
    """The expression is not one this evaluator reads."""


def dotted(node: ast.AST) -> str:
    """``a.b.c`` for a chain of attributes on a name, else ``""``."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def module_constants(tree: ast.Module) -> dict[str, Any]:
    """Names bound at the top of a module (``NAME = value``) to values this evaluator reads."""
    env: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name):
            try:
                env[target.id] = evaluate(value, env)
            except Unknown:
                env.pop(target.id, None)
    return env


def evaluate(node: ast.AST, env: dict[str, Any]) -> Any:
    """The value of ``node``, with ``env`` for names; :class:`Unknown` when it cannot tell."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [evaluate(e, env) for e in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        raise Unknown(f"the name {node.id!r}")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = evaluate(node.operand, env)
        return -value if isinstance(node.op, ast.USub) else +value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _binary(node, env)
    if isinstance(node, ast.Call):
        return _call(node, env)
    if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
        return _comprehension(node, env)
    raise Unknown(f"a {type(node).__name__} expression")


def _binary(node: ast.BinOp, env: dict[str, Any]) -> Any:
    left, right = evaluate(node.left, env), evaluate(node.right, env)
    if isinstance(node.op, ast.Pow) and isinstance(right, int) and right > MAX_EXPONENT:
        raise Unknown("an exponent over 64")
    repeated = isinstance(node.op, ast.Mult) and isinstance(left, (list, tuple))
    if repeated and isinstance(right, int) and right * len(left) > MAX_ITEMS:
        raise Unknown("a sequence too long")
    try:
        return _BINARY[type(node.op)](left, right)
    except (TypeError, ValueError, ZeroDivisionError, OverflowError) as exc:
        raise Unknown(str(exc)) from None


def _call(node: ast.Call, env: dict[str, Any]) -> Any:
    name = dotted(node.func)
    if node.keywords or name not in ("range", "list", "tuple", "int"):
        raise Unknown(f"a call to {name or 'a function'}")
    args = [evaluate(a, env) for a in node.args]
    if name == "range":
        if not all(isinstance(a, int) for a in args) or not 1 <= len(args) <= 3:
            raise Unknown("range of non-integers")
        values = range(*args)
        if len(values) > MAX_ITEMS:
            raise Unknown("a range too long")
        return list(values)
    if name == "int":
        return int(*args)
    return list(*args) if name == "list" else tuple(*args)


def _comprehension(node: ast.ListComp | ast.GeneratorExp, env: dict[str, Any]) -> list[Any]:
    out: list[Any] = []

    def walk(index: int, scope: dict[str, Any]) -> None:
        if index == len(node.generators):
            out.append(evaluate(node.elt, scope))
            if len(out) > MAX_ITEMS:
                raise Unknown("a comprehension too long")
            return
        gen = node.generators[index]
        for item in itertools.islice(evaluate(gen.iter, scope), MAX_ITEMS + 1):
            inner = dict(scope)
            _bind(gen.target, item, inner)
            if all(evaluate(test, inner) for test in gen.ifs):
                walk(index + 1, inner)

    walk(0, env)
    return out


def _bind(target: ast.AST, value: Any, scope: dict[str, Any]) -> None:
    if isinstance(target, ast.Name):
        scope[target.id] = value
    elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (list, tuple)):
        if len(target.elts) != len(value):
            raise Unknown("unpacking of the wrong length")
        for t, v in zip(target.elts, value, strict=True):
            _bind(t, v, scope)
    else:
        raise Unknown("an assignment target")
