"""Why a kernel is slower: a pattern over its slow shapes, joined with the compiler report. Pure.

One line per kernel and vendor with a shape slower than tolerance. The line says how many shapes
are slower and by how much, and, where one exists, the pattern they share: a class of shapes
(sizes not divisible by 16 or divisible by 16, the added small and ragged shapes or the served
ones, the smallest or the largest sizes), within one dtype or across all, such that every timed
shape of the class is slower and no other shape of the same dtype (or of the kernel) is. A
class of sizes may hold one shape that is not slower (``EXCEPTIONS``) where at least
``RUN_WITH_EXCEPTION`` of its shapes are, and the line names it: "slower at every size up to
1048576 except size 1 (2.3% slower, within tolerance); none slower from 4194304 up". A
pattern over divisibility is then joined with the compiler report: the head's variants that the
slow class's shapes compile to against those of the same dtype that divide by 16 (the arguments
their specializations mark ``/16``), and the first compiled fact that is worse in the slow ones:
narrower loads, spills, lower occupancy. Where no class fits, the line says so and claims
nothing; where the compiler report has no variant for the shapes, nothing is said about it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import accumulate

from bot.contracts.evidence import (
    Clause,
    CompilerEvidence,
    CompilerRow,
    ShapeLine,
    SweepEvidence,
)
from bot.words import number, slower_by, speed

ALIGN = 16  # Triton specializes integer arguments and pointers on divisibility by 16
MIN_CONTRAST = 2  # "only at X" needs at least this many timed shapes outside X, not slower
EXCEPTIONS = 1  # shapes of a class of sizes that may be not slower, each named
RUN_WITH_EXCEPTION = 4  # slow shapes a class of sizes needs before it may hold an exception
TIMED = ("SLOWER", "SAME", "FASTER", "INCONCLUSIVE")

Shape = tuple[tuple[int, ...], str]  # dims and dtype


def _ragged(dims: Sequence[int]) -> bool:
    """Some dimension not divisible by 16; a dimension of 1 beside others (one row, a batch of
    one) is not counted: Triton fixes an argument of 1 instead of asking it to divide."""
    return any(d % ALIGN for d in dims if d != 1 or len(dims) == 1)


@dataclass(frozen=True)
class _Class:
    """A class of shapes: its test, its words and its complement's, and ``align`` when it is
    about divisibility by 16. ``subset`` classes may also be named when only some of their
    shapes are slow (a class of sizes may not: any run of sizes would be one)."""

    test: Callable[[ShapeLine], bool]
    noun: str  # "sizes not divisible by 16"
    other: str  # "size divisible by 16"
    align: bool | None = None  # True: divides by 16; False: does not; None: not about it
    subset: bool = True
    # a class of sizes: its bound (elements), and whether it holds the sizes up to it (else
    # from it up)
    bound: int | None = None
    upto: bool = True


_FIXED = (
    _Class(
        lambda x: _ragged(x.shape),
        f"sizes not divisible by {ALIGN}",
        f"size divisible by {ALIGN}",
        align=False,
    ),
    _Class(
        lambda x: not _ragged(x.shape),
        f"sizes divisible by {ALIGN}",
        f"size not divisible by {ALIGN}",
        align=True,
    ),
    _Class(lambda x: x.small_or_ragged, "added small and ragged shapes", "served shape"),
    _Class(lambda x: not x.small_or_ragged, "served shapes", "added small or ragged shape"),
)


def _size_at_most(size: int, x: ShapeLine) -> bool:
    return math.prod(x.shape) <= size


def _size_at_least(size: int, x: ShapeLine) -> bool:
    return math.prod(x.shape) >= size


def _classes(scope: Sequence[ShapeLine]) -> Iterator[tuple[_Class, int, int]]:
    """Each class over ``scope``, in the order they are tried, with how many of the scope's
    shapes it holds and how many of those are slow.

    Linear after one sort: there is a class of the smallest and one of the largest ``k`` sizes
    for every ``k`` below the number of sizes, so testing each against every shape was quadratic
    (4,000 shapes of their own sizes took 83 s); their counts come from running totals over the
    sorted sizes instead."""
    for cls in _FIXED:
        inside = [x for x in scope if cls.test(x)]
        yield cls, len(inside), sum(x.verdict == "SLOWER" for x in inside)
    per_size: dict[int, list[int]] = {}  # size: [shapes, slow shapes]
    for x in scope:
        counts = per_size.setdefault(math.prod(x.shape), [0, 0])
        counts[0] += 1
        counts[1] += x.verdict == "SLOWER"
    sizes = sorted(per_size)
    # shapes, and slow shapes, of size at most sizes[i]
    upto = list(accumulate(per_size[s][0] for s in sizes))
    slow_upto = list(accumulate(per_size[s][1] for s in sizes))
    total, total_slow = len(scope), sum(c[1] for c in per_size.values())
    for k in range(1, len(sizes)):
        small, large = sizes[k - 1], sizes[-k]
        few = "size" if k == 1 else f"{k} sizes"
        yield (
            _Class(
                partial(_size_at_most, small), f"the smallest {few}", "", subset=False, bound=small
            ),
            upto[k - 1],
            slow_upto[k - 1],
        )
        below = len(sizes) - k - 1  # the largest size under the class
        yield (
            _Class(
                partial(_size_at_least, large),
                f"the largest {few}",
                "",
                subset=False,
                bound=large,
                upto=False,
            ),
            total - upto[below],
            total_slow - slow_upto[below],
        )


@dataclass(frozen=True)
class Pattern:
    """The slow shapes of a scope (one dtype, or all when ``dtype`` is None) and the class that
    holds them all: ``exact`` when every timed shape of the class is slow; ``exceptions``: the
    class of sizes' shapes that are not, and ``beyond``: the size nearest it outside it."""

    dtype: str | None
    cls: _Class
    slow: tuple[ShapeLine, ...]
    inside: int  # timed shapes of the scope in the class
    exact: bool
    exceptions: tuple[ShapeLine, ...] = ()
    beyond: int | None = None

    def words(self) -> str:
        if self.exceptions and self.cls.bound is not None:
            but = ", ".join(_exception(x) for x in self.exceptions)
            if self.cls.upto:
                held = f"none slower from {self.beyond} up" if self.beyond else ""
                return f"at every size up to {self.cls.bound} except {but}; {held}".rstrip("; ")
            held = f"none slower up to {self.beyond}" if self.beyond else ""
            return f"at every size from {self.cls.bound} up except {but}; {held}".rstrip("; ")
        if self.exact:
            return f"only at {self.cls.noun}"
        return (
            f"at {len(self.slow)} of the {self.inside} {self.cls.noun} and at no {self.cls.other}"
        )


def _exception(x: ShapeLine) -> str:
    """A shape a class of sizes holds that is not slower, in words: "size 1 (2.3% slower,
    within tolerance)"."""
    said = [speed(x.ratio)] if x.ratio is not None else []
    said += {"SAME": ["within tolerance"], "INCONCLUSIVE": ["inconclusive"]}.get(x.verdict, [])
    shape = "x".join(map(str, x.shape))
    shape = f"size {shape}" if len(x.shape) == 1 else shape
    return f"{shape} ({', '.join(said)})" if said else shape


def find_pattern(shapes: Sequence[ShapeLine]) -> Pattern | None:
    """The class, within one dtype or across all, that holds every slow shape of its scope,
    with at least ``MIN_CONTRAST`` timed shapes of the scope outside it, none of them slow; a
    class of sizes with at least ``RUN_WITH_EXCEPTION`` slow shapes may hold ``EXCEPTIONS``
    that are not. Preferred: a class all of whose shapes are slow; then the one covering the
    most slow shapes; then the larger share of slow shapes inside; then across dtypes, then the
    earlier class."""
    timed = [x for x in shapes if x.verdict in TIMED and x.ratio is not None]
    best: Pattern | None = None

    def rank(p: Pattern) -> tuple[bool, int, float]:
        return (p.exact, len(p.slow), len(p.slow) / p.inside)

    per_dtype: dict[str, list[ShapeLine]] = {}
    for x in timed:
        per_dtype.setdefault(x.dtype, []).append(x)
    scopes = [(None, timed), *((d, per_dtype[d]) for d in sorted(per_dtype))]
    for dtype, scope in scopes:
        slow = tuple(x for x in scope if x.verdict == "SLOWER")
        if len(slow) < 2:
            continue
        for cls, inside, slow_inside in _classes(scope):
            if len(scope) - inside < MIN_CONTRAST or slow_inside < len(slow):
                continue  # too few shapes outside the class, or a slow one among them
            exact = slow_inside == inside
            excepted = not exact and not cls.subset
            if excepted and (inside - slow_inside > EXCEPTIONS or slow_inside < RUN_WITH_EXCEPTION):
                continue
            found = (
                _excepted(dtype, cls, slow, scope, inside)
                if excepted
                else Pattern(dtype, cls, slow, inside, exact)
            )
            if best is None or rank(found) > rank(best):
                best = found
    return best


def _excepted(
    dtype: str | None,
    cls: _Class,
    slow: tuple[ShapeLine, ...],
    scope: Sequence[ShapeLine],
    inside: int,
) -> Pattern:
    """A class of sizes that holds every slow shape and a few that are not: those named, and the
    size nearest it outside it (the first that is not slower beyond the run)."""
    exceptions = tuple(
        sorted(
            (x for x in scope if cls.test(x) and x.verdict != "SLOWER"),
            key=lambda x: math.prod(x.shape),
        )
    )
    outside = [math.prod(x.shape) for x in scope if not cls.test(x)]
    beyond = (min if cls.upto else max)(outside) if outside else None
    return Pattern(dtype, cls, slow, inside, False, exceptions, beyond)


def alike_in(slow: Sequence[ShapeLine]) -> tuple[str, ...]:
    """The dtypes, two or more, that are slow at exactly the same shapes; () otherwise."""
    per: dict[str, set[tuple[int, ...]]] = {}
    for x in slow:
        per.setdefault(x.dtype, set()).add(tuple(x.shape))
    sets = list(per.values())
    if len(sets) < 2 or any(s != sets[0] for s in sets):
        return ()
    return tuple(sorted(per))


def _parse(label: str) -> Shape | None:
    """``"1000003:bfloat16"`` or ``"1x4096x4096:float16"`` as dims and dtype."""
    m = re.fullmatch(r"(\d+(?:x\d+)*):(\w+)", label.strip())
    if not m:
        return None
    return tuple(int(d) for d in m.group(1).split("x")), m.group(2)


def _serving(rows: Sequence[CompilerRow], test: Callable[[Shape], bool]) -> list[CompilerRow]:
    return [
        r
        for r in rows
        if not r.error and any(p is not None and test(p) for p in map(_parse, r.shapes))
    ]


def _divisible_args(rows: Sequence[CompilerRow]) -> set[str]:
    """The arguments every row's specialization marks 16-byte divisible."""
    sets = [
        {p.split(":")[0].strip() for p in r.specialization.split(",") if p.strip().endswith("/16")}
        for r in rows
    ]
    return set.intersection(*sets) if sets else set()


def _occupancy(r: CompilerRow) -> float | None:
    """The variant's occupancy in whole percent, as the review says it."""
    f = r.occupancy_fraction
    return None if f is None else float(round(f * 100))


def compiler_difference(
    kernel: str, vendor: str, dtype: str | None, align: bool, ev: CompilerEvidence | None
) -> str:
    """What the head's variants for the slow class (divisible by 16 or not, as ``align``) do
    worse than those for the other class of the same dtype on this vendor's targets; "" when the
    compiler report has no such variants or they do not differ."""
    if ev is None:
        return ""
    rows = [r for r in ev.rows if r.kernel == kernel and r.side == "new" and r.vendor == vendor]

    def cls(want_align: bool) -> Callable[[Shape], bool]:
        return lambda s: (dtype is None or s[1] == dtype) and (not _ragged(s[0])) == want_align

    slow, other = _serving(rows, cls(align)), _serving(rows, cls(not align))
    if not slow or not other:
        return ""
    marked = " and ".join(sorted(_divisible_args(slow) ^ _divisible_args(other)))
    if marked:
        where = f"head's specialization for {marked} % 16 {'==' if align else '!='} 0"
        contrast = f"when {marked} % 16 {'!=' if align else '=='} 0"
    else:
        where = "head's variants for these sizes"
        contrast = "at sizes " + ("not divisible" if align else "divisible") + " by 16"
    for worse, measure in _FACTS:
        a = [v for v in map(measure, slow) if v is not None]
        b = [v for v in map(measure, other) if v is not None]
        said = worse(a, b) if a and b else None
        if said:
            return f"{where} {said[0]} ({said[1]} {contrast})"
    return ""


def _narrower_loads(a: list[float], b: list[float]) -> tuple[str, str] | None:
    return (
        (f"uses {number(min(a))}-bit loads", f"{number(min(b))}-bit") if max(a) < min(b) else None
    )


def _more_spills(a: list[float], b: list[float]) -> tuple[str, str] | None:
    return (f"spills {number(max(a))} bytes", f"{number(max(b))}") if min(a) > max(b) else None


def _lower_occupancy(a: list[float], b: list[float]) -> tuple[str, str] | None:
    return (
        (
            f"runs at {number(min(a), 1).removesuffix('.0')}% occupancy",
            f"{number(min(b), 1).removesuffix('.0')}%",
        )
        if max(a) < min(b)
        else None
    )


# (how the slow variants are worse, if they are; the number compared), in the order tried
_load_bits: Callable[[CompilerRow], float | None] = lambda r: r.load_bits_max  # noqa: E731
_spills: Callable[[CompilerRow], float | None] = lambda r: r.spill_bytes  # noqa: E731
_FACTS = ((_narrower_loads, _load_bits), (_more_spills, _spills), (_lower_occupancy, _occupancy))


def _by(xs: Sequence[ShapeLine]) -> str:
    ratios = [x.ratio for x in xs if x.ratio is not None]
    return slower_by(min(ratios), max(ratios)) if ratios else ""


def kernel_lines(sweep: SweepEvidence, compiler: CompilerEvidence | None = None) -> list[str]:
    """One line per kernel of ``sweep`` with a shape slower than tolerance."""
    out: list[str] = []
    per_kernel: dict[str, list[ShapeLine]] = {}
    for x in sweep.shapes:
        per_kernel.setdefault(x.kernel, []).append(x)
    for kernel, shapes in per_kernel.items():
        slow = [x for x in shapes if x.verdict == "SLOWER"]
        if not slow:
            continue
        timed = [x for x in shapes if x.verdict in TIMED]
        if len(slow) == 1:  # one shape makes no pattern: name it
            (x,) = slow
            shape = "x".join(map(str, x.shape))
            of = f"1 of {len(timed)} shapes" if len(timed) > 1 else "its one timed shape"
            out.append(f"{kernel}: {of} slower, {shape} {x.dtype} {_by(slow)}")
            continue
        line = f"{kernel}: {len(slow)} of {len(timed)} shapes slower {_by(slow)}"
        p = find_pattern(shapes)
        if p is None:
            out.append(f"{line}, with no pattern over size, alignment or dtype")
            continue
        alike = alike_in(p.slow) if p.dtype is None else ()
        text = f"{p.dtype} is slower" if p.dtype else "slower"
        text += f" {p.words()}" + (f", alike in {' and '.join(alike)}" if alike else "")
        if p.dtype and len(p.slow) < len(slow):
            text += f" ({len(p.slow)} shapes, {_by(p.slow)})"
        if p.exact and p.cls.align is not None:
            why = compiler_difference(kernel, sweep.vendor, p.dtype, p.cls.align, compiler)
            text += f": {why}" if why else ""
        explained = {id(x) for x in p.slow}
        rest = [x for x in slow if id(x) not in explained]
        if rest:
            other = "1 other shape" if len(rest) == 1 else f"{len(rest)} other shapes"
            text += f"; {other} slower {_by(rest)}, with no common pattern"
        out.append(f"{line}; {text}")
    return out


_STOPS = {  # why the sweep stopped, in the review's words; any other reason as the sweep said it
    "max_rounds": "it ran all {n} rounds without the interval getting narrow enough",
    "max_executions": "it ran all its executions (fresh processes, {n} rounds) without them agreeing",
    "time_budget": "its time budget ran out after {n} rounds, before the interval was narrow enough",
    "throttled": "it stopped after {n} rounds: the GPU was throttling",
    "stopped": "the sweep was stopped after {n} rounds, before its executions were done",
}


def inconclusive_reason(x: ShapeLine) -> str:
    """Why a shape was inconclusive, from its sweep detail's clauses, each thing said once: the
    stop in words unless the executions' spread says it, the likely cause left out where it is
    the autotuner's picks and those were already named, repeated clauses dropped."""
    clauses: dict[str, Clause] = {}
    for c in x.clauses:
        clauses.setdefault(c.text.strip(), c)
    clauses.pop("", None)
    named = any(c.kind == "picks_vary" for c in clauses.values())
    out = []
    for text, c in clauses.items():
        if c.kind == "stop":
            words = _STOPS.get(x.stop_reason)
            if not x.varied_between_processes:
                out.append(words.format(n=x.rounds) if words else text)
            continue
        if named and c.kind == "cause_picks":
            continue
        out.append(text)
    return "; ".join(out)
