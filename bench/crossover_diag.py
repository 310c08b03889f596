"""A/A of bench/proof_kernels' scale_shift at 2^16 and 2^20 elements, crossover on and off, twice
each: ratio, interval, mode, calls per block and each arm's median head/base ratio, one JSON line
per case (recorded on the H200: bench/results/h200/cli_decision/crossover_diag.jsonl).

    PYTHONPATH=.:/tmp/site python3 bench/crossover_diag.py
"""

from __future__ import annotations

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
    for rep in range(2):
        for cross in (True, False):
            tmp = Path(tempfile.mkdtemp())
            cases = [
                Case(kernel="scale_shift", bench="proofk:scale_shift", dims=d, dtype="float32",
                     tolerance=0.01)
                for d in ((2**16,), (2**20,))
            ]  # fmt: skip
            options = SweepOptions(
                device="cuda",
                protocol=default_protocol("cuda", crossover=cross),
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
