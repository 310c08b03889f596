"""The sweep as a chart: one mermaid ``xychart-beta`` per kernel and vendor, GitHub draws it in
the comment, and the same chart read back as text for a terminal. Pure.

A chart has, in this order: a bar per timed shape (head time / base time, cut at ``CUT`` either
way), two lines for the tolerance band (``1 + tolerance`` and ``1 / (1 + tolerance)``) where the
shapes carry their tolerance, and a line at ``1 + price`` where the kernel is a rewrite judged
at its rewrite price. xychart has no legend, so the sentence above the chart says which line is
which (``legend``), and the colours are set in the chart's front matter: the bars blue, the band
grey, the price red. Syntax: https://mermaid.js.org/syntax/xyChart.html (checked by mermaid's
own parser in tests/integration/test_mermaid_charts.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.contracts.evidence import FAILED_VERDICTS, ShapeLine
from bot.review.words import number, percent, speed

CUT = 10.0  # a bar past 10x (or under 1/10) is drawn at that bound, and the title says so
LIMIT = 24  # bars per chart; past it, the shapes furthest from 1.0
BAR, BAND, PRICE = "#4e79a7", "#9e9e9e", "#e15759"
DTYPE_SHORT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64"}


def dtype_short(dtype: str) -> str:
    return DTYPE_SHORT.get(dtype, dtype)


def _label(x: ShapeLine) -> str:
    """A shape's label on the x axis: its size and dtype, nothing mermaid would read as syntax."""
    dtype = re.sub(r"[^A-Za-z0-9]", "", dtype_short(x.dtype))[:8]
    return f'"{"x".join(map(str, x.shape))} {dtype}"'


def _values(values: Sequence[float]) -> str:
    return ", ".join(number(v, 3).rstrip("0").rstrip(".") for v in values)


def chart_shapes(shapes: Sequence[ShapeLine]) -> tuple[list[ShapeLine], int]:
    """The shapes a chart draws, timed and not failed (at most ``LIMIT``: those furthest from
    1.0, in the order given), and how many there were: a wrong result's time says nothing."""
    timed = [
        x
        for x in shapes
        if x.ratio is not None and x.ratio > 0 and x.verdict not in FAILED_VERDICTS
    ]
    if len(timed) <= LIMIT:
        return timed, len(timed)
    keep = sorted(timed, key=lambda x: -abs(math.log(x.ratio or 1.0)))[:LIMIT]
    kept = {id(x) for x in keep}
    return [x for x in timed if id(x) in kept], len(timed)


def _tolerance(shapes: Sequence[ShapeLine]) -> float | None:
    """The tolerance the shapes were judged at, where they all carry the same one."""
    found = {x.tolerance for x in shapes}
    return found.pop() if len(found) == 1 and None not in found else None


def legend(shapes: Sequence[ShapeLine], price: float | None) -> str:
    """The sentence above a chart: what the bars and each line are."""
    drawn, total = chart_shapes(shapes)
    text = "Bars: head / base per shape, above 1 slower"
    if total > len(drawn):
        text += f" (the {len(drawn)} of {total} furthest from 1)"
    tolerance = _tolerance(drawn)
    if tolerance is not None:
        text += f"; grey: the {percent(tolerance)} tolerance band"
    if price is not None:
        text += f"; red: the {percent(price)} rewrite price"
    return text + "."


def mermaid(kernel: str, where: str, shapes: Sequence[ShapeLine], price: float | None) -> list[str]:
    """The chart of one kernel's ``shapes`` on one GPU (``where``), as the lines of a fenced
    mermaid block; none when nothing was timed."""
    drawn, _ = chart_shapes(shapes)
    if not drawn:
        return []
    raw = [x.ratio or 1.0 for x in drawn]
    bars = [min(max(r, 1.0 / CUT), CUT) for r in raw]
    tolerance = _tolerance(drawn)
    lines: list[list[float]] = []
    colours = [BAR]
    if tolerance is not None:
        lines += [[1.0 + tolerance] * len(drawn), [1.0 / (1.0 + tolerance)] * len(drawn)]
        colours += [BAND, BAND]
    if price is not None:
        lines.append([1.0 + price] * len(drawn))
        colours.append(PRICE)
    every = [*bars, *(v for line in lines for v in line)]
    low, high = min(0.9, *every) - 0.02, max(1.1, *every) + 0.02
    name = re.sub(r"[^A-Za-z0-9_.-]", "", kernel)[:24] or "kernel"
    place = re.sub(r"[^A-Za-z0-9 _.()-]", "", where)[:40]  # nothing to end a quote or fence
    cut = f", bars cut at {CUT:g}x" if bars != raw else ""
    return [
        "```mermaid",
        "---",
        "config:",
        "  themeVariables:",
        "    xyChart:",
        f'      plotColorPalette: "{", ".join(colours)}"',
        "---",
        "xychart-beta",
        f'    title "{name} on {place}: head / base{cut}"',
        f"    x-axis [{', '.join(_label(x) for x in drawn)}]",
        f'    y-axis "head / base" {number(low, 2)} --> {number(high, 2)}',
        f"    bar [{_values(bars)}]",
        *(f"    line [{_values(line)}]" for line in lines),
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
