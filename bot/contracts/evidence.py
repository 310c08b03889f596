"""What the verdict is decided from: small, plain summaries of each check's results.

Each check (sweep, first call, compiler report, repo conditions) has its own detailed results
model in ``checks/``; an adapter reduces those to the evidence below. The verdict and the
renderer only ever see these, so they stay pure and are tested on hand-made evidence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated, Any, Literal, TypeVar

from pydantic import Field, model_validator

from bot.contracts.base import Check, Frozen, Vendor
from bot.contracts.repo import RepoConditions

# Bounds on what a results file from a runner may carry; NaN fails every one of them.
MAX_COUNT = 2**53  # larger integers lose precision as JSON numbers; no real count comes near
MAX_SECONDS = 1e9
Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]
Dim = Annotated[int, Field(ge=0, le=MAX_COUNT)]
Positive = Annotated[float, Field(gt=0)]  # times and ratios; infinity is a lost CI bound
NonNegative = Annotated[float, Field(ge=0)]
Seconds = Annotated[float, Field(ge=0, le=MAX_SECONDS)]
# Bounds on a live autotune list (results are untrusted): configs per list, characters per label.
MAX_CONFIGS = 300
MAX_LABEL = 300
Label = Annotated[str, Field(max_length=MAX_LABEL)]

_Part = TypeVar("_Part", bound=Frozen)


def _merged(a: _Part, b: _Part) -> _Part:
    """``a`` and ``b`` field by field: tuples concatenated, dicts joined (``b`` wins a key),
    parts with a ``merge`` of their own merged, a value set on one side only kept; two different
    values of any other field cannot be merged."""
    out: dict[str, Any] = {}
    for name in type(a).model_fields:
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, tuple):
            out[name] = (*x, *y)
        elif isinstance(x, dict):
            out[name] = {**x, **y}
        elif x is None or y is None:
            out[name] = y if x is None else x
        elif hasattr(x, "merge"):
            out[name] = x.merge(y)
        elif x == y:
            out[name] = x
        else:
            raise ValueError(f"cannot merge two different {type(a).__name__}.{name} values")
    return type(a)(**out)


ShapeVerdict = Literal[
    "SLOWER",
    "SAME",
    "FASTER",
    "INCONCLUSIVE",
    "WRONG",
    "CRASHED",
    "TIMEOUT",
    "OOM",
    "ERROR",
    "SKIPPED",  # not run: the CPU interpreter cannot run it, the budget was spent (detail: why)
    # not run: the sweep was stopped from outside (a job's time limit) before it; no failure of
    # the change's, as a failure is, but missing evidence (detail: why)
    "STOPPED",
]
# no time to compare (a skipped shape is no evidence either)
FAILED_VERDICTS = frozenset({"WRONG", "CRASHED", "TIMEOUT", "OOM", "ERROR", "SKIPPED"})
# what a detail said before the facts were fields of their own: a failure's kind, side and
# reason ("compile error: base: <reason>"), and executions that disagreed
_OLDER_FAILURE = re.compile(r"([a-z ]+): (?:base|head|both): (.*)", re.DOTALL)
_OLDER_SKIP = re.compile(r"(skipped): (.*)", re.DOTALL)  # ... or a skip, which said no side
_OLDER_SPREAD = "varied from one execution"  # the sweep's words for executions that disagree
# ... and a compiled variant's occupancy: "8 warps/SM (12%)"
_OLDER_OCCUPANCY = re.compile(r"(\d+) (\S+) \([0-9.]+%\)")
_OLDER_PERCENT = re.compile(r"\(([0-9.]+)%\)")
# ... and the parts of a detail (or of the sweep's explanation) the review told apart: why the
# sweep stopped, the autotuner picking differently between processes, and that as the cause
_OLDER_STOP = re.compile(r"stopped: (.+) after (\d+) rounds?")
_OLDER_PICKS_VARY = "the autotuner picks differently"
_OLDER_CAUSE_PICKS = "likely cause: the autotuner's picks"
_OLDER_DROPPED = re.compile(r"\d+ throttled rounds dropped")

ClauseKind = Literal[
    "failure",  # the failure's kind, side and reason
    "dropped",  # the throttled rounds dropped
    "stop",  # why the sweep stopped measuring a shape it did not decide (``ShapeLine.stop_reason``)
    "picks_vary",  # the autotuner picked differently from one process to the next, and how
    "picks_differ",  # base's and head's autotuners picked different configs, and how
    "pinned",  # the passes in which head ran base's config
    "matched",  # the decision over the passes in which both sides picked alike
    "spread",  # how far head/base varied from one execution (fresh processes) to the next
    "cause_picks",  # that spread's likely cause: the autotuner's picks
    "cause",  # that spread's likely cause, another one
    "undecided",  # that spread was too much to decide at the tolerance
    "note",  # anything else: a note, a part cut short, the count of the parts left out
]


class Clause(Frozen):
    """One part of what the sweep says of a shape, with what it is about: a shape's ``detail``
    is its clauses joined with "; "."""

    kind: ClauseKind
    text: str


def older_clauses(text: str, *, failure: bool = False) -> tuple[Clause, ...]:
    """A detail or an explanation written before its clauses were kept apart, split at "; "
    (where the review split it), each part's kind read from its words as the review read them
    then (the first part the failure where ``failure``); any other part a note. Joined again
    with "; " it is ``text``."""
    if not text:
        return ()
    out = []
    for i, part in enumerate(text.split("; ")):
        said = part.strip()
        kind: ClauseKind = (
            "failure"
            if failure and i == 0
            else "dropped"
            if _OLDER_DROPPED.fullmatch(said)
            else "stop"
            if _OLDER_STOP.fullmatch(said)
            else "picks_vary"
            if said.startswith(_OLDER_PICKS_VARY)
            else "cause_picks"
            if said == _OLDER_CAUSE_PICKS
            else "note"
        )
        out.append(Clause(kind=kind, text=part))
    return tuple(out)


def said(clauses: Iterable[Clause]) -> str:
    """Clauses as one text: joined with "; "."""
    return "; ".join(c.text for c in clauses)


class ShapeLine(Frozen):
    """One shape of the sweep, as the review quotes it."""

    kernel: str
    shape: tuple[Dim, ...]
    dtype: str
    verdict: ShapeVerdict
    ratio: Positive | None = None  # head time / base time
    ci_low: NonNegative | None = None
    ci_high: NonNegative | None = None
    base_us: Positive | None = None
    head_us: Positive | None = None
    small_or_ragged: bool = False
    weight: NonNegative = 1.0
    detail: str = ""
    # the detail's parts, each with what it is about: what the review reads of them
    clauses: tuple[Clause, ...] = Field(default=(), max_length=64)
    # why the sweep stopped measuring a shape it did not decide, in its own terms
    # ("max_rounds", "max_executions", "time_budget", "throttled", "stopped", "decided"): the "stop"
    # clause says it; "" for a shape it decided or where the results do not say
    stop_reason: Label = ""
    rounds: Count = 0  # ... and the rounds it timed until then
    tolerance: NonNegative | None = None  # this kernel's: head/base up to 1 + tolerance is SAME
    # achieved throughput as a fraction of the device's measured ceiling (copy bandwidth or
    # matmul TFLOP/s, whichever the case comes closer to), per side
    base_of_roofline: NonNegative | None = None
    head_of_roofline: NonNegative | None = None
    # the config each side's Triton autotuners kept for this case ("kernel: k=v, ..."), which is
    # what the timed runs used; empty where nothing autotuned
    base_configs: tuple[Label, ...] = Field(default=(), max_length=8)
    head_configs: tuple[Label, ...] = Field(default=(), max_length=8)
    # a failed shape's side: "base" alone means the head ran there (the change fixes it);
    # None where the results do not say
    failed_side: Literal["base", "head", "both"] | None = None
    # a failed shape's kind in the sweep's words ("compile error", "wrong result", "timeout")
    # and its reason (the message's headline): ``detail`` says the two with the side and the
    # shape's other notes, for a reader. Empty where the shape ran or the results do not say
    failure_kind: Label = ""
    failure_reason: str = ""
    # head/base varied from one execution (fresh processes) to the next beyond the rounds'
    # noise, and the sweep decided over the executions: ``detail`` says how far and why
    varied_between_processes: bool = False

    @model_validator(mode="before")
    @classmethod
    def _older_file(cls, data: Any) -> Any:
        """A line written before a fact below was a field of its own (its key absent) has it
        read from its detail, as the review read it then: a failure's kind and reason from
        "compile error: base: <reason>" (a skip's from "skipped: <reason>"), the executions'
        spread from the sweep's words for it, the detail's clauses and the stop."""
        if not isinstance(data, dict):
            return data
        detail = str(data.get("detail", ""))
        read: dict[str, Any] = {}
        failed = data.get("verdict") in FAILED_VERDICTS
        m = _OLDER_FAILURE.match(detail) or (
            _OLDER_SKIP.match(detail) if data.get("verdict") == "SKIPPED" else None
        )
        if "failure_kind" not in data and m and failed:
            read.update(failure_kind=m.group(1), failure_reason=m.group(2))
        if "varied_between_processes" not in data and _OLDER_SPREAD in detail:
            read.update(varied_between_processes=True)
        if "clauses" not in data:
            read.update(clauses=older_clauses(detail, failure=bool(m) and failed))
            stop = next((c for c in read["clauses"] if c.kind == "stop"), None)
            how = _OLDER_STOP.fullmatch(stop.text.strip()) if stop else None
            if how and "stop_reason" not in data:
                read.update(stop_reason=how.group(1).replace(" ", "_"), rounds=int(how.group(2)))
        elif "detail" not in data:
            read.update(detail=said(Clause.model_validate(c) for c in data["clauses"]))
        return {**data, **read} if read else data

    @model_validator(mode="after")
    def _detail_is_its_clauses(self) -> ShapeLine:
        if self.clauses and said(self.clauses) != self.detail:
            raise ValueError(
                f"{self.kernel} {self.shape} {self.dtype}: its detail is not its clauses joined "
                "with '; ': the file was edited or written by another version; pass the file the "
                "measure job wrote"
            )
        return self

    @property
    def fixed(self) -> bool:
        """The base failed at this shape and the head ran: the change fixes it, no failure of
        the change's."""
        return self.verdict in FAILED_VERDICTS and self.failed_side == "base"


class LaunchedKernel(Frozen):
    """A kernel a bench entry launched, as the measure job recorded it."""

    name: Label  # a Triton kernel's function name; any other kernel's qualified name, demangled
    # triton; native: the vendor's own language (CUDA, HIP), the repository's or an extension's;
    # library: torch's and the vendor libraries' own (``at::``, ``cub::``, cuBLAS, ...)
    origin: Literal["triton", "native", "library"]
    cases: Count  # the recorded cases that launched it


class LaunchRecord(Frozen):
    """What one bench entry launched on one side: one call per recorded case, on a GPU after
    its first call, on the CPU its first (``checks.bench_entries.launches``)."""

    kernel: Label  # the policy kernel
    side: Literal["base", "head"]
    cases: Count
    kernels: tuple[LaunchedKernel, ...] = Field(default=(), max_length=64)
    profiler: bool = False  # every GPU kernel was recorded; False: Triton's launches only
    note: Label = ""  # what was not recorded, and why


class SweepEvidence(Frozen):
    vendor: Vendor
    gpu: str  # e.g. "NVIDIA H200"
    tolerance_note: str = ""  # e.g. "3% (softmax 5%)"
    shapes: tuple[ShapeLine, ...]
    geomean_ratio: Positive | None = None
    geomean_ci: tuple[NonNegative, NonNegative] | None = None
    weighted: bool = False
    dropped_rounds: Count = 0
    gpu_seconds: Seconds = 0.0
    timing_kind: Literal["gpu", "cpu"] = "gpu"
    # what each bench entry launched at base and at head; empty where nothing was recorded
    launches: tuple[LaunchRecord, ...] = Field(default=(), max_length=1000)

    @property
    def failures(self) -> tuple[ShapeLine, ...]:
        """The shapes that failed at head: a shape only the base failed at is ``fixed``."""
        return tuple(s for s in self.shapes if s.verdict in FAILED_VERDICTS and not s.fixed)

    @property
    def fixed(self) -> tuple[ShapeLine, ...]:
        """The shapes the base failed at and the head ran."""
        return tuple(s for s in self.shapes if s.fixed)

    @property
    def slower(self) -> tuple[ShapeLine, ...]:
        return tuple(s for s in self.shapes if s.verdict == "SLOWER")

    @property
    def stopped(self) -> tuple[ShapeLine, ...]:
        """The shapes not measured because the sweep was stopped before them: not run."""
        return tuple(s for s in self.shapes if s.verdict == "STOPPED")

    @property
    def inconclusive(self) -> tuple[ShapeLine, ...]:
        return tuple(s for s in self.shapes if s.verdict == "INCONCLUSIVE")

    @property
    def worst(self) -> ShapeLine | None:
        timed = [s for s in self.shapes if s.ratio is not None]
        return max(timed, key=lambda s: s.ratio or 0.0) if timed else None


class PickSpread(Frozen):
    """A served shape whose autotunings, each in a fresh process, did not all keep one config."""

    shape: Label  # "1000x1000x1000:bfloat16"
    configs: tuple[Label, ...] = Field(max_length=8)  # each distinct pick ("kernel: k=v, ...")
    autotunings: Count


class FirstCallEvidence(Frozen):
    vendor: Vendor | Literal["cpu"]
    kernel: str
    cold_ms: NonNegative | None
    warm_ms: NonNegative | None
    compile_ms: NonNegative | None = None
    autotune_ms: NonNegative | None = None
    distinct_keys: Count | None = None
    cold_total_ms: NonNegative | None = None  # serving the policy's shape distribution once, cold
    # cold_total_ms derived from each shape's own cold first call (what an earlier shape compiled
    # or tuned is not paid again), not timed as a pass of its own
    cold_total_derived: bool = False
    over_budget_shapes: tuple[str, ...] = ()
    compile_only: bool = False  # measured on a CPU by compiling, not launching
    detail: str = ""
    side: Literal["base", "head"] = "head"  # base too when the change moves the toolchain
    unstable_picks: tuple[PickSpread, ...] = Field(default=(), max_length=64)


class TritonLayout(Frozen):
    """A layout the compiler chose for one of a kernel's main operations (Part C-1), read from
    the Triton GPU IR: how a tensor is spread over lanes and warps (wavefronts on AMD)."""

    role: Literal["load", "store", "reduce", "dot"]
    kind: Label  # "blocked", "nvidia_mma", "amd_mfma", "amd_wmma", "linear", ...
    shape: tuple[Dim, ...] = Field(default=(), max_length=8)  # the tensor's
    axis: Count | None = None  # a reduction's axis
    size_per_thread: tuple[Dim, ...] = Field(default=(), max_length=8)
    threads_per_warp: tuple[Dim, ...] = Field(default=(), max_length=8)
    warps_per_cta: tuple[Dim, ...] = Field(default=(), max_length=8)
    order: tuple[Dim, ...] = Field(default=(), max_length=8)
    instr_shape: tuple[Dim, ...] = Field(default=(), max_length=8)  # matrix layouts
    version: Label = ""  # matrix layouts: the MMA / MFMA generation

    def text(self) -> str:
        """``blocked sizePerThread [1] threadsPerWarp [32] warpsPerCTA [4] order [0]``, in the
        IR's own attribute names."""

        def dims(v: tuple[int, ...]) -> str:
            return "[" + ", ".join(map(str, v)) + "]"

        parts = [self.kind + (f" v{self.version}" if self.version else "")]
        for name, value in (
            ("sizePerThread", self.size_per_thread),
            ("threadsPerWarp", self.threads_per_warp),
            ("warpsPerCTA", self.warps_per_cta),
            ("order", self.order),
            ("instrShape", self.instr_shape),
        ):
            if value:
                parts.append(f"{name} {dims(value)}")
        return " ".join(parts)


FlagKind = Literal[
    "compile_failed",
    "entry_failed",
    "spill",
    "regs_at_cap",
    "occupancy_lower",
    "no_matrix_instr",
    "shared_config_list",  # one config list serves several vendors
    "maxnreg_ignored",
    "reduction_more_warps",
]
# what an older flag said, which the review told apart: a kernel's one config list for vendors
_OLDER_SHARED_LIST = "one config list serves"


class CompilerFlag(Frozen):
    severity: Literal["error", "warning", "info"]
    kind: FlagKind | None = None  # what it is about; None where the results do not say
    kernel: str
    vendor: Vendor
    target: str
    message: str
    path: str | None = None
    line: Count | None = None

    @model_validator(mode="before")
    @classmethod
    def _older_file(cls, data: Any) -> Any:
        """A flag written before its kind was kept (the key absent) has it read from its words
        where the review told it apart then: "softmax: one config list serves both vendors"."""
        if not isinstance(data, dict) or "kind" in data:
            return data
        said = str(data.get("message", "")).removeprefix(f"{data.get('kernel')}: ")
        return (
            {**data, "kind": "shared_config_list"} if said.startswith(_OLDER_SHARED_LIST) else data
        )


class AutotuneList(Frozen):
    """One ``triton.autotune`` list as the compile worker saw it after importing the code for
    ``targets`` (a list built at import time is read here, where static analysis cannot)."""

    kernel: Label  # the policy kernel whose entry point launched it
    function: Label  # the JIT function it tunes
    targets: tuple[Label, ...] = Field(min_length=1, max_length=64)
    configs: tuple[Label, ...] = Field(default=(), max_length=MAX_CONFIGS)
    more_configs: Count = 0  # configs past MAX_CONFIGS, not listed
    key: tuple[Label, ...] = Field(default=(), max_length=64)
    pruned: bool = False  # prune_configs_by / early_config_prune: fewer may be compiled or run
    heuristics: tuple[Label, ...] = Field(default=(), max_length=64)  # @triton.heuristics values
    best: dict[Label, Label] = Field(default_factory=dict, max_length=MAX_CONFIGS)  # key -> config


class AutotuneEvidence(AutotuneList):
    """An autotune list of the old or the new side."""

    side: Literal["old", "new"]


class CompilerEvidence(Frozen):
    """Per kernel and target: old against new registers/spills/occupancy, the flags, and the
    live autotune lists of both sides."""

    rows: tuple[CompilerRow, ...] = ()
    flags: tuple[CompilerFlag, ...] = ()
    autotune: tuple[AutotuneEvidence, ...] = Field(default=(), max_length=1000)
    configs_differ_per_vendor: dict[str, bool] = Field(default_factory=dict)

    def merge(self, other: CompilerEvidence) -> CompilerEvidence:
        """Both parts' rows and flags; ``other`` wins a kernel both say something about."""
        return _merged(self, other)


class CompilerRow(Frozen):
    """One compiled variant: a kernel's config on one side and target, in one specialization
    (C++ kernels have none)."""

    kernel: str
    side: Literal["old", "new"]
    language: Literal["triton", "cuda", "hip"]
    vendor: Vendor
    target: str
    config: str
    regs_per_thread: Count | None = None
    spill_bytes: Count | None = None
    shared_bytes: Count | None = None
    occupancy: str | None = None  # in words: "8 warps/SM (12%)"
    # the same as numbers: resident warps (waves) in the vendor's unit, and the fraction of
    # the most the hardware holds
    occupancy_resident: Count | None = None
    occupancy_unit: Label = ""
    occupancy_fraction: NonNegative | None = None
    matrix_instr: str | None = None
    load_bits_max: Count | None = None
    layouts: tuple[TritonLayout, ...] = Field(default=(), max_length=32)  # Triton only (C-1)
    error: str | None = None
    # how Triton specialised the arguments: types, /16 = 16-byte divisible, =1 = fixed to 1
    specialization: Label = ""
    # served shapes and dtypes that compile to this variant, e.g. "1000003:bfloat16"
    shapes: tuple[Label, ...] = Field(default=(), max_length=MAX_CONFIGS)

    @model_validator(mode="before")
    @classmethod
    def _older_file(cls, data: Any) -> Any:
        """A row written before the occupancy's numbers were fields (their key absent) has them
        read from its words, as the review read them then: "8 warps/SM (12%)"."""
        if not isinstance(data, dict) or "occupancy_fraction" in data:
            return data
        text = str(data.get("occupancy") or "")
        pct, words = _OLDER_PERCENT.search(text), _OLDER_OCCUPANCY.fullmatch(text)
        read: dict[str, Any] = {"occupancy_fraction": float(pct.group(1)) / 100} if pct else {}
        if words:
            read.update(occupancy_resident=int(words.group(1)), occupancy_unit=words.group(2))
        return {**data, **read} if read else data


CompilerEvidence.model_rebuild()


class SmemTraffic(Frozen):
    """Shared-memory (LDS) traffic of one GPU kernel in one call of a bench case, from the
    vendor's profiler (Part C-3). The units are the profiler's, named in ``*_unit``."""

    kernel: Label  # the policy kernel
    side: Literal["old", "new"]
    vendor: Vendor
    gpu: Label = ""
    shape: tuple[Dim, ...] = Field(max_length=8)
    dtype: Label
    function: Label  # the GPU kernel's name as the profiler reports it
    launches: Count = 0
    accesses: Count | None = None  # shared-memory load + store wavefronts, or LDS instructions
    accesses_unit: Label = ""
    conflicts: Count | None = None  # bank conflicts, or cycles lost to them
    conflicts_unit: Label = ""
    profiler: Label = ""  # "ncu", "rocprofv3"


class RolloutFact(Frozen):
    kernel: str
    old_paths: tuple[str, ...]
    kept: bool
    how: str  # "behind TOYOPS_SOFTMAX_IMPL", "deleted; in history at abc1234"


class NotRun(Frozen):
    check: Check
    vendor: Vendor | None = None
    reason: str
    path: Label = ""  # the file it holds for, where one: a C++ kernel no compiler here reads
    # what the machine that ran the review has, where that is why: "this machine has no GPU"
    # (said once after the reasons of every vendor it holds for)
    here: Label = ""

    @model_validator(mode="before")
    @classmethod
    def _older_file(cls, data: Any) -> Any:
        """A compiler's line written before ``path`` was a field (its key absent) said the file
        first in its reason: "csrc/add.hip: no hipcc on this machine"."""
        if not isinstance(data, dict) or "path" in data or data.get("check") != "compiler":
            return data
        path, _, reason = str(data.get("reason", "")).partition(": ")
        if not reason or not path or " " in path:
            return data
        return {**data, "path": path, "reason": reason}

    @property
    def said(self) -> str:
        """The reason in full: "needs an AMD GPU runner; this machine has no GPU"."""
        return f"{self.reason}; {self.here}" if self.here else self.reason


class SideToolchain(Frozen):
    """The toolchain one side's workers ran under, as the measure job found it installed."""

    side: Literal["base", "head"]
    versions: dict[Label, Label] = Field(default_factory=dict, max_length=32)  # triton: 3.6.0
    environment: Label = ""  # "the runner's own", "uv environment 1f3a... (triton==3.5.1)"


class KernelHistory(Frozen):
    """A kernel's recorded runs on the default branch, oldest first: (date, commit, median
    microseconds over its served shapes, the toolchain it ran under)."""

    kernel: str
    points: tuple[tuple[Label, Label, Positive, Label], ...] = Field(default=(), max_length=1000)


class Evidence(Frozen):
    """Everything known about one pull request at one head SHA."""

    sweeps: tuple[SweepEvidence, ...] = ()
    first_calls: tuple[FirstCallEvidence, ...] = ()
    compiler: CompilerEvidence | None = None
    repo: RepoConditions | None = None
    rollbacks: tuple[RolloutFact, ...] = ()
    smem: tuple[SmemTraffic, ...] = Field(default=(), max_length=2000)  # C-3, opt-in
    not_run: tuple[NotRun, ...] = ()
    toolchains: tuple[SideToolchain, ...] = ()
    history: tuple[KernelHistory, ...] = ()

    def merge(self, other: Evidence) -> Evidence:
        """This evidence and ``other`` in one, field by field (a new field merges without an
        edit here): tuples concatenated in order, the compiler parts merged, ``repo`` kept from
        the side that has it."""
        return _merged(self, other)


def merge_all(parts: Iterable[Evidence]) -> Evidence:
    """Every part merged in order into one Evidence (empty when there are none)."""
    out = Evidence()
    for part in parts:
        out = out.merge(part)
    return out
