"""The bot's helper programs that import pull-request code run scrubbed and bounded."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from checks.job_process import run_job

MODULE = "tests.data.jobs.probe"


def test_the_job_sees_no_token_and_its_own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_secret")
    monkeypatch.setenv("ACTIONS_RUNTIME_TOKEN", "x")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    out = run_job(MODULE, {"do": "env"}, workdir=tmp_path, triton_cache=tmp_path / "tc",
                  timeout_s=60, what="the probe")  # fmt: skip
    env = out["env"]
    assert "GITHUB_TOKEN" not in env and "ACTIONS_RUNTIME_TOKEN" not in env
    assert "TRITON_INTERPRET" not in env
    assert env["TRITON_CACHE_DIR"] == str(tmp_path / "tc")


def test_a_hang_is_killed_with_its_children(tmp_path: Path):
    t0 = time.monotonic()
    out = run_job(MODULE, {"do": "sleep"}, workdir=tmp_path, triton_cache=tmp_path / "tc",
                  timeout_s=2, what="the probe")  # fmt: skip
    assert out == {"fatal": "the probe took longer than 2 s"}
    assert time.monotonic() - t0 < 20


def test_a_death_says_how_and_shows_the_tail(tmp_path: Path):
    out = run_job(MODULE, {"do": "die"}, workdir=tmp_path, triton_cache=tmp_path / "tc",
                  timeout_s=60, what="the probe")  # fmt: skip
    assert out["fatal"].startswith("the probe exited with 3") and "boom" in out["fatal"]


def test_a_job_no_longer_wanted_is_stopped_while_it_runs(tmp_path: Path):
    cancel = threading.Event()
    threading.Timer(1.0, cancel.set).start()
    t0 = time.monotonic()
    out = run_job(MODULE, {"do": "sleep"}, workdir=tmp_path, triton_cache=tmp_path / "tc",
                  timeout_s=120, what="the probe", cancel=cancel)  # fmt: skip
    assert out == {"fatal": "the probe was stopped: its answer is no longer needed"}
    assert time.monotonic() - t0 < 20  # the probe sleeps 60 s


def test_a_job_no_longer_wanted_before_it_starts_is_not_started(tmp_path: Path):
    cancel = threading.Event()
    cancel.set()
    out = run_job(MODULE, {"do": "env"}, workdir=tmp_path, triton_cache=tmp_path / "tc",
                  timeout_s=60, what="the probe", cancel=cancel)  # fmt: skip
    assert out == {"fatal": "the probe was stopped: its answer is no longer needed"}
    assert not (tmp_path / "job.json").exists()
