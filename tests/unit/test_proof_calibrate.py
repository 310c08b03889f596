"""The protocol proof's slowdown calibration (bench/proof_calibrate.py): the knob search on fake
GPUs whose B/A is a known function of the knob, with and without set-up noise."""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Callable

import pytest

from tests.paths import ROOT

sys.path.insert(0, str(ROOT / "bench"))

from proof_calibrate import Probe, fit_line, next_knob, root_estimate, search_knob

TARGET = 1.03


def gpu(
    ratio_at: Callable[[int], float],
    *,
    setup_sd: float = 0.0,
    round_se: float = 0.0005,
    seed: int = 0,
) -> tuple[Callable[[int], tuple[float, float]], list[int]]:
    """A fake GPU: each probe is a fresh set-up whose own offset (sd ``setup_sd`` in log) adds to
    the true log B/A, measured over rounds to a standard error of ``round_se``."""
    rng = random.Random(seed)
    asked: list[int] = []

    def measure(knob: int) -> tuple[float, float]:
        asked.append(knob)
        noise = rng.gauss(0.0, setup_sd) + rng.gauss(0.0, round_se)
        return math.log(ratio_at(knob)) + noise, round_se

    return measure, asked


def elements(n_a: int, overhead_us: float, us_per_elem: float, unit: int = 16):
    """B/A of a memory-bound kernel: a fixed cost plus a cost per element."""

    def ratio(knob: int) -> float:
        t_a = overhead_us + us_per_elem * n_a
        return (t_a + us_per_elem * knob * unit) / t_a

    return ratio


def test_fit_line_recovers_a_known_line_and_its_noise_floor() -> None:
    probes = [Probe(knob=k, log_ratio=0.01 + 0.002 * k, se_log=0.0003) for k in (2, 5, 9, 14)]
    line = fit_line(probes)
    assert line is not None
    assert line.intercept == pytest.approx(0.01)
    assert line.slope == pytest.approx(0.002)
    assert line.sd_log == pytest.approx(0.0003)  # no residuals: the probes' own noise remains
    assert line.se_at(line.mean_knob) == pytest.approx(0.0003 / 2)
    assert fit_line(probes[:1]) is None
    assert fit_line([probes[0], probes[0]]) is None  # one knob twice gives no slope


def test_root_estimate_goes_to_the_root_but_at_most_doubles() -> None:
    t = math.log(1.03)
    one = [Probe(knob=100, log_ratio=0.01, se_log=0.0)]
    # proportional until two knobs are known: 3% needs about 2.96x the knob, capped at 2x
    assert root_estimate(one, t, 1, 10_000) == 200
    two = [*one, Probe(knob=200, log_ratio=0.02, se_log=0.0)]
    assert root_estimate(two, t, 1, 10_000) == pytest.approx(t / 0.0001)
    assert root_estimate(two, t, 1, 250) == 250
    # a flat or falling line (noise) falls back to the proportional guess
    flat = [
        Probe(knob=100, log_ratio=0.02, se_log=0.0),
        Probe(knob=150, log_ratio=0.019, se_log=0.0),
    ]
    assert root_estimate(flat, t, 1, 10_000) == pytest.approx(t / 0.0002)


def test_next_knob_alternates_around_the_root() -> None:
    t = math.log(1.03)
    line = [Probe(knob=k, log_ratio=0.0001 * k, se_log=0.0) for k in (200, 300)]  # root ~296
    root = t / 0.0001
    assert next_knob(line[:1], t, 1, 10_000) == round(root * 1.3)  # the only probe is below
    # one probe below the root and one above: even count, alternate starting below
    assert next_knob(line, t, 1, 10_000) == round(root * 0.7)
    more = [*line, Probe(knob=207, log_ratio=0.0207, se_log=0.0)]
    assert next_knob(more, t, 1, 10_000) == round(root * 1.3)  # two below, one above
    assert next_knob(more, t, 1, 300) == 300  # never outside the range


def test_exact_linear_gpu_is_hit_within_one_step_of_the_knob() -> None:
    # 5 us-like: 1.5M elements, a fixed cost of 12% of the time, so 3% time needs ~3.4% elements
    n_a = 1_530_736
    ratio = elements(n_a, overhead_us=0.6, us_per_elem=4.4 / n_a)
    measure, asked = gpu(ratio, round_se=0.0)
    cal = search_knob(measure, guess=round(0.03 * n_a / 16), lo=1, hi=n_a // 16)
    assert cal.stop == "converged"
    assert cal.within
    assert abs(ratio(cal.knob) - TARGET) < 1e-4
    assert len(asked) == 5  # converged at the fewest probes allowed
    # log B/A is slightly concave in the knob here; the chord over +-30% is still this close
    assert cal.predicted_ratio == pytest.approx(ratio(cal.knob), abs=1e-4)


def test_a_wrong_first_guess_is_corrected() -> None:
    """The old proof guessed B's size from a slope and landed at 4.8% and 18%; a guess 3x too
    large or too small must still end at 3%."""
    n_a = 57_438_192
    ratio = elements(n_a, overhead_us=2.0, us_per_elem=127.0 / n_a)
    for guess in (3 * round(0.03 * n_a / 16), round(0.01 * n_a / 16)):
        measure, asked = gpu(ratio)
        cal = search_knob(measure, guess=guess, lo=1, hi=n_a // 8)
        assert cal.within, (guess, cal)
        assert abs(ratio(cal.knob) - TARGET) < 0.001
        assert asked[0] == guess


def test_process_bias_at_zero_extra_work_is_absorbed() -> None:
    """Two processes running the same kernel can differ by ~1% (seen at 5 us on the H200): the
    line's intercept takes it, so B/A still lands on 3% rather than 3% plus the bias."""
    n_a = 1_530_736

    def ratio(knob: int) -> float:
        return 1.012 * elements(n_a, 0.6, 4.4 / n_a)(knob)

    measure, _ = gpu(ratio)
    cal = search_knob(measure, guess=round(0.03 * n_a / 16), lo=1, hi=n_a // 16)
    assert cal.within
    assert abs(ratio(cal.knob) - TARGET) < 0.001


def test_curved_response_still_lands_in_the_band() -> None:
    def ratio(knob: int) -> float:  # convex: the first extra elements are nearly free
        return 1.0 + 0.03 * (knob / 3000) ** 1.6

    measure, _ = gpu(ratio, round_se=0.0002)
    cal = search_knob(measure, guess=2000, lo=1, hi=20_000)
    assert cal.within
    assert abs(ratio(cal.knob) - TARGET) < 0.002


def test_set_up_noise_averages_out_over_probes() -> None:
    """130 us on the H200: B/A moved by about 0.4% from one set-up to the next. Each probe is a
    fresh set-up; fitting one line to all of them must land within 3% +- 0.4% nearly always."""
    n_a = 57_438_192
    ratio = elements(n_a, 2.0, 127.0 / n_a)
    hits, errors, probes = 0, [], []
    for seed in range(200):
        measure, asked = gpu(ratio, setup_sd=0.004, round_se=0.0004, seed=seed)
        cal = search_knob(measure, guess=round(0.03 * n_a / 16), lo=1, hi=n_a // 8)
        err = ratio(cal.knob) - TARGET
        errors.append(abs(err))
        hits += abs(err) <= 0.004
        probes.append(len(asked))
        assert len(asked) <= 14
    assert hits >= 195
    assert sorted(errors)[100] < 0.0015  # median miss well inside the band
    assert max(probes) == 14  # this much noise uses the whole probe budget...


def test_quiet_gpu_stops_early() -> None:
    n_a = 5_804_848
    ratio = elements(n_a, 1.0, 13.4 / n_a)
    measure, asked = gpu(ratio, setup_sd=0.0003, round_se=0.0004, seed=3)
    cal = search_knob(measure, guess=round(0.03 * n_a / 16), lo=1, hi=n_a // 8)
    assert cal.stop == "converged"
    assert len(asked) <= 6
    assert cal.within
    assert cal.predicted_se_log is not None and cal.predicted_se_log <= 0.001


def test_unreachable_target_says_so() -> None:
    def ratio(knob: int) -> float:  # saturates at 1% however much B does
        return 1.0 + 0.01 * (1 - math.exp(-knob / 50))

    measure, _ = gpu(ratio, round_se=0.0001)
    cal = search_knob(measure, guess=100, lo=1, hi=400)
    assert not cal.within
    assert cal.knob == 400
    assert cal.stop == "unreachable"
    assert cal.predicted_ratio < 1.02


def test_coarse_knob_picks_the_nearer_step_and_reports_the_miss() -> None:
    measure, _ = gpu(lambda k: math.exp(0.02 * k), round_se=0.0)
    cal = search_knob(measure, guess=3, lo=1, hi=10)
    assert cal.knob == 1  # 1.0202 is nearer 1.03 than 1.0408
    assert not cal.within
    assert cal.stop == "unreachable"
    assert cal.predicted_ratio == pytest.approx(math.exp(0.02), rel=1e-9)


def test_failed_probes_and_time_limits() -> None:
    cal = search_knob(lambda k: None, guess=10, lo=1, hi=100)
    assert cal.stop == "failed"
    assert cal.probes == ()
    assert not cal.within
    assert math.isnan(cal.predicted_ratio)

    measure, asked = gpu(lambda k: 1.0 + 0.001 * k, round_se=0.0)
    cal = search_knob(measure, guess=10, lo=1, hi=100, out_of_time=lambda: len(asked) >= 2)
    assert cal.stop == "time"
    assert len(cal.probes) == 2
    assert abs(cal.predicted_ratio - TARGET) < 0.001  # two exact probes already give the line

    one: list[int] = []
    cal = search_knob(
        lambda k: (one.append(k), (math.log(1.05), 0.0))[1],
        guess=10,
        lo=1,
        hi=100,
        out_of_time=lambda: len(one) >= 1,
    )
    assert cal.knob == 10 and cal.predicted_ratio == pytest.approx(1.05)  # the only measured knob

    with pytest.raises(ValueError):
        search_knob(measure, guess=1, lo=5, hi=4)
