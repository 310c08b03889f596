"""The CUDA kernels a compiled op runs, followed through C++ host calls from its binding.

A switched call site names an op (``_C.ffpa_attn_forward``); its binding
(``m.def("ffpa_attn_forward", &ffpa_attn_forward)``) names a host function, which calls a
dispatcher, which calls a per-type instance, which launches the kernels. Where the extension's
build lists its sources (``extensions``), its files are read whole; where it computes them at
build time, this walk finds the kernels instead: the binding's file is found among the C++ files
whose path shares a word with the op, then host functions are followed by name through the C++
files of that file's folder and the folders below it, to the ``__global__`` functions they
launch or name. A binding may be a lambda (``m.impl("op", [](...) { return
Fn::apply(...); })``): its body is where the walk starts. A host function that calls another op
through the dispatcher (``findSchemaOrThrow("ns::op_fwd", "")``, any string ``"ns::op"`` naming
an op bound in those files) reaches what that op's bindings run (``TORCH_LIBRARY_IMPL(ns, CUDA,
m) { m.impl("op_fwd", fwd_cuda); }``), and a class named as ``Cls::member`` (a C++ autograd
Function's ``apply``) reaches what its members call.

Where a host function picks what it calls by comparing a string with literals (``if (strategy
== "cell") kernel = forward_cell;``), each kernel reached through a branch is keyed by the
literal (``keys``): a default assigned before the tests (``auto kernel = forward_brute;``) is
each literal's whose branch does not replace it unconditionally. A caller can then pair by that
key: the Python side that tests the same literal. Pure: texts in, names out.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Sequence

from bot.analysis.reach.host_cpp import _Scope, _scopes
from bot.analysis.scan import scan_source
from bot.analysis.scan.cpp import _IDENT, _PARENS, mask, match_braces
from bot.analysis.text import source_kind

Reader = Callable[[str], "str | None"]

_MAX_FILES = 40
_MAX_CHARS = 400_000
_DEPTH = 8
_LAMBDA_BINDING = re.compile(r"\.(?:def|impl)\(\s*\"(\w+)[^\"]*\"\s*,\s*\[")
_OP_STRING = re.compile(r"\"\w+::(\w+)(?:\.\w+)?\"")  # ``"ns::op"``, ``"ns::op.overload"``
_QUALIFIED = re.compile(r"\b([A-Za-z_]\w*)\s*::\s*[A-Za-z_]")
_IF = re.compile(r"\bif\s*\(")
_LITERAL_TEST = re.compile(r"==\s*\"(\w+)\"|\"(\w+)\"\s*==")
_ASSIGNED = re.compile(r"\b([A-Za-z_]\w*)\s*=(?!=)\s*([A-Za-z_]\w*)\s*;")


def keyed_refs(text: str) -> dict[str, set[str]]:
    """Per string literal a function's tests compare with (``== "cell"``), the names its
    branches under that test use, and the default a variable holds before the tests where no
    branch of that literal replaces it unconditionally (a test that is the literal's alone)."""
    if '"' not in text or "==" not in text:
        return {}
    code, bare = mask(text)
    braces, parens = match_braces(bare), match_braces(bare, _PARENS)
    out: dict[str, set[str]] = {}
    replaced: dict[str, set[str]] = {}  # literal -> variables its branches always assign
    spans: list[tuple[int, int]] = []
    for m in _IF.finditer(bare):
        close = parens.get(m.end() - 1)
        if close is None:
            continue
        literals = {a or b for a, b in _LITERAL_TEST.findall(code[m.end() : close])}
        if not literals:
            continue
        start = len(bare) - len(bare[close + 1 :].lstrip())
        end = braces.get(start) if bare[start : start + 1] == "{" else bare.find(";", start)
        if end is None or end < 0:
            continue
        spans.append((start, end))
        body = bare[start : end + 1]
        alone = "&&" not in bare[m.end() : close] and "||" not in bare[m.end() : close]
        for lit in literals:
            out.setdefault(lit, set()).update(_IDENT.findall(body))
            if alone:
                replaced.setdefault(lit, set()).update(a.group(1) for a in _ASSIGNED.finditer(body))
    for a in _ASSIGNED.finditer(bare):
        if any(s <= a.start() <= e for s, e in spans):
            continue
        for lit, names in out.items():
            if a.group(1) not in replaced.get(lit, set()):
                names.add(a.group(2))
    return out


def _lambda_bindings(path: str, text: str) -> list[_Scope]:
    """``m.impl("op", [](...) {...})``: each lambda bound to an op, as a host scope named
    ``"op"`` (quoted: no C++ name) whose refs are the lambda's names."""
    if not _LAMBDA_BINDING.search(text):
        return []
    code, bare = mask(text)
    parens = match_braces(bare, _PARENS)
    out = []
    for m in _LAMBDA_BINDING.finditer(code):
        open_at = bare.find("(", m.start())
        close_at = parens.get(open_at)
        if close_at is None:
            continue
        body = code[m.end() - 1 : close_at]
        line = text.count("\n", 0, m.start()) + 1
        name = f'"{m.group(1)}"'
        out.append(_Scope(name, "host", path, line, line + body.count("\n"), body,
                          set(_IDENT.findall(bare[m.end() - 1 : close_at]))))  # fmt: skip
    return out


def op_kernels(
    ops: Sequence[str],
    registering: Sequence[str],
    paths: Sequence[str],
    read: Reader,
    keys: dict[str, set[str]] | None = None,
) -> dict[str, tuple[str, set[str]]]:
    """Per kernel reached: ``(its file, the ops of ``ops`` that reach it)``. ``registering``:
    C++ files that may bind the ops (read first); ``paths``: every path of the revision.
    ``keys``, where given, gets per kernel the string literals whose tests lead to it
    (``keyed_refs``); a kernel reached also past every such test gets none."""
    wanted = set(ops)
    starts: dict[str, set[str]] = {}  # host function -> ops bound to it
    roots: list[str] = []
    for path in registering:
        text = read(path)
        if not text or ("PYBIND11_MODULE" not in text and "TORCH_LIBRARY" not in text):
            continue
        lambdas = [(b.name.strip('"'), b.name) for b in _lambda_bindings(path, text)]
        for exported, fn in [*scan_source(path, text).bindings, *lambdas]:
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
    types: dict[str, list[_Scope]] = {}
    dispatched: dict[str, set[str]] = {}  # op -> what its bindings in the tree run
    for path in tree:
        text = read(path)
        if not text or len(text) > _MAX_CHARS:
            continue
        lambda_scopes = _lambda_bindings(path, text)
        for scope in [*_scopes(path, text), *lambda_scopes]:
            if scope.kind in ("host", "kernel", "macro"):  # a launch written by a macro
                by_name.setdefault(scope.name, []).append(scope)
            elif scope.kind == "type":
                types.setdefault(scope.name, []).append(scope)
        if "TORCH_LIBRARY" in text or "PYBIND11_MODULE" in text:
            for exported, fn in scan_source(path, text).bindings:
                dispatched.setdefault(exported, set()).add(fn)
            for scope in lambda_scopes:
                dispatched.setdefault(scope.name.strip('"'), set()).add(scope.name)
    out: dict[str, tuple[str, set[str]]] = {}
    unkeyed: set[str] = set()  # kernels reached past every literal test too
    keyed: dict[str, set[str]] = {}
    for fn, bound in starts.items():
        todo: list[tuple[str, int, str]] = [(fn, 0, "")]
        seen = {(fn, "")}
        while todo:
            name, depth, key = todo.pop()
            for s in by_name.get(name, []) + types.get(name, []):
                if s.kind == "kernel":
                    out.setdefault(s.name, (s.path, set()))[1].update(bound)
                    if key:
                        keyed.setdefault(s.name, set()).add(key)
                    else:
                        unkeyed.add(s.name)
                    continue
                if depth >= _DEPTH:
                    continue
                bare = mask(s.text)[1]  # a name in a string (``"forward"``) calls nothing
                refs = set(_IDENT.findall(bare)) & by_name.keys()
                refs |= set(_QUALIFIED.findall(bare)) & types.keys()  # ``Fn::apply(...)``
                for op in _OP_STRING.findall(s.text):  # the dispatcher's call of another op
                    refs |= dispatched.get(op, set()) & by_name.keys()
                branches = {} if key else keyed_refs(s.text)
                under = {r for names in branches.values() for r in names}
                step = [(r, key) for r in refs - under]
                step += [(r, lit) for lit, names in branches.items() for r in names & refs]
                for item in sorted(step):
                    if item not in seen:
                        seen.add(item)
                        todo.append((item[0], depth + 1, item[1]))
    if keys is not None:
        for kernel, found in keyed.items():
            if kernel not in unkeyed:
                keys.setdefault(kernel, set()).update(found)
    return out
