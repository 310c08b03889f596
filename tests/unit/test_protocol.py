"""The timing protocol driven by synthetic block sources whose true ratio is known."""

from __future__ import annotations

import math
import random

from checks.sweep.protocol import (
    Block,
    ProtocolConfig,
    Telemetry,
    drop_reason,
    measure_case,
    replay_case,
)
from tests.paths import ROOT

CFG = ProtocolConfig(
    block_ms=1.0, min_rounds=8, max_rounds=120, warmup_rounds=2, max_case_seconds=60
)


class Machine:
    """A shared GPU: slow drift in speed, a clock, and sometimes a throttled block."""

    def __init__(self, seed: int, *, drift_per_block: float = 0.0, throttle_p: float = 0.0) -> None:
        self.rng = random.Random(seed)
        self.factor = 1.0
        self.drift = drift_per_block
        self.throttle_p = throttle_p
        self.now = 0.0
        self.order: list[str] = []

    def clock(self) -> float:
        return self.now


class Source:
    def __init__(self, machine: Machine, name: str, us: float, sigma: float) -> None:
        self.m, self.name, self.us, self.sigma = machine, name, us, sigma

    def block(self) -> Block:
        m = self.m
        m.factor *= 1.0 + m.drift
        m.now += 0.015
        m.order.append(self.name)
        throttled = m.rng.random() < m.throttle_p
        value = self.us * m.factor * math.exp(m.rng.gauss(0.0, self.sigma))
        tel = Telemetry(
            sm_clock_mhz=1980.0,
            max_sm_clock_mhz=1980.0,
            throttled=throttled,
            throttle_names=("hw_slowdown",) if throttled else (),
        )
        return Block(value_us=value, calls=100, wall_ms=15.0, telemetry=tel)


def _run(
    ratio: float, *, sigma: float = 0.01, seed: int = 0, cfg: ProtocolConfig = CFG, **machine_kw
):
    m = Machine(seed, **machine_kw)
    base = Source(m, "base", 10.0, sigma)
    head = Source(m, "head", 10.0 * ratio, sigma)
    run, d = measure_case(
        base, head, cfg, tolerance=0.03, alpha=0.01, rng=random.Random(seed), clock=m.clock
    )
    return m, run, d


def test_equal_sides_are_same_and_order_is_randomised() -> None:
    m, run, d = _run(1.0)
    assert d.verdict == "SAME" and run.stop_reason == "decided"
    assert len(run.warmup) == 2 and all(r.index < 0 for r in run.warmup)
    firsts = {r.head_first for r in run.rounds}
    assert firsts == {True, False}
    assert len(m.order) == 2 * (len(run.rounds) + len(run.warmup))


def test_slower_head_is_caught_early_and_faster_head_too() -> None:
    _, run, d = _run(1.08)
    assert d.verdict == "SLOWER" and len(run.rounds) <= 12
    assert 1.07 < d.ratio < 1.09
    _, _, d2 = _run(0.9)
    assert d2.verdict == "FASTER"


def test_drift_shared_by_both_sides_cancels_in_the_round_ratio() -> None:
    # The machine slows by 0.2% per block (27% over the run): medians alone would mislead.
    _, run, d = _run(1.0, drift_per_block=0.002, seed=3)
    base, head = run.side_median_us("base"), run.side_median_us("head")
    assert base is not None and head is not None
    assert d.verdict == "SAME"


def test_throttled_rounds_are_dropped_and_counted() -> None:
    _, run, d = _run(1.08, throttle_p=0.1, seed=5)
    dropped = [r for r in run.rounds if r.dropped]
    assert dropped and all("throttled" in r.drop_reason for r in dropped)
    assert d.verdict == "SLOWER"
    assert d.n == len(run.rounds) - len(dropped)


def test_too_much_throttling_gives_inconclusive() -> None:
    _, run, d = _run(1.2, throttle_p=0.8, seed=6)
    assert run.stop_reason == "throttled"
    assert d.verdict == "INCONCLUSIVE"


def test_time_budget_stops_the_rounds_with_a_final_decision() -> None:
    cfg = CFG.model_copy(update={"max_case_seconds": 0.5})  # about 16 rounds of 30 ms
    _, run, d = _run(1.03, sigma=0.03, seed=7, cfg=cfg)
    assert run.stop_reason == "time_budget"
    assert d.final and len(run.rounds) < CFG.max_rounds


def test_a_noisy_pass_runs_to_max_rounds() -> None:
    """Inside a pass the rounds stop once they pin its ratio down against the tolerance; rounds
    too noisy for that run to the last look."""
    _, run, d = _run(1.0, sigma=0.2, seed=8)
    assert run.stop_reason == "max_rounds" and run.pass_stops == ("max_rounds",)
    assert len(run.rounds) == CFG.max_rounds and d.final


def test_a_quiet_pass_stops_once_precise_whatever_its_ratio() -> None:
    for ratio in (1.0, 1.03, 1.08):
        _, run, _ = _run(ratio, sigma=0.005, seed=9)
        assert run.stop_reason == "decided" and len(run.rounds) < 20


ONE = CFG.model_copy(update={"min_executions": 1, "max_executions": 1})


def test_replay_reaches_the_live_decision() -> None:
    """A pass's own decision is the case's over that one execution; the case's decision needs
    ``min_executions`` of them."""
    for ratio, seed, kw in (
        (1.0, 1, {}),
        (1.08, 2, {}),
        (1.03, 8, {}),
        (1.2, 6, {"throttle_p": 0.8}),
    ):
        _, run, live = _run(ratio, seed=seed, **kw)
        again = replay_case(run.rounds, run.stop_reason, ONE, tolerance=0.03, alpha=0.01)
        assert again == live
        two = replay_case(run.rounds, run.stop_reason, CFG, tolerance=0.03, alpha=0.01)
        assert two.verdict == "INCONCLUSIVE" and two.executions <= 1


def test_drop_reason_rules() -> None:
    ok = Block(value_us=5.0, calls=1, wall_ms=1.0)
    slow_clock = Block(
        value_us=5.0,
        calls=1,
        wall_ms=1.0,
        telemetry=Telemetry(sm_clock_mhz=900.0, max_sm_clock_mhz=1980.0),
    )
    bad = Block(value_us=float("nan"), calls=1, wall_ms=1.0)
    assert drop_reason(ok, ok, min_clock_fraction=0.8) == ""
    assert "900 MHz" in drop_reason(ok, slow_clock, min_clock_fraction=0.8)
    assert "no valid time" in drop_reason(bad, ok, min_clock_fraction=0.8)


def test_case_gpu_seconds_bound() -> None:
    cfg = ProtocolConfig(block_ms=10.0, max_rounds=100, warmup_rounds=2, max_drop_fraction=0.5)
    assert cfg.max_case_gpu_seconds() == min(cfg.max_case_seconds, 2 * 202 * 0.01)


def test_proof_replay_on_synthetic_streams() -> None:
    """bench/protocol_replay.py judges recorded streams; on streams with a known answer it must
    find no false alarm, full detection, and do_bench's mistakes where do_bench is noisy."""
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    import protocol_replay

    rng = random.Random(11)

    def stream(ratio: float, sigma: float, n: int = 160) -> list[dict]:
        out = []
        for i in range(n):
            base = 5.0 * math.exp(rng.gauss(0, sigma))
            head = 5.0 * ratio * math.exp(rng.gauss(0, sigma))
            out.append({"base_us": base, "head_us": head, "base_s": 0.006, "head_s": 0.006,
                        "head_first": i % 2 == 0, "dropped": False, "seg": i // 40})  # fmt: skip
        return out

    dobench = []
    for t in range(40):  # do_bench at a 5 us kernel: several percent of noise per call
        a, a2, b = (m * math.exp(rng.gauss(0, 0.05)) for m in (5.0, 5.0, 5.15))
        dobench.append(
            {"trial": t, "A": a, "A2": a2, "B": b, "wall_A": 0.13, "wall_A2": 0.13, "wall_B": 0.13}
        )
    raw = {
        "meta": {"device": "cuda", "protocol": ProtocolConfig().model_dump(), "notes": []},
        "sizes": [{"label": "5us", "target_us": 5.0, "n_a": 1, "n_b": 2, "mode": "graph", "a_us": 5.0,
                   "setup_s": 0.05, "streams": {"AA": stream(1.0, 0.004), "AB": stream(1.03, 0.004)},
                   "do_bench": dobench}],
    }  # fmt: skip
    summary = protocol_replay.replay(raw, n_boot=200)
    ours = summary["sizes"][0]["ours"]["tolerance 0.015"]
    assert (
        ours["AA"]["sliding"]["rate_slower"] == 0.0
        and ours["AA"]["bootstrap"]["rate_slower"] == 0.0
    )
    assert (
        ours["AB"]["sliding"]["rate_slower"] >= 0.95
        and ours["AB"]["bootstrap"]["rate_slower"] >= 0.95
    )
    assert ours["AB"]["sliding"]["mean_rounds"] < 10  # decided at the first look or the next
    db = summary["sizes"][0]["do_bench"]["threshold 0.03"]
    assert db["AA"]["trials"] == 40 and db["AA"]["rate_slower"] > 0.1  # noisy: false alarms
    assert ours["AB"]["sliding"]["gpu_s_timing"] < db["AB"]["gpu_s_per_verdict"]
    md = protocol_replay.markdown(summary)
    assert "- 5us: met" in md and "| do_bench, threshold 0.03 |" in md


# --------------------------------------------------------------------------------- crossover

CROSS = CFG.model_copy(update={"crossover": True})


class SlotSource(Source):
    """A side's worker in a slot: slot 2 adds a fixed share to every block it runs, whatever the
    code (the bias seen between worker processes at 5 us)."""

    def __init__(self, machine: Machine, name: str, us: float, sigma: float, slot_bias: float):
        super().__init__(machine, name, us * (1.0 + slot_bias), sigma)


def _slot_run(cfg: ProtocolConfig, *, ratio: float = 1.0, bias: float = 0.012, seed: int = 0):
    m = Machine(seed)
    us, sigma = 5.0, 0.004
    base = SlotSource(m, "base", us, sigma, 0.0)  # arm 0: base in slot 1
    head = SlotSource(m, "head", us * ratio, sigma, bias)
    crossed = (  # arm 1: head in slot 1, base in slot 2
        (SlotSource(m, "base-x", us, sigma, bias), SlotSource(m, "head-x", us * ratio, sigma, 0.0))
        if cfg.crossover
        else None
    )
    return measure_case(
        base,
        head,
        cfg,
        tolerance=0.01,
        alpha=0.01,
        crossed=crossed,
        rng=random.Random(seed),
        clock=m.clock,
    )


def test_a_slot_bias_fakes_a_slowdown_without_crossover_and_cancels_with_it() -> None:
    for seed in range(5):
        _, plain = _slot_run(CFG, seed=seed)  # 1.2% against a 1% tolerance: never SAME
        assert plain.verdict in ("SLOWER", "INCONCLUSIVE") and 1.008 < plain.ratio < 1.016
        run, crossed = _slot_run(CROSS, seed=seed)
        assert crossed.verdict == "SAME" and abs(crossed.ratio - 1.0) < 0.004
        assert run.arms == 2 and {r.arm for r in run.rounds} == {0, 1}


def test_crossover_still_sees_a_real_slowdown() -> None:
    _, d = _slot_run(CROSS, ratio=1.03, seed=2)
    assert d.verdict == "SLOWER" and 1.025 < d.ratio < 1.035


def test_a_crossover_unit_is_one_round_of_each_arm_in_random_order() -> None:
    run, d = _slot_run(CROSS, seed=4)
    rounds = run.rounds
    assert len(rounds) % 2 == 0 and len(run.warmup) == 2 * CROSS.warmup_rounds
    assert [r.arm for r in rounds] == [0, 1] * (len(rounds) // 2)
    assert d.n == len(rounds) // 2 == len(run.kept_logs())
    pairs = zip(rounds[::2], rounds[1::2], strict=True)
    assert all(
        abs(log - (a.log_ratio + b.log_ratio) / 2) < 1e-12
        for log, (a, b) in zip(run.kept_logs(), pairs, strict=True)
    )
    one = CROSS.model_copy(update={"min_executions": 1, "max_executions": 1})
    again = replay_case(rounds, run.stop_reason, one, tolerance=0.01, alpha=0.01)
    assert again == d


def test_a_dropped_round_drops_its_whole_unit() -> None:
    m = Machine(9, throttle_p=0.15)
    srcs = [Source(m, n, 10.0, 0.01) for n in ("b", "h", "bx", "hx")]
    run, d = measure_case(
        srcs[0], srcs[1], CROSS, tolerance=0.03, alpha=0.01, crossed=(srcs[2], srcs[3]),
        rng=random.Random(9), clock=m.clock,
    )  # fmt: skip
    units = list(zip(run.rounds[::2], run.rounds[1::2], strict=True))
    kept = [u for u in units if not (u[0].dropped or u[1].dropped)]
    assert len(kept) < len(units) and d.n == len(kept) == len(run.kept_logs())


def test_crossover_and_its_second_arm_go_together() -> None:
    m = Machine(0)
    a, b = Source(m, "a", 1.0, 0.01), Source(m, "b", 1.0, 0.01)
    for cfg, crossed in ((CROSS, None), (CFG, (a, b))):
        try:
            measure_case(a, b, cfg, tolerance=0.03, alpha=0.01, crossed=crossed, clock=m.clock)
        except ValueError as exc:
            assert "second arm" in str(exc)
        else:
            raise AssertionError("a crossover without its second arm was accepted")
