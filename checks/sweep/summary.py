"""From raw rounds to verdicts, per case and per sweep. Pure, but for reading a journal.

``finalize`` is what a live sweep runs at its end and what ``recompute`` runs offline on a results
file: replay each case's rounds through the sequential test (at the sweep's per-case error budget
``alpha / family_size``), Holm across the cases' SLOWER p-values, then the geomeans (weighted by
served-shape weights, with a bootstrap interval over rounds), the worst case, and the small and
ragged shapes apart. ``merge`` joins results of several runners of one vendor. ``ended`` is what
a sweep stopped before its end keeps (a live one's stop, and ``from_journal``'s run that was
killed before it wrote its results): each case's passes so far, the rest not measured.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import cast

from bot.contracts.evidence import Clause, said
from bot.errors import ResultsError
from bot.outputs import plural
from checks.sweep.executions import ONE_PASS_PRIOR_SD, SAME_ALPHA, ExecutionDecision
from checks.sweep.models import (
    CaseKey,
    Ceilings,
    GeomeanSummary,
    KernelSummary,
    ShapeResult,
    Summary,
    SweepResult,
    WorstCase,
    journal_lines,
)
from checks.sweep.protocol import (
    CaseRun,
    ProtocolConfig,
    Round,
    StopReason,
    decide_run,
    picks_vary,
    replay_run,
)
from checks.sweep.stats import Verdict, band_log, bootstrap_geomean, holm, median, t_ppf


def decide_case(case: ShapeResult, protocol: ProtocolConfig, family_size: int) -> ShapeResult:
    """The case's own decision (before Holm) from its raw rounds, over its executions."""
    if case.status != "ok" or case.raw is None or not case.raw.rounds:
        return case
    alpha = protocol.alpha / max(1, family_size)
    d, like = replay_run(case.raw, protocol, tolerance=case.tolerance, alpha=alpha)
    finite = math.isfinite(d.ci_low_log) and math.isfinite(d.ci_high_log)
    explained = explain(case.raw, d, case.tolerance, like, host_bound(case) or placement(case))
    return case.model_copy(
        update={
            "case_verdict": d.verdict,
            "ratio": d.ratio if d.n else None,
            "ci_low": d.ratio_low if finite else None,
            "ci_high": d.ratio_high if finite else None,
            "ci_level": d.confidence,
            "p_slower": d.p_slower,
            "base_median_us": case.raw.side_median_us("base"),
            "head_median_us": case.raw.side_median_us("head"),
            "rounds": len(case.raw.kept_logs()),
            "dropped_rounds": sum(1 for r in case.raw.rounds if r.dropped),
            "stop_reason": case.raw.stop_reason,
            "executions": d.executions,
            "decided_over": d.level,
            "execution_ratios": tuple(round(math.exp(v), 6) for v in d.values),
            "execution_spread": d.between_spread if d.executions > 1 else None,
            "explanation": said(explained),
            "explained": explained,
        }
    )


def _pick_times(run: CaseRun) -> dict[str, list[float]]:
    """Each execution's median time by the picks its side's autotuners made, both sides."""
    picks = {p.execution: p for p in run.picks}
    times: dict[str, list[float]] = {}
    by: dict[tuple[int, int], list[Round]] = {}
    for r in run.rounds:
        if not r.dropped:
            by.setdefault((r.execution, r.arm), []).append(r)
    for (execution, _), rounds in by.items():
        p = picks.get(execution)
        if p is None:
            continue
        for side, chosen in (("base", p.base), ("head", p.head)):
            if chosen:
                label = " + ".join(chosen)
                times.setdefault(label, []).append(
                    median([getattr(r, side).value_us for r in rounds])
                )
    return times


def host_bound(case: ShapeResult) -> str | None:
    """Why the host's pace may be in a case's time: timed eagerly, and each side's host takes
    longer to issue a call than the GPU takes to run it (None otherwise)."""
    sides = [s for s in (case.base, case.head) if s is not None and s.host_us is not None]
    if case.mode not in ("eager", "eager-noflush") or len(sides) != 2:
        return None
    if not all(s.host_us is not None and s.host_us > s.est_us for s in sides):
        return None
    host = sorted(s.host_us or 0.0 for s in sides)
    gpu = sorted(s.est_us for s in sides)
    return (
        f"the host's pace: it takes {host[0]:.0f}-{host[1]:.0f} us to issue a call the GPU "
        f"runs in {gpu[0]:.0f}-{gpu[1]:.0f} us, so where the host falls behind (or the op "
        "waits for the GPU inside a call: .item(), nonzero, a copy to the host) the GPU's time "
        "follows the host's speed, which differs from one process to the next"
    )


PLACEMENT = "where each process's buffers and workspaces land"


def placement(case: ShapeResult) -> str | None:
    """What the case's launch records (each side's, from its first execution) show of why its
    time can depend on where each process's buffers land: Triton kernels with atomics, a call
    spread over several kernels (partial results in a buffer between them), buffers a call
    allocates besides what it returns. None where there is no record."""
    records = [r for r in (case.base_launches, case.head_launches) if r is not None]
    if not records:
        return None
    atomics = sorted({k.name for r in records for k in r.kernels if k.atomics})
    kernels = max(sum(k.count for k in r.kernels) for r in records)
    buffers = max(r.allocations or 0 for r in records)
    seen = []
    if atomics:
        seen.append(f"atomics in {', '.join(atomics)}")
    if kernels > 1:
        seen.append(f"{kernels} kernel launches in each call")
    if buffers:
        seen.append(f"{plural(buffers, 'buffer')} each call allocates besides its outputs")
    if not seen:
        counted = all(r.allocations is not None for r in records)
        return f"{PLACEMENT} (the launch record shows one kernel, no atomics" + (
            " and no buffer allocated besides the outputs)" if counted else ")"
        )
    return f"{PLACEMENT}: {'; '.join(seen)}"


def explain(
    run: CaseRun,
    d: ExecutionDecision,
    tolerance: float,
    like: frozenset[int] | None = None,
    host: str | None = None,
) -> tuple[Clause, ...]:
    """In words, clause by clause: how far the executions disagreed and its likely cause,
    whether the autotuner picked differently from one process to the next (or base's and
    head's differently), and which passes decided (none when none is worth saying)."""
    out: list[Clause] = []
    unstable = {
        side: counts for side in ("base", "head") if len(counts := run.pick_counts(side)) > 1
    }
    differ = not unstable and any(p.base != p.head for p in run.picks if p.base and p.head)
    if unstable or differ:
        parts = []
        for side in ("base", "head"):
            counts = run.pick_counts(side)
            if side in unstable or differ:
                total = sum(counts.values())
                parts.append(
                    f"{side} picked "
                    + ", ".join(f"{label} in {n} of {total}" for label, n in counts.most_common())
                )
        line = (
            "the autotuner picks differently from one process to the next: "
            if unstable
            else "base's and head's autotuners picked different configs: "
        ) + "; ".join(parts)
        times = {k: median(v) for k, v in _pick_times(run).items()}
        if len(times) > 1:
            fast, slow = min(times, key=times.__getitem__), max(times, key=times.__getitem__)
            if times[fast] > 0:
                line += (
                    f" ({slow} ran {times[slow] / times[fast] - 1:.1%} slower than {fast} "
                    "in the executions that picked them)"
                )
        out.append(Clause(kind="picks_vary" if unstable else "picks_differ", text=line))
    pinned = sum(p.head_pinned for p in run.picks)
    if pinned:
        out.append(
            Clause(
                kind="pinned",
                text=f"in {pinned} of {len(run.picks)} passes head ran the config base's "
                "autotuner picked (the same kernel source and the same configs), so those "
                "passes compare one config",
            )
        )
    if run.one_pass and d.final and len({e.execution for e in run.executions()}) == 1:
        out.append(
            Clause(
                kind="note",
                text=f"decided in one pass (two executions): {run.one_pass}; its interval "
                f"carries the {math.expm1(ONE_PASS_PRIOR_SD):.1%} such kernels varied from one "
                "process to the next",
            )
        )
    if like is not None:
        passes = len({p.execution for p in run.picks})
        out.append(
            Clause(
                kind="matched",
                text=f"decided over the {len(like)} of {passes} passes in which base and head "
                "picked the same configs from the same lists (the same kernel at the same config)",
            )
        )
    if d.executions > 1 and d.level == "executions":
        ratios = [math.exp(v) for v in d.values]
        picks = bool(unstable) and like is None  # over matched passes, one config on both sides
        cause = (
            "the autotuner's picks"
            if picks
            else host or f"{PLACEMENT} (atomics, split reductions, placement)"
        )
        spread = (
            f"head/base varied from one execution (fresh processes) to the next: "
            f"{min(ratios):.3f} to {max(ratios):.3f} over {d.executions} executions, "
            f"{d.between_spread:.1%} spread (one SD) beyond the rounds' noise"
        )
        out.append(Clause(kind="spread", text=spread))
        out.append(Clause(kind="cause_picks" if picks else "cause", text=f"likely cause: {cause}"))
        if d.verdict == "INCONCLUSIVE":
            out.append(
                Clause(kind="undecided", text=f"too much to decide at a {tolerance:.1%} tolerance")
            )
    return tuple(out)


# ------------------------------------------------------------------- a case over several passes
# A pass measures the cases still undecided with fresh workers: one execution of each (two with
# crossover, its worker pairs). ``combine`` joins a case's passes into one result;
# ``needs_another`` says whether the sequential test over executions wants one more.


def _merged_run(first: CaseRun, later: CaseRun) -> CaseRun:
    stops = (*first.pass_stops, *later.pass_stops)
    reason: StopReason = "throttled" if "throttled" in stops else later.stop_reason
    return first.model_copy(
        update={
            "warmup": first.warmup + later.warmup,
            "rounds": first.rounds + later.rounds,
            "picks": first.picks + later.picks,
            "pass_stops": stops,
            "stop_reason": reason,
            "seconds": first.seconds + later.seconds,
        }
    )


def combine(earlier: ShapeResult | None, new: ShapeResult, execution: int) -> ShapeResult:
    """One result for a case from its passes so far. A later pass that was skipped (the
    budget ran out) or stopped (the command was) leaves the earlier passes' result with a note;
    one that failed fails the
    case (a fresh process showed the fault), its message naming the execution. What the first
    pass recorded each side launched is kept."""
    if earlier is None:
        return new
    joined = _combined(earlier, new, execution)
    kept = {
        f"{side}_launches": getattr(earlier, f"{side}_launches")
        for side in ("base", "head")
        if getattr(joined, f"{side}_launches") is None
    }
    return joined.model_copy(update=kept) if any(kept.values()) else joined


def _combined(earlier: ShapeResult, new: ShapeResult, execution: int) -> ShapeResult:
    notes = tuple(dict.fromkeys((*earlier.notes, *new.notes)))
    if new.status in ("skipped", "stopped"):
        why = f"execution {execution + 1} not measured: {new.message}"
        return earlier.model_copy(update={"notes": (*notes, why)})
    if earlier.status != "ok":
        return earlier
    phases = dict(earlier.phase_s)
    for step, seconds in new.phase_s.items():
        phases[step] = round(phases.get(step, 0.0) + seconds, 4)
    spent = earlier.gpu_seconds + new.gpu_seconds
    if new.status != "ok":
        return new.model_copy(
            update={
                "message": f"in execution {execution + 1} (fresh workers): {new.message}",
                "notes": notes,
                "gpu_seconds": spent,
                "phase_s": phases,
            }
        )
    if earlier.raw is None or new.raw is None:
        return new
    if new.mode != earlier.mode:
        notes = (*notes, f"execution {execution + 1} timed in {new.mode} mode, not {earlier.mode}")
    return earlier.model_copy(
        update={
            "raw": _merged_run(earlier.raw, new.raw),
            "notes": notes,
            "gpu_seconds": spent,
            "phase_s": phases,
            "case_verdict": None,
        }
    )


def _live_decision(
    case: ShapeResult, protocol: ProtocolConfig, family_size: int
) -> tuple[ExecutionDecision, bool]:
    """The case's test over executions as it stands after its passes so far, and whether one
    more pass could still change it: not final, and not futile (futility is not asked where
    the picks vary: a later pass may bring passes that picked alike)."""
    assert case.raw is not None
    looks = protocol.execution_looks()
    alpha = protocol.alpha / max(1, family_size)
    d, _ = decide_run(case.raw, protocol, tolerance=case.tolerance, alpha=alpha, complete=False)
    if d.final:
        return d, False
    if picks_vary(case.raw):
        return d, True  # more passes may bring more that picked alike (the sweep caps the passes)
    stuck = d.level == "executions" and futile(d, case.raw.arms, looks, alpha, case.tolerance)
    return d, not stuck


def needs_another(case: ShapeResult, protocol: ProtocolConfig, family_size: int) -> bool:
    """Whether the case's test over executions looks again after one more pass: measured, not
    throttled, not decided at the looks it has reached, and not futile: where the executions
    disagree so much that even the last look's interval (their spread, at its degrees of
    freedom and error budget) would be wider than the tolerance, more passes cannot decide."""
    if case.status != "ok" or case.raw is None or case.raw.stop_reason == "throttled":
        return False
    return _live_decision(case, protocol, family_size)[1]


def futile(
    d: ExecutionDecision, arms: int, looks: tuple[int, ...], alpha: float, tolerance: float
) -> bool:
    """At the last look, with the executions as spread as now, neither SAME (its interval
    wider than the band) nor a difference (the estimate inside the band plus that interval's
    half-width) could be said."""
    last = looks[-1] * arms
    df = last - arms
    if df < 1:
        return False
    band, k = band_log(tolerance), len(looks)
    se = d.between_sd_log * math.sqrt(1.0 / last)
    same_half = t_ppf(1.0 - SAME_ALPHA / k, df) * se
    claim_half = t_ppf(1.0 - alpha / k, df) * se
    return same_half > band and abs(d.mean_log) <= band + claim_half


def closing_reason(
    case: ShapeResult,
    protocol: ProtocolConfig,
    family_size: int,
    cut: StopReason = "time_budget",
) -> ShapeResult:
    """The case's stop reason once the sweep is over: decided, out of passes, throttled, or cut
    short (``cut``: by the budget, or by the run's stop) where it wanted another pass."""
    if case.status != "ok" or case.raw is None:
        return case
    run = case.raw
    if run.stop_reason == "throttled":
        reason: StopReason = "throttled"
    else:
        d, more = _live_decision(case, protocol, family_size)
        if more:
            reason = cut
        else:
            passes = len({e.execution for e in run.executions()})
            decided = d.verdict != "INCONCLUSIVE" or passes < protocol.max_executions
            reason = "decided" if decided else "max_executions"
    return case.model_copy(update={"raw": run.model_copy(update={"stop_reason": reason})})


def throughput(case: ShapeResult, ceilings: Sequence[Ceilings]) -> ShapeResult:
    """Achieved GB/s and TFLOP/s per side, and the fraction of the device's ceilings."""
    ceil = next((c for c in ceilings if c.device_uuid == case.device_uuid), None)
    if ceil is None and len(ceilings) == 1:
        ceil = ceilings[0]
    update: dict[str, float | None] = {}
    for prefix, info, us in (
        ("", case.head, case.head_median_us),
        ("base_", case.base, case.base_median_us),
    ):
        if info is None or not us:
            continue
        gbps = info.bytes_moved / (us * 1e-6) / 1e9 if info.bytes_moved else None
        tflops = info.flops / (us * 1e-6) / 1e12 if info.flops else None
        fractions = []
        if ceil is not None and gbps is not None and ceil.copy_gbps > 0:
            fractions.append(gbps / ceil.copy_gbps)
        if ceil is not None and tflops is not None and ceil.matmul_tflops > 0:
            fractions.append(tflops / ceil.matmul_tflops)
        update[f"{prefix}gbps"] = gbps
        update[f"{prefix}tflops"] = tflops
        update[f"{prefix}fraction_of_ceiling"] = max(fractions) if fractions else None
    return case.model_copy(update=update)


def _geomean(cases: Sequence[ShapeResult], *, weighted: bool, seed: int) -> GeomeanSummary | None:
    timed = [c for c in cases if c.raw is not None and c.raw.kept_logs()]
    if weighted:
        timed = [c for c in timed if c.weight > 0]
    if not timed:
        return None
    groups = [c.raw.kept_logs() for c in timed if c.raw is not None]
    weights = [c.weight if weighted else 1.0 for c in timed]
    iv = bootstrap_geomean(groups, weights, seed=seed)
    return GeomeanSummary(
        ratio=iv.estimate, ci_low=iv.low, ci_high=iv.high, cases=len(timed), weighted=weighted
    )


def _worst(cases: Sequence[ShapeResult]) -> WorstCase | None:
    timed = [c for c in cases if c.ratio is not None]
    if not timed:
        return None
    w = max(timed, key=lambda c: c.ratio or 0.0)
    return WorstCase(
        kernel=w.kernel,
        shape=w.shape,
        dtype=w.dtype,
        ratio=w.ratio or 0.0,
        ci_low=w.ci_low,
        ci_high=w.ci_high,
        verdict=w.verdict,
    )


def _summaries(cases: Sequence[ShapeResult], seed: int) -> dict:
    ok = [c for c in cases if c.status == "ok"]
    return {
        "served": _geomean([c for c in ok if c.category == "served"], weighted=True, seed=seed),
        "small": _geomean([c for c in ok if c.category == "small"], weighted=False, seed=seed),
        "ragged": _geomean([c for c in ok if c.category == "ragged"], weighted=False, seed=seed),
        "worst": _worst(ok),
    }


def finalize(
    cases: Sequence[ShapeResult],
    protocol: ProtocolConfig,
    family_size: int,
    ceilings: Sequence[Ceilings] = (),
) -> tuple[tuple[ShapeResult, ...], Summary]:
    decided = [throughput(decide_case(c, protocol, family_size), ceilings) for c in cases]
    tested = [i for i, c in enumerate(decided) if c.p_slower is not None]
    # Holm over the whole family: cases planned but not measured count as p = 1.
    m_extra = max(0, family_size - len(tested))
    pvals = [float(cast(float, decided[i].p_slower)) for i in tested] + [1.0] * m_extra
    adjusted = holm(pvals)[: len(tested)]
    out = list(decided)
    for i, p_adj in zip(tested, adjusted, strict=True):
        c = decided[i]
        verdict: Verdict | None
        if p_adj <= protocol.alpha and c.case_verdict in ("SLOWER", "INCONCLUSIVE"):
            verdict = "SLOWER"
        elif c.case_verdict == "SLOWER":
            verdict = "INCONCLUSIVE"
        else:
            verdict = c.case_verdict
        out[i] = c.model_copy(update={"p_slower_holm": p_adj, "verdict": verdict})
    seed = protocol.seed
    kernels = []
    for name in dict.fromkeys(c.kernel for c in out):
        mine = [c for c in out if c.kernel == name]
        kernels.append(KernelSummary(kernel=name, **_summaries(mine, seed)))
    summary = Summary(
        **_summaries(out, seed),
        kernels=tuple(kernels),
        verdicts=dict(Counter(c.verdict for c in out if c.verdict)),
        statuses=dict(Counter(c.status for c in out)),
        dropped_rounds=sum(c.dropped_rounds for c in out),
        alpha=protocol.alpha,
        family_size=family_size,
    )
    return tuple(out), summary


def recompute(result: SweepResult) -> SweepResult:
    """Verdicts, intervals and summaries recomputed from the raw rounds in ``result``."""
    cases, summary = finalize(result.cases, result.protocol, result.family_size, result.ceilings)
    return result.model_copy(update={"cases": cases, "summary": summary})


def merge(results: Sequence[SweepResult]) -> SweepResult:
    """One result from several runners' results of the same vendor, revisions and protocol.
    Verdicts are recomputed with the whole family (Holm across every runner's cases)."""
    if not results:
        raise ResultsError("nothing to merge", hint="pass at least one results file")
    first = results[0]
    for r in results[1:]:
        for field in ("vendor", "timing", "base_rev", "head_rev", "protocol"):
            if getattr(r, field) != getattr(first, field):
                raise ResultsError(
                    f"cannot merge results with different {field}: "
                    f"{getattr(first, field)!r} vs {getattr(r, field)!r}",
                    hint="merge only files of one vendor, measured on the same revisions",
                )
    seen: dict[tuple, int] = {}
    cases: list[ShapeResult] = []
    for n, r in enumerate(results):
        for c in r.cases:
            if c.key in seen:
                raise ResultsError(
                    f"case {c.kernel} {c.dtype} {list(c.shape)} is in results {seen[c.key]} and {n}",
                    hint="split shapes between runners so each case is measured once",
                )
            seen[c.key] = n
            cases.append(c)
    merged = first.model_copy(
        update={
            "envs": tuple(e for r in results for e in r.envs),
            "ceilings": tuple(dict.fromkeys(c for r in results for c in r.ceilings)),
            "family_size": sum(r.family_size for r in results),
            "cases": tuple(cases),
            "gpu_seconds": sum(r.gpu_seconds for r in results),
            **_held(results, cases),
            "started_at": min(r.started_at for r in results),
            "finished_at": max(r.finished_at for r in results),
            "notes": tuple(dict.fromkeys(n for r in results for n in r.notes)),
        }
    )
    return recompute(merged)


def _held(results: Sequence[SweepResult], cases: Sequence[ShapeResult]) -> dict[str, float | None]:
    """The all-in cost of runners measured apart: their held GPU time added up (None when any
    of them did not record it), over all their verdicts; the earliest first verdict."""
    helds = [r.held_gpu_seconds for r in results]
    held = None if any(h is None for h in helds) else sum(h or 0.0 for h in helds)
    verdicts = sum(1 for c in cases if c.status == "ok")
    firsts = [r.first_verdict_s for r in results if r.first_verdict_s is not None]
    return {
        "held_gpu_seconds": held,
        "gpu_s_per_verdict_all_in": held / verdicts if held is not None and verdicts else None,
        "first_verdict_s": min(firsts) if firsts else None,
    }


SET_UP_PHASES = ("prepare", "estimate", "configure", "rewarm", "finish")


def time_line(result: SweepResult) -> str | None:
    """Where the held time went, from the start-up's steps and each case's phases: most of a
    sweep of autotuned or freshly built kernels is the checkouts' own first calls (compiling,
    autotuning, building an extension), not the timing; the first execution's launch record
    (the profiler started in the first worker pair) apart from the checks it ran in. None when
    no case recorded phases."""
    timed = [c for c in result.cases if c.phase_s]
    if not timed:
        return None

    def total(*phases: str) -> float:
        return sum(c.phase_s.get(p, 0.0) for c in timed for p in phases)

    startup = result.startup_s
    build = startup.get("setup", 0.0)
    start = sum(v for k, v in startup.items() if k != "setup")
    longest = max(timed, key=lambda c: c.phase_s.get("check", 0.0))
    worst = longest.phase_s.get("check", 0.0)
    where = [f"start-up {start:.1f} s"]
    if build >= 0.05:
        where.append(f"the build step {build:.1f} s")
    record = total("launch_record")
    compiled = total("compile")
    triton = f" ({compiled:.1f} s of it compiling and loading Triton kernels)"
    where.append(
        f"checks {total('check') - record:.1f} s (correctness and each case's first call: the "
        f"checkouts' own compiling{triton if compiled >= 0.05 else ''}, autotuning, building; "
        f"longest {worst:.1f} s, "
        f"{longest.kernel} {longest.dtype} {'x'.join(map(str, longest.shape))})"
    )
    if record >= 0.05:
        where.append(
            f"the launch record {record:.1f} s (one more call under the profiler of each case "
            "the first worker pair checked in the first execution)"
        )
    where.append(f"timing {total('rounds'):.1f} s")
    setup = f"each case's set-up {total(*SET_UP_PHASES):.1f} s"
    if (late := total("prepare_compile")) >= 0.05:
        setup += (
            f" ({late:.1f} s of it compiling and loading Triton kernels in the workers that had "
            "not checked the case)"
        )
    where.append(setup)
    wrapup = sum(result.wrapup_s.values())
    if wrapup >= 0.05:
        where.append(f"wrap-up {wrapup:.1f} s")
    return "where: " + ", ".join(where)


def ended(
    planned: Sequence[ShapeResult],
    got: Mapping[CaseKey, ShapeResult],
    protocol: ProtocolConfig,
    family_size: int,
    *,
    why: str,
) -> list[ShapeResult]:
    """Each planned case of a sweep that stopped before its end: what its passes so far
    recorded, a case that wanted another pass cut short by the stop, and one with nothing
    recorded (or only a pass the stop ended) not measured, with the status ``stopped`` and
    ``why`` as its message."""
    out = []
    for case in planned:
        have = got.get(case.key)
        if have is None or have.status == "stopped":
            out.append(case.model_copy(update={"status": "stopped", "message": why}))
        else:
            out.append(closing_reason(have, protocol, family_size, cut="stopped"))
    return out


def stop_note(cases: Sequence[ShapeResult], why: str) -> str:
    """The run's note: how far it got, and what the rest are marked."""
    left = sum(1 for c in cases if c.status == "stopped")
    return (
        f"{why} after measuring {len(cases) - left} of {plural(len(cases), 'case')}; the rest "
        "have the status `stopped`: run the sweep again for them"
    )


def from_journal(path: Path) -> SweepResult:
    """The results of the run whose journal is at ``path``, a run that was killed before it
    could write them: the cases it recorded, decided as its results would have them, and the
    rest not measured (``stopped``). A ResultsError says what is wrong with a file that is not
    such a journal; a last line cut short (the kill came while it was written) is left out."""
    run, envs, got = journal_lines(path)
    why = (
        "the sweep was killed before it wrote its results (SIGKILL, a second stop, or its "
        f"machine went away); read from its journal, {path.name}"
    )
    family = run.family_size
    cases, summary = finalize(
        ended(run.cases, got, run.protocol, family, why=why), run.protocol, family
    )
    return run.model_copy(
        update={
            "vendor": envs[0].vendor if envs else run.vendor,
            "envs": tuple(envs),
            "cases": cases,
            "summary": summary,
            "gpu_seconds": sum(c.gpu_seconds for c in got.values()),
            "notes": (*run.notes, stop_note(cases, why)),
            "stopped": "killed",
        }
    )
