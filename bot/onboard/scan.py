"""A repository as ``init`` sees it: its ops (kernels and the functions that launch them), the
benchmarks that call each op, the import path and the build step.

A Triton op is a launching file: its kernels, and the public top-level functions of the file
that (directly or through the file's other functions) call a host wrapper
(``LaunchSite.wrapper``), its *entries*. It is named after its public function when it has one,
or one named like the file, else after the module (the file's stem without ``_kernel``-like
suffixes; the folder for a generic stem such as ``__init__``): never after a method
(``forward``) or a test. Test files hold no ops. For a C++/CUDA/HIP kernel, the op is the file's
stem without ``_kernel``/``_binding`` (``csrc/softmax.cu`` and ``csrc/softmax_binding.cpp`` are
op ``softmax``). Ops of the same name are one op, covering every file: a Triton op and a C++ op
(a rewrite), or a vendor back-end's copy of an op. A benchmark belongs to the op it calls,
through an import of the op's package or in the op's own file (there, launching one of its
kernels counts: a tritonbench operator's method launches the kernel itself).

Each op also counts its call sites (calls of an entry outside the op's own files), and, given
the files' last commit times, when it last changed: ``init`` ranks by these.

:func:`scan_files` is pure (paths and texts in); :func:`read_repository` reads a folder.
"""

from __future__ import annotations

import ast
import dataclasses
import multiprocessing
import os
import re
import signal
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.analysis.model import MAX_SOURCE_CHARS, FileScan
from bot.analysis.scan import scan_source
from bot.analysis.text import is_test_path, parse_python_or_none, source_kind
from bot.errors import GitError
from bot.gitutil import git
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
MODULE_SUFFIX_RE = re.compile(r"(_kernels?|_triton|_ops?|_impl|_fwd|_bwd)$")
# stems that say nothing about the op: the folder names it instead
GENERIC_STEMS = frozenset(
    {
        "__init__", "init", "ops", "op", "kernels", "kernel", "utils", "util", "triton", "impl",
        "functional", "interface", "core", "common", "main", "api", "layers", "modules",
        "fused", "wrapper", "wrappers", "helpers", "src", "lib", "operator", "tutorial",
        "tutorials", "example", "examples", "demo", "reference",
    }
)  # fmt: skip
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
    entries: tuple[str, ...] = ()  # every public function of the op (entry first)
    home: str = ""  # the launching file that speaks for the op (a vendor copy's aside)
    module: str = ""  # the import name of the op's file ("" for C++ or none)
    signature: str = ""  # the entry's parameters as written: "x, dim=-1"
    call_sites: int = 0  # calls of an entry outside the op's own files
    changed: int = 0  # the newest commit time of its files (0: unknown)


@dataclass(frozen=True)
class RepoScan:
    ops: tuple[Op, ...]
    benchmarks: tuple[FoundBenchmark, ...]  # every benchmark found
    unmatched: tuple[FoundBenchmark, ...]  # benchmarks that call none of the ops
    python_path: tuple[str, ...] = ()
    setup: str | None = None
    files_scanned: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)


# besides the sources: the YAML files a benchmark class reads its shapes from (``core_shapes.yaml``)
SHAPE_FILES = (".yaml", ".yml")


def read_repository(root: Path) -> RepoScan:
    """Scan every source file under ``root`` (skipping virtualenvs, build output and VCS), with
    the YAML files beside them that benchmarks read."""
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
    jobs = max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)
    return scan_files(texts, src_layout=layout, changed=last_changes(root), jobs=jobs)


def last_changes(root: Path, commits: int = 5000) -> dict[str, int]:
    """Each file's newest commit time (seconds) over the last ``commits`` commits; empty where
    ``root`` is not a git repository."""
    if not (root / ".git").exists():
        return {}
    try:
        log = git(root, "log", f"-n{commits}", "--format=%x01%ct", "--name-only", "--no-renames")
    except GitError:
        return {}
    out: dict[str, int] = {}
    when = 0
    for line in log.splitlines():
        if line.startswith("\x01"):
            when = int(line[1:] or 0)
        elif line:
            out.setdefault(line, when)
    return out


def _source_files(root: Path) -> Iterable[str]:
    count = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(files):
            rel = os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/")
            if os.path.islink(os.path.join(folder, name)):
                continue
            if source_kind(rel) is None and not rel.endswith(SHAPE_FILES):
                continue
            count += 1
            if count > MAX_FILES:
                return
            yield rel


def scan_files(
    texts: Mapping[str, str],
    *,
    src_layout: bool = False,
    changed: Mapping[str, int] | None = None,
    jobs: int = 1,
) -> RepoScan:
    """The repository's ops and benchmarks from ``{path: text}`` (``changed``: each file's last
    commit time, for ranking). Each file is parsed once, read for kernels, for benchmarks and,
    where it launches a Triton kernel, for its functions, in turn while its tree is at hand;
    ``jobs`` processes share the files where there are many (the result is the same)."""
    roots = ("src/",) if src_layout else ()
    paths = [p for p in sorted(texts) if not p.endswith(SHAPE_FILES)]
    reads = _read_all(texts, paths, roots, jobs)
    scans = {path: reads[path].scan for path in paths}
    launching = {p: r.functions for p, r in reads.items() if r.functions is not None}
    benchmarks = [b for path in paths for b in reads[path].benchmarks]
    ops = _merge(_triton_ops(scans, launching, roots) + _cxx_ops(scans))
    ops = _ranked_facts(ops, texts, changed or {})
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


@dataclass(frozen=True)
class _Read:
    """What one file gives: its kernels and launches, its functions where it launches a Triton
    kernel, its benchmarks."""

    scan: FileScan
    functions: _Functions | None
    benchmarks: list[FoundBenchmark]


def _read_file(
    path: str,
    texts: Mapping[str, str],
    roots: tuple[str, ...],
    trees: dict[str, ast.Module | None],
) -> _Read:
    text = texts[path]
    scan = scan_source(path, text)
    if source_kind(path) != "python":
        return _Read(scan, None, [])
    functions = None
    if not is_test_path(path) and any(x.language == "triton" and x.wrapper for x in scan.launches):
        functions = _Functions.of(parse_python_or_none(text))
    module = module_name(path, roots)
    found = find_benchmarks(path, text, module=module, texts=texts, trees=trees)
    return _Read(scan, functions, found)


PARALLEL_FROM = 400  # files: fewer are read in this process
_SHARED: dict[str, Any] = {}  # what a forked reader process reads its files from


def _read_all(
    texts: Mapping[str, str], paths: list[str], roots: tuple[str, ...], jobs: int
) -> dict[str, _Read]:
    """Every file read, in ``jobs`` forked processes where there are many files (each process
    takes every ``n``-th file, so large and small files spread evenly); in this one otherwise."""
    jobs = min(jobs, len(paths) // (PARALLEL_FROM // 2) or 1)
    if jobs <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        trees: dict[str, ast.Module | None] = {}
        return {path: _read_file(path, texts, roots, trees) for path in paths}
    _SHARED.update(texts=texts, roots=roots)
    shares = [paths[i :: jobs * 4] for i in range(jobs * 4)]
    pool = multiprocessing.get_context("fork").Pool(jobs, initializer=_ignore_interrupts)
    try:
        out: dict[str, _Read] = {}
        for read in pool.imap_unordered(_read_share, shares):
            out.update(read)
        pool.close()
        return out
    finally:
        pool.terminate()  # Ctrl-C or an error here: the readers go at once
        pool.join()
        _SHARED.clear()


def _ignore_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops them (``terminate``)


def _read_share(paths: list[str]) -> dict[str, _Read]:
    texts, roots = _SHARED["texts"], _SHARED["roots"]
    trees: dict[str, ast.Module | None] = {}
    return {path: _read_file(path, texts, roots, trees) for path in paths}


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


@dataclass(frozen=True)
class _Functions:
    """What a launching file's tree says of its functions: its public functions (with their
    parameters), its public classes, and who reaches whom (``_top_level_callers``)."""

    public: dict[str, str]
    classes: list[str]
    callers: dict[str, set[str]]

    @classmethod
    def of(cls, tree: ast.Module | None) -> _Functions:
        return cls(_public_functions(tree), _public_classes(tree), _top_level_callers(tree))


def _triton_ops(
    scans: Mapping[str, FileScan], launching: Mapping[str, _Functions], roots: tuple[str, ...]
) -> list[Op]:
    where = {
        k: [p for p in paths if not is_test_path(p)] for k, paths in _kernel_files(scans).items()
    }
    ops: list[Op] = []
    for path, scan in scans.items():
        if is_test_path(path):
            continue
        launches = [x for x in scan.launches if x.language == "triton" and x.wrapper]
        kernels = tuple(dict.fromkeys(x.kernel for x in launches if where.get(x.kernel)))
        if not kernels:
            continue
        wrappers = tuple(
            dict.fromkeys(x.wrapper for x in launches if x.wrapper and x.kernel in kernels)
        )
        functions, callers = launching[path].public, launching[path].callers
        reached = _reaching(wrappers, callers)
        entries = [n for n in functions if n in reached]
        name = _module_op_name(path, entries)
        entries.sort(key=lambda n: (n != name, _unlike(n, kernels), n))
        # public classes that reach a wrapper (an nn.Module whose forward calls the op) are
        # called too: benchmarks use them, but an op is not named after one
        entries += sorted(n for n in launching[path].classes if n in reached)
        entry = entries[0] if entries else name
        # a kernel defined in the launching file is that one; another file's, any defining it
        paths = {path} | {p for k in kernels if not scan.kernel(k) for p in where[k]}
        ops.append(
            Op(
                name=_op_name(name),
                languages=("triton",),
                kernels=kernels,
                paths=tuple(sorted(paths)),
                entry=entry,
                entries=tuple(entries),
                home=path,
                module=module_name(path, roots),
                signature=functions.get(entry, ""),
            )
        )
    return ops


def _public_functions(tree: ast.Module | None) -> dict[str, str]:
    """The file's public top-level functions (and ``name = _Function.apply`` aliases), each
    with its parameters as written; tests are not public functions."""
    out: dict[str, str] = {}
    for node in tree.body if tree is not None else ():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name, params = node.name, ast.unparse(node.args)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if not isinstance(target, ast.Name) or not dotted(node.value).endswith(".apply"):
                continue
            name, params = target.id, "*args"
        else:
            continue
        if not name.startswith(("_", "test")):
            out[name] = params
    return out


def _public_classes(tree: ast.Module | None) -> list[str]:
    return [
        node.name
        for node in (tree.body if tree is not None else ())
        if isinstance(node, ast.ClassDef) and not node.name.startswith(("_", "Test"))
    ]


def _reaching(wrappers: tuple[str, ...], callers: dict[str, set[str]]) -> set[str]:
    """The wrappers and every name that calls or contains one, directly or not."""
    seen = set(wrappers)
    frontier = list(wrappers)
    while frontier:
        for caller in callers.get(frontier.pop(), ()):
            if caller not in seen:
                seen.add(caller)
                frontier.append(caller)
    return seen


def _unlike(name: str, kernels: tuple[str, ...]) -> bool:
    stems = [k.removesuffix("_kernel").strip("_") for k in kernels]
    return not any(s and (s.startswith(name) or name.startswith(s)) for s in stems)


def _module_op_name(path: str, entries: list[str]) -> str:
    """An op's name: its only public function, or the one named like its file, or the shortest
    one named after its file; else the module's (a generic stem gives way to its folder's
    name)."""
    parts = path.removesuffix(".py").split("/")
    stems = [MODULE_SUFFIX_RE.sub("", p.strip("_")) or p for p in reversed(parts)]
    module = next((s for s in stems if s.lower() not in GENERIC_STEMS), stems[0])
    if len(entries) == 1:
        return entries[0]
    for name in entries:
        if name in (parts[-1], module):
            return name
    # ops/gla/chunk.py with chunk_gla and chunk_gla_fwd: the shortest named after the module
    # (the module's own name is shared by every op folder's chunk.py)
    prefixed = [n for n in entries if n.startswith((f"{parts[-1]}_", f"{module}_"))]
    return min(prefixed, key=lambda n: (len(n), n)) if prefixed else module


def _top_level_callers(tree: ast.Module | None) -> dict[str, set[str]]:
    """Who reaches whom in one file: for each function (nested ones and methods included), the
    top-level names that call or contain it. A class contains its methods, and a module-level
    alias (``rms_norm = _RMSNorm.apply``, the autograd.Function pattern) reaches its class."""
    if tree is None:
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
    """Ops of the same name (a Triton rewrite next to its C++ original, a vendor back-end's copy)
    as one; the Triton op on the shortest path speaks for it."""
    merged: dict[str, Op] = {}
    for op in ops:
        old = merged.get(op.name)
        if old is None:
            merged[op.name] = op
            continue
        first, second = sorted((old, op), key=_speaks_first)
        merged[op.name] = dataclasses.replace(
            first,
            languages=tuple(dict.fromkeys(old.languages + op.languages)),
            kernels=tuple(dict.fromkeys(old.kernels + op.kernels)),
            paths=tuple(sorted(set(old.paths) | set(op.paths))),
            entries=tuple(dict.fromkeys(first.entries + second.entries)),
        )
    return list(merged.values())


def _speaks_first(op: Op) -> tuple[bool, int, str]:
    return ("triton" not in op.languages, min(p.count("/") for p in op.paths), op.paths[0])


# a name followed by its call's parenthesis, not in its own ``def``; names are looked up after
CALL_RE = re.compile(r"(?<!def )\b(\w+)\s*\(")


def _ranked_facts(ops: list[Op], texts: Mapping[str, str], changed: Mapping[str, int]) -> list[Op]:
    """Each op with its call sites (``entry(`` outside its own files and definitions) and its
    newest change."""
    owners: dict[str, list[int]] = {}
    for index, op in enumerate(ops):
        for entry in op.entries:
            owners.setdefault(entry, []).append(index)
    counts = [0] * len(ops)
    for path, text in texts.items():
        if source_kind(path) != "python":
            continue
        for match in CALL_RE.finditer(text):
            for index in owners.get(match[1], ()):
                if path not in ops[index].paths:
                    counts[index] += 1
    return [
        dataclasses.replace(
            op, call_sites=count, changed=max((changed.get(p, 0) for p in op.paths), default=0)
        )
        for op, count in zip(ops, counts, strict=True)
    ]


def _match(
    ops: list[Op], benchmarks: list[FoundBenchmark]
) -> tuple[list[Op], list[FoundBenchmark]]:
    """Give each op a benchmark: an entry point named like the op first (it is written for
    kernel-review), else the first benchmark that calls one of the op's entries, the entry first
    (through an import from the op's package, or in the op's own file)."""
    used: set[int] = set()
    out = []
    for op in ops:
        free = [i for i in range(len(benchmarks)) if i not in used]
        named = [i for i in free if benchmarks[i].form == "entry" and benchmarks[i].name == op.name]
        calling = [
            i
            for entry in (op.entries or (op.entry,))
            for i in free
            if _calls_op(benchmarks[i], op, entry)
        ]
        index = (named + calling + [None])[0]
        if index is None:
            out.append(op)
            continue
        used.add(index)
        out.append(dataclasses.replace(op, benchmark=benchmarks[index]))
    return out, [b for i, b in enumerate(benchmarks) if i not in used]


def _calls_op(bench: FoundBenchmark, op: Op, entry: str) -> bool:
    """Whether ``bench`` calls ``entry`` of ``op``: a call resolved through the benchmark file's
    imports to the op's package, or any call of it from inside the op's own files (a C++ op,
    which has no module, by name); a call of a name of unknown origin (a star import) counts."""
    if bench.path in op.paths:  # in the op's own file: calling it or launching its kernel
        return entry in bench.calls or not bench.calls.isdisjoint(op.kernels)
    if not op.module:
        return entry in bench.calls
    package = op.module.split(".", 1)[0]
    return any(
        full.rsplit(".", 1)[-1] == entry and full.split(".", 1)[0] in (package, "*")
        for full in bench.resolved_calls
    )
