"""rocprofv3: the command that collects LDS counters of a process, and its CSV read back.

``rocprofv3 --pmc C1 C2 --output-format csv -d DIR -o NAME -- python ...`` writes
``DIR/.../NAME_counter_collection.csv``: one row per dispatch and counter, with (among others)
``Dispatch_Id``, ``Kernel_Name``, ``Counter_Name`` and ``Counter_Value`` (ROCm 6.2 and later;
some versions put ``Agent_Type,Node_Id,Wave_Front_Size`` first). ``--selected-regions`` limits
collection to the code between ``roctxProfilerResume`` and ``roctxProfilerPause``.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from checks.compiler.profile.counters import KernelCounters, add_launch

# LDS instructions issued, cycles lost to LDS bank conflicts, and the waves they came from
COUNTERS = ("SQ_INSTS_LDS", "SQ_LDS_BANK_CONFLICT", "SQ_WAVES")
ACCESSES = ("SQ_INSTS_LDS",)
CONFLICTS = ("SQ_LDS_BANK_CONFLICT",)


def command(out_dir: str) -> list[str]:
    return [
        "rocprofv3",
        "--pmc",
        *COUNTERS,
        "--selected-regions",
        "--output-format",
        "csv",
        "-d",
        out_dir,
        "-o",
        "smem",
        "--",
    ]


def parse(text: str) -> list[KernelCounters]:
    """Per kernel name, every counter summed over its dispatches, in first-dispatch order."""
    found: dict[str, KernelCounters] = {}
    dispatches: dict[str, set[str]] = {}
    for row in csv.DictReader(io.StringIO(text)):
        name, counter = row.get("Kernel_Name"), row.get("Counter_Name")
        try:
            value = float(row.get("Counter_Value") or "")
        except ValueError:
            continue
        if not name or not counter:
            continue
        dispatches.setdefault(name, set()).add(
            row.get("Dispatch_Id") or row.get("Correlation_Id") or ""
        )
        add_launch(found, name, counter, value, len(dispatches[name]))
    return list(found.values())


def read_dir(out_dir: Path) -> list[KernelCounters]:
    """Every ``*counter_collection.csv`` under ``out_dir`` (rocprofv3 nests them by host and
    process), parsed and joined."""
    joined: dict[str, KernelCounters] = {}
    for path in sorted(out_dir.rglob("*counter_collection.csv")):
        for k in parse(path.read_text(errors="replace")):
            seen = joined.get(k.name)
            if seen is None:
                joined[k.name] = k
                continue
            seen.launches += k.launches
            for c, v in k.counters.items():
                seen.counters[c] = seen.counters.get(c, 0.0) + v
    return list(joined.values())
