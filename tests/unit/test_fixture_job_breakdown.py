"""bench/fixture_job_breakdown.py reads a recorded measure job: each check's time from its own
log line, each kernel's first call from its start line to the next, and the sweep's checks split
into builds, autotuning and the rest; the committed record reproduces its results.md."""

from __future__ import annotations

import sys

import pytest

from tests.paths import ROOT

sys.path.insert(0, str(ROOT / "bench"))

from fixture_job_breakdown import check_times, first_call_times, job_lines, main

RECORDED = ROOT / "bench" / "results" / "h200" / "fixture_job"

LOG = """# The fixture pull request's measure job on NVIDIA H200
    [    0.5 s] compiler report: old and new, every config, both vendors
    [   44.6 s] compiler: done in 44.2 s
    [   45.9 s] [ 1/52] vector_add float32 4096: SLOWER head/base 1.057 (8 rounds, graph, 38.9 s)
    [  138.1 s] sweep: done in 137.6 s
    [  138.1 s] first call: vector_add (head, cold, then warm) in fresh processes
    [  154.7 s] first call: softmax (head, cold, then warm) in fresh processes
    [  168.8 s] first call: matmul (head, cold, then warm) in fresh processes
    [  263.1 s] first_call: done in 125.0 s

- measure job: 262.9 s
"""


def test_the_jobs_own_lines_give_each_check_and_each_kernels_first_call() -> None:
    lines = job_lines(LOG)
    assert lines[0] == (0.5, "compiler report: old and new, every config, both vendors")
    assert check_times(lines) == {"compiler": 44.2, "sweep": 137.6, "first_call": 125.0}
    got = first_call_times(lines)
    assert list(got) == ["vector_add", "softmax", "matmul"]
    assert got["vector_add"] == pytest.approx(16.6) and got["matmul"] == pytest.approx(94.3)


def test_the_recorded_jobs_give_the_committed_breakdown(tmp_path) -> None:
    folders = sorted(p for p in RECORDED.iterdir() if (p / "run.md").is_file())
    assert folders, "no recorded job"
    out = tmp_path / "results.md"
    assert main([*map(str, folders), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert text == (RECORDED / "results.md").read_text(encoding="utf-8")
    assert "first case built or compiled 65.8 s, autotuned 38.6 s" in text


def test_a_folder_without_a_job_is_refused_with_a_message(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path)])
    assert exc.value.code == 2
    assert "no run.md in" in capsys.readouterr().err
