"""Executions as the unit: the decision from rounds measured in several independent executions.

An *execution* is one pair of fresh worker processes (base and head) that measured a case: a pass
of the sweep starts new workers, so each pass is an execution, and with crossover each of its two
worker pairs (arms) is one. Identical code can run faster or slower in one process than in the
next, consistently inside it: where its buffers and workspaces land (atomics into small buffers,
split reductions), and which config its autotuner picked from near-tied candidates. Rounds inside
one execution cannot see that variance (Kalibera and Jones, "Rigorous Benchmarking in Reasonable
Time", ISMM 2013; Mytkowicz et al., ASPLOS 2009, for layout alone), so the interval here is built
on two levels. Pure functions; no I/O.

Each execution's value is the Hodges-Lehmann estimate of its rounds' log-ratios (robust to a
stray round, and consistent with the medians printed beside it). The crossover arm is a fixed
effect (it carries the worker slot's bias, which the arms' average cancels). Then:

- the **between-execution test**: the executions' spread around their arm's mean against what
  their own rounds' noise predicts (an F test);
- where the executions agree (p >= ``POOL_ABOVE``) and even a generous bound on their spread
  (its one-sided 90% upper confidence limit) is under ``POOL_SPREAD`` of the tolerance's band,
  their rounds are pooled: the interval's variance is the rounds' (many degrees of freedom).
  The bound matters where rounds are noisy and executions few: four executions of a host-bound
  fused cross entropy read 0.89-0.94 in one run (no F test can tell that from noise at 2
  degrees of freedom), 0.76-1.27 in the next, and pooled they made a false FASTER;
- where they do not, the execution is the unit: the variance is the executions' own spread, with
  as many degrees of freedom as there are executions beyond the arms. That interval is wide
  when the executions disagree, so identical code that varies from process to process reads
  INCONCLUSIVE with its measured spread instead of a false SLOWER or FASTER.

The test is sequential over executions: looks after ``min_executions`` ... ``max_executions``
executions, each spending ``alpha / K``, as in ``checks.sweep.stats``. A difference (SLOWER,
FASTER) is claimed at the case's share of the sweep's false-alarm rate; SAME is an equivalence
test at ``SAME_ALPHA`` per case (its interval, narrower, is the one reported then): SAME says
"within the tolerance, at 95% confidence", and a false alarm stays as rare as before.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

from checks.sweep.stats import Decision, band_log, betainc, median, t_ppf, zone

# the executions are pooled when the between-execution test's p-value is at least this: a
# lenient level, so that a between-execution variance that matters is seldom pooled away
POOL_ABOVE = 0.1
# SAME is an equivalence test at this level per case (two one-sided tests), spread over the
# looks; SLOWER and FASTER are claimed at the sweep's far smaller per-case share of its alpha
SAME_ALPHA = 0.05
# ... and only when the upper 90% confidence limit of the executions' spread (one SD) is under
# this share of the band (log of 1 + tolerance)
POOL_SPREAD = 0.5
POOL_BOUND_LEVEL = 0.9
# A case whose first pass shows none of what makes a call's time differ from one process to
# the next (``checks.sweep.models.one_pass_reason``) is decided over that pass's two
# executions (crossover's arms), its interval carrying this between-execution SD (log scale):
# the largest spread beyond the rounds' noise (one SD) that such kernels showed over four
# executions each in the A/A runs of real kernels on the H200, 0.29%
# (``bench/results/h200/real_kernels``: 18 verdicts of kernels with no atomics, split
# reduction, autotuner or C++ extension), rounded up
ONE_PASS_PRIOR_SD = math.log1p(0.003)
# ... and its pass takes rounds until the SAME interval that decision would report is at most
# this share of the band wide on either side, so that an estimate within the rest of the band
# reads SAME then and there. The stop rests on the rounds' spread, never on their mean, so it
# leaves the verdict's error rates as they are. Where the rounds are noisy it adds rounds (at
# 0.8% a call, about 16 units became 30 in simulation); where they are quiet, as in graph mode,
# five rounds reach it and the prior fills the rest. Then what keeps a plain case from one pass
# is a shift between its two processes beyond the prior, which no number of rounds removes:
# a 1-element shape at 1% read 1.005 and 0.994 in its first pass in 2 of 10 A/A runs on an
# H100 (``bench/results/h100/cli_decision/2026-12-05d``; 3 of 10 before this rule), and its
# later passes 0.998-1.001; on another H100 (``2026-12-06``) the 1- and 7-element shapes of one
# run read 0.991-0.996 in both executions of their first pass, 0.998-1.005 after. Kernels of
# about 1 us spread 0.4-0.55% from execution to execution there (their rounds' noise included).
ONE_PASS_REACH = 0.6
# the variance of a Hodges-Lehmann estimate is pi/3 times the mean's, for normal rounds
HL_VARIANCE = math.pi / 3.0
# the median absolute deviation times this estimates the standard deviation of normal rounds
MAD_TO_SD = 1.4826

Level = Literal["rounds", "executions"]


@dataclass(frozen=True)
class Execution:
    """One execution pair's counted log-ratios (head over base), in the order measured."""

    execution: int  # the sweep's pass: fresh workers each
    arm: int  # the crossover arm inside the pass (0 without crossover)
    logs: tuple[float, ...]


def hodges_lehmann(xs: Sequence[float]) -> float:
    """The median of all pairwise (Walsh) averages, each value with itself included."""
    n = len(xs)
    if n == 0:
        raise ValueError("Hodges-Lehmann estimate of an empty sequence")
    if n > 400:  # O(n^2): past a few hundred rounds a thinned sample estimates it as well
        step = n / 400
        xs = [xs[int(i * step)] for i in range(400)]
        n = 400
    walsh = [(xs[i] + xs[j]) / 2.0 for i in range(n) for j in range(i, n)]
    return median(walsh)


def f_sf(f: float, d1: float, d2: float) -> float:
    """P(F > f) for the F distribution with (d1, d2) degrees of freedom."""
    if f <= 0.0:
        return 1.0
    if math.isinf(f):
        return 0.0
    return 1.0 - betainc(d1 / 2.0, d2 / 2.0, d1 * f / (d1 * f + d2))


@dataclass(frozen=True)
class Components:
    """The two levels' estimates for one case."""

    estimate_log: float  # the arms' mean of their executions' mean Hodges-Lehmann estimate
    se_log: float  # its standard error at the chosen level
    df: float  # degrees of freedom of that standard error
    level: Level
    executions: int
    within_sd_log: float  # of one round's log-ratio inside an execution
    between_sd_log: float  # of an execution's value beyond its rounds' noise (0 when none seen)
    p_between: float  # the between-execution test (1.0 when it could not be made)
    values: tuple[float, ...]  # each execution's estimate, in the order given


def chi2_over_df_ppf(p: float, df: float) -> float:
    """The ``p`` quantile of a chi-square over its degrees of freedom (an F with ``df`` and
    infinitely many), by bisection on its distribution."""
    lo, hi = 0.0, 1.0
    while 1.0 - f_sf(hi, df, 1e9) < p:
        hi *= 2.0
    for _ in range(80):
        mid = (lo + hi) / 2.0
        if 1.0 - f_sf(mid, df, 1e9) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def spread_bound(mean_square: float, df: float, level: float = POOL_BOUND_LEVEL) -> float:
    """The one-sided ``level`` upper confidence limit of the SD behind a mean square with ``df``
    degrees of freedom."""
    return math.sqrt(mean_square / chi2_over_df_ppf(1.0 - level, df))


def components(
    executions: Sequence[Execution],
    *,
    pool_above: float = POOL_ABOVE,
    band: float | None = None,
    prior_sd: float = 0.0,
) -> Components:
    """Both levels' estimates from the executions that have at least one counted round. With
    ``band`` (the tolerance's, log scale), rounds are pooled only where the executions' spread
    is bounded well under it (``POOL_SPREAD``). ``prior_sd``: a between-execution SD (log scale)
    known beforehand, which the interval carries where the executions are too few to estimate
    one (a single execution per arm: ``ONE_PASS_PRIOR_SD``)."""
    used = [e for e in executions if e.logs]
    if not used:
        raise ValueError("no execution has a counted round")
    values = [hodges_lehmann(e.logs) for e in used]
    residuals = [x - v for e, v in zip(used, values, strict=True) for x in e.logs]
    spread = median([abs(r) for r in residuals]) * MAD_TO_SD
    if spread == 0.0 and len(residuals) > 1:  # most rounds equal: fall back on the plain SD
        spread = math.sqrt(math.fsum(r * r for r in residuals) / max(1, len(residuals) - 1))
    df_within = sum(len(e.logs) - 1 for e in used)
    within = [HL_VARIANCE * spread**2 / len(e.logs) for e in used]  # each value's own variance

    arms: dict[int, list[int]] = {}
    for i, e in enumerate(used):
        arms.setdefault(e.arm, []).append(i)
    groups = list(arms.values())  # the arms are a fixed effect: each carries its slots' bias
    a = len(groups)
    group_means = [math.fsum(values[i] for i in g) / len(g) for g in groups]
    estimate = math.fsum(group_means) / a
    rounds_var = math.fsum(math.fsum(within[i] for i in g) / len(g) ** 2 for g in groups) / a**2
    df_between = len(used) - a
    if df_between < 1 or df_within < 1:
        # each arm's value carries the prior's between-execution variance, over its executions
        prior_var = prior_sd**2 * math.fsum(1.0 / len(g) for g in groups) / a**2
        return Components(
            estimate,
            math.sqrt(rounds_var + prior_var) if df_within >= 1 else math.inf,
            max(1, df_within),
            "rounds",
            len(used),
            spread,
            0.0,
            1.0,
            tuple(values),
        )
    ss = math.fsum(
        (values[i] - m) ** 2 for g, m in zip(groups, group_means, strict=True) for i in g
    )
    between_ms = ss / df_between  # estimates between variance + the mean own variance
    own = math.fsum(within) / len(within)
    f = between_ms / own if own > 0 else (math.inf if between_ms > 0 else 0.0)
    p_between = f_sf(f, df_between, df_within)
    between_sd = math.sqrt(max(0.0, between_ms - own))
    tight = band is None or spread_bound(between_ms, df_between) < POOL_SPREAD * band
    if p_between >= pool_above and tight:
        return Components(
            estimate,
            math.sqrt(rounds_var),
            df_within,
            "rounds",
            len(used),
            spread,
            between_sd,
            p_between,
            tuple(values),
        )
    exec_var = between_ms * math.fsum(1.0 / len(g) for g in groups) / a**2
    return Components(
        estimate,
        math.sqrt(max(exec_var, rounds_var)),
        df_between,
        "executions",
        len(used),
        spread,
        between_sd,
        p_between,
        tuple(values),
    )


@dataclass(frozen=True)
class ExecutionDecision(Decision):
    """A ``Decision`` reached over executions, with the levels it rests on."""

    executions: int = 0
    level: Level = "rounds"
    within_sd_log: float = 0.0
    between_sd_log: float = 0.0
    p_between: float = 1.0
    values: tuple[float, ...] = ()

    @property
    def between_spread(self) -> float:
        """The executions' spread (one standard deviation) as a fraction of the time."""
        return math.expm1(self.between_sd_log)


def _units(executions: Sequence[Execution]) -> int:
    """Counted units: rounds, or with crossover one round of each arm."""
    arms = {e.arm for e in executions} or {0}
    return sum(len(e.logs) for e in executions) // len(arms)


def one_pass_reached(
    executions: Sequence[Execution], *, tolerance: float, looks_planned: int
) -> bool:
    """Whether a one-pass case's first pass has rounds enough (``ONE_PASS_REACH``): the SAME
    interval its decision would report over ``executions`` (at the first of ``looks_planned``
    looks, with ``ONE_PASS_PRIOR_SD``) is at most that share of the band on either side, or no
    number of rounds could make it so (the prior alone is that wide: a tolerance under about
    0.8%)."""
    used = [e for e in executions if e.logs]
    if not used:
        return False
    band = band_log(tolerance)
    reach = ONE_PASS_REACH * band
    level = 1.0 - SAME_ALPHA / max(1, looks_planned)
    arms = len({e.arm for e in used})
    if NormalDist().inv_cdf(level) * ONE_PASS_PRIOR_SD / math.sqrt(arms) >= reach:
        return True
    c = components(used, band=band, prior_sd=ONE_PASS_PRIOR_SD)
    return t_ppf(level, c.df) * c.se_log <= reach


def execution_looks(min_executions: int, max_executions: int) -> tuple[int, ...]:
    """The execution counts at which the test looks (passes of the sweep)."""
    if not 1 <= min_executions <= max_executions:
        raise ValueError("need 1 <= min_executions <= max_executions")
    return tuple(range(min_executions, max_executions + 1))


def decide_executions(
    executions: Sequence[Execution],
    *,
    tolerance: float,
    alpha: float,
    looks: Sequence[int],
    complete: bool = False,
    same_alpha: float = SAME_ALPHA,
    prior_sd: float = 0.0,
) -> ExecutionDecision:
    """Replay the sequential test over passes. ``executions`` hold every pass's executions (a
    pass is the ``execution`` number; its arms are executions of their own). Looks happen after
    the pass counts in ``looks``; the first look whose interval lies in one zone decides, and the
    last decides whatever it reads. ``complete``: no more passes will come (the budget ran out),
    so the passes there are make the last look, decided or INCONCLUSIVE; fewer passes than the
    first look never decide SLOWER, FASTER or SAME."""
    if not 0.0 < alpha < 0.5:
        raise ValueError("alpha must be in (0, 0.5)")
    band = band_log(tolerance)
    k = len(looks)
    alpha_look = alpha / k
    passes = sorted({e.execution for e in executions if e.logs})
    points = [p for p in looks if p <= len(passes)]
    if complete and passes and (not points or points[-1] < len(passes)) and len(points) < k:
        points.append(len(passes))
    if complete and not points and passes:
        points = [len(passes)]
    p_slow = p_fast = p_same = 1.0
    last: ExecutionDecision | None = None
    for taken, count in enumerate(points, start=1):
        mine = [e for e in executions if e.execution in passes[:count]]
        c = components(mine, band=band, prior_sd=prior_sd)
        rounds = _units(mine)
        lo, hi, ps, pf, pm, verdict = zone(
            c.estimate_log, c.se_log, c.df, band, alpha_look, same_alpha / k
        )
        shown = alpha_look if verdict in ("SLOWER", "FASTER") else max(alpha_look, same_alpha / k)
        if count < looks[0]:
            verdict = "INCONCLUSIVE"
        p_slow, p_fast, p_same = min(p_slow, ps), min(p_fast, pf), min(p_same, pm)
        is_last = count >= looks[-1] or (complete and count == points[-1])
        final = verdict != "INCONCLUSIVE" or is_last
        last = ExecutionDecision(
            verdict=verdict if final else "INCONCLUSIVE",
            final=final,
            n=rounds,
            mean_log=c.estimate_log,
            ci_low_log=lo,
            ci_high_log=hi,
            p_slower=min(1.0, k * p_slow),
            p_faster=min(1.0, k * p_fast),
            p_same=min(1.0, k * p_same),
            looks_taken=taken,
            looks_planned=k,
            alpha_look=shown,
            executions=c.executions,
            level=c.level,
            within_sd_log=c.within_sd_log,
            between_sd_log=c.between_sd_log,
            p_between=c.p_between,
            values=c.values,
        )
        if final:
            return last
    if last is not None:
        return last
    rounds = _units(executions)
    return ExecutionDecision(
        verdict="INCONCLUSIVE",
        final=complete,
        n=rounds,
        mean_log=0.0,
        ci_low_log=-math.inf,
        ci_high_log=math.inf,
        p_slower=1.0,
        p_faster=1.0,
        p_same=1.0,
        looks_taken=0,
        looks_planned=k,
        alpha_look=alpha_look,
    )
