"""Nsight Compute: the command that profiles a process, and its ``--csv`` output read back.

``ncu --csv --metrics M1,M2 --log-file FILE`` writes one row per kernel launch and metric:
``"ID","Process ID","Process Name","Host Name","Kernel Name",...,"Metric Name","Metric Unit",
"Metric Value"`` (values may carry thousands separators). What ncu prints before the header
(``==PROF==`` lines) and the application's own output are skipped.
"""

from __future__ import annotations

import csv
import io

from checks.compiler.profile.counters import KernelCounters, add_launch

# shared-memory load/store wavefronts (an n-way bank conflict costs n wavefronts) and the bank
# conflicts among them, through the LSU pipe of L1TEX
METRICS = (
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "smsp__inst_executed_op_shared_ld.sum",
    "smsp__inst_executed_op_shared_st.sum",
)
ACCESSES = METRICS[:2]
CONFLICTS = METRICS[2:4]
NO_PERMISSION = "ERR_NVGPUCTRPERM"


def command(log_file: str) -> list[str]:
    """The ncu prefix for one profiled process (only the region between cudaProfilerStart and
    cudaProfilerStop, every child process)."""
    return [
        "ncu",
        "--csv",
        "--metrics",
        ",".join(METRICS),
        "--profile-from-start",
        "off",
        "--target-processes",
        "all",
        "--log-file",
        log_file,
    ]


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", "").strip())
    except ValueError:
        return None


def parse(text: str) -> list[KernelCounters]:
    """Per kernel name, every metric summed over its launches, in first-launch order."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID","Process ID"')), None)
    if start is None:
        return []
    found: dict[str, KernelCounters] = {}
    launches: dict[str, set[str]] = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        name, metric = row.get("Kernel Name"), row.get("Metric Name")
        value = _number(row.get("Metric Value") or "")
        if not name or not metric or value is None:
            continue
        launches.setdefault(name, set()).add(row.get("ID") or "")
        add_launch(found, name, metric, value, len(launches[name]))
    return list(found.values())


def refusal(text: str) -> str | None:
    """The permission error ncu printed, if it printed one."""
    for line in text.splitlines():
        if NO_PERMISSION in line:
            return line[line.index(NO_PERMISSION) :].strip()
    return None
