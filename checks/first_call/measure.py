"""First-call cost: what a process pays before a kernel's first result, cold and warm.

Two fresh processes per kernel (``checks.first_call.probe``): the first with empty Triton cache
directories (cold), the second with the same directories (warm). Each reports its imports, GPU
context, and per served shape the first call's time with Triton's per-stage compile times, cache
hits and autotuning time.

The cost of serving the whole distribution once from a cold start is derived from the cold
run's shapes (``derive_distribution``): in one process a shape does not compile again what an
earlier shape compiled, nor build a launcher an earlier one built, nor autotune a key already
tuned, and each of those is measured by its variant's hash, its source or its key. Measuring it
instead (``distribution="measured"``) autotunes every key once more: for the fixture's
autotuned matmul that was about 50 s of the check's 129 s on the H200, for a number the verdict
does not rest on.

A shape's standalone cost is what a fresh process serving only that shape pays: the fixed costs
(startup, imports, context) plus that shape's first call with nothing compiled or tuned in memory.
The deployment kind decides the judgement: ``long-lived`` reports only; ``cli``, ``serverless``
and ``latency-slo`` compare each shape's cold standalone cost with ``first_call_budget_ms`` (a
warm on-disk cache does not remove autotuning, which Triton does not cache across processes by
default, so warm shapes over budget are named too).
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from bot.contracts.base import Frozen
from checks.job_files import FirstCallProbe, JobFailure, KernelSpec, ProbeAnswer, ProbeShape
from checks.job_process import run_job


class ShapeFirstCall(Frozen):
    shape: str  # "1823x781:float32"
    first_call_ms: float | None = None  # time to the first result (GPU: synchronised)
    second_call_ms: float | None = None
    compiles: int = 0  # kernels compiled (Triton's cache missed)
    cache_hits: int = 0  # kernels Triton's on-disk cache answered
    compile_ms: float = 0.0  # Triton's listener: IR init + every lowering stage + store
    stage_ms: dict[str, float] = Field(default_factory=dict)
    autotune_ms: float | None = None
    autotune_keys: tuple[str, ...] = ()
    configs_picked: tuple[str, ...] = ()
    standalone_ms: float | None = None  # fixed costs + first call (standalone pass only)
    compiled: tuple[tuple[str, float], ...] = ()  # (variant hash, ms) of each compile
    modules: tuple[tuple[str, float], ...] = ()  # (source key, ms) of each C module built or loaded
    error: str | None = None


def derive_distribution(standalone: tuple[ShapeFirstCall, ...]) -> tuple[ShapeFirstCall, ...]:
    """The shapes' first calls as one process serving them in order would pay them, from each
    shape's own cold first call: what an earlier shape already compiled (by hash), built (by
    source) or autotuned (by key) is not paid again. A shape whose keys were all tuned before
    runs the kept config: its second call's time, plus whatever it compiles that is new."""
    seen_hashes: set[str] = set()
    seen_modules: set[str] = set()
    seen_keys: set[str] = set()
    out = []
    for s in standalone:
        if s.error or s.first_call_ms is None:
            out.append(s.model_copy(update={"standalone_ms": None}))
            continue
        new = [(h, ms) for h, ms in s.compiled if not h or h not in seen_hashes]
        reused_ms = sum(ms for h, ms in s.compiled if h and h in seen_hashes)
        reused_ms += sum(ms for k, ms in s.modules if k in seen_modules)
        new_ms = sum(ms for _, ms in new) + sum(ms for k, ms in s.modules if k not in seen_modules)
        tuned_before = bool(s.autotune_keys) and set(s.autotune_keys) <= seen_keys
        if tuned_before and s.second_call_ms is not None:
            first, autotune = s.second_call_ms + new_ms, None
        else:
            first = max(0.0, s.first_call_ms - reused_ms)
            autotune = None if s.autotune_ms is None else max(0.0, s.autotune_ms - reused_ms)
        out.append(
            s.model_copy(
                update={
                    "first_call_ms": round(first, 3),
                    "autotune_ms": None if autotune is None else round(autotune, 3),
                    "configs_picked": (),  # no autotuning of its own: nothing was picked
                    "compiles": len(new),
                    "compile_ms": round(sum(ms for _, ms in new), 3),
                    "compiled": tuple(new),
                    "standalone_ms": None,
                }
            )
        )
        seen_hashes.update(h for h, _ in s.compiled if h)
        seen_modules.update(k for k, _ in s.modules)
        seen_keys.update(s.autotune_keys)
    return tuple(out)


class FirstCallRun(Frozen):
    """One fresh process."""

    cache: Literal["cold", "warm"]
    mode: Literal["gpu", "compile-only"]
    device: str
    python_start_ms: float = 0.0  # spawning the interpreter
    probe_overhead_ms: float = 0.0  # the probe's own imports; not counted in fixed_ms
    import_torch_ms: float = 0.0
    import_triton_ms: float = 0.0
    import_entry_ms: float = 0.0
    context_ms: float = 0.0  # GPU context creation (0 in compile-only mode)
    triton_setup_ms: float = 0.0  # hashing Triton's sources, creating its driver: once a process
    standalone: tuple[ShapeFirstCall, ...] = ()
    distribution: tuple[ShapeFirstCall, ...] = ()
    distribution_derived: bool = False  # from ``standalone`` (derive_distribution), not timed
    error: str | None = None

    @property
    def fixed_ms(self) -> float:
        return round(
            self.python_start_ms
            + self.import_torch_ms
            + self.import_triton_ms
            + self.import_entry_ms
            + self.context_ms
            + self.triton_setup_ms,
            3,
        )

    @property
    def distribution_ms(self) -> float:
        return round(self.fixed_ms + sum(s.first_call_ms or 0.0 for s in self.distribution), 3)


class FirstCallReport(Frozen):
    kernel: str
    mode: Literal["gpu", "compile-only"]
    target: str | None = None  # compile-only: the target compiled for
    deployment_kind: str
    budget_ms: float | None = None
    cold: FirstCallRun | None = None
    warm: FirstCallRun | None = None
    cold_first_call_ms: float | None = None  # the first shape's standalone cost, cold
    warm_first_call_ms: float | None = None
    distinct_autotune_keys: int = 0  # each new key pays autotuning again
    distinct_compiles: int = 0  # kernels compiled while serving the distribution once
    cold_total_ms: float | None = None  # serving the distribution once from a cold start
    cold_total_derived: bool = False  # derived from the shapes' own first calls, not timed
    autotune_ms_total: float | None = None
    over_budget_shapes: tuple[str, ...] = ()  # cold standalone cost above the budget
    warm_over_budget_shapes: tuple[str, ...] = ()
    # per shape, the config each autotuning of it picked, in order: cold standalone, cold
    # distribution where it was measured, warm standalone (each starts with no in-process
    # choice); shapes nothing autotuned are left out
    autotune_picks: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    verdict: Literal["report-only", "within-budget", "over-budget", "not-measured"]
    notes: tuple[str, ...] = ()


def _shape(row: ProbeShape) -> ShapeFirstCall:
    return ShapeFirstCall.model_validate(dataclasses.asdict(row))


def _run(
    answer: ProbeAnswer | JobFailure,
    cache: Literal["cold", "warm"],
    mode: Literal["gpu", "compile-only"],
    device: str,
    *,
    derive: bool = False,
) -> FirstCallRun:
    if isinstance(answer, JobFailure):
        return FirstCallRun(cache=cache, mode=mode, device=device, error=answer.fatal)
    run = FirstCallRun(
        cache=cache,
        mode=mode,
        device=answer.device or device,
        python_start_ms=answer.python_start_ms,
        probe_overhead_ms=answer.probe_overhead_ms,
        import_torch_ms=answer.import_torch_ms,
        import_triton_ms=answer.import_triton_ms,
        import_entry_ms=answer.import_entry_ms or 0.0,
        context_ms=answer.context_ms or 0.0,
        triton_setup_ms=answer.triton_setup_ms or 0.0,
    )
    standalone = []
    for row in answer.standalone:
        s = _shape(row)
        if s.first_call_ms is not None:
            s = s.model_copy(update={"standalone_ms": round(run.fixed_ms + s.first_call_ms, 3)})
        standalone.append(s)
    distribution = (
        derive_distribution(tuple(standalone))
        if derive
        else tuple(_shape(r) for r in answer.distribution or ())
    )
    return run.model_copy(
        update={
            "standalone": tuple(standalone),
            "distribution": distribution,
            "distribution_derived": derive,
        }
    )


def autotune_picks(runs: list[FirstCallRun | None]) -> dict[str, tuple[str, ...]]:
    """Per shape, what each autotuning of it picked (its kernels' configs joined with ``+``):
    one reading per pass of each run that autotuned the shape."""
    picks: dict[str, list[str]] = {}
    for run in runs:
        if run is None or run.error:
            continue
        for s in (*run.standalone, *run.distribution):
            if s.configs_picked and not s.error:
                picks.setdefault(s.shape, []).append(" + ".join(s.configs_picked))
    return {shape: tuple(p) for shape, p in picks.items()}


def unstable_picks(picks: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """The shapes whose autotunings did not all pick the same config, with the distinct picks."""
    return {shape: tuple(dict.fromkeys(p)) for shape, p in picks.items() if len(set(p)) > 1}


def judge(
    kernel: str,
    cold: FirstCallRun | None,
    warm: FirstCallRun | None,
    *,
    mode: Literal["gpu", "compile-only"],
    deployment_kind: str,
    budget_ms: float | None,
    target: str | None = None,
) -> FirstCallReport:
    """The report for one kernel from its cold and warm runs and the policy's deployment."""
    notes: list[str] = []
    for run in (cold, warm):
        if run is not None and run.error:
            notes.append(f"{run.cache} run failed: {run.error}")
        for s in run.standalone if run else ():
            if s.error:
                notes.append(f"{run.cache} {s.shape}: {s.error}")  # type: ignore[union-attr]
    common: dict[str, Any] = {
        "kernel": kernel,
        "mode": mode,
        "target": target,
        "deployment_kind": deployment_kind,
        "budget_ms": budget_ms,
        "cold": cold,
        "warm": warm,
    }
    if cold is None or cold.error or not cold.standalone:
        return FirstCallReport(**common, verdict="not-measured", notes=tuple(notes))
    keys = {k for s in cold.distribution for k in s.autotune_keys}
    tune = [s.autotune_ms for s in cold.distribution if s.autotune_ms is not None]

    def over(run: FirstCallRun | None) -> tuple[str, ...]:
        if run is None or budget_ms is None or deployment_kind == "long-lived":
            return ()
        return tuple(
            s.shape for s in run.standalone if s.standalone_ms and s.standalone_ms > budget_ms
        )

    over_cold, over_warm = over(cold), over(warm)
    if deployment_kind == "long-lived" or budget_ms is None:
        verdict = "report-only"
    else:
        verdict = "over-budget" if over_cold else "within-budget"
    if mode == "compile-only":
        notes.append(
            f"compile-only on a CPU for {target}: compile times are real, autotuning and "
            "GPU context are not measured"
        )
    return FirstCallReport(
        **common,
        cold_first_call_ms=cold.standalone[0].standalone_ms,
        warm_first_call_ms=warm.standalone[0].standalone_ms if warm and warm.standalone else None,
        distinct_autotune_keys=len(keys),
        distinct_compiles=sum(s.compiles for s in cold.distribution),
        cold_total_ms=cold.distribution_ms,
        cold_total_derived=cold.distribution_derived,
        autotune_ms_total=round(sum(tune), 3) if tune else None,
        over_budget_shapes=over_cold,
        warm_over_budget_shapes=over_warm,
        autotune_picks=autotune_picks([cold, warm]),
        verdict=verdict,  # type: ignore[arg-type]
        notes=tuple(notes),
    )


def _probe(
    job: FirstCallProbe, timeout_s: float, python: str | None = None
) -> ProbeAnswer | JobFailure:
    with tempfile.TemporaryDirectory(prefix="kr-first-call-") as tmp:
        return run_job(
            dataclasses.replace(job, spawned_at=time.time()),
            workdir=Path(tmp),
            triton_cache=Path(job.cache_root) / "default",
            timeout_s=timeout_s,
            what="the first-call probe",
            python=python,
        )


def measure_first_call(
    repo_root: Path,
    spec: KernelSpec,
    *,
    mode: Literal["gpu", "compile-only"],
    deployment_kind: str,
    budget_ms: float | None,
    target: str = "sm_90",
    device: str = "cuda",
    workdir: Path | None = None,
    timeout_s: float = 600.0,
    python: str | None = None,
    progress: Callable[[str], None] | None = None,
    prime: bool = True,
    distribution: Literal["derived", "measured"] = "derived",
) -> FirstCallReport:
    """Cold then warm, each in a fresh process; the cache directories live under ``workdir``
    (a fresh temporary directory when not given). ``python``: the interpreter (a side's own
    toolchain), the bot's own by default. ``prime``: first a throwaway process that only reads
    torch's and Triton's files (see below); once per interpreter is enough, so a caller
    measuring several kernels primes for the first only. ``progress`` hears of each process
    (priming, cold, warm) as it ends. ``distribution``: serving every shape once, derived from
    the cold run's shapes (the default) or timed as a second pass of the cold run (see the
    module doc)."""
    step = progress or (lambda _text: None)
    with tempfile.TemporaryDirectory(prefix="kr-first-call-caches-") as tmp:
        root = Path(workdir) if workdir else Path(tmp)
        job = FirstCallProbe(
            repo_root=str(Path(repo_root).resolve()),
            bench=spec.bench,
            shapes=spec.shapes,
            dtypes=spec.dtypes,
            mode=mode,
            target=target,
            device=device,
            cache_root=str(root / spec.name),
            python_path=spec.python_path,
        )
        where = device if mode == "gpu" else f"cpu (compile-only {target})"
        shutil.rmtree(job.cache_root, ignore_errors=True)  # cold means empty
        # Cold means an empty Triton cache, not an empty OS file cache: on a fresh runner the
        # first process to import torch read its files from disk (3.2 s against 1.2 s on the
        # H200), which would be charged to whichever kernel happened to be measured first.
        # A throwaway process with its own cache directory reads them first.
        # What it returns does not matter: a failure here shows again, measured, in the cold run.
        if prime:
            primer = dataclasses.replace(
                job, prime=True, cache_root=str(root / f"{spec.name}-prime")
            )
            _probe(primer, min(timeout_s, 300.0), python)
            step(f"{spec.name}: imports primed")
        derive = distribution == "derived"
        cold_job = dataclasses.replace(job, distribution=False) if derive else job
        cold = _run(_probe(cold_job, timeout_s, python), "cold", mode, where, derive=derive)
        step(f"{spec.name}: cold run {'failed' if cold.error else 'done'}")
        # warm: each shape's first call again; serving the whole distribution once is the cold
        # run's to tell
        warm_job = dataclasses.replace(job, distribution=False)
        warm = _run(_probe(warm_job, timeout_s, python), "warm", mode, where)
        step(f"{spec.name}: warm run {'failed' if warm.error else 'done'}")
    return judge(
        spec.name,
        cold,
        warm,
        mode=mode,
        deployment_kind=deployment_kind,
        budget_ms=budget_ms,
        target=target if mode == "compile-only" else None,
    )


def first_call_evidence(report: FirstCallReport, vendor: str, side: str = "head") -> Any:
    """The review's summary of one kernel's first-call report (``vendor``: nvidia, amd, cpu;
    ``side``: base or head, both measured when the change moves the toolchain)."""
    from bot.contracts.evidence import MAX_LABEL, FirstCallEvidence, PickSpread

    cold, warm = report.cold, report.warm
    detail = []
    if cold is not None and not cold.error:
        detail.append(
            f"imports {cold.import_torch_ms + cold.import_triton_ms + cold.import_entry_ms:.0f} ms"
            f", context {cold.context_ms:.0f} ms, Triton set-up {cold.triton_setup_ms:.0f} ms"
        )
    if report.warm_over_budget_shapes:
        detail.append("over budget even warm: " + ", ".join(report.warm_over_budget_shapes))
    unstable = unstable_picks(report.autotune_picks)
    if unstable:
        # Each autotuning starts with no choice made; where they disagree, which config a
        # process runs (and the sweep timed) is the luck of its autotuning
        detail.append(
            f"the autotuner picked differently between autotunings at {len(unstable)} of "
            f"{len(report.autotune_picks)} shapes ("
            + ", ".join(
                f"{shape}: {len(p)} configs in {len(report.autotune_picks[shape])}"
                for shape, p in unstable.items()
            )
            + "); a process serves what its own autotuning picked, the sweep's workers too"
        )
    detail += list(report.notes)
    first = cold.standalone[0] if cold is not None and cold.standalone else None
    return FirstCallEvidence(
        vendor=vendor,  # type: ignore[arg-type]
        kernel=report.kernel,
        cold_ms=report.cold_first_call_ms,
        warm_ms=report.warm_first_call_ms if warm is not None else None,
        compile_ms=first.compile_ms if first is not None else None,
        autotune_ms=report.autotune_ms_total,
        distinct_keys=report.distinct_autotune_keys,
        cold_total_ms=report.cold_total_ms,
        cold_total_derived=report.cold_total_derived,
        over_budget_shapes=report.over_budget_shapes,
        compile_only=report.mode == "compile-only",
        detail="; ".join(detail),
        side=side,  # type: ignore[arg-type]
        unstable_picks=tuple(
            PickSpread(
                shape=shape[:MAX_LABEL],
                configs=tuple(c[:MAX_LABEL] for c in configs[:8]),
                autotunings=len(report.autotune_picks[shape]),
            )
            for shape, configs in list(unstable.items())[:64]
        ),
    )
