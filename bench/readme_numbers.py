"""Put the recorded decision and cost numbers of ``bench/cli_decision.py`` into README.md.

    python bench/readme_numbers.py bench/results/h200/cli_decision/summary.json

Rewrites the lines between ``<!-- cli_decision:start -->`` and ``<!-- cli_decision:end -->`` in
README.md from the summary, so the headline quotes what was measured, all-in cost included.
A CPU summary is refused: its numbers are plumbing, not a measurement.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = "cli_decision"


def fill_block(text: str, name: str, body: str) -> str:
    """``text`` with the lines between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->``
    replaced by ``body``; ValueError where there is no such block."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    if start not in text or end not in text:
        raise ValueError(f"no {start} ... {end} block to fill")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    indent = head[len(head.rstrip(" ")) :]  # the end marker lines up with the start marker
    return f"{head}{start}\n{body}\n{indent}{end}{tail}"


def _n(x: Any, fmt: str = "{:.2f}") -> str:
    return "?" if x is None else fmt.format(x)


def sentence(s: dict[str, Any]) -> str:
    fa = s["aa_false_alarms"]
    one, three = fa["0.01"], fa["0.03"]
    job = s["fixture_measure_job_s"]
    return (
        f"  - `bench/results/h200/cli_decision/`: `kernel-review bench` itself, through the command line, on\n"
        f"    kernels it never saw, A/A: {one['slower']} of {one['verdicts']} verdicts SLOWER and "
        f"{one['not_same']} not SAME at tolerance 1%, {three['slower']} and {three['not_same']} of "
        f"{three['verdicts']} at 3%; 10% slower caught at {s['detect_10pct']} served shapes "
        f"({s.get('detect_10pct_where_realised', '?')} where the head really was over the tolerance slower), 3% at "
        f"{s['detect_3pct_at_0p015']} ({s.get('detect_3pct_at_0p015_where_realised', '?')}; tolerance 1.5%), "
        f"one slower shape found exactly: {s['one_shape_exact']}.\n"
        f"    All in (the GPU held from the command's start, per verdict): {_n(s['gpu_s_per_verdict_all_in_median'])} "
        f"GPU-s, {_n(s.get('gpu_s_per_case_median'))} per case once started, against "
        f"{_n(s['dobench_gpu_s_per_pair'])} GPU-s per do_bench pair\n"
        f"    (its two calls only; {_n(s.get('dobench_all_in_gpu_s_per_pair'))} all in, from a fresh process{_kept(s)}); "
        f"first verdict {_n(s.get('time_to_first_verdict_own_repo_median_s'), '{:.1f}')} s after the start\n"
        f"    (fixture {_n(s['time_to_first_verdict_s'], '{:.1f}')} s with its C++ kernels to build, "
        f"{_n(s.get('time_to_first_verdict_warm_s'), '{:.1f}')} s once built); the fixture's measure job "
        + ("did not finish within its limit." if job is None else f"{job:.0f} s{_split(s)}.")
    )


def _kept(s: dict[str, Any]) -> str:
    """do_bench all in once its Python kept torch's bytecode, and with that and an empty Triton
    cache, where the call measured them."""
    kept = s.get("dobench_all_in_bytecode_kept_gpu_s_per_pair")
    empty = s.get("dobench_all_in_empty_cache_gpu_s_per_pair")
    said = (
        ""
        if kept is None
        else f", {_n(kept)} once its Python kept torch's bytecode as kernel-review does"
    )
    if empty is not None:
        said += f", {_n(empty)} with that bytecode and an empty Triton cache, as kernel-review starts each side"
    return said


def _split(s: dict[str, Any]) -> str:
    """The job's checks in the order they ended; the compiler report runs beside the others."""
    checks = dict(s.get("fixture_measure_job_checks_s") or {})
    beside = checks.pop("compiler", None)
    if not checks:
        return ""
    text = " then ".join(f"{k.replace('_', ' ')} {v:.0f} s" for k, v in checks.items())
    if beside is not None:
        text += f"; the compiler report's {beside:.0f} s beside them"
    builds = s.get("fixture_measure_job_builds_s")
    if builds == 0:
        text += (
            "; the fixture's C++ extensions built before the job, as a runner that ran it has them"
        )
    elif builds:
        text += f"; {builds:.0f} s of it the fixture's own C++ builds"
    return f" ({text})"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    summary = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    if summary.get("meta", {}).get("device") == "cpu":
        print("error: this summary is CPU timing; record it on a GPU first", file=sys.stderr)
        return 1
    try:
        text = fill_block(README.read_text(encoding="utf-8"), BLOCK, sentence(summary))
    except ValueError as exc:
        print(f"error: README.md has {exc}", file=sys.stderr)
        return 1
    README.write_text(text, encoding="utf-8")
    print(f"README.md: numbers from {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
