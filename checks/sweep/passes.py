"""The sweep's passes: each measures the cases still undecided with fresh worker processes.

A pass is one execution of every case it measures (two with crossover: its two worker pairs).
Its workers share the compiled kernels of the passes before (their Triton cache is seeded from
the first pass's, without the autotuner's saved picks), so a new pass loads its kernels instead of
compiling them, and autotunes each of its cases once per side, as a new production process would.
``combine`` joins a case's passes into one result; ``needs_another`` says whether the sequential
test over executions wants one more (``checks.sweep.executions``).
"""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path

from checks.sweep.executions import SAME_ALPHA, ExecutionDecision, decide_executions
from checks.sweep.models import ShapeResult
from checks.sweep.protocol import CaseRun, ProtocolConfig, StopReason
from checks.sweep.stats import band_log
from checks.sweep.tdist import t_ppf

AUTOTUNE_SUFFIX = ".autotune.json"


def seed_cache(source: Path, target: Path) -> int:
    """Fill ``target`` with hard links to ``source``'s files (copies where a link cannot be
    made), leaving out the autotuner's saved picks: the compiled kernels are reused, each pick is
    made afresh. Triton writes a cache file under a temporary name and renames it into place,
    never into an existing file, so a linked file is never changed under another pass. The
    number of files placed."""
    placed = 0
    if not source.is_dir():
        target.mkdir(parents=True, exist_ok=True)
        return 0
    for folder, _, files in os.walk(source):
        into = target / Path(folder).relative_to(source)
        into.mkdir(parents=True, exist_ok=True)
        for name in files:
            if name.endswith(AUTOTUNE_SUFFIX) or (into / name).exists():
                continue
            try:
                os.link(Path(folder) / name, into / name)
            except OSError:
                shutil.copy2(Path(folder) / name, into / name)
            placed += 1
    return placed


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
    budget ran out) leaves the earlier passes' result with a note; one that failed fails the
    case (a fresh process showed the fault), its message naming the execution."""
    if earlier is None:
        return new
    notes = tuple(dict.fromkeys((*earlier.notes, *new.notes)))
    if new.status == "skipped":
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


def needs_another(case: ShapeResult, protocol: ProtocolConfig, family_size: int) -> bool:
    """Whether the case's test over executions looks again after one more pass: measured, not
    throttled, not decided at the looks it has reached, and not futile: where the executions
    disagree so much that even the last look's interval (their spread, at its degrees of
    freedom and error budget) would be wider than the tolerance, more passes cannot decide."""
    if case.status != "ok" or case.raw is None or case.raw.stop_reason == "throttled":
        return False
    looks = protocol.execution_looks()
    alpha = protocol.alpha / max(1, family_size)
    executions = case.raw.executions()
    d = decide_executions(executions, tolerance=case.tolerance, alpha=alpha, looks=looks)
    if d.final:
        return False
    return not (d.level == "executions" and futile(d, case.raw.arms, looks, alpha, case.tolerance))


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


def closing_reason(case: ShapeResult, protocol: ProtocolConfig, family_size: int) -> ShapeResult:
    """The case's stop reason once the sweep is over: decided, out of passes, throttled, or cut
    short by the budget."""
    if case.status != "ok" or case.raw is None:
        return case
    run = case.raw
    if run.stop_reason == "throttled":
        reason: StopReason = "throttled"
    elif not needs_another(case, protocol, family_size):
        passes = len({e.execution for e in run.executions()})
        final = decide_executions(
            run.executions(),
            tolerance=case.tolerance,
            alpha=protocol.alpha / max(1, family_size),
            looks=protocol.execution_looks(),
        )
        decided = final.verdict != "INCONCLUSIVE" or passes < protocol.max_executions
        reason = "decided" if decided else "max_executions"
    else:
        reason = "time_budget"
    return case.model_copy(update={"raw": run.model_copy(update={"stop_reason": reason})})
