"""``triton.Config(...)`` calls and ``@triton.autotune(...)`` read as data, from a file's ``ast``.

An autotune call's list is followed through module-level names, ``+`` of lists and no-argument
helpers that return a list; each ``triton.Config`` becomes a :class:`TritonConfig`. A list that is
not written out (a comprehension, a function's result, a name bound more than once at module
level) is *computed*: its configs are unknown until import, and ``built_by`` keeps the
module-level code it is made of, so a change to that code is still a change to the tuning.
"""

from __future__ import annotations

import ast

from bot.analysis.model import TritonConfig
from bot.analysis.text import Bindings, walk

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


def parse_config(node: ast.AST, bound: dict[str, str] | None = None) -> TritonConfig | None:
    """``triton.Config({...}, num_warps=4, num_stages=3)`` -> TritonConfig; None if not one.
    ``bound``: names the repository binds to Triton's (``TritonConfig``: ``triton.Config``)."""
    if not isinstance(node, ast.Call):
        return None
    name = _dotted(node.func, bound or {})
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
            arg_name = _literal(k) if k is not None else "**"
            kwargs[str(arg_name)] = _literal(v)
    elif kwargs_node is not None:
        extra["kwargs"] = ast.unparse(kwargs_node)
    return TritonConfig(kwargs=kwargs, extra=extra, **fields)


class Autotune:
    """Reads autotune calls of one module, given its module-level names."""

    def __init__(
        self,
        assigns: dict[str, ast.expr],
        defs: Bindings,
        funcs: dict[str, ast.FunctionDef],
        bound: dict[str, str] | None = None,
    ) -> None:
        self.bound = bound or {}
        self.assigns = assigns
        self.defs = defs
        self.funcs = funcs

    def read(
        self, call: ast.Call
    ) -> tuple[tuple[TritonConfig, ...] | None, str | None, bool, tuple[str, ...], str | None]:
        """``(configs, configs_source, computed, key, built_by)`` of one ``triton.autotune(...)``
        call. A list that is not written out (a comprehension, a function's result) is
        computed; ``built_by`` is then the module-level code it is made of."""
        configs = None
        source = None
        built_by = None
        computed = False
        key: tuple[str, ...] = ()
        expr = next((kw.value for kw in call.keywords if kw.arg == "configs"), None)
        if expr is None and call.args:
            expr = call.args[0]
        if expr is not None:
            elements = self._resolve_list(expr, 0)
            if elements is not None:
                parsed = [parse_config(e, self.bound) for e in elements]
                source = ast.unparse(ast.List(elts=elements, ctx=ast.Load()))
                if all(p is not None for p in parsed):
                    configs = tuple(p for p in parsed if p is not None)
                else:
                    computed = True
            else:
                source = ast.unparse(expr)
                built_by = self._definition(expr)
                computed = True
        else:
            computed = True  # the autotuner's own default list
        key_node = next((kw.value for kw in call.keywords if kw.arg == "key"), None)
        if isinstance(key_node, (ast.List, ast.Tuple)):
            key = tuple(str(_literal(e)) for e in key_node.elts)
        return configs, source, computed, key, built_by

    def _resolve_list(self, expr: ast.expr, depth: int) -> list[ast.expr] | None:
        if depth > 8:
            return None
        if isinstance(expr, (ast.List, ast.Tuple)):
            out: list[ast.expr] = []
            for element in expr.elts:
                if isinstance(element, ast.Starred):
                    inner = self._resolve_list(element.value, depth + 1)
                    if inner is None:
                        return None
                    out += inner
                else:
                    out.append(element)
            return out
        if isinstance(expr, ast.Name) and len(self.defs.get(expr.id, [])) > 1:
            return None  # bound more than once (``+=`` under a platform test): computed
        if isinstance(expr, ast.Name) and expr.id in self.assigns:
            return self._resolve_list(self.assigns[expr.id], depth + 1)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            left = self._resolve_list(expr.left, depth + 1)
            right = self._resolve_list(expr.right, depth + 1)
            return None if left is None or right is None else left + right
        if isinstance(expr, ast.Call) and not expr.args and not expr.keywords:
            func = self.funcs.get(expr.func.id) if isinstance(expr.func, ast.Name) else None
            if func is not None:
                returns = [s for s in walk(func) if isinstance(s, ast.Return)]
                if len(returns) == 1 and returns[0].value is not None:
                    return self._resolve_list(returns[0].value, depth + 1)
        return None

    def _definition(self, expr: ast.expr) -> str:
        """A config list built at import, as the code that builds it: the module-level
        statements binding the names it is made of (and the tests they sit under)."""
        names = [expr.id] if isinstance(expr, ast.Name) else []
        names += [n.id for n in walk(expr) if isinstance(n, ast.Name) and n.id not in names]
        parts = [ast.unparse(expr)]
        for name in names[:8]:
            for stmt, tests in self.defs.get(name, [])[:8]:
                parts += [ast.unparse(t) for t in tests] + [ast.unparse(stmt)]
                value = getattr(stmt, "value", None)
                for sub in walk(value) if value is not None else ():
                    if isinstance(sub, ast.Name) and sub.id not in names and sub.id in self.defs:
                        parts += [ast.unparse(d) for d, _ in self.defs[sub.id][:4]]
        return "\n".join(dict.fromkeys(parts))
