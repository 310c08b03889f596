"""Two ways of doing one thing, timed side by side in one call: alternating order, each way's
median, and a record naming the script, the time and the machine. Used by ``cli_start.py`` and
``helper_exit.py``; ``cost_side_by_side.py`` takes its alternating order for whole runs."""

from __future__ import annotations

import datetime as dt
import os
import platform
import statistics
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def alternate(ways: Mapping[str, Callable[[], T]], repeats: int) -> dict[str, list[T]]:
    """Each way's answer (its seconds, or a whole record), ``repeats`` times, the order turned
    round every repeat."""
    names = list(ways)
    times: dict[str, list[T]] = {name: [] for name in names}
    for i in range(repeats):
        for name in names if i % 2 == 0 else names[::-1]:
            times[name].append(ways[name]())
    return times


def record(
    script: str, versions: str, what: str, times: Mapping[str, list[float]], out: Path | None
) -> str:
    """The record's text (also written to ``out`` when given, and printed): a header with the
    script, the date, the machine and ``versions``, then one line per way with its median."""
    width = max(len(name) for name in times)
    rows = [
        f"# {Path(script).name}: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')}",
        f"# {platform.node()} {platform.processor() or platform.machine()}, "
        f"{len(os.sched_getaffinity(0))} cores; {versions}",
        f"# {what}, alternating order",
    ]
    for name, got in times.items():
        rows.append(
            f"{name:<{width}} median {statistics.median(got):.3f} s  "
            + " ".join(f"{t:.3f}" for t in got)
        )
    text = "\n".join(rows) + "\n"
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    print(text, end="")
    return text
