"""Replay recorded block streams through the decision rules: the protocol's sequential test and
``triton.testing.do_bench``'s "compare two means against a threshold". Pure; runs on any CPU.

    python bench/protocol_replay.py bench/results/h200/raw_streams.json --out bench/results/h200

``raw_streams.json`` is written by ``bench/protocol_proof.py`` on the GPU. For each kernel size it
holds long interleaved streams of rounds (A1 vs A2: the same kernel compiled in two processes;
A1 vs B: B does about 3% more work) and a sequence of default ``do_bench`` means (A, A', B, ...).

Trials of the protocol are replayed two ways: sliding windows over the recorded order (every
start offset, real serial correlation kept) and an iid bootstrap of rounds (many more trials,
rounds assumed independent). A do_bench trial is two consecutive calls, "A then B".
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from checks.sweep.protocol import Block, CaseDecider, ProtocolConfig, Round

TOLERANCES = (0.015, 0.01, 0.02)  # the first is the one the targets are judged at
DOBENCH_THRESHOLDS = (0.03, 0.015)
TARGET_FALSE_ALARMS = 0.01
TARGET_DETECTION = 0.90
DEFAULT_SLOWDOWN_BAND = 0.004  # recordings from before the calibration did not write one


def rounds_from(stream: list[dict[str, Any]]) -> list[Round]:
    return [
        Round(
            index=i,
            head_first=bool(r.get("head_first")),
            base=Block(
                value_us=float(r["base_us"]), calls=1, wall_ms=1000.0 * float(r.get("base_s", 0.0))
            ),
            head=Block(
                value_us=float(r["head_us"]), calls=1, wall_ms=1000.0 * float(r.get("head_s", 0.0))
            ),
            dropped=bool(r.get("dropped")),
            drop_reason=str(r.get("why", "")),
        )
        for i, r in enumerate(stream)
    ]


def _trial(
    rounds: list[Round], cfg: ProtocolConfig, tolerance: float, alpha: float
) -> tuple[str, int, float] | None:
    """Feed rounds until the decider stops: (verdict, rounds used, seconds the GPU was held)."""
    decider = CaseDecider(cfg, tolerance=tolerance, alpha=alpha)
    seconds = 0.0
    for used, rnd in enumerate(rounds, 1):
        seconds += (rnd.base.wall_ms + rnd.head.wall_ms) / 1000.0
        d = decider.add(rnd)
        if d is not None:
            return d.verdict, used, seconds
    return None


def segments(stream: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The stream cut where a fresh set-up began (each segment is one 'case' of a real sweep)."""
    out: dict[int, list[dict[str, Any]]] = {}
    for r in stream:
        out.setdefault(int(r.get("seg", 0)), []).append(r)
    return [out[k] for k in sorted(out)]


def merge_pairs(stream: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Blocks twice as long, approximated by joining consecutive rounds of one segment."""
    out = []
    for seg in segments(stream):
        for a, b in zip(seg[::2], seg[1::2], strict=False):
            out.append(
                {
                    "base_us": (a["base_us"] + b["base_us"]) / 2,
                    "head_us": (a["head_us"] + b["head_us"]) / 2,
                    "base_s": a.get("base_s", 0.0) + b.get("base_s", 0.0),
                    "head_s": a.get("head_s", 0.0) + b.get("head_s", 0.0),
                    "head_first": a.get("head_first"),
                    "dropped": bool(a.get("dropped") or b.get("dropped")),
                    "why": a.get("why") or b.get("why") or "",
                    "seg": a.get("seg", 0),
                }
            )
    return out


def ours(
    stream: list[dict[str, Any]],
    cfg: ProtocolConfig,
    *,
    tolerance: float,
    alpha: float,
    setup_s: float,
    n_boot: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """Trials of the sequential test. Sliding: every start offset inside a segment whose trial
    finishes before the segment ends. Bootstrap: a random segment, its rounds drawn with
    replacement."""
    segs = [rounds_from(s) for s in segments(stream)]
    every = [r for s in segs for r in s]
    per_round_s = sum((r.base.wall_ms + r.head.wall_ms) / 1000.0 for r in every) / max(
        1, len(every)
    )
    warm_s = cfg.warmup_rounds * per_round_s
    sliding, ran_out = [], 0
    for rounds in segs:
        for start in range(len(rounds)):
            t = _trial(rounds[start:], cfg, tolerance, alpha)
            if t is None:
                ran_out += len(rounds) - start  # later starts cannot finish either
                break
            sliding.append(t)
    rng = random.Random(seed)
    boot = []
    usable = [s for s in segs if s]
    for _ in range(n_boot if usable else 0):
        rounds = rng.choice(usable)
        t = _trial(rng.choices(rounds, k=cfg.max_rounds * 3), cfg, tolerance, alpha)
        if t is not None:
            boot.append(t)
    return {
        "sliding": {**_rates(sliding, warm_s, setup_s), "ran_out": ran_out},
        "bootstrap": _rates(boot, warm_s, setup_s),
    }


def _rates(trials: list[tuple[str, int, float]], warm_s: float, setup_s: float) -> dict[str, Any]:
    n = len(trials)
    if not n:
        return {"trials": 0}
    count = {
        v: sum(1 for t in trials if t[0] == v) for v in ("SLOWER", "SAME", "FASTER", "INCONCLUSIVE")
    }
    timing_s = warm_s + sum(t[2] for t in trials) / n
    return {
        "trials": n,
        **{f"rate_{k.lower()}": c / n for k, c in count.items()},
        "mean_rounds": sum(t[1] for t in trials) / n,
        "gpu_s_timing": timing_s,  # warm-up and rounds: what do_bench's number compares with
        "gpu_s_per_verdict": timing_s + setup_s,  # plus correctness check and configure
    }


def dobench(
    records: list[dict[str, Any]], first: str, second: str, threshold: float
) -> dict[str, Any]:
    """Trials of 'run first, then second, claim a regression if mean ratio > 1 + threshold'."""
    trials = []
    for r in records:
        if r.get(first) is None or r.get(second) is None:
            continue
        ratio = r[second] / r[first]
        verdict = (
            "SLOWER"
            if ratio > 1 + threshold
            else "FASTER"
            if ratio < 1 / (1 + threshold)
            else "SAME"
        )
        trials.append((verdict, 2, r[f"wall_{first}"] + r[f"wall_{second}"]))
    return _rates(trials, 0.0, 0.0)


def _logs(stream: list[dict[str, Any]]) -> list[float]:
    return [math.log(r["head_us"] / r["base_us"]) for r in stream if not r.get("dropped")]


def _stats(xs: list[float]) -> dict[str, float]:
    if len(xs) < 2:
        return {}
    m = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))
    return {"ratio": math.exp(m), "sd_log": sd, "n": len(xs)}


def slowdown_check(meta: dict[str, Any], true_ab: dict[str, float]) -> dict[str, Any]:
    """Is the realised B/A (whole A/B stream) the slowdown the proof claims to test?"""
    target = 1.0 + float(meta.get("slowdown", 0.03))
    band = float(meta.get("slowdown_band", DEFAULT_SLOWDOWN_BAND))
    ratio = true_ab.get("ratio")
    return {
        "target_ratio": target,
        "band": band,
        "ratio": ratio,
        "within": ratio is not None and abs(ratio - target) <= band,
    }


def replay(raw: dict[str, Any], *, n_boot: int = 2000) -> dict[str, Any]:
    cfg = ProtocolConfig(**raw["meta"]["protocol"])
    alpha = cfg.alpha  # one shape: the family is one case
    out = []
    for size in raw["sizes"]:
        streams = size["streams"]
        entry: dict[str, Any] = {
            "label": size["label"],
            "target_us": size["target_us"],
            "n_a": size["n_a"],
            "n_b": size["n_b"],
            "mode": size.get("mode"),
            "a_us": size.get("a_us"),
            "true_ab": _stats(_logs(streams["AB"])),
            "true_aa": _stats(_logs(streams["AA"])),
            "dropped_rounds": sum(1 for k in ("AA", "AB") for r in streams[k] if r.get("dropped")),
            "recorded_rounds": len(streams["AA"]) + len(streams["AB"]),
            "ours": {},
            "do_bench": {},
        }
        entry["slowdown"] = slowdown_check(raw["meta"], entry["true_ab"])
        if size.get("calibration"):
            entry["calibration"] = {k: v for k, v in size["calibration"].items() if k != "probes"}
            entry["calibration"]["probes"] = len(size["calibration"].get("probes", []))
        setup_s = size.get("setup_s", 0.0)
        for tol in TOLERANCES:
            entry["ours"][f"tolerance {tol:g}"] = {
                kind: ours(
                    streams[kind], cfg, tolerance=tol, alpha=alpha, setup_s=setup_s, n_boot=n_boot
                )
                for kind in ("AA", "AB")
            }
        entry["ours"][f"tolerance {TOLERANCES[0]:g}, blocks x2"] = {
            kind: ours(
                merge_pairs(streams[kind]),
                cfg,
                tolerance=TOLERANCES[0],
                alpha=alpha,
                setup_s=setup_s,
                n_boot=n_boot,
            )
            for kind in ("AA", "AB")
        }
        db = size.get("do_bench", [])
        aa = [math.log(r["A2"] / r["A"]) for r in db if r.get("A") and r.get("A2")]
        entry["do_bench_spread_aa"] = _stats(aa)
        for thr in DOBENCH_THRESHOLDS:
            entry["do_bench"][f"threshold {thr:g}"] = {
                "AA": dobench(db, "A", "A2", thr),
                "AB": dobench(db, "A2", "B", thr),
            }
        out.append(entry)
    return {"meta": raw["meta"], "sizes": out, "fixture": raw.get("fixture", [])}


# ----------------------------------------------------------------------------------- markdown


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _row(label: str, method: str, aa: dict[str, Any], ab: dict[str, Any]) -> str:
    def g(d: dict[str, Any], k: str) -> float | None:
        return d.get(k) if d.get("trials") else None

    wrong = None if not aa.get("trials") else aa["rate_slower"] + aa["rate_faster"]

    def cost(key: str) -> str:
        a, b = g(aa, key), g(ab, key)
        return "-" if a is None or b is None else f"{(a + b) / 2:.3f}"

    return (
        f"| {label} | {method} | {_pct(g(aa, 'rate_slower'))} | {_pct(wrong)} | {_pct(g(aa, 'rate_same'))} "
        f"| {_pct(g(ab, 'rate_slower'))} | {_pct(g(ab, 'rate_inconclusive'))} "
        f"| {cost('gpu_s_timing')} | {cost('gpu_s_per_verdict')} | {aa.get('trials', 0)} / {ab.get('trials', 0)} |"
    )


def markdown(summary: dict[str, Any]) -> str:
    meta = summary["meta"]
    env = meta.get("env") or {}
    lines = [
        "# Protocol proof: interleaved rounds + sequential test vs `triton.testing.do_bench`",
        "",
        f"Device: {env.get('device_name', meta.get('device'))} (driver {env.get('driver_version')}, "
        f"torch {env.get('torch_version')}, triton {env.get('triton_version')}); "
        f"timing: {'CPU imitation, NOT GPU numbers' if meta.get('device') == 'cpu' else 'CUDA events'}.",
        f"Recorded {meta.get('elapsed_s', 0):.0f} s on {meta.get('started_at', '?')}; protocol: "
        + ", ".join(
            f"{k}={v}"
            for k, v in meta["protocol"].items()
            if k in ("block_ms", "min_rounds", "max_rounds", "alpha", "warmup_rounds")
        ),
        "",
        "A/A = the same kernel compiled in two processes; A/B = "
        + (
            f"B does more work, as much as makes it {_slowdown_text(meta)} slower, calibrated on the device before "
            "recording (realised ratio in the size column)."
            if any(s.get("calibration") for s in summary["sizes"])
            else "B does about 3% more work (measured ratio in the size column)."
        ),
        "Ours: a verdict is SLOWER when the whole sequential interval lies above 1 + tolerance. do_bench: A then B, SLOWER",
        "when mean(B)/mean(A) > 1 + threshold. GPU-s per verdict: time the GPU was held per verdict; (timing) counts",
        "warm-up and rounds, (with check) adds the correctness check and configure that do_bench does not do.",
        "Sliding: every start inside a set-up's recorded order; bootstrap: rounds of a random set-up drawn with replacement.",
        f"Targets: A/A SLOWER <= {TARGET_FALSE_ALARMS:.0%}, A/B SLOWER >= {TARGET_DETECTION:.0%}, fewer GPU-seconds than do_bench.",
        "",
        "| size | method | A/A SLOWER (false alarm) | A/A any claim | A/A SAME | A/B SLOWER (detected) | A/B INCONCLUSIVE | GPU-s per verdict (timing) | GPU-s per verdict (with check) | trials A/A / A/B |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    verdicts = []
    for s in summary["sizes"]:
        ab = s["true_ab"] or {}
        aa_bias = s["true_aa"] or {}
        label = (
            f"{s['label']} ({s.get('a_us') or 0:.1f} us, {s.get('mode')}); B/A {ab.get('ratio', float('nan')):.4f}, "
            f"A2/A {aa_bias.get('ratio', float('nan')):.4f}"
        )
        for key, pair in s["ours"].items():
            for how in ("sliding", "bootstrap"):
                lines.append(_row(label, f"ours, {key}, {how}", pair["AA"][how], pair["AB"][how]))
        for key, pair in s["do_bench"].items():
            lines.append(_row(label, f"do_bench, {key}", pair["AA"], pair["AB"]))
        primary = s["ours"][f"tolerance {TOLERANCES[0]:g}"]
        fa, det = primary["AA"]["sliding"], primary["AB"]["sliding"]
        db = s["do_bench"][f"threshold {DOBENCH_THRESHOLDS[0]:g}"]
        db_cost = db["AB"].get("gpu_s_per_verdict")
        ok = (
            fa.get("trials")
            and det.get("trials")
            and fa["rate_slower"] <= TARGET_FALSE_ALARMS
            and det["rate_slower"] >= TARGET_DETECTION
            and (db_cost is None or det["gpu_s_timing"] < db_cost)
        )
        chk = s.get("slowdown") or {}
        off = (
            ""
            if chk.get("within", True)
            else f" (but B/A was {chk.get('ratio') or float('nan'):.4f}, outside {_slowdown_text(meta)}: "
            "detection was of a different slowdown)"
        )
        verdicts.append(
            f"- {s['label']}: {'met' if ok else 'MISSED'}{off}: false alarms {_pct(fa.get('rate_slower'))} of {fa.get('trials', 0)}, "
            f"detection {_pct(det.get('rate_slower'))} of {det.get('trials', 0)}, {det.get('gpu_s_timing', float('nan')):.3f} "
            f"GPU-s per verdict timing ({det.get('gpu_s_per_verdict', float('nan')):.3f} with the check) vs do_bench "
            f"{'-' if db_cost is None else f'{db_cost:.3f}'}; do_bench A/A spread "
            f"{100 * (s.get('do_bench_spread_aa') or {}).get('sd_log', float('nan')):.2f}% (sd of log ratio), "
            f"ours {100 * aa_bias.get('sd_log', float('nan')):.2f}% per round; dropped rounds {s['dropped_rounds']} of {s['recorded_rounds']}"
        )
    lines += ["", "## Targets (ours at tolerance 1.5%, sliding windows)", "", *verdicts]
    lines += ["", f"## The known slowdown: B/A realised against {_slowdown_text(meta)}", ""]
    lines += [_slowdown_line(s) for s in summary["sizes"]]
    if summary.get("fixture"):
        lines += [
            "",
            "## Fixture kernels against the ceilings",
            "",
            "| kernel | shape | dtype | head time us | vs reference (time ratio) | achieved | target | met |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for f in summary["fixture"]:
            lines.append(
                f"| {f['kernel']} | {f['shape']} | {f['dtype']} | {f.get('head_us', float('nan')):.1f} | {f.get('ratio', float('nan')):.3f} "
                f"| {f.get('achieved', '-')} | {f.get('target', '-')} | {'yes' if f.get('met') else 'NO'} |"
            )
    for note in meta.get("notes", []):
        lines.append(f"\nNote: {note}")
    return "\n".join(lines) + "\n"


def _slowdown_text(meta: dict[str, Any]) -> str:
    band = float(meta.get("slowdown_band", DEFAULT_SLOWDOWN_BAND))
    return f"{100 * float(meta.get('slowdown', 0.03)):g}% +- {100 * band:g}%"


def _slowdown_line(s: dict[str, Any]) -> str:
    chk = s.get("slowdown") or {}
    ratio = chk.get("ratio")
    text = f"- {s['label']}: B/A {'-' if ratio is None else f'{ratio:.4f}'} over the whole A/B stream: "
    text += "within the band" if chk.get("within") else "OUTSIDE the band"
    cal = s.get("calibration")
    if not cal:
        return text + " (B's size from a slope estimate; no calibration recorded)"
    pred = cal.get("predicted_ratio")
    se = cal.get("predicted_se_log")
    return (
        text + f"; calibrated in {cal.get('seconds', 0):.1f} s from {cal.get('probes')} probes "
        f"({cal.get('stop')}): B has {100 * cal.get('extra_fraction', 0):.2f}% more elements, "
        f"predicted B/A {'-' if pred is None else f'{pred:.4f}'}"
        + ("" if se is None else f" +- {100 * se:.2f}% (se)")
    )


def write(summary: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "proof.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    (out / "proof.md").write_text(markdown(summary), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("raw", help="raw_streams.json written by protocol_proof.py")
    parser.add_argument("--out", help="folder for proof.json and proof.md (default: next to raw)")
    parser.add_argument("--n-boot", type=int, default=2000, help="bootstrap trials per stream")
    args = parser.parse_args(argv)
    raw_path = Path(args.raw)
    raw = json.loads(raw_path.read_text(encoding="utf-8"))
    summary = replay(raw, n_boot=args.n_boot)
    out = Path(args.out) if args.out else raw_path.parent
    write(summary, out)
    print((out / "proof.md").read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
