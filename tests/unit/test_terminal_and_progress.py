"""The terminal rendering of a comment, and progress on stderr as a bar or as plain lines."""

from __future__ import annotations

import io
import re
import time

import pytest

from bot.escape import md_code, md_inline, md_text
from bot.outputs import columns
from bot.progress import Progress
from bot.review.terminal import terminal_text


def test_the_comments_escapes_are_undone_for_a_terminal() -> None:
    markdown = "\n".join(
        [
            "## ⛔ Kernel review: Request changes",
            "",
            "| kernel | note |",
            "|---|---|",
            f"| {md_inline('vector_add')} | {md_text('torch>=2.4 from `a|b` by @team')} |",
            f"| {md_inline('x')} | `a`<br>{md_code('b|c')} |",
            "",
            "<details>",
            "<summary>Not run</summary>",
            "",
            f"- {md_inline('sweep on <amd>: 1. no GPU')}",
            "",
            "</details>",
            "<sub>Reviewed **head**</sub>",
            "<!-- kernel-review:sticky -->",
        ]
    )
    text = terminal_text(markdown)
    title, rule = text.splitlines()[:2]
    assert title == "⛔ Kernel review: Request changes" and set(rule) == {"="}
    assert "vector_add  torch>=2.4 from a|b by @team" in text
    assert "x           a, b|c" in text
    assert "Not run\n-------" in text and "- sweep on <amd>: 1. no GPU" in text
    assert "Reviewed head" in text
    for raw in ("<details>", "<sub>", "<br>", "&gt;", "&#64;", "\\_", "\u200b", "**", "<!--"):
        assert raw not in text


def test_columns_never_cut_a_cell_and_align_numbers_right() -> None:
    rows = [["config", "regs"], ["BLOCK_M=128, BLOCK_N=256, num_warps=8", "7"], ["B=1", "168"]]
    lines = columns(rows, right=frozenset({1}))
    assert lines[2] == "BLOCK_M=128, BLOCK_N=256, num_warps=8     7"
    assert lines[3] == "B=1                                     168"


def test_progress_in_a_log_is_one_line_per_step(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KERNEL_REVIEW_PROGRESS", raising=False)
    out = io.StringIO()  # not a terminal
    with Progress("compiler report", 2, stream=out) as bar:
        bar.step("sm_90: compiled")
        bar.say("note: a line that stays")
        bar.step("::set-output name=x::y")
    assert out.getvalue().splitlines() == [
        "compiler report [1/2] sm_90: compiled",
        "note: a line that stays",
        "compiler report [2/2] :\u2060:set-output name=x::y",  # a log line issues no command
    ]


def test_progress_in_a_log_says_it_is_at_work_when_a_step_takes_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With ``quiet_s``, a log gets a line each ``quiet_s`` without one (a terminal's bar runs
    its clock); a step's line starts the wait again, and without ``quiet_s`` nothing comes."""
    monkeypatch.delenv("KERNEL_REVIEW_PROGRESS", raising=False)
    out, quiet = io.StringIO(), io.StringIO()
    with (
        Progress("compiler report", 6, stream=quiet) as silent,
        Progress("compiler report", 6, stream=out, quiet_s=0.1) as bar,
    ):
        deadline = time.monotonic() + 10
        while "still at work" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.02)
        bar.step("sm_90: compiled")
        silent.step("sm_90: compiled")
        while out.getvalue().count("still at work") < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
    lines = out.getvalue().splitlines()
    done = lines.index("compiler report [1/6] sm_90: compiled")
    before, after = lines[:done], lines[done + 1 :]
    assert before and after, lines
    assert all(
        re.fullmatch(r"compiler report \[0/6\] still at work after \d+ s", x) for x in before
    )
    assert all(re.fullmatch(r"compiler report \[1/6\] still at work after \d+ s", x) for x in after)
    assert quiet.getvalue().splitlines() == ["compiler report [1/6] sm_90: compiled"]


def test_progress_in_a_terminal_is_a_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNEL_REVIEW_PROGRESS", "bar")
    out = io.StringIO()
    with Progress("first call", 3, stream=out, unit="process") as bar:
        bar.step("softmax: cold run done")
        bar.say("kept line")
    shown = out.getvalue()
    assert "first call:  33%" in shown and "1/3" in shown and "softmax: cold run done" in shown
    assert "kept line\n" in shown
    assert "first call [1/3]" not in shown  # no log lines in a terminal


def test_counted_words_agree_with_their_count() -> None:
    from bot.outputs import plural

    assert [plural(n, "changed file") for n in (0, 1, 2)] == [
        "0 changed files",
        "1 changed file",
        "2 changed files",
    ]
    assert plural(1, "round") == "1 round" and plural(3, "process", "processes") == "3 processes"


def test_a_chart_is_a_text_bar_per_shape_in_a_terminal_not_its_source() -> None:
    from bot.contracts.evidence import Evidence, ShapeLine, SweepEvidence
    from bot.contracts.review import ReviewContext, Verdict
    from bot.review.render import render_comment

    shapes = tuple(
        ShapeLine(
            kernel="softmax",
            shape=(n, 781),
            dtype="float16",
            verdict="SAME" if r < 1.05 else "SLOWER",
            ratio=r,
            tolerance=0.05,
        )
        for n, r in ((1823, 1.012), (4096, 0.91), (8192, 1.8))
    )
    ev = Evidence(sweeps=(SweepEvidence(vendor="nvidia", gpu="NVIDIA H200", shapes=shapes),))
    verdict = Verdict(
        decision="approve",
        why="",
        conditions=(),
        not_asking_for=(),
        changes=(),
        prices={"softmax": 0.08},
    )
    ctx = ReviewContext(base_sha="a" * 40, head_sha="b" * 40)
    comment = render_comment(verdict, ctx, ev)
    assert "xychart-beta" in comment
    text = terminal_text(comment)
    assert "xychart" not in text and "```" not in text and "bar [" not in text
    assert "plotColorPalette" not in text and "---\nconfig" not in text
    lines = text.splitlines()
    start = lines.index("softmax on NVIDIA H200: head / base")
    key, *bars = lines[start + 1 : start + 5]
    assert key.split()[:2] == ["faster", "slower"]
    assert "(| as fast, : the 5% tolerance band, ! the 8% rewrite price)" in key
    # 1.0 at the middle column; slower to the right, faster to the left, past the scale: »
    middle = key.index("faster") + 16
    assert bars[0].startswith("1823x781 f16") and bars[0].endswith("1.2% slower")
    assert bars[0][middle] == "|" and bars[0][middle + 1] == "█" and bars[0][middle - 1] != "█"
    assert bars[1].startswith("4096x781 f16") and bars[1].endswith("9.0% faster")
    assert bars[1][middle - 1] == "█" and bars[1][middle + 1] != "█"
    assert bars[2].endswith("» 80.0% slower".replace("» ", "»  "))
    # the band's edges and the price are marked where no bar covers them
    assert bars[1][middle + 1 :].count(":") == 1 and bars[1].count("!") == 1
