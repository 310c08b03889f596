"""How fast the SM clock comes up from idle under the warm-up's load, on this GPU: the basis for
the warm-up's minimum (``RunnerOptions.warmup_min_s``).

    python3 bench/clock_ramp.py --out DIR [--idle 1,3,8] [--repeats 2]

After each idle gap, the worker's own warm-up load (``checks.worker.timing.burn``, 50 ms at a
time) runs for 1 s with an NVML reading after every burst; the record is the clock after each
burst and when it first held at 85% of its maximum for three readings in a row (the warm-up's
rule). Writes ``clock_ramp.json`` into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from checks.worker import telemetry, timing  # noqa: E402
from checks.worker.main import clock_up  # noqa: E402

FRACTION = 0.85


def ramp(torch: object, nvml: telemetry.Nvml, seconds: float = 1.0) -> dict[str, object]:
    t0 = time.perf_counter()
    readings, good, held_at = [], 0, None
    while time.perf_counter() - t0 < seconds:
        timing.burn(torch, "cuda", 0.05)
        r = nvml.read()
        at = time.perf_counter() - t0
        readings.append({"s": round(at, 3), "sm_mhz": r.get("sm_clock_mhz")})
        good = good + 1 if clock_up(r, FRACTION) else 0
        if good >= 3 and held_at is None:
            held_at = round(at, 3)
    return {"readings": readings, "held_at_s": held_at}


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out", required=True)
    ap.add_argument("--idle", default="1,3,8", help="idle gaps before each ramp, seconds")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    import torch

    torch.cuda.init()
    nvml = telemetry.Nvml.open(None, 0)
    if nvml is None:
        print("clock_ramp: NVML cannot be read here", file=sys.stderr)
        return 1
    rows = []
    for _ in range(args.repeats):
        for idle in (float(x) for x in args.idle.split(",")):
            time.sleep(idle)
            before = nvml.read().get("sm_clock_mhz")
            got = ramp(torch, nvml)
            rows.append({"idle_s": idle, "idle_sm_mhz": before, **got})
            print(f"idle {idle:g} s ({before} MHz): held at {got['held_at_s']} s", file=sys.stderr)
    info = nvml.static_info()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "clock_ramp.json").write_text(
        json.dumps({"gpu": info, "fraction": FRACTION, "ramps": rows}, indent=1), encoding="utf-8"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
