"""Check the fixture's kernels on a GPU: correct on both sides, and roughly how fast.

    python bench/fixture_gpu_check.py --out bench/results/h200/fixture_gpu_check
    python bench/fixture_gpu_check.py --tune --out bench/results/h200/fixture_tune

Builds the fixture repository, checks out base and head, and runs every operator of each side
in its own subprocess (a crash loses one operator, not the run): base's hand-written vector_add
and softmax (built with torch.utils.cpp_extension: needs nvcc or hipcc, and ninja) and its Triton
matmul; head's Triton vector_add, softmax and matmul, its rollback softmax
(TOYOPS_SOFTMAX_IMPL=cuda) and the hand-written matmul. Each case is checked against its
reference, then timed with ``triton.testing.do_bench`` (median; it flushes L2 before each call),
and reported as achieved GB/s against a measured device-to-device copy, or TFLOP/s against
torch.matmul on the same shape. Rough numbers for the fixture's own sake, not the bot's verdict.
Writes OUT.json and OUT.md.

``--tune`` skips base and the C++ kernels (no builds; a few minutes in all): head's Triton
operators as shipped and their torch references, then the launch-settings sweep of softmax and
matmul (``fixture_tune.py``), with the fastest setting per shape and the goals it reaches.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import fixture_tune  # noqa: E402

TAG = "RESULT "
WORKER_TIMEOUT_S = 300

VECTOR_ADD = [
    ((2**26,), "float32"),
    ((2**26,), "bfloat16"),
    ((1_000_003,), "float32"),
    ((4096,), "float32"),
]
SOFTMAX = [
    ((1823, 781), "float32"),
    ((4096, 4096), "float32"),
    ((32768, 1024), "float32"),
    ((4096, 4096), "float16"),
]
MATMUL = [((4096, 4096, 4096), "bfloat16"), ((1000, 1000, 1000), "bfloat16")]
GOALS = [  # (op, shape, dtype, metric, threshold): what the fixture's Triton kernels should reach
    ("vector_add", (2**26,), "float32", "frac_copy", 0.95),
    ("softmax", (4096, 4096), "float32", "frac_copy", 0.85),
    ("softmax", (32768, 1024), "float32", "frac_copy", 0.85),
    ("matmul", (4096, 4096, 4096), "bfloat16", "frac_torch", 0.90),
]


# --- worker side ---------------------------------------------------------------------------------


def _emit(record: dict[str, Any]) -> None:
    print(TAG + json.dumps(record), flush=True)


def _time_ms(fn: Any) -> float:
    import triton

    return float(triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median"))


def _run_case(entry: Any, shape: tuple[int, ...], dtype: str) -> dict[str, Any]:
    import torch

    rec: dict[str, Any] = {"shape": list(shape), "dtype": dtype}
    try:
        t0 = time.perf_counter()
        case = entry(shape, dtype, device="cuda", seed=0)
        out = case["fn"]()
        torch.cuda.synchronize()
        rec["first_call_s"] = time.perf_counter() - t0
        ref = case["reference"]()
        err = (out.float() - ref.float()).abs()
        rec["max_abs_err"] = float(err.max())
        rec["ok"] = bool(
            torch.allclose(out.float(), ref.float(), atol=case["atol"], rtol=case["rtol"])
        )
        if not rec["ok"]:
            rec["error"] = f"wrong result (atol={case['atol']}, rtol={case['rtol']})"
            return rec
        ms = _time_ms(case["fn"])
        rec["median_us"] = 1000.0 * ms
        rec["gbps"] = case["bytes_moved"] / (ms * 1e-3) / 1e9
        rec["tflops"] = case["flops"] / (ms * 1e-3) / 1e12
    except Exception as exc:
        rec["ok"] = False
        rec["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        rec["traceback"] = traceback.format_exc()[-3000:]
        print(rec["traceback"], file=sys.stderr, flush=True)
    return rec


def _probe_vector_add() -> None:
    """Block size and warps of the Triton vector_add at 2**26 float32."""
    import torch
    import triton
    from toyops.vector_add import vector_add_kernel

    n = 2**26
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    for block, warps in ((1024, 4), (2048, 8), (4096, 4), (4096, 8), (8192, 8), (8192, 16)):
        rec: dict[str, Any] = {"probe": "vector_add", "block": block, "num_warps": warps}
        try:
            kernel = vector_add_kernel[(triton.cdiv(n, block),)]
            launch = functools.partial(kernel, x, y, out, n, BLOCK_SIZE=block, num_warps=warps)
            rec["gbps"] = 12 * n / (_time_ms(launch) * 1e-3) / 1e9
        except Exception as exc:
            rec["error"] = str(exc)[:500]
        _emit(rec)


def _probe_softmax() -> None:
    """Warps of the Triton softmax at float32: one program per row (unpipelined, as shipped on
    NVIDIA) and the persistent grid (pipelined as deep as shared memory allows)."""
    import importlib

    import torch
    import triton

    # Not `import toyops.softmax as sm`: toyops/__init__.py binds the name `softmax` to the
    # function, and that import form returns the package's attribute.
    sm = importlib.import_module("toyops.softmax")
    props = triton.runtime.driver.active.utils.get_device_properties(torch.cuda.current_device())
    persistent_stages = sm._num_stages(props["max_shared_mem"])
    for rows, cols in ((4096, 4096), (32768, 1024), (1823, 781)):
        x = torch.randn(rows, cols, device="cuda")
        y = torch.empty_like(x)
        expected = torch.softmax(x, dim=-1)
        block = triton.next_power_of_2(cols)
        for grid in ("per_row", "persistent"):
            for warps in (4, 8, 16, 32):
                rec: dict[str, Any] = {
                    "probe": "softmax",
                    "shape": [rows, cols],
                    "grid": grid,
                    "num_warps": warps,
                }
                try:
                    stages, programs = 1, rows
                    if grid == "persistent":
                        stages = persistent_stages
                        programs = min(sm.persistent_grid(y, x, block, warps, stages), rows)
                    rec.update(num_stages=stages, programs=programs)
                    launch = functools.partial(
                        sm.launch,
                        y,
                        x,
                        programs=programs,
                        block_size=block,
                        num_warps=warps,
                        num_stages=stages,
                    )
                    y.fill_(float("nan"))
                    launch()
                    rec["ok"] = bool(torch.allclose(y, expected, atol=1e-6, rtol=1e-4))
                    rec["gbps"] = 8 * rows * cols / (_time_ms(launch) * 1e-3) / 1e9
                except Exception as exc:
                    rec["error"] = str(exc)[:500]
                _emit(rec)


def _ceilings() -> None:
    import torch

    src = torch.randn(2**28, device="cuda")  # 1 GiB
    dst = torch.empty_like(src)
    ms = _time_ms(lambda: dst.copy_(src))
    _emit({"ceiling": "copy", "gbps": 2 * src.numel() * 4 / (ms * 1e-3) / 1e9})


def worker(spec: dict[str, Any]) -> int:
    import torch
    import triton

    sys.path.insert(0, spec["root"])
    _emit(
        {
            "device": torch.cuda.get_device_name(),
            "torch": torch.__version__,
            "triton": triton.__version__,
        }
    )
    if spec.get("ceilings"):
        _ceilings()
    if spec.get("tune"):
        {"softmax": fixture_tune.tune_softmax, "matmul": fixture_tune.tune_matmul}[spec["tune"]](
            _emit
        )
        return 0
    import importlib

    module_name, func = spec["entry"].split(":")
    entry = getattr(importlib.import_module(module_name), func)
    for shape, dtype in spec["cases"]:
        _emit({"case": _run_case(entry, tuple(shape), dtype)})
    for probe in spec.get("probes", []):
        {"vector_add": _probe_vector_add, "softmax": _probe_softmax}[probe]()
    return 0


# --- parent side ---------------------------------------------------------------------------------


def _plan(tune: bool = False) -> list[dict[str, Any]]:
    """(side, label, entry, cases, env, needs C++) for every worker, Triton-only ones first.

    ``tune``: head's torch and Triton workers and the two sweeps, which go before head's Triton
    workers so that these find every config compiled (the sweeps compile in parallel)."""
    va, sm, mm = (list(map(list, cases)) for cases in (VECTOR_ADD, SOFTMAX, MATMUL))
    if tune:
        return [
            {"side": "head", "impl": "torch", "op": "vector_add", "entry": "toyops.bench:vector_add_ref", "cases": va, "ceilings": True},
            {"side": "head", "impl": "torch", "op": "softmax", "entry": "toyops.bench:softmax_ref", "cases": sm},
            {"side": "head", "impl": "torch", "op": "matmul", "entry": "toyops.bench:matmul_ref", "cases": mm},
            {"side": "head", "impl": "triton", "op": "softmax", "entry": "tune:softmax", "cases": [], "tune": "softmax"},
            {"side": "head", "impl": "triton", "op": "matmul", "entry": "tune:matmul", "cases": [], "tune": "matmul"},
            {"side": "head", "impl": "triton", "op": "vector_add", "entry": "toyops.bench:vector_add", "cases": va},
            {"side": "head", "impl": "triton", "op": "softmax", "entry": "toyops.bench:softmax", "cases": sm},
            {"side": "head", "impl": "triton", "op": "matmul", "entry": "toyops.bench:matmul", "cases": mm},
        ]  # fmt: skip
    return [
        {"side": "head", "impl": "torch", "op": "vector_add", "entry": "toyops.bench:vector_add_ref", "cases": va, "ceilings": True},
        {"side": "head", "impl": "torch", "op": "softmax", "entry": "toyops.bench:softmax_ref", "cases": sm},
        {"side": "head", "impl": "torch", "op": "matmul", "entry": "toyops.bench:matmul_ref", "cases": mm},
        {"side": "head", "impl": "triton", "op": "vector_add", "entry": "toyops.bench:vector_add", "cases": va, "probes": ["vector_add"]},
        {"side": "head", "impl": "triton", "op": "softmax", "entry": "toyops.bench:softmax", "cases": sm, "probes": ["softmax"]},
        {"side": "head", "impl": "triton", "op": "matmul", "entry": "toyops.bench:matmul", "cases": mm},
        {"side": "base", "impl": "triton", "op": "matmul", "entry": "toyops.bench:matmul", "cases": mm},
        {"side": "base", "impl": "cxx", "op": "vector_add", "entry": "toyops.bench:vector_add", "cases": va},
        {"side": "base", "impl": "cxx", "op": "softmax", "entry": "toyops.bench:softmax", "cases": sm},
        {"side": "head", "impl": "cxx", "op": "softmax", "entry": "toyops.bench:softmax", "cases": sm, "env": {"TOYOPS_SOFTMAX_IMPL": "cuda"}},
        {"side": "head", "impl": "cxx", "op": "matmul", "entry": "toyops.bench:matmul_cxx", "cases": mm},
    ]  # fmt: skip


def _start_builds(
    trees: dict[str, Path], env: dict[str, str]
) -> list[tuple[str, subprocess.Popen[str], float]]:
    """Compile the C++ extensions in the background while the Triton workers run."""
    code = "import sys, toyops._cext as c; c.load(sys.argv[1]); print('built', sys.argv[1])"
    builds = []
    for side, op in (("base", "vector_add"), ("head", "softmax"), ("head", "matmul")):
        proc = subprocess.Popen(
            [sys.executable, "-c", code, op],
            cwd=trees[side],
            env={**env, "PYTHONPATH": str(trees[side])},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        builds.append((op, proc, time.perf_counter()))
    return builds


def _finish_builds(builds: list[tuple[str, subprocess.Popen[str], float]]) -> list[dict[str, Any]]:
    done = []
    for op, proc, start in builds:
        try:
            out, _ = proc.communicate(timeout=max(10.0, 400 - (time.perf_counter() - start)))
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        record = {"op": op, "ok": proc.returncode == 0, "seconds": time.perf_counter() - start}
        if proc.returncode != 0:
            record["error"] = out[-3000:]
        print(
            f"[build] {op}: {'ok' if record['ok'] else 'FAILED'} after {record['seconds']:.0f}s",
            flush=True,
        )
        if not record["ok"]:
            print(out[-3000:], flush=True)
        done.append(record)
    return done


def _run_worker(job: dict[str, Any], tree: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    spec = {**job, "root": str(tree)}
    label = f"{job['side']}/{job['impl']}/{job['op']}"
    print(f"[worker] {label}: {job['entry']}", flush=True)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)]
    worker_env = {
        **env,
        "PYTHONPATH": os.pathsep.join([str(tree), str(ROOT)]),
        **job.get("env", {}),
    }
    records: list[dict[str, Any]] = []
    try:
        proc = subprocess.run(
            cmd, cwd=tree, env=worker_env, capture_output=True, text=True, timeout=WORKER_TIMEOUT_S
        )
        out, err, rc = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err, rc = f"timed out after {WORKER_TIMEOUT_S}s", -9
    for line in out.splitlines():
        if line.startswith(TAG):
            rec = json.loads(line[len(TAG) :])
            rec.update(side=job["side"], impl=job["impl"], op=job["op"], entry=job["entry"])
            records.append(rec)
            print(
                f"  {json.dumps({k: v for k, v in rec.items() if k != 'traceback'})[:400]}",
                flush=True,
            )
    seen = {(tuple(r["case"]["shape"]), r["case"]["dtype"]) for r in records if "case" in r}
    for shape, dtype in job["cases"]:
        if (tuple(shape), dtype) not in seen:  # the worker died before this case
            case = {
                "shape": shape,
                "dtype": dtype,
                "ok": False,
                "error": f"worker exited {rc}: {err[-1500:]}",
            }
            records.append(
                {
                    "case": case,
                    "side": job["side"],
                    "impl": job["impl"],
                    "op": job["op"],
                    "entry": job["entry"],
                }
            )
    if rc != 0:
        print(f"  worker exited {rc}\n{err[-3000:]}", flush=True)
        if job.get("tune"):  # a sweep has no cases to mark: say that it stopped, and why
            records.append(
                {"tune": "worker_failed", "kind": job["tune"], "error": f"worker exited {rc}: {err[-1500:]}"}
            )  # fmt: skip
    return records


def _summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    copy = next((r["gbps"] for r in records if r.get("ceiling") == "copy"), None)
    rows = [
        {**r["case"], **{k: r[k] for k in ("side", "impl", "op", "entry")}}
        for r in records
        if "case" in r
    ]
    torch_tflops = {
        (r["op"], tuple(r["shape"]), r["dtype"]): r.get("tflops")
        for r in rows
        if r["impl"] == "torch"
    }
    for row in rows:
        if copy and row.get("gbps") and row["op"] != "matmul":
            row["frac_copy"] = row["gbps"] / copy
        ref = torch_tflops.get((row["op"], tuple(row["shape"]), row["dtype"]))
        if ref and row.get("tflops"):
            row["frac_torch"] = row["tflops"] / ref
    # What the review compares: the default implementation of each side (base C++ vector_add and
    # softmax, base Triton matmul) against head's Triton.
    timed = {
        (r["side"], r["impl"], r["op"], tuple(r["shape"]), r["dtype"]): r.get("median_us")
        for r in rows
    }
    comparisons = []
    for (side, impl, op, shape, dtype), head_us in timed.items():
        if (side, impl) != ("head", "triton"):
            continue
        base_us = timed.get(("base", "cxx", op, shape, dtype)) or timed.get(
            ("base", "triton", op, shape, dtype)
        )
        if head_us and base_us:
            comparisons.append(
                {"op": op, "shape": list(shape), "dtype": dtype, "base_us": base_us,
                 "head_us": head_us, "head_over_base": head_us / base_us}
            )  # fmt: skip
    goals = []
    for op, shape, dtype, metric, threshold in GOALS:
        row = next(
            (
                r
                for r in rows
                if (r["side"], r["impl"], r["op"], tuple(r["shape"]), r["dtype"])
                == ("head", "triton", op, shape, dtype)
            ),
            None,
        )
        value = row.get(metric) if row else None
        goals.append(
            {
                "op": op,
                "shape": list(shape),
                "dtype": dtype,
                "metric": metric,
                "threshold": threshold,
                "value": value,
                "met": value is not None and value >= threshold,
            }
        )
    return {
        "copy_gbps": copy,
        "rows": rows,
        "goals": goals,
        "comparisons": comparisons,
        "probes": [r for r in records if "probe" in r],
    }


def _short(error: Any) -> str:
    """The last line of an error (the exception itself), fit for a table cell."""
    lines = [line.strip() for line in str(error or "").splitlines() if line.strip()]
    return (lines[-1] if lines else "")[:120].replace("|", "/")


def _markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Fixture kernels on the GPU" + (" (--tune)" if report.get("tune") else ""),
        "",
        f"Device: {report.get('device')}; torch {report.get('torch')}, triton {report.get('triton')}; "
        f"copy ceiling {report['copy_gbps'] or 0:.0f} GB/s (do_bench median, reads + writes); "
        f"wall time {report['wall_s']:.0f} s.",
        "",
        "| op | side | impl | shape | dtype | ok | max err | first call s | median us | GB/s | % copy | TFLOP/s | % torch |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]

    def fmt(v: Any, spec: str) -> str:
        return "" if v is None else format(v, spec)

    for r in sorted(
        report["rows"], key=lambda r: (r["op"], str(r["shape"]), r["dtype"], r["side"], r["impl"])
    ):
        lines.append(
            f"| {r['op']} | {r['side']} | {r['impl']} | {'x'.join(map(str, r['shape']))} | {r['dtype']} | "
            f"{'yes' if r.get('ok') else 'NO: ' + _short(r.get('error'))} | "
            f"{fmt(r.get('max_abs_err'), '.2e')} | {fmt(r.get('first_call_s'), '.2f')} | {fmt(r.get('median_us'), '.1f')} | "
            f"{fmt(r.get('gbps'), '.0f')} | {fmt(r.get('frac_copy') and 100 * r['frac_copy'], '.1f')} | "
            f"{fmt(r.get('tflops') or None, '.1f')} | {fmt(r.get('frac_torch') and 100 * r['frac_torch'], '.1f')} |"
        )
    lines += [
        "",
        "## Goals (head, Triton)",
        "",
        "| op | shape | dtype | metric | value | goal | met |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for g in report["goals"]:
        lines.append(
            f"| {g['op']} | {'x'.join(map(str, g['shape']))} | {g['dtype']} | {g['metric']} | {fmt(g['value'], '.3f')} | {g['threshold']} | {'yes' if g['met'] else 'NO'} |"
        )
    if report["comparisons"]:
        lines += [
            "",
            "## Head against base (the review's pairs; base C++ for vector_add and softmax)",
            "",
            "| op | shape | dtype | base us | head us | head / base |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
    for c in report["comparisons"]:
        lines.append(
            f"| {c['op']} | {'x'.join(map(str, c['shape']))} | {c['dtype']} | {c['base_us']:.1f} | "
            f"{c['head_us']:.1f} | {c['head_over_base']:.3f} |"
        )
    if report["builds"]:
        lines += ["", "## Builds", ""] + [
            f"- {b['op']}: {'ok' if b['ok'] else 'FAILED'} in {b['seconds']:.0f} s"
            for b in report["builds"]
        ]
    if report["probes"]:
        lines += ["", "## Probes (Triton launch settings, GB/s)", ""]
    for p in report["probes"]:
        lines.append(
            f"- {json.dumps({k: v for k, v in p.items() if k not in ('side', 'impl', 'entry')})}"
        )
    if report.get("tune"):
        lines += fixture_tune.markdown(report["tune"])
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, help="write OUT.json and OUT.md")
    parser.add_argument(
        "--workdir",
        type=Path,
        help="where to build the repository and caches (default: a temp dir)",
    )
    parser.add_argument(
        "--tune",
        action="store_true",
        help="head only, no C++ builds: sweep softmax and matmul launch settings",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(json.loads(args.worker))
    if not args.out:
        parser.error("--out is required")

    from bot.gitutil import add_worktree
    from kernels_fixture.build_repo import build_fixture_repo

    started = time.perf_counter()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="fixture-gpu-"))
    workdir.mkdir(parents=True, exist_ok=True)
    repo = build_fixture_repo(workdir / "repo")
    trees = {
        "base": add_worktree(repo.path, workdir / "base", repo.base_sha),
        "head": add_worktree(repo.path, workdir / "head", repo.head_sha),
    }
    print(
        f"fixture repository {repo.path}: base {repo.base_sha[:10]}, head {repo.head_sha[:10]}",
        flush=True,
    )
    env = {
        k: v for k, v in os.environ.items() if k not in ("TOYOPS_SOFTMAX_IMPL", "TRITON_INTERPRET")
    }
    env.update(
        TRITON_CACHE_DIR=str(workdir / "triton-cache"),
        TOYOPS_BUILD_DIR=str(workdir / "toyops-build"),
    )

    builds = [] if args.tune else _start_builds(trees, env)
    records: list[dict[str, Any]] = []
    build_records: list[dict[str, Any]] | None = None
    for job in _plan(args.tune):
        if job["impl"] == "cxx" and build_records is None:
            build_records = _finish_builds(builds)
        records += _run_worker(job, trees[job["side"]], env)
    if build_records is None:
        build_records = _finish_builds(builds)

    report: dict[str, Any] = next(
        ({k: r[k] for k in ("device", "torch", "triton")} for r in records if "device" in r), {}
    )
    report.update(
        _summarize(records),
        builds=build_records,
        wall_s=time.perf_counter() - started,
        base_sha=repo.base_sha,
        head_sha=repo.head_sha,
        mode="tune" if args.tune else "check",
    )
    if args.tune:
        report["tune"] = fixture_tune.summarize(records, report["copy_gbps"], GOALS)
    out = args.out if args.out.suffix == ".json" else args.out.with_name(args.out.name + ".json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    out.with_suffix(".md").write_text(_markdown(report))
    print(_markdown(report))
    if args.tune:
        print("\n".join(["Fastest settings:", *fixture_tune.best_lines(report["tune"])]))
    print(f"wrote {out} and {out.with_suffix('.md')}")
    failed = [r for r in report["rows"] if not r.get("ok")]
    return 1 if failed or not all(b["ok"] for b in build_records) else 0


if __name__ == "__main__":
    sys.exit(main())
