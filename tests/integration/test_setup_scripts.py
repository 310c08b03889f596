"""scripts/lib/steps.sh and scripts/setup: each slow step is announced and timed in the lines
``bench/first_run.py`` reads, a failed step is named with what to do, and set-up installs what
the command needs once: the stamp in .venv makes a second run install nothing, ``--dev`` adds
the test tools, a changed pyproject.toml installs again.

The set-up runs in a copy of ``scripts/`` and ``pyproject.toml`` whose ``.venv/bin/python`` is a
recorder standing in for the environment's interpreter (it writes its arguments and succeeds), so
what pip would be asked to install is seen without minutes of installing; ``python3`` is real."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.paths import ROOT

sys.path.insert(0, str(ROOT / "bench"))

from first_run import step_times


def _steps(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    script = f"set -euo pipefail\nSTEPS_WHO=try\n. {ROOT / 'scripts' / 'lib' / 'steps.sh'}\n{body}"
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=tmp_path)


def test_a_step_is_announced_then_timed_in_the_lines_the_bench_reads(tmp_path: Path):
    done = _steps(tmp_path, 'step "sleeping a little" "nothing to do" sleep 0.2\necho after')
    assert done.returncode == 0, done.stderr
    assert done.stdout == "after\n"  # the steps' lines keep to stderr
    assert done.stderr.splitlines()[0] == "== try: sleeping a little ..."
    times = step_times(done.stderr)
    assert list(times) == ["try: sleeping a little"]
    assert 0.2 <= times["try: sleeping a little"] < 5


def test_a_failed_step_is_named_with_its_status_and_what_to_do(tmp_path: Path):
    done = _steps(tmp_path, 'step "the failing part" "do this next" bash -c "exit 3"\necho after')
    assert done.returncode == 3
    assert "after" not in done.stdout
    last = done.stderr.splitlines()[-1]
    assert last.startswith("== try: FAILED: the failing part (exit 3 after ")
    assert last.endswith(" s): do this next")
    assert step_times(done.stderr) == {}  # a failure is no timed step


def _project(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the scripts and pyproject.toml with a recording .venv/bin/python."""
    root = tmp_path / "project"
    shutil.copytree(ROOT / "scripts", root / "scripts")
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    calls = tmp_path / "calls"
    python = root / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\necho "$*" >> {calls}\n')
    python.chmod(0o755)
    return root, calls


def _setup(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KERNEL_REVIEW_TORCH"}
    return subprocess.run(
        [str(root / "scripts" / "setup"), *args], capture_output=True, text=True, env=env
    )


def _installs(calls: Path) -> list[str]:
    if not calls.exists():
        return []
    return [line for line in calls.read_text().splitlines() if " pip install " in f" {line}"]


def test_setup_installs_what_is_asked_once(tmp_path: Path):
    root, calls = _project(tmp_path)
    first = _setup(root)
    assert first.returncode == 0, first.stderr
    assert _installs(calls) == [
        "-m pip install --no-compile torch==2.13.0 setuptools>=77",
        "-m pip install --no-compile --no-build-isolation -e .",  # no pytest, no ruff
    ]
    said = step_times(first.stderr)
    assert any(s.startswith("setup: torch (torch==2.13.0") for s in said), said
    assert any(s.startswith("setup: bytecode of what the demo imports") for s in said), said
    # the gpu extra but its torch (the CPU build stands in): read from pyproject.toml
    assert any(s.startswith("setup: the gpu extra but its torch") for s in said), said

    calls.unlink()
    again = _setup(root)
    assert again.returncode == 0
    assert not calls.exists()  # nothing asked of the environment's interpreter
    assert "up to date for 'runtime'" in again.stderr

    dev = _setup(root, "--dev")
    assert dev.returncode == 0, dev.stderr
    assert _installs(calls)[-1] == "-m pip install --no-compile --no-build-isolation -e .[dev]"
    calls.unlink()
    assert "up to date for 'runtime'" in _setup(root).stderr  # dev holds the runtime too
    assert "up to date for 'dev'" in _setup(root, "--dev").stderr
    assert not calls.exists()

    with (root / "pyproject.toml").open("a") as f:
        f.write("# a changed dependency list\n")
    assert _setup(root).returncode == 0
    assert len(_installs(calls)) == 2  # torch and the project again


def test_setup_names_a_failed_install_and_what_to_do(tmp_path: Path):
    root, calls = _project(tmp_path)
    (root / ".venv" / "bin" / "python").write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexit 1\n')
    done = _setup(root)
    assert done.returncode == 1
    last = done.stderr.splitlines()[-1]
    assert last.startswith("== setup: FAILED: torch (torch==2.13.0")
    assert "check the network" in last and "KERNEL_REVIEW_TORCH" in last
    assert not (root / ".venv" / "kernel-review-setup").exists()  # the next run tries again


def test_setup_refuses_an_unknown_option_saying_which_exist(tmp_path: Path):
    root, calls = _project(tmp_path)
    done = _setup(root, "--devv")
    assert done.returncode == 2
    assert "unknown option '--devv'" in done.stderr and "scripts/setup --dev" in done.stderr
    assert not calls.exists()
