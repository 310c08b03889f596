"""A repository as ``init`` sees it: its ops (kernels and the functions that launch them), the
benchmarks that call each op, the import path and the build step.

An op is named by the function users call: for a Triton kernel, the top-level function of the
launching file that (directly or through the file's other functions) calls the host wrapper
(``LaunchSite.wrapper``), preferring a public one named like the kernel; for a C++/CUDA/HIP
kernel, the file's stem without ``_kernel``/``_binding`` (``csrc/softmax.cu`` and
``csrc/softmax_binding.cpp`` are op ``softmax``). A Triton op and a C++ op of the same name are
one op, covering both: that is a rewrite. A benchmark belongs to the op it calls.

:func:`scan_files` is pure (paths and texts in); :func:`read_repository` reads a folder.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bot.analysis.model import MAX_SOURCE_CHARS, FileScan
from bot.analysis.scan import scan_source
from bot.analysis.text import source_kind
from bot.onboard.benchmarks import FoundBenchmark, find_benchmarks
from bot.onboard.values import dotted

SKIP_DIRS = frozenset(
    {
        ".git",
        ".venv",
        "venv",
        "env",
        "node_modules",
        "build",
        "dist",
        "__pycache__",
        "site-packages",
        ".tox",
    }
)
MAX_FILES = 20_000
CXX_SUFFIX_RE = re.compile(r"(_kernels?|_binding|_bindings|_ext|_cuda|_hip|_launch(er)?)$")
BUILD_MARKERS = ("CUDAExtension", "CppExtension", "cpp_extension", "HIPExtension")
# The build step runs on both sides, and a rewrite to Triton often deletes setup.py with the
# extension: the test skips the build on a side that has none instead of failing it.
SETUP_BUILD = "[ ! -f setup.py ] || python setup.py build_ext --inplace"


@dataclass(frozen=True)
class Op:
    name: str
    languages: tuple[str, ...]  # triton, cuda, hip
    kernels: tuple[str, ...]
    paths: tuple[str, ...]
    entry: str  # the function users call (or the C++ op's name)
    benchmark: FoundBenchmark | None = None


@dataclass(frozen=True)
class RepoScan:
    ops: tuple[Op, ...]
    benchmarks: tuple[FoundBenchmark, ...]  # every benchmark found
    unmatched: tuple[FoundBenchmark, ...]  # benchmarks that call none of the ops
    python_path: tuple[str, ...] = ()
    setup: str | None = None
    files_scanned: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)


def read_repository(root: Path) -> RepoScan:
    """Scan every source file under ``root`` (skipping virtualenvs, build output and VCS)."""
    texts: dict[str, str] = {}
    for path in _source_files(root):
        try:
            with open(root / path, encoding="utf-8", errors="replace") as handle:
                text = handle.read(MAX_SOURCE_CHARS + 1)
        except OSError:
            continue
        if len(text) <= MAX_SOURCE_CHARS:
            texts[path] = text
    for name in ("setup.py", "pyproject.toml"):
        if (root / name).is_file() and name not in texts:
            texts[name] = (root / name).read_text(encoding="utf-8", errors="replace")
    src = root / "src"
    layout = src.is_dir() and any(
        (p / "__init__.py").is_file() for p in src.iterdir() if p.is_dir()
    )
    return scan_files(texts, src_layout=layout)


def _source_files(root: Path) -> Iterable[str]:
    count = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(files):
            rel = os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/")
            if source_kind(rel) is None or os.path.islink(os.path.join(folder, name)):
                continue
            count += 1
            if count > MAX_FILES:
                return
            yield rel


def scan_files(texts: Mapping[str, str], *, src_layout: bool = False) -> RepoScan:
    """The repository's ops and benchmarks from ``{path: text}``."""
    scans = {path: scan_source(path, text) for path, text in sorted(texts.items())}
    roots = ("src/",) if src_layout else ()
    benchmarks = [
        b
        for path, text in sorted(texts.items())
        if source_kind(path) == "python"
        for b in find_benchmarks(path, text, module=module_name(path, roots))
    ]
    ops = _merge(_triton_ops(scans, texts) + _cxx_ops(scans))
    matched, unmatched = _match(ops, benchmarks)
    setup_py = texts.get("setup.py", "")
    setup = SETUP_BUILD if any(marker in setup_py for marker in BUILD_MARKERS) else None
    return RepoScan(
        ops=tuple(matched),
        benchmarks=tuple(benchmarks),
        unmatched=tuple(unmatched),
        python_path=("src",) if src_layout else (),
        setup=setup,
        files_scanned=len(scans),
    )


def module_name(path: str, roots: tuple[str, ...] = ()) -> str:
    """The import name of a repository file (``src/pkg/bench.py`` -> ``pkg.bench`` with the
    root ``src/``); ``""`` when the path is not a valid module name."""
    for root in roots:
        if path.startswith(root):
            path = path[len(root) :]
            break
    parts = path.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts.pop()
    valid = parts and all(p.isidentifier() for p in parts)
    return ".".join(parts) if valid else ""


def _kernel_files(scans: Mapping[str, FileScan]) -> dict[str, list[str]]:
    where: dict[str, list[str]] = {}
    for path, scan in scans.items():
        for kernel in scan.kernels:
            where.setdefault(kernel.name, []).append(path)
    return where


def _triton_ops(scans: Mapping[str, FileScan], texts: Mapping[str, str]) -> list[Op]:
    where = _kernel_files(scans)
    ops: list[Op] = []
    for path, scan in scans.items():
        launches = [x for x in scan.launches if x.language == "triton" and x.wrapper]
        if not launches:
            continue
        callers = _top_level_callers(texts[path])
        for wrapper in dict.fromkeys(x.wrapper for x in launches if x.wrapper):
            kernels = tuple(
                dict.fromkeys(
                    x.kernel for x in launches if x.wrapper == wrapper and x.kernel in where
                )
            )
            if not kernels:
                continue
            entry = _user_function(wrapper, kernels, callers)
            paths = {path} | {p for k in kernels for p in where.get(k, [])}
            ops.append(
                Op(
                    name=_op_name(entry),
                    languages=("triton",),
                    kernels=kernels,
                    paths=tuple(sorted(paths)),
                    entry=entry,
                )
            )
    return ops


def _top_level_callers(text: str) -> dict[str, set[str]]:
    """Who reaches whom in one file: for each function (nested ones and methods included), the
    top-level names that call or contain it. A class contains its methods, and a module-level
    alias (``rms_norm = _RMSNorm.apply``, the autograd.Function pattern) reaches its class."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return {}
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    callers: dict[str, set[str]] = {}

    def reach(callee: str, caller: str) -> None:
        if callee != caller:
            callers.setdefault(callee, set()).add(caller)

    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            alias, head = node.targets[0], dotted(node.value).split(".", 1)[0]
            if isinstance(alias, ast.Name) and head in classes:
                reach(head, alias.id)
            continue
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)) and inner is not node:
                reach(inner.name, node.name)
            if isinstance(inner, ast.Call) and dotted(inner.func):
                name = dotted(inner.func)
                reach(name.rsplit(".", 1)[-1], node.name)
                if name.split(".", 1)[0] in classes:  # _RMSNorm.apply(...)
                    reach(name.split(".", 1)[0], node.name)
    return callers


def _user_function(wrapper: str, kernels: tuple[str, ...], callers: dict[str, set[str]]) -> str:
    """The function users call to reach ``wrapper``: among the wrapper and the file's functions
    that call it (directly or not), a public one named like the kernel, else the nearest public
    one, else the wrapper."""
    distance = {wrapper: 0}
    frontier = [wrapper]
    while frontier:
        name = frontier.pop(0)
        for caller in sorted(callers.get(name, set())):
            if caller not in distance:
                distance[caller] = distance[name] + 1
                frontier.append(caller)
    public = [name for name in distance if not name.startswith("_")]
    stems = [k.removesuffix("_kernel").strip("_") for k in kernels]

    def rank(name: str) -> tuple[bool, int, str]:
        like = any(s and (s.startswith(name) or name.startswith(s)) for s in stems)
        return (not like, distance[name], name)

    return min(public, key=rank) if public else wrapper


def _cxx_ops(scans: Mapping[str, FileScan]) -> list[Op]:
    by_stem: dict[str, list[FileScan]] = {}
    for path, scan in scans.items():
        if scan.kind != "cpp" or not (scan.kernels or scan.bindings):
            continue
        stem = CXX_SUFFIX_RE.sub("", Path(path).name.split(".", 1)[0])
        by_stem.setdefault(stem, []).append(scan)
    ops = []
    for stem, group in sorted(by_stem.items()):
        kernels = tuple(k.name for s in group for k in s.kernels)
        if not kernels:
            continue
        languages = tuple(sorted({s.language for s in group if s.language}))
        ops.append(
            Op(
                name=_op_name(stem),
                languages=languages,
                kernels=kernels,
                paths=tuple(sorted(s.path for s in group)),
                entry=stem,
            )
        )
    return ops


def _op_name(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]", "_", text)[:64]
    return name if re.match(r"^[A-Za-z_]", name) else f"op_{name}"[:64]


def _merge(ops: list[Op]) -> list[Op]:
    """Ops of the same name (a Triton rewrite next to its C++ original) as one."""
    merged: dict[str, Op] = {}
    for op in ops:
        old = merged.get(op.name)
        if old is None:
            merged[op.name] = op
            continue
        merged[op.name] = Op(
            name=op.name,
            languages=tuple(dict.fromkeys(old.languages + op.languages)),
            kernels=tuple(dict.fromkeys(old.kernels + op.kernels)),
            paths=tuple(sorted(set(old.paths) | set(op.paths))),
            entry=old.entry if "triton" in old.languages else op.entry,
        )
    return list(merged.values())


def _match(
    ops: list[Op], benchmarks: list[FoundBenchmark]
) -> tuple[list[Op], list[FoundBenchmark]]:
    """Give each op a benchmark: an entry point named like the op first (it is written for
    kernel-review), else the first benchmark that calls the op's entry function."""
    used: set[int] = set()
    out = []
    for op in ops:
        free = [i for i in range(len(benchmarks)) if i not in used]
        named = [i for i in free if benchmarks[i].form == "entry" and benchmarks[i].name == op.name]
        calling = [i for i in free if op.entry in benchmarks[i].calls]
        index = (named + calling + [None])[0]
        if index is None:
            out.append(op)
            continue
        used.add(index)
        out.append(
            Op(
                name=op.name,
                languages=op.languages,
                kernels=op.kernels,
                paths=op.paths,
                entry=op.entry,
                benchmark=benchmarks[index],
            )
        )
    return out, [b for i, b in enumerate(benchmarks) if i not in used]
