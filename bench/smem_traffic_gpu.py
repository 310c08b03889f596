"""Shared-memory traffic of the fixture softmax, old (the C++ kernel) against new (Triton), on
this machine's GPU under its vendor's profiler (Part C-3).

    python bench/smem_traffic_gpu.py --out bench/results/h200/smem_traffic

It builds the fixture repository (``kernels_fixture.build_repo``), plans its review as the gate
would, and runs the C-3 check (``checks.compiler.profile.smem``) on the softmax kernel: each
served shape in each dtype (``--shapes``, ``--dtypes`` narrow it), base and head, each in a
process of its own under ``ncu`` (NVIDIA) or ``rocprofv3`` (AMD). It writes ``results.json``
(the evidence, as the results file carries it) and ``results.md`` (a table, the machine and the
versions). Profiling needs permission to read the GPU's performance counters: without it the
run stops at the first case and says what to change (ERR_NVGPUCTRPERM on NVIDIA).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.contracts.plan import PlannedShape  # noqa: E402
from bot.gitutil import add_worktree, remove_worktree  # noqa: E402
from bot.review.local import ReviewInputs, gpu_vendor, static_review  # noqa: E402
from checks.compiler.profile.smem import smem_evidence  # noqa: E402
from checks.compiler.targets import target_for  # noqa: E402
from kernels_fixture.build_repo import build_fixture_repo  # noqa: E402


def _environment() -> str:
    import torch
    import triton

    name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return f"{name}; torch {torch.__version__}, Triton {triton.__version__}, Python {sys.version.split()[0]}"


def _table(rows: list[dict]) -> list[str]:
    out = [
        "| shape | dtype | side | GPU kernel | launches | accesses | bank conflicts |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: (r["shape"], r["dtype"], r["side"] != "old")):
        out.append(
            f"| {'x'.join(map(str, r['shape']))} | {r['dtype']} | {r['side']} | `{r['function'][:80]}` "
            f"| {r['launches']} | {r['accesses']} | {r['conflicts']} |"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument(
        "--out", type=Path, required=True, help="folder for results.json and results.md"
    )
    ap.add_argument("--kernel", default="softmax", help="the fixture kernel (default softmax)")
    ap.add_argument("--shapes", help="only these shapes, e.g. 4096x4096,32768x1024")
    ap.add_argument("--dtypes", help="only these dtypes, e.g. float16")
    ap.add_argument("--budget-s", type=float, default=600.0, help="seconds of profiled processes")
    args = ap.parse_args(argv)
    vendor = gpu_vendor()
    if vendor is None:
        print("smem_traffic_gpu: no usable GPU here; run it on a GPU machine", file=sys.stderr)
        return 2
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kr-smem-bench-") as tmp:
        fixture = build_fixture_repo(Path(tmp) / "toyops")
        plan = static_review(
            ReviewInputs(
                repo=Path(fixture.path), base_sha=fixture.base_sha, head_sha=fixture.head_sha
            )
        ).plan
        kernels = [k for k in plan.kernels if k.name == args.kernel]
        if not kernels:
            print(
                f"smem_traffic_gpu: the fixture plan has no kernel {args.kernel!r}", file=sys.stderr
            )
            return 2
        k = kernels[0]
        shapes = k.shapes
        if args.shapes:
            wanted = {tuple(int(d) for d in s.split("x")) for s in args.shapes.split(",")}
            shapes = tuple(s for s in shapes if tuple(s.dims) in wanted)
        dtypes = tuple(args.dtypes.split(",")) if args.dtypes else k.dtypes
        # one planned kernel per dtype: the check profiles each kernel's first dtype
        one = [
            k.model_copy(
                update={"dtypes": (d,), "shapes": tuple(PlannedShape(dims=s.dims) for s in shapes)}
            )
            for d in dtypes
        ]
        trees = {
            "base": add_worktree(Path(fixture.path), Path(tmp) / "base", fixture.base_sha),
            "head": add_worktree(Path(fixture.path), Path(tmp) / "head", fixture.head_sha),
        }
        try:
            evidence = smem_evidence(
                plan.model_copy(update={"kernels": tuple(one)}),
                trees,
                target_for(vendor),
                shapes_per_kernel=len(shapes),
                budget_s=args.budget_s,
                gpu=_environment().split(";")[0],
                progress=lambda m: print(m, file=sys.stderr, flush=True),
            )
        finally:
            for tree in trees.values():
                remove_worktree(Path(fixture.path), tree)
    args.out.mkdir(parents=True, exist_ok=True)
    data = json.loads(evidence.model_dump_json(include={"smem", "not_run"}))
    (args.out / "results.json").write_text(json.dumps(data, indent=2) + "\n")
    units = sorted({(r["accesses_unit"], r["conflicts_unit"]) for r in data["smem"]})
    lines = [
        f"# Shared-memory traffic of the fixture {args.kernel}, old against new",
        "",
        f"Run {started} on {_environment()}, {time.monotonic() - t0:.0f} s "
        f"(`python bench/smem_traffic_gpu.py --out {args.out}`). Fixture base "
        f"{fixture.base_sha[:12]}, head {fixture.head_sha[:12]}.",
        "",
        *(f"Accesses are {a}; conflicts are {c}." for a, c in units),
        "",
        *_table(data["smem"]),
        "",
        *(f"- not run: {n['reason']}" for n in data["not_run"]),
    ]
    (args.out / "results.md").write_text("\n".join(lines).rstrip() + "\n")
    print("\n".join(lines))
    return 0 if data["smem"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
