"""Where the fixture's measure job spends its time, from the files a recorded job left.

    python bench/fixture_job_breakdown.py bench/results/h200/fixture_job/call1 \
        bench/results/h200/fixture_job/call2 --out bench/results/h200/fixture_job/results.md

Each folder is what ``bench/cli_decision.py --part 3 --keep-fixture-job DIR`` keeps: ``run.md``
(the job's log with the time of each line) and ``sweep-<vendor>-*.json`` (every case with its
phases). Measures nothing: it reads the job's own lines (each check's ``done in``, each first
call's start) and sums the sweep's phases the way ``kernel-review bench`` prints its ``where:``
line, splitting the checks' time into the cases whose first call built or compiled for seconds
(the first case of a kernel whose check took over ``--slow-check-s``), the ones whose autotuner
ran (either side recorded a pick), and the rest.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from checks.sweep.models import ShapeResult, load_results  # noqa: E402
from checks.sweep.summary import SET_UP_PHASES, time_line  # noqa: E402

LINE = re.compile(r"^\s*\[\s*([\d.]+) s\] (.*)$")
DONE = re.compile(r"^(\w+): done in ([\d.]+) s$")
FIRST_CALL = re.compile(r"^first call: (\S+) \(")
JOB = re.compile(r"measure job: ([\d.]+) s")


def job_lines(run_md: str) -> list[tuple[float, str]]:
    """The job's progress lines with their times (seconds from the job's start)."""
    out = []
    for line in run_md.splitlines():
        m = LINE.match(line)
        if m:
            out.append((float(m.group(1)), m.group(2)))
    return out


def check_times(lines: list[tuple[float, str]]) -> dict[str, float]:
    """Each check's own ``<check>: done in N s``."""
    return {m.group(1): float(m.group(2)) for _, text in lines if (m := DONE.match(text))}


def first_call_times(lines: list[tuple[float, str]]) -> dict[str, float]:
    """Each kernel's first-call check, from its start line to the next kernel's (the last one's
    to the check's end)."""
    starts = [(t, m.group(1)) for t, text in lines if (m := FIRST_CALL.match(text))]
    end = next((t for t, text in lines if text.startswith("first_call: done in")), None)
    out = {}
    for i, (t, kernel) in enumerate(starts):
        stop = starts[i + 1][0] if i + 1 < len(starts) else end
        if stop is not None:
            out[kernel] = stop - t
    return out


def _autotuned(case: ShapeResult) -> bool:
    return any(side is not None and side.configs_picked for side in (case.base, case.head))


def split_checks(cases: list[ShapeResult], slow_check_s: float) -> dict[str, float]:
    """The checks' seconds in three parts: a kernel's first case whose check took over
    ``slow_check_s`` (a build or cold compile inside the first call), cases whose autotuner ran,
    and the rest (correctness on fresh inputs, compiled kernels)."""
    parts = {"first case built or compiled": 0.0, "autotuned": 0.0, "other": 0.0}
    seen: set[str] = set()
    for c in cases:
        check = c.phase_s.get("check", 0.0)
        first = c.kernel not in seen
        seen.add(c.kernel)
        if first and check > slow_check_s:
            parts["first case built or compiled"] += check
        elif _autotuned(c):
            parts["autotuned"] += check
        else:
            parts["other"] += check
    return parts


def describe(folder: Path, slow_check_s: float) -> list[str]:
    run_md = (folder / "run.md").read_text(encoding="utf-8")
    lines = job_lines(run_md)
    job = JOB.search(run_md)
    checks = check_times(lines)
    rows = [f"## {folder.name}", ""]
    head = run_md.splitlines()[0].lstrip("# ") if run_md else ""
    rows += [head, ""]
    rows.append(
        "- measure job: "
        + (f"{float(job.group(1)):.1f} s" if job else "-")
        + "; "
        + ", ".join(f"{k} {v:.1f} s" for k, v in checks.items())
    )
    sweeps = sorted(folder.glob("sweep-*.json"))
    if sweeps:
        result = load_results(sweeps[0])
        timed = [c for c in result.cases if c.phase_s]
        parts = split_checks(timed, slow_check_s)
        where = time_line(result) or ""
        rows.append(f"- sweep, as `kernel-review bench` says it: {where.removeprefix('where: ')}")
        rows.append(
            "- the sweep's checks split: " + ", ".join(f"{k} {v:.1f} s" for k, v in parts.items())
        )
        slow = [
            f"{c.kernel} {c.dtype} {'x'.join(map(str, c.shape))} {c.phase_s['check']:.1f} s"
            for c in timed
            if c.phase_s.get("check", 0.0) > slow_check_s
        ]
        if slow:
            rows.append("- checks over the threshold: " + "; ".join(slow))
        setup = {p: sum(c.phase_s.get(p, 0.0) for c in timed) for p in SET_UP_PHASES}
        rows.append("- set-up by phase: " + ", ".join(f"{k} {v:.2f} s" for k, v in setup.items()))
        rows.append(
            f"- first verdict {result.first_verdict_s:.1f} s after the sweep started; "
            f"{len(timed)} cases"
            if result.first_verdict_s is not None
            else f"- {len(timed)} cases"
        )
    per_kernel = first_call_times(lines)
    if per_kernel:
        rows.append(
            "- first call per kernel (priming, cold and warm processes): "
            + ", ".join(f"{k} {v:.1f} s" for k, v in per_kernel.items())
        )
    return [*rows, ""]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", type=Path, help="folders a recorded job left")
    ap.add_argument("--out", type=Path, help="write the markdown here (default: print it)")
    ap.add_argument(
        "--slow-check-s",
        type=float,
        default=10.0,
        help="a kernel's first check over this many seconds counts as building or compiling",
    )
    args = ap.parse_args(argv)
    missing = [str(f) for f in args.folders if not (f / "run.md").is_file()]
    if missing:
        ap.error(f"no run.md in {', '.join(missing)}: give folders a recorded fixture job left")
    rows = ["# Where the fixture's measure job spends its time", ""]
    rows.append(
        "Made by `bench/fixture_job_breakdown.py` from the folders below; measures nothing."
    )
    rows.append("")
    for folder in args.folders:
        rows += describe(folder, args.slow_check_s)
    text = "\n".join(rows)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
