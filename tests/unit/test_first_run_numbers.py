"""The first-run times README.md and tests/README.md state are the ones recorded in
bench/results/cpu/first_run/times.json (``bench/first_run.py --readme`` writes them), so the
READMEs cannot drift from a measured run; and what the recorder reads of the scripts' lines."""

from __future__ import annotations

import json
import re
import sys

import pytest

from tests.paths import ROOT

sys.path.insert(0, str(ROOT / "bench"))

from first_run import (
    BLOCK,
    READMES,
    longest_silence,
    sentence,
    short_of_the_bar,
    silent_past_the_bar,
    step_times,
    transcript,
)
from readme_numbers import fill_block

RECORDED = ROOT / "bench" / "results" / "cpu" / "first_run" / "times.json"


def _recorded() -> dict:
    return json.loads(RECORDED.read_text(encoding="utf-8"))


def _block(text: str) -> str:
    m = re.search(rf"<!-- {BLOCK}:start -->\n(.*?)\n *<!-- {BLOCK}:end -->", text, re.S)
    assert m, f"no {BLOCK} block"
    return m[1]


@pytest.mark.parametrize("rel", sorted(READMES))
def test_the_readmes_state_the_recorded_times(rel: str):
    said = _block((ROOT / rel).read_text(encoding="utf-8"))
    assert said == sentence(_recorded(), READMES[rel]), (
        f"{rel} does not say what {RECORDED.relative_to(ROOT)} recorded: run "
        f"python bench/first_run.py --readme {RECORDED.relative_to(ROOT)}"
    )


def test_the_recorded_run_is_a_whole_newcomer_run():
    rec = _recorded()
    runs = rec["runs"]
    assert set(runs) == {"demo_first", "demo_cached", "setup_dev_first", "setup_dev_cached"}
    assert all(run["rc"] == 0 for run in runs.values())
    assert rec["meta"]["cores"] == 2  # the developers' and CI's machine
    first = runs["demo_first"]
    # the first run set up .venv step by step; the cached one installed nothing
    assert any(s.startswith("setup: torch") for s in first["steps"])
    assert not any(s.startswith("setup: torch") for s in runs["demo_cached"]["steps"])
    assert "up to date" in runs["demo_cached"]["output"]
    # the steps account for the run: set-up and the review, nothing long left unsaid
    named = sum(s for k, s in first["steps"].items() if k.startswith("demo: kernel-review demo"))
    setup = sum(
        s for k, s in first["steps"].items() if k.startswith("setup: kernel-review installed")
    )
    assert first["wall_s"] - (named + setup) < 5


def test_the_recorded_run_is_within_a_newcomers_bar():
    """Issue 48's bar: the demo's first run under 120 s and a cached one under 15 s, on 2 cores
    with the compile cache empty."""
    assert short_of_the_bar(_recorded()) == []


def test_the_recorded_run_is_never_silent_past_the_bar():
    """Read through a pipe, as a log is, neither demo run printed nothing for 20 s: the
    compiler report's first target took 45 s, and said it was at work each 10 s."""
    assert silent_past_the_bar(_recorded()) == []


def test_the_bar_refuses_a_slow_run_a_silent_one_and_another_machine():
    slow = json.loads((RECORDED.parent / "times-load7.json").read_text(encoding="utf-8"))
    assert short_of_the_bar(slow) == ["demo_first took 215.3 s, over its 120 s"]
    assert "demo_first: no longest silence recorded (a record older than it)" in (
        silent_past_the_bar(slow)
    )
    rec = _recorded()
    rec["runs"]["demo_cached"]["longest_silence"] = {"s": 31.5, "after": "== demo: x ..."}
    rec["runs"]["demo_first"]["longest_silence"] = {"s": 19.9, "after": ""}
    rec["meta"]["cores"] = 16
    assert short_of_the_bar(rec) == [
        "measured on 16 cores with the compile cache empty: the bar is for 2 cores and an empty "
        "compile cache (--empty-compile-cache)"
    ]
    assert silent_past_the_bar(rec) == [
        "demo_cached printed nothing for 31.5 s (after '== demo: x ...'), over 20 s"
    ]


def test_the_longest_silence_counts_from_the_start_to_the_end():
    assert longest_silence([(1.0, "a\n"), (9.5, "b\n"), (10.0, "c\n")], 12.0) == {
        "s": 8.5,
        "after": "a",
    }
    assert longest_silence([(6.0, "late\n")], 7.0) == {"s": 6.0, "after": ""}
    assert longest_silence([(1.0, "a\n")], 30.0) == {"s": 29.0, "after": "a"}
    assert longest_silence([], 2.0) == {"s": 2.0, "after": ""}


def test_the_committed_transcript_is_the_recorded_first_run():
    doc = (ROOT / "docs" / "first-run.md").read_text(encoding="utf-8")
    assert doc == transcript(_recorded())


def test_step_times_reads_each_finished_step_once():
    out = "\n".join(
        [
            "== setup: torch (torch==2.13.0) ...",
            "Processing /some/wheel.whl",
            "== setup: torch (torch==2.13.0): 9.4 s",
            "== demo: FAILED: the review (exit 1 after 2.0 s): see above",
            "== demo: done in 12 s",
            "   == setup: bytecode of what the demo imports: 4 s  ",
        ]
    )
    assert step_times(out) == {
        "setup: torch (torch==2.13.0)": 9.4,
        "setup: bytecode of what the demo imports": 4.0,
    }


def test_fill_block_replaces_only_its_block_and_refuses_a_missing_one():
    text = "a\n  <!-- x:start -->\nold\n  <!-- x:end -->\nb\n"
    assert fill_block(text, "x", "new") == "a\n  <!-- x:start -->\nnew\n  <!-- x:end -->\nb\n"
    with pytest.raises(ValueError, match="no <!-- y:start -->"):
        fill_block(text, "y", "new")
