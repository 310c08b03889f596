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

from bot.contracts.evidence import Clause, Evidence, said
from bot.contracts.results import ResultsFile
from bot.jobs.report import RATIO_SLACK, _inconsistent
from bot.review.explain import inconclusive_reason
from checks.sweep.evidence import to_evidence
from checks.sweep.models import CaseLaunch, CaseLaunches, ShapeResult, SweepResult
from checks.sweep.protocol import Block, CaseRun, ExecutionPicks, ProtocolConfig, Round
from checks.sweep.summary import finalize, needs_another

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


def _head_lucky_once() -> ShapeResult:
    """A case whose head's autotuner picked the fast config in one process of four."""
    picks = [(SLOW, FAST), (SLOW, SLOW), (SLOW, SLOW), (SLOW, SLOW)]
    run = CaseRun(
        rounds=tuple(_rounds(picks, random.Random(1))),
        arms=2,
        picks=tuple(
            ExecutionPicks(execution=e, base=(b,), head=(h,)) for e, (b, h) in enumerate(picks)
        ),
        pass_stops=("decided",) * 4,
        stop_reason="max_executions",
    )
    return ShapeResult(
        kernel="kernel", shape=(4096,), dtype="float16", tolerance=0.03, status="ok", raw=run
    )


def test_picks_that_differ_by_process_read_inconclusive_and_the_report_takes_them() -> None:
    protocol = ProtocolConfig(crossover=True)
    (done,), _ = finalize([_head_lucky_once()], protocol, 1)
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


def test_the_inconclusive_line_reads_the_sweeps_clauses_by_what_each_is_about() -> None:
    """The sweep says why the case went undecided clause by clause, each with what it is about,
    and the evidence line carries them: the review leaves out the likely cause where it is the
    autotuner's picks, already named, by those kinds, so the sweep's words may change."""
    protocol = ProtocolConfig(crossover=True)
    (done,), _ = finalize([_head_lucky_once()], protocol, 1)
    kinds = ["picks_vary", "spread", "cause_picks", "undecided"]
    assert [c.kind for c in done.explained] == kinds
    assert said(done.explained) == done.explanation
    (line,) = _evidence(protocol, done).sweeps[0].shapes
    assert (line.stop_reason, line.rounds) == ("max_executions", done.rounds)
    # the detail's room holds the stop and the picks whole; the spread is cut short, a note
    assert [c.kind for c in line.clauses] == ["stop", "picks_vary", "note"]
    assert said(line.clauses) == line.detail and line.detail.endswith(" …")
    assert line.varied_between_processes  # the spread says the stop: left out
    assert inconclusive_reason(line) == said(line.clauses[1:])
    # the same facts in other words: the picks, the spread and its cause said otherwise
    words = {
        "picks_vary": "autotuning chose another config in another process",
        "spread": "the processes read 0.3 to 1.0",
        "cause_picks": "blame the autotuning",
        "undecided": "too wide for 3%",
    }
    reworded = done.model_copy(
        update={"explained": tuple(Clause(kind=c.kind, text=words[c.kind]) for c in done.explained)}
    )
    (line,) = _evidence(protocol, reworded).sweeps[0].shapes
    assert [c.kind for c in line.clauses] == ["stop", *kinds]
    assert inconclusive_reason(line) == (
        "autotuning chose another config in another process; the processes read 0.3 to 1.0; "
        "too wide for 3%"
    )


def test_an_older_sweep_case_has_its_explanations_clauses_read_from_its_words() -> None:
    """A sweep file written before the explanation's clauses were kept (the key absent) has them
    read from its words at load, and its evidence line says the same as the review said then."""
    protocol = ProtocolConfig(crossover=True)
    (done,), _ = finalize([_head_lucky_once()], protocol, 1)
    raw = done.model_dump(mode="json")
    del raw["explained"]
    older = ShapeResult.model_validate(raw)
    assert said(older.explained) == done.explanation
    assert [c.kind for c in older.explained] == ["picks_vary", "note", "cause_picks", "note"]
    lines = [_evidence(protocol, c).sweeps[0].shapes[0] for c in (done, older)]
    assert lines[0].detail == lines[1].detail
    assert inconclusive_reason(lines[0]) == inconclusive_reason(lines[1])


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


def _case(picks: list[tuple[str, str]], *, same_offer: bool, seed: int) -> ShapeResult:
    run = CaseRun(
        rounds=tuple(_rounds(picks, random.Random(seed))),
        arms=2,
        picks=tuple(
            ExecutionPicks(execution=e, base=(b,), head=(h,), same_offer=same_offer)
            for e, (b, h) in enumerate(picks)
        ),
        pass_stops=("decided",) * len(picks),
        stop_reason="decided",
    )
    return ShapeResult(
        kernel="kernel", shape=(4096,), dtype="float16", tolerance=0.03, status="ok", raw=run
    )


def test_identical_code_whose_picks_vary_is_decided_over_the_passes_that_picked_alike() -> None:
    """Same config lists, picks that vary: 1.0 at a matched pass, 0.3 or 3.3 at the others.
    The passes where both sides picked the same config compare the same kernel: SAME."""
    protocol = ProtocolConfig(crossover=True)
    picks = [(SLOW, FAST), (FAST, FAST), (SLOW, SLOW), (FAST, SLOW)]
    (done,), _ = finalize([_case(picks, same_offer=True, seed=3)], protocol, 1)
    assert done.verdict == "SAME", (done.ratio, done.explanation)
    assert done.executions == 4  # the two matched passes, both arms
    assert "decided over the 2 of 4 passes" in done.explanation
    assert "picks differently from one process to the next" in done.explanation
    # the same rounds without knowing the lists agree: the mixture, which cannot decide
    (mixed,), _ = finalize([_case(picks, same_offer=False, seed=3)], protocol, 1)
    assert mixed.verdict == "INCONCLUSIVE" and mixed.executions == 8


def test_sides_that_picked_apart_claim_a_difference_only_after_the_last_pass() -> None:
    """Base picked the slow config in both processes, head the fast one, from the same lists.
    Two passes cannot tell an autotuner's luck from a change: INCONCLUSIVE, one more pass asked
    for. Four passes that all read so make the claim, with the picks said."""
    protocol = ProtocolConfig(crossover=True)
    two = _case([(SLOW, FAST)] * 2, same_offer=True, seed=4)
    assert needs_another(two, protocol, 1)
    (early,), _ = finalize([two], protocol, 1)
    assert early.verdict == "INCONCLUSIVE", (early.ratio, early.ci_low, early.ci_high)
    assert "base's and head's autotuners picked different configs" in early.explanation
    four = _case([(SLOW, FAST)] * 4, same_offer=True, seed=4)
    assert not needs_another(four, protocol, 1)
    (late,), _ = finalize([four], protocol, 1)
    assert late.verdict == "FASTER", (late.ratio, late.explanation)
    assert f"base picked {SLOW} in 4 of 4" in late.explanation


def test_executions_apart_on_a_host_bound_op_name_the_host_as_the_likely_cause() -> None:
    """A fused cross entropy on the H200: 1830 us of host time a call against 430-750 us of GPU
    time, timed eagerly; its executions read 0.78-1.41 apart. The explanation names the host's
    pace (an op that waits for the GPU inside a call), not buffer placement."""
    from checks.sweep.models import SideInfo

    rng = random.Random(5)
    rounds, levels = [], [1.4, 1.0, 0.8, 1.0]
    for execution, level in enumerate(levels):
        for i in range(10):
            for arm in (0, 1):
                b = 800.0 * math.exp(rng.gauss(0, 0.01))
                h = 800.0 * level * math.exp(rng.gauss(0, 0.01))
                rounds.append(
                    Round(
                        index=len(rounds),
                        head_first=bool(i % 2),
                        base=Block(value_us=b, calls=1, wall_ms=1.0),
                        head=Block(value_us=h, calls=1, wall_ms=1.0),
                        arm=arm,
                        execution=execution // 2,
                    )
                )

    def side(host_us: float, est_us: float) -> SideInfo:
        return SideInfo(entry="e", est_us=est_us, host_us=host_us, bytes_moved=1, flops=0,
                        copies=8, footprint_bytes=1, prepare_s=0.1)  # fmt: skip

    run = CaseRun(rounds=tuple(rounds), arms=2, pass_stops=("decided",) * 2)
    common = {"kernel": "ce", "shape": (128,), "dtype": "float16", "tolerance": 0.03}
    host_bound = ShapeResult(**common, status="ok", raw=run, mode="eager",
                             base=side(1830.0, 430.0), head=side(1790.0, 750.0))  # fmt: skip
    (done,), _ = finalize([host_bound], ProtocolConfig(crossover=True), 1)
    assert done.verdict == "INCONCLUSIVE"
    assert (
        "likely cause: the host's pace: it takes 1790-1830 us to issue a call" in done.explanation
    )
    placed = host_bound.model_copy(update={"base": side(40.0, 430.0), "head": side(40.0, 750.0)})
    (other,), _ = finalize([placed], ProtocolConfig(crossover=True), 1)
    assert "likely cause: where each process's buffers" in other.explanation
    assert "(atomics, split reductions, placement)" in other.explanation  # no record: a guess

    # the launch records of the first execution name what is placement-bound in the call
    def record(*kernels: tuple[str, int, bool | None], allocations: int | None) -> CaseLaunches:
        return CaseLaunches(
            kernels=tuple(
                CaseLaunch(name=n, triton=True, count=c, atomics=a) for n, c, a in kernels
            ),
            allocations=allocations,
        )

    split = placed.model_copy(
        update={
            "base_launches": record(("_partial", 1, False), ("_final", 1, False), allocations=1),
            "head_launches": record(("_partial", 1, True), ("_final", 1, False), allocations=1),
        }
    )
    (said_what,), _ = finalize([split], ProtocolConfig(crossover=True), 1)
    assert (
        "likely cause: where each process's buffers and workspaces land: atomics in _partial; "
        "2 kernel launches in each call; 1 buffer each call allocates besides its outputs"
    ) in said_what.explanation
    one = placed.model_copy(
        update={"base_launches": record(("_k", 1, False), allocations=0), "head_launches": None}
    )
    (plain,), _ = finalize([one], ProtocolConfig(crossover=True), 1)
    assert (
        "(the launch record shows one kernel, no atomics and no buffer allocated besides the "
        "outputs)"
    ) in plain.explanation


def test_passes_where_head_ran_bases_pick_decide_and_are_said_as_such() -> None:
    """From the second pass, head runs what base's autotuner picked (same kernel source, same
    configs): base's own picks still vary from process to process, head's count only its first,
    unpinned pass, and the matched passes decide."""
    protocol = ProtocolConfig(crossover=True)
    picks = [(SLOW, FAST), (FAST, FAST), (SLOW, SLOW), (FAST, FAST)]
    case = _case(picks, same_offer=True, seed=5)
    assert case.raw is not None
    run = case.raw.model_copy(
        update={"picks": tuple(p.model_copy(update={"head_pinned": p.execution > 0})
                               for p in case.raw.picks)}
    )  # fmt: skip
    assert run.pick_counts("head") == {FAST: 1}  # its own choice, once
    assert run.pick_counts("base") == {SLOW: 2, FAST: 2}
    (done,), _ = finalize([case.model_copy(update={"raw": run})], protocol, 1)
    assert done.verdict == "SAME", (done.ratio, done.explanation)
    assert done.executions >= 4  # pinned passes only, both arms (the first look may decide)
    assert "in 3 of 4 passes head ran the config base's autotuner picked" in done.explanation
    assert "decided over the 3 of 4 passes" in done.explanation
