"""The timing protocol: interleaved rounds of one base block and one head block, order randomised,
throttled rounds dropped, a sequential decision after each scheduled look.

``measure_case`` drives block sources (worker clients on a GPU, or anything with a ``block()``
method) and ``CaseDecider`` turns rounds into a decision. The decider is a pure state machine, so
``recompute`` can replay the recorded rounds offline and reach the same verdict.

Crossover (``ProtocolConfig.crossover``): two worker pairs, arm 0 with base in the first worker
slot and head in the second, arm 1 the other way round. A unit of replication is one round of each
arm, in random order, and its log-ratio is the mean of the two; whatever a slot adds to the time
of every block it runs (its process's allocations, its context, being started or warmed first)
enters both sides once and cancels in the ratio.

Executions (``checks.sweep.executions``): a sweep measures every case in at least
``min_executions`` passes, each with fresh worker processes, and at most ``max_executions``.
Inside a pass the rounds stop once they pin that pass's ratio down well inside the tolerance
(``CaseDecider``); the verdict is made over the passes, with the execution as the unit where the
executions disagree (``replay_case``).
"""

from __future__ import annotations

import math
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Literal, Protocol

from pydantic import Field

from bot.contracts.base import Frozen
from checks.sweep.executions import (
    ONE_PASS_PRIOR_SD,
    Execution,
    ExecutionDecision,
    decide_executions,
    execution_looks,
    one_pass_reached,
)
from checks.sweep.stats import Decision, band_log, look_schedule, median, stdev, t_ppf

StopReason = Literal[
    "decided", "max_rounds", "max_executions", "time_budget", "throttled", "failed", "stopped"
]
# inside a pass the rounds stop once the 95% interval's half-width is this share of the band
PASS_PRECISION = 0.5


class ProtocolConfig(Frozen):
    """How a case is measured. Defaults are for a GPU; tests and ``--device cpu`` shrink them."""

    block_ms: float = Field(default=5.0, gt=0, description="target time of one block")
    min_rounds: int = Field(default=5, ge=3, description="a pass's first look")
    max_rounds: int = Field(default=200, ge=3, description="last look: decide by then")
    look_growth: float = Field(default=1.5, gt=1.0)
    warmup_rounds: int = Field(default=1, ge=0, description="rounds run and discarded per case")
    alpha: float = Field(
        default=0.01, gt=0, lt=0.5, description="family-wise false-alarm rate over a sweep"
    )
    max_case_seconds: float = Field(default=30.0, gt=0, description="rounds stop after this")
    max_drop_fraction: float = Field(default=0.5, ge=0, le=1)
    graph_below_us: float = Field(
        default=50.0, gt=0, description="kernels faster than this are timed in CUDA graphs"
    )
    flush_l2: bool = True
    graph_preroll: bool = Field(
        default=True,
        description="a graph block starts after one untimed pass over every input copy",
    )
    min_clock_fraction: float = Field(
        default=0.8, gt=0, le=1, description="a block under this share of max SM clock is throttled"
    )
    seed: int = 0
    crossover: bool = Field(
        default=False,
        description="each side timed in both worker slots (two worker pairs); a unit is a round of each",
    )
    min_executions: int = Field(
        default=2, ge=1, description="passes with fresh workers every case is measured in"
    )
    max_executions: int = Field(
        default=4, ge=1, description="passes at most, while the executions disagree"
    )

    @property
    def arms(self) -> int:
        return 2 if self.crossover else 1

    def looks(self) -> tuple[int, ...]:
        return look_schedule(self.min_rounds, self.max_rounds, self.look_growth)

    def execution_looks(self) -> tuple[int, ...]:
        return execution_looks(self.min_executions, max(self.min_executions, self.max_executions))

    def max_case_gpu_seconds(self) -> float:
        """The most GPU time the rounds of one case can take (both sides, warm-up included)."""
        rounds = self.max_rounds / max(1e-9, 1.0 - self.max_drop_fraction) + self.warmup_rounds
        return min(self.max_case_seconds, 2.0 * self.arms * rounds * self.block_ms / 1000.0)


def default_protocol(
    device: str,
    *,
    crossover: bool | None = None,
    block_ms: float | None = None,
    max_rounds: int | None = None,
) -> ProtocolConfig:
    """The protocol a sweep runs by default: on a GPU crossover, with 1.0 ms blocks (most cases
    decide at the first look, whose units of four 2.5 ms blocks gave intervals far inside a 1%
    tolerance; 1.5 ms blocks took a fifth less time than 2.5 ms, and 1.0 ms blocks cut a run's
    rounds from 1.9-2.4 s to 1.2 s on the H200 with all 64 verdicts on identical code SAME at
    1%, bench/results/h200/cost_side_by_side/arms_2c0e47b); without crossover 5 ms; on the CPU
    (plumbing, labelled CPU timing) one pair, 2 ms blocks, fewer rounds. ``None`` keeps a
    default."""
    cpu = device == "cpu"
    cross = (not cpu) if crossover is None else crossover
    return ProtocolConfig(
        block_ms=block_ms or (2.0 if cpu else 1.0 if cross else 5.0),
        max_rounds=max_rounds or (40 if cpu else 200),
        max_case_seconds=10.0 if cpu else 30.0,
        crossover=cross,
    )


class Telemetry(Frozen):
    """What the GPU said right after a block (NVML); None where the platform cannot tell."""

    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    max_sm_clock_mhz: float | None = None
    temp_c: float | None = None
    power_w: float | None = None
    throttle_reasons: int | None = None
    throttle_names: tuple[str, ...] = ()
    throttled: bool = False


class Block(Frozen):
    """One side's block: ``value_us`` is the time of one kernel call inside it."""

    value_us: float
    calls: int
    wall_ms: float
    gpu_ms: float | None = None
    telemetry: Telemetry | None = None


class Round(Frozen):
    index: int
    head_first: bool
    base: Block
    head: Block
    dropped: bool = False
    drop_reason: str = ""
    arm: int = Field(default=0, ge=0, le=1, description="crossover arm: 1 when head ran in slot 1")
    execution: int = Field(default=0, ge=0, description="the pass (fresh workers) it ran in")

    @property
    def log_ratio(self) -> float:
        return math.log(self.head.value_us / self.base.value_us)


class BlockSource(Protocol):
    def block(self) -> Block: ...


def drop_reason(base: Block, head: Block, *, min_clock_fraction: float) -> str:
    """Why a round must not count ('' when it counts)."""
    for side, b in (("base", base), ("head", head)):
        if not math.isfinite(b.value_us) or b.value_us <= 0:
            return f"{side} block has no valid time ({b.value_us})"
        t = b.telemetry
        if t is None:
            continue
        if t.throttled:
            names = ", ".join(t.throttle_names) or "throttle reason set"
            return f"{side} block throttled ({names})"
        mhz, top = t.sm_clock_mhz, t.max_sm_clock_mhz
        if mhz and top and mhz < min_clock_fraction * top:
            return f"{side} block at {mhz:.0f} MHz, under {min_clock_fraction:.0%} of {top:.0f} MHz"
    return ""


class CaseDecider:
    """One pass's rounds in; a stop once they pin the pass's head/base down (``precise``), at the
    last scheduled look, or when too many were throttled. Pure: the same object replays them."""

    def __init__(
        self, cfg: ProtocolConfig, *, tolerance: float, alpha: float, one_pass: bool = False
    ) -> None:
        self.cfg = cfg
        self.tolerance = tolerance
        self.alpha = alpha
        self.one_pass = one_pass  # the case may be decided by this pass alone (``decide_run``)
        self.looks = cfg.looks()
        self._look_set = set(self.looks)
        self.logs: list[float] = []
        self.units: list[list[Round]] = []
        self.dropped = 0
        self.stop: StopReason = "decided"
        self._pending: list[Round] = []  # crossover: the unit's rounds seen so far

    @property
    def attempted(self) -> int:
        return len(self.logs) + self.dropped

    def add(self, rnd: Round) -> Decision | None:
        """Count a round (with crossover, a unit once both arms' rounds are in); the pass's
        decision when its rounds should stop."""
        self._pending.append(rnd)
        if len(self._pending) < self.cfg.arms:
            return None
        unit, self._pending = self._pending, []
        if any(r.dropped for r in unit):
            self.dropped += 1
            if self._too_many_drops():
                return self.finish("throttled")
            return None
        self.logs.append(sum(r.log_ratio for r in unit) / len(unit))
        self.units.append(unit)
        n = len(self.logs)
        if n in self._look_set and (self.precise() or n >= self.looks[-1]):
            return self.finish("decided" if self.precise() else "max_rounds")
        return None

    def precise(self) -> bool:
        """The pass's 95% interval is narrow against the tolerance (its half-width at most
        ``PASS_PRECISION`` of the band): more rounds would not change what this execution says.
        A pass that may decide its case alone (``one_pass``) also needs the interval of that
        decision narrow enough to read SAME with room to spare (``one_pass_reached``)."""
        n = len(self.logs)
        if n < 3:
            return False
        half = t_ppf(0.975, n - 1) * stdev(self.logs) / math.sqrt(n)
        if half > PASS_PRECISION * band_log(self.tolerance):
            return False
        return not self.one_pass or one_pass_reached(
            executions_of([r for unit in self.units for r in unit]),
            tolerance=self.tolerance,
            looks_planned=max(1, self.cfg.max_executions),
        )

    def _too_many_drops(self) -> bool:
        n = self.attempted
        return n >= self.cfg.min_rounds and self.dropped > self.cfg.max_drop_fraction * n

    def finish(self, reason: StopReason) -> Decision:
        """This pass's own decision (its executions alone) when its rounds stop for ``reason``;
        the case's verdict is made over every pass (``replay_case``)."""
        self.stop = reason
        rounds = [r for unit in self.units for r in unit]
        d = decide_executions(
            executions_of(rounds),
            tolerance=self.tolerance,
            alpha=self.alpha,
            looks=(1,),
            complete=True,
        )
        if reason == "throttled" and d.verdict != "INCONCLUSIVE":
            return replace(d, verdict="INCONCLUSIVE")
        return d


def executions_of(rounds: Sequence[Round]) -> list[Execution]:
    """The counted rounds' log-ratios grouped by execution: each pass's each arm, in order."""
    by: dict[tuple[int, int], list[float]] = {}
    for r in rounds:
        if not r.dropped:
            by.setdefault((r.execution, r.arm), []).append(r.log_ratio)
    return [Execution(execution=e, arm=a, logs=tuple(logs)) for (e, a), logs in sorted(by.items())]


class ExecutionPicks(Frozen):
    """Which config each side's autotuners picked in one execution (pass)."""

    execution: int
    base: tuple[str, ...] = ()
    head: tuple[str, ...] = ()
    # both sides' autotuners chose from the same configs (the same kernels, the same lists)
    same_offer: bool = False
    # head's autotuners were fixed to base's picks (the same kernel source and configs): head
    # timed what base's autotuner chose instead of choosing again
    head_pinned: bool = False


class CaseRun(Frozen):
    """Everything measured for one case: warm-up rounds, counted rounds, and why it stopped."""

    warmup: tuple[Round, ...] = ()
    rounds: tuple[Round, ...] = ()
    stop_reason: StopReason = "decided"
    seconds: float = 0.0
    arms: int = Field(default=1, ge=1, le=2, description="rounds per unit (2 with crossover)")
    # each pass's autotuner picks, and why each pass's rounds stopped
    picks: tuple[ExecutionPicks, ...] = ()
    pass_stops: tuple[StopReason, ...] = ()
    # why this case's first pass may decide it alone (``checks.sweep.models.one_pass_reason``):
    # its launch records show nothing that makes a call's time differ by process; "" where not
    one_pass: str = ""

    def kept_units(self) -> list[tuple[Round, ...]]:
        """The counted units (a round, or with crossover one round of each arm), dropped ones
        left out."""
        k = self.arms
        units = [self.rounds[i : i + k] for i in range(0, len(self.rounds) - k + 1, k)]
        return [u for u in units if not any(r.dropped for r in u)]

    def kept_logs(self) -> list[float]:
        """One log-ratio per counted unit (a round, or with crossover the mean of a unit's
        rounds), as the decision saw them."""
        return [sum(r.log_ratio for r in u) / len(u) for u in self.kept_units()]

    def executions(self) -> list[Execution]:
        """The counted rounds grouped by execution (each pass's each arm)."""
        return executions_of([r for u in self.kept_units() for r in u])

    def side_median_us(self, side: Literal["base", "head"]) -> float | None:
        """The median over executions of each execution's median time: an execution that ran
        many rounds weighs no more than one that ran few."""
        by: dict[tuple[int, int], list[float]] = {}
        for r in self.rounds:
            if not r.dropped:
                by.setdefault((r.execution, r.arm), []).append(getattr(r, side).value_us)
        return median([median(v) for v in by.values()]) if by else None

    def picks_of(self, side: Literal["base", "head"]) -> list[tuple[str, ...]]:
        """Each execution's autotuner picks on ``side``, in pass order (none recorded: []): the
        side's own choices, so head's passes that ran base's pick (``head_pinned``) are left
        out."""
        ordered = sorted(self.picks, key=lambda p: p.execution)
        return [getattr(p, side) for p in ordered if side == "base" or not p.head_pinned]

    def pick_counts(self, side: Literal["base", "head"]) -> Counter[str]:
        """How many passes picked each config set on ``side`` (passes with no pick, and head's
        passes that ran base's pick, left out)."""
        return Counter(" + ".join(p) for p in self.picks_of(side) if p)


def run_round(
    index: int,
    base: BlockSource,
    head: BlockSource,
    rng: random.Random,
    cfg: ProtocolConfig,
    *,
    arm: int = 0,
    execution: int = 0,
) -> Round:
    head_first = rng.random() < 0.5
    if head_first:
        hb = head.block()
        bb = base.block()
    else:
        bb = base.block()
        hb = head.block()
    why = drop_reason(bb, hb, min_clock_fraction=cfg.min_clock_fraction)
    return Round(
        index=index,
        head_first=head_first,
        base=bb,
        head=hb,
        dropped=bool(why),
        drop_reason=why,
        arm=arm,
        execution=execution,
    )


Arm = tuple[BlockSource, BlockSource]  # (base, head)


def run_unit(
    first_index: int,
    arms: Sequence[Arm],
    rng: random.Random,
    cfg: ProtocolConfig,
    execution: int = 0,
) -> list[Round]:
    """One round of each arm, the arms in random order; returned in arm order (0, 1)."""
    order = list(range(len(arms)))
    rng.shuffle(order)
    done: dict[int, Round] = {}
    for a in order:
        base, head = arms[a]
        done[a] = run_round(first_index + a, base, head, rng, cfg, arm=a, execution=execution)
    return [done[a] for a in range(len(arms))]


def measure_case(
    base: BlockSource,
    head: BlockSource,
    cfg: ProtocolConfig,
    *,
    tolerance: float,
    alpha: float,
    crossed: Arm | None = None,
    rng: random.Random | None = None,
    clock: Callable[[], float] = time.monotonic,
    on_round: Callable[[Round], None] | None = None,
    execution: int = 0,
    one_pass: str = "",
) -> tuple[CaseRun, Decision]:
    """Interleave rounds until the sequential test decides, the rounds run out, the time budget is
    spent or too many rounds were throttled. ``alpha`` is this case's share of the sweep's.
    With ``cfg.crossover``, ``crossed`` is the second arm's (base, head): the workers that run
    base and head in the other slots. ``one_pass``: why this pass may decide the case alone
    (``checks.sweep.models.one_pass_reason``), kept with the run; its rounds go on until that
    decision's interval is narrow enough (``CaseDecider.precise``)."""
    if cfg.crossover != (crossed is not None):
        raise ValueError("crossover needs the second arm's sources, and only crossover takes them")
    arms: list[Arm] = [(base, head)] + ([crossed] if crossed is not None else [])
    rng = rng or random.Random(cfg.seed)
    start = clock()
    warm: list[Round] = []
    for i in range(cfg.warmup_rounds):
        warm.extend(run_unit(-len(arms) * (i + 1), arms, rng, cfg, execution))
    decider = CaseDecider(cfg, tolerance=tolerance, alpha=alpha, one_pass=bool(one_pass))
    rounds: list[Round] = []
    decision: Decision | None = None
    reason: StopReason = "decided"
    max_units = math.ceil(cfg.max_rounds / max(1e-9, 1.0 - cfg.max_drop_fraction)) + 1
    while decision is None:
        unit = run_unit(len(rounds), arms, rng, cfg, execution)
        for rnd in unit:
            rounds.append(rnd)
            if on_round is not None:
                on_round(rnd)
            decision = decider.add(rnd)
        if decision is not None:
            reason = decider.stop
            break
        if clock() - start > cfg.max_case_seconds:
            reason = "time_budget"
            decision = decider.finish(reason)
        elif len(rounds) >= max_units * len(arms):
            reason = "throttled"
            decision = decider.finish(reason)
    run = CaseRun(
        warmup=tuple(warm),
        rounds=tuple(rounds),
        stop_reason=reason,
        seconds=clock() - start,
        arms=len(arms),
        pass_stops=(reason,),
        one_pass=one_pass,
    )
    return run, decision


def picks_vary(run: CaseRun) -> bool:
    """Whether the autotuners' picks vary while base and head choose from the same config lists:
    some pass where the two sides picked differently, or a side that picked differently from one
    process to the next."""
    picks = [p for p in run.picks if p.base and p.head]
    if not picks or len(picks) != len(run.picks) or not all(p.same_offer for p in picks):
        return False
    return any(p.base != p.head for p in picks) or any(
        len(run.pick_counts(side)) > 1 for side in ("base", "head")
    )


def decide_run(
    run: CaseRun,
    cfg: ProtocolConfig,
    *,
    tolerance: float,
    alpha: float,
    complete: bool,
) -> tuple[ExecutionDecision, frozenset[int] | None]:
    """The test over a case's executions, and the passes it was decided over when the picks
    varied (None: every pass).

    When base and head choose from the same configs and the picks vary, the executions are a
    mixture of configs, and identical code can read apart by the spread between configs. The
    passes whose picks agree compare the same kernel at the same config: they decide when there
    are enough of them (the first look's count). Otherwise every pass decides, but a difference
    only at the last look (the most passes the sweep runs): fewer processes cannot tell an
    autotuner's luck from a change."""
    # a case whose launch records show nothing process-bound looks from its first pass, its
    # interval carrying a known between-execution spread, which two executions cannot estimate
    looks = (
        execution_looks(1, max(1, cfg.max_executions)) if run.one_pass else cfg.execution_looks()
    )
    prior = ONE_PASS_PRIOR_SD if run.one_pass else 0.0
    everything = decide_executions(
        run.executions(),
        tolerance=tolerance,
        alpha=alpha,
        looks=looks,
        complete=complete,
        prior_sd=prior,
    )
    if not picks_vary(run):
        return everything, None
    like = frozenset(p.execution for p in run.picks if p.base == p.head)
    if len(like) >= looks[0]:
        matched = decide_executions(
            [e for e in run.executions() if e.execution in like],
            tolerance=tolerance,
            alpha=alpha,
            looks=looks,
            complete=complete,
            prior_sd=prior,
        )
        if matched.verdict != "INCONCLUSIVE" or complete:
            return matched, like
    passes = len({p.execution for p in run.picks})
    if everything.verdict in ("SLOWER", "FASTER") and passes < looks[-1]:
        return replace(everything, verdict="INCONCLUSIVE", final=complete), None
    return everything, None


def replay_run(
    run: CaseRun, cfg: ProtocolConfig, *, tolerance: float, alpha: float
) -> tuple[ExecutionDecision, frozenset[int] | None]:
    """The case's decision over every pass it has: what the sweep decided after its last pass
    (``decide_run`` with no pass to come). A throttled run makes a claim INCONCLUSIVE."""
    d, like = decide_run(run, cfg, tolerance=tolerance, alpha=alpha, complete=True)
    if run.stop_reason == "throttled" and d.verdict != "INCONCLUSIVE":
        d = replace(d, verdict="INCONCLUSIVE")
    return d, like


def replay_case(
    rounds: Sequence[Round],
    stop_reason: StopReason,
    cfg: ProtocolConfig,
    *,
    tolerance: float,
    alpha: float,
    arms: int | None = None,
) -> ExecutionDecision:
    """``replay_run`` of these recorded rounds (no autotuner picks)."""
    run = CaseRun(rounds=tuple(rounds), arms=arms or cfg.arms, stop_reason=stop_reason)
    return replay_run(run, cfg, tolerance=tolerance, alpha=alpha)[0]
