"""Text rules the readers share: tuning names and lines, source kinds, digests, called helpers."""

from __future__ import annotations

import ast
import functools
import hashlib
import re
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import ParamSpec, TypeVar

from bot.analysis.model import (
    CPP_SUFFIXES,
    PYTHON_SUFFIXES,
    FileScan,
    KernelDef,
    SourceKind,
)

# Names whose values are tuning knobs rather than algorithm: BLOCK_SIZE_M, XBLOCK, num_warps,
# threads_per_block, kBlockSize. Lower-case ``block_start`` / ``block_id`` are algorithm.


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node``, itself first, in ``ast.walk``'s order (breadth first), a third
    faster: the analysis walks the same trees many times, and ``ast.walk``'s nested generators
    were a third of the corpus's time. Within :func:`remembering_walks`, a node walked a second
    time is walked once more into a list that later walks read (trees are never changed once
    made: what differs is a copy, see ``same_code``)."""
    memo = _WALKS.get()
    if memo is None:
        return _walk(node)
    seen = memo.get(id(node))
    if seen is None:
        memo[id(node)] = (node, None)  # held: its id is not reused while the memo lives
        return _walk(node)
    nodes = seen[1]
    if nodes is None:
        nodes = tuple(_walk(node))
        memo[id(node)] = (node, nodes)
    return iter(nodes)


def _walk(node: ast.AST) -> Iterator[ast.AST]:
    todo = deque((node,))
    pop, push = todo.popleft, todo.append
    while todo:
        here = pop()
        for name in here._fields:
            value = getattr(here, name, None)
            if isinstance(value, ast.AST):
                push(value)
            elif value.__class__ is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        push(item)
        yield here


def children(node: ast.AST) -> list[ast.AST]:
    """``ast.iter_child_nodes(node)`` as a list, without its nested generators (a third
    faster): the readers that walk a tree their own way call it on every node."""
    out: list[ast.AST] = []
    push = out.append
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            push(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, ast.AST):
                    push(item)
    return out


# by id: (the node, its walk once walked twice); None outside ``remembering_walks``
_WALKS: ContextVar[dict[int, tuple[ast.AST, tuple[ast.AST, ...] | None]] | None] = ContextVar(
    "walks", default=None
)
_P = ParamSpec("_P")
_R = TypeVar("_R")


def remembering_walks(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """``func`` with :func:`walk` remembering the trees walked more than once until it returns
    (one analysis walks a module, a function, a launch's statement many times over, each rule on
    its own); see ``scope.one_analysis``."""

    @functools.wraps(func)
    def remembering(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        if _WALKS.get() is not None:
            return func(*args, **kwargs)
        token = _WALKS.set({})
        try:
            return func(*args, **kwargs)
        finally:
            _WALKS.reset(token)

    return remembering


TUNING_NAME = re.compile(
    r"^_*(?:[A-Z0-9]+_)*[XYZR]?(?:BLOCK|TILE|WARPS|STAGES|THREADS|GROUP_SIZE|SPLIT_K)(?:SIZE)?"
    r"(?:_[A-Z0-9]+)*$"
    r"|^(?:num_warps|num_stages|num_ctas|maxnreg|block_size|block_dim|threads|block|tile_size|"
    r"threads_per_block|block_threads|num_threads|block_sizes)$"
    r"|^block_[A-Z]+$"  # TileLang's block_M, block_N, block_K
    r"|^k(?=[A-Z])\w*?(?:Block|Tile|Threads|Warps)\w*$"
)


_TUNING_ASSIGN = re.compile(
    r"^\s*(?:#\s*define\s+|(?:static\s+)?(?:constexpr|const)\s+(?:unsigned\s+)?[\w:]+\s+|"
    r"(?:unsigned|int|size_t|dim3|auto)\s+)?([A-Za-z_]\w*)\s*(?::\s*[\w.]*constexpr\s*)?(?:=|\s\d|[({]\s*\d)"
)


_TUNING_MARK = re.compile(
    r"\bConfig\s*\(|^\s*@?triton\.autotune\(|^\s*(?:configs|key)\s*=|"
    r"\b(?:num_warps|num_stages|num_ctas|maxnreg)\s*="
)


_TUNING_TEST = re.compile(r"^\s*(?:if|elif)\s+(.+):\s*(?:#.*)?$")
_TEST_WORDS = {"is", "not", "None", "and", "or", "True", "False", "in"}


def is_tuning_line(line: str) -> bool:
    """Whether a changed line only touches tuning: a Config entry, a warps/stages value, a
    ``BLOCK_*`` constant or constexpr default, a test of tuning values only (``if threads is
    None:``), or nothing but brackets and commas."""
    stripped = line.strip()
    if not stripped or not stripped.strip("[](){},"):
        return True
    if _TUNING_MARK.search(line):
        return True
    test = _TUNING_TEST.match(line)
    if test:
        names = set(re.findall(r"[A-Za-z_]\w*", test.group(1))) - _TEST_WORDS
        return bool(names) and all(is_tuning_name(n) for n in names)
    m = _TUNING_ASSIGN.match(line)
    return bool(m and is_tuning_name(m.group(1)))


CALLED = re.compile(r"\b([A-Za-z_]\w*)\s*[(<]")  # a call, or a template's arguments


def called_helpers(scan: FileScan, kernel: KernelDef, lines: Sequence[str]) -> list[KernelDef]:
    """The functions of the same file ``kernel`` calls, directly or through each other:
    ``__device__`` helpers in C++, other ``@triton.jit`` functions in Python."""
    pool = [*scan.helpers, *(k for k in scan.kernels if k.language in ("triton", "gluon", "cute"))]
    by_name: dict[str, list[int]] = {}  # where each name is in the pool: a chain of helpers
    for i, h in enumerate(pool):  # made testing the whole pool per function quadratic
        by_name.setdefault(h.name, []).append(i)
    out: list[KernelDef] = []
    seen = {(kernel.name, kernel.line_start)}
    todo = [kernel]
    while todo:
        k = todo.pop()
        called = set(CALLED.findall("\n".join(lines[k.body_start - 1 : k.body_end])))
        for h in [pool[i] for i in sorted(i for n in called for i in by_name.get(n, ()))]:
            if (h.name, h.line_start) not in seen:
                seen.add((h.name, h.line_start))
                out.append(h)
                todo.append(h)
    return sorted(out, key=lambda h: h.line_start)


def source_kind(path: str) -> SourceKind | None:
    lower = path.lower()
    if lower.endswith(PYTHON_SUFFIXES):
        return "python"
    if lower.endswith(CPP_SUFFIXES):
        return "cpp"
    return None


def digest(parts: Sequence[str]) -> str:
    """A short fingerprint of normalised text: blank parts dropped, and whitespace between
    tokens too, so re-indenting or re-wrapping a statement leaves it unchanged."""
    joined = "".join("".join(p.split()) for p in parts if p and p.strip())
    return hashlib.sha1(joined.encode("utf-8", "surrogatepass")).hexdigest()[:16]


# ``triton.jit(kernel)``: a decorator applied by a call (not ``@triton.jit(do_not_specialize=...)``)
JIT_CALL = re.compile(r"\bjit\(\s*[A-Za-z_]\w*\s*[,)]")


def python_digest(parts: Sequence[str]) -> str:
    """``digest`` of Python source as ``ast.unparse`` writes it, each line's indentation kept:
    a statement moved into or out of a loop changes the program (unparsed code has one layout
    per program, so the layout of the file read does not count)."""
    return digest(
        [f"{len(ln) - len(ln.lstrip())}|{ln}" for p in parts for ln in p.split("\n") if ln.strip()]
    )


def is_tuning_name(name: str) -> bool:
    return bool(TUNING_NAME.match(name))


def collapse(text: str) -> str:
    return " ".join(text.split())


@functools.lru_cache(maxsize=64)
def parse_python(text: str) -> ast.Module:
    """``ast.parse`` once per text for every reader of the analysis (the tree is not changed by
    any of them). Raises what ``ast.parse`` raises."""
    with warnings.catch_warnings():  # invalid escapes in the user's strings are theirs
        warnings.simplefilter("ignore")
        return ast.parse(text)


def parse_python_or_none(text: str | None) -> ast.Module | None:
    """``parse_python``, or None for no text or text that is not Python a reader can take (a
    syntax error, a null byte, nesting past the recursion limit, a file too large to hold)."""
    if not text:
        return None
    try:
        return parse_python(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


Bindings = dict[str, list[tuple[ast.stmt, list[ast.expr]]]]


def module_bindings(body: Sequence[ast.stmt], tests: Sequence[ast.expr] = ()) -> Bindings:
    """Module-level assignments by name (``x += ...`` too), those inside ``if`` / ``try`` /
    ``with`` blocks too, each with the ``if`` tests it sits under."""
    out: Bindings = {}
    for stmt in body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    out.setdefault(t.id, []).append((stmt, list(tests)))
            continue
        inner: list[tuple[Sequence[ast.stmt], Sequence[ast.expr]]] = []
        if isinstance(stmt, ast.If):
            inner = [(stmt.body, [*tests, stmt.test]), (stmt.orelse, [*tests, stmt.test])]
        elif isinstance(stmt, (ast.Try, ast.With)):
            inner = [(stmt.body, tests)]
        for block, above in inner:
            for name, found in module_bindings(block, above).items():
                out.setdefault(name, []).extend(found)
    return out


def module_of(path: str) -> str:
    """``pkg/sub/mod.py`` -> ``pkg.sub.mod``; ``pkg/__init__.py`` -> ``pkg``."""
    stem = path[: -len(".py")] if path.endswith(".py") else path
    parts = stem.split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def absolute(module: str | None, level: int, path: str) -> str:
    """The module a ``from`` import names, relative ones resolved against ``path``."""
    if level == 0:
        return module or ""
    package = module_of(path).split(".")
    if not path.endswith("__init__.py"):
        package = package[:-1]
    package = package[: len(package) - (level - 1)] if level > 1 else package
    return ".".join([*package, *([module] if module else [])])


def is_test_path(path: str) -> bool:
    """A test file or a file under a tests folder (its kernels are test doubles, not ops)."""
    parts = path.split("/")
    name = parts[-1]
    return (
        any(p in ("test", "tests", "testing") for p in parts[:-1])
        or name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
    )
