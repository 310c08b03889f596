"""When this process started, on the ``time.monotonic`` clock: a command's all-in cost and its
time to the first verdict count from the moment it was run, Python's own start and imports
included, not from the line that first reads the clock."""

from __future__ import annotations

import os
import time

_PROC_STAT = "/proc/self/stat"
_UPTIME = "/proc/uptime"


def process_age_s(stat_path: str = _PROC_STAT, uptime_path: str = _UPTIME) -> float:
    """Seconds since this process was started (Linux ``/proc``: its start time in clock ticks
    after boot against the system's uptime, 10 ms resolution); 0.0 where that cannot be read."""
    try:
        with open(stat_path, encoding="ascii") as f:
            stat = f.read()
        with open(uptime_path, encoding="ascii") as f:
            uptime = float(f.read().split()[0])
        # the command name (field 2) is in parentheses and may hold spaces: fields after the last ')'
        fields = stat[stat.rindex(")") + 2 :].split()
        ticks = int(fields[19])  # field 22, starttime
        age = uptime - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0
    return max(0.0, age)


def process_started() -> float:
    """``time.monotonic()`` at this process's start (now, where the start cannot be read)."""
    return time.monotonic() - process_age_s()
