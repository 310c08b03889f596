"""The contract between the bot and its worker processes: every command, every answer, typed.

A worker (``main.py``) reads one JSON line per command on its command pipe and writes one JSON
line per answer on its answer pipe (``checks/sweep/workers.py`` is the bot's end). A command is
one of the request classes below, on the wire ``{"op": <its OP>, <its fields>}``; the answer is
``{"ok": true, <the fields of its REPLY class>}``, or a ``Failure`` (``{"ok": false, ...}``).
The zygote (``zygote.py``, the bot's end ``checks/sweep/zygote.py``) takes ``ForkWorker`` and
``ForkJob`` requests on its socket and answers ``Forked`` or ``ForkRefused``.

Both ends check what they send (``encode_request``, ``encode_reply``) and what they read
(``decode_request``, ``decode_reply``, ``decode_fork``, ``decode_forked``): a field missing, of
the wrong type, or not in the contract is a ``ContractError`` that names the message and the
field. ``hello`` carries ``VERSION`` both ways;
a worker of another version refuses it, and the bot refuses a worker that answers with another.

Standard library only, and loaded by file path in the worker (see ``__init__.py``). A field that
is None and whose default is None is left out of the line, as the commands always left out what
they did not set; a float that is not finite travels as its name (``"nan"``, ``"inf"``: not
JSON numbers) and is read back as the float.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Literal, TypeVar, Union

# 2: every message typed and validated here, the version in ``hello``
# 3: a check may record the kernels one call of its case launched (``Check.launches``)
# 4: a prepare says how much of it was Triton compiling and loading (``PrepareReply.compile_s``)
# 5: ``Check.launches`` says how to record: with the profiler, or Triton's launches alone
VERSION = 5

Mode = Literal["cpu", "graph", "eager", "eager-noflush", "kernels", "kernels-noflush"]
MODES: tuple[str, ...] = typing.get_args(Mode)
Device = Literal["cpu", "cuda"]
Side = Literal["base", "head"]
# how a check records what a call launched (``checks.bench_entries.launches``): every kernel
# through the profiler, or Triton's launches alone (no profiler to start)
Recorder = Literal["profiler", "triton"]
# what a config's value may be in an autotuner's pick (``autotune_picks._plain``)
Scalar = Union[str, int, float, bool, None]  # noqa: UP007 (a runtime value; 3.10 has no `|` of None)


class ContractError(ValueError):
    """A message that does not fit the contract: which message, which field, and how."""


def as_mode(text: str) -> Mode:
    """``text`` as a timing mode; ContractError for a name no timer knows."""
    if text not in MODES:
        raise ContractError(f"no timing mode {text!r}; the modes are {', '.join(MODES)}")
    return typing.cast(Mode, text)


# --------------------------------------------------------------------------- validation


def _float(value: Any, where: str) -> float:
    if isinstance(value, bool):
        raise ContractError(f"{where}: expected a number, got {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and value in ("nan", "inf", "-inf"):
        return float(value)
    raise ContractError(f"{where}: expected a number, got {_shown(value)}")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


Checker = Callable[[Any, str], Any]


def _checker(tp: Any) -> Checker:
    """A function that returns ``value`` as type ``tp`` (a dataclass from its dict, a tuple from
    a list, a float from an int or a non-finite float's name) or raises ContractError."""
    if tp is Any:
        return lambda v, where: v
    if tp is type(None) or tp is None:

        def none(v: Any, where: str) -> None:
            if v is not None:
                raise ContractError(f"{where}: expected null, got {_shown(v)}")

        return none
    if tp is float:
        return _float
    if tp in (bool, int, str):

        def plain(v: Any, where: str) -> Any:
            # a subclass (torch's version string) as its base; a bool is no int to the contract
            if not isinstance(v, tp) or (tp is int and isinstance(v, bool)):
                raise ContractError(f"{where}: expected {tp.__name__}, got {_shown(v)}")
            return v if type(v) is tp else tp(v)

        return plain
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return lambda v, where: _from_dict(tp, v, where)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Literal:

        def literal(v: Any, where: str) -> Any:
            if v not in args or isinstance(v, bool):
                raise ContractError(f"{where}: expected one of {list(args)}, got {_shown(v)}")
            return v

        return literal
    if origin in (Union, types.UnionType):
        return _union(args)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = _checker(args[0])
        return lambda v, where: tuple(
            item(x, f"{where}[{i}]") for i, x in enumerate(_seq(v, where))
        )
    if origin is tuple:
        items = [_checker(a) for a in args]

        def fixed(v: Any, where: str) -> tuple[Any, ...]:
            seq = _seq(v, where)
            if len(seq) != len(items):
                raise ContractError(f"{where}: expected {len(items)} items, got {len(seq)}")
            return tuple(
                c(x, f"{where}[{i}]") for i, (c, x) in enumerate(zip(items, seq, strict=True))
            )

        return fixed
    if origin is dict:
        value = _checker(args[1])

        def mapping(v: Any, where: str) -> dict[str, Any]:
            if not isinstance(v, dict) or not all(isinstance(k, str) for k in v):
                raise ContractError(f"{where}: expected an object, got {_shown(v)}")
            return {k: value(x, f"{where}.{k}") for k, x in v.items()}

        return mapping
    raise TypeError(f"the contract has no rule for {tp!r}")


def _seq(v: Any, where: str) -> list[Any] | tuple[Any, ...]:
    if not isinstance(v, (list, tuple)):
        raise ContractError(f"{where}: expected a list, got {_shown(v)}")
    return v


def _union(args: tuple[Any, ...]) -> Checker:
    nullable = type(None) in args
    checks = [_checker(a) for a in args if a is not type(None)]

    def union(v: Any, where: str) -> Any:
        if v is None and nullable:
            return None
        problems = []
        for check in checks:
            try:
                return check(v, where)
            except ContractError as exc:
                problems.append(str(exc))
        if len(problems) == 1:  # an optional field: what is wrong with the value
            raise ContractError(problems[0])
        raise ContractError(f"{where}: {_shown(v)} fits none of its types")

    return union


@dataclass(frozen=True)
class _Field:
    name: str
    check: Checker
    required: bool
    omit_none: bool  # None, its default, is left out of the line


_FIELDS: dict[type, tuple[_Field, ...]] = {}
_NAMES: dict[type, frozenset[str]] = {}


def _fields(cls: type) -> tuple[_Field, ...]:
    known = _FIELDS.get(cls)
    if known is None:
        # this module's own names: the zygote and the worker program it loads may each load it;
        # a message of a sibling module (``checks/job_files.py``) sees that module's names too
        module = sys.modules.get(cls.__module__)
        names = {**globals(), **vars(module)} if module is not None else globals()
        hints = typing.get_type_hints(cls, names)
        known = tuple(
            _Field(
                f.name,
                _checker(hints[f.name]),
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
                f.default is None,
            )
            for f in dataclasses.fields(cls)
        )
        _FIELDS[cls] = known
        _NAMES[cls] = frozenset(f.name for f in known)
    return known


M = TypeVar("M")


def _from_dict(cls: type[M], data: Any, where: str) -> M:
    """``cls`` from ``data``, every field checked; ContractError for what does not fit."""
    if not isinstance(data, dict):
        raise ContractError(f"{where}: expected an object, got {_shown(data)}")
    fields = _fields(cls)
    unknown = data.keys() - _NAMES[cls]
    if unknown:
        raise ContractError(f"{where}: no field {', '.join(sorted(unknown))} in the contract")
    values = {}
    for f in fields:
        if f.name in data:
            values[f.name] = f.check(data[f.name], f"{where}.{f.name}")
        elif f.required:
            raise ContractError(f"{where}: {f.name} is missing")
    try:
        return cls(**values)
    except ContractError as exc:
        raise ContractError(f"{where}: {exc}") from None


def as_json(message: Any) -> Any:
    """``message`` (a dataclass of this module, or what one holds) as JSON values: objects,
    lists, numbers, strings; a field that is None where None is its default left out."""
    kind = type(message)
    if kind is float:
        return message if math.isfinite(message) else str(message)
    if kind in _PLAIN or message is None:
        return message
    if kind in _FIELDS or hasattr(kind, "__dataclass_fields__"):
        out: dict[str, Any] = {}
        for f in _fields(kind):
            value = getattr(message, f.name)
            if value is None:
                if not f.omit_none:
                    out[f.name] = None
            elif type(value) in _PLAIN:
                out[f.name] = value
            else:
                out[f.name] = as_json(value)
        return out
    if isinstance(message, (list, tuple)):
        return [as_json(v) for v in message]
    if isinstance(message, dict):
        return {k: as_json(v) for k, v in message.items()}
    if isinstance(message, float) and not math.isfinite(message):
        return str(message)
    return message


_PLAIN = frozenset({str, int, bool})


# --------------------------------------------------------------------------- shared parts


@dataclass(frozen=True)
class Pick:
    """The config one Triton autotuner ran for a case (``autotune_picks.recording``)."""

    function: str  # the tuned kernel's name
    config: dict[str, Scalar]  # its keyword values and the options that are not their defaults
    offered: str  # digest of the configs it chose from
    source: str  # digest of the kernel's source ('' where there is none)
    pinned: bool | None = None  # True: fixed to another worker's pick, not tuned here


@dataclass(frozen=True, kw_only=True)
class Marks:
    """``time.monotonic()`` (the system's clock, the bot's too) when a worker's program, or the
    zygote's, began, had Triton's key and torch, was ready, each of its start-up threads ended
    and its GPU context was asked for and made (``main.py``'s ``MARKS``), or it had imported and
    loaded the worker program (the zygote's, ``zygote.py``'s ``MARKS``); None: not by then, or
    not in this process."""

    main_at: float | None = None
    torch_at: float | None = None
    ready_at: float | None = None
    key_at: float | None = None
    utils_at: float | None = None
    driver_at: float | None = None
    checks_at: float | None = None
    context_asked_at: float | None = None
    context_at: float | None = None
    imported_at: float | None = None
    program_at: float | None = None


@dataclass(frozen=True)
class Telemetry:
    """What NVML said right after a block (``telemetry.Nvml.read``)."""

    sm_clock_mhz: float | None
    mem_clock_mhz: float | None
    max_sm_clock_mhz: float | None
    temp_c: float | None
    power_w: float | None
    throttle_reasons: int | None
    throttle_names: tuple[str, ...]
    throttled: bool


@dataclass(frozen=True)
class Digest:
    """One output of a check's first call, compactly (``correctness.digest``): base's and head's
    are compared by ``correctness.compare_digests``."""

    shape: tuple[int, ...]
    dtype: str
    nan: int
    inf: int
    idx: tuple[int, ...]  # the flat indices sampled
    samples: tuple[float, ...]
    parts: tuple[tuple[int, int, float, float], ...]  # start, stop, sum, sum of magnitudes


@dataclass(frozen=True)
class Launch:
    """A kernel one call of a case launched (``launches.recording``)."""

    name: str  # a Triton kernel's function name; any other kernel's qualified name, demangled
    triton: bool
    count: int  # its launches in the call
    atomics: bool | None = None  # a Triton kernel's compiled code holds atomics; None: not read


@dataclass(frozen=True)
class Launched:
    """The kernels one call of a case launched (``launches.recording``)."""

    kernels: tuple[Launch, ...]
    profiler: bool  # the profiler saw every GPU kernel; False: Triton's launches only
    note: str = ""  # what was not recorded, and why
    # device buffers the call allocated besides those it returned (a workspace, temporaries);
    # None: not counted (the CPU, an allocator that keeps no statistics)
    allocations: int | None = None


@dataclass(frozen=True)
class Like:
    """Another worker's block structure, which a configure takes instead of sizing its own."""

    calls_per_block: int | None = None
    graph_calls: int | None = None
    replays: int | None = None


# --------------------------------------------------------------------------- answers


@dataclass(frozen=True, kw_only=True)
class HelloReply(Marks):
    version: int
    pid: int  # the worker's own (a sandbox's launcher is its parent)
    python: str
    side: Side
    root: str
    gc_frozen: int  # objects ``gc.freeze`` kept out of the collector


@dataclass(frozen=True)
class EnvReply:
    """The machine the worker runs on (``env_fingerprint.collect``): its fields are those of the
    results file's record of it, ``checks.sweep.models.EnvFingerprint``, which the bot reads it
    into (``WorkerClient.env_info``)."""

    env: dict[str, Scalar]


@dataclass(frozen=True)
class PrepareReply:
    entry: str  # the entry point that was found among those asked for
    est_us: float | None  # GPU time of one call; None when not asked to estimate
    host_us: float | None  # the host's time to issue a call, where measured
    bytes_moved: int
    flops: int
    copies: int  # input copies the calls rotate through
    footprint_bytes: int
    prepare_s: float
    configs_picked: tuple[Pick, ...]
    # of ``prepare_s``, Triton compiling and loading: a worker that did not check the case makes
    # its first call here
    compile_s: float = 0.0


@dataclass(frozen=True)
class EstimateReply:
    est_us: float
    host_us: float | None = None


@dataclass(frozen=True)
class CheckReply:
    has_reference: bool
    atol: float | None  # the entry point's own tolerances (None: each output's dtype decides)
    rtol: float | None
    configs_picked: tuple[Pick, ...]
    correct: bool
    message: str
    digest: tuple[Digest, ...]
    steps_s: dict[str, float]  # where the check's time went, by step
    bad_elements: int | None = None  # None: the outputs did not match in count or shape
    max_abs_err: float | None = None
    marks: Marks | None = None  # in a worker's first check's answer only
    launched: Launched | None = None  # asked for (``Check.launches``) and recorded


@dataclass(frozen=True)
class ConfigureReply:
    """How blocks are timed; which fields are set depends on ``mode`` (``timing.py``)."""

    mode: Mode
    est_us: float
    calls_per_block: int | None = None  # a graph's, once its replays are set
    graph_calls: int | None = None
    preroll_calls: int | None = None
    replays: int | None = None
    graph_call_us: float | None = None  # a replay's time per call, where replays were timed
    flush_us: float | None = None
    cover_us: float | None = None
    host_us: float | None = None

    def with_replays(self, replays: ReplaysReply) -> ConfigureReply:
        """This graph's configuration with the replays set after it."""
        return dataclasses.replace(
            self,
            replays=replays.replays,
            calls_per_block=replays.calls_per_block,
            graph_call_us=replays.graph_call_us
            if replays.graph_call_us is not None
            else self.graph_call_us,
        )

    def like(self) -> Like:
        """What another worker takes to time blocks of this one's structure."""
        return Like(self.calls_per_block, self.graph_calls, self.replays)


@dataclass(frozen=True)
class ReplaysReply:
    replays: int
    calls_per_block: int
    graph_call_us: float | None = None


@dataclass(frozen=True)
class BlockReply:
    value_us: float  # one call's time inside the block
    calls: int
    wall_ms: float
    gpu_ms: float | None = None
    telemetry: Telemetry | None = None


@dataclass(frozen=True)
class FinishReply:
    rechecked: bool
    correct: bool
    message: str
    steps_s: dict[str, float]
    lock_not_taken_s: float | None = None  # rechecked without the GPU lock after this wait


@dataclass(frozen=True)
class WarmupReply:
    seconds: float
    reached: bool
    sm_clock_mhz: float | None = None
    skipped: bool | None = None  # True: the clock read up already, nothing was burnt


@dataclass(frozen=True)
class CeilingsReply:
    """The device's copy bandwidth and matmul rate (``ceilings.measure``): its fields are those
    of the results file's record, ``checks.sweep.models.Ceilings``, which the bot reads it into
    (``WorkerClient.ceilings``)."""

    ceilings: dict[str, Scalar]


@dataclass(frozen=True)
class QuitReply:
    pass


@dataclass(frozen=True)
class Failure:
    """A command that failed: ``kind`` is the case's status (``failures.classify``)."""

    kind: str
    error: str
    type: str
    traceback: str | None = None


# --------------------------------------------------------------------------- commands

R = TypeVar("R")


@dataclass(frozen=True)
class Request(Generic[R]):
    """A command; ``OP`` names it on the wire, ``REPLY`` is its answer's class."""

    OP: ClassVar[str]
    REPLY: ClassVar[type]
    # may run while the worker still loads the checks' GPU functions (``main.py``'s
    # ``load_checks_ahead``): every other command waits for that first
    BESIDE_LOADING: ClassVar[bool] = False
    # a command of the timed rounds: after its answer the worker polls for its next command,
    # and the bot polls for the answer (``checks.sweep.workers.POLL_MS``)
    POLLED: ClassVar[bool] = False


@dataclass(frozen=True)
class Hello(Request[HelloReply]):
    OP, REPLY, BESIDE_LOADING = "hello", HelloReply, True
    version: int = VERSION


@dataclass(frozen=True)
class Env(Request[EnvReply]):
    OP, REPLY, BESIDE_LOADING = "env", EnvReply, True


@dataclass(frozen=True)
class Prepare(Request[PrepareReply]):
    """Call the entry point for the timed input copies, run each once, size the timer."""

    OP, REPLY = "prepare", PrepareReply
    entries: tuple[str, ...]  # the first one the checkout has is run
    shape: tuple[int, ...]
    dtype: str
    seed: int = 0
    estimate: bool = True  # False: the bot asks each worker for its estimate in turn
    pins: tuple[Pick, ...] | None = None  # the configs this side's checking worker timed
    max_copies: int | None = None  # None: ``timing.MAX_COPIES``
    max_copy_bytes: int | None = None  # None: 2 GiB
    copies: int | None = None  # given: the caller keeps two sides' rotations alike


@dataclass(frozen=True)
class Estimate(Request[EstimateReply]):
    OP, REPLY = "estimate", EstimateReply


@dataclass(frozen=True)
class Check(Request[CheckReply]):
    """The case's first call (compile, autotune) on fresh inputs, against its reference."""

    OP, REPLY, BESIDE_LOADING = "check", CheckReply, True
    entries: tuple[str, ...]
    shape: tuple[int, ...]
    dtype: str
    seed: int
    pins: tuple[Pick, ...] | None = None  # another worker's picks, which fix this one's
    # the kernels a call launched are recorded (``launched``), so: on the CPU the first call's
    # (Triton's alone, either way), on a GPU one more call's after it; None: not recorded
    launches: Recorder | None = None


@dataclass(frozen=True)
class Configure(Request[ConfigureReply]):
    """Blocks of about ``block_ms`` sized from ``est_us``, or exactly ``like``'s calls."""

    OP, REPLY = "configure", ConfigureReply
    mode: Mode
    block_ms: float
    preroll: bool = True  # graph blocks start after an untimed pass over the input copies
    est_us: float | None = None  # None: the worker's own estimate
    like: Like | None = None
    time_replays: bool = True  # False: a graph's replays per block are left to ``Replays``


@dataclass(frozen=True)
class Replays(Request[ReplaysReply]):
    """A captured graph's replays per block: ``replays`` as given, or timed for ``block_ms``."""

    OP, REPLY = "replays", ReplaysReply
    replays: int | None = None
    block_ms: float | None = None

    def __post_init__(self) -> None:
        if not self.replays and self.block_ms is None:
            raise ContractError("replays needs its replays or the block_ms to time them for")


@dataclass(frozen=True)
class Block(Request[BlockReply]):
    OP, REPLY, POLLED = "block", BlockReply, True


@dataclass(frozen=True)
class Finish(Request[FinishReply]):
    """Recheck the timed copy's output (``alone``: holding the GPU lock for its calls, waiting
    for it at most ``lock_wait_s``), then release everything."""

    OP, REPLY = "finish", FinishReply
    recheck: bool = False
    alone: bool = False
    lock_wait_s: float | None = None


@dataclass(frozen=True)
class Warmup(Request[WarmupReply]):
    """Burn until the SM clock holds at ``clock_fraction`` of its maximum (``unless_up``: not
    at all when it reads up already)."""

    OP, REPLY, BESIDE_LOADING = "warmup", WarmupReply, True
    min_s: float = 0.5
    max_s: float = 5.0
    clock_fraction: float = 0.85
    unless_up: bool = False


@dataclass(frozen=True)
class MeasureCeilings(Request[CeilingsReply]):
    OP, REPLY = "ceilings", CeilingsReply


@dataclass(frozen=True)
class Quit(Request[QuitReply]):
    OP, REPLY = "quit", QuitReply


REQUESTS: dict[str, type[Request[Any]]] = {
    cls.OP: cls
    for cls in (
        Hello, Env, Prepare, Estimate, Check, Configure, Replays, Block, Finish, Warmup,
        MeasureCeilings, Quit,
    )
}  # fmt: skip


def version_problem(theirs: Any, of: str) -> str:
    """What to say when ``of`` (the worker, the bot) speaks version ``theirs``; '' when alike."""
    if theirs == VERSION:
        return ""
    return (
        f"the {of} speaks version {theirs!r} of the worker protocol, this side {VERSION}: they "
        "come from different kernel-review installs (checks/worker/ beside an older or newer "
        "bot); reinstall kernel-review so that both are the same"
    )


def encode_request(request: Request[Any]) -> bytes:
    """The command's line; each field checked against its type first (ContractError)."""
    data = as_json(request)
    _from_dict(type(request), data, request.OP)
    return (json.dumps({"op": request.OP, **data}) + "\n").encode()


def decode_request(line: bytes | str) -> Request[Any]:
    """The command a line holds; ContractError when it is none the contract knows."""
    data = _json(line, "a command")
    if not isinstance(data, dict):
        raise ContractError(f"a command must be an object, got {_shown(data)}")
    op = data.pop("op", None)
    cls = REQUESTS.get(op) if isinstance(op, str) else None
    if cls is None:
        raise ContractError(f"unknown command {op!r}; the contract knows {', '.join(REQUESTS)}")
    return _from_dict(cls, data, op)


def encode_reply(reply: Any) -> bytes:
    """The answer's line: ``ok`` and the reply's fields, or a Failure's; each field checked
    against its type first (ContractError)."""
    data = as_json(reply)
    _from_dict(type(reply), data, type(reply).__name__)
    ok = not isinstance(reply, Failure)
    return (json.dumps({"ok": ok, **data}, allow_nan=False) + "\n").encode()


def decode_reply(request: Request[R], line: bytes | str) -> R | Failure:
    """The answer to ``request`` a line holds: its reply, or the Failure the worker sent;
    ContractError when it is neither."""
    data = _json(line, f"{request.OP}: an answer")
    if not isinstance(data, dict) or not isinstance(data.get("ok"), bool):
        raise ContractError(
            f"{request.OP}: an answer must be an object with ok, got {_shown(data)}"
        )
    ok = data.pop("ok")
    if not ok:
        return _from_dict(Failure, data, f"{request.OP} failure")
    reply: R = _from_dict(request.REPLY, data, f"{request.OP} answer")
    return reply


# --------------------------------------------------------------------------- the zygote


@dataclass(frozen=True)
class ForkWorker:
    """A worker running ``main.py`` with ``argv`` (after its two pipes, sent with the request)."""

    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: str
    log: str


@dataclass(frozen=True)
class ForkJob:
    """One of the bot's helper programs, as ``python -m module job`` runs it
    (``checks.job_process.run_job``): in ``cwd`` with ``env``, its output in ``log``,
    ``sys_path`` where it finds the bot's packages, its CPU priority lowered by ``nice``."""

    module: str
    job: str
    env: dict[str, str]
    cwd: str
    log: str
    sys_path: tuple[str, ...]
    nice: int


@dataclass(frozen=True)
class Forked:
    pid: int
    marks: Marks
    bytecode: str  # where its imports' bytecode came from (``keep_bytecode``)


@dataclass(frozen=True)
class ForkRefused:
    error: str


def encode_fork(message: ForkWorker | ForkJob | Forked | ForkRefused) -> bytes:
    """A message on the zygote's socket: a request, or its answer."""
    return json.dumps(as_json(message)).encode()


def decode_fork(data: bytes) -> ForkWorker | ForkJob:
    """A fork request: a helper's job (it names a module), or a worker."""
    raw = _json(data, "a fork request")
    if isinstance(raw, dict) and "module" in raw:
        return _from_dict(ForkJob, raw, "fork job")
    return _from_dict(ForkWorker, raw, "fork worker")


def decode_forked(data: bytes) -> Forked | ForkRefused:
    """The zygote's answer: the process it forked, or why it did not."""
    raw = _json(data, "a zygote answer")
    if isinstance(raw, dict) and "error" in raw:
        return _from_dict(ForkRefused, raw, "zygote refusal")
    return _from_dict(Forked, raw, "zygote answer")


def _json(data: bytes | str, what: str) -> Any:
    try:
        return json.loads(data)
    except ValueError as exc:
        raise ContractError(f"{what} that is not JSON: {exc}") from None


def from_json(cls: type[M], data: Mapping[str, Any], where: str = "") -> M:
    """``cls`` from JSON values, checked (a message kept as JSON, read back)."""
    return _from_dict(cls, dict(data), where or cls.__name__)
