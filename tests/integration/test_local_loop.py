"""The local loop: `kernel-review bench --out FILE` on this machine, then `kernel-review review
--results FILE` prints the review a pull request would get with those measurements. Real
processes throughout: a CPU sweep of a real Triton kernel (the interpreter) in a real git
repository, and the review reading the file the bench wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli import main
from tests.triton_toy import ToyRepo, build_toy_repo


def kernel_review(*args: str, cwd: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=cwd,
        env={**os.environ, "KERNEL_REVIEW_CACHE": str(cache), "KERNEL_REVIEW_PROGRESS": "lines"},
    )


@pytest.fixture(scope="module")
def benched(tmp_path_factory: pytest.TempPathFactory) -> tuple[ToyRepo, Path, Path]:
    """The toy repository and the file a real CPU bench of it wrote (one case; workers forked
    from one process that imported torch and Triton, so the sweep takes a few seconds)."""
    tmp = tmp_path_factory.mktemp("loop")
    toy = build_toy_repo(tmp / "toyops")
    out = tmp / "bench.json"
    done = kernel_review(
        "bench", "--repo", str(toy.path), "--base", toy.base_sha, "--head", toy.head_sha,
        "--device", "cpu", "--zygote", "--no-added-shapes", "--max-rounds", "3",
        "--out", str(out), cwd=tmp, cache=tmp / "cache",
    )  # fmt: skip
    assert done.returncode in (0, 4), done.stderr  # measured (slower or not: CPU timing)
    assert out.is_file()
    return toy, out, tmp


def test_review_reads_the_file_bench_wrote(benched: tuple[ToyRepo, Path, Path]) -> None:
    toy, out, tmp = benched
    bench = json.loads(out.read_text())
    case = bench["cases"][0]
    assert case["status"] == "ok" and case["kernel"] == "scale"
    md = tmp / "review.md"
    done = kernel_review(
        "review", "--repo", str(toy.path), "--base", toy.base_sha, "--head", toy.head_sha,
        "--no-compile", "--results", str(out), "--out", str(md), "--full", cwd=tmp,
        cache=tmp / "cache",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "validation error" not in done.stderr
    comment = md.read_text()  # as the job summary has it: every shape in the table
    assert "Local review with the measurements of bench.json" in comment
    # the measured case in the per-shape table, with the bench's own times, labelled CPU timing
    row = next(line for line in comment.splitlines() if line.startswith("| scale | 256 |"))
    assert f"{case['base_median_us']:.2f}" in row and f"{case['head_median_us']:.2f}" in row
    assert "(CPU timing: pipeline check only, not evidence)" in comment
    # the terminal text has the same case
    assert "scale   256" in done.stdout and "CPU timing" in done.stdout
    # CPU timing is no GPU evidence: the sweep is still to run on the policy's vendor
    assert "a CPU-timed sweep ran the pipeline end to end" in comment


def test_a_bench_file_of_another_range_is_refused(
    benched: tuple[ToyRepo, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    toy, out, _ = benched
    args = ["review", "--repo", str(toy.path), "--no-compile", "--results", str(out)]
    assert main([*args, "--base", toy.head_sha, "--head", toy.head_sha]) == 2
    err = capsys.readouterr().err
    assert f"bench.json measured against the base {toy.base_sha[:12]}" in err
    assert f"hint: run `kernel-review bench --base {toy.head_sha[:12]}" in err
    assert main([*args, "--base", toy.base_sha, "--head", toy.base_sha]) == 2
    assert f"bench.json measured the head {toy.head_sha[:12]}" in capsys.readouterr().err


@pytest.mark.parametrize(
    "content",
    ['{"vendor": "cpu", "cases": []}', "[1, 2]", "not json at all"],
    ids=["partial", "list", "text"],
)
def test_a_file_that_is_neither_form_gets_one_message(
    tmp_path: Path, content: str, capsys: pytest.CaptureFixture[str]
) -> None:
    toy = build_toy_repo(tmp_path / "toyops")
    path = tmp_path / "mystery.json"
    path.write_text(content)
    args = ["--repo", str(toy.path), "--base", toy.base_sha, "--no-compile"]
    assert main(["review", *args, "--results", str(path)]) == 2
    err = capsys.readouterr().err
    error, hint = err.strip().splitlines()
    assert error.startswith(f"kernel-review: error: {path} is not a results file")
    assert "`kernel-review bench --out FILE` writes" in error and "results-<vendor>.json" in error
    assert hint.startswith("  hint: run `kernel-review bench --repo . --base REV --head REV --out")
    assert "validation" not in err


def test_the_demo_says_which_command_reads_a_bench_file(
    benched: tuple[ToyRepo, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = benched
    assert main(["demo", "--no-compile", "--results", str(out)]) == 2
    err = capsys.readouterr().err
    assert "is a `kernel-review bench` file" in err
    assert "kernel-review review --repo . --base REV --results FILE" in err
