"""Which cases their first pass may decide (``checks.sweep.models.one_pass_reason``): those whose launch records
show one Triton kernel a call on each side, its code read and without atomics, no buffer besides
the outputs, no autotuner, timed as launched. Anything process-bound, or anything unread, keeps
a case to the passes every case took; and a case that may is decided at its first pass, as the
sweep's test over executions reads it."""

from __future__ import annotations

import random

import pytest

from checks.sweep.models import CaseLaunch, CaseLaunches, ShapeResult, SideInfo, one_pass_reason
from checks.sweep.protocol import Block, CaseRun, ProtocolConfig, Round, decide_run, measure_case
from checks.sweep.summary import finalize, needs_another


def _record(*kernels: CaseLaunch, allocations: int | None = 0) -> CaseLaunches:
    return CaseLaunches(kernels=kernels, allocations=allocations)


PLAIN = _record(CaseLaunch(name="_add_kernel", triton=True, count=1, atomics=False))


def _side(picked: tuple[str, ...] = ()) -> SideInfo:
    return SideInfo(entry="e", est_us=50.0, host_us=5.0, bytes_moved=1, flops=0, copies=8,
                    footprint_bytes=1, prepare_s=0.1, configs_picked=picked)  # fmt: skip


def _case(**update: object) -> ShapeResult:
    case = ShapeResult(
        kernel="add", shape=(4096,), dtype="float32", tolerance=0.01, status="ok", mode="graph",
        base=_side(), head=_side(), base_launches=PLAIN, head_launches=PLAIN,
    )  # fmt: skip
    return case.model_copy(update=update)


def _reason(case: ShapeResult) -> str:
    """The rule, as the first pass reads it before its rounds."""
    assert case.base is not None and case.head is not None
    return one_pass_reason(
        case.mode or "",
        (case.base_launches, case.base.configs_picked),
        (case.head_launches, case.head.configs_picked),
    )


def test_one_plain_triton_kernel_on_each_side_may_be_decided_in_one_pass() -> None:
    assert _reason(_case()).startswith("each side launches one Triton kernel")


def _atomic(atomics: bool | None) -> CaseLaunches:
    return _record(CaseLaunch(name="_sum_kernel", triton=True, count=1, atomics=atomics))


@pytest.mark.parametrize(
    "update",
    [
        {"head_launches": _atomic(True)},  # atomics
        {"head_launches": _atomic(None)},  # a kernel whose code was not read
        {"base_launches": PLAIN.model_copy(update={"allocations": 2})},  # a workspace
        {"base_launches": PLAIN.model_copy(update={"allocations": None})},  # not counted
        {
            "head_launches": _record(
                PLAIN.kernels[0], PLAIN.kernels[0].model_copy(update={"name": "_final_kernel"})
            )
        },  # a split: two kernels
        {"head_launches": _record(PLAIN.kernels[0].model_copy(update={"count": 2}))},
        {"base_launches": _record(CaseLaunch(name="ns::add", triton=False, count=1))},
        {"head": _side(("_add_kernel: BLOCK=1024, num_warps=4",))},  # an autotuner
        {"mode": "kernels"},  # a host that paces the GPU
        {"mode": "cpu"},
        {"base_launches": None},  # no record
    ],
    ids=[
        "atomics",
        "atomics-unread",
        "workspace",
        "buffers-uncounted",
        "split",
        "twice",
        "cuda",
        "autotuned",
        "host-paced",
        "cpu",
        "no-record",
    ],
)
def test_anything_process_bound_or_unread_keeps_every_pass(update: dict[str, object]) -> None:
    assert _reason(_case(**update)) == ""


def _rounds(execution: int, rng: random.Random) -> list[Round]:
    rounds = []
    for i in range(10):
        for arm in (0, 1):
            rounds.append(
                Round(
                    index=len(rounds),
                    head_first=bool(i % 2),
                    base=Block(value_us=50.0 * (1 + rng.gauss(0, 0.002)), calls=1, wall_ms=1.0),
                    head=Block(value_us=50.0 * (1 + rng.gauss(0, 0.002)), calls=1, wall_ms=1.0),
                    arm=arm,
                    execution=execution,
                )
            )
    return rounds


def test_a_case_that_may_is_decided_at_its_first_pass_and_says_so() -> None:
    protocol = ProtocolConfig(crossover=True)
    run = CaseRun(rounds=tuple(_rounds(0, random.Random(2))), arms=2, pass_stops=("decided",))
    every = _case(raw=run)
    assert needs_another(every, protocol, 1)  # without: the second pass, as every case
    one = _case(raw=run.model_copy(update={"one_pass": _reason(every)}))
    assert not needs_another(one, protocol, 1)
    (done,), _ = finalize([one], protocol, 1)
    assert done.verdict == "SAME" and done.executions == 2
    assert "decided in one pass (two executions): each side launches one Triton kernel" in (
        done.explanation
    )
    assert "carries the 0.3% such kernels varied from one process to the next" in done.explanation


class _Noisy:
    """A block source whose call takes ``us`` with normal noise of ``sd`` (a share) per block."""

    def __init__(self, rng: random.Random, us: float, sd: float) -> None:
        self.rng, self.us, self.sd = rng, us, sd

    def block(self) -> Block:
        return Block(value_us=self.us * (1 + self.rng.gauss(0, self.sd)), calls=1, wall_ms=1.0)


def _first_pass(seed: int, *, one_pass: str, sd: float, tolerance: float, head_us: float = 5.0):
    """One crossover pass of a launch-bound tiny kernel (noisy rounds), identical code unless
    ``head_us`` says otherwise: its run (marked as a one-pass case whatever the pass was told)
    and its rounds' count."""
    rng = random.Random(seed)
    cfg = ProtocolConfig(crossover=True)
    run, _ = measure_case(
        _Noisy(rng, 5.0, sd),
        _Noisy(rng, head_us, sd),
        cfg,
        tolerance=tolerance,
        alpha=0.01 / 16,
        crossed=(_Noisy(rng, 5.0, sd), _Noisy(rng, head_us, sd)),
        rng=random.Random(seed),
        clock=lambda: 0.0,
        one_pass=one_pass,
    )
    return run.model_copy(update={"one_pass": "plain"}), cfg


def _decided_in_one_pass(one_pass: str, *, sd: float, tolerance: float, runs: int) -> int:
    same = 0
    for seed in range(runs):
        run, cfg = _first_pass(seed, one_pass=one_pass, sd=sd, tolerance=tolerance)
        d, _ = decide_run(run, cfg, tolerance=tolerance, alpha=0.01 / 16, complete=False)
        same += d.final and d.verdict == "SAME"
    return same


def test_a_one_pass_case_takes_rounds_until_its_first_pass_can_decide_it() -> None:
    # a 1-element shape at 1% (blocks 0.8% apart): its pass's own precision stops it at about
    # 16 units, where the one-pass interval (the prior's 0.3% on top) often cannot read SAME
    # (46 of 60 here), and more passes followed; rounds up to the reach (about 30) decide it in
    # the first
    before = _decided_in_one_pass("", sd=0.008, tolerance=0.01, runs=60)
    after = _decided_in_one_pass("plain", sd=0.008, tolerance=0.01, runs=60)
    assert before <= 52
    assert after >= 58


def test_the_one_pass_stop_rests_on_the_rounds_spread_not_their_mean() -> None:
    for seed in range(8):
        same, _ = _first_pass(seed, one_pass="plain", sd=0.006, tolerance=0.01)
        slower, _ = _first_pass(seed, one_pass="plain", sd=0.006, tolerance=0.01, head_us=5.01)
        assert len(same.rounds) == len(slower.rounds)


def test_a_tolerance_the_prior_alone_fills_keeps_the_pass_precision() -> None:
    # at 0.5% the prior's spread alone is wider than the reach: more rounds cannot help, and
    # the pass stops where any pass would
    for seed in range(5):
        one, _ = _first_pass(seed, one_pass="plain", sd=0.006, tolerance=0.005)
        every, _ = _first_pass(seed, one_pass="", sd=0.006, tolerance=0.005)
        assert len(one.rounds) == len(every.rounds)
