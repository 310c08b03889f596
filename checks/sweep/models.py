"""The results of a sweep: one JSON file per vendor and run, raw blocks included, and the journal
kept while it runs.

Everything a verdict is computed from travels in the file (each case's rounds of base and head
blocks with their telemetry, the protocol settings, the ceilings), so ``checks.sweep.summary.recompute``
reaches the same verdicts offline and ``checks.sweep.summary.merge`` can join files from several
runners. Frozen pydantic models; they round-trip through JSON.

The journal (``Journal``): ``kernel-review bench`` keeps it beside the results file it is to
write (``bot.outputs.journal_path``: ``results.partial.jsonl``), appending to it as the sweep
goes, so that a run killed before it could write its results (SIGKILL, a machine that went away)
still leaves what it measured. One JSON object a line: first ``{"run": ...}``, the run as its
results would be were nothing measured (every case with the status ``stopped``); then
``{"env": ...}`` for each worker pair's environment once it started, and ``{"case": ...}`` each
time a pass of a case is recorded (its passes so far joined: a case's last line is all of it).
``checks.sweep.summary.from_journal`` makes the results of them.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from bot.contracts.base import Frozen
from bot.contracts.evidence import Clause, Count, Label, older_clauses
from bot.errors import ResultsError
from checks.sweep.protocol import CaseRun, ProtocolConfig
from checks.sweep.shapes import Category
from checks.sweep.stats import Verdict

SCHEMA_VERSION = 1
MAX_RESULTS_BYTES = 256 * 2**20
MAX_PICKS = 8  # autotuners named per side and case; a case calls one or a few

Status = Literal[
    "ok",  # measured: see verdict
    "wrong_result",  # failed the correctness check (before or after timing); never timed
    "crashed",  # the worker died (segfault, abort, os._exit)
    "timeout",  # a command did not finish in time; the worker was killed
    "oom",  # out of memory (torch.OutOfMemoryError, MemoryError)
    "out_of_resources",  # Triton OutOfResources (shared memory, registers)
    "cuda_error",  # a CUDA/HIP fault (illegal address, device assert): context lost
    "compile_error",  # the kernel did not compile
    "missing_entry",  # the entry point does not exist on that side
    "error",  # any other exception from the entry point or the kernel
    "skipped",  # not run (GPU-seconds budget spent, worker could not start)
    "stopped",  # not measured: the run was stopped from outside (a signal) before it got to it
]
Timing = Literal["cuda-events", "cpu"]
FailedSide = Literal["base", "head", "both"]
CheckedSide = Literal["base", "head"]


class EnvFingerprint(Frozen):
    vendor: Literal["nvidia", "amd", "cpu"]
    device_name: str
    device_uuid: str | None = None
    driver_version: str | None = None
    cuda_version: str | None = None
    hip_version: str | None = None
    torch_version: str | None = None
    triton_version: str | None = None
    python_version: str | None = None
    platform: str | None = None
    cpu: str | None = None
    warp_size: int | None = None
    sm_count: int | None = None
    l2_bytes: int | None = None
    total_memory_bytes: int | None = None
    arch: str | None = None
    max_sm_clock_mhz: float | None = None
    max_mem_clock_mhz: float | None = None
    power_limit_w: float | None = None
    timing: Timing = "cpu"
    gpu_index: int | None = None


class Ceilings(Frozen):
    """What the device can do: a large copy (reads + writes) and a large matmul."""

    device_uuid: str | None = None
    copy_gbps: float
    matmul_tflops: float
    matmul_dtype: str
    copy_bytes: int
    matmul_n: int
    timing: Timing
    cached: bool = False


class CaseLaunch(Frozen):
    """A kernel one call of a case launched (the worker's ``contract.Launch``)."""

    name: Label
    triton: bool
    count: Count
    # whether a source of the side's checkout spells a non-Triton kernel's name (its own, else
    # torch's or an installed package's: ``checks.bench_entries.own_kernels``); None: not told
    own: bool | None = None
    # whether a Triton kernel's compiled code holds atomic operations; None: not read
    atomics: bool | None = None


class CaseLaunches(Frozen):
    """The kernels one call of a case launched after its first call (``contract.Launched``)."""

    kernels: tuple[CaseLaunch, ...] = Field(default=(), max_length=64)
    profiler: bool = False  # every GPU kernel was recorded; False: Triton's launches only
    note: Label = ""
    # device buffers the call allocated besides those it returned; None: not counted
    allocations: Count | None = None


class SideInfo(Frozen):
    """How one side was set up for a case."""

    entry: str
    est_us: float
    host_us: float | None = None  # host time to enqueue one call (launch overhead), GPU only
    bytes_moved: int
    flops: int
    copies: int
    footprint_bytes: int
    prepare_s: float
    max_abs_err: float | None = None
    calls_per_block: int | None = None
    # each Triton autotuner's pick in this case's first call ("kernel: k=v, ..."): the config
    # the timed runs used
    configs_picked: tuple[Label, ...] = Field(default=(), max_length=MAX_PICKS)


class ShapeResult(Frozen):
    kernel: str
    shape: tuple[int, ...]
    dtype: str
    category: Category = "served"
    weight: float = 1.0
    tolerance: float
    status: Status
    failed_side: FailedSide | None = None
    message: str = ""
    log_tail: str = ""
    # the decision (status ok only); ratio = head time / base time
    verdict: Verdict | None = None
    case_verdict: Verdict | None = None  # before Holm across the sweep
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    ci_level: float | None = None
    p_slower: float | None = None
    p_slower_holm: float | None = None
    base_median_us: float | None = None
    head_median_us: float | None = None
    # head's throughput (base_* for base), from the entry point's bytes_moved and flops
    gbps: float | None = None
    tflops: float | None = None
    fraction_of_ceiling: float | None = None
    base_gbps: float | None = None
    base_tflops: float | None = None
    base_fraction_of_ceiling: float | None = None
    rounds: int = 0
    dropped_rounds: int = 0
    stop_reason: str | None = None
    # the executions (fresh worker pairs) the decision rests on, and how: "rounds" when they
    # agreed and their rounds were pooled, "executions" when each execution was one unit
    executions: int = 0
    decided_over: Literal["rounds", "executions"] | None = None
    execution_ratios: tuple[float, ...] = ()  # each execution's head/base
    execution_spread: float | None = None  # beyond the rounds' noise, one SD, a fraction
    explanation: str = ""  # what the executions and the autotuner's picks showed, in words
    explained: tuple[Clause, ...] = ()  # the same, clause by clause, with what each is about
    mode: str | None = None  # graph | eager | eager-noflush | cpu
    gpu_index: int | None = None
    device_uuid: str | None = None
    gpu_seconds: float = 0.0
    # where the case's time went, seconds per step (check, prepare, estimate, configure, rounds,
    # finish); the steps run in every worker side by side, so each is the slowest worker's time.
    # A check made beside the last case's recheck counts here for what it ran past that recheck.
    # Inside ``check``: ``compile`` (Triton compiling and loading) and ``launch_record`` (one
    # more call under the profiler), each the slower side's; inside ``prepare``,
    # ``prepare_compile`` (the compiling and loading of workers that had not checked the case)
    phase_s: dict[str, float] = Field(default_factory=dict)
    base: SideInfo | None = None
    head: SideInfo | None = None
    # the sides whose check answered (right or wrong) in the pass this result is from: a
    # failure laid on one side with the other's here is known to be that side's alone
    checked: tuple[CheckedSide, ...] = ()
    # the kernels one call of each side launched, recorded by its check in the first pass
    # (None: not recorded, as where that side's check failed or the crossover's second pair
    # checked the case)
    base_launches: CaseLaunches | None = None
    head_launches: CaseLaunches | None = None
    notes: tuple[str, ...] = ()
    raw: CaseRun | None = None

    @model_validator(mode="before")
    @classmethod
    def _older_file(cls, data: Any) -> Any:
        """A case written before the explanation's clauses were kept (their key absent) has
        them read from its words, as the review read them then."""
        if not isinstance(data, dict) or "explained" in data or not data.get("explanation"):
            return data
        return {**data, "explained": older_clauses(str(data["explanation"]))}

    @property
    def key(self) -> tuple[str, tuple[int, ...], str]:
        return (self.kernel, tuple(self.shape), self.dtype)


# ---------------------------------------------------------------- may one pass decide a case
# Every case is measured in executions (fresh worker processes): a pass has two, crossover's two
# worker pairs, and the verdict rests on as many passes as it takes the executions to agree
# (``checks.sweep.executions``). What makes identical code read apart from one process to the
# next is known, and the first execution's launch record of each side shows it
# (``checks.bench_entries.launches``): atomics, whose contention depends on where a process's
# buffers land; a call spread over several kernels, its partial results in a buffer between
# them, or buffers it allocates besides what it returns (a workspace); an autotuner, which picks
# from near-tied configs anew in each process; a host that paces the GPU (timed by its kernels'
# busy time). Where both sides' records show none of these, a second pass in fresh processes
# finds what the first found, as the real kernels of that kind showed on the H200 (0.29% at
# most, one SD, over four executions each: ``executions.ONE_PASS_PRIOR_SD``), and the first pass
# decides, its interval carrying that spread. Anything unread (no record, a kernel whose code
# was not read, buffers not counted) keeps the case to the passes every other case takes.

# the timing modes whose blocks time the kernels as launched; ``kernels`` (the GPU's busy time
# of a call the host paces) and the CPU's are not
PLAIN_MODES = ("graph", "eager", "eager-noflush")


def _plain(record: CaseLaunches | None, picked: tuple[Label, ...]) -> bool:
    """Whether one side's record shows one Triton kernel launched once a call, its code read and
    free of atomics, no buffer allocated besides the outputs (counted), and no autotuner."""
    if record is None or picked or len(record.kernels) != 1:
        return False
    (kernel,) = record.kernels
    return (
        kernel.triton and kernel.count == 1 and kernel.atomics is False and record.allocations == 0
    )


def one_pass_reason(
    mode: str,
    base: tuple[CaseLaunches | None, tuple[Label, ...]],
    head: tuple[CaseLaunches | None, tuple[Label, ...]],
) -> str:
    """The words a case decided in one pass says why ("" where it may not), from what its first
    pass knows before its rounds: the mode it is timed in, and each side's launch record and
    autotuner picks. It may when both records show one Triton kernel, no atomics, no buffer
    besides the outputs and no autotuner, timed as launched."""
    if mode not in PLAIN_MODES or not (_plain(*base) and _plain(*head)):
        return ""
    return (
        "each side launches one Triton kernel, with no atomics, no buffer besides its outputs "
        "and no autotuner"
    )


class GeomeanSummary(Frozen):
    ratio: float
    ci_low: float
    ci_high: float
    cases: int
    weighted: bool


class WorstCase(Frozen):
    kernel: str
    shape: tuple[int, ...]
    dtype: str
    ratio: float
    ci_low: float | None
    ci_high: float | None
    verdict: Verdict | None


class KernelSummary(Frozen):
    kernel: str
    served: GeomeanSummary | None = None
    small: GeomeanSummary | None = None
    ragged: GeomeanSummary | None = None
    worst: WorstCase | None = None


class Summary(Frozen):
    served: GeomeanSummary | None = None  # weighted by the policy's served-shape weights
    small: GeomeanSummary | None = None  # reported apart
    ragged: GeomeanSummary | None = None  # reported apart
    worst: WorstCase | None = None
    kernels: tuple[KernelSummary, ...] = ()
    verdicts: dict[str, int] = Field(default_factory=dict)
    statuses: dict[str, int] = Field(default_factory=dict)
    dropped_rounds: int = 0
    alpha: float = 0.01
    family_size: int = 0


CaseKey = tuple[str, tuple[int, ...], str]  # ShapeResult.key


class SweepResult(Frozen):
    schema_version: int = SCHEMA_VERSION
    vendor: Literal["nvidia", "amd", "cpu"]
    timing: Timing
    base_rev: str
    head_rev: str
    envs: tuple[EnvFingerprint, ...] = ()
    ceilings: tuple[Ceilings, ...] = ()
    protocol: ProtocolConfig
    family_size: int
    cases: tuple[ShapeResult, ...] = ()
    summary: Summary = Summary()
    started_at: str = ""
    finished_at: str = ""
    gpu_seconds: float = 0.0  # the cases' own time: set-up, rounds and release
    # what the sweep held: wall time from the command's start times the GPUs used, so start-up,
    # compiles and idle gaps count; and that per case with a verdict
    held_gpu_seconds: float | None = None
    gpu_s_per_verdict_all_in: float | None = None
    first_verdict_s: float | None = None  # from the command's start to the first verdict
    # where the time before the first case went, seconds per step from the command's start
    # (before_sweep: Python's start and imports where the command counts from them, reading the
    # repository, the plan, the worktrees; setup: the policy's build; start, env, warmup: the
    # workers; ceilings: reading their cache, and measuring them after the last case where it
    # had none); with several GPUs the slowest GPU's steps
    startup_s: dict[str, float] = Field(default_factory=dict)
    # inside ``startup_s["start"]``, the slowest worker's seconds from its launch until its
    # program began (to_main; a worker forked from the zygote waited for its imports) and until
    # its torch and GPU context were ready (to_ready)
    start_marks_s: dict[str, float] = Field(default_factory=dict)
    # and after the last case, until the result is made (close: the workers' quit and exit;
    # compile_ahead: stopping the compile-ahead helpers); the slowest GPU's
    wrapup_s: dict[str, float] = Field(default_factory=dict)
    notes: tuple[str, ...] = ()
    # why the run ended before measuring every case: the signal it caught ("SIGINT",
    # "SIGTERM"; its cases not measured have the status "stopped"), or "killed" where it could
    # write no results and these were read from its journal (``checks.sweep.journal``); empty
    # for a run that went to its end
    stopped: str = ""

    @model_validator(mode="before")
    @classmethod
    def _checked_of_older_files(cls, data: object) -> object:
        """A file written before cases said which sides' checks answered (``checked``): read
        from the launch records it has, one per answered check of the first pass in the
        versions that wrote them, and none in the versions before."""
        if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
            return data
        cases = [
            {**c, "checked": [s for s in ("base", "head") if c.get(f"{s}_launches") is not None]}
            if isinstance(c, dict) and "checked" not in c
            else c
            for c in data["cases"]
        ]
        return {**data, "cases": cases}

    @property
    def timing_label(self) -> str:
        return (
            "CPU timing (not GPU numbers)" if self.timing == "cpu" else "GPU timing (CUDA events)"
        )


def dump_results(result: SweepResult, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        tmp.write_text(result.model_dump_json(indent=1), encoding="utf-8")
        tmp.replace(path)
    except BaseException:  # a second stop (a signal) while writing: no half file is left
        tmp.unlink(missing_ok=True)
        raise


def parse_results(text: str, *, source: str = "<string>") -> SweepResult:
    if len(text.encode("utf-8", errors="replace")) > MAX_RESULTS_BYTES:
        raise ResultsError(
            f"{source} is over {MAX_RESULTS_BYTES // 2**20} MiB",
            hint="results files hold raw blocks; split the sweep across runs",
        )
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ResultsError(
            f"{source} is not JSON: {exc}", hint="pass the file `kernel-review bench` wrote"
        ) from exc
    if isinstance(data, dict) and data.get("schema_version") not in (None, SCHEMA_VERSION):
        raise ResultsError(
            f"{source} has schema_version {data.get('schema_version')!r}; this version reads {SCHEMA_VERSION}",
            hint="re-run the sweep with this version of kernel-review",
        )
    try:
        return SweepResult.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise ResultsError(
            f"{source} does not match the results schema at {where or 'top level'}: {first.get('msg')}",
            hint="pass an unmodified file written by `kernel-review bench`",
        ) from exc


def load_results(path: Path) -> SweepResult:
    return parse_results(_read(path), source=str(path))


def _read(path: Path) -> str:
    """A results file's or a journal's text, within the cap on their size."""
    try:
        size = path.stat().st_size
        if size > MAX_RESULTS_BYTES:
            raise ResultsError(
                f"{path} is {size // 2**20} MiB, over {MAX_RESULTS_BYTES // 2**20} MiB",
                hint="results files hold raw blocks; split the sweep across runs",
            )
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ResultsError(f"cannot read {path}: {exc.strerror}", hint="check the path") from exc


class _Line(Frozen):
    """One line of the journal: one of its keys set."""

    run: SweepResult | None = None
    env: EnvFingerprint | None = None
    case: ShapeResult | None = None


class Journal:
    """The journal of one sweep, appended to from the runner threads until it is closed."""

    def __init__(self, path: Path, run: SweepResult) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._closed = False
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_line("run", run), encoding="utf-8")

    def close(self) -> None:
        """No line after this one: a runner thread a stop did not wait for (``run._let_go``)
        could otherwise append once the results are written and the journal removed, making
        the file again beside them."""
        with self._lock:
            self._closed = True

    def env(self, env: EnvFingerprint) -> None:
        self._append(_line("env", env))

    def case(self, result: ShapeResult) -> None:
        self._append(_line("case", result))

    def _append(self, line: str) -> None:
        with self._lock:
            if self._closed:
                return
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(line)


def _line(key: str, model: Frozen) -> str:
    """One line of the journal: ``{key: model}`` (``_Line``), every field of the model kept."""
    return f'{{"{key}": {model.model_dump_json()}}}\n'


def journal_lines(
    path: Path,
) -> tuple[SweepResult, list[EnvFingerprint], dict[CaseKey, ShapeResult]]:
    """The run of the journal at ``path``, its environments and each case's last line; a last
    line cut short (the kill came while it was written) is left out, anything else that is not a
    journal's line is a ResultsError."""
    text = _read(path)
    rows = text.split("\n")
    cut = rows[-1] != ""  # the last line has no end: the kill came while it was written
    run: SweepResult | None = None
    envs: list[EnvFingerprint] = []
    got: dict[CaseKey, ShapeResult] = {}
    for number, row in enumerate(rows, 1):
        if not row.strip():
            continue
        try:
            line = _Line.model_validate_json(row)
        except ValidationError as exc:
            if cut and number == len(rows):
                break
            why = f"line {number} is not a journal line: {_first(exc)}"
            raise _not_a_journal(path, why) from None
        if number == 1:
            if line.run is None:
                raise _not_a_journal(path, "its first line is not the run")
            run = line.run
        elif line.env is not None:
            envs.append(line.env)
        elif line.case is not None:
            got[line.case.key] = line.case
    if run is None:
        raise _not_a_journal(path, "it is empty")
    return run, envs, got


def _first(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ()))
    return f"{first.get('msg')}" + (f" at {where}" if where else "")


def _not_a_journal(path: Path, why: str) -> ResultsError:
    return ResultsError(
        f"{path} is not the journal of a `kernel-review bench` run: {why}",
        hint="pass the .partial.jsonl file `kernel-review bench` left beside its --out file",
    )
