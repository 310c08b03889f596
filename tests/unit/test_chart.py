"""The sweep's charts (bot.review.chart): what a mermaid xychart needs to draw them as meant, the
chart read back for a terminal, and the comment's size with them (the first screen and the
whole, on every golden comment with results)."""

from __future__ import annotations

import re

import pytest

from bot.contracts.evidence import ShapeLine
from bot.review import chart
from tests.golden_util import GOLDEN

FIRST_SCREEN = 1600  # bytes of markdown before the first folded section (about 1.5 KB)
WHOLE = 10 * 1024  # bytes of a whole comment with GPU results, up to three kernels
# the fixture's pull request, reviewed on its H200 results (tests/integration/test_demo.py:
# 52 shapes, all five conditions open, a toolchain pin and a finding) is held to WHOLE too;
# 26.7 KB, then 18.3 KB, before its long lists moved to the job summary


def _line(shape: tuple[int, ...], ratio: float, **kw) -> ShapeLine:
    kw.setdefault("tolerance", 0.03)
    kw.setdefault("dtype", "float16")
    return ShapeLine(kernel="softmax", shape=shape, verdict="SAME", ratio=ratio, **kw)


def _series(source: list[str]) -> dict[str, list[list[float]]]:
    out: dict[str, list[list[float]]] = {"bar": [], "line": []}
    for text in source:
        m = re.match(r"\s*(bar|line) \[(.*)\]$", text)
        if m:
            out[m.group(1)].append([float(v) for v in m.group(2).split(", ")])
    return out


def _y_range(source: list[str]) -> tuple[float, float]:
    (axis,) = [x for x in source if "y-axis" in x]
    low, high = re.findall(r"(-?[0-9.]+) --> (-?[0-9.]+)", axis)[0]
    return float(low), float(high)


def test_a_chart_has_a_bar_per_shape_the_band_and_the_price_inside_its_axis() -> None:
    shapes = [_line((n, 781), r) for n, r in ((1, 0.93), (1823, 1.061), (4096, 1.01))]
    source = chart.mermaid("softmax", "NVIDIA H200", shapes, 0.08)
    assert source[0] == "```mermaid" and source[-1] == "```"
    assert "xychart-beta" in source
    (axis,) = [x for x in source if "x-axis" in x]
    assert re.findall(r'"([^"]*)"', axis) == ["1x781 f16", "1823x781 f16", "4096x781 f16"]
    series = _series(source)
    assert series["bar"] == [[0.93, 1.061, 1.01]]
    # the band's two edges, then the price, one value per shape each
    assert series["line"] == [[1.03] * 3, [0.971] * 3, [1.08] * 3]
    low, high = _y_range(source)
    assert low < 0.93 and high > 1.08
    # no colour is set (GitHub documents none for a diagram's own configuration): the legend
    # names each line by the value it is drawn at
    assert "---" not in source and not any("Color" in x or "init" in x for x in source)
    assert chart.legend(shapes, 0.08) == (
        "Bars: head / base per shape, above 1 slower; lines: the 3% tolerance band "
        "(1.03, 0.971), the 8% rewrite price (1.08)."
    )


def test_a_chart_without_a_price_or_a_common_tolerance_draws_only_what_it_has() -> None:
    shapes = [_line((1, 781), 1.0, tolerance=0.03), _line((2, 781), 1.2, tolerance=0.05)]
    source = chart.mermaid("softmax", "H200", shapes, None)
    assert _series(source) == {"bar": [[1.0, 1.2]], "line": []}
    assert chart.legend(shapes, None) == "Bars: head / base per shape, above 1 slower."
    assert (
        chart.mermaid(
            "softmax", "H200", [_line((1,), 1.0).model_copy(update={"ratio": None})], None
        )
        == []
    )


def test_a_chart_keeps_its_syntax_whatever_the_names_and_cuts_wild_bars() -> None:
    shapes = [_line((1,), 40.0), _line((2,), 0.001), _line((3,), 1.0, dtype='f"16]')]
    source = chart.mermaid('soft"max [x], y', 'GPU "one"\nx', shapes, None)
    title = next(x for x in source if x.strip().startswith("title"))
    assert title.count('"') == 2 and "[" not in title and "\n" not in title
    assert "bars cut at 10x" in title
    (axis,) = [x for x in source if "x-axis" in x]
    assert axis.count('"') == 6 and '"3 f16"' in axis
    assert _series(source)["bar"] == [[10.0, 0.1, 1.0]]


def test_past_the_limit_a_chart_keeps_the_shapes_furthest_from_one_in_order() -> None:
    shapes = [_line((i + 1,), 1.0 + 0.001 * i) for i in range(chart.LIMIT + 5)]
    drawn, total = chart.chart_shapes(shapes)
    assert total == chart.LIMIT + 5 and len(drawn) == chart.LIMIT
    assert drawn == shapes[5:]  # the five closest to 1.0 left out, the order kept
    # every shape held: the legend says which were left out, and claims no shape that did not
    assert f"({chart.LIMIT} of its {total} shapes, the furthest from 1)" in chart.legend(
        shapes, None
    )
    # a shape that did not hold is drawn before any that held, however close to 1
    slower = _line((99,), 1.0001).model_copy(update={"verdict": "SLOWER"})
    drawn, _ = chart.chart_shapes([*shapes, slower], limit=3)
    assert drawn == [shapes[-2], shapes[-1], slower]
    assert "(3 of its 30 shapes: the 1 that did not hold, then the furthest from 1)" in (
        chart.legend([*shapes, slower], None, limit=3)
    )
    assert "(3 of its 29 shapes: the 3 that did not hold)" in chart.legend(
        [*[x.model_copy(update={"verdict": "SLOWER"}) for x in shapes[:3]], *shapes[3:]],
        None,
        limit=3,
    )
    # more that did not hold than bars: those of them furthest from 1
    worse = [x.model_copy(update={"verdict": "SLOWER"}) for x in shapes[:5]]
    assert "(3 of its 29 shapes: of the 5 that did not hold, the furthest from 1)" in (
        chart.legend([*worse, *shapes[5:]], None, limit=3)
    )


def test_a_chart_read_back_is_what_was_drawn() -> None:
    shapes = [_line((n, 781), r) for n, r in ((1, 0.93), (1823, 1.061))]
    source = chart.mermaid("softmax", "NVIDIA H200", shapes, 0.08)
    read = chart.read(source[1:-1])
    assert read == chart.Chart(
        title="softmax on NVIDIA H200: head / base",
        cases=("1x781 f16", "1823x781 f16"),
        ratios=(0.93, 1.061),
        band=(0.971, 1.03),
        price=1.08,
    )
    no_price = chart.read(chart.mermaid("softmax", "H200", shapes, None)[1:-1])
    assert no_price is not None and no_price.price is None and no_price.band == (0.971, 1.03)
    # a chart of another shape is not guessed at
    assert chart.read(["xychart-beta", '  x-axis ["a", "b"]', "  bar [1, 2, 3]"]) is None
    assert chart.read(["pie", '  "a" : 1']) is None


def _with_results() -> list[str]:
    """The golden comments with GPU results (the job summary, which opens everything, is not a
    comment)."""
    return sorted(
        p.name
        for p in GOLDEN.glob("*.md")
        if "xychart-beta" in p.read_text(encoding="utf-8") and not p.name.startswith("summary_")
    )


@pytest.mark.parametrize("name", _with_results())
def test_the_first_screen_and_the_whole_comment_stay_short(name: str) -> None:
    """A comment with GPU results: the verdict, the conditions and the worst shapes in the
    first screen, the rest folded; the whole within ``WHOLE`` for up to three kernels."""
    text = (GOLDEN / name).read_text(encoding="utf-8")
    first = text.split("<details>")[0]
    assert "Kernel review:" in first and "**Shape sweep**" in first
    assert len(first.encode()) <= FIRST_SCREEN, f"{name}: first screen {len(first.encode())} B"
    assert len(text.encode()) <= WHOLE, f"{name}: {len(text.encode())} B"
    assert text.rstrip().endswith("</details>")  # nothing after the folded sections


def test_the_size_limits_are_measured_on_a_three_kernel_comment() -> None:
    names = _with_results()
    assert "trade_three_kernels.md" in names
    assert "review_fixture_h200.md" in names  # the heaviest: real H200 results, 52 shapes
    text = (GOLDEN / "trade_three_kernels.md").read_text(encoding="utf-8")
    kernels = re.findall(r'title "(\w+) on ', text)
    assert kernels == ["softmax", "matmul", "rmsnorm"]


def test_a_run_of_charts_says_what_the_bars_are_once() -> None:
    shapes = [_line((i + 1,), 1.0) for i in range(3)]
    assert chart.legend(shapes, None).startswith("Bars: head / base per shape, above 1 slower;")
    assert chart.legend(shapes, 0.06, first=False) == (
        "Bars as above; lines: the 3% tolerance band (1.03, 0.971), the 6% rewrite price (1.06)."
    )


@pytest.mark.parametrize("name", _with_results())
def test_the_first_screen_names_each_worst_shape_once(name: str) -> None:
    """The sweep's line counts the shapes and the worst shapes name them: before, a rewrite over
    its price named the same shapes in both ("softmax over its 8% rewrite price at 1x781
    float16 (31.0% slower) and ..." above "- softmax 1x781 f16: 31.0% slower ...")."""
    first = (GOLDEN / name).read_text(encoding="utf-8").split("<details>")[0]
    worst = re.findall(r"^- \S+ (\d+(?:x\d+)*) ", first, re.M)
    for shape in worst:  # a shape is named with its dtype: "7 f32", "1x781 float16"
        named = rf"(?<![\dx]){shape}(?![\dx]) [a-z]+\d+"  # not a count: "its 7 shapes"
        assert len(re.findall(named, first)) == 1, (name, shape)


def test_a_shape_the_sweep_added_is_marked_in_the_chart_and_its_legend() -> None:
    """The table marks a shape the planner added (not one the policy serves) with a dagger; the
    chart drew it like a served one, so a reader of the chart alone took a 7x13x29 bar 51%
    slower for a served shape's regression."""
    served = _line((1024, 1024), 0.91)
    added = _line((7, 13), 1.51, small_or_ragged=True)
    source = chart.mermaid("matmul", "NVIDIA H200", [added, served], None)
    (axis,) = [x for x in source if "x-axis" in x]
    assert re.findall(r'"([^"]*)"', axis) == ["7x13† f16", "1024x1024 f16"]
    assert chart.legend([added, served], None) == (
        "Bars: head / base per shape, above 1 slower, † added by the sweep, not served; "
        "lines: the 3% tolerance band (1.03, 0.971)."
    )
    # a later chart of the run says it only where no chart before it did
    assert chart.legend([added, served], 0.06, first=False).startswith(
        "Bars as above, † added by the sweep, not served; lines:"
    )
    assert chart.legend([added, served], 0.06, first=False, marked=True).startswith(
        "Bars as above; lines:"
    )
    # a chart of served shapes only says nothing of added ones
    assert "†" not in chart.legend([served], None)
    assert "†" not in "".join(chart.mermaid("matmul", "H200", [served], None))
    # past the limit, the mark is explained only where a drawn bar carries it
    many = [_line((i + 100,), 1.2) for i in range(chart.LIMIT)]
    near = added.model_copy(update={"ratio": 1.01})
    assert "†" not in chart.legend([near, *many], None)
    assert f"({chart.LIMIT} of its {chart.LIMIT + 1} shapes, the furthest from 1), †" in (
        chart.legend([added, *many], None)
    )
    # read back for a terminal, the mark stays on its case and the key explains it
    read, plain = (
        chart.read(chart.mermaid("matmul", "H200", x, None)[1:-1])
        for x in ([added, served], [served])
    )
    assert read is not None and plain is not None
    text = chart.text_bars(read)
    assert "† added, not served" in text[1] and text[2].startswith("7x13† f16")
    assert "†" not in chart.text_bars(plain)[1]
