"""Statistics for paired timing streams. Pure functions: no I/O, no numpy, no torch (Student's t
from the regularized incomplete beta function, accurate to ~1e-12 in the ranges used here).

The unit of replication is a *round*: one block of base and one block of head, run back to back
in random order. Its log-ratio ``log(head / base)`` cancels slow drift shared by both sides.

The per-shape decision is a group-sequential t-interval on the mean log-ratio. Looks are taken at
a fixed schedule of round counts (``look_schedule``); each of the K looks spends ``alpha / K`` on
each side (Bonferroni over looks), so whatever look the run stops at, the chance of a wrong claim
is at most ``alpha``. The zone ``|log ratio| <= log(1 + tolerance)`` is SAME; a claim is made only
when the whole interval lies in one zone:

    SLOWER        ci_low  >  +log(1 + tolerance)
    FASTER        ci_high <  -log(1 + tolerance)
    SAME          -log(1 + tolerance) < ci_low  and  ci_high < +log(1 + tolerance)
    INCONCLUSIVE  the interval straddles a boundary when the rounds run out

So a SLOWER claim is a false alarm with probability at most ``alpha`` even when the true slowdown
sits exactly at the tolerance boundary.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist
from typing import Literal

# ------------------------------------------ Student's t, from the regularized incomplete beta


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction for the regularized incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    x = df / (df + t * t)
    tail = 0.5 * betainc(df / 2.0, 0.5, x)
    return 1.0 - tail if t > 0 else tail


@lru_cache(maxsize=4096)
def t_ppf(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (0 < p < 1)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"quantile level must be in (0, 1), got {p}")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_ppf(1.0 - p, df)
    lo, hi = 0.0, max(1.0, NormalDist().inv_cdf(p) * 2.0)
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)


Verdict = Literal["SLOWER", "SAME", "FASTER", "INCONCLUSIVE"]

# ------------------------------------------------------------------------------- basic summaries


def mean(xs: Sequence[float]) -> float:
    return math.fsum(xs) / len(xs)


def stdev(xs: Sequence[float]) -> float:
    """Sample standard deviation (n - 1); 0 for fewer than two values."""
    n = len(xs)
    if n < 2:
        return 0.0
    m = mean(xs)
    return math.sqrt(math.fsum((x - m) ** 2 for x in xs) / (n - 1))


def median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    n = len(s)
    if n == 0:
        raise ValueError("median of an empty sequence")
    mid = n // 2
    return s[mid] if n % 2 else 0.5 * (s[mid - 1] + s[mid])


def look_schedule(min_rounds: int, max_rounds: int, growth: float = 1.5) -> tuple[int, ...]:
    """Round counts at which the sequential test looks: geometric from min to max, max included."""
    if min_rounds < 3 or max_rounds < min_rounds or growth <= 1.0:
        raise ValueError("need 3 <= min_rounds <= max_rounds and growth > 1")
    looks = [min_rounds]
    while looks[-1] < max_rounds:
        looks.append(min(max_rounds, max(looks[-1] + 1, math.ceil(looks[-1] * growth))))
    return tuple(looks)


# ---------------------------------------------------------------------------------- the decision


@dataclass(frozen=True)
class Look:
    """The t-interval on the mean log-ratio after ``n`` rounds, at one look's error budget."""

    n: int
    mean_log: float
    se_log: float
    ci_low_log: float
    ci_high_log: float
    p_slower: float  # H0: log-ratio <= +band (not slower beyond tolerance)
    p_faster: float  # H0: log-ratio >= -band
    p_same: float  # H0: |log-ratio| >= band (two one-sided tests)
    verdict: Verdict


def _tail_above(z: float, df: float) -> float:
    return 1.0 - t_cdf(z, df)


def evaluate_look(xs: Sequence[float], band_log: float, alpha_look: float) -> Look:
    """One look: a two-sided interval at ``1 - 2 * alpha_look`` and the zone it falls in."""
    n = len(xs)
    m = mean(xs)
    se = stdev(xs) / math.sqrt(n) if n > 1 else math.inf
    if n < 2:
        return Look(n, m, se, -math.inf, math.inf, 1.0, 1.0, 1.0, "INCONCLUSIVE")
    return Look(n, m, se, *zone(m, se, n - 1, band_log, alpha_look))


def zone(
    m: float,
    se: float,
    df: float,
    band_log: float,
    alpha_look: float,
    same_alpha: float | None = None,
) -> tuple[float, float, float, float, float, Verdict]:
    """An estimate ``m`` with standard error ``se`` on ``df`` degrees of freedom, against the
    band: the interval, the three one-sided p-values, and the zone (``lo, hi, p_slower,
    p_faster, p_same, verdict``). A difference (SLOWER, FASTER) is claimed when the interval at
    ``1 - 2 * alpha_look`` lies beyond the band. With ``same_alpha`` (larger), SAME is an
    equivalence test at that level: the interval at ``1 - 2 * same_alpha`` inside the band;
    that narrower interval is the one returned unless a difference was claimed."""
    if not math.isfinite(se):
        return -math.inf, math.inf, 1.0, 1.0, 1.0, "INCONCLUSIVE"
    same_alpha = max(alpha_look, same_alpha or alpha_look)
    if se == 0.0:
        lo = hi = lo_same = hi_same = m
        p_slow = 0.0 if m > band_log else 1.0
        p_fast = 0.0 if m < -band_log else 1.0
        p_same = 0.0 if -band_log < m < band_log else 1.0
    else:
        half = t_ppf(1.0 - alpha_look, df) * se
        lo, hi = m - half, m + half
        half_same = t_ppf(1.0 - same_alpha, df) * se
        lo_same, hi_same = m - half_same, m + half_same
        p_slow = _tail_above((m - band_log) / se, df)
        p_fast = t_cdf((m + band_log) / se, df)
        p_same = max(t_cdf((m - band_log) / se, df), _tail_above((m + band_log) / se, df))
    if lo > band_log:
        return lo, hi, p_slow, p_fast, p_same, "SLOWER"
    if hi < -band_log:
        return lo, hi, p_slow, p_fast, p_same, "FASTER"
    verdict: Verdict = "SAME" if -band_log < lo_same and hi_same < band_log else "INCONCLUSIVE"
    return lo_same, hi_same, p_slow, p_fast, p_same, verdict


@dataclass(frozen=True)
class Decision:
    """Where a shape's sequential test stands. ``final`` False means: measure more rounds."""

    verdict: Verdict
    final: bool
    n: int
    mean_log: float
    ci_low_log: float
    ci_high_log: float
    p_slower: float  # sequential p-values, valid at whatever look the run stopped
    p_faster: float
    p_same: float
    looks_taken: int
    looks_planned: int
    alpha_look: float

    @property
    def ratio(self) -> float:
        return math.exp(self.mean_log)

    @property
    def ratio_low(self) -> float:
        return math.exp(self.ci_low_log)

    @property
    def ratio_high(self) -> float:
        return math.exp(self.ci_high_log)

    @property
    def confidence(self) -> float:
        """The coverage of the reported two-sided interval."""
        return 1.0 - 2.0 * self.alpha_look


def band_log(tolerance: float) -> float:
    if tolerance < 0:
        raise ValueError("tolerance must be >= 0")
    return math.log1p(tolerance)


def sequential_decision(
    logs: Sequence[float],
    *,
    tolerance: float,
    alpha: float,
    looks: Sequence[int],
    complete: bool = False,
) -> Decision:
    """Replay the group-sequential test over a stream of per-round log-ratios.

    Looks happen at the counts in ``looks`` that the stream reaches; the first look whose interval
    lies in one zone decides. The last scheduled look always decides (INCONCLUSIVE when the
    interval straddles a boundary). With ``complete`` the stream is over (a time budget ran out):
    an unscheduled look at its end takes the place of the next scheduled one, so no more than K
    looks are ever spent.
    """
    if not 0.0 < alpha < 0.5:
        raise ValueError("alpha must be in (0, 0.5)")
    band = band_log(tolerance)
    k = len(looks)
    alpha_look = alpha / k
    p_slow = p_fast = p_same = 1.0
    taken = 0
    last: Look | None = None
    points = [n for n in looks if n <= len(logs)]
    if complete and len(logs) >= 2 and (not points or points[-1] < len(logs)) and len(points) < k:
        points.append(len(logs))
    for n in points:
        last = evaluate_look(logs[:n], band, alpha_look)
        taken += 1
        p_slow, p_fast, p_same = (
            min(p_slow, last.p_slower),
            min(p_fast, last.p_faster),
            min(p_same, last.p_same),
        )
        is_last = n >= looks[-1] or (complete and n == points[-1])
        if last.verdict != "INCONCLUSIVE" or is_last:
            return _decision(last, True, taken, k, alpha_look, p_slow, p_fast, p_same)
    if last is None:
        n = len(logs)
        m = mean(logs) if n else 0.0
        return Decision(
            "INCONCLUSIVE", complete, n, m, -math.inf, math.inf, 1.0, 1.0, 1.0, 0, k, alpha_look
        )
    return _decision(last, complete, taken, k, alpha_look, p_slow, p_fast, p_same)


def _decision(
    look: Look,
    final: bool,
    taken: int,
    k: int,
    alpha_look: float,
    p_slow: float,
    p_fast: float,
    p_same: float,
) -> Decision:
    return Decision(
        verdict=look.verdict if final else "INCONCLUSIVE",
        final=final,
        n=look.n,
        mean_log=look.mean_log,
        ci_low_log=look.ci_low_log,
        ci_high_log=look.ci_high_log,
        p_slower=min(1.0, k * p_slow),
        p_faster=min(1.0, k * p_fast),
        p_same=min(1.0, k * p_same),
        looks_taken=taken,
        looks_planned=k,
        alpha_look=alpha_look,
    )


# -------------------------------------------------------------------------- across many shapes


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values (same order as given); reject where adjusted <= alpha."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float


def weighted_geomean(groups: Sequence[Sequence[float]], weights: Sequence[float]) -> float:
    """exp of the weighted mean of each group's mean log-ratio."""
    total = math.fsum(weights)
    return math.exp(math.fsum(w * mean(g) for g, w in zip(groups, weights, strict=True)) / total)


def bootstrap_geomean(
    groups: Sequence[Sequence[float]],
    weights: Sequence[float] | None = None,
    *,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> Interval:
    """A weighted geomean of ratios with a percentile bootstrap interval over rounds.

    ``groups`` holds each shape's per-round log-ratios. Rounds are resampled with replacement
    within each shape (shapes are fixed, their weights too), which keeps the pairing of base and
    head inside a round.
    """
    groups = [list(g) for g in groups]
    if not groups or any(len(g) == 0 for g in groups):
        raise ValueError("every group needs at least one round")
    weights = [1.0] * len(groups) if weights is None else list(weights)
    if len(weights) != len(groups) or any(w < 0 for w in weights) or math.fsum(weights) <= 0:
        raise ValueError("weights must be non-negative, one per group, not all zero")
    total = math.fsum(weights)
    estimate = weighted_geomean(groups, weights)
    rng = random.Random(seed)
    stats = []
    for _ in range(n_boot):
        acc = 0.0
        for g, w in zip(groups, weights, strict=True):
            if w == 0.0:
                continue
            sample = rng.choices(g, k=len(g))
            acc += w * math.fsum(sample) / len(sample)
        stats.append(acc / total)
    stats.sort()
    tail = (1.0 - level) / 2.0
    lo = stats[max(0, math.floor(tail * n_boot))]
    hi = stats[min(n_boot - 1, math.ceil((1.0 - tail) * n_boot) - 1)]
    return Interval(estimate, math.exp(lo), math.exp(hi))
