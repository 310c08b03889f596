"""Ctrl-C stops a command at once: ``compiler-report`` waiting on a helper that compiles for
minutes (here: an entry point that sleeps) exits within 2 s of SIGINT, and the helper, in a
session of its own, is killed with it; ``bench`` whose workers are inside a call of the bench
entry does the same on SIGINT and on SIGTERM (a cancelled job)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from bot import gitutil

SLOW = """
import os
import time


def slow(shape, dtype, *, device="cpu", seed=0):
    with open(MARKER, "w") as handle:  # the helper's environment is scrubbed: a path here
        handle.write(str(os.getpid()))
    time.sleep(600)
"""

POLICY = """
vendors = ["nvidia"]

[deployment]
kind = "long-lived"

[[kernels]]
name = "slow"
bench = "ops:slow"
paths = ["ops.py"]
dtypes = ["float32"]
shapes = [[1000]]
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def _ops_repo(tmp_path: Path, marker: Path) -> Path:
    repo = tmp_path / "ops"
    gitutil.init_repo(repo)
    (repo / "ops.py").write_text(f"MARKER = {str(marker)!r}\n" + textwrap.dedent(SLOW))
    (repo / ".github").mkdir()
    (repo / ".github" / "kernel-review.toml").write_text(POLICY)
    gitutil.commit_all(repo, "ops")
    return repo


def _stopped(
    tmp_path: Path, args: list[str], marker: Path, sig: int
) -> tuple[int, str, float, int]:
    """Run ``python -m bot ARGS`` until the entry point writes its pid into ``marker``, send
    ``sig``: the exit code, stderr, the seconds from the signal to the exit, and the pid of the
    process that ran the entry point (killed here if the command left it behind)."""
    env = {**os.environ, "KERNEL_REVIEW_CACHE": str(tmp_path / "cache")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot", *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    helper = 0
    try:
        deadline = time.monotonic() + 120
        while not marker.exists() or not marker.read_text():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "nothing ever called the entry point"
            time.sleep(0.1)
        helper = int(marker.read_text())
        assert _alive(helper)
        sent = time.monotonic()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        gone = helper and not _alive(helper)
        time.sleep(0 if gone else 0.5)  # its exit is asynchronous to ours: a moment to go
        was_alive = bool(helper) and _alive(helper)
        if was_alive:  # one the command failed to end: not left behind
            os.kill(helper, signal.SIGKILL)
    return proc.returncode, err, took, (helper if was_alive else -1)


def test_ctrl_c_stops_the_compiler_report_and_kills_its_helper(tmp_path: Path) -> None:
    marker = tmp_path / "helper.pid"
    repo = _ops_repo(tmp_path, marker)
    args = ["compiler-report", "--repo", str(repo)]
    code, err, took, left = _stopped(tmp_path, args, marker, signal.SIGINT)
    assert code == 130 and "kernel-review: interrupted" in err, err
    assert took < 2.0, f"exited {took:.1f} s after SIGINT"
    assert left == -1, f"the helper {left} outlived the command"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stop_ends_the_sweep_at_once_and_kills_its_workers(tmp_path: Path, sig: int) -> None:
    """``bench`` whose worker is inside a call of the bench entry (sleeping here, as a first
    call compiles or autotunes for minutes): Ctrl-C, or the SIGTERM of a cancelled job, ends
    the command within 2 s, and the worker with it."""
    marker = tmp_path / "worker.pid"
    repo = _ops_repo(tmp_path, marker)
    (repo / "ops.py").write_text((repo / "ops.py").read_text() + "\n# head\n")
    gitutil.commit_all(repo, "head")
    args = ["bench", "--repo", str(repo), "--base", "HEAD~1", "--head", "HEAD", "--device", "cpu"]
    args += ["--out", str(tmp_path / "results.json")]
    code, err, took, left = _stopped(tmp_path, args, marker, sig)
    assert code == (130 if sig == signal.SIGINT else 128 + sig), err
    assert took < 2.0, f"exited {took:.1f} s after the signal"
    assert left == -1, f"the worker {left} outlived the command"
