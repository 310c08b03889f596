"""The default branch's trend, drawn from a recorded history (tests/data/history/: the H200
results of the fixture review laid out as nights before and after the rewrite merged)."""

from __future__ import annotations

import re

import pytest

from bot.contracts.history import HistoryCase, HistoryRecord
from bot.jobs.scheduled import read_history
from bot.review.trend import MEDIAN, trend_series, trend_summary
from bot.words import speed
from tests.paths import DATA

HISTORY = read_history((DATA / "history" / "history.jsonl").read_text())
URL = "https://github.com/octo/kernels/commit/"


def _series(kernel: str, case: str):
    [s] = [s for s in trend_series(HISTORY) if (s.kernel, s.case) == (kernel, case)]
    return s


def _case_times(kernel: str, shape: tuple[int, ...], dtype: str) -> list[float]:
    return [
        c.us
        for r in sorted(HISTORY, key=lambda r: r.date)
        if r.timing == "gpu"
        for c in r.cases
        if (c.kernel, c.shape, c.dtype) == (kernel, shape, dtype)
    ]


def test_one_series_per_kernel_and_case_from_gpu_runs_only():
    series = trend_series(HISTORY)
    cases = {(s.kernel, s.case) for s in series}
    assert ("vector_add", "1000003 bfloat16") in cases and ("softmax", "1823x781 float16") in cases
    s = _series("vector_add", "1000003 bfloat16")
    assert [p.us for p in s.points] == _case_times("vector_add", (1000003,), "bfloat16")
    assert len(s.points) == 6  # the CPU-timed night is left out
    # the record written before cases were kept still shows, as the kernel's median
    assert [p.date for p in _series("softmax", MEDIAN).points] == ["2026-11-01"]


def test_a_rise_past_the_tolerance_is_a_regression_at_the_commit_that_made_it():
    s = _series("vector_add", "1000003 bfloat16")
    [i] = s.regressions(0.03)
    assert s.points[i].sha != s.points[i - 1].sha  # the night the rewrite merged
    assert s.points[i].us / s.points[i - 1].us > 1.5
    softmax = _series("softmax", "1823x781 float16")
    rise = softmax.points[3].us / softmax.points[2].us
    assert 1.03 < rise < 1.10
    assert softmax.regressions(0.03) == [3] and softmax.regressions(0.10) == []
    assert _series("vector_add", "16777216 float32").regressions(0.03) == []  # it got faster


def test_the_summary_draws_each_series_marks_regressions_and_links_commits():
    text = trend_summary(HISTORY, commit_url=lambda sha: URL + sha, tolerance=0.03)
    charts = re.findall(r"```mermaid\n(.*?)```", text, flags=re.S)
    assert len(charts) == len(trend_series(HISTORY))
    headings = re.findall(r"^### `(\w+)` (.+) on nvidia$", text, flags=re.M)
    # the series with a regression come first
    assert set(headings[:2]) == {("vector_add", "1000003 bfloat16"), ("softmax", "1823x781 float16")}  # fmt: skip
    vec = charts[[h[:2] for h in headings].index(("vector_add", "1000003 bfloat16"))]
    assert "xychart-beta" in vec and '"11-05 ' in vec
    times = _case_times("vector_add", (1000003,), "bfloat16")
    line = re.search(r"line \[(.*)\]", vec).group(1).split(", ")
    assert [float(v) for v in line] == pytest.approx(times, abs=1e-3)
    bar = re.search(r"bar \[(.*)\]", vec).group(1).split(", ")
    assert [float(v) for v in bar] == pytest.approx([0, 0, 0, times[3], 0, 0], abs=1e-3)
    head = _series("vector_add", "1000003 bfloat16").points[3].sha
    assert f"- **regression** 2026-11-05 at [`{head[:7]}`]({URL}{head})" in text
    assert f"µs, {speed(times[3] / times[2])} than at" in text
    for sha in {r.sha for r in HISTORY}:
        assert f"({URL}{sha})" in text  # every run's commit is linked
    charts_without = [c for c in charts if "bar [" not in c]
    assert len(charts_without) == len(charts) - 2


def test_a_summary_is_bounded_and_says_what_it_left_out():
    text = trend_summary(HISTORY, commit_url=lambda sha: URL + sha, tolerance=0.03, max_charts=2)
    assert text.count("```mermaid") == 2
    left = len(trend_series(HISTORY)) - 2
    assert f"{left} more series without a regression are not drawn" in text
    assert trend_summary([], commit_url=str, tolerance=0.03) == ""


def slow_history() -> list[HistoryRecord]:
    """Two nights of a call past a second (over a million µs), the second a regression."""
    return [
        HistoryRecord(
            date=f"2026-11-0{night}T03:17:00+00:00",
            sha=sha * 40,
            vendor="nvidia",
            timing="gpu",
            cases=(HistoryCase(kernel="matmul", shape=(32768,) * 3, dtype="float32", us=us),),
        )
        for night, sha, us in ((1, "a", 1.5e6), (2, "b", 2.4e6))
    ]


def test_a_call_past_a_million_microseconds_is_drawn_in_plain_numbers():
    # the words say 2.4×10^6 µs; mermaid reads only plain numbers, and refused the whole chart
    text = trend_summary(slow_history(), commit_url=lambda sha: URL + sha, tolerance=0.03)
    [source] = re.findall(r"```mermaid\n(.*?)```", text, flags=re.S)
    axis = re.search(r'y-axis "us" (\S+) --> (\S+)$', source, flags=re.M)
    line = re.search(r"line \[(.*)\]", source).group(1).split(", ")
    bar = re.search(r"bar \[(.*)\]", source).group(1).split(", ")
    for value in [*axis.groups(), *line, *bar]:
        assert re.fullmatch(r"\d+(\.\d+)?", value), (value, source)
    assert [float(v) for v in line] == [1.5e6, 2.4e6] and float(bar[1]) == 2.4e6
    assert float(axis.group(1)) < 1.5e6 < 2.4e6 < float(axis.group(2))
