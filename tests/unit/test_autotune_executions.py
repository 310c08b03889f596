"""An autotuner that picks differently in each process, end to end through the pure pipeline:
raw rounds of several executions -> the sweep's verdict -> evidence -> the report's check.

Made from a failure seen on a real autotuned kernel with identical code on both sides: the
processes' picks differed, the paired estimate and the ratio of the median times parted, and the
report refused the measure job's own results as "numbers that contradict each other", so that
pull request got no review.
"""

from __future__ import annotations

import math
import random

from bot.contracts.evidence import Evidence
from bot.contracts.results import ResultsFile
from bot.jobs.report import RATIO_SLACK, _inconsistent
from checks.sweep.evidence import to_evidence
from checks.sweep.models import ShapeResult, SweepResult
from checks.sweep.protocol import Block, CaseRun, ExecutionPicks, ProtocolConfig, Round
from checks.sweep.summary import finalize

FAST, SLOW = "kernel: BLOCK=256, num_warps=4", "kernel: BLOCK=128, num_warps=8"
US = {FAST: 30.0, SLOW: 100.0}


def _rounds(picks: list[tuple[str, str]], rng: random.Random) -> list[Round]:
    out = []
    for execution, (base_pick, head_pick) in enumerate(picks):
        for i in range(10):
            for arm in (0, 1):
                b = US[base_pick] * math.exp(rng.gauss(0, 0.003))
                h = US[head_pick] * math.exp(rng.gauss(0, 0.003))
                out.append(
                    Round(
                        index=len(out),
                        head_first=bool(i % 2),
                        base=Block(value_us=b, calls=10, wall_ms=1.0),
                        head=Block(value_us=h, calls=10, wall_ms=1.0),
                        arm=arm,
                        execution=execution,
                    )
                )
    return out


def _evidence(protocol: ProtocolConfig, case: ShapeResult) -> Evidence:
    result = SweepResult(
        vendor="nvidia",
        timing="cuda-events",
        base_rev="a" * 40,
        head_rev="b" * 40,
        protocol=protocol,
        family_size=1,
        cases=(case,),
    )
    return Evidence(sweeps=(to_evidence(result),))


def _refused(ev: Evidence) -> str | None:
    """Why the report would refuse a results file holding ``ev`` (None: it takes it)."""
    return _inconsistent(
        ResultsFile(head_sha="b" * 40, base_sha="a" * 40, vendor="nvidia", evidence=ev)
    )


def test_picks_that_differ_by_process_read_inconclusive_and_the_report_takes_them() -> None:
    protocol = ProtocolConfig(crossover=True)
    picks = [(SLOW, FAST), (SLOW, SLOW), (SLOW, SLOW), (SLOW, SLOW)]  # head lucky once
    run = CaseRun(
        rounds=tuple(_rounds(picks, random.Random(1))),
        arms=2,
        picks=tuple(
            ExecutionPicks(execution=e, base=(b,), head=(h,)) for e, (b, h) in enumerate(picks)
        ),
        pass_stops=("decided",) * 4,
        stop_reason="max_executions",
    )
    case = ShapeResult(
        kernel="kernel", shape=(4096,), dtype="float16", tolerance=0.03, status="ok", raw=run
    )
    (done,), _ = finalize([case], protocol, 1)
    assert done.verdict == "INCONCLUSIVE" and done.decided_over == "executions"
    assert done.executions == 8
    times = done.head_median_us / done.base_median_us
    assert done.ratio is not None
    # the old check (paired ratio against the times, within 1.25 either way) refused this
    assert not 1 / RATIO_SLACK <= done.ratio / times <= RATIO_SLACK
    assert "head picked" in done.explanation and f"{SLOW} in 3 of 4" in done.explanation
    assert "slower than" in done.explanation and "likely cause: the autotuner" in done.explanation
    ev = _evidence(protocol, done)
    assert _refused(ev) is None
    detail = ev.sweeps[0].shapes[0].detail
    assert "picks differently from one process to the next" in detail


def test_a_forged_ratio_far_from_its_times_is_still_refused() -> None:
    protocol = ProtocolConfig(crossover=True)
    picks = [(SLOW, SLOW)] * 2
    run = CaseRun(rounds=tuple(_rounds(picks, random.Random(2))), arms=2)
    case = ShapeResult(
        kernel="kernel", shape=(4096,), dtype="float16", tolerance=0.03, status="ok", raw=run
    )
    (done,), _ = finalize([case], protocol, 1)
    assert done.verdict == "SAME"
    forged = done.model_copy(update={"head_median_us": 2 * (done.head_median_us or 0)})
    assert "the times give" in (_refused(_evidence(protocol, forged)) or "")
