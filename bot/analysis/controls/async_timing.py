"""Part A's surviving pitfall: timing an asynchronous launch with the wall clock.

A Triton launch returns before the kernel runs, so ``t0 = time.perf_counter(); kernel(...);
t1 = time.perf_counter()`` measures the launch. In the head's Python files of the diff (its
benchmarks and tests, the kernel's own module; a file with no kernel in it is read when the diff
adds it, the one case where the diff holds it whole), two wall-clock reads in one block of statements
with a call of a changed kernel between them (its name, the host function that launches it, or
its module) and no synchronisation there (``synchronize()``, CUDA events, ``do_bench``, a
``.item()`` / ``.cpu()`` that waits, or a function of the same file that synchronises) are a
finding on that kernel's change.
"""

from __future__ import annotations

import ast
import itertools
import posixpath
import re
from collections.abc import Iterator

from bot.analysis.diff import whole_text_from_diff
from bot.analysis.model import Context, KernelChange
from bot.analysis.text import parse_python, source_kind, walk
from bot.contracts.review import ChangeFinding

CLOCKS = {"time", "perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time_ns"}
SYNC = re.compile(
    r"\bsynchronize\s*\(|\bEvent\s*\(|\belapsed_time\s*\(|\bdo_bench\w*\s*\(|"
    r"\.(?:item|cpu|tolist|numpy)\s*\(|\bblock_until_ready\b|\bcuda\.current_stream\(\)\.synchronize"
)
_NOT_LAUNCHES = {"print", "range", "len", "enumerate", "zip", "list", "dict", "str", "format"}
MAX_FILES = 200
MAX_PER_CHANGE = 4


def _clock(node: ast.AST, names: set[str]) -> str | None:
    """``time.perf_counter`` for a wall-clock read (``names``: clocks imported bare)."""
    if not isinstance(node, ast.Call):
        return None
    f = node.func
    if isinstance(f, ast.Attribute) and f.attr in CLOCKS and ast.unparse(f.value) == "time":
        return f"time.{f.attr}"
    if isinstance(f, ast.Attribute) and f.attr == "default_timer":
        return "timeit.default_timer"
    if isinstance(f, ast.Name) and f.id in names:
        return f.id
    return None


def _simple_clock(stmt: ast.stmt, names: set[str]) -> str | None:
    if not isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return)):
        return None
    return next((c for n in walk(stmt) if (c := _clock(n, names))), None)


def _bodies(tree: ast.AST) -> Iterator[list[ast.stmt]]:
    for node in walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                yield body


def _called(nodes: list[ast.stmt]) -> list[str]:
    out = []
    for stmt in nodes:
        for n in walk(stmt):
            if isinstance(n, ast.Call):
                f = n.func
                while isinstance(f, ast.Subscript):  # kernel[grid](...)
                    f = f.value
                name = ast.unparse(f) if isinstance(f, (ast.Name, ast.Attribute)) else ""
                if name and name.split(".")[-1] not in _NOT_LAUNCHES:
                    out.append(name)
    return out


def timed_regions(text: str) -> list[tuple[int, str, list[str]]]:
    """``(line, clock, calls)`` for each pair of wall-clock reads in one block with calls and no
    synchronisation between them."""
    tree = parse_python(text)
    lines = text.split("\n")
    bare = {
        a.asname or a.name
        for n in walk(tree)
        if isinstance(n, ast.ImportFrom) and n.module == "time"
        for a in n.names
        if a.name in CLOCKS
    }
    syncing = {
        n.name
        for n in walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        and SYNC.search("\n".join(lines[n.lineno - 1 : n.end_lineno]))
    }
    found = []
    for body in _bodies(tree):
        reads = [(i, c) for i, s in enumerate(body) if (c := _simple_clock(s, bare))]
        for (a, clock), (b, _) in itertools.pairwise(reads):
            between = body[a + 1 : b]
            calls = _called(between)
            start, end = body[a].end_lineno or body[a].lineno, body[b].lineno
            region = "\n".join(lines[start : end - 1])
            if not calls or SYNC.search(region):
                continue
            if any(c.split(".")[-1] in syncing for c in calls):
                continue
            found.append((body[a].lineno, clock, calls))
    return found


_CLOCK_WORDS = re.compile(r"\b(?:time|perf_counter\w*|monotonic\w*|default_timer)\b")


def add_async_timing(changes: list[KernelChange], ctx: Context) -> list[KernelChange]:
    """Each change of a Python kernel with the wall-clock timings of it the head's files make
    without synchronising."""
    texts: dict[str, str] = {}
    for f in ctx.files[:MAX_FILES]:
        path = f.patch.new_path
        if not path or source_kind(path) != "python":
            continue
        # what the analysis read already; else, a file the diff adds is whole in it
        text = ctx.texts_new.get(path) or whole_text_from_diff(f.patch, "new")
        if text and _CLOCK_WORDS.search(text):
            texts[path] = text
    regions: dict[str, list[tuple[int, str, list[str]]]] = {}
    for path, text in texts.items():
        try:
            regions[path] = timed_regions(text)
        except SyntaxError:
            continue
    sites = [(path, *site) for path, found in regions.items() for site in found]
    if not sites:
        return changes
    wrappers = ctx.new_wrappers()
    out = []
    for c in changes:
        if c.new is None or source_kind(c.new.path) != "python" or c.kind == "deleted":
            out.append(c)
            continue
        # what a call of the changed kernel looks like: its name, its module's, its launchers'
        names = {c.new.name, posixpath.splitext(posixpath.basename(c.new.path))[0]}
        names |= wrappers.get(c.new.name, set())
        found = [
            _finding(path, line, clock, call)
            for path, line, clock, calls in sites
            if (call := next((x for x in calls if set(x.split(".")) & names), None))
        ][:MAX_PER_CHANGE]
        out.append(c.model_copy(update={"findings": [*c.findings, *found]}) if found else c)
    return out


def _finding(path: str, line: int, clock: str, call: str) -> ChangeFinding:
    return ChangeFinding(
        kind="async_timing",
        path=path,
        line=line,
        message=(
            f"times {call}(...) with {clock}() and no synchronisation before the second read: "
            "the launch is asynchronous, so this measures the launch, not the kernel. Call "
            "torch.cuda.synchronize() before each clock read, or time with "
            "torch.cuda.Event(enable_timing=True) or triton.testing.do_bench"
        ),
    )
