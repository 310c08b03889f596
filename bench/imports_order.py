"""The zygote's imports, Triton's key kept from an earlier run (``checks/worker/triton_key.py``):
fresh ``python -I -B`` processes (the zygote's flags) four ways, alternating, ``REPS`` times
(default 4): the key in a thread beside torch's import (as the zygote did), torch then the key,
the key then torch, torch alone. Each prints when it had torch, the key and both, in seconds from
its start, as JSON lines.

    python3 bench/imports_order.py [REPS] > imports.jsonl

Recorded: bench/results/h200/cost_side_by_side/imports_in_turn/.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WAYS = ("thread", "torch_key", "key_torch", "torch")
CODE = r"""
import sys, threading, time
t0 = time.perf_counter(); m = {}
sys.path.insert(0, sys.argv[3])
from checks.worker import triton_key as tk
def key():
    tk.warm(sys.argv[2]); m["key"] = time.perf_counter() - t0
way = sys.argv[1]
if way == "thread":
    th = threading.Thread(target=key); th.start()
    import torch; m["torch"] = time.perf_counter() - t0
    th.join()
elif way == "torch_key":
    import torch; m["torch"] = time.perf_counter() - t0
    key()
elif way == "key_torch":
    key()
    import torch; m["torch"] = time.perf_counter() - t0
else:
    import torch; m["torch"] = time.perf_counter() - t0
m["both"] = time.perf_counter() - t0
import json; print(json.dumps({"way": way, **{k: round(v, 3) for k, v in m.items()}}))
"""


def run(way: str, key_dir: str) -> str:
    cmd = [sys.executable, "-I", "-B", "-c", CODE, way, key_dir, str(ROOT)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.stdout.strip() or p.stderr[-500:]


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    key_dir = tempfile.mkdtemp()
    run("torch_key", key_dir)  # the key made and kept once, as an earlier run leaves it
    for _ in range(reps):
        for way in WAYS:
            print(run(way, key_dir), flush=True)


if __name__ == "__main__":
    main()
