"""A command's start: read from /proc, so its all-in cost includes Python's own start."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from bot.clock import process_age_s, process_started
from tests.paths import ROOT


def _proc(
    tmp_path: Path, starttime_ticks: int, uptime_s: float, comm: str = "python3"
) -> tuple[str, str]:
    fields = ["S"] + ["0"] * 18 + [str(starttime_ticks)] + ["0"] * 10
    stat, up = tmp_path / "stat", tmp_path / "uptime"
    stat.write_text(f"4242 ({comm}) " + " ".join(fields) + "\n", encoding="ascii")
    up.write_text(f"{uptime_s:.2f} 1.00\n", encoding="ascii")
    return str(stat), str(up)


def test_age_from_start_ticks_and_uptime(tmp_path: Path) -> None:
    hz = os.sysconf("SC_CLK_TCK")
    stat, up = _proc(tmp_path, starttime_ticks=100 * hz, uptime_s=102.5)
    assert abs(process_age_s(stat, up) - 2.5) < 1e-6
    # a command name with spaces and a parenthesis does not shift the fields
    stat, up = _proc(tmp_path, starttime_ticks=10 * hz, uptime_s=11.0, comm="a b) c")
    assert abs(process_age_s(stat, up) - 1.0) < 1e-6


def test_unreadable_or_garbled_proc_means_now(tmp_path: Path) -> None:
    assert process_age_s(str(tmp_path / "missing"), str(tmp_path / "missing")) == 0.0
    (tmp_path / "stat").write_text("garbage", encoding="ascii")
    (tmp_path / "uptime").write_text("1.0 1.0", encoding="ascii")
    assert process_age_s(str(tmp_path / "stat"), str(tmp_path / "uptime")) == 0.0


def test_a_fresh_process_reads_its_own_start() -> None:
    """A child that sleeps before asking: its age covers the sleep (and its own start)."""
    code = (
        "import time; time.sleep(0.3); from bot.clock import process_age_s; print(process_age_s())"
    )
    t0 = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    wall = time.monotonic() - t0
    age = float(out.stdout)
    assert 0.3 <= age <= wall + 0.02  # 10 ms ticks
    assert process_started() <= time.monotonic()
