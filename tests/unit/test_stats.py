"""The statistics on synthetic streams whose answers are known."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from checks.sweep.stats import (
    band_log,
    betainc,
    bootstrap_geomean,
    evaluate_look,
    holm,
    look_schedule,
    median,
    sequential_decision,
    stdev,
    t_cdf,
    t_ppf,
    weighted_geomean,
)

LOOKS = look_schedule(8, 200, 1.5)


@pytest.mark.parametrize(
    ("p", "df", "want"),
    [
        (0.975, 10, 2.228138852),
        (0.995, 5, 4.032142984),
        (0.999, 30, 3.385184190),
        (0.95, 1, 6.313751515),
        (0.9, 2, 1.885618083),
        (0.99999, 7, 10.10268),  # far tail, few degrees of freedom
    ],
)
def test_t_quantiles_match_tables(p: float, df: int, want: float) -> None:
    assert t_ppf(p, df) == pytest.approx(want, rel=1e-5)
    assert t_cdf(want, df) == pytest.approx(p, abs=1e-7)
    assert t_ppf(1 - p, df) == pytest.approx(-want, rel=1e-5)


def test_t_tends_to_normal_and_beta_symmetry() -> None:
    assert t_ppf(0.975, 100_000) == pytest.approx(1.959964, rel=1e-4)
    assert betainc(2.0, 3.0, 0.4) == pytest.approx(1 - betainc(3.0, 2.0, 0.6), abs=1e-12)
    assert betainc(1.0, 1.0, 0.3) == pytest.approx(0.3)


def test_look_schedule_is_geometric_and_ends_at_max() -> None:
    assert LOOKS[0] == 8 and LOOKS[-1] == 200
    assert all(b > a for a, b in itertools.pairwise(LOOKS))
    assert look_schedule(5, 5) == (5,)
    with pytest.raises(ValueError):
        look_schedule(2, 10)


def test_summaries() -> None:
    assert median([3, 1, 2]) == 2 and median([4, 1, 3, 2]) == 2.5
    assert stdev([1.0]) == 0.0
    assert stdev([1.0, 2.0, 3.0, 4.0]) == pytest.approx(1.2909944)


def _stream(rng: random.Random, ratio: float, sigma: float, n: int = 200) -> list[float]:
    mu = math.log(ratio)
    return [rng.gauss(mu, sigma) for _ in range(n)]


@pytest.mark.parametrize(
    ("ratio", "want"),
    [(1.0, "SAME"), (1.10, "SLOWER"), (0.90, "FASTER"), (1.01, "SAME"), (0.985, "SAME")],
)
def test_clear_cases_are_decided_early(ratio: float, want: str) -> None:
    rng = random.Random(1)
    d = sequential_decision(_stream(rng, ratio, 0.005), tolerance=0.03, alpha=0.01, looks=LOOKS)
    assert d.final and d.verdict == want
    assert d.n <= 18  # stops at an early look, not at 200 rounds
    assert d.ratio_low <= ratio <= d.ratio_high


def test_exactly_at_the_boundary_runs_out_inconclusive() -> None:
    rng = random.Random(2)
    d = sequential_decision(_stream(rng, 1.03, 0.01), tolerance=0.03, alpha=0.01, looks=LOOKS)
    assert d.final and d.n == 200 and d.verdict == "INCONCLUSIVE"


def test_false_alarms_at_the_tolerance_boundary_stay_under_alpha() -> None:
    """True ratio exactly 1 + tolerance: claiming SLOWER is a false alarm. Over many streams the
    rate must stay under alpha although the test looks up to K times."""
    rng = random.Random(3)
    alpha, trials = 0.05, 1500
    alarms = sum(
        sequential_decision(
            _stream(rng, 1.03, 0.02), tolerance=0.03, alpha=alpha, looks=LOOKS
        ).verdict
        == "SLOWER"
        for _ in range(trials)
    )
    assert alarms / trials <= alpha


def test_detects_a_slowdown_beyond_tolerance_and_says_same_for_equal() -> None:
    rng = random.Random(4)
    slow = [
        sequential_decision(
            _stream(rng, 1.045, 0.01), tolerance=0.015, alpha=0.01, looks=LOOKS
        ).verdict
        for _ in range(200)
    ]
    same = [
        sequential_decision(
            _stream(rng, 1.0, 0.01), tolerance=0.015, alpha=0.01, looks=LOOKS
        ).verdict
        for _ in range(200)
    ]
    assert slow.count("SLOWER") >= 198
    assert same.count("SLOWER") == 0 and same.count("SAME") >= 198


def test_incomplete_stream_is_not_final_until_complete() -> None:
    rng = random.Random(5)
    logs = _stream(rng, 1.03, 0.02, n=10)  # undecidable at the first look
    d = sequential_decision(logs, tolerance=0.03, alpha=0.01, looks=LOOKS)
    assert not d.final and d.verdict == "INCONCLUSIVE"
    done = sequential_decision(logs, tolerance=0.03, alpha=0.01, looks=LOOKS, complete=True)
    assert done.final and done.n == 10 and done.looks_taken == 2


def test_sequential_p_value_agrees_with_the_interval() -> None:
    rng = random.Random(6)
    for ratio in (1.0, 1.02, 1.06, 1.2):
        d = sequential_decision(_stream(rng, ratio, 0.01), tolerance=0.03, alpha=0.01, looks=LOOKS)
        assert (d.verdict == "SLOWER") == (d.p_slower <= 0.01 + 1e-12)


def test_zero_variance_stream() -> None:
    look = evaluate_look([0.1] * 8, band_log(0.03), 0.001)
    assert look.verdict == "SLOWER" and look.ci_low_log == look.ci_high_log == 0.1
    assert evaluate_look([0.0] * 8, band_log(0.03), 0.001).verdict == "SAME"


def test_holm_matches_hand_computation() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted: 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> monotone 0.06
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([]) == []
    assert holm([0.9, 0.8]) == [1.0, 1.0]  # capped at 1, never below an earlier step


def test_bootstrap_geomean_known_answers() -> None:
    flat = [[math.log(1.1)] * 20, [math.log(0.9)] * 20]
    iv = bootstrap_geomean(flat, [1.0, 1.0])
    assert iv.estimate == pytest.approx(math.sqrt(1.1 * 0.9))
    assert iv.low == pytest.approx(iv.estimate) and iv.high == pytest.approx(iv.estimate)
    weighted = bootstrap_geomean(flat, [3.0, 1.0])
    assert weighted.estimate == pytest.approx(math.exp((3 * math.log(1.1) + math.log(0.9)) / 4))
    assert weighted_geomean(flat, [0.0, 1.0]) == pytest.approx(0.9)


def test_bootstrap_interval_covers_the_truth() -> None:
    rng = random.Random(7)
    groups = [_stream(rng, 1.05, 0.02, n=40) for _ in range(5)]
    iv = bootstrap_geomean(groups, seed=3)
    assert iv.low < 1.05 < iv.high
    assert iv.high - iv.low < 0.01
    with pytest.raises(ValueError):
        bootstrap_geomean([[]])
