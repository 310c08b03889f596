"""bench/device_session.sh, the next GPU session's driver, as far as a CPU takes it without
running a stage: its plan fits the device's limits, it refuses what it cannot run, and a stage
that does not fit in what is left of a call is not started and is named so in run.md."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

from tests.paths import ROOT

SESSION = ROOT / "bench" / "device_session.sh"


def _run(*args: str, out: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SESSION), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHON": sys.executable, "OUT": str(out or "/nonexistent"), **env},
    )


def test_the_three_calls_fit_the_device_time_and_each_call_its_limit() -> None:
    done = _run("--plan")
    assert done.returncode == 0, done.stderr
    calls = re.findall(r"^call\d: (.*) \((\d+) s of budgets; the call ends within (\d+) s\)$",
                       done.stdout, re.M)  # fmt: skip
    assert len(calls) == 3
    for _, budgets, limit in calls:
        # a stage starts with its budget and 15 s left, after the wheels' install (up to 20 s):
        # the 2026-12-05 H100 call had 339 s left for a 330 s stage and did not start it
        assert int(budgets) + 35 <= int(limit) <= 600 - 30  # a device call runs 10 minutes at most
    # 25 device-minutes for the three, the machine's start (about 2 minutes) included
    assert sum(int(limit) for *_, limit in calls) + 120 <= 25 * 60
    stages = " ".join(names for names, *_ in calls).split()
    for waiting in ("cli-decision", "gpu-launch", "rk-fla", "rk-rest"):
        assert waiting in stages


def test_what_it_cannot_run_is_refused_with_what_to_do() -> None:
    unknown = _run("gpu-test")
    assert unknown.returncode == 2 and "unknown stage 'gpu-test'; the stages: gpu-tests" in (
        unknown.stderr
    )
    assert "--tiny is for --device cpu" in _run("--tiny", "onboard").stderr
    assert "name the stages to run" in _run().stderr


def test_a_stage_that_does_not_fit_the_call_is_not_started_and_run_md_says_so(
    tmp_path: Path,
) -> None:
    done = _run("--device", "cpu", "gpu-tests", "onboard", out=tmp_path, CALL_S="60")
    assert done.returncode == 3, done.stderr
    run_md = (tmp_path / "run.md").read_text(encoding="utf-8")
    assert re.search(r"^device_flags: the \d+ flags the session passes are there$", run_md, re.M)
    for stage, budget in (("gpu-tests", 240), ("onboard", 110)):
        assert re.search(rf"^\| {stage} \| not run \| - \| {budget} \| \d+ s left", run_md, re.M)
    assert not list(tmp_path.glob("*.tar.gz")) and not (tmp_path / "gpu-tests").exists()


def test_a_stage_stopped_at_its_budget_is_named_so_and_what_it_wrote_comes_back(
    tmp_path: Path,
) -> None:
    done = _run("--device", "cpu", "gpu-tests", out=tmp_path, STAGE_S="2")
    assert done.returncode == 1, done.stderr
    run_md = (tmp_path / "run.md").read_text(encoding="utf-8")
    row = re.search(r"^\| gpu-tests \| (.*?) \| (\d+) \| 2 \| `(.*)` \|$", run_md, re.M)
    assert row and row.group(1) == "124 (stopped at its budget)", run_md
    assert int(row.group(2)) < 15 and "-m pytest -m gpu" in row.group(3)
    # packed as one file the device tool brings back, the folder gone
    with tarfile.open(tmp_path / "gpu-tests.tar.gz") as packed:
        assert {"gpu-tests/stage.log", "gpu-tests/pytest.txt"} <= set(packed.getnames())
    assert not (tmp_path / "gpu-tests").exists()


def test_the_second_gpu_test_stage_runs_what_the_first_does_not_naming_each_test(
    tmp_path: Path,
) -> None:
    """pytest -m gpu in two stages: the second runs every GPU test of files the first does not
    list, each named with its outcome as it ends (a stage cut at its budget still names what
    ran), and the durations at the end."""
    done = _run("--device", "cpu", "gpu-tests-2", out=tmp_path)
    assert done.returncode == 0, done.stderr
    command = (tmp_path / "run.md").read_text(encoding="utf-8").split("| gpu-tests-2 |")[1]
    first = re.findall(r"--ignore (\S+)", command)  # the first stage's files
    assert "tests/gpu/test_gpu_faults.py" in first and all((ROOT / f).is_file() for f in first)
    with tarfile.open(tmp_path / "gpu-tests-2.tar.gz") as packed:
        got = packed.extractfile("gpu-tests-2/pytest.txt")
        assert got is not None
        text = got.read().decode()
    named = re.findall(r"^(tests/\S+)::\S+ (?:PASSED|FAILED|SKIPPED|ERROR)", text, re.M)
    assert "tests/gpu/test_sweep_gpu.py" in named and "tests/integration/test_gluon.py" in named
    assert not set(first) & set(named) and "slowest durations" in text, text[-2000:]
