"""The fixture kernels against the ceilings, for the protocol proof: vector_add and softmax as a
share of the measured copy bandwidth, matmul as a share of torch.matmul, each timed with the
engine (workers, interleaved rounds) against the torch operator on the same inputs."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from checks.sweep.pair_runner import choose_mode  # noqa: E402
from checks.sweep.protocol import ProtocolConfig, measure_case  # noqa: E402
from checks.sweep.workers import WorkerClient, WorkerFailure, WorkerSpec  # noqa: E402

FIXTURE = ROOT / "kernels_fixture"
FIXTURE_CASES = (
    # kernel, shape, dtype, reference entry, entry, what is judged, target
    (
        "vector_add",
        (2**26,),
        "float32",
        "toyops.bench:vector_add_ref",
        "toyops.bench:vector_add",
        "copy",
        0.95,
    ),
    (
        "vector_add",
        (2**28,),
        "float32",
        "toyops.bench:vector_add_ref",
        "toyops.bench:vector_add",
        "copy",
        0.95,
    ),
    (
        "softmax",
        (32768, 1024),
        "float32",
        "toyops.bench:softmax_ref",
        "toyops.bench:softmax",
        "copy",
        0.85,
    ),
    (
        "softmax",
        (32768, 4096),
        "float32",
        "toyops.bench:softmax_ref",
        "toyops.bench:softmax",
        "copy",
        0.85,
    ),
    (
        "matmul",
        (4096, 4096, 4096),
        "bfloat16",
        "toyops.bench:matmul_ref",
        "toyops.bench:matmul",
        "torch",
        0.90,
    ),
)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def record_fixture(
    spec_kw: dict[str, Any], cfg: ProtocolConfig, ceil: dict[str, Any] | None, deadline: float
) -> list[dict[str, Any]]:
    base = WorkerClient(WorkerSpec(side="base", root=FIXTURE, label="fixture-ref", **spec_kw))
    head = WorkerClient(WorkerSpec(side="head", root=FIXTURE, label="fixture", **spec_kw))
    out = []
    try:
        base.start()
        head.start()
        for kernel, shape, dtype, ref, entry, judge, target in FIXTURE_CASES:
            if time.monotonic() >= deadline:
                out.append(
                    {
                        "kernel": kernel,
                        "shape": "x".join(map(str, shape)),
                        "dtype": dtype,
                        "error": "time budget spent",
                    }
                )
                continue
            row: dict[str, Any] = {
                "kernel": kernel,
                "shape": "x".join(map(str, shape)),
                "dtype": dtype,
                "target": f">= {target:.0%} of {'copy GB/s' if judge == 'copy' else 'torch.matmul'}",
            }
            try:
                ok = head.check([entry], shape, dtype, seed=5).correct
                pb = base.prepare([ref], shape, dtype, seed=0)
                ph = head.prepare([entry], shape, dtype, seed=0)
                mode = choose_mode(pb.est_us or 0.0, ph.est_us or 0.0, spec_kw["device"], cfg)
                base.configure(mode, cfg.block_ms)
                head.configure(mode, cfg.block_ms)
                run, d = measure_case(base, head, cfg, tolerance=0.03, alpha=cfg.alpha)
                base.finish(recheck=False)
                head.finish(recheck=False)
                head_us = run.side_median_us("head") or float("nan")
                base_us = run.side_median_us("base") or float("nan")
                row.update(
                    {
                        "correct": ok,
                        "head_us": head_us,
                        "ref_us": base_us,
                        "ratio": d.ratio,
                        "verdict": d.verdict,
                        "mode": mode,
                        "rounds": d.n,
                    }
                )
                if judge == "copy":
                    gbps = ph["bytes_moved"] / (head_us * 1e-6) / 1e9
                    frac = gbps / ceil["copy_gbps"] if ceil else None
                    row.update(
                        {
                            "gbps": gbps,
                            "fraction": frac,
                            "achieved": f"{gbps:.0f} GB/s = {frac:.1%} of copy"
                            if frac
                            else f"{gbps:.0f} GB/s",
                        }
                    )
                else:
                    tflops = ph["flops"] / (head_us * 1e-6) / 1e12
                    frac = base_us / head_us
                    row.update(
                        {
                            "tflops": tflops,
                            "fraction": frac,
                            "achieved": f"{tflops:.0f} TFLOP/s = {frac:.1%} of torch.matmul",
                        }
                    )
                row["met"] = bool(
                    ok and row.get("fraction") is not None and row["fraction"] >= target
                )
            except WorkerFailure as f:
                row.update({"error": f"{f.kind}: {f.message}", "met": False})
                for w in (base, head):
                    w.restart()
            log(f"fixture {kernel} {row['shape']}: {row.get('achieved', row.get('error'))}")
            out.append(row)
    except WorkerFailure as f:
        out.append({"kernel": "fixture", "error": f"{f.kind}: {f.message}"})
    finally:
        base.close()
        head.close()
    return out
