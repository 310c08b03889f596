"""Ctrl-C stops a command at once: ``compiler-report`` waiting on a helper that compiles for
minutes (here: an entry point that sleeps) exits within 2 s of SIGINT, and the helper, in a
session of its own, is killed with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

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


def test_ctrl_c_stops_the_compiler_report_and_kills_its_helper(tmp_path: Path) -> None:
    repo = tmp_path / "ops"
    gitutil.init_repo(repo)
    marker = tmp_path / "helper.pid"
    (repo / "ops.py").write_text(f"MARKER = {str(marker)!r}\n" + textwrap.dedent(SLOW))
    (repo / ".github").mkdir()
    (repo / ".github" / "kernel-review.toml").write_text(POLICY)
    gitutil.commit_all(repo, "ops")
    env = {**os.environ, "KERNEL_REVIEW_CACHE": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "bot", "compiler-report", "--repo", str(repo)]
    proc = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not marker.exists() or not marker.read_text():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the helper never called the entry point"
            time.sleep(0.1)
        helper = int(marker.read_text())
        assert _alive(helper)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        left = int(marker.read_text() or 0) if marker.exists() else 0
        if left and _alive(left):  # a helper the command failed to end: not left behind
            os.kill(left, signal.SIGKILL)
    assert proc.returncode == 130 and "kernel-review: interrupted" in err, err
    assert took < 2.0, f"exited {took:.1f} s after SIGINT"
    assert not _alive(helper)
