"""Record the protocol proof on a GPU, then replay the decision rules on what was recorded.

    python bench/protocol_proof.py --out bench/results/h200            # one run, < 9 minutes
    python bench/protocol_proof.py --device cpu --quick --out /tmp/p   # plumbing check, no GPU

For kernel times near 5 us, 15 us, 130 us and 1.5 ms it records, on one GPU:
- long interleaved streams of rounds through the real engine (worker processes, CUDA graphs over
  rotating inputs or eager calls after an L2 flush, NVML per block): A1 vs A2 (the same Triton
  kernel compiled in two processes) and A1 vs B (B does more work: extra elements, as many as
  make it 3% +- 0.4% slower, found by measuring B/A through the same engine first, see
  ``proof_calibrate.py``), alternating;
- a sequence of default ``triton.testing.do_bench`` means, A, A', B, A, A', B, ...;
then the fixture kernels (vector_add, softmax, matmul) against the copy and matmul ceilings.
Everything raw goes to ``raw_streams.json``; ``protocol_replay.py`` turns it into rates
(false alarms, detection, inconclusive, GPU-seconds per verdict) in ``proof.json`` and
``proof.md``. A wall-clock budget (``--budget-s``) shortens the streams rather than overrun.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import random
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import protocol_replay  # noqa: E402
from proof_calibrate import UNIT, calibrate_b  # noqa: E402
from proof_fixture import FIXTURE, record_fixture  # noqa: E402

from checks.sweep.pair_runner import choose_mode  # noqa: E402
from checks.sweep.protocol import ProtocolConfig, run_round  # noqa: E402
from checks.sweep.workers import Timeouts, WorkerClient, WorkerFailure, WorkerSpec  # noqa: E402
from checks.worker import ceilings as ceilings_mod  # noqa: E402
from checks.worker.timing import CpuTimer, CudaTimer  # noqa: E402

KERNELS = Path(__file__).resolve().parent / "proof_kernels"
ENTRY = "proofk:scale_shift"
SIZES = (("5us", 5.0), ("15us", 15.0), ("130us", 130.0), ("1.5ms", 1500.0))
SLOWDOWN = 0.03
SLOWDOWN_BAND = 0.004  # B/A must come out within 1 + SLOWDOWN +- this
CALIBRATION_MAX_S = 20.0  # per size, and at most CALIBRATION_SHARE of the size's time
CALIBRATION_SHARE = 0.3


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------ in-process timing


class Local:
    """The proof kernel in this process: size calibration and do_bench."""

    def __init__(self, device: str) -> None:
        import torch

        sys.path.insert(0, str(KERNELS))
        import proofk

        self.torch, self.proofk, self.device = torch, proofk, device
        self.l2 = 0
        if device != "cpu":
            props = torch.cuda.get_device_properties(0)
            self.l2 = int(getattr(props, "L2_cache_size", 0) or 0)

    def copies(self, n: int) -> int:
        if self.device == "cpu" or not self.l2:
            return 1
        return max(1, min(64, math.ceil(2 * self.l2 / (8 * n))))

    def time_us(self, n: int, mode: str, block_ms: float = 5.0, reps: int = 5) -> float:
        items = [
            self.proofk.scale_shift((n,), device=self.device, seed=i) for i in range(self.copies(n))
        ]
        fns = [it["fn"] for it in items]
        for f in fns:
            f()
        timer = (
            CpuTimer(fns) if self.device == "cpu" else CudaTimer(fns, self.torch, l2_bytes=self.l2)
        )
        timer.estimate_us()
        timer.configure("cpu" if self.device == "cpu" else mode, block_ms)
        vals = sorted(timer.block()["value_us"] for _ in range(reps))
        timer.release()
        del items, fns
        self._free()
        return vals[len(vals) // 2]

    def _free(self) -> None:
        if self.device != "cpu":
            self.torch.cuda.synchronize()
            self.torch.cuda.empty_cache()

    def calibrate(self, target_us: float, graph_below_us: float) -> tuple[int, float]:
        """n (a multiple of ``UNIT``) for a kernel time near ``target_us``, and that time."""
        mode = "graph" if target_us < graph_below_us else "eager"
        n = (
            max(1 << 12, int(target_us * 1e-6 * 3.0e12 / 8))
            if self.device != "cpu"
            else max(256, int(target_us * 300))
        )
        n = _whole(n)
        t = self.time_us(n, mode)
        for _ in range(6):
            n = _whole(max(256, min(n * 4, max(n // 4, int(n * target_us / t)))))
            t = self.time_us(n, mode)
            if abs(t / target_us - 1) < 0.05:
                break
        return n, t

    def do_bench(self, fn: Any) -> float:
        if self.device == "cpu":
            return cpu_do_bench(fn)
        import triton.testing

        return float(triton.testing.do_bench(fn))

    def entries(self, n_a: int, n_b: int, *, seed: int = 0) -> dict[str, Any]:
        fns = {
            "A": self.proofk.scale_shift((n_a,), device=self.device, seed=seed)["fn"],
            "A2": self.proofk.scale_shift((n_a,), device=self.device, seed=seed + 1)["fn"],
            "B": self.proofk.scale_shift((n_b,), device=self.device, seed=seed + 2)["fn"],
        }
        for f in fns.values():
            f()
        return fns


def _whole(n: int) -> int:
    """``n`` rounded to a multiple of ``UNIT``, so A and B compile to the same specialization."""
    return max(UNIT, round(n / UNIT) * UNIT)


def cpu_do_bench(fn: Any, warmup: float = 25, rep: float = 100) -> float:
    """do_bench's defaults imitated with a wall clock (no L2 flush), for the CPU dry run only."""
    fn()
    t0 = time.perf_counter()
    for _ in range(5):
        fn()
    est_ms = max((time.perf_counter() - t0) * 1000 / 5, 1e-4)
    for _ in range(max(1, int(warmup / est_ms))):
        fn()
    times = []
    for _ in range(max(1, int(rep / est_ms))):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return sum(times) / len(times)


# -------------------------------------------------------------------------------- recording


class Timed:
    """A worker as a block source that also remembers how long the GPU was held per block."""

    def __init__(self, client: WorkerClient) -> None:
        self.client = client
        self.last_s = 0.0

    def block(self) -> Any:
        t0 = time.perf_counter()
        b = self.client.block()
        self.last_s = time.perf_counter() - t0
        return b


def _round_dict(rnd: Any, base: Timed, head: Timed) -> dict[str, Any]:
    d = {
        "base_us": rnd.base.value_us,
        "head_us": rnd.head.value_us,
        "base_s": round(base.last_s, 6),
        "head_s": round(head.last_s, 6),
        "head_first": rnd.head_first,
        "dropped": rnd.dropped,
    }
    if rnd.dropped:
        d["why"] = rnd.drop_reason
    for side, b in (("base", rnd.base), ("head", rnd.head)):
        t = b.telemetry
        if t is not None:
            d[f"{side}_mhz"] = t.sm_clock_mhz
            d[f"{side}_temp"] = t.temp_c
            d[f"{side}_w"] = t.power_w
    return d


def record_size(
    workers: dict[str, WorkerClient],
    label: str,
    target: float,
    n_a: int,
    n_b: int,
    copies: int,
    cfg: ProtocolConfig,
    device: str,
    max_rounds: int,
    segments: int,
    deadline: float,
    rng: random.Random,
) -> dict[str, Any]:
    """Rounds of A1 vs A2 and A1 vs B, alternating, in ``segments`` stretches; each stretch starts
    from fresh inputs (new allocations), a correctness check, configure and warm-up, as a case of a
    real sweep would, so the streams also hold the variation between set-ups."""
    streams: dict[str, list[dict[str, Any]]] = {"AA": [], "AB": []}
    setups, modes, ests = [], set(), {}
    t_start = time.monotonic()
    per_seg = max(1, max_rounds // segments)
    for k, n in (("A1", n_a), ("A2", n_a), ("B", n_b)):
        workers[k].check([ENTRY], (n,), "float32", seed=1)  # compile outside the set-up's cost
    for seg in range(segments):
        seg_deadline = t_start + (deadline - t_start) * (seg + 1) / segments
        sizes = {"A1": n_a, "A2": n_a, "B": n_b}
        t0 = time.perf_counter()
        for k, n in sizes.items():
            c = workers[k].check([ENTRY], (n,), "float32", seed=100 * seg + 99)
            if not c.correct:
                raise RuntimeError(f"proof kernel wrong on {k}: {c.message}")
        checked_s = time.perf_counter() - t0
        preps = {
            k: workers[k].prepare([ENTRY], (n,), "float32", seed=100 * seg, copies=copies)
            for k, n in sizes.items()
        }
        ests = {k: p.est_us or 0.0 for k, p in preps.items()}
        t0 = time.perf_counter()
        mode = choose_mode(max(ests.values()), 0.0, device, cfg)
        modes.add(mode)
        for w in workers.values():
            w.configure(mode, cfg.block_ms)
        src = {k: Timed(w) for k, w in workers.items()}
        for i in range(cfg.warmup_rounds):
            run_round(-1 - i, src["A1"], src["A2"], rng, cfg)
            run_round(-1 - i, src["A1"], src["B"], rng, cfg)
        # one pair's share of the checks, configure and warm-up (entry calls and compiles aside)
        setups.append((checked_s + time.perf_counter() - t0) * 2 / 3)
        i = 0
        while i < per_seg and time.monotonic() < seg_deadline:
            kinds = [("AA", "A2"), ("AB", "B")]
            rng.shuffle(kinds)
            for kind, other in kinds:
                rnd = run_round(i, src["A1"], src[other], rng, cfg)
                streams[kind].append({**_round_dict(rnd, src["A1"], src[other]), "seg": seg})
            i += 1
        for w in workers.values():
            w.finish(recheck=True)
    aa = sorted(r["base_us"] for r in streams["AA"])
    a_us = aa[len(aa) // 2] if aa else None
    log(
        f"{label}: {len(streams['AA'])} rounds of each pair in {segments} set-ups, mode {sorted(modes)}, A {a_us} us, copies {copies}"
    )
    return {
        "label": label,
        "target_us": target,
        "n_a": n_a,
        "n_b": n_b,
        "copies": copies,
        "mode": ",".join(sorted(modes)),
        "a_us": a_us,
        "setup_s": sum(setups) / len(setups),
        "est_us": ests,
        "streams": streams,
    }


def record_do_bench(
    local: Local, n_a: int, n_b: int, max_trials: int, segments: int, deadline: float
) -> list[dict[str, Any]]:
    """A, A', B default do_bench calls in a row, again and again; fresh inputs per segment."""
    out = []
    per_seg = max(1, max_trials // segments)
    for seg in range(segments):
        fns = local.entries(n_a, n_b, seed=10 * seg)
        for _ in range(per_seg):
            if time.monotonic() >= deadline:
                break
            rec: dict[str, Any] = {"trial": len(out), "seg": seg}
            for name in ("A", "A2", "B"):
                t0 = time.perf_counter()
                rec[name] = local.do_bench(fns[name])
                rec[f"wall_{name}"] = time.perf_counter() - t0
            out.append(rec)
        del fns
        local._free()
    return out


# ------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--out", required=True, help="folder for raw_streams.json, proof.json, proof.md")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument(
        "--budget-s", type=float, default=480.0, help="wall-clock budget for the whole run"
    )
    p.add_argument("--rounds", type=int, default=1200, help="rounds per pair and size, at most")
    p.add_argument(
        "--dobench-trials", type=int, default=60, help="A, A', B triplets per size, at most"
    )
    p.add_argument("--block-ms", type=float, default=ProtocolConfig().block_ms)
    p.add_argument(
        "--segments",
        type=int,
        default=4,
        help="fresh set-ups per size (new inputs, check, warm-up)",
    )
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap trials in the replay")
    p.add_argument("--no-fixture", action="store_true", help="skip the fixture kernels")
    p.add_argument("--quick", action="store_true", help="tiny run to check the plumbing")
    args = p.parse_args(argv)
    start = time.monotonic()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cfg = ProtocolConfig(block_ms=args.block_ms)
    if args.quick:
        cfg = ProtocolConfig(block_ms=2.0, max_rounds=20)
    rounds, trials = (40, 4) if args.quick else (args.rounds, args.dobench_trials)
    cal_rounds, cal_probes = (6, 4) if args.quick else (30, 14)
    if args.quick:
        args.segments = 2
    sizes = SIZES[:2] if args.quick else SIZES
    # the fixture stage took ~35 s and the replay ~10 s on the H200 host (2026-11-29)
    fixture_reserve = 0.0 if (args.no_fixture or args.device == "cpu") else 70.0
    replay_reserve = 10.0 if args.quick else 25.0
    work = Path(tempfile.mkdtemp(prefix="kernel-review-proof-"))
    spec_kw = {
        "device": args.device,
        "work_dir": work,
        "timeouts": Timeouts(prepare_s=300, block_s=60),
    }
    raw: dict[str, Any] = {
        "meta": {
            "device": args.device,
            "protocol": cfg.model_dump(),
            "started_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "slowdown": SLOWDOWN,
            "slowdown_band": SLOWDOWN_BAND,
            "notes": [],
        },
        "sizes": [],
        "fixture": [],
    }

    def save() -> None:
        raw["meta"]["elapsed_s"] = time.monotonic() - start
        (out / "raw_streams.json").write_text(json.dumps(raw), encoding="utf-8")

    local = Local(args.device)
    if args.device == "cpu":
        local.torch.set_num_threads(1)  # as the CPU workers do
    names = ("A1", "A2", "B")
    workers = {
        n: WorkerClient(
            WorkerSpec(side="base" if n == "A1" else "head", root=KERNELS, label=n, **spec_kw)
        )
        for n in names
    }
    rng = random.Random(20260101)
    try:
        for w in workers.values():
            w.start()
        env = workers["A1"].env_info().model_dump(exclude={"gpu_index"})
        raw["meta"]["env"] = env
        try:
            ceil = (
                ceilings_mod.measure(local.torch, args.device)
                if args.device != "cpu"
                else workers["A1"].ceilings()
            )
            raw["meta"]["ceilings"] = ceil
            log(
                f"ceilings: copy {ceil['copy_gbps']:.0f} GB/s, matmul {ceil['matmul_tflops']:.0f} TFLOP/s"
            )
        except Exception as exc:
            raw["meta"]["notes"].append(f"ceilings not measured: {exc}")
            ceil = None
        if args.device != "cpu":
            w = workers["A1"].warmup(min_s=2.0, max_s=10.0)
            log(f"warm-up: {w}")
        plan = []
        for label, target in sizes:
            n_a, t = local.calibrate(target, cfg.graph_below_us)
            plan.append((label, target, n_a))
            log(f"{label}: n_a {n_a} ({t:.2f} us)")
        raw["meta"]["setup_s"] = time.monotonic() - start
        left = args.budget_s - (time.monotonic() - start) - fixture_reserve - replay_reserve
        per_size = max(1.0, left / len(plan))
        cal_s = min(CALIBRATION_MAX_S, CALIBRATION_SHARE * per_size)
        for label, target, n_a in plan:
            t_size = time.monotonic()
            try:
                n_b, cal = calibrate_b(
                    workers,
                    ENTRY,
                    n_a,
                    local.copies(n_a),
                    cfg,
                    args.device,
                    rng,
                    target_ratio=1 + SLOWDOWN,
                    band=SLOWDOWN_BAND,
                    seconds=cal_s,
                    rounds=cal_rounds,
                    max_probes=cal_probes,
                )
                log(
                    f"{label}: B/A calibrated in {cal['seconds']:.1f} s, {len(cal['probes'])} probes "
                    f"({cal['stop']}): +{100 * cal['extra_fraction']:.2f}% elements, predicted B/A "
                    f"{cal['predicted_ratio'] or float('nan'):.4f}"
                    + ("" if cal["within"] else " (OUTSIDE the band)")
                )
                rest = t_size + per_size - time.monotonic()
                entry = record_size(
                    workers,
                    label,
                    target,
                    n_a,
                    n_b,
                    local.copies(n_a),
                    cfg,
                    args.device,
                    rounds,
                    args.segments,
                    time.monotonic() + 0.6 * rest,
                    rng,
                )
            except (WorkerFailure, RuntimeError) as exc:
                log(f"{label}: recording failed: {exc}")
                raw["meta"]["notes"].append(f"{label}: recording failed: {exc}")
                for w in workers.values():
                    w.restart()
                continue
            entry["calibration"] = cal
            entry["do_bench"] = record_do_bench(
                local, n_a, n_b, trials, args.segments, t_size + per_size
            )
            log(f"{label}: {len(entry['do_bench'])} do_bench triplets")
            raw["sizes"].append(entry)
            save()
    except Exception as exc:  # keep what was recorded; say what broke
        raw["meta"]["notes"].append(f"stopped early: {type(exc).__name__}: {exc}")
        traceback.print_exc()
    finally:
        for w in workers.values():
            w.close()
    save()
    log("replaying the decision rules on the recorded streams")
    summary = protocol_replay.replay(raw, n_boot=20 if args.quick else args.n_boot)
    protocol_replay.write(summary, out)  # written now: the fixture stage below may run long
    if fixture_reserve and FIXTURE.is_dir():
        deadline = start + args.budget_s
        left = max(30.0, deadline - time.monotonic())
        fixture_kw = {**spec_kw, "timeouts": Timeouts(prepare_s=left, check_s=left, block_s=30)}
        raw["fixture"] = record_fixture(
            fixture_kw,
            cfg.model_copy(update={"max_rounds": 40, "max_case_seconds": 10.0}),
            raw["meta"].get("ceilings"),
            deadline,
        )
        save()
        summary["fixture"] = raw["fixture"]
        protocol_replay.write(summary, out)
    print((out / "proof.md").read_text(encoding="utf-8"))
    log(f"done in {time.monotonic() - start:.0f} s; logs in {work / 'logs'}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
