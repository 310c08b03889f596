"""A shape sweep: every case measured base against head, one worker pair per GPU, cases split
between GPUs (base and head of a case always on the same GPU), results appended to the sweep's
journal as they come (``checks.sweep.models.Journal``).

``run_sweep`` is the entry point; it returns a ``SweepResult`` (see ``checks.sweep.models``)
whose verdicts ``checks.sweep.summary.recompute`` reproduces from the raw blocks. Stopped from
outside (``bot.cli``'s SIGINT and SIGTERM), it returns what its passes finished, the other cases
with the status ``stopped`` (``SweepResult.stopped`` names the signal).
"""

from __future__ import annotations

import datetime as dt
import gc
import math
import os
import shutil
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.outputs import plural
from checks.checkout import Checkout, prepare
from checks.procs.stopping import POLL_S, STOPPING, stop_words, stopped_by
from checks.sweep.gpus import gpu_target_name, visible_gpus
from checks.sweep.models import (
    Ceilings,
    EnvFingerprint,
    Journal,
    ShapeResult,
    Status,
    SweepResult,
)
from checks.sweep.pair_runner import WARMUP_MIN_S, PairRunner, RunnerOptions
from checks.sweep.precompile import Precompile, SideJob, compile_jobs
from checks.sweep.protocol import ProtocolConfig, default_protocol
from checks.sweep.shapes import Case, fit_budget
from checks.sweep.summary import (
    closing_reason,
    combine,
    decide_case,
    ended,
    finalize,
    merge,
    needs_another,
    recompute,
    stop_note,
)
from checks.sweep.warmer import Warmer, start_warmer
from checks.sweep.workers import (
    Side,
    Timeouts,
    WorkerClient,
    WorkerFailure,
    WorkerSpec,
    context_marks,
    poll_ms_for,
    seed_cache,
)
from checks.sweep.zygote import Zygote, bytecode_note, start_zygote
from checks.worker.timing import MAX_COPIES
from checks.worker_env import default_memory_bytes

Progress = Callable[[str], None]
SIDES: tuple[Side, Side] = ("base", "head")


class SweepOptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    device: Literal["cpu", "cuda"] = "cuda"
    protocol: ProtocolConfig = Field(default_factory=lambda: default_protocol("cuda"))
    timeouts: Timeouts = Timeouts()
    gpus: tuple[str, ...] | None = None  # physical GPU ids; None: every visible GPU
    max_gpu_seconds: float = 900.0
    max_copies: int = MAX_COPIES
    max_copy_bytes: int = 4 * 2**30
    recheck: bool = True
    measure_ceilings: bool = True
    ceilings_cache_dir: str | None = None
    warmup_min_s: float = WARMUP_MIN_S
    warmup_max_s: float = 10.0
    checkout: Checkout = Checkout()  # python_path and the [setup] build step, from the policy
    worker_memory_bytes: int | None = None  # each worker's cap; None: default_memory_bytes()
    pythons: tuple[str, str] | None = None  # base's and head's interpreters (own toolchains)
    # on a GPU: compile each side's Triton kernels ahead, beside the workers (precompile.py)
    precompile: bool = True
    # workers forked from one process that imported torch and Triton (checks.sweep.zygote), on
    # the CPU too, so that CI runs the GPU's path; there it costs nothing: the 186 tests of the
    # 18 integration files that run the engine took 139-145 CPU-s with it, 147-156 without
    # (2 cores under a load of 7-15, wall 220-262 s against 188-297 s)
    zygote: bool = True


def _ahead(
    gpu: str | None, cases: Sequence[Case], specs: Sequence[WorkerSpec], notes: list[str]
) -> list[SideJob]:
    """What compiling ahead does for one GPU's cases: one job per side, into that side's cache
    (a note instead when the GPU's compiler target cannot be told)."""
    target = gpu_target_name(gpu)
    if target is None:
        notes.append(f"not compiled ahead on GPU {gpu}: its compiler target could not be read")
        return []
    return [
        SideJob(
            side=s.side,
            label=s.side_key,
            root=s.root,
            python=s.python,
            python_path=s.python_path,
            cache_dir=s.triton_cache,
            target=target,
            cases=tuple(cases),
        )
        for s in specs
    ]


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


class _Recorder:
    """Collects results from the runner threads, one case's passes joined into one result
    (``checks.sweep.summary.combine``); appends each to the sweep's journal at once, and each
    worker pair's environment once it started."""

    def __init__(
        self,
        total: int,
        journal: Journal | None,
        progress: Progress | None,
        *,
        started: float | None = None,
    ) -> None:
        self.total = total
        self.results: dict[tuple, ShapeResult] = {}
        self.journal = journal
        self.progress = progress
        self.lock = threading.Lock()
        self.gpu_seconds = 0.0
        self.started = time.monotonic() if started is None else started
        self.first_verdict_s: float | None = None
        self.execution = 0
        self.done = 0  # cases this pass recorded
        self.closed = False  # the sweep's results are taken: later results are not theirs

    def next_pass(self, execution: int, total: int) -> None:
        self.execution, self.total, self.done = execution, total, 0

    def add(self, result: ShapeResult) -> None:
        with self.lock:
            if self.closed:
                return
            self.gpu_seconds += result.gpu_seconds
            joined = combine(self.results.get(result.key), result, self.execution)
            self.results[result.key] = joined
            self.done += 1
            if self.journal is not None:
                self.journal.case(joined)
            if self.progress is not None:
                line = progress_line(self.done, self.total, result)
                if self.execution:
                    line = f"execution {self.execution + 1}: {line}"
                self.progress(line)

    def started_pair(self, env: EnvFingerprint | None) -> None:
        """A worker pair of the first pass started: its environment, journaled."""
        if env is not None and self.journal is not None and self.execution == 0:
            self.journal.env(env)

    def final(self) -> dict[tuple, ShapeResult]:
        """The sweep's results: what is recorded now, the journal closed with them. A runner
        thread a stop did not wait for adds nothing after this, to them or to the journal."""
        with self.lock:
            self.closed = True
            if self.journal is not None:
                self.journal.close()
            return dict(self.results)

    def decided(self, key: tuple, protocol: ProtocolConfig, family_size: int) -> None:
        """A case's test needs no more passes: its verdict, said once."""
        r = self.results[key]
        if r.status != "ok":
            return
        if self.first_verdict_s is None:
            self.first_verdict_s = time.monotonic() - self.started
        if self.progress is not None:
            self.progress(decided_line(decide_case(r, protocol, family_size)))


def _label(r: ShapeResult) -> str:
    return f"{r.kernel} {r.dtype} {'x'.join(map(str, r.shape))}"


def progress_line(done: int, total: int, r: ShapeResult) -> str:
    """One case measured in one pass: what that execution read (the verdict comes once the
    case's passes are done: ``decided_line``)."""
    head = f"[{done:>{len(str(total))}}/{total}] {_label(r)}"
    if r.status != "ok":
        side = f" ({r.failed_side})" if r.failed_side else ""
        return f"{head}: {r.status.upper()}{side} {r.message[:160]}"
    if r.raw is None:
        return f"{head}: measured"
    logs = r.raw.kept_logs()
    ratio = math.exp(sum(logs) / len(logs)) if logs else float("nan")
    dropped = sum(1 for x in r.raw.rounds if x.dropped)
    return (
        f"{head}: head/base {ratio:.3f} ({plural(len(logs), 'round')}"
        f"{f', {dropped} dropped' if dropped else ''}, {r.mode}, {r.gpu_seconds:.1f} s)"
    )


def decided_line(r: ShapeResult) -> str:
    """A case whose test over executions is done: its verdict (before Holm across the sweep)."""
    if r.status != "ok" or r.ratio is None:
        return f"{_label(r)}: {r.status.upper()}"
    interval = f" [{r.ci_low:.3f}, {r.ci_high:.3f}]" if r.ci_low and r.ci_high else ""
    return (
        f"{_label(r)}: {r.case_verdict} head/base {r.ratio:.3f}{interval} over "
        f"{plural(r.executions, 'execution')}"
    )


def _tuned(r: ShapeResult) -> bool:
    """Whether both sides' autotuners picked in an earlier pass of the case: later passes check
    base first and fix head's autotuners to its picks where the kernels are alike."""
    return bool(r.base and r.head and r.base.configs_picked and r.head.configs_picked)


def _skipped(
    case: Case, message: str, gpu_index: int | None, status: Status = "skipped"
) -> ShapeResult:
    return ShapeResult(
        kernel=case.kernel,
        shape=case.dims,
        dtype=case.dtype,
        category=case.category,
        weight=case.weight,
        tolerance=case.tolerance,
        status=status,
        message=message,
        gpu_index=gpu_index,
    )


def _run_pair(
    runner: PairRunner,
    cases: Sequence[Case],
    recorder: _Recorder,
    budget_s: float,
    out: dict[str, object],
) -> None:
    """``cases`` measured on ``runner``'s GPU, each result recorded as it comes. A fault of the
    engine's own (an exception that is no worker's failure) ends this GPU's pass, and the cases
    it did not get to are recorded ``skipped`` with it, so that none goes missing from the
    results unsaid (its traceback goes to stderr)."""
    handled = 0  # cases of ``cases`` recorded so far

    def add(result: ShapeResult) -> None:
        nonlocal handled
        recorder.add(result)
        handled += 1

    try:
        _measure_pair(runner, cases, add, recorder, budget_s, out)
    except Exception as exc:
        traceback.print_exc()
        why = (
            f"not measured: the sweep's runner on this GPU failed ({type(exc).__name__}: "
            f"{str(exc)[:300]}), a fault of kernel-review's, not of the kernel; its traceback is "
            "in the command's output: please report it"
        )
        for rest in cases[handled:]:
            recorder.add(_skipped(rest, why, runner.gpu_index))


def _measure_pair(
    runner: PairRunner,
    cases: Sequence[Case],
    add: Callable[[ShapeResult], None],
    recorder: _Recorder,
    budget_s: float,
    out: dict[str, object],
) -> None:
    try:
        runner.start()
    except WorkerFailure as f:
        for case in cases:
            add(_skipped(case, f"worker could not start: {f.message}", runner.gpu_index))
        runner.close()
        return
    out["env"], out["notes"] = runner.env, runner.notes
    recorder.started_pair(runner.env)
    out["startup_s"] = runner.startup_s
    out["start_marks_s"] = runner.start_marks_s
    try:
        for i, case in enumerate(cases):
            if recorder.gpu_seconds >= budget_s:
                for rest in cases[i:]:
                    add(
                        _skipped(
                            rest, f"GPU-seconds budget of {budget_s:g} s spent", runner.gpu_index
                        )
                    )
                break
            try:
                result = runner.measure(case, cases[i + 1] if i + 1 < len(cases) else None)
            except WorkerFailure as f:  # even restarting failed: the rest cannot run here
                if f.kind == "stopped":  # the command is going: nothing more to say
                    break
                add(_skipped(case, f"worker lost: {f.message}", runner.gpu_index))
                for rest in cases[i + 1 :]:
                    add(_skipped(rest, "worker lost on this GPU", runner.gpu_index))
                break
            add(result)
        if not STOPPING.is_set():  # a stopped command measures nothing more
            runner.measure_ceilings()
    finally:
        out["ceilings"] = runner.ceilings
        t_close = time.monotonic()
        runner.close()
        out["wrapup_s"] = {"close": time.monotonic() - t_close}


def _poll_ms(options: SweepOptions, workers: int, runners: int) -> float:
    """How long the workers and the bot poll for the rounds' commands and answers instead of
    sleeping (``workers.poll_ms_for``): on a GPU where the machine's cores allow, else never."""
    if options.device == "cpu":
        return 0.0
    return poll_ms_for(len(os.sched_getaffinity(0)), workers, runners)


def run_sweep(
    cases: Sequence[Case],
    *,
    base_root: Path,
    head_root: Path,
    base_rev: str,
    head_rev: str,
    options: SweepOptions,
    work_dir: Path,
    progress: Progress | None = None,
    partial_path: Path | None = None,
    notes: Sequence[str] = (),
    family_size: int | None = None,
    started: float | None = None,
    zygote: Zygote | None = None,
    warmer: Warmer | None = None,
) -> SweepResult:
    """Measure every case; never raises for a kernel's fault (each case carries its status).
    The policy's build step (``options.checkout``) runs in both checkouts first; a failed build
    raises ``checks.checkout.SetupError``.

    ``family_size`` is the number of cases the false-alarm rate is shared over (Holm); a shard of
    a larger plan passes the plan's total so its verdicts hold for the whole sweep.

    ``started`` is the ``time.monotonic()`` the GPU was taken at (the command's start; default
    now): the all-in cost per verdict and the time to the first verdict count from it.

    ``zygote``: one its caller started earlier (``start_zygote``; the caller closes it); with
    ``options.zygote`` and none given, the sweep starts and closes its own. ``warmer`` likewise
    (``start_warmer``).

    Where the command is stopped (``bot.cli``'s SIGINT or SIGTERM: ``stopped_by``), it returns
    within a second or two what the passes finished, every other case ``stopped``; an interrupt
    that is no such stop unwinds the caller."""
    t_start = time.monotonic() if started is None else started
    startup: dict[str, float] = {"before_sweep": time.monotonic() - t_start}
    started_at = _now()
    family = max(family_size or 0, len(cases))
    protocol = fit_budget(
        options.protocol,
        len(cases) * options.protocol.min_executions,
        options.max_gpu_seconds,
    )
    # On the CPU, ``gpus`` only sets how many worker pairs share the cases.
    gpus: list[str | None] = list(options.gpus or ()) or (
        [None] if options.device == "cpu" else list(visible_gpus()) or [None]
    )
    runner_opts = RunnerOptions(
        device=options.device,
        protocol=protocol,
        max_copies=options.max_copies,
        max_copy_bytes=options.max_copy_bytes,
        recheck=options.recheck,
        measure_ceilings=options.measure_ceilings,
        ceilings_cache_dir=options.ceilings_cache_dir,
        warmup_min_s=options.warmup_min_s,
        warmup_max_s=options.warmup_max_s,
    )
    planned = [_skipped(c, "", None, "stopped") for c in cases]  # as a stop would leave them
    journal = (
        Journal(
            partial_path,
            SweepResult(
                vendor="cpu" if options.device == "cpu" else "nvidia",  # the workers' env says
                timing="cpu" if options.device == "cpu" else "cuda-events",
                base_rev=base_rev,
                head_rev=head_rev,
                protocol=protocol,
                family_size=family,
                cases=tuple(planned),
                started_at=started_at,
                notes=tuple(notes),
            ),
        )
        if partial_path is not None
        else None
    )
    recorder = _Recorder(len(cases), journal, progress, started=t_start)
    base_python, head_python = options.pythons or (sys.executable, sys.executable)
    pythons: dict[str, str] = {"base": base_python, "head": head_python}
    run_notes = list(notes)
    own_zygote = zygote is None and options.zygote
    own_warmer = warmer is None  # on a GPU, its clock brought up while the workers start
    outs: list[dict[str, Any]] = []  # what each GPU's runner thread hands back
    threads: list[threading.Thread] = []
    helpers: Precompile | None = None
    pending = list(cases)
    stop: str | None = None  # the signal that stopped the command, if one did
    try:
        t_setup = time.monotonic()
        setup_notes = [
            prepare(root, options.checkout, log_dir=work_dir / "logs", python=pythons[side])
            for side, root in (("base", base_root), ("head", head_root))
        ]
        startup["setup"] = time.monotonic() - t_setup
        run_notes += [n for n in setup_notes if n]
        shutil.rmtree(context_marks(work_dir), ignore_errors=True)  # none from an earlier sweep
        if own_zygote:
            zygote = start_zygote(
                options.device,
                work_dir,
                python=pythons["base"],
                memory_bytes=options.worker_memory_bytes,
            )
        if own_warmer:
            warmer = start_warmer(options.device, gpus, work_dir)
        runners = sum(1 for index in range(len(gpus)) if cases[index :: len(gpus)])
        poll_ms = _poll_ms(options, protocol.arms * 2 * runners, runners)

        def client(side: Side, arm: int, gpu: str | None, execution: int) -> WorkerClient:
            return WorkerClient(
                WorkerSpec(
                    side=side,
                    root=base_root if side == "base" else head_root,
                    device=options.device,
                    work_dir=work_dir,
                    gpu=gpu,
                    timeouts=options.timeouts,
                    python_path=options.checkout.python_path,
                    python=pythons[side],
                    memory_bytes=options.worker_memory_bytes or default_memory_bytes(),
                    slot=1 + ((side == "head") != (arm == 1)),
                    arm=arm,
                    poll_ms=poll_ms,
                    execution=execution,
                ),
                zygote,
            )

        # Every object made so far (the imports, the policy, the plan) is left out of the garbage
        # collector's passes until the sweep ends: a full pass over them had held the rounds 46 ms,
        # three times a run, between two timed blocks on the H200
        gc.freeze()
        for execution in range(protocol.execution_looks()[-1]):
            if not pending or recorder.gpu_seconds >= options.max_gpu_seconds:
                break
            recorder.next_pass(execution, len(pending))
            if execution:
                shutil.rmtree(context_marks(work_dir), ignore_errors=True)
            pass_outs: list[dict[str, Any]]
            threads, ahead, pass_outs = [], [], []
            for index, gpu in enumerate(gpus):
                mine = list(pending[index :: len(gpus)])
                if not mine:
                    continue
                if execution:  # the compiled kernels of the first pass, not its picks
                    for side in SIDES:
                        seed_cache(
                            client(side, 0, gpu, 0).spec.triton_cache,
                            client(side, 0, gpu, execution).spec.triton_cache,
                        )
                runner = PairRunner(
                    client("base", 0, gpu, execution),
                    client("head", 0, gpu, execution),
                    runner_opts,
                    gpu_index=index if gpu is not None else None,
                    family_size=family,
                    crossed=(
                        (client("base", 1, gpu, execution), client("head", 1, gpu, execution))
                        if protocol.crossover
                        else None
                    ),
                    # a later pass follows the last one's work: its workers only read the
                    # clock, and burn only if it fell
                    warmed_early=(
                        (lambda: True)
                        if execution
                        else (lambda gpu=gpu: warmer.stop(gpu))
                        if warmer is not None
                        else None
                    ),
                    execution=execution,
                    modes={k: r.mode for k, r in recorder.results.items() if r.mode},
                    tuned={k for k, r in recorder.results.items() if _tuned(r)},
                )
                out: dict[str, Any] = {}
                (outs if execution == 0 else pass_outs).append(out)
                threads.append(
                    threading.Thread(
                        target=_run_pair,
                        args=(runner, mine, recorder, options.max_gpu_seconds, out),
                        name=f"sweep-gpu{gpu}-e{execution}",
                        daemon=True,
                    )
                )
                if execution == 0 and options.precompile and options.device != "cpu":
                    ahead += _ahead(gpu, mine, (runner.base.spec, runner.head.spec), run_notes)
            if ahead:
                helpers = Precompile(
                    ahead, compile_jobs(len(threads)), options.max_gpu_seconds, zygote
                ).start()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for o in pass_outs:  # a later pass's workers' start (its slowest GPU's)
                restart = sum((o.get("startup_s") or {}).values())
                startup[f"start_e{execution}"] = max(
                    startup.get(f"start_e{execution}", 0.0), restart
                )
            going_on = []
            for case in pending:
                got = recorder.results.get(case.key)
                if got is not None and needs_another(got, protocol, family):
                    going_on.append(case)
                elif got is not None:
                    recorder.decided(case.key, protocol, family)
            pending = going_on
    except (KeyboardInterrupt, SystemExit):
        # the command's stop (``bot.cli``: Ctrl-C, a CI job cancelled or out of time): the
        # workers are being killed by their own waits; what the passes measured is kept
        stop = stopped_by()
        if stop is None:
            raise
        _let_go(threads)
    finally:
        gc.unfreeze()
        if own_zygote and zygote is not None:
            zygote.close()
        if own_warmer and warmer is not None:
            warmer.close()
    if zygote is not None and zygote.note:
        run_notes.append(f"workers started one by one, not forked from the zygote: {zygote.note}")
    if zygote is not None and (said := bytecode_note(zygote.bytecode)):
        run_notes.append(said)
    wrapup: dict[str, float] = {}
    if helpers is not None:
        t_helpers = time.monotonic()
        run_notes += helpers.finish()
        wrapup["compile_ahead"] = time.monotonic() - t_helpers
    recorded = recorder.final()
    if stop is None:
        ordered = [
            closing_reason(recorded[c.key], protocol, family) for c in cases if c.key in recorded
        ]
    else:  # what the passes finished, the rest not measured
        why = f"the sweep was stopped by {stop_words(stop)}"
        ordered = ended(planned, recorded, protocol, family, why=why)
        run_notes.append(stop_note(ordered, why))
    envs: tuple[EnvFingerprint, ...] = tuple(
        o["env"] for o in outs if isinstance(o.get("env"), EnvFingerprint)
    )
    ceilings: tuple[Ceilings, ...] = tuple(
        o["ceilings"] for o in outs if isinstance(o.get("ceilings"), Ceilings)
    )
    all_notes = run_notes + [n for o in outs for n in (o.get("notes") or [])]
    if protocol.max_case_seconds < options.protocol.max_case_seconds:
        all_notes.append(
            f"per-case time cap lowered to {protocol.max_case_seconds:.1f} s so {len(cases)} cases fit "
            f"in limits.max_gpu_seconds = {options.max_gpu_seconds:g}"
        )
    marks: dict[str, float] = {}
    for o in outs:  # the slowest GPU's start-up and wrap-up steps
        for into, key in ((startup, "startup_s"), (wrapup, "wrapup_s"), (marks, "start_marks_s")):
            for step, seconds in (o.get(key) or {}).items():
                into[step] = max(into.get(step, 0.0), seconds)
    final, summary = finalize(ordered, protocol, family, ceilings)
    held = (time.monotonic() - t_start) * max(1, len(threads))
    verdicts = sum(1 for c in final if c.status == "ok")
    vendor: Literal["nvidia", "amd", "cpu"] = (
        envs[0].vendor if envs else ("cpu" if options.device == "cpu" else "nvidia")
    )
    return SweepResult(
        vendor=vendor,
        timing="cpu" if options.device == "cpu" else "cuda-events",
        base_rev=base_rev,
        head_rev=head_rev,
        envs=envs,
        ceilings=ceilings,
        protocol=protocol,
        family_size=family,
        cases=final,
        summary=summary,
        started_at=started_at,
        finished_at=_now(),
        gpu_seconds=recorder.gpu_seconds,
        held_gpu_seconds=held,
        first_verdict_s=recorder.first_verdict_s,
        gpu_s_per_verdict_all_in=held / verdicts if verdicts else None,
        startup_s={k: round(v, 4) for k, v in startup.items()},
        start_marks_s={k: round(v, 4) for k, v in marks.items()},
        wrapup_s={k: round(v, 4) for k, v in wrapup.items()},
        notes=tuple(all_notes),
        stopped=stop or "",
    )


def _let_go(threads: Sequence[threading.Thread]) -> None:
    """The runner threads a stop ends, given a moment to: each wait on a worker kills it and
    gives up within ``POLL_S``, so a case finished meanwhile is recorded and the workers are
    gone, but a thread that does not end in time is not waited for (the command must exit
    within a second or two of its stop)."""
    deadline = time.monotonic() + 2 * POLL_S
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))


__all__ = [
    "Case",
    "ShapeResult",
    "SweepOptions",
    "SweepResult",
    "merge",
    "progress_line",
    "recompute",
    "run_sweep",
    "visible_gpus",
]
