"""The decision over executions, on simulated executions whose true variance components are known.

A simulated execution is a pair of fresh processes: each process adds its own offset to every
block it times (where its buffers landed, which config its autotuner kept), the worker slot adds
its bias, and each round adds noise. Identical code must never read SLOWER or FASTER, however
large the offsets; a real slowdown must still be found when the offsets are small.
"""

from __future__ import annotations

import math
import random

import pytest

from checks.sweep.executions import (
    ONE_PASS_PRIOR_SD,
    Execution,
    components,
    decide_executions,
    f_sf,
    hodges_lehmann,
)

LOOKS = (2, 3, 4)


def _execution(
    rng: random.Random,
    execution: int,
    arm: int,
    *,
    log_ratio: float,
    process_sd: float,
    round_sd: float,
    rounds: int = 12,
    slot_bias: float = 0.0,
) -> Execution:
    offset = rng.gauss(0.0, process_sd) - rng.gauss(0.0, process_sd)  # head's process, base's
    bias = slot_bias if arm == 0 else -slot_bias  # arm 0: head in slot 2
    logs = tuple(log_ratio + offset + bias + rng.gauss(0.0, round_sd) for _ in range(rounds))
    return Execution(execution=execution, arm=arm, logs=logs)


def _case(
    rng: random.Random,
    *,
    ratio: float = 1.0,
    process_sd: float = 0.0,
    round_sd: float = 0.004,
    tolerance: float = 0.01,
    alpha: float = 0.01 / 8,
    slot_bias: float = 0.0,
    looks: tuple[int, ...] = LOOKS,
    prior_sd: float = 0.0,
):
    """The live sequential test: a pass (two arms) at a time until it decides."""
    done: list[Execution] = []
    for execution in range(looks[-1]):
        for arm in (0, 1):
            done.append(
                _execution(
                    rng,
                    execution,
                    arm,
                    log_ratio=math.log(ratio),
                    process_sd=process_sd,
                    round_sd=round_sd,
                    slot_bias=slot_bias,
                )
            )
        d = decide_executions(
            done, tolerance=tolerance, alpha=alpha, looks=looks, prior_sd=prior_sd
        )
        if d.final:
            return d
    raise AssertionError("the last look must decide")


@pytest.mark.parametrize("process_sd", [0.0, 0.003, 0.02, 0.08])
@pytest.mark.parametrize("tolerance", [0.01, 0.03])
def test_identical_code_never_reads_a_difference(process_sd: float, tolerance: float) -> None:
    rng = random.Random(int(process_sd * 1000) + int(tolerance * 100))
    verdicts = [_case(rng, process_sd=process_sd, tolerance=tolerance).verdict for _ in range(150)]
    assert verdicts.count("SLOWER") + verdicts.count("FASTER") <= 1  # at most ~1%
    if process_sd == 0.0:
        assert verdicts.count("SAME") == len(verdicts)


def test_large_process_effects_read_inconclusive_with_their_spread() -> None:
    """Offsets of 5% per process (a kernel whose atomics land differently in each): the
    executions are the unit, and their spread is measured, not hidden."""
    rng = random.Random(3)
    d = _case(rng, process_sd=0.05)
    assert d.verdict == "INCONCLUSIVE" and d.level == "executions"
    assert d.executions == 2 * LOOKS[-1]
    assert 0.03 < d.between_spread < 0.12  # one SD of head minus base: about sqrt(2) x 5%
    assert d.p_between < 0.01


def test_quiet_identical_code_is_same_at_the_first_look() -> None:
    """No process effect: the executions agree, so their rounds are mostly pooled (the between
    test rejects agreement at its lenient level about one time in ten, and four executions'
    spread, bounded at 90% with 2 degrees of freedom, is not always under half the band), and
    two passes decide. SAME is an equivalence test at 95%, so even the executions' own few
    degrees of freedom settle it here."""
    rng = random.Random(4)
    ds = [_case(rng, process_sd=0.0, round_sd=0.004) for _ in range(60)]
    assert all(d.verdict == "SAME" for d in ds)
    assert all(d.looks_taken == 1 and d.executions == 4 for d in ds)
    assert sum(d.level == "rounds" for d in ds) >= 40


@pytest.mark.parametrize("ratio", [1.05, 1.10])
def test_a_real_slowdown_is_found_beside_small_process_effects(ratio: float) -> None:
    rng = random.Random(int(ratio * 100))
    verdicts = [
        _case(rng, ratio=ratio, process_sd=0.003, tolerance=0.02).verdict for _ in range(40)
    ]
    assert verdicts.count("SLOWER") >= 38


def test_a_slot_bias_cancels_between_the_arms() -> None:
    """Each arm carries its slot's bias (1.5% here) in every execution: a fixed effect, not a
    difference between executions, and not a difference between base and head."""
    rng = random.Random(5)
    d = _case(rng, slot_bias=0.015, tolerance=0.01)
    assert d.verdict == "SAME" and d.level == "rounds"
    assert abs(d.ratio - 1.0) < 0.003


def test_executions_that_lean_alike_on_noisy_rounds_are_not_pooled_into_a_claim() -> None:
    """A host-bound fused cross entropy on the H200, identical code: four executions read
    0.89, 0.94, 0.93, 0.94 over 100 rounds each with 25% round noise. The F test cannot tell
    that from noise; pooled, the rounds made FASTER [0.893, 0.960]. The executions' spread,
    bounded at 90%, is far over half the 3% band: the executions are the unit, INCONCLUSIVE."""
    rng = random.Random(7)
    done = [
        Execution(
            execution=i // 2,
            arm=i % 2,
            logs=tuple(math.log(v) + rng.gauss(0.0, 0.25) for _ in range(100)),
        )
        for i, v in enumerate((0.890, 0.942, 0.930, 0.943))
    ]
    d = decide_executions(done, tolerance=0.03, alpha=0.01 / 31, looks=LOOKS, complete=True)
    assert d.level == "executions" and d.verdict == "INCONCLUSIVE", (d.level, d.verdict)
    pooled = components(done)  # without the band: the F test alone would pool them
    assert pooled.level == "rounds"


def test_fewer_passes_than_the_first_look_never_decide() -> None:
    rng = random.Random(6)
    one_pass = [_execution(rng, 0, a, log_ratio=0.3, process_sd=0, round_sd=0.001) for a in (0, 1)]
    d = decide_executions(one_pass, tolerance=0.01, alpha=0.01, looks=LOOKS)
    assert not d.final and d.verdict == "INCONCLUSIVE"
    d = decide_executions(one_pass, tolerance=0.01, alpha=0.01, looks=LOOKS, complete=True)
    assert d.final and d.verdict == "INCONCLUSIVE"


def test_hodges_lehmann_holds_against_a_stray_round_and_agrees_with_the_median() -> None:
    rounds = [0.01, 0.011, 0.009, 0.0105, 0.0095, 0.0102, 0.0098, 0.5]  # one round 65% slower
    hl = hodges_lehmann(rounds)
    assert abs(hl - 0.01) < 0.001
    assert sum(rounds) / len(rounds) > 0.07  # the mean is dragged seven times away
    e = Execution(execution=0, arm=0, logs=tuple(rounds))
    c = components([e, Execution(execution=1, arm=0, logs=tuple(rounds[:-1]))])
    assert abs(c.estimate_log - 0.01) < 0.001


def test_the_f_distribution_tail() -> None:
    assert abs(f_sf(4.10, 2, 10) - 0.05) < 0.001  # the 5% point of F(2, 10)
    assert abs(f_sf(1.0, 10, 10) - 0.5) < 1e-9
    assert f_sf(0.0, 3, 30) == 1.0


def test_same_is_an_equivalence_test_at_95_percent_and_claims_stay_strict() -> None:
    """Just outside the tolerance (1.5% slower against 1%), SAME is said in at most about 5% of
    cases; a difference is claimed at the strict level, with the wider interval reported."""
    rng = random.Random(7)
    ds = [_case(rng, ratio=1.015, round_sd=0.01, tolerance=0.01) for _ in range(200)]
    assert sum(d.verdict == "SAME" for d in ds) <= 10
    slower = [d for d in ds if d.verdict == "SLOWER"]
    assert slower and all(d.confidence > 0.999 and d.ratio_low > 1.01 for d in slower)
    same = _case(random.Random(8), ratio=1.0, round_sd=0.004, tolerance=0.01)
    assert same.verdict == "SAME" and 0.95 <= same.confidence < 0.99


# ------------------------------------------------------------------------- one pass (two arms)

ONE_PASS_LOOKS = (1, 2, 3, 4)


def _one_pass(rng: random.Random, *, ratio: float, process_sd: float, tolerance: float):
    """A case the first pass may decide (``checks.sweep.models.one_pass_reason``): its two
    executions, each arm one, looked at with the prior between-execution SD, then a pass at a
    time as before."""
    return _case(
        rng,
        ratio=ratio,
        process_sd=process_sd,
        tolerance=tolerance,
        looks=ONE_PASS_LOOKS,
        prior_sd=ONE_PASS_PRIOR_SD,
    )


@pytest.mark.parametrize("tolerance", [0.01, 0.03])
def test_a_one_pass_case_of_identical_code_is_same_after_its_first_pass(tolerance: float) -> None:
    """Process effects as large as such kernels showed (the prior, 0.3%): SAME at the first
    pass, never a difference, whichever the tolerance."""
    rng = random.Random(11)
    ds = [
        _one_pass(rng, ratio=1.0, process_sd=ONE_PASS_PRIOR_SD / math.sqrt(2), tolerance=tolerance)
        for _ in range(200)
    ]
    assert not any(d.verdict in ("SLOWER", "FASTER") for d in ds)
    assert sum(d.verdict == "SAME" and d.executions == 2 for d in ds) >= 190


@pytest.mark.parametrize("ratio", [1.05, 1.10])
def test_a_one_pass_case_finds_a_real_slowdown_in_its_first_pass(ratio: float) -> None:
    rng = random.Random(int(ratio * 1000))
    ds = [_one_pass(rng, ratio=ratio, process_sd=0.002, tolerance=0.02) for _ in range(40)]
    assert sum(d.verdict == "SLOWER" and d.executions == 2 for d in ds) >= 38


def test_the_prior_widens_a_one_pass_interval_by_the_spread_it_carries() -> None:
    """Two executions, one per arm: no between-execution spread can be estimated from them, so
    the interval is the rounds' own, widened by the prior's share (half its variance: each arm's
    value is one execution)."""
    rng = random.Random(3)
    one = [_execution(rng, 0, a, log_ratio=0.0, process_sd=0.0, round_sd=0.004) for a in (0, 1)]
    bare = components(one)
    carried = components(one, prior_sd=ONE_PASS_PRIOR_SD)
    assert bare.level == carried.level == "rounds"
    assert carried.se_log == pytest.approx(
        math.sqrt(bare.se_log**2 + ONE_PASS_PRIOR_SD**2 / 2), rel=1e-9
    )
    # with more executions than arms the prior is not needed: the spread is estimated
    two = one + [
        _execution(rng, 1, a, log_ratio=0.0, process_sd=0.0, round_sd=0.004) for a in (0, 1)
    ]
    assert components(two, prior_sd=ONE_PASS_PRIOR_SD) == components(two)
