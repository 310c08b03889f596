"""What starting a worker costs at the least: N fresh Python processes at once, each importing
torch, making a CUDA context, importing Triton and hashing Triton's key, with the time of each
step from the process's start (one device call, about 20 s).

    python3 bench/startup_floor.py [--out FILE]

Runs 1, 4 and 6 processes at once, then 1 again (the first run also pays a cold page cache).
Prints one JSON line per run: the wall time until the last process ended and each process's
marks in seconds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

CODE = r"""
import time, json; t0 = time.perf_counter(); m = {}
import torch; m["torch"] = time.perf_counter() - t0
torch.cuda.init(); torch.empty(1, device="cuda"); torch.cuda.synchronize()
m["ctx"] = time.perf_counter() - t0
import triton; m["triton"] = time.perf_counter() - t0
from triton.runtime.cache import triton_key
triton_key(); m["key"] = time.perf_counter() - t0
print(json.dumps({k: round(v, 3) for k, v in m.items()}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="also write the lines here")
    args = ap.parse_args()
    lines = []
    for n in (1, 4, 6, 1):
        t0 = time.perf_counter()
        procs = [
            subprocess.Popen([sys.executable, "-I", "-c", CODE], stdout=subprocess.PIPE, text=True)
            for _ in range(n)
        ]
        each = [json.loads(p.communicate()[0]) for p in procs]
        line = json.dumps({"n": n, "wall": round(time.perf_counter() - t0, 3), "each": each})
        print(line, flush=True)
        lines.append(line)
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
