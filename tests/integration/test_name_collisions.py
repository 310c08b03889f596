"""A measured repository with its own top-level `checks`, `bot` and `kernels_fixture` packages:
every command that runs its code in a helper process (the first-call probe, the compiler
report's worker, the sweep's workers) imports the bot's own packages, and the repository's code
imports its own (its kernel module reads `checks.limits` and `bot` of its own, and its
`kernels_fixture` raises when imported). Real commands in real processes, on the CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.triton_toy import ToyRepo, build_toy_repo


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> ToyRepo:
    return build_toy_repo(tmp_path_factory.mktemp("collide") / "toyops", own_packages=True)


def kernel_review(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The console script, run from inside the repository as a user would (``python -m bot``
    there would be the repository's own ``bot``)."""
    script = Path(sys.executable).with_name("kernel-review")
    return subprocess.run(
        [str(script), *args],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=cwd,
        env={**os.environ, "KERNEL_REVIEW_CACHE": str(cwd.parent / "cache")},
    )


def test_first_call_and_compiler_report(toy: ToyRepo) -> None:
    out = toy.path.parent / "first-call.json"
    done = kernel_review("first-call", "--device", "cpu", "--json", str(out), cwd=toy.path)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    text = json.dumps(report)
    assert "No module named" not in text and "kernels_fixture" not in text, text[:2000]
    assert "cold: fixed" in done.stdout and "first call" in done.stdout
    done = kernel_review("compiler-report", "--target", "sm_90", cwd=toy.path)
    assert done.returncode == 0, done.stderr
    assert "errors:" not in done.stdout, done.stdout
    assert "_scale_kernel  sm_90" in done.stdout and "1 compiled" in done.stdout


def test_bench(toy: ToyRepo) -> None:
    out = toy.path.parent / "bench.json"
    done = kernel_review(
        "bench", "--base", toy.base_sha, "--head", toy.head_sha, "--device", "cpu",
        "--engine-option", "zygote=on",
        "--engine-option", "added_shapes=off", "--engine-option", "max_rounds=3",
        "--out", str(out), cwd=toy.path,
    )  # fmt: skip
    assert done.returncode in (0, 4), done.stderr  # measured (CPU timing may read it slower)
    (case,) = json.loads(out.read_text())["cases"]
    assert case["status"] == "ok", case["message"]
