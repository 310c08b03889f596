"""The default branch's history as something to look at: each kernel's and shape's time over
the scheduled runs, as a mermaid chart for the scheduled job's summary.

One chart per vendor, kernel and case (shape and dtype; a record written before cases were kept
gives the kernel's median over its served shapes): the pinned toolchain's median µs per run, a
bar where the time rose past the tolerance since the run before (a regression), and under the
chart the regressions and every run's commit as links. Pure: records in, markdown out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from bot.contracts.history import HistoryRecord
from bot.escape import md_code
from bot.review.chart import mermaid_numbers
from bot.words import number, percent, speed

MAX_POINTS = 30  # the most recent runs drawn per chart
MAX_CHARTS = 24  # charts in one summary: those with a regression first
MEDIAN = "median over its served shapes"


@dataclass(frozen=True)
class Point:
    """One run of one series."""

    date: str  # YYYY-MM-DD
    sha: str
    us: float
    would_regress: bool = False  # the newest release tried that night would regress the kernel


@dataclass(frozen=True)
class Series:
    vendor: str
    kernel: str
    case: str  # "1823x781 float16", or MEDIAN
    points: tuple[Point, ...]

    def regressions(self, tolerance: float) -> list[int]:
        """Indices of the runs whose time rose past ``tolerance`` over the run before."""
        p = self.points
        return [i for i in range(1, len(p)) if p[i].us > p[i - 1].us * (1 + tolerance)]


def trend_series(records: Iterable[HistoryRecord]) -> list[Series]:
    """Every (vendor, kernel, case) series of GPU-timed runs, oldest run first; a kernel's
    median where its records keep no cases."""
    points: dict[tuple[str, str, str], list[Point]] = {}
    for r in sorted(records, key=lambda r: r.date):
        if r.timing != "gpu":
            continue
        regressed = set(r.regressed)
        by_case = {(c.kernel, f"{'x'.join(map(str, c.shape))} {c.dtype}"): c.us for c in r.cases}
        with_cases = {k for k, _ in by_case}
        by_case |= {(k, MEDIAN): us for k, us in r.kernels.items() if k not in with_cases}
        for (kernel, case), us in by_case.items():
            point = Point(r.date[:10], r.sha, us, kernel in regressed)
            points.setdefault((r.vendor, kernel, case), []).append(point)
    return [Series(v, k, c, tuple(p)) for (v, k, c), p in sorted(points.items())]


def _label(text: str, limit: int) -> str:
    """Text a mermaid chart takes inside its quotes."""
    return re.sub(r"[^A-Za-z0-9_.,;:/ x-]", "", text)[:limit]


def chart(s: Series, tolerance: float) -> list[str]:
    """A mermaid line chart of one series, its regressions as bars."""
    points = s.points[-MAX_POINTS:]
    shown = Series(s.vendor, s.kernel, s.case, points)
    marked = set(shown.regressions(tolerance))
    values = [p.us for p in points]
    lo, hi = min(values), max(values)
    pad = max((hi - lo) * 0.1, hi * 0.02)
    title = f"{s.kernel} {s.case} on {s.vendor}: median us per run"
    out = [
        "```mermaid",
        "xychart-beta",
        f'    title "{_label(title + ("; a bar marks a regression" if marked else ""), 120)}"',
        "    x-axis ["
        + ", ".join(f'"{_label(p.date[5:], 5)} {_label(p.sha[:7], 7)}"' for p in points)
        + "]",
        f'    y-axis "us" {mermaid_numbers([max(0.0, lo - pad)])} --> {mermaid_numbers([hi + pad])}',
        f"    line [{mermaid_numbers(values)}]",
    ]
    if marked:
        bars = [p.us if i in marked else 0.0 for i, p in enumerate(points)]
        out.append(f"    bar [{mermaid_numbers(bars)}]")
    return [*out, "```"]


def _runs(points: Sequence[Point], link: Callable[[Point], str]) -> list[str]:
    """The runs by commit: consecutive nights at one commit as one date range and one link."""
    groups: list[list[Point]] = []
    for p in points:
        if groups and groups[-1][-1].sha == p.sha:
            groups[-1].append(p)
        else:
            groups.append([p])
    return [f"{g[0].date}{f' to {g[-1].date}' if len(g) > 1 else ''} {link(g[0])}" for g in groups]


def trend_summary(
    records: Sequence[HistoryRecord],
    *,
    commit_url: Callable[[str], str],
    tolerance: float,
    max_charts: int = MAX_CHARTS,
) -> str:
    """The job summary's section: a chart per series (those with a regression first), each
    with its regressions and runs linked to their commits; "" without GPU-timed runs."""
    series = trend_series(records)
    if not series:
        return ""

    def link(p: Point) -> str:
        return f"[{md_code(p.sha[:7])}]({commit_url(p.sha)})"

    ranked = sorted(series, key=lambda s: not s.regressions(tolerance))
    out = [
        "## The default branch over time",
        "",
        f"Median time per scheduled run under the pinned toolchain; a regression is a run "
        f"{percent(tolerance)} or more slower than the run before (the policy's tolerance).",
        "",
    ]
    for s in ranked[:max_charts]:
        out += [f"### {md_code(s.kernel)} {s.case} on {s.vendor}", "", *chart(s, tolerance), ""]
        for i in s.regressions(tolerance):
            before, at = s.points[i - 1], s.points[i]
            out.append(
                f"- **regression** {at.date} at {link(at)}: {number(before.us, 2)} → "
                f"{number(at.us, 2)} µs, {speed(at.us / before.us)} than at {link(before)}"
            )
        warned = [p for p in s.points if p.would_regress]
        if warned:
            out.append(
                "- the newest release would regress it on "
                + ", ".join(f"{p.date} ({link(p)})" for p in warned[-5:])
            )
        out += ["- runs: " + " · ".join(_runs(s.points[-MAX_POINTS:], link)), ""]
    if len(ranked) > max_charts:
        out.append(
            f"{len(ranked) - max_charts} more series without a regression are not drawn; "
            "history.jsonl on the history branch has every run."
        )
    return "\n".join(out).rstrip() + "\n"
