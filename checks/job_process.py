"""Run one of the bot's own helper programs on a job file, in a fresh process (or one forked from
the sweep's zygote, with torch and Triton imported already: ``run_job``'s ``forker``).

The compile workers and the first-call probes import the pull request's code, so they get the
same treatment as the sweep's workers: a scrubbed environment (no token, nothing that writes to
GitHub), a memory cap, a Triton cache of their own, their own session killed whole on a timeout
and when they end, and a result read back from a file rather than from output the user's code
could write to.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from checks import job_files
from checks.job_files import Job, JobFailure
from checks.procs import launch
from checks.procs.sandbox import kept_if_trusted
from checks.procs.stopping import POLL_S, STOPPING
from checks.worker.contract import ContractError, ForkJob
from checks.worker_env import default_memory_bytes, scrubbed_env

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
# how much lower work runs that must not slow what is being measured: compiling ahead, which the
# workers will want soon, by BACKGROUND_NICE; work that only needs to finish by the end of the
# job (the compiler report beside the sweep), by SPARE_NICE, below compiling ahead
BACKGROUND_NICE = 10
SPARE_NICE = 19
A = TypeVar("A")
# for a job that needs no GPU (it compiles): it sees none, so nothing it imports can use one
# while the measurement runs
NO_GPU_ENV = {"CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": "", "ROCR_VISIBLE_DEVICES": ""}


def lower_this_thread(by: int = BACKGROUND_NICE) -> bool:
    """Lower the CPU priority of the calling thread, and so of every process it starts from
    then on: Linux keeps a nice value per thread, and a child starts with its thread's. False,
    and nothing changed, where the system keeps one per process (lowering it there would slow
    the measurement in the other threads too)."""
    if sys.platform != "linux":
        return False
    tid = threading.get_native_id()
    os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + by))
    return True


class JobForker(Protocol):
    """What gives a helper program a process forked with its imports done
    (``checks.sweep.zygote.Zygote``); None from ``fork_job`` when it cannot."""

    def serves_jobs(self, python: str, memory_bytes: int) -> bool: ...

    def fork_job(self, process: ForkJob, timeout: float) -> Any: ...


def run_job(
    job: Job[A],
    *,
    workdir: Path,
    triton_cache: Path,
    timeout_s: float,
    what: str,
    python: str | None = None,
    prefix: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    cancel: threading.Event | None = None,
    nice: int = 0,
    forker: JobForker | None = None,
    kept: Sequence[Path] = (),
) -> A | JobFailure:
    """Run ``python -m MODULE JOB`` (``job.MODULE``, the job file made of ``job``) and return
    its answer (``job.ANSWER``), or a ``JobFailure``: the failure it reported, or that it timed
    out, died without answering or answered what the contract does not allow
    (``checks.job_files``). ``python``: the interpreter (a side's own toolchain,
    ``checks.toolchain_env``); the bot's by default.
    ``prefix``: a program that runs the process (a profiler), put before the interpreter.
    ``env``: variables set on top of the scrubbed environment. ``cancel``: when set, the job is
    killed (or, set already, not started) and a JobFailure returned (a job whose answer is no
    longer wanted); an answer written before the next look at ``cancel`` is still returned. So
    too once the command is stopping (``checks.procs.stopping``).
    ``nice``: how much to lower its CPU priority. ``forker``: where the process may be forked
    from with torch and Triton imported already (the sweep's zygote), when it serves this
    interpreter and cap and no ``prefix`` is asked for; started afresh otherwise.
    C++ extensions that ``torch.utils.cpp_extension.load`` builds go beside ``triton_cache``
    (``torch-extensions``), not in the machine's shared folder: an empty cache folder is then a
    cold start for them too, and no other job's build of the same name is picked up.
    ``kept``: caches kept between runs that the job writes, writable to it when the run is
    trusted (``checks.procs.sandbox.kept_if_trusted``) or unconfined."""
    if STOPPING.is_set() or (cancel is not None and cancel.is_set()):  # not wanted: start nothing
        return _stopped(what)
    out = workdir / "out.json"
    out.unlink(missing_ok=True)  # an earlier job's answer in this folder is not this one's
    job_path = workdir / "job.json"
    job_path.write_text(job_files.job_text(job, str(out)))
    log_path = workdir / "output.log"
    child_env = _child_env(triton_cache, env)
    launch.make_undumpable()
    interpreter, cap = python or sys.executable, default_memory_bytes()
    proc: Any = None
    if forker is not None and not prefix and forker.serves_jobs(interpreter, cap):
        process = ForkJob(
            job.MODULE,
            str(job_path),
            child_env,
            str(PACKAGE_ROOT),
            str(log_path),
            _job_path(),
            nice,
        )
        proc = forker.fork_job(process, timeout=min(timeout_s, 120.0))
    if proc is None:
        program = shutil.which("nice") if nice else None
        lowered = (program, "-n", str(nice)) if program else ()
        started = launch.Launch(
            (*prefix, *lowered, interpreter, "-m", job.MODULE, str(job_path)),
            child_env,
            PACKAGE_ROOT,
            memory_bytes=cap,
            # the cache's folder holds its torch-extensions, a probe's caches per shape
            writable=(workdir, triton_cache.parent, *kept_if_trusted(kept)),
        )
        proc = launch.start(started, log_path)
    try:
        ended = _wait(
            proc, timeout_s, lambda: STOPPING.is_set() or (cancel is not None and cancel.is_set())
        )
    finally:
        launch.kill_session(proc.pid)  # what the job left running goes with it
    if ended == "stopped":
        return _stopped(what)
    if ended == "late":
        return _late(what, timeout_s)
    if not out.is_file():
        tail = log_path.read_text(encoding="utf-8", errors="replace")[-800:]
        return JobFailure(f"{what} exited with {proc.returncode}: {tail}")
    try:
        return job_files.read_answer(type(job), out.read_text())
    except ContractError as exc:
        return JobFailure(f"{what} answered what the bot cannot read: {exc}")


Ended = Literal["exited", "stopped", "late"]


def _wait(
    proc: Any,
    timeout_s: float,
    stopped: Callable[[], bool],
    tick: Callable[[], None] = lambda: None,
) -> Ended:
    """Wait for ``proc``, looking every ``POLL_S`` (``tick`` then): its session killed and
    reaped once ``stopped()`` says so or ``timeout_s`` has passed."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            proc.wait(timeout=min(max(0.0, deadline - time.monotonic()), POLL_S))
            return "exited"
        except subprocess.TimeoutExpired:
            tick()
            halted = stopped()
            if halted or time.monotonic() >= deadline:
                launch.kill_session(proc.pid)
                proc.wait()
                return "stopped" if halted else "late"


def _stopped(what: str) -> JobFailure:
    return JobFailure(f"{what} was stopped: its answer is no longer needed")


def _late(what: str, timeout_s: float) -> JobFailure:
    return JobFailure(f"{what} took longer than {timeout_s:.0f} s")


def _child_env(triton_cache: Path, env: Mapping[str, str] | None) -> dict[str, str]:
    """A helper's environment: scrubbed, the bot's own import path, its own Triton cache and
    C++ extensions folder beside it, and ``env`` on top."""
    child_env = scrubbed_env()
    child_env.pop("TRITON_INTERPRET", None)
    if "PYTHONPATH" in os.environ:  # where the bot's own dependencies were installed
        child_env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    child_env["TRITON_CACHE_DIR"] = str(triton_cache)
    child_env["TORCH_EXTENSIONS_DIR"] = str(triton_cache.parent / "torch-extensions")
    child_env.update(env or {})
    return child_env


def run_jobs(
    jobs: Sequence[Job[A]],
    *,
    names: Sequence[str],
    workdir: Path,
    triton_cache: Path,
    timeout_s: float,
    what: str,
    python: str | None = None,
    env: Mapping[str, str] | None = None,
    kept: Sequence[Path] = (),
    answered: Callable[[int, A | JobFailure], None] | None = None,
) -> list[A | JobFailure]:
    """Several jobs of one helper program in one process, ``python -m MODULE JOB...`` (its
    ``__main__`` takes several job files: the compiler report's worker imports torch and
    Triton once and runs each job in a forked child of its own): each job's answer or
    ``JobFailure`` as ``run_job`` gives it, in order. The process is launched and ended as
    ``run_job``'s (scrubbed environment, its session killed on a timeout, when the command
    stops and when it ends); each job's child has the heap cap a helper started on its own
    has, and confined, their cgroups hold what that many helpers' would. ``names[i]`` names
    job i in its failures ("compiling for sm_90 took longer than 600 s"), and ``answered``
    hears of each answer as it comes."""
    n = len(jobs)
    labels = [f"{what} {name}" for name in names]
    if STOPPING.is_set():
        return [_stopped(label) for label in labels]
    module = jobs[0].MODULE
    outs = [workdir / f"job-{i}" / "out.json" for i in range(n)]
    paths = []
    for job, out in zip(jobs, outs, strict=True):
        assert module == job.MODULE, "one helper program runs them all"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.unlink(missing_ok=True)
        paths.append(out.parent / "job.json")
        paths[-1].write_text(job_files.job_text(job, str(out)))
    log_path = workdir / "output.log"
    launch.make_undumpable()
    cap = default_memory_bytes()
    started = launch.Launch(
        (python or sys.executable, "-m", module, *map(str, paths)),
        _child_env(triton_cache, env),
        PACKAGE_ROOT,
        memory_bytes=cap,  # each job's process, as started one by one
        writable=(workdir, triton_cache.parent, *kept_if_trusted(kept)),
        cgroup_bytes=cap * n,  # confined: as much as that many processes had together
    )
    proc = launch.start(started, log_path)
    done: dict[int, A | JobFailure] = {}

    def collect() -> None:  # the answers written so far (a helper writes each whole, renamed)
        for i, out in enumerate(outs):
            if i in done or not out.is_file():
                continue
            cls: type[Job[A]] = type(jobs[i])
            try:
                answer = job_files.read_answer(cls, out.read_text())
                done[i] = answer
            except ContractError as exc:
                done[i] = JobFailure(f"{labels[i]} answered what the bot cannot read: {exc}")
            if answered is not None:
                answered(i, done[i])

    try:
        ended = _wait(proc, timeout_s, STOPPING.is_set, collect)
    finally:
        launch.kill_session(proc.pid)  # what the jobs left running goes with them
    collect()
    tail = log_path.read_text(encoding="utf-8", errors="replace")[-800:]
    for i, label in enumerate(labels):
        if i in done:
            continue
        if ended == "stopped":
            done[i] = _stopped(label)
        elif ended == "late":
            done[i] = _late(label, timeout_s)
        else:
            done[i] = JobFailure(f"{label} exited with {proc.returncode}: {tail}")
        if answered is not None:
            answered(i, done[i])
    return [done[i] for i in range(n)]


def _job_path() -> tuple[str, ...]:
    """The folders a forked helper puts first on its path: this package's, and the bot's own
    path (where its dependencies were found), as a helper started afresh finds them."""
    return (str(PACKAGE_ROOT), *(p for p in sys.path if p and os.path.isdir(p)))
