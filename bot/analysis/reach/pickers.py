"""Kernels launched through a function pointer that a picker returns.

``fp_kernel kernel = pick_gemm_kernel(m, perm, kn); kernel<<<grid, block>>>(...)``: the launch
names the picker (``scan.cpp`` reads the pointer's last assignment), and the kernels that run
are those the picker can return. A picker is followed through the files the launching file
includes (local ``#include "..."``, a few levels): each definition of that name (a free
function, or a struct's static method of the same name, as template tables are written) is
read for its ``return`` values; a returned ``__global__`` function is launched, a returned call
to another picker is followed in turn. Pure: texts in, names out.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

from bot.analysis.scan.cpp import _function_header, _Text

Reader = Callable[[str], "str | None"]

_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
_RETURN = re.compile(r"\breturn\s+&?\s*((?:[A-Za-z_]\w*\s*(?:<[^;{}()]*>)?\s*::\s*)*[A-Za-z_]\w*)")
_GLOBAL = re.compile(r"__global__")
_MAX_FILES = 12
_DEPTH = 4


def _included(path: str, read: Reader) -> dict[str, str]:
    """``path`` and the local headers it includes, a few levels deep, by path."""
    out: dict[str, str] = {}
    todo = [path]
    while todo and len(out) < _MAX_FILES:
        current = todo.pop(0)
        if current in out:
            continue
        text = read(current)
        if not text:
            continue
        out[current] = text
        folder = posixpath.dirname(current)
        for inc in _INCLUDE.findall(text):
            todo.append(posixpath.normpath(posixpath.join(folder, inc)))
    return out


def _returns(texts: dict[str, str]) -> tuple[dict[str, set[str]], set[str]]:
    """Per function name, what its definitions return (last names, template arguments
    dropped); and the ``__global__`` functions of the texts."""
    returns: dict[str, set[str]] = {}
    kernels: set[str] = set()
    for text in texts.values():
        t = _Text(text.split("\n"), None)
        for open_at in t.opens:
            close_at = t.pairs.get(open_at)
            found = _function_header(t, open_at)
            if found is None or close_at is None:
                continue
            name, header_at = found
            begin = max(t.bare.rfind(c, 0, header_at) for c in ";{}")
            if _GLOBAL.search(t.bare[begin + 1 : header_at]):
                kernels.add(name)
                continue
            body = t.code[open_at:close_at]
            for m in _RETURN.finditer(body):
                value = re.sub(r"<[^;{}()]*>", "", m.group(1))
                returns.setdefault(name, set()).add(value.split("::")[-1].strip())
    return returns, kernels


Index = tuple[dict[str, set[str]], set[str]]


def picked_kernels(
    path: str, picker: str, read: Reader, cache: dict[str, Index] | None = None
) -> set[str]:
    """The ``__global__`` functions ``picker`` (called in the file at ``path``) can return;
    empty when it is no picker the included files define. ``cache``: what the files a path
    includes define, kept between calls for launches of the same file."""
    if cache is not None and path in cache:
        returns, kernels = cache[path]
    else:
        returns, kernels = _returns(_included(path, read))
        if cache is not None:
            cache[path] = (returns, kernels)
    if picker not in returns:
        return set()
    out: set[str] = set()
    todo, seen = [(picker, 0)], set()
    while todo:
        name, depth = todo.pop()
        if name in seen or depth > _DEPTH:
            continue
        seen.add(name)
        for value in returns.get(name, ()):
            if value in kernels:
                out.add(value)
            elif value in returns:
                todo.append((value, depth + 1))
    return out
