"""The bot's helper programs that import pull-request code run scrubbed and bounded."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from checks.job_files import JobFailure
from checks.job_process import run_job
from tests.data.jobs.probe import Probe, Seen


def test_the_job_sees_no_token_and_its_own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_secret")
    monkeypatch.setenv("ACTIONS_RUNTIME_TOKEN", "x")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    out = run_job(Probe("env"), workdir=tmp_path, triton_cache=tmp_path / "tc",
                  timeout_s=60, what="the probe")  # fmt: skip
    assert isinstance(out, Seen)
    env = out.env
    assert "GITHUB_TOKEN" not in env and "ACTIONS_RUNTIME_TOKEN" not in env
    assert "TRITON_INTERPRET" not in env
    assert env["TRITON_CACHE_DIR"] == str(tmp_path / "tc")


def test_a_hang_is_killed_with_its_children(tmp_path: Path):
    t0 = time.monotonic()
    out = run_job(Probe("sleep"), workdir=tmp_path, triton_cache=tmp_path / "tc",
                  timeout_s=2, what="the probe")  # fmt: skip
    assert out == JobFailure("the probe took longer than 2 s")
    assert time.monotonic() - t0 < 20


def test_a_death_says_how_and_shows_the_tail(tmp_path: Path):
    out = run_job(Probe("die"), workdir=tmp_path, triton_cache=tmp_path / "tc",
                  timeout_s=60, what="the probe")  # fmt: skip
    assert isinstance(out, JobFailure)
    assert out.fatal.startswith("the probe exited with 3") and "boom" in out.fatal


def test_an_answer_its_class_does_not_allow_is_a_failure_that_names_the_field(tmp_path: Path):
    out = run_job(Probe("misanswer"), workdir=tmp_path, triton_cache=tmp_path / "tc",
                  timeout_s=60, what="the probe")  # fmt: skip
    assert out == JobFailure(
        "the probe answered what the bot cannot read: "
        "the answer of tests.data.jobs.probe: env is missing"
    )


def test_a_job_no_longer_wanted_is_stopped_while_it_runs(tmp_path: Path):
    cancel = threading.Event()
    threading.Timer(1.0, cancel.set).start()
    t0 = time.monotonic()
    out = run_job(Probe("sleep"), workdir=tmp_path, triton_cache=tmp_path / "tc",
                  timeout_s=120, what="the probe", cancel=cancel)  # fmt: skip
    assert out == JobFailure("the probe was stopped: its answer is no longer needed")
    assert time.monotonic() - t0 < 20  # the probe sleeps 60 s


def test_a_job_no_longer_wanted_before_it_starts_is_not_started(tmp_path: Path):
    cancel = threading.Event()
    cancel.set()
    out = run_job(Probe("env"), workdir=tmp_path, triton_cache=tmp_path / "tc",
                  timeout_s=60, what="the probe", cancel=cancel)  # fmt: skip
    assert out == JobFailure("the probe was stopped: its answer is no longer needed")
    assert not (tmp_path / "job.json").exists()


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory):
    from checks.sweep.zygote import start_zygote

    z = start_zygote("cuda", tmp_path_factory.mktemp("zygote"))  # imports only: no GPU
    yield z
    z.close()


def test_a_job_forked_from_the_zygote_is_treated_as_one_started_afresh(tmp_path: Path, zygote):
    """Forked with torch imported already, the job still sees the scrubbed environment with its
    own cache and no GPU, the memory cap, the lowered priority and the package's folder; a
    checkout's death, a hang (with its children) and a cancel end it as they end a started one."""
    from checks.job_process import NO_GPU_ENV, PACKAGE_ROOT
    from checks.worker_env import default_memory_bytes

    fresh = run_job(Probe("env"), workdir=tmp_path, triton_cache=tmp_path / "tc",
                    timeout_s=60, what="the probe", env=NO_GPU_ENV, nice=5)  # fmt: skip
    forked = run_job(Probe("env"), workdir=tmp_path, triton_cache=tmp_path / "tc",
                     timeout_s=60, what="the probe", env=NO_GPU_ENV, nice=5,
                     forker=zygote)  # fmt: skip
    assert isinstance(fresh, Seen) and isinstance(forked, Seen)
    assert (fresh.torch_imported, forked.torch_imported) == (False, True)
    for out in (fresh, forked):
        assert out.env["TRITON_CACHE_DIR"] == str(tmp_path / "tc")
        assert out.env["CUDA_VISIBLE_DEVICES"] == ""
        assert "GITHUB_TOKEN" not in out.env
        assert out.data_limit == (default_memory_bytes(),) * 2
        assert out.nice >= 5
        assert Path(out.cwd) == PACKAGE_ROOT
    died = run_job(Probe("die"), workdir=tmp_path, triton_cache=tmp_path / "tc",
                   timeout_s=60, what="the probe", forker=zygote)  # fmt: skip
    assert isinstance(died, JobFailure)
    assert died.fatal.startswith("the probe exited with 3") and "boom" in died.fatal
    t0 = time.monotonic()
    hung = run_job(Probe("sleep"), workdir=tmp_path, triton_cache=tmp_path / "tc",
                   timeout_s=2, what="the probe", forker=zygote)  # fmt: skip
    assert hung == JobFailure("the probe took longer than 2 s")
    cancel = threading.Event()
    threading.Timer(1.0, cancel.set).start()
    stopped = run_job(Probe("sleep"), workdir=tmp_path, triton_cache=tmp_path / "tc",
                      timeout_s=120, what="the probe", cancel=cancel, forker=zygote)  # fmt: skip
    assert stopped == JobFailure("the probe was stopped: its answer is no longer needed")
    assert time.monotonic() - t0 < 30  # the probe sleeps 60 s each time


def test_a_zygote_that_cannot_serve_the_job_leaves_it_to_start_afresh(tmp_path: Path, zygote):
    """Another interpreter, or another memory cap, or the CPU's zygote (which imported Triton
    for its interpreter): the job is started as before."""
    import sys

    from checks.sweep.zygote import Zygote, ZygoteKind, start_zygote

    assert zygote.serves_jobs(sys.executable, zygote.kind.memory_bytes)
    assert not zygote.serves_jobs("/usr/bin/python3-other", zygote.kind.memory_bytes)
    assert not zygote.serves_jobs(sys.executable, zygote.kind.memory_bytes + 1)
    other = Zygote(
        ZygoteKind("/usr/bin/python3-other", zygote.kind.memory_bytes, "cuda"), None, None
    )
    cpu = start_zygote("cpu", tmp_path / "cpu-zygote")
    try:
        assert not cpu.serves_jobs(sys.executable, cpu.kind.memory_bytes)
        for forker in (other, cpu):
            out = run_job(Probe("env"), workdir=tmp_path, triton_cache=tmp_path / "tc",
                          timeout_s=60, what="the probe", forker=forker)  # fmt: skip
            assert isinstance(out, Seen) and out.torch_imported is False
    finally:
        cpu.close()
