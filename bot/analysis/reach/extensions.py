"""Compiled extension modules, wherever a repository builds or registers them, and the Python
names that refer to them.

A rewrite's old side is often a CUDA op that Python reaches through a module the build made,
not through a file of the diff. The module is found where it is made:

- a ``setup.py`` at any depth: ``CUDAExtension("name", sources)`` (``CppExtension``,
  ``SyclExtension`` alike; the name's last part is what Python imports);
- ``torch.utils.cpp_extension.load(name=..., sources=[...])`` or ``load_inline(...)`` at import
  time: the name it is bound to (``_ext = load(...)``), or the function that returns it (a
  loader, ``def get_ext(): return load(...)``);
- CMake: ``pybind11_add_module(name ...)``, ``Python_add_library(name MODULE ...)``;
- C++ registration: ``PYBIND11_MODULE(name, m)`` (``TORCH_EXTENSION_NAME``: the name its build
  gives, else its file's or folder's name) with its ``m.def("op", &fn)``, and
  ``TORCH_LIBRARY(ns, m)`` / ``TORCH_LIBRARY_IMPL(ns, CUDA, m)``, called as ``torch.ops.ns.op``.

Pure: texts in, :class:`Extension` records out. ``ExtensionIndex`` reads a revision lazily
through a reader (the build files, then the C++ files an import names) and answers which
extension a Python name refers to.
"""

from __future__ import annotations

import ast
import fnmatch
import posixpath
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from bot.analysis.scan.cpp import binding_macros
from bot.analysis.text import parse_python_or_none, source_kind, walk

Reader = Callable[[str], "str | None"]

_BUILDERS = ("CUDAExtension", "CppExtension", "SyclExtension")
_LOADERS = ("load", "load_inline")
_CPP_SOURCE = (".cu", ".cpp", ".cc", ".cxx", ".hip", ".c++")
_PYBIND = re.compile(r"\bPYBIND11_MODULE\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)")
_TORCH_LIBRARY = re.compile(
    r"\bTORCH_LIBRARY(?:_FRAGMENT|_IMPL)?\s*\(\s*(\w+)\s*,(?:\s*\w+\s*,)?\s*(\w+)"
)
_DEF = re.compile(
    r"\b(\w+)\s*\.\s*(?:def|impl)\s*\(\s*(?:TORCH_SELECTIVE_SCHEMA\s*\(\s*)?\"([\w.]+)"
)
_CMAKE = re.compile(
    r"\b(?:pybind11_add_module|python3?_add_library|nanobind_add_module)\s*\(\s*([\w-]+)([^)]*)\)",
    re.I,
)
_MAX_SETUPS = 16
_SETUP = re.compile(r"setup(?:_\w+)?\.py")  # setup.py, and setup_vsa.py beside it
_MAX_CPP_READS = 24
_MAX_HOLDER_FILES = 8
_WORDS = re.compile(r"[a-z]+|\d+")


@dataclass(frozen=True)
class Extension:
    """One compiled module: ``name`` as Python imports it (``torch.ops`` namespace for
    ``TORCH_LIBRARY``)."""

    name: str
    how: str  # "CUDAExtension in setup.py", "load()", "PYBIND11_MODULE", "TORCH_LIBRARY", ...
    where: str  # the file that builds or registers it
    sources: tuple[str, ...] = ()  # its C++ sources that are repository files
    unresolved: bool = False  # some sources are computed or lie outside the repository
    ops: tuple[str, ...] = ()  # names exported to Python, where read

    def describe(self) -> str:
        return f"{self.name} ({self.how}, {self.where})"


def _literal(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _arg(call: ast.Call, index: int, keyword: str) -> ast.AST | None:
    for k in call.keywords:
        if k.arg == keyword:
            return k.value
    return call.args[index] if len(call.args) > index else None


def _callee(call: ast.Call) -> str:
    f = call.func
    if isinstance(f, ast.Attribute):
        return f.attr
    return f.id if isinstance(f, ast.Name) else ""


def _sources(
    node: ast.AST | None, folder: str, paths: Sequence[str]
) -> tuple[tuple[str, ...], bool]:
    """The repository files a sources expression names (literals and glob patterns, relative to
    ``folder`` or to the root), and whether a part of it (a list item, an operand) is computed
    or names no repository file."""
    if node is None:
        return (), True
    found: list[str] = []
    unresolved = False
    parts = [node]
    while parts:
        part = parts.pop()
        if isinstance(part, (ast.List, ast.Tuple)):
            parts.extend(part.elts)
            continue
        if isinstance(part, ast.BinOp):
            parts += [part.left, part.right]
            continue
        hits = [
            hit
            for sub in walk(part)
            if (value := _literal(sub)) and (value.endswith(_CPP_SOURCE) or "*" in value)
            for hit in _match(value, folder, paths)
        ]
        unresolved = unresolved or not hits
        found += hits
    return tuple(dict.fromkeys(sorted(found))), unresolved


def _match(value: str, folder: str, paths: Sequence[str]) -> list[str]:
    """Repository paths ``value`` names: relative to ``folder``, to the root, or (a path joined
    at run time from pieces) as a suffix."""
    value = value.lstrip("./") if value.startswith("./") else value
    for base in (folder, ""):
        pattern = posixpath.normpath(posixpath.join(base, value)) if base else value
        if any(ch in pattern for ch in "*?["):
            hits = [p for p in paths if fnmatch.fnmatch(p, pattern)]
        else:
            hits = [p for p in paths if p == pattern]
        if hits:
            return hits
    if "/" in value or "*" in value:
        return []
    return [p for p in paths if p.endswith("/" + value) and p.startswith(folder)][:4]


def setup_extensions(path: str, text: str, paths: Sequence[str] = ()) -> list[Extension]:
    """``CUDAExtension(name, sources)`` (and the other builders) of one ``setup.py``."""
    tree = parse_python_or_none(text)
    if tree is None:
        return []
    folder = posixpath.dirname(path)
    out = []
    for node in walk(tree):
        if not isinstance(node, ast.Call) or _callee(node) not in _BUILDERS:
            continue
        name = _literal(_arg(node, 0, "name"))
        if not name:
            continue
        sources, unresolved = _sources(_arg(node, 1, "sources"), folder, paths)
        out.append(
            Extension(
                name=name.rsplit(".", 1)[-1],
                how=f"{_callee(node)} in {posixpath.basename(path)}",
                where=path,
                sources=sources,
                unresolved=unresolved,
            )
        )
    return out


def loaded_extensions(
    path: str, tree: ast.Module, paths: Sequence[str] = ()
) -> dict[str, Extension]:
    """Names in one Python module bound to a ``load()`` / ``load_inline()`` build: the module
    variable it is assigned to, or the function that returns it."""
    if not _imports_cpp_extension(tree):
        return {}
    folder = posixpath.dirname(path)
    out: dict[str, Extension] = {}

    def build(call: ast.Call) -> Extension | None:
        if _callee(call) not in _LOADERS:
            return None
        name = _literal(_arg(call, 0, "name"))
        if not name:
            return None
        inline = _callee(call) == "load_inline"
        sources, unresolved = (
            ((), False) if inline else _sources(_arg(call, 1, "sources"), folder, paths)
        )
        return Extension(
            name=name,
            how=f"{_callee(call)}() in {posixpath.basename(path)}",
            where=path,
            sources=(path,) if inline else sources,
            unresolved=unresolved,
        )

    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            ext = build(node.value)
            if ext is not None:
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        out[t.id] = ext
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in walk(node):
                if isinstance(sub, ast.Call):
                    ext = build(sub)
                    if ext is not None:
                        out[node.name] = ext  # a loader: calling it gives the module
                        break
    return out


def _imports_cpp_extension(tree: ast.Module) -> bool:
    for node in walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("cpp_extension"):
            return True
        if isinstance(node, ast.Import) and any(
            a.name.endswith("cpp_extension") for a in node.names
        ):
            return True
        if isinstance(node, ast.Attribute) and node.attr == "cpp_extension":
            return True
    return False


def registrations(path: str, text: str) -> list[Extension]:
    """``PYBIND11_MODULE`` and ``TORCH_LIBRARY`` blocks of one C++ file, with the ops each
    exports (``m.def("op", ...)``, ``m.def("op(Tensor x) -> Tensor")``, ``m.impl("op", ...)``)."""
    out = []
    blocks = [(m, "PYBIND11_MODULE") for m in _PYBIND.finditer(text)]
    blocks += [(m, "TORCH_LIBRARY") for m in _TORCH_LIBRARY.finditer(text)]
    for m, how in blocks:
        name, var = m.group(1), m.group(2)
        body = _block(text, m.end())
        body += binding_macros(text, body)  # ``DEF_OPS(fp16, __half);``
        ops = tuple(
            dict.fromkeys(
                d.group(2).split(".")[0] for d in _DEF.finditer(body) if d.group(1) == var
            )
        )
        if how == "PYBIND11_MODULE" and name == "TORCH_EXTENSION_NAME":
            name = ""  # the build names it
        out.append(Extension(name=name, how=how, where=path, sources=(path,), ops=ops))
    return out


def _block(text: str, start: int) -> str:
    """The brace block that follows ``start``."""
    open_at = text.find("{", start)
    if open_at < 0:
        return ""
    depth = 0
    for i in range(open_at, min(len(text), open_at + 200_000)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[open_at : i + 1]
    return text[open_at:]


def cmake_extensions(path: str, text: str, paths: Sequence[str] = ()) -> list[Extension]:
    """``pybind11_add_module(name src...)`` / ``Python_add_library(name MODULE src...)``."""
    folder = posixpath.dirname(path)
    out = []
    for m in _CMAKE.finditer(text):
        words = m.group(2).replace('"', " ").split()
        sources = [
            hit
            for w in words
            if w.endswith(_CPP_SOURCE)
            for hit in _match(w.replace("${CMAKE_CURRENT_SOURCE_DIR}/", ""), folder, paths)
        ]
        out.append(
            Extension(
                name=m.group(1),
                how="CMake",
                where=path,
                sources=tuple(dict.fromkeys(sources)),
                unresolved=any("$" in w for w in words),
            )
        )
    return out


def torch_op(dotted: str) -> tuple[str, str] | None:
    """``torch.ops.ns.op`` (or ``torch.ops.ns.op.default``) -> ``(ns, op)``."""
    parts = dotted.split(".")
    if len(parts) >= 4 and parts[0] == "torch" and parts[1] == "ops":
        return parts[2], parts[3]
    return None


@dataclass
class ExtensionIndex:
    """The extension modules of one revision, read lazily: build files first, then the C++
    files a name asks for. ``paths``: every path of the revision."""

    paths: Sequence[str]
    read: Reader
    _built: list[Extension] | None = None
    _cpp: dict[str, list[Extension]] = field(default_factory=dict)
    _reads: int = 0
    _held: dict[str, Extension | None] = field(default_factory=dict)

    def builds(self) -> list[Extension]:
        """Every extension a ``setup.py`` or ``CMakeLists.txt`` of the revision builds."""
        if self._built is None:
            self._built = []
            setups = [p for p in self.paths if _SETUP.fullmatch(posixpath.basename(p))]
            cmakes = [p for p in self.paths if posixpath.basename(p) == "CMakeLists.txt"]
            for p in sorted(setups, key=lambda p: p.count("/"))[:_MAX_SETUPS]:
                self._built += setup_extensions(p, self.read(p) or "", self.paths)
            for p in sorted(cmakes, key=lambda p: p.count("/"))[:_MAX_SETUPS]:
                self._built += cmake_extensions(p, self.read(p) or "", self.paths)
        return self._built

    def _registered(self, path: str) -> list[Extension]:
        if path not in self._cpp:
            if self._reads >= _MAX_CPP_READS:
                return []
            self._reads += 1
            self._cpp[path] = registrations(path, self.read(path) or "")
        return self._cpp[path]

    def module(self, name: str) -> Extension | None:
        """The extension Python imports as ``name`` (its last dotted part), with the ops its
        registration exports: built by a build file, else registered by a C++ file whose path
        holds every word of the name (``quant_cuda`` -> ``quant_cuda/quant_cuda.cpp``)."""
        last = name.rsplit(".", 1)[-1]
        if self._is_python_module(name):
            return None
        for ext in self.builds():
            if ext.name == last:
                return self._with_ops(ext)
        words = set(_WORDS.findall(last.lower()))
        if len(words) < 2:
            return None
        cpp = self._cpp_sources()
        for path in [p for p in cpp if words <= set(_WORDS.findall(p.lower()))]:
            for reg in self._registered(path):
                if reg.how == "PYBIND11_MODULE" and reg.name in ("", last):
                    folder = posixpath.dirname(path)
                    sources = tuple(p for p in cpp if posixpath.dirname(p) == folder)
                    return Extension(
                        name=last, how=reg.how, where=path, sources=sources, ops=reg.ops
                    )
        return None

    def holder(self, attribute: str, op: str) -> Extension | None:
        """The extension an attribute named ``attribute`` holds, where it cannot be followed to
        its build: registered by a C++ file whose path shares a word with the attribute's name
        (``inference_module`` -> ``csrc/transformer/inference/csrc/pt_binding.cpp``) and
        exporting ``op``; its sources are left to be found from the registration."""
        key = f"{attribute}.{op}"
        if key not in self._held:
            self._held[key] = None
            for path in self.named_cpp(attribute)[:_MAX_HOLDER_FILES]:
                reg = next((r for r in self._registered(path) if op in r.ops), None)
                if reg is not None:
                    self._held[key] = Extension(
                        name=attribute, how=reg.how, where=path, unresolved=True, ops=reg.ops
                    )
                    break
        return self._held[key]

    def _cpp_sources(self) -> list[str]:
        return [p for p in self.paths if source_kind(p) == "cpp" and p.endswith(_CPP_SOURCE)]

    def named_cpp(self, *names: str) -> list[str]:
        """C++ sources whose path holds a word (three letters or more) of ``names``: where a
        ``TORCH_LIBRARY`` of that namespace or op may be, most shared words first."""
        words = {w for n in names for w in _WORDS.findall(n.lower()) if len(w) >= 3}
        scored = [(len(words & set(_WORDS.findall(p.lower()))), p) for p in self._cpp_sources()]
        return [p for n, p in sorted(scored, key=lambda x: (-x[0], x[1])) if n][:_MAX_CPP_READS]

    def _is_python_module(self, name: str) -> bool:
        rel = name.replace(".", "/")
        return any(
            p == f"{rel}.py" or p == f"{rel}/__init__.py" or p.endswith(f"/{rel}.py")
            for p in self.paths
        )

    def _with_ops(self, ext: Extension) -> Extension:
        ops: list[str] = []
        for path in ext.sources:
            for reg in self._registered(path):
                if reg.how == "PYBIND11_MODULE":
                    ops += reg.ops
        return Extension(
            name=ext.name,
            how=ext.how,
            where=ext.where,
            sources=ext.sources,
            unresolved=ext.unresolved,
            ops=tuple(dict.fromkeys(ops)),
        )

    def library(self, namespace: str, candidates: Sequence[str]) -> Extension | None:
        """The ``TORCH_LIBRARY`` namespace ``namespace`` as registered in one of ``candidates``
        (C++ paths worth reading), its ops from every block that names it."""
        ops: list[str] = []
        where: list[str] = []
        for path in candidates:
            for reg in self._registered(path):
                if reg.how == "TORCH_LIBRARY" and reg.name == namespace:
                    ops += reg.ops
                    where.append(path)
        if not where:
            return None
        return Extension(
            name=namespace,
            how="TORCH_LIBRARY",
            where=where[0],
            sources=tuple(dict.fromkeys(where)),
            ops=tuple(dict.fromkeys(ops)),
        )
