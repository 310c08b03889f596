"""Where a ``kernel-review bench`` run's time goes, and whether the small-kernel bias between
worker processes follows where the inputs landed in memory (one device call, about 2 minutes).

    PYTHONPATH=.:/tmp/site python3 bench/cost_diag.py --out DIR

1. ``startup``: a fresh Python process as a worker starts: import torch, CUDA context, NVML,
   import triton, the first call of each of bench/cli_decision_kernels' kernels (Triton JIT
   compile, launcher build) with an empty Triton cache, then again with that cache filled.
2. ``footprint``: the scaled add at 2^16 and 2^20 elements timed by the worker's own
   ``CudaTimer`` in graph mode, with 16, 64 and 256 input copies; each setting set up 4 times
   after a spacer allocation of random size (so the copies land elsewhere), in 2 processes. If the
   per-process bias comes from L2 hits that depend on addresses, the spread between set-ups is
   large while the copies' footprint is near the L2 size and small once it is well above.
3. ``runs``: ``kernel-review bench`` on the identical-head repository of bench/cli_decision.py at
   tolerance 1% and 3% (crossover) and 3% without crossover, results kept: each case's
   ``phase_s`` and the run's ``startup_s`` say where the time went.

Writes ``cost_diag.json`` (and the three results files) into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

KERNELS = ROOT / "bench" / "cli_decision_kernels"

STARTUP = r"""
import json, os, sys, time
t0 = time.perf_counter()
marks = {}
def mark(k):
    marks[k] = round(time.perf_counter() - t0, 4)
import torch
mark("import_torch")
torch.cuda.init(); torch.empty(1, device="cuda"); torch.cuda.synchronize()
mark("cuda_context")
try:
    import pynvml
    pynvml.nvmlInit(); pynvml.nvmlDeviceGetHandleByIndex(0)
except Exception as exc:
    marks["nvml_error"] = str(exc)
mark("nvml")
import triton
mark("import_triton")
sys.path.insert(0, sys.argv[1])
from cdk import bench
mark("import_kernels")
a = bench.scaled_add((65536,), "float32", device="cuda")
a["fn"](); torch.cuda.synchronize()
mark("first_call_scaled_add")
b = bench.row_sum((64, 4096), "float32", device="cuda")
b["fn"](); torch.cuda.synchronize()
mark("first_call_row_sum")
c = bench.scaled_add((65537,), "float32", device="cuda")
c["fn"](); torch.cuda.synchronize()
mark("first_call_scaled_add_ragged")
print(json.dumps(marks))
"""

FOOTPRINT = r"""
import json, math, random, sys, time
import torch
sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2])
from checks.worker.timing import CudaTimer
from cdk import bench
l2 = int(torch.cuda.get_device_properties(0).L2_cache_size)
rng = random.Random(int(sys.argv[3]))
rows = []
for n in (2**16, 2**20):
    for copies in (16, 64, 256):
        for trial in range(4):
            spacer = torch.empty(rng.randrange(1, 64 * 2**20), dtype=torch.uint8, device="cuda")
            items = [bench.scaled_add((n,), "float32", device="cuda", seed=i) for i in range(copies)]
            for it in items:
                it["fn"]()
            timer = CudaTimer([it["fn"] for it in items], torch, l2_bytes=l2)
            est = timer.estimate_us()
            cfg = timer.configure("graph", 2.5)
            vals = sorted(timer.block()["value_us"] for _ in range(7))
            rows.append({"n": n, "copies": copies, "trial": trial, "footprint_over_l2":
                         round(copies * 12 * n / l2, 3), "median_us": vals[3], "est_us": est,
                         "calls": cfg["calls_per_block"], "spread_in_setup": vals[-1] / vals[0]})
            timer.release(); del items, spacer, timer
            torch.cuda.synchronize(); torch.cuda.empty_cache()
print(json.dumps({"l2_bytes": l2, "rows": rows}))
"""


def _py(code: str, *args: str, env: dict[str, str] | None = None) -> tuple[dict[str, Any], float]:
    t0 = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )
    wall = time.monotonic() - t0
    if p.returncode != 0:
        return {"error": p.stderr[-3000:]}, wall
    return json.loads(p.stdout.strip().splitlines()[-1]), wall


def startup() -> list[dict[str, Any]]:
    cache = tempfile.mkdtemp(prefix="triton-cache-")
    out = []
    for label in ("cold", "warm"):
        marks, wall = _py(STARTUP, str(KERNELS), env={"TRITON_CACHE_DIR": cache})
        out.append({"cache": label, "process_wall_s": round(wall, 3), **marks})
        print(f"startup {label}: {out[-1]}", file=sys.stderr, flush=True)
    return out


def footprint() -> list[dict[str, Any]]:
    out = []
    for proc in range(2):
        data, wall = _py(FOOTPRINT, str(KERNELS), str(ROOT), str(proc))
        out.append({"process": proc, "wall_s": round(wall, 2), **data})
        for n in (2**16, 2**20):
            for copies in (16, 64, 256):
                meds = [
                    r["median_us"]
                    for r in data.get("rows", [])
                    if r["n"] == n and r["copies"] == copies
                ]
                if meds:
                    print(
                        f"footprint p{proc} n={n} copies={copies}: set-ups {min(meds):.4f}-{max(meds):.4f} us "
                        f"(spread {max(meds) / min(meds):.4f})",
                        file=sys.stderr,
                        flush=True,
                    )
    return out


def runs(out_dir: Path, *, profile: bool = False) -> list[dict[str, Any]]:
    import cli_decision as cd

    from checks.worker.profiling import PROFILE_ENV

    work = Path(tempfile.mkdtemp(prefix="cost-diag-"))
    repo = cd.build_repo(work / "repo", cd.SHAPES_GPU)
    got = []
    for label, extra in (("t1", []), ("t3", []), ("t3", ["--no-crossover"])):
        head = cd.make_head(repo, f"base-{label}", f"aa-{label}", {}, "comment-only change")
        name = f"run-{label}{'-nox' if extra else ''}.json"
        if profile:  # every worker of this run profiles its commands (``--summarize`` reads them)
            os.environ[PROFILE_ENV] = str(out_dir / "profiles" / Path(name).stem)
        r = cd.run_cli(
            ["-m", "bot", "bench", "--repo", str(repo), "--base", f"base-{label}", "--head", head,
             "--out", str(out_dir / name), *extra],
            timeout_s=150,
        )  # fmt: skip
        r.pop("stdout", None)
        r["results"] = name
        got.append(r)
        print(
            f"run {name}: {r['wall_s']:.1f} s, first verdict {r['first_verdict_s']}",
            file=sys.stderr,
            flush=True,
        )
    return got


def summarize(folder: Path) -> str:
    """Where each kept run's time went: start-up steps, per-step totals over the cases, and
    each case's seconds, from the results files ``runs`` wrote."""
    rows = [f"# Where `kernel-review bench`'s time went ({folder.name})", ""]
    walls: dict[str, float] = {}
    diag = folder / "cost_diag.json"
    if diag.exists():  # the command's own wall time, as its caller saw it
        for r in json.loads(diag.read_text(encoding="utf-8")).get("runs", []):
            walls[r["results"]] = r["wall_s"]
    for path in sorted(folder.glob("run-*.json")):
        d = json.loads(path.read_text(encoding="utf-8"))
        totals: dict[str, float] = {}
        for c in d["cases"]:
            for k, v in (c.get("phase_s") or {}).items():
                totals[k] = totals.get(k, 0.0) + v
        per_case = sorted(c["gpu_seconds"] for c in d["cases"])
        verdicts = [c.get("verdict") for c in d["cases"]]
        rows += [
            f"## {path.name}: held {d['held_gpu_seconds']:.1f} s, first verdict "
            f"{d['first_verdict_s']:.1f} s, {verdicts.count('SAME')}/{len(verdicts)} SAME",
            "",
            "- start-up: " + ", ".join(f"{k} {v:.2f} s" for k, v in d.get("startup_s", {}).items()),
            "- wrap-up: " + ", ".join(f"{k} {v:.2f} s" for k, v in d.get("wrapup_s", {}).items()),
            *(
                [
                    f"- command wall {walls[path.name]:.2f} s: {walls[path.name] - d['held_gpu_seconds']:.2f} s "
                    "of it after the sweep's result was made (writing it, removing the worktrees, exit)"
                ]
                if path.name in walls
                else []
            ),
            "- cases, summed: " + ", ".join(f"{k} {v:.2f} s" for k, v in totals.items()),
            "- per case (s, sorted): "
            + ", ".join(f"{x:.2f}" for x in per_case)
            + f"; median {per_case[len(per_case) // 2]:.2f}",
            "",
        ]
        rows += _profile_rows(folder / "profiles" / path.stem)
    return "\n".join(rows)


def _profile_rows(folder: Path, top: int = 8) -> list[str]:
    """Per worker command, summed over a run's workers: its time, and the functions under it
    that took the most (with what they called, and on their own), from the profiles
    ``--profile`` had the workers write."""
    import pstats

    by_op: dict[str, list[Path]] = {}
    for prof in sorted(folder.glob("*.prof")):
        by_op.setdefault(prof.name.split(".")[-2], []).append(prof)
    rows = []
    for op, paths in sorted(by_op.items()):
        stats = pstats.Stats(*map(str, paths))
        entries = stats.stats  # type: ignore[attr-defined]
        spent = sum(v[2] for v in entries.values())  # every function's own time: all of it
        rows.append(f"### workers' `{op}`: {spent:.2f} s over {len(paths)} workers")

        def shown(key: tuple[str, int, str]) -> bool:
            file, _, fn = key
            return not (fn.startswith("op_") or fn == "run" or file.startswith("<frozen "))

        kept = [(k, v) for k, v in entries.items() if shown(k)]
        for label, col in (("cumulative", 3), ("own", 2)):
            for (file, line, fn), v in sorted(kept, key=lambda kv: -kv[1][col])[:top]:
                rows.append(
                    f"- {label} {v[col]:.3f} s, {v[1]} calls: {fn} ({Path(file).name}:{line})"
                )
        rows.append("")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", choices=["startup", "footprint", "runs"], action="append")
    ap.add_argument("--summarize", action="store_true", help="print a summary of --out's runs")
    ap.add_argument(
        "--profile",
        action="store_true",
        help="runs: every worker profiles its commands into --out/profiles (cProfile)",
    )
    args = ap.parse_args()
    out = Path(args.out)
    if args.summarize:
        print(summarize(out))
        return 0
    out.mkdir(parents=True, exist_ok=True)
    random.seed(0)
    parts = args.only or ["startup", "footprint", "runs"]
    result: dict[str, Any] = {}
    for part in parts:
        result[part] = (
            startup()
            if part == "startup"
            else footprint()
            if part == "footprint"
            else runs(out, profile=args.profile)
        )
        (out / "cost_diag.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
