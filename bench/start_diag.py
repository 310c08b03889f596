"""Where a run's start goes, outside the bot: fresh processes on this machine (one device call,
about 60 s).

    python3 bench/start_diag.py [--out DIR] [--reps 3] [--parts imports,first_ops,nvml]
        [--kept-key]

``imports``: a fresh ``python -I -B`` (the zygote's flags) importing torch and making Triton's
key five ways, in turn, ``--reps`` times: torch alone, the key alone, torch with the key in a
thread beside it (as the zygote did until 8f08b96), torch then the key, the key then torch (as
the zygote does since). Each prints when it had torch, the key and both, in seconds from its
start. The key is Triton's own (``triton_key()``, a hash of its files), or with ``--kept-key``
taken from a file an earlier process wrote (``checks/worker/triton_key.py``, as a run finds it).

``first_ops``: a fresh process that made its GPU context, then each GPU operation a case's first
check and the worker's loading thread run (inputs from a seeded generator, a type conversion,
the checks' compare and digest), the GPU synchronized after each, twice: the first time pays
for loading that operation's GPU code, the second is the operation itself. Run once alone and
once with ``correctness.exercise`` (the worker's loading thread) started in a thread just
before, as a worker's first check meets it.

``nvml``: what a worker's telemetry costs after each timed block (``telemetry.Nvml.read``, five
NVML queries), whole and query by query, 200 times each, in microseconds.

Writes ``imports.jsonl``, ``first_ops.jsonl``, ``nvml.json`` and ``results.md`` to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WAYS = ("torch", "key", "thread", "sequential", "key_first")

IMPORTS = r"""
import sys, threading, time
t0 = time.perf_counter(); m = {}
def key():
    if sys.argv[2]:  # a folder where the key is kept
        sys.path.insert(0, sys.argv[3])
        from checks.worker import triton_key as kept
        kept.warm(sys.argv[2])
    else:
        from triton.runtime.cache import triton_key
        triton_key()
    m["key"] = time.perf_counter() - t0
way = sys.argv[1]
if way == "torch":
    import torch; m["torch"] = time.perf_counter() - t0
elif way == "key":
    key()
elif way == "thread":
    th = threading.Thread(target=key); th.start()
    import torch; m["torch"] = time.perf_counter() - t0
    th.join()
elif way == "sequential":
    import torch; m["torch"] = time.perf_counter() - t0
    key()
elif way == "key_first":
    key()
    import torch; m["torch"] = time.perf_counter() - t0
m["both"] = time.perf_counter() - t0
import json; print(json.dumps({"way": way, **{k: round(v, 3) for k, v in m.items()}}))
"""

FIRST_OPS = r"""
import json, sys, threading, time
sys.path.insert(0, sys.argv[1])
beside = sys.argv[2] == "beside"
t0 = time.perf_counter()
import torch
torch.cuda.init(); torch.empty(1, device="cuda"); torch.cuda.synchronize()
ctx = time.perf_counter() - t0
from checks.worker import correctness as c
loader = None
if beside:
    loader = threading.Thread(target=lambda: (c.exercise(torch, "cuda"), torch.cuda.synchronize()))
    loader.start()
rows = []
def step(name, fn):
    for attempt in (1, 2):
        s = time.perf_counter(); fn(); torch.cuda.synchronize()
        rows.append({"op": name, "attempt": attempt, "ms": round((time.perf_counter() - s) * 1e3, 2)})
n = 1 << 20
box = {}
def gen():
    box["g"] = torch.Generator(device="cuda").manual_seed(1)
step("generator", gen)
step("randn_f32", lambda: box.update(x=torch.randn(n, generator=box["g"], device="cuda")))
step("to_bf16", lambda: box.update(b=box["x"].to(torch.bfloat16)))
step("empty_like", lambda: box.update(o=torch.empty_like(box["b"])))
step("ref_float_math", lambda: box.update(r=(2.0 * box["b"].float() + box["b"].float()).to(torch.bfloat16)))
step("clone", lambda: box.update(o=box["r"].clone()))
step("poison", lambda: c.poison([box["o"]]))
step("compare", lambda: c.compare(box["r"], box["r"]))
step("digest", lambda: c.digest(box["r"]))
l0 = time.perf_counter()
if loader is not None:
    loader.join()
print(json.dumps({"beside": beside, "ctx_s": round(ctx, 3), "ops_ms": round((l0 - t0 - ctx) * 1e3, 1),
                  "loader_left_ms": round((time.perf_counter() - l0) * 1e3, 1), "rows": rows}))
"""


NVML = r"""
import json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
from checks.worker import telemetry
t = telemetry.Nvml.open(index=0)
nv, h = t._nvml, t._h
queries = {
    "read (all five)": t.read,
    "sm clock": lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
    "mem clock": lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM),
    "temperature": lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU),
    "power": lambda: nv.nvmlDeviceGetPowerUsage(h),
    "clock event reasons": lambda: nv.nvmlDeviceGetCurrentClocksEventReasons(h),
}
out = {}
for name, fn in queries.items():
    took = []
    for _ in range(200):
        s = time.perf_counter(); fn(); took.append((time.perf_counter() - s) * 1e6)
    out[name] = {"median_us": round(statistics.median(took), 1), "max_us": round(max(took), 1)}
print(json.dumps(out))
"""


def run(code: str, *args: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-I", "-B", "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = out.stdout.strip().splitlines()
    if out.returncode or not lines:
        return {"error": out.stderr.strip().splitlines()[-3:], "args": list(args)}
    return json.loads(lines[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="start_diag")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--parts", default="imports,first_ops,nvml", help="which, comma-separated")
    ap.add_argument(
        "--kept-key", action="store_true", help="imports: Triton's key taken from a kept file"
    )
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    key_dir = tempfile.mkdtemp(prefix="kept-key-") if args.kept_key else ""
    if "imports" in parts:  # the page cache warm for all of them, and the key kept if asked
        run(IMPORTS, "sequential", key_dir, str(ROOT))
    imports = []
    for _ in range(args.reps if "imports" in parts else 0):
        for way in WAYS:
            imports.append(run(IMPORTS, way, key_dir, str(ROOT)))
            print(json.dumps(imports[-1]), flush=True)
    first = []
    for _ in range(2 if "first_ops" in parts else 0):
        for beside in ("alone", "beside"):
            first.append(run(FIRST_OPS, str(ROOT), beside))
            print(json.dumps(first[-1]), flush=True)
    nvml = run(NVML, str(ROOT)) if "nvml" in parts else {}
    print(json.dumps(nvml), flush=True)
    (out / "nvml.json").write_text(json.dumps(nvml, indent=1) + "\n")
    (out / "imports.jsonl").write_text("".join(json.dumps(r) + "\n" for r in imports))
    (out / "first_ops.jsonl").write_text("".join(json.dumps(r) + "\n" for r in first))
    lines = ["# A run's start, outside the bot", "", "## Imports (s from the process's start)", ""]
    lines += ["| way | torch | key | both |", "|---|---|---|---|"]
    for way in WAYS:
        got = [r for r in imports if r.get("way") == way]
        med = {
            k: statistics.median(r[k] for r in got) if got and k in got[0] else ""
            for k in ("torch", "key", "both")
        }
        lines.append(f"| {way} | {med['torch']} | {med['key']} | {med['both']} |")
    lines += ["", "## First operations after the GPU context (ms, first and second time)", ""]
    for r in first:
        if "rows" not in r:
            lines.append(f"- failed: {r}")
            continue
        ops = ", ".join(f"{x['op']} {x['ms']}" for x in r["rows"] if x["attempt"] == 1)
        again = ", ".join(f"{x['op']} {x['ms']}" for x in r["rows"] if x["attempt"] == 2)
        lines.append(
            f"- {'beside the loading thread' if r['beside'] else 'alone'}: context {r['ctx_s']} s, "
            f"operations {r['ops_ms']} ms (loader still ran {r['loader_left_ms']} ms after); "
            f"first: {ops}; again: {again}"
        )
    lines += ["", "## A worker's telemetry after each block (us, 200 reads each)", ""]
    lines += [
        f"- {k}: median {v['median_us']}, max {v['max_us']}"
        for k, v in nvml.items()
        if isinstance(v, dict)
    ] or [f"- failed: {nvml}"]
    (out / "results.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
