"""The policy ``init`` writes for a scanned repository, as TOML text with a comment on each guess.

One ``[[kernels]]`` per op written (``init`` chooses them, ``choose.py``); a comment line names
its kernels and the function it is called through, nothing else, so a large repository's policy
stays small. Its ``bench`` names the benchmark that calls the op (the line whose
name says triton, when a perf_report compares several); its shapes are the benchmark's sweep
(at most :data:`MAX_SERVED` of them, evenly spread), its dtypes the ones the benchmark makes its
tensors in. What could not be read is written as :data:`bot.policy.model.PLACEHOLDER` with a
comment saying what to put there; ``policy check`` refuses it at that line until it is filled.
Pure: a :class:`RepoScan` in, text and the list of gaps out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

from bot.onboard.benchmarks import FoundBenchmark
from bot.onboard.scan import Op, RepoScan
from bot.onboard.stubs import STUB_MODULE, stub_name
from bot.policy.model import DTYPES, MAX_DIMS, PLACEHOLDER, Limits

MAX_SERVED = 12
MAX_LISTED = 6  # kernels named in an op's comment
# what an op whose bench is a stub is written with: the stub makes its inputs from them
STUB_DTYPES = ("float16",)
STUB_SHAPES = ([4096, 4096],)
MATMUL_DIMS = ("M", "N", "K")
MATMUL_TENSORS = [[0, 2], [2, 1], [0, 1]]


@dataclass(frozen=True)
class Gap:
    """A value ``init`` could not infer: where it is in the written file, and what is missing."""

    line: int
    key: str
    message: str


@dataclass(frozen=True)
class Written:
    text: str
    gaps: tuple[Gap, ...]
    guesses: tuple[str, ...]  # values written that the maintainer should confirm
    benches: tuple[tuple[str, str], ...] = ()  # (op, the bench written for it, or "")


def _toml(value: object) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value)


class _Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.gaps: list[Gap] = []

    def add(self, text: str = "") -> None:
        self.lines.append(text)

    def key(self, key: str, value: object, comment: str = "") -> None:
        self.add(f"{key} = {_toml(value)}" + (f"  # {comment}" if comment else ""))

    def gap(self, key: str, why: str) -> None:
        self.add(f'{key} = "{PLACEHOLDER}"  # {why}')
        self.gaps.append(Gap(line=len(self.lines), key=key, message=why))


def render_policy(
    scan: RepoScan, ops: Sequence[Op] | None = None, *, stubbed: frozenset[str] = frozenset()
) -> Written:
    """The policy text for ``ops`` of ``scan`` (default: all of them; at least one); an op in
    ``stubbed`` without a benchmark names its bench entry stub (``stubs.py``)."""
    ops = scan.ops if ops is None else tuple(ops)
    out = _Lines()
    guesses: list[str] = []
    out.add("# kernel-review policy, written by `kernel-review init`; every key: docs/policy.md")
    out.add(
        "# Run `kernel-review policy check` after editing: it names each line still to fill in."
    )
    out.add()
    if scan.python_path:
        out.key("python_path", list(scan.python_path), "a src/ layout: imported from here")
        out.add()
    out.add("[deployment]")
    out.key("kind", "long-lived", "a guess: or cli | serverless | latency-slo")
    out.add("# first_call_budget_ms = 3000  # required unless kind = long-lived")
    guesses.append('deployment.kind = "long-lived" is a guess: say how your kernels are deployed')
    if scan.setup:
        out.add()
        out.add("[setup]  # run in each checkout (base and head) before it is measured")
        out.key("command", scan.setup, "setup.py builds a C++/CUDA extension; none: no build")
        guesses.append(
            f"[setup] command = {scan.setup!r} builds the extension in place"
            " (on a side without setup.py, nothing)"
        )
    for op in ops:
        out.add()
        _kernel(out, op, op.name in stubbed)
    if any(op.benchmark is None and op.name in stubbed for op in ops):
        guesses.append(
            f"the ops whose bench is a stub ({STUB_MODULE}.py) are written with dtypes "
            f"{list(STUB_DTYPES)} and shapes {[list(s) for s in STUB_SHAPES]}: fill in each stub "
            "and the values it serves"
        )
    return Written(
        text="\n".join(out.lines) + "\n",
        gaps=tuple(out.gaps),
        guesses=tuple(guesses),
        benches=tuple((op.name, bench_for(op)) for op in ops),
    )


def bench_for(op: Op) -> str:
    """The ``bench`` value written for ``op``; ``""`` when it has no benchmark."""
    b = op.benchmark
    return b.spec(_line(b, op.name, op.entries or (op.entry,))) if b else ""


def _kernel(out: _Lines, op: Op, stubbed: bool) -> None:
    out.add("[[kernels]]")
    out.key("name", op.name)
    languages = "+".join(op.languages)
    kernels = ", ".join(op.kernels[:MAX_LISTED]) + (
        f" and {len(op.kernels) - MAX_LISTED} more" if len(op.kernels) > MAX_LISTED else ""
    )
    out.add(f"# {languages}: {kernels}; called through {op.entry}()")
    b = op.benchmark
    if b is None and stubbed:
        out.key(
            "bench", f"{STUB_MODULE}:{stub_name(op)}", f"a stub calling {op.entry}(): fill it in"
        )
    elif b is None:
        out.gap(
            "bench", f"no benchmark calls {op.entry}(): write an entry point (docs/bench-entry.md)"
        )
    else:
        line = _line(b, op.name, op.entries or (op.entry,))
        rest = [v for v in b.lines if v != line]
        comment = f"{b.path}:{b.line}" + (f"; its other lines: {', '.join(rest)}" if rest else "")
        out.key("bench", bench_for(op), comment)
        for note in b.notes:
            out.add(f"# {b.name}: {note}")
    out.key("paths", list(op.paths))
    if b is None and stubbed:  # the stub builds its inputs from these: written, to be confirmed
        where = f"{STUB_MODULE}.{stub_name(op)}"
        out.key("dtypes", list(STUB_DTYPES), f"a guess: the dtypes {op.name} runs in ({where})")
        out.key("shapes", list(STUB_SHAPES), f"a guess: the shapes {op.name} serves ({where})")
        return
    _dtypes(out, op, b)
    _shapes(out, op, b)


def _line(b: FoundBenchmark, name: str, entries: tuple[str, ...] = ()) -> str | None:
    """The line to measure: the one whose branch calls the op, else one named like triton or the
    op, else the first."""
    if len(b.lines) < 2:
        return None if not b.lines else b.lines[0]
    calls = dict(b.line_calls)
    for value in b.lines:
        if set(entries) & calls.get(value, frozenset()):
            return value
    for wanted in ("triton", name):
        for value in b.lines:
            if wanted.lower() in value.lower():
                return value
    return b.lines[0]


def _dtypes(out: _Lines, op: Op, b: FoundBenchmark | None) -> None:
    dtypes = [d for d in (b.dtypes if b else ()) if d in DTYPES]
    if b is not None and b.form == "entry":
        out.gap("dtypes", f"{b.spec()} takes any dtype: fill in the dtypes {op.name} runs in")
        return
    if b is not None and not b.takes_dtype:
        dtypes = dtypes[:1]  # the benchmark picks its dtype itself: only that one can be measured
    if dtypes:
        fixed = (
            "" if b is None or b.takes_dtype else "the benchmark makes its tensors in this dtype"
        )
        out.key("dtypes", dtypes, fixed)
        return
    why = "no benchmark" if b is None else f"{b.name} names no dtype"
    out.gap("dtypes", f'{why}: fill in the dtypes {op.name} runs in, like ["float16"]')


def _shapes(out: _Lines, op: Op, b: FoundBenchmark | None) -> None:
    shapes = [list(s) for s in (b.shapes if b else ()) if 1 <= len(s) <= MAX_DIMS]
    if b is not None and b.form == "entry":
        out.gap("shapes", f"{b.spec()} takes any shape: fill in the shapes {op.name} serves")
        return
    if not shapes:
        why = "no benchmark" if b is None else f"could not read the shapes {b.name} sweeps"
        out.gap("shapes", f"{why}: fill in the shapes {op.name} serves, like [[4096], [1823, 781]]")
        return
    assert b is not None
    tensors = MATMUL_TENSORS if tuple(n.upper() for n in b.dims) == MATMUL_DIMS else None
    limit = Limits().max_elements_per_tensor

    def largest(shape: list[int]) -> int:
        if tensors is None:
            return math.prod(shape)
        return max(math.prod(shape[d] for d in t) for t in tensors)

    fitting = [s for s in shapes if largest(s) <= limit]
    notes = []
    if len(fitting) < len(shapes):
        notes.append(f"{len(shapes) - len(fitting)} over max_elements_per_tensor left out")
    if len(fitting) > MAX_SERVED:
        step = (len(fitting) - 1) / (MAX_SERVED - 1)
        notes.append(f"{MAX_SERVED} of the sweep's {len(fitting)}, evenly spread")
        fitting = [fitting[round(i * step)] for i in range(MAX_SERVED)]
    if not fitting:
        out.gap(
            "shapes",
            f"every shape {b.name} sweeps is over max_elements_per_tensor: fill in "
            f"the shapes {op.name} serves",
        )
        return
    dims = ", ".join(b.dims) or "?"
    source = f"the shapes {b.name} sweeps ({dims})" + (f"; {'; '.join(notes)}" if notes else "")
    out.key("shapes", fitting, source + "; keep the ones you serve")
    if tensors is not None:
        out.key("tensors", tensors, "A is M x K, B is K x N, C is M x N")
