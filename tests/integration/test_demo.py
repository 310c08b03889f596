"""``kernel-review demo``: the review of the bundled fixture, without a GPU and with the results a
GPU runner recorded for the fixture's head (an H200, committed under bench/results)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli import main
from tests.golden_util import check_golden
from tests.paths import ROOT

RECORDED = ROOT / "bench" / "results" / "h200" / "fixture_review" / "results-nvidia.json"
FIXTURE_HEAD = "b27c3b04ccce184dc01b6978042b3a3d547efadd"


def test_without_a_gpu_every_measurement_is_not_run_with_its_reason(tmp_path: Path, capsys) -> None:
    out = tmp_path / "review.md"
    assert main(["demo", "--no-compile", "--out", str(out)]) == 0
    assert "Kernel review:" in capsys.readouterr().out  # the plain-text rendering
    review = out.read_text()  # the comment's markdown
    assert "| vector\\_add | rewrite CUDA + HIP → Triton |" in review
    assert (
        "sweep and first call on nvidia: needs an NVIDIA GPU runner; this machine has no GPU"
        in review
    )
    assert "sweep and first call on amd: needs an AMD GPU runner" in review
    assert "Per-shape results" not in review  # nothing measured, nothing invented


def test_recorded_results_become_the_evidence(capsys) -> None:
    """Everything the H200 recorded, as the job summary has it (``--full``)."""
    assert main(["demo", "--no-compile", "--results", str(RECORDED), "--full", "--out", "-"]) == 0
    review = capsys.readouterr().out
    assert review.startswith("## ⛔ Kernel review: Request changes")
    # the H200's sweep, with the bf16 ragged vector_add regression it found
    assert "nvidia (NVIDIA H200): 52 shapes" in review
    assert "|  | 67108859† | bf16 | 101.02 | 245.15 | 2.4x slower | 94% → 39% | SLOWER |" in review
    # ... a collapse (2x slower or more) at a shape the policy does not serve: it blocks too
    assert (
        "- vector\\_add 67108859 bf16: 2.4x slower; over its 6% rewrite price; an added shape, "
        "but 2x slower or more blocks anywhere" in review
    )
    # matmul is slower only at shapes the planner added: named, with the time they add, and
    # not blocking
    assert "not blocking: 6 added shapes the policy does not serve" in review
    # first call measured in fresh processes on the GPU, judged against the cli budget
    assert "matmul on nvidia, cold" in review and "10 autotune keys" in review
    # ...with where the cold time went: most of vector_add's is fixed process cost, not compiling
    assert "vector\\_add on nvidia, cold 2499 ms" in review
    assert "(imports 1312 ms, context 140 ms, Triton set-up 663 ms)" in review
    # which config the sweep timed where fresh processes' autotunings disagreed (both 1000^3
    # shapes on this record; at float16 the sweep's head kept a third config)
    assert (
        "matmul 1000x1000x1000 float16 on nvidia: 3 autotunings in fresh processes kept "
        "2 configs; the sweep's head kept a config none of them kept" in review
    )
    # and the configs the timed runs used, per config
    assert "What the autotuners picked (the configs the timed runs used):" in review
    assert (
        "- head `matmul_kernel: BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=64, "
        "GROUP_SIZE_M=8, num_warps=4, num_stages=4`: matmul 7x13x31 bf16, matmul 7x13x31 f16"
        in review
    )
    # the compiler report came with the results (no local compile was asked for)
    assert "| matmul | new | sm\\_90 |" in review
    # AMD has no results: not run, and the condition stays open
    assert "sweep and first call on amd: needs an AMD GPU runner" in review
    assert " on nvidia: needs an NVIDIA GPU runner" not in review


def test_the_recorded_review_of_three_kernels_is_short_and_golden(capsys) -> None:
    """The comment for the fixture's pull request (3 kernels: two rewrites and a retune, a
    toolchain pin, 52 shapes on the H200): the verdict, the conditions and the worst shapes in
    the first screen, the rest folded, and every sentence pinned by a golden file (whose size
    tests/unit/test_chart.py holds to its limits)."""
    assert main(["demo", "--no-compile", "--results", str(RECORDED), "--out", "-"]) == 0
    comment = capsys.readouterr().out.removesuffix("\n")
    check_golden("review_fixture_h200.md", comment)
    first = comment.split("<details>")[0]
    assert first.count("\n- ") == 5 + 3  # the five conditions, then the three worst shapes
    # the charts draw 6 bars a kernel: one of the 12 is in the job summary only
    assert "**Worst shapes** (head against base, 95% CI; 12 more in the job summary):" in first
    # a chart per kernel; the 15 shapes that did not hold are too many for a table here: the
    # job summary has it, with the configs the autotuners picked and the compiled variants
    assert [line for line in comment.splitlines() if line.startswith("    title ")] == [
        f'    title "{k} on NVIDIA H200: head / base"' for k in ("vector_add", "softmax", "matmul")
    ]
    assert "nvidia: 15 shapes did not hold, 37 held; the job summary has every shape's" in comment
    assert "| base µs |" not in comment and "What the autotuners picked" not in comment


def test_in_a_terminal_each_chart_is_its_bars_as_text_not_its_source(capsys) -> None:
    """The same review printed for a terminal (no ``--out -``): each kernel's mermaid chart is
    a text bar per shape, the shapes the chart draws in its order, each said slower or faster as
    its bar is above or below 1, and none of the chart's source."""
    assert main(["demo", "--no-compile", "--results", str(RECORDED), "--out", "-"]) == 0
    comment = capsys.readouterr().out
    assert main(["demo", "--no-compile", "--results", str(RECORDED)]) == 0
    text = capsys.readouterr().out
    for source in ("xychart", "```", "x-axis", "bar [", "line [", "<details>"):
        assert source not in text, f"the terminal shows the chart's source: {source!r}"
    charts = re.findall(r'title "(.+)"\n *x-axis \[(.+)\]\n.*\n *bar \[(.+)\]', comment)
    assert len(charts) == 3
    lines = text.splitlines()
    for title, axis, bar in charts:
        labels = json.loads(f"[{axis}]")
        ratios = [float(r) for r in bar.split(",")]
        start = lines.index(title)
        assert lines[start + 1].split()[:2] == ["faster", "slower"]  # the key
        rows = lines[start + 2 : start + 2 + len(labels)]
        for label, ratio, row in zip(labels, ratios, rows, strict=True):
            assert row.startswith(f"{label} "), (title, row)
            assert row.endswith("slower" if ratio > 1 else "faster"), (title, row)
        assert lines[start + 2 + len(labels)] == ""  # nothing more in the chart


def test_results_for_another_head_are_refused(tmp_path: Path, capsys) -> None:
    data = json.loads(RECORDED.read_text())
    assert data["head_sha"] == FIXTURE_HEAD
    data["head_sha"] = "0" * 40
    other = tmp_path / "results-nvidia.json"
    other.write_text(json.dumps(data))
    assert main(["demo", "--no-compile", "--results", str(other)]) == 2
    err = capsys.readouterr().err
    assert "measured head 000000000000, not the pinned b27c3b04ccce" in err
    assert "hint:" in err and "fixture_review_gpu.py" in err


@pytest.mark.parametrize("content", [None, "{not json", '{"schema_version": 1}'])
def test_a_missing_or_malformed_results_file_is_an_error(tmp_path: Path, capsys, content) -> None:
    path = tmp_path / "results.json"
    if content is not None:
        path.write_text(content)
    assert main(["demo", "--no-compile", "--results", str(path)]) == 2
    err = capsys.readouterr().err
    assert ("no such results file" if content is None else "not a results file") in err


def test_the_fixture_to_keep_is_built_in_no_folder_with_files(tmp_path: Path, capsys) -> None:
    """``python -m kernels_fixture.build_repo DIR`` (what ``demo --keep`` was) leaves a folder
    with files alone."""
    from kernels_fixture import build_repo

    (tmp_path / "something").write_text("x")
    assert build_repo.main([str(tmp_path)]) == 2
    assert "is not an empty folder" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["something"]


@pytest.mark.slow
@pytest.mark.xdist_group("fixture-demo")  # one cold compile: the second demo reads its cache
def test_the_review_shows_the_layouts_the_compiler_chose(tmp_path: Path) -> None:
    """C-1 on real cross-compiles of the fixture (cached after the first run), in the job
    summary (``--full``): the comment says what changed and points there."""
    out = tmp_path / "review.md"
    assert main(["demo", "--full", "--out", str(out)]) == 0
    review = out.read_text()
    assert "**Layouts the compiler chose** (Triton GPU IR" in review
    softmax = [x for x in review.splitlines() if x.startswith("- softmax on ")]
    for target, lanes in (("sm\\_90", 32), ("gfx942", 64), ("gfx90a", 64)):
        # the softmax row: one blocked layout over 4 to 16 warps, its reductions across them
        # (one line for the targets where it reads the same: the two AMD ones)
        line = next(x for x in softmax if target in x.split(", new:")[0])
        assert f"threadsPerWarp [{lanes}] warpsPerCTA [4] | [8] | [16] order [0]`" in line
        assert "a reduction spans up to 16 warps, so it meets in shared memory" in line
    # the matmul retune changed the Hopper tiles, and with them the wgmma layouts; AMD kept its
    assert "- matmul on sm\\_90: distinct layouts" in review
    assert "dot `nvidia_mma v3 warpsPerCTA [8, 1] instrShape [16, 128, 16]`" in review
    assert "- matmul on gfx942: the same layouts old and new" in review


def test_the_fixture_job_script_says_what_update_needs(tmp_path: Path) -> None:
    """bench/fixture_review_gpu.py runs the whole plan by default; --update re-runs some checks,
    so it needs to be told which."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "fixture_review_gpu.py"), "--out", str(tmp_path),
         "--update"],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "--update needs --checks (which checks to re-run)" in proc.stderr
