"""The compiler report and the first-call cost of the fixture kernels on a GPU.

    python bench/compiler_first_call_gpu.py --out bench/results/h200/compiler_first_call
    python bench/compiler_first_call_gpu.py --parts report,real --out /tmp/cf   # a subset

Parts (each writes its results as soon as it is done, so a time limit keeps what finished):

- ``report``: the cross-compiled compiler report (compile-only, the policy's NVIDIA target) of
  the fixture's three kernels, every config, every served shape and dtype: cold (empty cache)
  and warm, with wall times.
- ``real``: the same kernels run on this GPU for every served shape: the config the autotuner
  picked per shape, and the registers and spills the driver reports for each compiled variant
  (``n_regs``, ``n_spills``) against the cross-compiled ones for the same variant.
- ``first-call``: per kernel, fresh processes with an empty then a warm Triton cache: imports,
  context, per-stage compile time, autotuning, time to first result per shape, distinct
  autotune keys, serving the distribution once; judged against the fixture policy's budget.
  The CPU compile-only variant of the same measurement is recorded beside it.
- ``cxx``: the hand-written CUDA kernels' build and load cost (``torch.utils.cpp_extension``),
  cold (empty build directory) and warm, each in a fresh process.
- ``distribution``: per kernel, the first-call check twice, side by side (in alternating
  order): with serving every shape once timed as a pass of its own (``measured``), and derived
  from the shapes' own first calls (the default): each one's wall time, and the derived total
  against the timed one from the same cold process, shape by shape.

Output: ``results.json`` (everything) and ``results.md`` (the tables) in ``--out``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from checks.compiler import triton_compat  # noqa: E402
from checks.compiler.run import KernelSpec, build_compiler_report  # noqa: E402
from checks.first_call.measure import derive_distribution, measure_first_call  # noqa: E402

FIXTURE = ROOT / "kernels_fixture"
POLICY = FIXTURE / "repo_files" / "kernel-review.toml"
PARTS = ("report", "real", "first-call", "cxx", "distribution")


def load_policy() -> dict[str, Any]:
    import tomllib  # Python 3.11+, as on the GPU machines

    data = tomllib.loads(POLICY.read_text())
    specs = []
    for k in data["kernels"]:
        shapes = tuple(tuple(s["shape"] if isinstance(s, dict) else s) for s in k["shapes"])
        specs.append(
            KernelSpec(name=k["name"], bench=k["bench"], shapes=shapes, dtypes=tuple(k["dtypes"]))
        )
    return {
        "specs": specs,
        "deployment": data.get("deployment", {"kind": "long-lived"}),
        "nvidia_target": data.get("compiler", {}).get("nvidia_targets", ["sm_90"])[0],
        "targets": data.get("compiler", {}).get("nvidia_targets", ["sm_90"])
        + data.get("compiler", {}).get("amd_targets", ["gfx942", "gfx90a"]),
    }


def environment() -> dict[str, Any]:
    import torch
    import triton

    env = {
        "when": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "triton": triton.__version__,
        "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
        "capability": list(torch.cuda.get_device_capability())
        if torch.cuda.is_available()
        else None,
        "cpus": os.cpu_count(),
    }
    try:
        env["nvcc"] = (
            subprocess.run(["nvcc", "--version"], capture_output=True, text=True)
            .stdout.strip()
            .splitlines()[-1]
        )
    except OSError:
        env["nvcc"] = None
    return env


def part_report(policy: dict, scratch: Path) -> dict[str, Any]:
    cache = scratch / "compile-cache"
    targets = policy["targets"]
    timings = {}
    for run in ("cold", "warm"):
        start = time.perf_counter()
        report = build_compiler_report(FIXTURE, policy["specs"], targets, cache_dir=cache)
        timings[run] = {
            "wall_s": round(time.perf_counter() - start, 2),
            "compiled": report.compiled,
            "cached": report.cached,
        }
    return {"targets": targets, "timings": timings, "report": report.model_dump(mode="json")}


def part_real(policy: dict, cross: dict[str, Any] | None, scratch: Path) -> dict[str, Any]:
    import torch

    triton_compat.set_cache_dir(str(scratch / "real-triton-cache"))  # every variant compiles here

    sys.path.insert(0, str(FIXTURE))
    bench = importlib.import_module("toyops.bench")
    modules = [
        m
        for m in list(sys.modules.values())
        if str(getattr(m, "__file__", "")).startswith(str(FIXTURE))
    ]
    kernels = triton_compat.find_kernels(modules)
    picks = []
    for spec in policy["specs"]:
        entry = getattr(bench, spec.bench.split(":")[1])
        for dtype in spec.dtypes:
            for shape in spec.shapes:
                case = entry(shape, dtype, device="cuda", seed=0)
                with triton_compat.observe_compiles_and_autotuning() as (compiles, tunes):
                    start = time.perf_counter()
                    case["fn"]()
                    torch.cuda.synchronize()
                    first = time.perf_counter() - start
                picks.append(
                    {
                        "kernel": spec.name,
                        "shape": "x".join(map(str, shape)) + f":{dtype}",
                        "first_call_ms": round(first * 1000, 2),
                        "compiled": sum(not c.cache_hit for c in compiles),
                        "autotuned": [
                            {"key": t.key, "config": t.config, "bench_s": t.bench_s} for t in tunes
                        ],
                    }
                )
    variants = triton_compat.compiled_variants(kernels)
    major, minor = torch.cuda.get_device_capability()
    here = f"sm_{major}{minor}"
    crossed = {}
    for r in (cross or {}).get("records", []):
        if r["target"] == here:
            crossed[(r["function"], r["config_label"], r["specialization"])] = r
    for v in variants:
        c = crossed.get((v["function"], v["config_label"], v["specialization"]))
        v["cross_regs_per_thread"] = c["regs_per_thread"] if c else None
        v["cross_stack_bytes"] = c["stack_bytes"] if c else None
        v["cross_spill_bytes"] = c["spill_bytes"] if c else None
        v["cross_shared_bytes"] = c["shared_bytes"] if c else None
        v["matched"] = c is not None
    return {"autotune_picks": picks, "variants": variants}


def _first_call(policy: dict, spec: KernelSpec, mode: str, workdir: Path, **kw: Any) -> Any:
    """``measure_first_call`` of a fixture kernel, judged by the fixture policy's deployment."""
    dep = policy["deployment"]
    return measure_first_call(
        FIXTURE,
        spec,
        mode=mode,  # type: ignore[arg-type]
        deployment_kind=dep.get("kind", "long-lived"),
        budget_ms=dep.get("first_call_budget_ms"),
        target=policy["nvidia_target"],
        workdir=workdir,
        **kw,
    )


def part_first_call(policy: dict, scratch: Path, with_compile_only: bool) -> list[dict[str, Any]]:
    import torch

    modes: tuple[str, ...] = ("gpu",) if torch.cuda.is_available() else ()
    if with_compile_only or not modes:
        modes += ("compile-only",)
    rows = []
    for spec in policy["specs"]:
        for mode in modes:
            rep = _first_call(policy, spec, mode, scratch / "first-call-caches" / mode)
            rows.append(rep.model_dump(mode="json"))
    return rows


def part_distribution(policy: dict, scratch: Path) -> list[dict[str, Any]]:
    """Measured against derived: the whole check's wall time each way, and per shape the timed
    pass against what ``derive_distribution`` makes of the same process's standalone pass."""
    import torch

    mode = "gpu" if torch.cuda.is_available() else "compile-only"
    rows = []
    for i, spec in enumerate(policy["specs"]):
        row: dict[str, Any] = {"kernel": spec.name, "mode": mode}
        # the order alternates: the second run finds the compilers' own files read already
        ways = ("measured", "derived") if i % 2 == 0 else ("derived", "measured")
        row["order"] = list(ways)
        for j, way in enumerate(ways):
            start = time.perf_counter()
            rep = _first_call(
                policy,
                spec,
                mode,
                scratch / "distribution" / way,
                prime=i == 0 and j == 0,
                distribution=way,
            )
            row[f"{way}_check_s"] = round(time.perf_counter() - start, 2)
            row[f"{way}_cold_total_ms"] = rep.cold_total_ms
            row[f"{way}_distinct_compiles"] = rep.distinct_compiles
            row[f"{way}_verdict"] = rep.verdict
            if way == "measured" and rep.cold is not None and not rep.cold.error:
                derived = derive_distribution(rep.cold.standalone)
                same = rep.cold.model_copy(update={"distribution": derived})
                row["same_process_derived_total_ms"] = same.distribution_ms
                row["shapes"] = [
                    {
                        "shape": m.shape,
                        "timed_ms": m.first_call_ms,
                        "derived_ms": d.first_call_ms,
                        "timed_compiles": m.compiles,
                        "derived_compiles": d.compiles,
                        "timed_autotune_ms": m.autotune_ms,
                        "derived_autotune_ms": d.autotune_ms,
                    }
                    for m, d in zip(rep.cold.distribution, derived, strict=False)
                ]
        rows.append(row)
    return rows


_CXX_PROBE = """
import json, sys, time
t0 = time.perf_counter()
import torch
sys.path.insert(0, {fixture!r})
from toyops import _cext
t1 = time.perf_counter()
module = _cext.load({op!r})
t2 = time.perf_counter()
print(json.dumps({{"import_ms": (t1 - t0) * 1000, "build_and_load_ms": (t2 - t1) * 1000}}))
"""


def part_cxx() -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="toyops-build-") as build:
        env = {**os.environ, "TOYOPS_BUILD_DIR": build}
        for op in ("vector_add", "softmax", "matmul"):
            for run in ("cold", "warm"):
                code = _CXX_PROBE.format(fixture=str(FIXTURE), op=op)
                start = time.perf_counter()
                done = subprocess.run(
                    [sys.executable, "-c", code],
                    capture_output=True,
                    text=True,
                    env=env,
                    timeout=900,
                )
                row: dict[str, Any] = {
                    "op": op,
                    "run": run,
                    "process_s": round(time.perf_counter() - start, 2),
                }
                if done.returncode == 0:
                    row.update(json.loads(done.stdout.strip().splitlines()[-1]))
                else:
                    row["error"] = (done.stderr or done.stdout)[-800:]
                rows.append(row)
    return rows


def render(results: dict[str, Any]) -> str:
    where = results["env"].get("gpu") or f"a CPU ({results['env'].get('cpus')} cores, compile-only)"
    lines = [f"# Compiler report and first-call cost on {where}", ""]
    lines.append(
        f"torch {results['env']['torch']}, Triton {results['env']['triton']}, {results['env']['when']}"
    )
    if "report" in results:
        t = results["report"]["timings"]
        # results written by an earlier version of this script name a single target
        targets = results["report"].get("targets") or [results["report"].get("target", "?")]
        lines += [
            "",
            f"## Cross-compiled report ({', '.join(targets)}, no GPU needed)",
            "",
            f"cold: {t['cold']['wall_s']} s for {t['cold']['compiled']} variants on "
            f"{results['env']['cpus']} cores; warm: {t['warm']['wall_s']} s",
            "",
        ]
        lines += [
            f"- {f['severity']}: {f['message']}" for f in results["report"]["report"]["flags"]
        ]
    if "real" in results:
        lines += ["", "## Real compiled kernels against the cross-compiled ones", ""]
        lines.append(
            "| function | config | specialization | regs real / cross | local bytes real (n_spills x 4) / cross stack | shared real / cross |"
        )
        lines.append("|---|---|---|---|---|---|")
        for v in results["real"]["variants"]:
            lines.append(
                f"| {v['function']} | {v['config_label']} | {v['specialization'][:60]} | "
                f"{v['n_regs']} / {v['cross_regs_per_thread']} | {v['n_spills'] * 4} / "
                f"{v['cross_stack_bytes']} | {v['shared_bytes']} / {v['cross_shared_bytes']} |"
            )
        lines += ["", "### The autotuner's pick per shape", ""]
        lines.append("| kernel | shape | first call ms | compiled | picked config | autotune s |")
        lines.append("|---|---|---|---|---|---|")
        for p in results["real"]["autotune_picks"]:
            for t in p["autotuned"] or [{"config": "-", "bench_s": None}]:
                lines.append(
                    f"| {p['kernel']} | {p['shape']} | {p['first_call_ms']} | {p['compiled']} | "
                    f"{t['config']} | {t['bench_s'] if t['bench_s'] is not None else '-'} |"
                )
    if "first_call" in results:
        lines += ["", "## First-call cost (fresh processes)", ""]
        lines.append(
            "| kernel | mode | verdict | cold first call ms | warm first call ms | distinct keys | compiles | cold total ms | autotune ms | over budget (cold) | over budget (warm) |"
        )
        lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in results["first_call"]:
            lines.append(
                f"| {r['kernel']} | {r['mode']} | {r['verdict']} | {r['cold_first_call_ms']} | "
                f"{r['warm_first_call_ms']} | {r['distinct_autotune_keys']} | {r['distinct_compiles']} | "
                f"{r['cold_total_ms']} | {r['autotune_ms_total']} | {', '.join(r['over_budget_shapes']) or '-'} | "
                f"{', '.join(r['warm_over_budget_shapes']) or '-'} |"
            )
    if "cxx" in results:
        lines += ["", "## The C++ side: build and load (torch.utils.cpp_extension)", ""]
        lines.append("| op | run | build + load ms | process s | error |")
        lines.append("|---|---|---|---|---|")
        for r in results["cxx"]:
            lines.append(
                f"| {r['op']} | {r['run']} | {round(r.get('build_and_load_ms', 0))} | {r['process_s']} | "
                f"{(r.get('error') or '-')[:80]} |"
            )
    if "distribution" in results:
        lines += ["", "## Serving every shape once: timed as a pass, or derived", ""]
        lines.append(
            "| kernel | check s, timed pass | check s, derived | cold total ms, timed | derived, same process | derived, own run | compiles timed / derived |"
        )
        lines.append("|---|---|---|---|---|---|---|")
        for r in results["distribution"]:
            lines.append(
                f"| {r['kernel']} | {r['measured_check_s']} | {r['derived_check_s']} | "
                f"{r['measured_cold_total_ms']} | {r.get('same_process_derived_total_ms')} | "
                f"{r['derived_cold_total_ms']} | {r['measured_distinct_compiles']} / "
                f"{r['derived_distinct_compiles']} |"
            )
        for r in results["distribution"]:
            lines += ["", f"{r['kernel']}, per shape (timed / derived ms, compiles):", ""]
            lines += [
                f"- {s['shape']}: {s['timed_ms']} / {s['derived_ms']} ms, "
                f"{s['timed_compiles']} / {s['derived_compiles']}"
                for s in r.get("shapes", [])
            ]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--parts", default=",".join(PARTS), help=f"comma list of {', '.join(PARTS)}")
    ap.add_argument("--kernels", help="comma list of the fixture's kernels (default: all)")
    ap.add_argument(
        "--with-compile-only",
        action="store_true",
        help="first-call: also the CPU compile-only measurement, beside the GPU one",
    )
    args = ap.parse_args()
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    args.out.mkdir(parents=True, exist_ok=True)
    policy = load_policy()
    if args.kernels:
        wanted = set(args.kernels.split(","))
        policy["specs"] = [s for s in policy["specs"] if s.name in wanted]
    results: dict[str, Any] = {"env": environment(), "parts": parts}
    path = args.out / "results.json"
    if path.is_file():  # parts run in separate commands add up
        previous = json.loads(path.read_text())
        results = {
            **previous,
            "env": results["env"],
            "parts": sorted(set(previous.get("parts", [])) | set(parts)),
        }

    def save() -> None:
        path.write_text(json.dumps(results, indent=1))
        (args.out / "results.md").write_text(render(results))

    scratch = Path(tempfile.mkdtemp(prefix="kr-bench-"))  # caches: not results, not committed
    if "report" in parts:
        results["report"] = part_report(policy, scratch)
        save()
    if "real" in parts:
        results["real"] = part_real(policy, (results.get("report") or {}).get("report"), scratch)
        save()
    if "first-call" in parts:
        rows = part_first_call(policy, scratch, args.with_compile_only)
        done = {(r["kernel"], r["mode"]) for r in rows}
        kept = [r for r in results.get("first_call", []) if (r["kernel"], r["mode"]) not in done]
        results["first_call"] = kept + rows  # runs for other kernels add up
        save()
    if "cxx" in parts:
        results["cxx"] = part_cxx()
        save()
    if "distribution" in parts:
        results["distribution"] = part_distribution(policy, scratch)
        save()
    print(render(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
