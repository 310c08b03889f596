"""The parent's side of a worker: spawn, talk JSON lines over private pipes, time out, restart.

One ``WorkerClient`` per side (base, head) and device. Every command has a timeout; a worker that
does not answer in time is killed with its whole process group. A worker that dies (segfault,
``os._exit``) or answers with a CUDA fault, an out-of-memory error or a Triton OutOfResources is
reported as a ``WorkerFailure`` whose ``kind`` becomes the case's status; the sweep restarts the
worker and goes on with the next case.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.outputs import triton_key_dir
from checks.procs import launch
from checks.procs.sandbox import kept_if_trusted, killed_at_memory_cap
from checks.procs.stopping import POLL_S, STOPPING
from checks.sweep.models import Ceilings, EnvFingerprint
from checks.sweep.protocol import Block, Telemetry
from checks.sweep.zygote import Forked, Zygote, own_triton
from checks.worker import contract
from checks.worker.exclusive import GPU_LOCK_ENV, holders
from checks.worker_env import WorkerFailure, default_memory_bytes, device_env

WORKER_MAIN = Path(__file__).resolve().parent.parent / "worker" / "main.py"
Side = Literal["base", "head"]
T = TypeVar("T")
R = TypeVar("R")
M = TypeVar("M", bound=BaseModel)
# Polling (``WorkerSpec.poll_ms``): during the rounds a worker's next command comes a few ms
# after its answer (three other blocks), and a block's answer a millisecond or two after it was
# sent; a process asleep in ``select`` or a blocking read takes a wakeup to see it. On the H200
# host (16 cores) a command's round trip beyond its work was 0.17 ms sleeping, 0.05 ms polling
# (``bench/results/h200/cost_side_by_side/overlap_poll/pipe_wakeup/``). Polling keeps a core busy per process, so only where every worker
# and the bot have two cores each, and the bot only with one GPU (one thread drives its workers).
POLL_MS = 20.0
# the share of the finish timeout a recheck beside the next case's check waits for the GPU lock
LOCK_WAIT_SHARE = 0.5


def poll_ms_for(cpus: int, workers: int, gpus: int) -> float:
    """``POLL_MS`` where ``workers`` processes and the bot have two of ``cpus`` cores each and
    one GPU's runner drives them; else 0 (sleep until a command or answer comes)."""
    return POLL_MS if gpus == 1 and cpus >= 2 * (workers + 1) else 0.0


class Timeouts(BaseModel):
    """Seconds each command may take before the worker is killed."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    start_s: float = Field(default=120.0, gt=0)
    prepare_s: float = Field(default=600.0, gt=0, description="entry call, compile, autotune")
    check_s: float = Field(default=600.0, gt=0, description="first call: compile, autotune")
    configure_s: float = Field(default=120.0, gt=0)
    block_s: float = Field(default=60.0, gt=0)
    finish_s: float = Field(default=120.0, gt=0)
    warmup_s: float = Field(default=60.0, gt=0)
    ceilings_s: float = Field(default=300.0, gt=0)
    env_s: float = Field(default=120.0, gt=0)


def context_marks(work_dir: Path) -> Path:
    """Where a sweep's workers mark their GPU contexts made (``WorkerSpec.context_args``)."""
    return work_dir / "contexts"


@dataclass
class WorkerSpec:
    side: Side
    root: Path
    device: Literal["cpu", "cuda"]
    work_dir: Path  # logs and the private Triton cache live here
    gpu: str | None = None  # the physical id for CUDA_VISIBLE_DEVICES
    timeouts: Timeouts = field(default_factory=Timeouts)
    python: str = sys.executable
    label: str = ""
    memory_bytes: int = field(default_factory=default_memory_bytes)  # 0: no cap
    python_path: tuple[str, ...] = ()  # folders of root put before it on sys.path (src/ layouts)
    slot: int = 1  # 1: the pair's first worker (base, or head in the crossover's second arm)
    arm: int = 0  # crossover arm of the pair this worker belongs to
    # after a block's answer the worker polls for its next command this long, and the bot polls
    # for a block's answer (``POLL_MS``); 0: both sleep until it comes
    poll_ms: float = 0.0
    # the sweep's pass (``checks.sweep.run``): fresh workers, their own Triton cache seeded
    # from the first pass's compiled kernels
    execution: int = 0

    @property
    def side_key(self) -> str:
        """One per side and GPU: what the crossover's two workers of a side (the same checkout)
        may share, and base and head never do."""
        return f"{self.side}-gpu{self.gpu}" if self.gpu is not None else self.side

    @property
    def lock_path(self) -> Path:
        """The GPU's lock file, shared by its workers: a case's first call holds it
        (``checks.worker.exclusive``)."""
        return self.work_dir / "locks" / f"gpu-{self.gpu if self.gpu is not None else 'none'}.lock"

    @property
    def triton_cache(self) -> Path:
        """The side's Triton cache on this GPU: its workers', and what compiling ahead fills."""
        if self.execution == 0:
            return self.work_dir / "triton-cache" / self.side_key
        return self.work_dir / "triton-cache" / f"x{self.execution}" / self.side_key

    @property
    def home(self) -> Path:
        """The side's home folder in this pass (``HOME``, ``XDG_CACHE_HOME`` under it): what
        libraries keep there (FlagGems' generated code and its autotuner's timings under
        ``~/.flaggems``) is shared by a side's two workers of a pass, never by base and head,
        and a later pass starts without it, as a fresh process on a new machine would."""
        return self.work_dir / "home" / f"x{self.execution}" / self.side_key

    def context_args(self) -> list[str]:
        """On a GPU, the first pair's workers mark when their contexts are made and the
        crossover's second pair makes its own after both (``checks/worker/main.py``'s
        ``load_checks_ahead``): the driver makes contexts asked for at once side by side, each
        slower, and the first case's check needs only the first pair's."""
        if self.device == "cpu":
            return []
        folder = context_marks(self.work_dir) / f"gpu{self.gpu if self.gpu is not None else ''}"
        if self.arm == 0:
            return [f"--context-mark={folder / self.side}"]
        return [f"--context-after={folder / side}" for side in ("base", "head")]

    @property
    def name(self) -> str:
        if self.label:
            return self.label
        name = f"{self.side}-gpu{self.gpu}" if self.gpu is not None else self.side
        return name + ("-x" if self.arm else "") + (f"-e{self.execution}" if self.execution else "")


AUTOTUNE_SUFFIX = ".autotune.json"  # the autotuner's saved picks in a Triton cache


def seed_cache(source: Path, target: Path) -> int:
    """Fill ``target`` with hard links to ``source``'s files (copies where a link cannot be
    made), leaving out the autotuner's saved picks: the compiled kernels are reused, each pick is
    made afresh. Triton writes a cache file under a temporary name and renames it into place,
    never into an existing file, so a linked file is never changed under another pass. The
    number of files placed."""
    placed = 0
    if not source.is_dir():
        target.mkdir(parents=True, exist_ok=True)
        return 0
    for folder, _, files in os.walk(source):
        into = target / Path(folder).relative_to(source)
        into.mkdir(parents=True, exist_ok=True)
        for name in files:
            if name.endswith(AUTOTUNE_SUFFIX) or (into / name).exists():
                continue
            try:
                os.link(Path(folder) / name, into / name)
            except OSError:
                shutil.copy2(Path(folder) / name, into / name)
            placed += 1
    return placed


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(code).name
    except ValueError:
        return f"signal {code}"


class WorkerClient:
    """A worker process for one side. Not thread-safe: one thread drives one client."""

    def __init__(self, spec: WorkerSpec, zygote: Zygote | None = None) -> None:
        self.spec = spec
        self.zygote = zygote  # where the worker is forked from, when it serves this spec
        self.proc: subprocess.Popen[bytes] | Forked | None = None
        self.incarnation = 0
        self.spawned_at = 0.0  # time.monotonic() at the last spawn
        self.worker_pid: int | None = None  # its own, said at its hello
        self.log_path: Path | None = None
        self._w: int | None = None
        self._r: int | None = None
        self._buf = b""

    # ------------------------------------------------------------------------------- lifecycle

    def env(self) -> dict[str, str]:
        s = self.spec
        env = device_env(s.device, s.gpu)
        cache = s.triton_cache
        home = s.work_dir / "triton-home" / s.name
        cache.mkdir(parents=True, exist_ok=True)
        home.mkdir(parents=True, exist_ok=True)
        env["TRITON_CACHE_DIR"] = str(cache)
        env["TRITON_HOME"] = str(home)
        s.home.mkdir(parents=True, exist_ok=True)
        env["HOME"] = str(s.home)
        env["XDG_CACHE_HOME"] = str(s.home / ".cache")
        # one lock per GPU: a case's first call runs alone on it
        s.lock_path.parent.mkdir(parents=True, exist_ok=True)
        env[GPU_LOCK_ENV] = str(s.lock_path)
        env["TORCHINDUCTOR_CACHE_DIR"] = str(s.work_dir / "inductor-cache" / s.name)
        # torch.utils.cpp_extension.load builds into TORCH_EXTENSIONS_DIR/<name>: shared, a
        # base and a head building an extension of the same name at once would meet there, and
        # the one that waited for the other's build would load the other side's kernel.
        env["TORCH_EXTENSIONS_DIR"] = str(s.work_dir / "torch-extensions" / s.side_key)
        # the autotuner's picks on disk too: a side's second worker takes its first's
        env["TRITON_CACHE_AUTOTUNING"] = "1"
        return env

    def start(self) -> None:
        self.spawn()
        self.hello()

    def spawn(self) -> None:
        """Start the process without waiting for it to answer (``start`` waits; several workers
        spawned first and greeted after start side by side)."""
        s = self.spec
        if STOPPING.is_set():  # the command is stopping: a restart would only be killed
            raise self._fail("stopped", "the command was stopped")
        launch.make_undumpable()  # the worker runs as this user: keep it out of this process's /proc
        self.spawned_at = time.monotonic()
        self.incarnation += 1
        self.worker_pid = None
        logs = s.work_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        self.log_path = logs / f"{s.name}-{self.incarnation}.log"
        cmd_r, cmd_w = os.pipe()
        resp_r, resp_w = os.pipe()
        root = Path(s.root).resolve()
        args = [
            "--root",
            str(root),
            "--device",
            s.device,
            "--side",
            s.side,
            "--slot",
            str(s.slot),
            f"--triton-key-dir={triton_key_dir()}",
            f"--bot-pid={os.getpid()}",
            *s.context_args(),
            *(f"--python-path={folder}" for folder in s.python_path),
            *((f"--poll-ms={s.poll_ms:g}",) if s.poll_ms > 0 else ()),
        ]
        try:
            self.proc = None
            if self._zygote_serves(root):
                self.proc = self._forked(args, root, (cmd_r, resp_w))
                if self.proc is None:
                    # fresh pipes: a zygote that stopped answering may have handed these on
                    for fd in (cmd_r, cmd_w, resp_r, resp_w):
                        os.close(fd)
                    cmd_r, cmd_w = os.pipe()
                    resp_r, resp_w = os.pipe()
            if self.proc is None:
                program = (s.python, "-I", "-B", "-u", str(WORKER_MAIN))
                fds = ("--cmd-fd", str(cmd_r), "--resp-fd", str(resp_w))
                started = launch.Launch(
                    (*program, *fds, *args),
                    self.env(),
                    root,
                    memory_bytes=s.memory_bytes,
                    writable=(s.work_dir, *kept_if_trusted([triton_key_dir()])),
                    pass_fds=(cmd_r, resp_w),
                )
                self.proc = launch.start(started, self.log_path)
        finally:
            os.close(cmd_r)
            os.close(resp_w)
        if s.poll_ms > 0:
            os.set_blocking(resp_r, False)
        self._w, self._r, self._buf = cmd_w, resp_r, b""

    def _zygote_serves(self, root: Path) -> bool:
        """Whether this worker may come from the zygote: its interpreter, cap and device, and a
        checkout without a ``triton`` of its own."""
        s, z = self.spec, self.zygote
        return (
            z is not None
            and z.serves(s.python, s.memory_bytes, s.device)
            and not own_triton(root, s.python_path)
        )

    def _forked(self, args: list[str], root: Path, fds: tuple[int, int]) -> Forked | None:
        """The worker forked from the zygote; None when it could not give one."""
        assert self.zygote is not None and self.log_path is not None
        s = self.spec
        return self.zygote.fork(
            args, env=self.env(), cwd=root, log=self.log_path, fds=fds, timeout=s.timeouts.start_s
        )

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _kill(self, *, wait: bool = True) -> None:
        """Kill the worker's whole session, also after the worker itself has exited: what it
        left running (a double-forked daemon) goes with it. Without ``wait``, a thread waits
        for the process to end, not the caller."""
        if self.proc is not None:
            launch.stop(self.proc, wait=wait)
        self._close_fds()

    def _close_fds(self) -> None:
        for fd in (self._w, self._r):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._w = self._r = None

    def restart(self) -> None:
        self._kill()
        self.start()

    def close(self, *, wait: bool = True) -> None:
        """Ask the worker to quit; kill it if it does not. Without ``wait``, its session is
        killed once it answered and a thread waits for its end: the exit of a process with a
        GPU context spends the context's teardown (0.3 s of a sweep's wall on the H200), and
        nothing of it is needed once it answered."""
        if self.alive() and self._w is not None and not STOPPING.is_set():
            try:
                self.call(contract.Quit(), timeout=5.0)
                assert self.proc is not None
                if wait:
                    self.proc.wait(timeout=5)
            except (WorkerFailure, subprocess.TimeoutExpired):
                pass
        self._kill(wait=wait)

    def log_tail(self, limit: int = 4000) -> str:
        try:
            data = self.log_path.read_bytes() if self.log_path else b""
        except OSError:
            return ""
        return data[-limit:].decode("utf-8", errors="replace")

    # -------------------------------------------------------------------------------- commands

    def _fail(self, kind: str, message: str) -> WorkerFailure:
        return WorkerFailure(
            kind, message, side=self.spec.side, log_tail=self.log_tail(), worker=self.spec.name
        )

    def call(self, request: contract.Request[R], *, timeout: float) -> R:
        """Send one command and wait for its answer; WorkerFailure when it does not come back
        well (the worker's own failure, or an answer outside the contract). After a crash or a
        timeout the process is gone: ``restart`` before the next call."""
        op = request.OP
        if self._w is None or self._r is None or not self.alive():
            raise self._fail("crashed", f"worker {self.spec.name} is not running")
        line = contract.encode_request(request)
        try:
            view = memoryview(line)
            while view:
                n = os.write(self._w, view)
                view = view[n:]
        except (BrokenPipeError, OSError):
            raise self._died(op) from None
        raw = self._read_line(op, request.POLLED, timeout)
        try:
            answer = contract.decode_reply(request, raw)
        except contract.ContractError as exc:
            self._kill()
            raise self._fail(
                "crashed", f"the worker sent an answer outside the contract: {exc}"
            ) from None
        if isinstance(answer, contract.Failure):
            raise self._fail(answer.kind, answer.error or f"{op} failed")
        return answer

    def hello(self) -> contract.HelloReply:
        """Greet the worker once it started: its own pid, when its start's steps ended; a
        worker of another protocol version is ended with a WorkerFailure that says so."""
        answer = self.call(contract.Hello(), timeout=self.spec.timeouts.start_s)
        problem = contract.version_problem(answer.version, "worker")
        if problem:
            self._kill()
            raise self._fail("error", problem)
        self.worker_pid = answer.pid
        return answer

    @property
    def pid(self) -> int | None:
        """The worker's own process id, as it said at its hello: not the launcher's (a
        sandbox's ``bwrap`` runs it as a child), which ``proc`` is."""
        return self.worker_pid or (self.proc.pid if self.proc is not None else None)

    def holds_lock(self) -> bool:
        """Whether this worker holds its GPU's lock now: the lock file's last line names it
        (those before it died holding the lock)."""
        names = holders(self.spec.lock_path)
        return bool(names) and names[-1] == self.pid

    def _read_line(self, op: str, polled: bool, timeout: float) -> bytes:
        """The answer's line; ``polled``: a command of the rounds (polled for, where set)."""
        assert self._r is not None
        deadline = time.monotonic() + timeout
        polled = self.spec.poll_ms > 0 and polled
        poll_until = time.monotonic() + self.spec.poll_ms / 1000.0 if polled else 0.0
        while b"\n" not in self._buf:
            if STOPPING.is_set():
                self._kill()
                raise self._fail("stopped", f"{op} stopped: the command was stopped")
            now = time.monotonic()
            remaining = deadline - now
            if remaining <= 0:
                # read before the kill: whether this worker hung holding the GPU lock (the
                # other side's check may take it and let it go, emptying the file, after)
                held = self.holds_lock()
                self._kill()
                failure = self._fail(
                    "timeout", f"{op} did not finish within {timeout:g}s; killed the worker"
                )
                failure.held_lock_at = time.monotonic() if held else None
                raise failure
            if now >= poll_until:
                ready, _, _ = select.select([self._r], [], [], min(remaining, POLL_S))
                if not ready:
                    continue
            try:
                chunk = os.read(self._r, 1 << 20)
            except BlockingIOError:  # polling, and nothing yet
                continue
            if not chunk:
                raise self._died(op)
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def _died(self, op: str) -> WorkerFailure:
        code = None
        if self.proc is not None:
            try:
                code = self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                code = None
        capped = self.proc is not None and killed_at_memory_cap(self.proc.pid)
        self._kill()
        if capped:  # the kernel killed it at its cgroup's cap (shared memory, /dev/shm count)
            cap = f"{self.spec.memory_bytes / 2**20:.0f} MiB"
            return self._fail(
                "oom", f"the {self.spec.side} worker was killed at its memory cap of {cap} "
                f"(its cgroup's, which counts shared memory and /dev/shm) during {op}",
            )  # fmt: skip
        if code is None:
            how = "stopped answering"
        elif code < 0:
            how = f"was killed by {_signal_name(-code)}"
        else:
            how = f"exited with code {code}"
        return self._fail("crashed", f"the {self.spec.side} worker {how} during {op}")

    # ------------------------------------------------------------------------ typed shortcuts

    def estimate(self) -> contract.EstimateReply:
        """The prepared case's GPU time per call (``est_us``) and host time (``host_us``)."""
        return self.call(contract.Estimate(), timeout=self.spec.timeouts.configure_s)

    def prepare(
        self,
        entries: Sequence[str],
        shape: tuple[int, ...],
        dtype: str,
        *,
        seed: int,
        estimate: bool = True,
        pins: Sequence[contract.Pick] = (),
        max_copies: int | None = None,
        max_copy_bytes: int | None = None,
        copies: int | None = None,
    ) -> contract.PrepareReply:
        request = contract.Prepare(
            tuple(entries),
            tuple(shape),
            dtype,
            seed=seed,
            estimate=estimate,
            pins=tuple(pins) or None,
            max_copies=max_copies,
            max_copy_bytes=max_copy_bytes,
            copies=copies,
        )
        return self.call(request, timeout=self.spec.timeouts.prepare_s)

    def check(
        self,
        entries: Sequence[str],
        shape: tuple[int, ...],
        dtype: str,
        *,
        seed: int,
        pins: Sequence[contract.Pick] = (),
        launches: contract.Recorder | None = None,
    ) -> contract.CheckReply:
        """Check the case's first call (compiling, autotuning); ``pins``: picks another worker
        made, which fix this side's autotuners where the kernel and its configs are the same
        (``checks.worker.autotune_picks``); ``launches``: record the kernels one more call
        launches (``checks.bench_entries.launches``), with the profiler or Triton's launches
        alone; None: no record."""
        request = contract.Check(
            tuple(entries), tuple(shape), dtype, seed, tuple(pins) or None, launches
        )
        return self.call(request, timeout=self.spec.timeouts.check_s)

    def configure(
        self,
        mode: str,
        block_ms: float,
        *,
        est_us: float | None = None,
        like: contract.Like | None = None,
        preroll: bool = True,
        time_replays: bool = True,
    ) -> contract.ConfigureReply:
        """Blocks of about ``block_ms`` sized from ``est_us``, or exactly ``like``'s calls;
        ``preroll``: graph blocks start after an untimed pass over the input copies;
        ``time_replays`` false: a graph's replays per block are left to ``replays``."""
        request = contract.Configure(
            contract.as_mode(mode), block_ms, preroll, est_us or None, like, time_replays
        )
        return self.call(request, timeout=self.spec.timeouts.configure_s)

    def replays(
        self, *, block_ms: float | None = None, replays: int | None = None
    ) -> contract.ReplaysReply:
        """The captured graph's replays per block: ``replays``, or timed now for ``block_ms``."""
        request = contract.Replays(replays or None, None if replays else block_ms)
        return self.call(request, timeout=self.spec.timeouts.configure_s)

    def block(self) -> Block:
        a = self.call(contract.Block(), timeout=self.spec.timeouts.block_s)
        tel = a.telemetry
        return Block(
            value_us=a.value_us,
            calls=a.calls,
            wall_ms=a.wall_ms,
            gpu_ms=a.gpu_ms,
            telemetry=Telemetry(**vars(tel)) if tel else None,
        )

    def finish(self, *, recheck: bool = True, alone: bool = False) -> contract.FinishReply:
        """Recheck the timed copy's output (``alone``: holding the GPU lock for its calls, while
        another pair checks the next case; waiting for it at most half the finish timeout, then
        without it: ``lock_not_taken_s`` in the answer), then release everything."""
        t = self.spec.timeouts.finish_s
        request = contract.Finish(recheck, alone, t * LOCK_WAIT_SHARE if alone else None)
        return self.call(request, timeout=t)

    def warmup(
        self,
        *,
        min_s: float = 0.5,
        max_s: float = 5.0,
        clock_fraction: float = 0.85,
        unless_up: bool = False,
    ) -> contract.WarmupReply:
        """Burn until the SM clock is up; with ``unless_up``, not at all when it already is."""
        request = contract.Warmup(min_s, max_s, clock_fraction, unless_up)
        return self.call(request, timeout=self.spec.timeouts.warmup_s + max_s)

    def env_info(self) -> EnvFingerprint:
        """The machine the worker runs on, as the results file records it."""
        env = self.call(contract.Env(), timeout=self.spec.timeouts.env_s).env
        return self._read(EnvFingerprint, env, contract.Env.OP)

    def ceilings(self) -> dict[str, Any]:
        """The device's ceilings as the worker measured them (what the ceilings cache keeps),
        each field checked against the results file's record of them."""
        got = self.call(contract.MeasureCeilings(), timeout=self.spec.timeouts.ceilings_s)
        self._read(Ceilings, got.ceilings, contract.MeasureCeilings.OP)
        return dict(got.ceilings)

    def _read(self, model: type[M], data: dict[str, Any], op: str) -> M:
        """``data`` of ``op``'s answer as ``model``; a WorkerFailure (the worker ended) for an
        answer whose fields are not the model's."""
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            self._kill()
            raise self._fail(
                "crashed", f"the worker sent an answer outside the contract: {op}: {exc}"
            ) from None


def in_parallel(calls: Sequence[Callable[..., T]]) -> list[T]:
    """Run each call in its own thread (one per worker, so no client is driven by two threads)
    and wait for all; the first WorkerFailure, in the order given, is raised once every call has
    ended, so no worker is left with an answer unread. Each is called with no arguments (typed
    ``...`` for the lambdas that bind their worker as a default argument)."""
    if len(calls) == 1:
        return [calls[0]()]
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        futures = [pool.submit(c) for c in calls]
        errors = [f.exception() for f in futures]
    for e in errors:
        if e is not None:
            raise e
    return [f.result() for f in futures]


def start_all(clients: Sequence[WorkerClient]) -> dict[str, float]:
    """Start the workers side by side: every process spawned, then each greeted. Returns where
    the slowest start went, in seconds from each worker's launch: until its program began
    (``to_main``; for a forked worker, the wait for the zygote's imports included) and until
    its torch was ready (``to_ready``)."""
    for c in clients:
        c.spawn()
    hellos = in_parallel([lambda c=c: c.hello() for c in clients])
    spans: dict[str, float] = {}
    for c, hello in zip(clients, hellos, strict=True):
        for key, at in (("to_main", hello.main_at), ("to_ready", hello.ready_at)):
            if at is not None:
                spans[key] = max(spans.get(key, 0.0), at - c.spawned_at)
    return spans
