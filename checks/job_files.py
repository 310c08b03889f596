"""The files between the bot and its helper programs: every job and every answer, typed.

A helper program runs as ``python -m MODULE JOB`` (``checks.job_process.run_job``, or forked
from the sweep's zygote): it reads its job from the file ``JOB`` and writes its answer to the
file the job names (``checks.job_child.main``). The helpers and their jobs:

- compiling ahead (``checks.sweep.precompile_job``): ``CompileAhead``, answered ``AheadAnswer``;
- the compiler report, one target (``checks.compiler.worker``): ``CompilerReportJob``, answered
  ``CompilerReportAnswer`` (which the report also keeps in its cache of jobs);
- the first-call probe (``checks.first_call.probe``): ``FirstCallProbe``, answered
  ``ProbeAnswer``;
- one case under the vendor's profiler, ncu or rocprofv3 (``checks.compiler.profile.driver``):
  ``ProfileRun``, answered ``Profiled`` (the counters are in the profiler's own output).

A job file is ``{"version", "job": <its MODULE>, "out": <the answer's path>, "fields": {...}}``;
an answer file ``{"version", "answer": {...}}``, or ``{"version", "failure": {"fatal",
"traceback"}}`` (a ``JobFailure``: the helper raised, or, written by ``run_job`` itself, it timed
out, died or was stopped). Both ends check what they write (``job_text``, ``answer_text``) and
what they read (``read_job``, ``read_answer``): a file of another version, for another helper,
with a field missing, of the wrong type or unknown, is a ``ContractError`` that says which file
and which field. The fields are checked as the worker contract checks its messages
(``contract.py``: a float that is not finite travels as its name, a None left out where None
is the default).

Standard library only: a helper pays nothing for it before it measures anything.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Literal, TypeVar

from checks.worker.contract import ContractError, as_json, from_json

# 1: every helper's job and answer typed and versioned here
VERSION = 1

A = TypeVar("A")
J = TypeVar("J", bound="Job[Any]")


@dataclass(frozen=True)
class Job(Generic[A]):
    """A helper's job: ``MODULE`` runs it, ``ANSWER`` is its answer's class."""

    MODULE: ClassVar[str]
    ANSWER: ClassVar[type]


@dataclass(frozen=True)
class JobFailure:
    """A job without its answer: what went wrong (``fatal``, one line) and, where the helper
    raised, its traceback."""

    fatal: str
    traceback: str | None = None


# --------------------------------------------------------------------------- compiling ahead


@dataclass(frozen=True)
class AheadCase:
    entries: tuple[str, ...]  # the entry points, in order: the first the checkout has is called
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class AheadAnswer:
    variants: int  # distinct Triton variants recorded
    compiled: int
    cache_hits: int  # found in the side's Triton cache already
    compile_errors: tuple[str, ...]  # the first five variants that did not compile
    launcher_errors: tuple[str, ...]  # launchers and driver utilities left to the workers
    case_errors: tuple[str, ...]  # the first five cases that could not be recorded
    cases_failed: int
    first_case_s: float  # the first case recorded and compiled, from the job's start
    record_s: float  # every case recorded
    seconds: float


@dataclass(frozen=True)
class CompileAhead(Job[AheadAnswer]):
    """One side's cases compiled for ``target`` into its Triton cache, off the GPU."""

    MODULE, ANSWER = "checks.sweep.precompile_job", AheadAnswer
    repo_root: str
    python_path: tuple[str, ...]  # the checkout's folders imported from before its root
    target: str  # the GPU's compiler target, e.g. sm_90
    jobs: int  # compiling processes
    cases: tuple[AheadCase, ...]


# --------------------------------------------------------------------------- compiler report


@dataclass(frozen=True)
class KernelSpec:
    """One policy kernel, as far as the compiler report and the first-call probe need it."""

    name: str
    bench: str  # "module:function", importable from the repository root
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    # the policy's python_path: folders of the checkout imported from before its root (src/)
    python_path: tuple[str, ...] = ()


@dataclass(frozen=True)
class CompilerReportAnswer:
    triton_version: str
    target: str
    # each a ``checks.compiler.records.KernelCompileRecord``, which the bot validates it as
    records: tuple[dict[str, Any], ...]
    # each a ``bot.contracts.evidence.AutotuneList``: the live autotune lists of the calls
    autotune: tuple[dict[str, Any], ...]
    compiled: int  # variants compiled by this job
    cached: int  # variants read from the report's cache of records
    wall_s: float
    record_s: float  # imports and calling the entry points


@dataclass(frozen=True)
class CompilerReportJob(Job[CompilerReportAnswer]):
    """Every variant of ``kernels`` compiled for one target and measured."""

    MODULE, ANSWER = "checks.compiler.worker", CompilerReportAnswer
    repo_root: str
    target: str
    cache_dir: str  # the report's cache of records per variant
    jobs: int  # compiling processes
    kernels: tuple[KernelSpec, ...]


# --------------------------------------------------------------------------- first-call probe


@dataclass(frozen=True)
class ProbeShape:
    """One shape's first call in a probe (``checks.first_call.measure.ShapeFirstCall`` reads
    it); only ``shape`` and ``error`` where it failed."""

    shape: str  # "1823x781:float32"
    first_call_ms: float | None = None  # time to the first result (GPU: synchronised)
    second_call_ms: float | None = None
    compiles: int = 0  # kernels compiled (Triton's cache missed)
    cache_hits: int = 0
    compile_ms: float = 0.0
    compiled: tuple[tuple[str, float], ...] = ()  # (variant hash, ms) of each compile
    modules: tuple[tuple[str, float], ...] = ()  # (source key, ms) of each C module
    stage_ms: dict[str, float] = field(default_factory=dict)
    autotune_ms: float | None = None
    autotune_keys: tuple[str, ...] = ()
    configs_picked: tuple[str, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class ProbeAnswer:
    """What one fresh process paid, in ms; a priming job stops after the imports (the fields
    after them None, no shapes)."""

    python_start_ms: float  # from the parent's spawn to the probe's first line
    probe_overhead_ms: float  # the probe's own imports: not what a production process pays
    import_torch_ms: float
    import_triton_ms: float
    import_entry_ms: float | None = None
    context_ms: float | None = None  # the GPU context (None in compile-only mode: none made)
    triton_setup_ms: float | None = None
    device: str | None = None  # the GPU's name (mode gpu)
    standalone: tuple[ProbeShape, ...] = ()
    distribution: tuple[ProbeShape, ...] | None = None  # None: the pass was not asked for


@dataclass(frozen=True)
class FirstCallProbe(Job[ProbeAnswer]):
    """A kernel's first calls in a fresh process (``checks.first_call.probe``)."""

    MODULE, ANSWER = "checks.first_call.probe", ProbeAnswer
    repo_root: str
    bench: str
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    mode: Literal["gpu", "compile-only"]
    target: str  # compile-only: the target compiled for
    device: str
    cache_root: str  # each shape's Triton cache goes below it
    python_path: tuple[str, ...] = ()
    prime: bool = False  # only import torch and Triton (and make the GPU context)
    distribution: bool = True  # False: the standalone pass only
    spawned_at: float | None = None  # time.time() when the parent started it


# --------------------------------------------------------------------------- the profiler


@dataclass(frozen=True)
class Profiled:
    """The profiled call ran; its kernels' counters are in the profiler's output."""


@dataclass(frozen=True)
class ProfileRun(Job[Profiled]):
    """One case called once untimed, then once between the profiler's start and stop."""

    MODULE, ANSWER = "checks.compiler.profile.driver", Profiled
    repo_root: str
    bench: str
    shape: tuple[int, ...]
    dtype: str
    region: Literal["cuda", "roctx"]  # how the region is marked: CUDA's profiler API, ROCTx
    python_path: tuple[str, ...] = ()


# --------------------------------------------------------------------------- the files


@dataclass(frozen=True)
class _JobFile:
    """A job file: the job's ``fields`` for helper ``job`` (its MODULE), answered at ``out``."""

    version: int
    job: str
    out: str
    fields: dict[str, Any]


@dataclass(frozen=True)
class _AnswerFile:
    """An answer file: the answer's fields, or the failure."""

    version: int
    answer: dict[str, Any] | None = None
    failure: JobFailure | None = None


def _loaded(text: str | bytes, what: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ContractError(f"{what} that is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ContractError(f"{what} must be a JSON object, got {type(data).__name__}")
    version = data.get("version")
    if version != VERSION:
        raise ContractError(
            f"{what} is version {version!r} of the helper jobs' files, this side reads "
            f"{VERSION}: it was written by another kernel-review install (checks/ beside an "
            "older or newer bot); reinstall kernel-review so that both are the same"
        )
    return data


def _checked(cls: type, message: Any, where: str) -> dict[str, Any]:
    """``message`` as JSON values, each field checked against ``cls`` first."""
    if type(message) is not cls:
        raise ContractError(f"{where}: expected a {cls.__name__}, got {type(message).__name__}")
    data: dict[str, Any] = as_json(message)
    from_json(cls, data, where)
    return data


def job_text(job: Job[Any], out: str) -> str:
    """The job file of ``job``, whose answer goes to ``out``; ContractError for a field that
    does not fit its type."""
    what = f"the job of {job.MODULE}"
    fields = _checked(type(job), job, what)
    return json.dumps(as_json(_JobFile(VERSION, job.MODULE, out, fields)), allow_nan=False)


def answer_path(text: str | bytes) -> str:
    """Where the job file ``text`` wants its answer; ContractError when it names none."""
    return from_json(_JobFile, _loaded(text, "the job file"), "the job file").out


def read_job(cls: type[J], text: str | bytes) -> J:
    """The job of class ``cls`` the job file ``text`` holds; ContractError when it holds
    another helper's, or does not fit."""
    envelope = from_json(_JobFile, _loaded(text, "the job file"), "the job file")
    if envelope.job != cls.MODULE:
        raise ContractError(f"the job file is for {envelope.job!r}, not for {cls.MODULE}")
    return from_json(cls, envelope.fields, f"the job of {cls.MODULE}")


def answer_text(cls: type[Job[Any]], answer: Any) -> str:
    """The answer file of ``answer`` (``cls.ANSWER``, or a JobFailure); ContractError for an
    answer of another class, or a field that does not fit its type."""
    if isinstance(answer, JobFailure):
        return json.dumps(as_json(_AnswerFile(VERSION, failure=answer)), allow_nan=False)
    fields = _checked(cls.ANSWER, answer, f"the answer of {cls.MODULE}")
    return json.dumps(as_json(_AnswerFile(VERSION, answer=fields)), allow_nan=False)


def read_answer(cls: type[Job[A]], text: str | bytes) -> A | JobFailure:
    """The answer to a job of class ``cls`` the answer file ``text`` holds, or the failure it
    reports; ContractError when it is neither."""
    what = f"the answer of {cls.MODULE}"
    envelope = from_json(_AnswerFile, _loaded(text, what), what)
    if (envelope.answer is None) == (envelope.failure is None):
        raise ContractError(f"{what} must hold either an answer or a failure")
    if envelope.failure is not None:
        return envelope.failure
    answer: A = from_json(cls.ANSWER, envelope.answer or {}, what)
    return answer
