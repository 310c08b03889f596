"""Make the proof's B exactly "3% slower" on the GPU it runs on, by measuring rather than guessing.

B is the proof kernel over ``n_a + knob * UNIT`` elements where A has ``n_a``. Time is not
proportional to elements at every size (launch and tail costs near 5 us), and sizes must stay
multiples of 16: Triton specializes an integer argument divisible by 16, and the kernel's masked
loads and stores are 128-bit only then. (The first H200 recording had A at 1.5 ms divisible by 16
and B not: B ran 18% slower, not 3%.)

``search_knob`` is the pure part: it asks ``measure(knob)`` for B/A as a mean log-ratio, fits a
straight line ``log(B/A) = a + s * knob`` to every probe so far, probes alternately 30% below and
above the line's root (so the root is interpolated and the slope pinned down), and stops when the
line's value at the root is known to ``se_stop`` or the probes or time run out; the root is the
answer. The line is fitted to all probes, and each probe is a fresh set-up, so the set-up to
set-up variation (about 0.4% at 130 us on the H200) averages out instead of deciding.

``worker_measure`` is the GPU part: one probe is a fresh set-up of the A1 and B workers (new inputs,
configure, warm-up) and a short run of interleaved rounds, exactly as the recorded streams are made;
``calibrate_b`` puts the two together for one size of the proof.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from typing import Any, Literal

from bot.contracts.base import Frozen
from checks.sweep.pair_runner import choose_mode
from checks.sweep.protocol import ProtocolConfig, run_round
from checks.sweep.stats import t_ppf

UNIT = 16  # elements per knob step; keeps both sizes multiples of 16 (see the module docstring)
SPREAD = 0.3  # probes go this far (relative) below and above the root estimate
Measure = Callable[[int], "tuple[float, float] | None"]
Stop = Literal["converged", "unreachable", "probes", "time", "failed"]


class Probe(Frozen):
    """One measurement of B/A at ``knob``: mean log-ratio and its standard error (within set-up)."""

    knob: int
    log_ratio: float
    se_log: float


class Line(Frozen):
    """``log(B/A) = intercept + slope * knob`` fitted to the probes; ``sd_log`` is the larger of the
    residual sd and the probes' own noise (None with fewer than three probes)."""

    intercept: float
    slope: float
    sd_log: float | None
    n: int
    mean_knob: float
    sxx: float

    def at(self, knob: float) -> float:
        return self.intercept + self.slope * knob

    def se_at(self, knob: float) -> float | None:
        if self.sd_log is None:
            return None
        return self.sd_log * math.sqrt(1 / self.n + (knob - self.mean_knob) ** 2 / self.sxx)


class Calibration(Frozen):
    """The chosen knob, the ratio predicted there, and every probe that led to it."""

    knob: int
    target_ratio: float
    band: float
    predicted_ratio: float
    predicted_se_log: float | None
    stop: Stop
    probes: tuple[Probe, ...]

    @property
    def within(self) -> bool:
        return abs(self.predicted_ratio - self.target_ratio) <= self.band


def fit_line(probes: list[Probe]) -> Line | None:
    """Least squares over all probes; None until two different knobs were measured."""
    n = len(probes)
    if len({p.knob for p in probes}) < 2:
        return None
    mx = sum(p.knob for p in probes) / n
    my = sum(p.log_ratio for p in probes) / n
    sxx = sum((p.knob - mx) ** 2 for p in probes)
    slope = sum((p.knob - mx) * (p.log_ratio - my) for p in probes) / sxx
    intercept = my - slope * mx
    sd = None
    if n >= 3:
        rss = sum((p.log_ratio - intercept - slope * p.knob) ** 2 for p in probes)
        own = math.sqrt(sum(p.se_log**2 for p in probes) / n)
        sd = max(math.sqrt(rss / (n - 2)), own)
    return Line(intercept=intercept, slope=slope, sd_log=sd, n=n, mean_knob=mx, sxx=sxx)


def root_estimate(probes: list[Probe], target_log: float, lo: int, hi: int) -> float:
    """Where the line says B/A equals the target, at most a factor 2 from the last probe. Before a
    usable line (one knob so far, or a slope that noise made flat or negative): assume B/A grows
    in proportion to the extra elements."""
    line = fit_line(probes)
    if line is not None and line.slope > 0:
        k = (target_log - line.intercept) / line.slope
    else:
        rates = sorted(p.log_ratio / p.knob for p in probes if p.knob > 0 and p.log_ratio > 0)
        k = target_log / rates[len(rates) // 2] if rates else 2.0 * max(p.knob for p in probes)
    last = probes[-1].knob
    k = min(max(k, last / 2), 2 * max(last, 1))
    return float(min(hi, max(lo, k)))


def next_knob(
    probes: list[Probe], target_log: float, lo: int, hi: int, spread: float = SPREAD
) -> int:
    """The next probe: ``spread`` below or above the root estimate, on the side with fewer probes.
    Probes on both sides pin the slope down, so the root is interpolated, not extrapolated, and
    the line's value there is as good as the mean of all probes."""
    root = root_estimate(probes, target_log, lo, hi)
    below = sum(1 for p in probes if p.knob < root)
    side = 1.0 if below > len(probes) - below else -1.0
    if below == len(probes) - below:
        side = 1.0 if len(probes) % 2 else -1.0
    return int(min(hi, max(lo, round(root * (1.0 + side * spread)))))


def _settled_se(line: Line | None, knob: float) -> float | None:
    """The line's standard error at ``knob``, widened by t / z for the few degrees of freedom a
    handful of probes leave (a lucky small residual must not stop the search)."""
    se = line.se_at(knob) if line is not None else None
    if line is None or se is None:
        return None
    return se * t_ppf(0.975, line.n - 2) / 1.959964


def search_knob(
    measure: Measure,
    *,
    guess: int,
    lo: int,
    hi: int,
    target_ratio: float = 1.03,
    band: float = 0.004,
    max_probes: int = 14,
    min_probes: int = 5,
    se_stop: float = 0.001,
    out_of_time: Callable[[], bool] = lambda: False,
) -> Calibration:
    """Find the knob whose B/A is ``target_ratio`` (accepting ``band`` either side). ``measure``
    returns (mean log-ratio, its standard error) or None when the probe gave nothing usable."""
    if not lo <= hi:
        raise ValueError(f"empty knob range [{lo}, {hi}]")
    target_log = math.log(target_ratio)
    probes: list[Probe] = []
    knob = int(min(hi, max(lo, guess)))
    failures, stop = 0, "probes"
    while len(probes) < max_probes:
        if out_of_time():
            stop = "time"
            break
        got = measure(knob)
        if got is None or not math.isfinite(got[0]):
            failures += 1
            if failures >= 2:
                stop = "failed"
                break
            continue
        probes.append(Probe(knob=knob, log_ratio=got[0], se_log=max(0.0, got[1])))
        line = fit_line(probes)
        best = round(root_estimate(probes, target_log, lo, hi))
        se = _settled_se(line, best)
        if line is not None and se is not None and se <= se_stop and len(probes) >= min_probes:
            # known well enough; "unreachable" when even there B/A misses the band (the knob
            # range or its step is the limit)
            hit = abs(math.exp(line.at(best)) - target_ratio) <= band
            stop = "converged" if hit else "unreachable"
            break
        knob = next_knob(probes, target_log, lo, hi)
    return _result(probes, target_ratio, band, stop, lo, hi)


def _result(
    probes: list[Probe], target_ratio: float, band: float, stop: Stop, lo: int, hi: int
) -> Calibration:
    kw: dict[str, Any] = {"target_ratio": target_ratio, "band": band, "probes": tuple(probes)}
    if not probes:
        nan = math.nan
        return Calibration(knob=lo, predicted_ratio=nan, predicted_se_log=None, stop="failed", **kw)
    target_log = math.log(target_ratio)
    line = fit_line(probes)
    if line is None or line.slope <= 0:
        # no usable line: the measured knob that came closest, at its own mean
        by_knob: dict[int, list[float]] = {}
        for p in probes:
            by_knob.setdefault(p.knob, []).append(p.log_ratio)
        means = {k: sum(v) / len(v) for k, v in by_knob.items()}
        knob = min(means, key=lambda k: abs(means[k] - target_log))
        return Calibration(
            knob=knob,
            predicted_ratio=math.exp(means[knob]),
            predicted_se_log=None,
            stop=stop,
            **kw,
        )
    knob = round(root_estimate(probes, target_log, lo, hi))
    return Calibration(
        knob=knob,
        predicted_ratio=math.exp(line.at(knob)),
        predicted_se_log=line.se_at(knob),
        stop=stop,
        **kw,
    )


# ------------------------------------------------------------------------------- on the workers


def worker_measure(
    workers: dict[str, Any],
    entry: str,
    n_a: int,
    copies: int,
    cfg: ProtocolConfig,
    device: str,
    rng: random.Random,
    *,
    rounds: int,
    seed: int = 5000,
) -> tuple[Measure, dict[str, Any]]:
    """A ``measure`` for ``search_knob`` that probes through the A1 and B workers, and a dict it
    keeps up to date: seconds per probe (``last_s``) and the timing modes used."""
    info: dict[str, Any] = {"last_s": 0.0, "modes": set(), "probes": 0}
    a1, b = workers["A1"], workers["B"]

    def measure(knob: int) -> tuple[float, float] | None:
        t0 = time.monotonic()
        s = seed + 10 * info["probes"]
        info["probes"] += 1
        try:
            pa = a1.prepare([entry], (n_a,), "float32", seed=s, copies=copies)
            pb = b.prepare([entry], (n_a + knob * UNIT,), "float32", seed=s + 1, copies=copies)
            mode = choose_mode(max(pa.est_us or 0.0, pb.est_us or 0.0), 0.0, device, cfg)
            info["modes"].add(mode)
            for w in (a1, b):
                w.configure(mode, cfg.block_ms)
            for i in range(cfg.warmup_rounds):
                run_round(-1 - i, a1, b, rng, cfg)
            got = [run_round(i, a1, b, rng, cfg) for i in range(rounds)]
            for w in (a1, b):
                w.finish(recheck=False)
        finally:  # a worker that failed is the caller's to restart
            info["last_s"] = time.monotonic() - t0
        logs = [r.log_ratio for r in got if not r.dropped]
        if len(logs) < max(2, rounds // 2):
            return None
        m = sum(logs) / len(logs)
        sd = math.sqrt(sum((x - m) ** 2 for x in logs) / (len(logs) - 1))
        return m, sd / math.sqrt(len(logs))

    return measure, info


def calibrate_b(
    workers: dict[str, Any],
    entry: str,
    n_a: int,
    copies: int,
    cfg: ProtocolConfig,
    device: str,
    rng: random.Random,
    *,
    target_ratio: float,
    band: float,
    seconds: float,
    rounds: int,
    max_probes: int,
) -> tuple[int, dict[str, Any]]:
    """B's size for B/A = ``target_ratio`` (+- ``band``), measured on the A1 and B workers the way
    the streams will be (fresh set-up per probe, same mode and blocks), before recording;
    ``seconds`` bounds the probes (the compile and check before them aside). Returns n_b and the
    record kept in raw_streams.json."""
    for k in ("A1", "B"):  # compile (and check) before the clock starts
        c = workers[k].check([entry], (n_a,), "float32", seed=1)
        if not c.correct:
            raise RuntimeError(f"proof kernel wrong on {k}: {c.message}")
    t0 = time.monotonic()
    deadline = t0 + seconds
    # as many more elements as the slowdown asked for: right where time is proportional to them
    guess = max(1, round((target_ratio - 1) * n_a / UNIT))
    measure, info = worker_measure(workers, entry, n_a, copies, cfg, device, rng, rounds=rounds)
    cal = search_knob(
        measure,
        guess=guess,
        lo=1,
        hi=max(2, math.ceil(0.25 * n_a / UNIT)),
        target_ratio=target_ratio,
        band=band,
        max_probes=max_probes,
        out_of_time=lambda: time.monotonic() + info["last_s"] > deadline,
    )
    knob = cal.knob if cal.probes else guess
    rec = calibration_record(cal, n_a, knob, time.monotonic() - t0, rounds, sorted(info["modes"]))
    return n_a + knob * UNIT, rec


def calibration_record(
    cal: Calibration, n_a: int, knob: int, seconds: float, rounds: int, modes: list[str]
) -> dict[str, Any]:
    """What raw_streams.json keeps of a calibration (JSON-safe: no NaN)."""

    def num(x: float | None) -> float | None:
        return x if x is not None and math.isfinite(x) else None

    return {
        "target_ratio": cal.target_ratio,
        "band": cal.band,
        "unit_elements": UNIT,
        "knob": knob,
        "extra_elements": knob * UNIT,
        "extra_fraction": knob * UNIT / n_a,
        "predicted_ratio": num(cal.predicted_ratio),
        "predicted_se_log": num(cal.predicted_se_log),
        "within": cal.within,
        "stop": cal.stop,
        "seconds": seconds,
        "rounds_per_probe": rounds,
        "modes": modes,
        "probes": [
            {"n_b": n_a + p.knob * UNIT, "ratio": math.exp(p.log_ratio), "se_log": p.se_log}
            for p in cal.probes
        ],
    }
