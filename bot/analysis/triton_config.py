"""``triton.Config(...)`` calls read as data, from the ``ast`` of a Python file."""

from __future__ import annotations

import ast

from bot.analysis.model import TritonConfig

_CONFIG_KW = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def _dotted(node: ast.AST, aliases: dict[str, str]) -> str | None:
    if isinstance(node, ast.Call):
        return _dotted(node.func, aliases)
    if isinstance(node, ast.Name):
        return aliases.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value, aliases)
        return f"{base}.{node.attr}" if base else None
    return None


def _literal(node: ast.AST) -> int | float | bool | str:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool, str)):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, (int, float))
    ):
        return -node.operand.value
    return ast.unparse(node)


def _int_or_text(node: ast.AST) -> int | str:
    value = _literal(node)
    return value if isinstance(value, int) and not isinstance(value, bool) else str(value)


def parse_config(node: ast.AST) -> TritonConfig | None:
    """``triton.Config({...}, num_warps=4, num_stages=3)`` -> TritonConfig; None if not one."""
    if not isinstance(node, ast.Call):
        return None
    name = _dotted(node.func, {})
    if not name or name.split(".")[-1] != "Config":
        return None
    kwargs_node = node.args[0] if node.args else None
    fields: dict[str, int | str] = {}
    extra: dict[str, str] = {}
    for kw in node.keywords:
        if kw.arg == "kwargs":
            kwargs_node = kw.value
        elif kw.arg in _CONFIG_KW:
            fields[kw.arg] = _int_or_text(kw.value)
        elif kw.arg:
            extra[kw.arg] = ast.unparse(kw.value)
    for key, value in zip(_CONFIG_KW, node.args[1:], strict=False):
        fields[key] = _int_or_text(value)
    kwargs: dict[str, int | float | bool | str] = {}
    if isinstance(kwargs_node, ast.Dict):
        for k, v in zip(kwargs_node.keys, kwargs_node.values, strict=True):
            key = _literal(k) if k is not None else "**"
            kwargs[str(key)] = _literal(v)
    elif kwargs_node is not None:
        extra["kwargs"] = ast.unparse(kwargs_node)
    return TritonConfig(kwargs=kwargs, extra=extra, **fields)
