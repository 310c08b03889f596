"""The sweep as a chart: one mermaid ``xychart-beta`` per kernel and vendor, GitHub draws it in
the comment, and the same chart read back as text for a terminal. Pure.

A chart has, in this order: a bar per timed shape (head time / base time, cut at ``CUT`` either
way), two lines for the tolerance band (``1 + tolerance`` and ``1 / (1 + tolerance)``) where the
shapes carry their tolerance, and a line at ``1 + price`` where the kernel is a rewrite judged
at its rewrite price. xychart has no legend, so the sentence above the chart says which line is
which by its value (``legend``): every line is level, so its height names it. A shape the sweep
added (small or ragged, not one the policy serves) carries ``ADDED`` in its label, as in the
table, and the sentence above the first chart of a run with such a bar says what it means. No
colours are set: GitHub documents no support for a diagram's own configuration (front matter or
``%%{init}%%``) and draws in its own light or dark theme, and a notification e-mail or the
mobile app shows the source, so nothing may rest on a colour. Syntax:
https://mermaid.js.org/syntax/xyChart.html (checked by mermaid's own parser in
tests/integration/test_mermaid_charts.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.contracts.evidence import FAILED_VERDICTS, ShapeLine
from bot.words import number, percent, speed

CUT = 10.0  # a bar past 10x (or under 1/10) is drawn at that bound, and the title says so
LIMIT = 24  # bars per chart; past it, the shapes furthest from 1.0
SHORT = 6  # bars per chart in the comment, whose job summary has the chart at ``LIMIT``
HELD = ("SAME", "FASTER")  # verdicts of a shape that held
ADDED = "†"  # marks a shape the sweep added (small or ragged), not one the policy serves
ADDED_WORDS = f"{ADDED} a small or ragged shape the sweep added, not one the policy serves"
ADDED_KEY = f"{ADDED} added by the sweep, not served"  # the chart's shorter words for it
DTYPE_SHORT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64"}


def dtype_short(dtype: str) -> str:
    return DTYPE_SHORT.get(dtype, dtype)


def _label(x: ShapeLine) -> str:
    """A shape's label on the x axis: its size (marked when the sweep added it) and dtype,
    nothing mermaid would read as syntax."""
    dtype = re.sub(r"[^A-Za-z0-9]", "", dtype_short(x.dtype))[:8]
    added = ADDED if x.small_or_ragged else ""
    return f'"{"x".join(map(str, x.shape))}{added} {dtype}"'


def mermaid_numbers(values: Sequence[float]) -> str:
    """Numbers as a mermaid chart reads them: plain decimals of at most three places (never the
    power of ten ``number`` writes past a million, which mermaid refuses with the whole chart)."""
    return ", ".join(f"{v:.3f}".rstrip("0").rstrip(".") for v in values)


def chart_shapes(shapes: Sequence[ShapeLine], limit: int = LIMIT) -> tuple[list[ShapeLine], int]:
    """The shapes a chart draws, timed and not failed (at most ``limit``: those that did not
    hold, then those furthest from 1.0, in the order given), and how many there were: a wrong
    result's time says nothing."""
    timed = [
        x
        for x in shapes
        if x.ratio is not None and x.ratio > 0 and x.verdict not in FAILED_VERDICTS
    ]
    if len(timed) <= limit:
        return timed, len(timed)
    keep = sorted(timed, key=lambda x: (x.verdict in HELD, -abs(math.log(x.ratio or 1.0))))
    keep = keep[:limit]
    kept = {id(x) for x in keep}
    return [x for x in timed if id(x) in kept], len(timed)


def _tolerance(shapes: Sequence[ShapeLine]) -> float | None:
    """The tolerance the shapes were judged at, where they all carry the same one."""
    found = {x.tolerance for x in shapes}
    return found.pop() if len(found) == 1 and None not in found else None


def legend(
    shapes: Sequence[ShapeLine],
    price: float | None,
    limit: int = LIMIT,
    *,
    first: bool = True,
    marked: bool = False,
) -> str:
    """The sentence above a chart: what the bars are (said in full over the ``first`` chart of
    a run of them), what the mark of an added shape means where a bar carries it and no chart
    before it in the run said so (``marked``), and each line by the value it is at."""
    drawn, total = chart_shapes(shapes, limit)
    text = "Bars: head / base per shape, above 1 slower" if first else "Bars as above"
    if total > len(drawn):
        missed = sum(
            1
            for x in shapes
            if x.ratio is not None and x.ratio > 0 and x.verdict not in (*HELD, *FAILED_VERDICTS)
        )
        which = (
            ", the furthest from 1"
            if not missed
            else f": the {missed} that did not hold, then the furthest from 1"
            if missed < len(drawn)
            else f": the {missed} that did not hold"
            if missed == len(drawn)
            else f": of the {missed} that did not hold, the furthest from 1"
        )
        text += f" ({len(drawn)} of its {total} shapes{which})"
    if not marked and any(x.small_or_ragged for x in drawn):
        text += f", {ADDED_KEY}"
    lines = []
    tolerance = _tolerance(drawn)
    if tolerance is not None:
        low, high = (mermaid_numbers([v]) for v in _band(tolerance))
        lines.append(f"the {percent(tolerance)} tolerance band ({high}, {low})")
    if price is not None:
        lines.append(f"the {percent(price)} rewrite price ({mermaid_numbers([1.0 + price])})")
    return text + (f"; lines: {', '.join(lines)}" if lines else "") + "."


def _band(tolerance: float) -> tuple[float, float]:
    """The tolerance band's edges, as the chart draws them: faster and slower by it."""
    return 1.0 / (1.0 + tolerance), 1.0 + tolerance


def mermaid(
    kernel: str, where: str, shapes: Sequence[ShapeLine], price: float | None, limit: int = LIMIT
) -> list[str]:
    """The chart of one kernel's ``shapes`` on one GPU (``where``), as the lines of a fenced
    mermaid block, at most ``limit`` bars; none when nothing was timed."""
    drawn, _ = chart_shapes(shapes, limit)
    if not drawn:
        return []
    raw = [x.ratio or 1.0 for x in drawn]
    bars = [min(max(r, 1.0 / CUT), CUT) for r in raw]
    tolerance = _tolerance(drawn)
    lines: list[list[float]] = []
    if tolerance is not None:
        low, high = _band(tolerance)
        lines += [[high] * len(drawn), [low] * len(drawn)]
    if price is not None:
        lines.append([1.0 + price] * len(drawn))
    every = [*bars, *(v for line in lines for v in line)]
    low, high = min(0.9, *every) - 0.02, max(1.1, *every) + 0.02
    name = re.sub(r"[^A-Za-z0-9_.-]", "", kernel)[:24] or "kernel"
    place = re.sub(r"[^A-Za-z0-9 _.()-]", "", where)[:40]  # nothing to end a quote or fence
    cut = f", bars cut at {CUT:g}x" if bars != raw else ""
    return [
        "```mermaid",
        "xychart-beta",
        f'    title "{name} on {place}: head / base{cut}"',
        f"    x-axis [{', '.join(_label(x) for x in drawn)}]",
        f'    y-axis "head / base" {number(low, 2)} --> {number(high, 2)}',
        f"    bar [{mermaid_numbers(bars)}]",
        *(f"    line [{mermaid_numbers(line)}]" for line in lines),
        "```",
    ]


@dataclass(frozen=True)
class Chart:
    """A chart as ``mermaid`` wrote it, read back: its title, each case and its ratio, and the
    lines (the tolerance band's two, then the price's) as one value each."""

    title: str
    cases: tuple[str, ...]
    ratios: tuple[float, ...]
    band: tuple[float, float] | None
    price: float | None


_QUOTED = re.compile(r'"([^"]*)"')
_SERIES = re.compile(r"^\s*(bar|line)\s*\[(.*)\]\s*$")


def read(source: Sequence[str]) -> Chart | None:
    """The chart in the lines of a mermaid block (fences excluded) as ``mermaid`` writes it;
    None for anything else."""
    title, cases = "", []
    bars: list[list[float]] = []
    lines: list[list[float]] = []
    for text in source:
        text = text.strip()
        if text.startswith("title"):
            found = _QUOTED.search(text)
            title = found.group(1) if found else ""
        elif text.startswith("x-axis"):
            cases = _QUOTED.findall(text)
        elif m := _SERIES.match(text):
            try:
                values = [float(v) for v in m.group(2).split(",")]
            except ValueError:
                return None
            if len(values) != len(cases):
                return None
            (bars if m.group(1) == "bar" else lines).append(values)
    if not cases or len(bars) != 1 or len(lines) > 3:
        return None
    band = (
        (min(lines[0][0], lines[1][0]), max(lines[0][0], lines[1][0])) if len(lines) >= 2 else None
    )
    price = lines[-1][0] if len(lines) in (1, 3) else None
    return Chart(title, tuple(cases), tuple(bars[0]), band, price)


WIDTH = 16  # columns of a text bar on each side of 1.0
ZOOM = 2.5  # a text bar's half width is this many times the furthest line from 1.0


def text_bars(chart: Chart) -> list[str]:
    """The chart for a terminal: a line per case with a bar from 1.0 (``|``) to its ratio, to the
    right when slower, the tolerance band's edges as ``:`` and the rewrite price as ``!``, then
    the ratio in words. The scale shows the lines clearly: a bar past its edge ends in ``«`` or
    ``»``."""
    marks = [*(chart.band or ()), *([chart.price] if chart.price else [])]
    reach = max(0.1, ZOOM * max((abs(m - 1.0) for m in marks), default=0.0))

    def column(r: float) -> int:
        return WIDTH + max(-WIDTH, min(WIDTH, round((r - 1.0) / reach * WIDTH)))

    width = max(len(c) for c in chart.cases)
    key = ["| as fast"]
    if any(ADDED in c for c in chart.cases):
        key.append(f"{ADDED} added, not served")
    if chart.band:
        key.append(f": the {percent(chart.band[1] - 1.0)} tolerance band")
    if chart.price:
        key.append(f"! the {percent(chart.price - 1.0)} rewrite price")
    head = f"{'':{width}}  {'faster':<{WIDTH}}{'slower':>{WIDTH + 1}}"
    out = [chart.title, f"{head}  ({', '.join(key)})"]
    for case, ratio in zip(chart.cases, chart.ratios, strict=True):
        cells = [" "] * (2 * WIDTH + 1)
        start, end = sorted((WIDTH, column(ratio)))
        for i in range(start, end + 1):
            cells[i] = "█"
        if abs(ratio - 1.0) > reach:
            cells[end if ratio > 1.0 else start] = "»" if ratio > 1.0 else "«"
        for edge in chart.band or ():
            cells[column(edge)] = ":" if cells[column(edge)] == " " else cells[column(edge)]
        if chart.price and cells[column(chart.price)] == " ":
            cells[column(chart.price)] = "!"
        cells[WIDTH] = "|"
        words = f"{CUT:g}x slower or more" if ratio >= CUT else speed(ratio)
        words = f"{CUT:g}x faster or more" if ratio <= 1.0 / CUT else words
        out.append(f"{case:<{width}}  {''.join(cells)}  {words}")
    return out
