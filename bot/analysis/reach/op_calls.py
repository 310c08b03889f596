"""The CUDA kernels a compiled op runs, followed through C++ host calls from its binding.

A switched call site names an op (``_C.ffpa_attn_forward``); its binding
(``m.def("ffpa_attn_forward", &ffpa_attn_forward)``) names a host function, which calls a
dispatcher, which calls a per-type instance, which launches the kernels. Where the extension's
build lists its sources (``extensions``), its files are read whole; where it computes them at
build time, this walk finds the kernels instead: the binding's file is found among the C++ files
whose path shares a word with the op, then host functions are followed by name through the C++
files of that file's folder and the folders below it, to the ``__global__`` functions they
launch or name. Pure: texts in, names out.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence

from bot.analysis.reach.host_cpp import _Scope, _scopes
from bot.analysis.scan import scan_source
from bot.analysis.text import source_kind

Reader = Callable[[str], "str | None"]

_MAX_FILES = 40
_MAX_CHARS = 400_000
_DEPTH = 8


def op_kernels(
    ops: Sequence[str], registering: Sequence[str], paths: Sequence[str], read: Reader
) -> dict[str, tuple[str, set[str]]]:
    """Per kernel reached: ``(its file, the ops of ``ops`` that reach it)``. ``registering``:
    C++ files that may bind the ops (read first); ``paths``: every path of the revision."""
    wanted = set(ops)
    starts: dict[str, set[str]] = {}  # host function -> ops bound to it
    roots: list[str] = []
    for path in registering:
        text = read(path)
        if not text or ("PYBIND11_MODULE" not in text and "TORCH_LIBRARY" not in text):
            continue
        for exported, fn in scan_source(path, text).bindings:
            if exported in wanted:
                starts.setdefault(fn, set()).add(exported)
                roots.append(posixpath.dirname(path))
    if not starts:
        return {}
    tree = [
        p
        for p in paths
        if source_kind(p) == "cpp"
        and any(p.startswith(r + "/") or posixpath.dirname(p) == r for r in set(roots))
    ][:_MAX_FILES]
    by_name: dict[str, list[_Scope]] = {}
    for path in tree:
        text = read(path)
        if not text or len(text) > _MAX_CHARS:
            continue
        for s in _scopes(path, text):
            if s.kind in ("host", "kernel", "macro"):  # a launch written by a macro
                by_name.setdefault(s.name, []).append(s)
    out: dict[str, tuple[str, set[str]]] = {}
    for fn, bound in starts.items():
        todo, seen = [(fn, 0)], {fn}
        while todo:
            name, depth = todo.pop()
            for s in by_name.get(name, []):
                if s.kind == "kernel":
                    out.setdefault(s.name, (s.path, set()))[1].update(bound)
                    continue
                if depth >= _DEPTH:
                    continue
                for ref in sorted(s.refs & by_name.keys() - seen):
                    seen.add(ref)
                    todo.append((ref, depth + 1))
    return out
