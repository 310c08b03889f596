"""A policy that names a ``triton.testing.perf_report`` benchmark, not a hand-written entry
point: the compiler report cross-compiles what the benchmark times, and ``first-call
--device cpu`` measures its compile-only cost, both through the real command line. Progress
goes to stderr as plain lines (not a terminal here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bot import gitutil
from tests.integration.test_onboard import KERNEL, PERF_REPORT  # the same small repository
from tests.paths import ROOT

POLICY = """\
vendors = ["nvidia"]

[deployment]
kind = "cli"
first_call_budget_ms = 1  # no fresh process imports torch in 1 ms: over budget

[compiler]
nvidia_targets = ["sm_90"]

[[kernels]]
name = "scale_add"
bench = "perf_report:benchmarks/bench_scale_add.py:bench_scale_add@triton"
paths = ["minilib/scale_add.py"]
dtypes = ["float32"]
shapes = [[1024], [4099]]
"""


@pytest.fixture(scope="module")
def perf_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("perf") / "minirepo"
    gitutil.init_repo(repo)
    files = {
        "minilib/__init__.py": "",
        "minilib/scale_add.py": KERNEL,
        "benchmarks/bench_scale_add.py": PERF_REPORT,
        ".github/kernel-review.toml": POLICY,
    }
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(textwrap.dedent(text))
    gitutil.commit_all(repo, "scale_add with a perf_report benchmark")
    return repo


def _cli(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KERNEL_REVIEW_CACHE": str(tmp / "cache")}
    env.pop("KERNEL_REVIEW_PROGRESS", None)
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_compiler_report_cross_compiles_a_perf_report_benchmark(
    perf_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "report.json"
    done = _cli("compiler-report", "--repo", str(perf_repo), "--json", str(out), tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "compiler report [1/1] sm_90: compiled, 2 variants" in done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("scale_add ")]
    assert len(rows) == 2  # 1024 (divisible by 16) and 4099 specialise differently
    assert all("scale_add_kernel" in row and "sm_90" in row for row in rows)  # the function
    records = json.loads(out.read_text())["report"]["records"]
    assert {r["function"] for r in records} == {"scale_add_kernel"}
    assert all(r["error"] is None and r["regs_per_thread"] for r in records)


@pytest.mark.slow
def test_first_call_measures_a_perf_report_benchmark_and_exits_4_over_budget(
    perf_repo: Path, tmp_path: Path
) -> None:
    done = _cli("first-call", "--repo", str(perf_repo), "--device", "cpu", tmp=tmp_path)
    assert done.returncode == 4, done.stderr  # over the 1 ms budget
    assert "first call [3/3] scale_add: warm run done" in done.stderr
    assert "scale_add (compile-only, sm_90; cli, budget 1 ms): over-budget" in done.stdout
    assert "compiled 1" in done.stdout  # the captured lambda's kernel compiled, cold
