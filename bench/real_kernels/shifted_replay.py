"""The verdict rule on real kernels' recorded A/A rounds, with head's times scaled by 1 + e.

    python bench/real_kernels/shifted_replay.py [--raw DIR] [--out FILE]

Each results file in ``--raw`` (``run.py`` keeps them in ``raw-part<N>/``) holds every round a
real kernel gave with identical code on both sides. Scaling head's block times by 1.05 or 1.10
keeps each round's noise, each execution's offset and each autotuner pick as the GPU gave them,
and asks what the rule (``checks.sweep.summary.recompute``) reads then: how often it says SLOWER.
It is not a measure of detection (real extra work changes how a kernel runs, and the sweep's
later passes depend on what the earlier ones read); it shows what the rule can see in real
noise, and how the pooling bound (``POOL_SPREAD``) trades power for safety, without a GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from checks.sweep import executions  # noqa: E402
from checks.sweep.models import SweepResult  # noqa: E402
from checks.sweep.summary import recompute  # noqa: E402

RAW = ROOT / "bench" / "results" / "h200" / "real_kernels_steps" / "a595e8f" / "raw-part1"
SHIFTS = (0.0, 0.05, 0.10)
SPREADS = (0.5, 1.0, float("inf"))  # the rule's POOL_SPREAD, a looser one, and none (F test only)


def shifted(result: SweepResult, e: float) -> SweepResult:
    cases = []
    for c in result.cases:
        if c.raw is None:
            cases.append(c)
            continue
        rounds = tuple(
            r.model_copy(
                update={"head": r.head.model_copy(update={"value_us": r.head.value_us * (1 + e)})}
            )
            for r in c.raw.rounds
        )
        cases.append(c.model_copy(update={"raw": c.raw.model_copy(update={"rounds": rounds})}))
    return result.model_copy(update={"cases": tuple(cases)})


def detectable(results: list[SweepResult], e: float) -> set[tuple[int, tuple]]:
    """(file, case) of the cases whose A/A interval's half-width is under e / 2."""
    out = set()
    for i, r in enumerate(results):
        for c in recompute(r).cases:
            if (
                c.ci_low is not None
                and c.ci_high is not None
                and (c.ci_high - c.ci_low) / 2 < e / 2
            ):
                out.add((i, c.key))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--raw", type=Path, default=RAW, help="folder of results files with rounds")
    ap.add_argument("--out", type=Path, help="write the table as JSON here")
    args = ap.parse_args(argv)
    files = sorted(args.raw.glob("*.json"))
    if not files:
        print(f"error: no results files in {args.raw}", file=sys.stderr)
        return 2
    results = [SweepResult.model_validate(json.loads(f.read_text(encoding="utf-8"))) for f in files]
    table = []
    # the shapes the A/A run allows an effect e to be seen in (as ``rk_summary`` counts
    # detection): the A/A interval's half-width in head/base under e / 2
    allowed = {e: detectable(results, e) for e in SHIFTS if e}
    for e, keys in allowed.items():
        got = Counter(
            c.verdict
            for i, r in enumerate(results)
            for c in recompute(shifted(r, e)).cases
            if (i, c.key) in keys
        )
        row = {"shift": e, "allowed": len(keys), "verdicts_over_allowed": dict(sorted(got.items()))}
        table.append(row)
        print(json.dumps(row))
    original = executions.POOL_SPREAD
    try:
        for spread in SPREADS:
            executions.POOL_SPREAD = spread
            for e in SHIFTS:
                got: Counter[str] = Counter()
                for r in results:
                    got.update(c.verdict or c.status for c in recompute(shifted(r, e)).cases)
                row = {"pool_spread": spread, "shift": e, "verdicts": dict(sorted(got.items()))}
                table.append(row)
                print(json.dumps(row))
    finally:
        executions.POOL_SPREAD = original
    if args.out:
        args.out.write_text(
            json.dumps({"files": [f.name for f in files], "table": table}, indent=1) + "\n",
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
