"""Tuning set by the host side of a CuTe DSL kernel's class: its stages and tile sizes.

A CuTe DSL kernel is a ``@cute.kernel`` method of a class whose other methods are host code:
the constructor takes the tile and cluster shapes (``tile_shape_mn=(128, 128)``), a setup method
computes the pipeline's stages (``self.ab_stage, self.epi_stage = self._compute_stages(...)``),
the ``@cute.jit`` ``__call__`` launches ``self.kernel(...)`` with them. A changed value there is
a tuning change of the class's kernels, though no kernel body changed: the attributes a host
method assigns on ``self`` whose names are tuning words (stage, tile, tiler, cluster, threads,
warps, block), a tuning-named method that computes them (``_compute_stages``), and the defaults
of such parameters of the constructor are compared as code (``ast``), so a reformatted line is
no change.
"""

from __future__ import annotations

import ast
import re

from bot.analysis.model import Context, KernelChange, KernelDef
from bot.analysis.text import parse_python_or_none, source_kind

_TUNING_WORD = re.compile(
    r"(?i)(?:^|_)(?:num_)?(?:stages?|tiles?|tiler|cluster|threads|warps|block)(?:_|$)"
)
Func = ast.FunctionDef | ast.AsyncFunctionDef


def _values(cls: ast.ClassDef, kernels: set[str]) -> dict[str, str]:
    """``{what: code}`` of the tuning the host methods of ``cls`` set (its kernels' own
    methods left out: their changes are body changes)."""
    out: dict[str, str] = {}
    for fn in cls.body:
        if not isinstance(fn, Func) or fn.name in kernels:
            continue
        where = f"{cls.name}.{fn.name}"
        if _TUNING_WORD.search(fn.name.strip("_")):
            out[f"{where}()"] = ast.dump(fn)
        if fn.name == "__init__":
            args = fn.args.posonlyargs + fn.args.args
            for arg, default in zip(
                args[len(args) - len(fn.args.defaults) :], fn.args.defaults, strict=True
            ):
                if _TUNING_WORD.search(arg.arg):
                    out[f"{where}({arg.arg}=)"] = ast.unparse(default)
            for arg, kw_default in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True):
                if kw_default is not None and _TUNING_WORD.search(arg.arg):
                    out[f"{where}({arg.arg}=)"] = ast.unparse(kw_default)
        count: dict[str, int] = {}
        for node in ast.walk(fn):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AnnAssign | ast.AugAssign):
                targets = [node.target]
            value = getattr(node, "value", None)
            for target in targets:
                names = target.elts if isinstance(target, ast.Tuple) else [target]
                for t in names:
                    if (
                        isinstance(t, ast.Attribute)
                        and isinstance(t.value, ast.Name)
                        and t.value.id == "self"
                        and _TUNING_WORD.search(t.attr)
                        and value is not None
                    ):
                        key = f"self.{t.attr} in {where}"
                        count[key] = count.get(key, 0) + 1
                        if count[key] > 1:
                            key += f" ({count[key]})"
                        out[key] = ast.unparse(value)
    return out


def _classes(text: str | None, kernels: list[KernelDef]) -> dict[str, tuple[set[str], dict]]:
    """Per class holding CuTe DSL kernels: their names and the tuning its host methods set."""
    tree = parse_python_or_none(text) if kernels else None
    if tree is None:
        return {}
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            last = node.end_lineno or node.lineno
            held = {k.name for k in kernels if node.lineno <= k.line_start <= last}
            if held:
                out[node.name] = (held, _values(node, held))
    return out


def class_tuning(changes: list[KernelChange], ctx: Context) -> list[KernelChange]:
    """``changes`` with the CuTe DSL kernels whose class's host methods set other tuning."""
    out = list(changes)
    for f in ctx.files:
        if f.old is None or f.new is None or source_kind(f.patch.path) != "python":
            continue
        olds = [k for k in f.old.kernels if k.language == "cute"]
        news = [k for k in f.new.kernels if k.language == "cute"]
        if not olds or not news or not f.old_text or not f.new_text:
            continue
        before, after = _classes(f.old_text, olds), _classes(f.new_text, news)
        for name in sorted(set(before) & set(after)):
            (_, a), (held, b) = before[name], after[name]
            keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            if not keys:
                continue
            t_old = {k: _shown(a.get(k)) for k in keys}
            t_new = {k: _shown(b.get(k)) for k in keys}
            note = f"the host methods of {name} set other tuning values"
            for kernel in sorted(held):
                old_k, new_k = f.old.kernel(kernel), f.new.kernel(kernel)
                if old_k is None or new_k is None:
                    continue
                existing = next((c for c in out if c.name == kernel and c.path == new_k.path), None)
                if existing is None:
                    out.append(
                        KernelChange(
                            kind="tuning",
                            name=kernel,
                            language=new_k.language,
                            path=new_k.path,
                            old=old_k.ref(),
                            new=new_k.ref(),
                            tuning_old=t_old,
                            tuning_new=t_new,
                            notes=[note],
                        )
                    )
                elif existing.kind in ("body", "launch", "tuning"):
                    out[out.index(existing)] = existing.model_copy(
                        update={
                            "tuning_old": {**existing.tuning_old, **t_old},
                            "tuning_new": {**existing.tuning_new, **t_new},
                            "notes": [*existing.notes, note],
                        }
                    )
    return out


def _shown(code: str | None) -> str:
    """A value as a review shows it: a method's code is too long to show, so it says changed."""
    if code is None:
        return "-"
    return "(its code)" if code.startswith(("FunctionDef(", "AsyncFunctionDef(")) else code
