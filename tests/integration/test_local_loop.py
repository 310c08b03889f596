"""The local loop: `kernel-review review --measure` runs the sweep on this machine and prints the
review a pull request would get with its measurements; `kernel-review review --results FILE`
reads the file a sweep wrote. Real processes throughout: a CPU sweep of a real Triton kernel
(the interpreter) in a real git repository, and the review reading the file the bench wrote."""

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
    """The toy repository, and the file a real CPU sweep of it wrote, run by `review --repo .
    --base main --measure cpu` in a checkout of the pull request's branch (one case,
    three executions of 40 rounds: about 20 s); its review is ``review.md`` beside the file,
    its output ``measured.json``."""
    tmp = tmp_path_factory.mktemp("loop")
    toy = build_toy_repo(tmp / "toyops")
    done = kernel_review(
        "review", "--repo", ".", "--base", "main", "--measure", "cpu",
        "--no-compile", "--out", str(tmp / "review.md"), "--full", cwd=toy.path,
        cache=tmp / "cache",
    )  # fmt: skip
    (tmp / "measured.json").write_text(json.dumps([done.returncode, done.stdout, done.stderr]))
    assert done.returncode in (0, 4), done.stderr  # as bench exits: measured (CPU timing)
    err = done.stderr.splitlines()
    written = Path(next(line for line in err if line.startswith("results: ")).split(": ", 1)[1])
    out = tmp / "bench.json"
    out.write_bytes(written.read_bytes())
    return toy, out, tmp


def _holds_the_case(comment: str, case: dict) -> None:
    """The review's per-shape table has the bench's own times of ``case``, labelled CPU timing,
    which is no GPU evidence: the sweep is still to run on the policy's vendor."""
    row = next(line for line in comment.splitlines() if line.startswith("| scale | 256 |"))
    assert f"{case['base_median_us']:.2f}" in row and f"{case['head_median_us']:.2f}" in row
    assert "(CPU timing: pipeline check only, not evidence)" in comment
    assert "a CPU-timed sweep ran the pipeline end to end" in comment


def test_review_measure_runs_the_sweep_and_prints_the_review(
    benched: tuple[ToyRepo, Path, Path],
) -> None:
    """The sweep of the kernel the change touches, then the review with its results; the
    bench's table on stderr, the review alone on stdout."""
    toy, _, tmp = benched
    _, stdout, stderr = json.loads((tmp / "measured.json").read_text())
    err = stderr.splitlines()
    assert "shape sweep: scale, base against head" in err
    assert any(line.startswith("kernel-review bench: 1 case") for line in err)
    # the file the sweep wrote, under the cache folder, for this base and head
    written = Path(next(line for line in err if line.startswith("results: ")).split(": ", 1)[1])
    assert written.is_relative_to(tmp / "cache")
    bench = json.loads(written.read_text())
    assert (bench["base_rev"], bench["head_rev"]) == (toy.base_sha, toy.head_sha)
    [case] = bench["cases"]
    assert case["status"] == "ok" and case["kernel"] == "scale"
    comment = (tmp / "review.md").read_text()
    assert "Local review with a shape sweep measured on this machine (--measure)" in comment
    _holds_the_case(comment, case)
    # stdout is the review alone; the last line says the repository's code ran, and how
    assert "# CPU timing" not in stdout and "scale   256" in stdout
    assert err[-1].startswith("the reviewed repository's code runs on this machine: the shape")


def test_review_reads_the_file_bench_wrote(benched: tuple[ToyRepo, Path, Path]) -> None:
    toy, out, tmp = benched
    case = json.loads(out.read_text())["cases"][0]
    md = tmp / "from-file.md"
    done = kernel_review(
        "review", "--repo", str(toy.path), "--base", toy.base_sha, "--head", toy.head_sha,
        "--no-compile", "--results", str(out), "--out", str(md), "--full", cwd=tmp,
        cache=tmp / "cache",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "validation error" not in done.stderr
    comment = md.read_text()  # as the job summary has it: every shape in the table
    assert "Local review with the measurements of bench.json" in comment
    _holds_the_case(comment, case)
    # the terminal text has the same case
    assert "scale   256" in done.stdout and "CPU timing" in done.stdout


def test_review_measure_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--measure takes cuda or cpu, nothing else; a range that changes no kernel measures
    nothing and says so (no worker starts)."""
    toy = build_toy_repo(tmp_path / "toyops")
    args = ["review", "--repo", str(toy.path), "--no-compile"]
    with pytest.raises(SystemExit) as refused:
        main([*args, "--base", toy.base_sha, "--measure", "tpu"])
    assert refused.value.code == 2
    assert "argument --measure: invalid choice: 'tpu'" in capsys.readouterr().err
    assert main([*args, "--base", toy.head_sha, "--measure", "cpu"]) == 0
    err = capsys.readouterr().err
    assert "--measure: nothing to measure: the range changes no kernel the policy names" in err
    assert "kernel-review bench:" not in err


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
