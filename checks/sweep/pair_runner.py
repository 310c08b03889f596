"""One GPU, two workers (base and head), or four with crossover: set up the device, then measure
cases one by one.

A case goes: check both sides against the reference on fresh inputs and base against head
(compile, autotune), prepare every worker (entry point, input copies), estimate each side in
turn, pick the timing mode, interleave rounds until the sequential test decides, recheck the
timed copies' outputs, release. Every step but the estimate and the rounds runs side by side,
so the GPU waits for the slowest worker's set-up, not for their sum. Any failure marks that case
with its own status, restarts the worker that failed when its process or context cannot be
trusted, and the next case runs on a clean worker.

With crossover the second pair's workers take the other slots (head is its slot 1: started,
warmed, asked first), and every round of the first pair is matched by one of the second. Then
a case's recheck and the next case's check overlap (``measure``'s ``following``): one pair,
drawn at random per case, rechecks what it timed while the other checks the next case (its
first call alone on the GPU, as the recheck's calls are: ``checks.worker.exclusive``). Each
side is rechecked in one worker per case, and a worker cannot know whether its recheck comes;
the last case is rechecked in every worker. In the first execution the first pair's checks
also record what a call launched (the launch record: its kernels, which of them hold atomics,
the buffers it allocates besides its outputs), and the first pair checks every case.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

from pydantic import BaseModel, ConfigDict

from bot.outputs import cache_root
from checks.bench_entries.own_kernels import Sources
from checks.compiler.triton_compat import picked_label
from checks.sweep.models import (
    MAX_PICKS,
    CaseLaunches,
    Ceilings,
    EnvFingerprint,
    FailedSide,
    ShapeResult,
    SideInfo,
    Status,
    one_pass_reason,
)
from checks.sweep.protocol import CaseRun, ExecutionPicks, ProtocolConfig, Round, measure_case
from checks.sweep.shapes import Case, LaunchRecorder
from checks.sweep.workers import WorkerClient, WorkerFailure, in_parallel, start_all
from checks.worker import ceilings as ceilings_cache
from checks.worker import contract
from checks.worker.correctness import compare_digests
from checks.worker.timing import MAX_COPIES, graph_calls

WARMUP_MIN_S = 0.25
# failures after which a worker's GPU context (or the process) is gone
CONTEXT_LOST = frozenset({"cuda_error", "crashed"})

STATUS_OF_KIND: dict[str, Status] = {
    "crashed": "crashed",
    "timeout": "timeout",
    "oom": "oom",
    "out_of_resources": "out_of_resources",
    "cuda_error": "cuda_error",
    "compile_error": "compile_error",
    "missing_entry": "missing_entry",
    "wrong_result": "wrong_result",
    "interpreter": "skipped",  # cannot run under the CPU interpreter: the message says why
    "stopped": "stopped",  # the command was stopped (a signal) while the case ran
}


class _Sides(TypedDict, total=False):
    """What each side's worker said of a case, once both checked it."""

    base: SideInfo
    head: SideInfo


class RunnerOptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    device: str = "cuda"
    protocol: ProtocolConfig = ProtocolConfig()
    max_copies: int = MAX_COPIES
    max_copy_bytes: int = 4 * 2**30
    recheck: bool = True
    compare_sides: bool = True
    check_seed: int = 1_000_003
    # the least warm-up: on the H200 the SM clock held at 85% of its maximum (three readings
    # in a row) 0.30 s into the load from idle (bench/results/h200/clock_ramp)
    warmup_min_s: float = WARMUP_MIN_S
    warmup_max_s: float = 10.0
    rewarm_after_idle_s: float = 2.0
    measure_ceilings: bool = True
    ceilings_cache_dir: str | None = None
    # the first pass's checks record the kernels a call of each side launched (``base_launches``)
    record_launches: bool = True


def choose_mode(est_base_us: float, est_head_us: float, device: str, cfg: ProtocolConfig) -> str:
    """One mode for both sides of a case, from the slower side's estimate."""
    if device == "cpu":
        return "cpu"
    if max(est_base_us, est_head_us) < cfg.graph_below_us:
        return "graph"
    return "eager" if cfg.flush_l2 else "eager-noflush"


# A replayed graph that takes less than this share of an eager call's GPU time did not capture
# the call's work. Replays save the launch gaps between an op's kernels (about half of a call's
# time at most, for an op of many sub-microsecond kernels), never three quarters of it.
GRAPH_MISSED_BELOW = 0.25


def graph_missed(eager_us: float, graph_call_us: float | None) -> str | None:
    """Why a case cannot be timed as a CUDA graph when a replay does much less than an eager call
    (bitsandbytes 0.50's quantize ops on the H200: a graph replayed in 0.007 us a call, the eager
    call took 5.2 us, and identical code read 1.09-1.92x apart); None when the graph holds the
    work."""
    if graph_call_us is None or eager_us <= 0 or graph_call_us >= GRAPH_MISSED_BELOW * eager_us:
        return None
    return (
        f"a CUDA graph of one call replays in {graph_call_us:.3g} us, where the call takes "
        f"{eager_us:.3g} us of GPU time run eagerly: the graph did not capture the call's work "
        "(its kernels go to a stream the capture does not follow); timed eagerly instead"
    )


# An eager call whose host takes at least this share of its GPU time to issue it is timed by the
# GPU's busy time (``kernels`` mode). The hold before each timed call covers 1.5 host calls, less
# what the flush covers: 4 us of margin for bitsandbytes' 4-bit quantize (27 us of host for 5 us of
# GPU work), and identical code read 0.54-1.81x apart; an op that waits for the GPU inside a call
# (cut-cross-entropy's: 2 ms of host for 0.4 ms of GPU) cannot be covered at all.
HOST_PACED_SHARE = 0.5


def host_paced(host_us: float, est_us: float) -> str | None:
    """Why an eager case is timed by the GPU's busy time instead of events (None: it is not)."""
    if est_us <= 0 or host_us < HOST_PACED_SHARE * est_us:
        return None
    return (
        f"the host takes {host_us:.3g} us to issue a call the GPU runs in {est_us:.3g} us: "
        "timed by the GPU's busy time in each call (its kernels', copies' and memsets' spans "
        "from the profiler), so the host's pace, which differs from one process to the next, "
        "is not counted as kernel time"
    )


@contextlib.contextmanager
def timed(into: dict[str, float], step: str) -> Iterator[None]:
    """Add the seconds the block takes to ``into[step]`` (also when it raises)."""
    t0 = time.monotonic()
    try:
        yield
    finally:
        into[step] = into.get(step, 0.0) + time.monotonic() - t0


class _Source:
    """A worker as a block source for the protocol."""

    def __init__(self, client: WorkerClient, on_block: Callable[[], None]) -> None:
        self.client = client
        self.on_block = on_block

    def block(self) -> Any:
        b = self.client.block()
        self.on_block()
        return b


class PairRunner:
    def __init__(
        self,
        base: WorkerClient,
        head: WorkerClient,
        options: RunnerOptions,
        *,
        gpu_index: int | None = None,
        family_size: int = 1,
        crossed: tuple[WorkerClient, WorkerClient] | None = None,
        warmed_early: Callable[..., bool] | None = None,  # called with no arguments
        execution: int = 0,
        modes: Mapping[Any, str] | None = None,
        tuned: Collection[Any] = (),
    ) -> None:
        """``warmed_early``: called once the workers answered, ends the GPU's early warm-up
        (``checks.sweep.warmer``) if it still runs and says whether it burnt; then the workers
        burn only if they read the clock down. ``execution``: the sweep's pass these (fresh)
        workers measure, which their rounds carry. ``modes``: by case key, the timing mode an
        earlier pass used, which this one keeps (a later pass's estimate can take a one-time
        cost for the kernel's time: fla's cross entropy was timed eagerly in one pass of four,
        and read 1.59 there). ``tuned``: the case keys whose autotuners an earlier pass saw
        pick: their base checks first and head's autotuners are fixed to base's picks where
        head's kernel and configs are base's own (identical code then compares one config, not
        two autotuners' luck: torchao's fp8 casts, each run picking among near-tied block sizes,
        read INCONCLUSIVE in 5 of 12 identical-code passes otherwise)."""
        if options.protocol.crossover != (crossed is not None):
            raise ValueError("crossover needs a second (base, head) pair, and only crossover")
        self.base, self.head = base, head
        self.crossed = crossed
        self.warmed_early = warmed_early
        self.options = options
        self.gpu_index = gpu_index
        self.execution = execution
        self.modes = dict(modes or {})
        self.tuned = set(tuned)
        self.family_size = family_size  # cases in the sweep: each gets alpha / family_size
        self.env: EnvFingerprint | None = None
        self.ceilings: Ceilings | None = None
        self.notes: list[str] = []
        self.startup_s: dict[str, float] = {}  # seconds per start-up step
        self.start_marks_s: dict[str, float] = {}  # inside the start (``start_all``)
        self._last_active = 0.0
        self._env_raw: dict[str, Any] = {}  # the fingerprint as JSON: the ceilings cache's key
        # the next case's check, made during the last one's recheck: the case, the pair that
        # checked it, each worker's answer or failure, and the seconds it ran past the recheck
        # (the next case's time, not the rechecked one's: ``measure``)
        self._ahead: tuple[Case, tuple[WorkerClient, WorkerClient], list[Any], float] | None = None
        # by case key, what its check tells the result: the sides whose check answered
        # (``checked``) and what each recorded it launched (``base_launches``, ...)
        self._from_check: dict[Any, dict[str, Any]] = {}
        # the (bench entry, side) and (case key, side) pairs a launch record was made of in this
        # execution: a bench entry's first record went through the profiler where it would
        self._recorded: set[tuple[Any, str]] = set()
        # by case key, the parts of its check's time the workers told (``check_parts``)
        self._check_parts: dict[Any, dict[str, float]] = {}
        # each side's checkout's sources, which tell its own kernels from others' in a record
        self._sources: dict[str, Sources] = {}

    @property
    def arms(self) -> list[tuple[WorkerClient, WorkerClient]]:
        return [(self.base, self.head)] + ([self.crossed] if self.crossed else [])

    @property
    def workers(self) -> list[WorkerClient]:
        """Every worker, each pair in its slot order (slot 1 first)."""
        out = [self.base, self.head]
        if self.crossed:
            out += [self.crossed[1], self.crossed[0]]
        return out

    # ---------------------------------------------------------------------------------- set-up

    def start(self) -> None:
        steps = self.startup_s
        with timed(steps, "start"):
            self.start_marks_s = start_all(self.workers)
        early = self.warmed_early() if self.warmed_early is not None else False
        with timed(steps, "env"):
            env = self.base.env_info()
        self.env = env.model_copy(update={"gpu_index": self.gpu_index})
        self._env_raw = env.model_dump(exclude_none=True, exclude={"gpu_index"})
        if self.options.measure_ceilings:
            with timed(steps, "ceilings"):
                self._ceilings(cached_only=True)
        if self.options.device != "cpu":
            o = self.options
            # Every worker warms the GPU, side by side: no slot is the one that ran the warm-up
            # (after an early warm-up that had the clock up, each only reads the clock).
            with timed(steps, "warmup"):
                answers = in_parallel(
                    [
                        lambda w=w: w.warmup(
                            min_s=o.warmup_min_s, max_s=o.warmup_max_s, unless_up=early
                        )
                        for w in self.workers
                    ]
                )
            w = answers[0]
            if not w.reached:
                self.notes.append(
                    f"GPU {self.gpu_index}: clock did not settle during {w.seconds:.1f} s of warm-up "
                    f"(last {w.sm_clock_mhz} MHz)"
                )
            self._last_active = time.monotonic()

    def _ceilings_dir(self) -> Path:
        if self.options.ceilings_cache_dir:
            return Path(self.options.ceilings_cache_dir)
        return cache_root()

    def _ceilings(self, *, cached_only: bool) -> None:
        """The device's ceilings from the cache; with ``cached_only`` false, measured where the
        cache has none. Measuring runs a large copy and matmul in the base worker, which leaves
        that one process with a history the others lack (its allocator's pools and thresholds,
        the math library's workspace): identical code then read 1.33 times slower in the head
        on a CPU. So ``start`` only reads the cache and ``measure_ceilings`` (after the last
        case) measures what it lacked."""
        if self.ceilings is not None or not self.options.measure_ceilings:
            return
        env = self._env_raw
        cached = ceilings_cache.load_cached(self._ceilings_dir(), env)
        if cached is None and cached_only:
            return
        try:
            data, was_cached = (cached, True) if cached else (self.base.ceilings(), False)
        except WorkerFailure as f:  # after the last case: nothing is left to restart it for
            self.notes.append(f"ceilings not measured on GPU {self.gpu_index}: {f.message}")
            return
        if not was_cached:
            ceilings_cache.store_cached(self._ceilings_dir(), env, data)
        fields = Ceilings.model_fields
        self.ceilings = Ceilings(
            **{k: v for k, v in data.items() if k in fields and k not in ("device_uuid", "cached")},
            device_uuid=env.get("device_uuid"),
            cached=was_cached,
        )

    def measure_ceilings(self) -> None:
        """After the last case: measure the ceilings the cache did not have (see ``_ceilings``),
        unless the base worker is gone (a failure that ended the sweep on this GPU)."""
        if self.base.alive():
            with timed(self.startup_s, "ceilings"):
                self._ceilings(cached_only=False)

    def close(self) -> None:
        # nothing is left to ask: the workers' exits (their GPU contexts' teardown) are not
        # waited for here
        in_parallel([lambda w=w: w.close(wait=False) for w in self.workers])

    # ------------------------------------------------------------------------------------ cases

    def measure(self, case: Case, following: Case | None = None) -> ShapeResult:
        """``case`` measured. ``following``: the case the sweep measures next, checked during this
        one's recheck (with crossover): its ``measure`` then takes that check."""
        t0 = time.monotonic()
        seen: list[Round] = []
        info: _Sides = {}
        steps: dict[str, float] = {}
        if self._ahead is not None and self._ahead[0] is case:
            # its check ran beside the last case's recheck: what it took past that recheck is
            # this case's (a first call that compiled for a minute is this case's check, not the
            # last case's set-up)
            steps["check"] = self._ahead[3]
            t0 -= self._ahead[3]
        common: dict[str, Any] = {
            "kernel": case.kernel,
            "shape": case.dims,
            "dtype": case.dtype,
            "category": case.category,
            "weight": case.weight,
            "tolerance": case.tolerance,
            "gpu_index": self.gpu_index,
            "device_uuid": self.env.device_uuid if self.env else None,
        }
        try:
            result = self._measure(case, seen, info, common, t0, steps, following)
        except WorkerFailure as f:
            self._recover(f)
            raw = CaseRun(rounds=tuple(seen), stop_reason="failed") if seen else None
            result = ShapeResult(
                **common,
                **info,
                status=STATUS_OF_KIND.get(f.kind, "error"),
                failed_side="both" if f.both else (f.side or None),
                message=f.message,
                log_tail=f.log_tail,
                raw=raw,
                gpu_seconds=time.monotonic() - t0,
            )
        steps.update(self._check_parts.pop(case.key, {}))
        result = result.model_copy(
            update={
                "phase_s": {k: round(v, 4) for k, v in steps.items()},
                **self._from_check.pop(case.key, {}),  # a side that failed has no record
            }
        )
        return result

    def _recover(self, f: WorkerFailure) -> None:
        named = [w for w in self.workers if w.spec.name == f.worker]
        failed = named[0] if named else (self.base if f.side == "base" else self.head)
        if f.needs_restart or not failed.alive():
            failed.restart()
        else:
            self._release(failed)
        for other in self.workers:
            if other is not failed:
                self._release(other)

    @staticmethod
    def _release(client: WorkerClient) -> None:
        try:
            client.finish(recheck=False)
        except WorkerFailure:
            client.restart()

    def _measure(
        self,
        case: Case,
        seen: list[Round],
        info: _Sides,
        common: dict[str, Any],
        t0: float,
        steps: dict[str, float],
        following: Case | None = None,
    ) -> ShapeResult:
        o = self.options
        cfg = o.protocol
        entries = {"base": case.base_entries, "head": case.head_entries}
        # Correctness first, on fresh inputs and before the timing copies take memory. The first
        # pair checks, compiling (and autotuning) side by side; the crossover's second pair runs
        # the same two checkouts and shares each side's Triton cache (autotuner picks included),
        # so its prepare finds the kernels compiled and both workers of a side time one config.
        # Its outputs are still checked after the timing (finish).
        with timed(steps, "check"):
            ahead, self._ahead = self._ahead, None
            if ahead is not None and ahead[0] is case:
                cb, ch = self._check(case, ahead[1], ahead[2])
            else:
                cb, ch = self._check(case, (self.base, self.head))
        side: FailedSide | None
        problem = _correctness_problem(cb, ch, compare_sides=o.compare_sides)
        if problem:
            side, message = problem
            return ShapeResult(
                **common,
                status="wrong_result",
                failed_side=side,
                message=message,
                gpu_seconds=time.monotonic() - t0,
            )
        # every worker of a side times the config that side's check picked
        pins = {"base": _raw_picks(cb), "head": _raw_picks(ch)}
        with timed(steps, "prepare"):
            preps = in_parallel(
                [
                    lambda w=w: w.prepare(
                        entries[w.spec.side],
                        case.dims,
                        case.dtype,
                        seed=cfg.seed,
                        estimate=False,
                        pins=pins[w.spec.side],
                        max_copies=o.max_copies,
                        max_copy_bytes=o.max_copy_bytes,
                    )
                    for w in self._arm_order()
                ]
            )
        compiled = max(p.compile_s for p in preps)
        if compiled > 0:  # a worker's first call of the case: inside the set-up, said apart
            steps["prepare_compile"] = compiled
        # One at a time, so nothing else runs; the first pair's estimates size every worker's
        # blocks (``_configure``), so the second pair's are not asked for.
        with timed(steps, "estimate"):
            eb, eh = (w.estimate() for w in (self.base, self.head))
        info["base"] = _side_info(preps[0], eb, cb)
        info["head"] = _side_info(preps[1], eh, ch)
        mode = self.modes.get(case.key) or choose_mode(eb.est_us, eh.est_us, o.device, cfg)
        notes: list[str] = []
        est = max(eb.est_us, eh.est_us)
        copies = preps[0].copies
        host = max(eb.host_us or 0.0, eh.host_us or 0.0)
        with timed(steps, "configure"):
            try:
                configs = self._configure(mode, cfg.block_ms, est, copies)
            except WorkerFailure as f:
                if f.kind not in ("graph_capture", "kernel_timing"):
                    raise
                mode = "eager" if mode == "kernels" else "eager-noflush"
                how = "eagerly" if mode == "eager" else "eagerly without L2 flush"
                notes.append(f"{f.side}: {f.message}; timed {how} instead")
                configs = self._configure(mode, cfg.block_ms, est, copies)
            missed = graph_missed(eb.est_us, configs[0].graph_call_us)
            if mode == "graph" and missed:
                notes.append(missed)
                mode = "eager" if cfg.flush_l2 else "eager-noflush"
                configs = self._configure(mode, cfg.block_ms, est, copies)
            paced = host_paced(host, est)
            if mode in ("eager", "eager-noflush") and paced and o.device != "cpu":
                try:
                    configs = self._configure(
                        mode.replace("eager", "kernels"), cfg.block_ms, est, copies
                    )
                    mode = mode.replace("eager", "kernels")
                    notes.append(paced)
                except WorkerFailure as f:
                    if f.kind != "kernel_timing":
                        raise
                    notes.append(f"{f.side}: {f.message}; timed eagerly by events instead")
                    configs = self._configure(mode, cfg.block_ms, est, copies)
        kb, kh = configs[0], configs[1]
        info["base"] = info["base"].model_copy(update={"calls_per_block": kb.calls_per_block})
        info["head"] = info["head"].model_copy(update={"calls_per_block": kh.calls_per_block})
        with timed(steps, "rewarm"):
            self._rewarm()
        alpha = cfg.alpha / max(1, self.family_size)
        crossed = (
            (_Source(self.crossed[0], self._touch), _Source(self.crossed[1], self._touch))
            if self.crossed
            else None
        )
        # what the first pass's records show decides, once, whether it may decide the case alone
        records = self._from_check.get(case.key, {})
        one_pass = (
            one_pass_reason(
                mode,
                (records.get("base_launches"), info["base"].configs_picked),
                (records.get("head_launches"), info["head"].configs_picked),
            )
            if self.execution == 0
            else ""
        )
        with timed(steps, "rounds"):
            run, decision = measure_case(
                _Source(self.base, self._touch),
                _Source(self.head, self._touch),
                cfg,
                tolerance=case.tolerance,
                alpha=alpha,
                crossed=crossed,
                on_round=seen.append,
                execution=self.execution,
                one_pass=one_pass,
            )
        offered = _offers(cb)
        run = run.model_copy(
            update={
                "picks": (
                    ExecutionPicks(
                        execution=self.execution,
                        base=info["base"].configs_picked,
                        head=info["head"].configs_picked,
                        same_offer=bool(offered) and offered == _offers(ch),
                        head_pinned=any(p.pinned for p in pins["head"]),
                    ),
                )
            }
        )
        with timed(steps, "finish"):
            if self.crossed is not None and following is not None:
                rechecked, finished = self._finish_and_check(following)
            else:
                rechecked = self._arm_order()
                finished = in_parallel([lambda w=w: w.finish(recheck=o.recheck) for w in rechecked])
        handed_on = self._ahead[3] if self._ahead is not None else 0.0  # the next case's
        steps["finish"] -= handed_on
        waited = [f.lock_not_taken_s for f in finished if f.lock_not_taken_s]
        if waited:
            notes.append(
                f"rechecked without the GPU lock: the next case's check held it past {waited[0]:g} s"
            )
        status: Status
        status, side, message = "ok", None, ""
        bad = sorted(
            {w.spec.side for w, f in zip(rechecked, finished, strict=True) if not f.correct}
        )
        if bad:
            status, side = "wrong_result", bad[0] if len(bad) == 1 else "both"
            first = next(f for f in finished if not f.correct)
            message = "output changed after timing: " + first.message
        return ShapeResult(
            **common,
            **info,
            status=status,
            failed_side=side,
            message=message,
            mode=mode,
            raw=run,
            case_verdict=decision.verdict if status == "ok" else None,
            notes=tuple(notes),
            gpu_seconds=time.monotonic() - t0 - handed_on,
        )

    def _check_one(
        self, w: WorkerClient, case: Case, pins: tuple[contract.Pick, ...] = ()
    ) -> contract.CheckReply | WorkerFailure:
        entries = case.base_entries if w.spec.side == "base" else case.head_entries
        try:
            return w.check(
                entries,
                case.dims,
                case.dtype,
                seed=self.options.check_seed,
                pins=pins,
                launches=self._recorder(case) if self._records(w) else None,
            )
        except WorkerFailure as f:
            return f

    def _records(self, w: WorkerClient) -> bool:
        """Whether ``w``'s checks record what a call launched (``launches``): in the first
        execution, the first pair's workers only. A GPU worker's first record through the
        profiler (a case whose kernel has CUDA or C++ files: ``Case.launches``) starts it, which
        costs seconds once per process (about 3 s on the H200): one pair pays it, not both
        (``_checking_pair`` gives it every case of the first execution)."""
        return (
            self.options.record_launches
            and self.execution == 0
            and (w is self.base or w is self.head)
        )

    def _needs_record(self, case: Case) -> bool:
        """Whether ``case`` still lacks a side's launch record here: each case gets one in the
        first execution (what one call launched, whether those kernels hold atomics and what
        it allocated can differ by shape: a split chosen for small inputs)."""
        return self._records(self.base) and any(
            (case.key, side) not in self._recorded for side in ("base", "head")
        )

    def _recorder(self, case: Case) -> LaunchRecorder:
        """How ``case``'s record is made: through the profiler (``Case.launches``) for a bench
        entry's first case, the record of every kernel a CUDA or C++ entry launches; Triton's
        launches alone for its other shapes, which costs nothing (a profiled call costs more)."""
        profiled = any((case.kernel, side) in self._recorded for side in ("base", "head"))
        return "triton" if profiled else case.launches

    def _checks_pinned(self, case: Case, pair: tuple[WorkerClient, WorkerClient]) -> list[Any]:
        """Base's check, then head's with its autotuners fixed to base's picks (``tuned``)."""
        first = self._check_one(pair[0], case)
        if isinstance(first, WorkerFailure):
            return [first, self._check_one(pair[1], case)]
        return [first, self._check_one(pair[1], case, _raw_picks(first))]

    def _checks(self, case: Case, pair: tuple[WorkerClient, WorkerClient]) -> list[Any]:
        """Both sides' check on ``pair`` side by side: each answer or failure. When both time
        out, one hung in its first call holding the GPU lock and the other waited for it
        (``checks.worker.exclusive``): the hung one's failure says so and the waiter's names the
        side it waited on (``waited_on``). Which one held it is read from the lock file as each
        is killed (``held_lock_at``): the waiter may take the lock once the hung one is killed,
        and let it go (emptying the file) or be killed holding it before its own time runs out;
        the one killed holding it first hung."""
        if case.key in self.tuned:
            return self._checks_pinned(case, pair)
        got: list[Any] = in_parallel([lambda w=w: self._check_one(w, case) for w in pair])
        timed_out = all(isinstance(a, WorkerFailure) and a.kind == "timeout" for a in got)
        held = sorted(
            (a.held_lock_at, i) for i, a in enumerate(got) if timed_out and a.held_lock_at
        )
        if held:
            hung = held[0][1]
            waiter = got[1 - hung]
            waiter.waited_on = pair[hung].spec.side
            got[hung].message += (
                f" (it held the GPU lock; the {waiter.side} worker waited for it, "
                "and timed out too)"
            )
        return got

    def _check(
        self,
        case: Case,
        pair: tuple[WorkerClient, WorkerClient],
        got: list[Any] | None = None,
    ) -> list[contract.CheckReply]:
        """Both sides' check on ``pair`` (base's worker, head's), side by side, or their answers
        ``got`` when the check ran already (``_checks``). A fault that ends one GPU context can
        end the other side's too while both run (an illegal address in head's kernel took
        base's context with it on the H200): when both lose their context at once, each side is
        checked again alone on a fresh worker, so the failure names the side whose own code
        fails. A side that timed out waiting for the other's hung first call is not the one
        blamed."""
        if got is None:
            got = self._checks(case, pair)
        lost = [a for a in got if isinstance(a, WorkerFailure) and a.kind in CONTEXT_LOST]
        if len(lost) == 2:
            got = []
            for w in pair:  # one at a time: nothing else runs on the GPU meanwhile
                w.restart()
                got.append(self._check_one(w, case))
        answered = [(w.spec.side, a) for w, a in zip(pair, got, strict=True)]
        replies = [(side, a) for side, a in answered if isinstance(a, contract.CheckReply)]
        self._from_check[case.key] = {
            "checked": tuple(sorted(side for side, _ in replies)),
            **{
                f"{side}_launches": self._owned(
                    side, CaseLaunches.model_validate(contract.as_json(a.launched))
                )
                for side, a in replies
                if a.launched is not None
            },
        }
        self._recorded |= {
            key
            for side, a in replies
            if a.launched is not None
            for key in ((case.kernel, side), (case.key, side))
        }
        self._check_parts[case.key] = check_parts(
            [a for a in got if isinstance(a, contract.CheckReply)]
        )
        failed = [a for a in got if isinstance(a, WorkerFailure)]
        if failed:
            first = min(failed, key=lambda f: bool(f.waited_on))
            # the other side's own failure, or its wrong answer, makes the case both sides':
            # a failure laid on the base alone says the head ran there
            first.both = not first.waited_on and any(
                (isinstance(a, WorkerFailure) and not a.waited_on)
                or (isinstance(a, contract.CheckReply) and not a.correct)
                for a in got
                if a is not first
            )
            raise first
        return got

    def _owned(self, side: str, record: CaseLaunches) -> CaseLaunches:
        """``record`` with each non-Triton kernel marked as the side's checkout's own or not
        (``own_kernels``): its sources read once per side, where a record first needs them."""
        if side not in self._sources:
            self._sources[side] = Sources((self.base if side == "base" else self.head).spec.root)
        sources = self._sources[side]
        kernels = tuple(
            k if k.triton else k.model_copy(update={"own": sources.spells(k.name)})
            for k in record.kernels
        )
        return record.model_copy(update={"kernels": kernels})

    def _finish_and_check(
        self, following: Case
    ) -> tuple[list[WorkerClient], list[contract.FinishReply]]:
        """One pair, drawn at random (``_checking_pair``), rechecks and releases what it timed
        while the other checks ``following`` (a check releases first); that check is kept for
        ``following``'s ``measure``. The rechecking workers and their answers. A recheck that
        failed fails the case, also when the next case's check failed beside it (a fault of that
        check may have taken the recheck's GPU context with it): the message then says so, and
        that check's own failure is the next case's (``_check``)."""
        k = self._checking_pair(following)
        rechecking, checking = self.arms[1 - k], self.arms[k]
        recheck = self.options.recheck

        def finish(w: WorkerClient) -> contract.FinishReply | WorkerFailure:
            try:
                return w.finish(recheck=recheck, alone=True)
            except WorkerFailure as f:
                return f

        own: list[float] = []  # each recheck's seconds, less its wait for the GPU lock
        t0 = time.monotonic()

        def rechecked(w: WorkerClient) -> contract.FinishReply | WorkerFailure:
            answer = finish(w)
            waited = 0.0 if isinstance(answer, WorkerFailure) else answer.steps_s.get("lock_wait")
            own.append(time.monotonic() - t0 - (waited or 0.0))
            return answer

        answers: list[Any] = in_parallel(
            [lambda w=w: rechecked(w) for w in rechecking]
            + [lambda: self._checks(following, checking)]
        )
        finished, checked = answers[:2], answers[2]
        failed = [a for a in finished if isinstance(a, WorkerFailure)]
        # A failed recheck fails this case with all its time. Otherwise the time beyond the
        # rechecks' own work is the next case's: its check ran on, or held the GPU lock the
        # rechecks waited for (a first call compiling or autotuning).
        past = 0.0 if failed else max(0.0, time.monotonic() - t0 - max(own))
        self._ahead = (following, checking, checked, past)
        if failed:
            f = failed[0]
            beside = [a for a in checked if isinstance(a, WorkerFailure)]
            if beside and f.kind in CONTEXT_LOST:
                f.message += (
                    f" (the next case's check failed at the same time: {beside[0].message}; "
                    "its fault may have ended this worker's GPU context)"
                )
            raise f
        return list(rechecking), finished

    def _checking_pair(self, following: Case) -> int:
        """Which arm checks ``following`` beside the recheck: drawn at random, except that the
        first arm checks a case that has no launch record yet (``_needs_record``: every case of
        the first execution), as only its workers record. No bias: a pair checks both sides
        (what a check leaves in its processes is the arm's, alike at base and head), and
        crossover's arms put each side in each slot, which cancels a slot's effect; only those
        cases' draw is fixed."""
        return 0 if self._needs_record(following) else secrets.randbelow(2)

    def _arm_order(self) -> list[WorkerClient]:
        """base, head of each arm in turn."""
        return [w for pair in self.arms for w in pair]

    def _configure(
        self, mode: str, block_ms: float, est_us: float, copies: int
    ) -> list[contract.ConfigureReply]:
        """Every worker times blocks of one structure: the first is sized from the slower
        side's estimate, the others take its calls (graph size and replays, or eager calls), so
        no side's block differs in how many launches or replays it spreads over.

        A graph's size follows from the estimate and the first worker's input ``copies``, so
        every worker captures at once (capturing and instantiating is the most of configure);
        then the first times its graph alone for the replays that make a block, and the others
        take them."""
        pre = self.options.protocol.graph_preroll
        first, *rest = self._arm_order()
        if mode == "graph" and rest:
            like = contract.Like(graph_calls=graph_calls(block_ms, est_us, copies))
            captured = in_parallel(
                [
                    lambda w=w: w.configure(
                        mode, block_ms, est_us=est_us, like=like, preroll=pre, time_replays=False
                    )
                    for w in (first, *rest)
                ]
            )
            sized = first.replays(block_ms=block_ms)
            took = in_parallel([lambda w=w: w.replays(replays=sized.replays) for w in rest])
            return [c.with_replays(r) for c, r in zip(captured, [sized, *took], strict=True)]
        lead = first.configure(mode, block_ms, est_us=est_us, preroll=pre)
        like = lead.like()
        return [
            lead,
            *in_parallel(
                [lambda w=w: w.configure(mode, block_ms, like=like, preroll=pre) for w in rest]
            ),
        ]

    def _touch(self) -> None:
        self._last_active = time.monotonic()

    def _rewarm(self) -> None:
        """After an idle gap (a check that compiled or built for seconds), bring the clock up
        again before the rounds; not when it reads up already (a check whose autotuner's
        benchmarks ran to its end: 0.15 s before each case of the fixture's matmul on the
        H200)."""
        if self.options.device == "cpu":
            return
        if time.monotonic() - self._last_active > self.options.rewarm_after_idle_s:
            self.base.warmup(min_s=0.1, max_s=2.0, unless_up=True)
            self._touch()


# parts of a check's time, each from the steps its workers time (``CheckReply.steps_s``)
CHECK_PARTS = {
    "compile": ("first_call_compile", "first_call_load"),  # Triton compiling and loading
    "launch_record": ("launches",),  # one more call under the profiler (first execution)
}


def check_parts(replies: Sequence[contract.CheckReply]) -> dict[str, float]:
    """Of a check's time (both sides side by side), the slower side's seconds in each of
    ``CHECK_PARTS``, where any were spent: phases of the case inside its ``check``."""
    parts: dict[str, float] = {}
    for part, steps in CHECK_PARTS.items():
        spent = max((sum(r.steps_s.get(s, 0.0) for s in steps) for r in replies), default=0.0)
        if spent > 0:
            parts[part] = spent
    return parts


def _side_info(
    prep: contract.PrepareReply, est: contract.EstimateReply, check: contract.CheckReply
) -> SideInfo:
    return SideInfo(
        entry=prep.entry,
        est_us=est.est_us,
        host_us=est.host_us,
        bytes_moved=prep.bytes_moved,
        flops=prep.flops,
        copies=prep.copies,
        footprint_bytes=prep.footprint_bytes,
        prepare_s=prep.prepare_s,
        max_abs_err=check.max_abs_err,
        configs_picked=_picks(check),
    )


def _picks(check: contract.CheckReply) -> tuple[str, ...]:
    """The worker's autotuner picks as labels."""
    labels = [picked_label(contract.as_json(p)) for p in check.configs_picked[:MAX_PICKS]]
    return tuple(label for label in labels if label)


def _raw_picks(check: contract.CheckReply) -> tuple[contract.Pick, ...]:
    """The worker's autotuner picks as it sent them, to pin others to."""
    return check.configs_picked[:MAX_PICKS]


def _offers(check: contract.CheckReply) -> tuple[tuple[str, str], ...]:
    """Each autotuner's kernel and the digest of the configs it chose from."""
    picks = check.configs_picked[:MAX_PICKS]
    return tuple(sorted((p.function[:64], p.offered[:64]) for p in picks))


def _loosest(*given: float | None) -> float | None:
    """The larger of the two sides' own tolerances; None when neither gives one."""
    values = [float(x) for x in given if x is not None]
    return max(values) if values else None


def _correctness_problem(
    cb: contract.CheckReply, ch: contract.CheckReply, *, compare_sides: bool
) -> tuple[FailedSide, str] | None:
    sides: tuple[tuple[FailedSide, contract.CheckReply], ...] = (("base", cb), ("head", ch))
    wrong = [(s, c) for s, c in sides if not c.correct]
    if len(wrong) == 2:
        return "both", f"base: {cb.message}; head: {ch.message}"
    if wrong:
        return wrong[0][0], f"{wrong[0][0]} differs from the reference: {wrong[0][1].message}"
    if not compare_sides:
        return None
    both_ref = cb.has_reference and ch.has_reference
    scale = 2.0 if both_ref else 1.0
    diff = compare_digests(
        contract.as_json(cb.digest),
        contract.as_json(ch.digest),
        atol=_loosest(cb.atol, ch.atol),
        rtol=_loosest(cb.rtol, ch.rtol),
        scale=scale,
    )
    return ("head", f"head differs from base: {diff}") if diff else None
