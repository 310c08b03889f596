"""A/A of bench/proof_kernels' scale_shift at 2^16 and 2^20 elements: ratio, interval, mode, calls
per block and each arm's median head/base ratio, one JSON line per case.

    PYTHONPATH=.:/tmp/site python3 bench/crossover_diag.py                     # crossover on, off
    PYTHONPATH=.:/tmp/site python3 bench/crossover_diag.py --compare preroll --reps 3

``--compare crossover`` (recorded on the H200: bench/results/h200/cli_decision/crossover_diag.jsonl)
runs crossover on and off; ``--compare preroll`` runs crossover with the graph blocks' untimed
pass over the input copies on and off.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from checks.sweep.protocol import default_protocol  # noqa: E402
from checks.sweep.run import SweepOptions, run_sweep  # noqa: E402
from checks.sweep.shapes import Case  # noqa: E402
from checks.sweep.workers import Timeouts  # noqa: E402

PROOF = ROOT / "bench" / "proof_kernels"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--compare", choices=["crossover", "preroll"], default="crossover")
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()
    for rep in range(args.reps):
        for on in (True, False):
            cross = on if args.compare == "crossover" else True
            preroll = on if args.compare == "preroll" else True
            tmp = Path(tempfile.mkdtemp())
            cases = [
                Case(kernel="scale_shift", bench="proofk:scale_shift", dims=d, dtype="float32",
                     tolerance=0.01)
                for d in ((2**16,), (2**20,))
            ]  # fmt: skip
            options = SweepOptions(
                device="cuda",
                protocol=default_protocol("cuda", crossover=cross).model_copy(
                    update={"graph_preroll": preroll}
                ),
                timeouts=Timeouts(prepare_s=120, block_s=30),
                max_gpu_seconds=600,
                ceilings_cache_dir=str(tmp / "c"),
            )
            result = run_sweep(
                cases, base_root=PROOF, head_root=PROOF, base_rev="a" * 40, head_rev="a" * 40,
                options=options, work_dir=tmp / "w",
            )  # fmt: skip
            for c in result.cases:
                arms: dict[int, list[float]] = {}
                for r in c.raw.rounds if c.raw else ():
                    arms.setdefault(r.arm, []).append(r.head.value_us / r.base.value_us)
                row = {
                    "rep": rep,
                    "crossover": cross,
                    "preroll": preroll,
                    "startup_s": result.startup_s,
                    "shape": c.shape,
                    "verdict": c.verdict,
                    "ratio": c.ratio,
                    "ci": [c.ci_low, c.ci_high],
                    "mode": c.mode,
                    "calls": [
                        c.base.calls_per_block if c.base else None,
                        c.head.calls_per_block if c.head else None,
                    ],
                    "rounds": c.rounds,
                    "arm_median_ratio": {k: sorted(v)[len(v) // 2] for k, v in arms.items()},
                }
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
