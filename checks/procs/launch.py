"""The one way a process that runs a checkout's code, or a compiler on it, is started and ended.

Every worker (``checks.sweep.workers``), the workers' zygote (``checks.sweep.zygote``), every
helper job (compiling ahead, the compiler report, the first-call probes, the profiler's run:
``checks.job_process``), a checkout's setup command (``checks.checkout``) and the C++ compilers
of the compiler report (``checks.compiler.cxx_report``) start here, with:

- the environment their caller built from ``checks.worker_env.scrubbed_env`` (no token), this
  process made non-dumpable first so that they cannot read its own;
- the memory cap: ``RLIMIT_DATA`` set before the program starts (or by the program itself:
  ``caps_itself``, the zygote), and, confined, its cgroup's cap;
- the sandbox (``checks.procs.sandbox``), once a measurement required it: only the
  ``writable`` folders writable;
- a session of its own, killed whole (``stop``, ``kill_session``): what it left running goes
  with it;
- its output in its ``log`` (``start``), or handed back (``run``).

A forked worker (the zygote's) is not started here but adopted (``sandbox.adopt``) and ended
here the same way.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checks.procs.sandbox import kill_tree, sandboxed
from checks.worker_env import prctl

# Run in an isolated interpreter (-I: a resource.py in the checkout cannot shadow the module),
# it sets the cap and becomes the real command, same pid, same descriptors.
_CAPPED = (
    "import os, resource, sys; n = int(sys.argv[1]); "
    "resource.setrlimit(resource.RLIMIT_DATA, (n, n)); os.execv(sys.argv[2], sys.argv[2:])"
)
PR_SET_DUMPABLE = 4


@dataclass(frozen=True)
class Launch:
    """One process to start: ``argv`` in ``cwd`` with ``env`` (scrubbed by the caller, its own
    variables added), its heap capped at ``memory_bytes`` (0: none), ``writable`` the folders it
    may write when confined, ``pass_fds`` the descriptors it inherits."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Path
    memory_bytes: int = 0
    writable: tuple[Path, ...] = ()
    pass_fds: tuple[int, ...] = ()
    caps_itself: bool = False  # the program sets its own RLIMIT_DATA (the zygote's first step)
    # confined, its cgroups' cap when that is not ``memory_bytes``: a program that forks one
    # child per job (``checks.job_process.run_jobs``) is capped as that many processes are, each
    # child's heap at ``memory_bytes`` still (RLIMIT_DATA is per process, and inherited)
    cgroup_bytes: int | None = None


def capped(
    argv: list[str],
    max_bytes: int,
    *,
    writable: tuple[Path, ...] = (),
    cgroup_bytes: int | None = None,
) -> list[str]:
    """``argv`` started with its heap and private mappings capped at ``max_bytes``
    (``RLIMIT_DATA``, soft and hard, so the measured code cannot raise it again): an allocation
    past it fails with MemoryError, reported as ``oom``, instead of taking the machine's memory.
    ``RLIMIT_AS`` would also count the address space CUDA reserves, so it is not used. ``argv``
    as it is where the system has no such limit, or ``max_bytes`` is 0. Once a measurement
    required it (``checks.procs.sandbox``), it also runs confined: in cgroups of its own, whose
    memory cap (``max_bytes`` again) counts shared mappings and /dev/shm too, and in a sandbox
    where only the ``writable`` folders are (``cgroup_bytes``: another cap for the cgroups)."""
    if max_bytes > 0 and sys.platform.startswith("linux"):
        argv = [sys.executable, "-I", "-c", _CAPPED, str(max_bytes), *argv]
    together = max_bytes if cgroup_bytes is None else cgroup_bytes
    return sandboxed(argv, writable=writable, memory_bytes=together)


def command(launch: Launch) -> list[str]:
    """What is executed for ``launch``: its argv capped and confined."""
    if launch.caps_itself:
        return sandboxed(launch.argv, writable=launch.writable, memory_bytes=launch.memory_bytes)
    return capped(
        list(launch.argv),
        launch.memory_bytes,
        writable=launch.writable,
        cgroup_bytes=launch.cgroup_bytes,
    )


def start(launch: Launch, log: Path) -> subprocess.Popen[bytes]:
    """``launch`` started, its stdout and stderr in ``log``, its stdin empty; end it with
    ``stop``."""
    make_undumpable()  # it runs as this user: keep it out of this process's /proc
    with open(log, "wb") as out:
        return subprocess.Popen(
            command(launch),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            pass_fds=launch.pass_fds,
            env=dict(launch.env),
            cwd=str(launch.cwd),
            start_new_session=True,
        )


@dataclass(frozen=True)
class Ran:
    """A process ``run`` waited for: its exit code (None: killed at its timeout) and output."""

    returncode: int | None
    stdout: bytes
    stderr: bytes

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


def run(launch: Launch, timeout_s: float, stdin: bytes | None = None) -> Ran:
    """``launch`` run to its end, ``stdin`` its input, its output handed back; at
    ``timeout_s`` it is killed with everything it started (``returncode`` None)."""
    make_undumpable()
    proc = subprocess.Popen(
        command(launch),
        stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        pass_fds=launch.pass_fds,
        env=dict(launch.env),
        cwd=str(launch.cwd),
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(stdin, timeout=timeout_s)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        kill_session(proc.pid)
        out, err = proc.communicate()
        code = None
    finally:
        kill_session(proc.pid)  # what it left running goes with it
    return Ran(code, out, err)


def make_undumpable() -> bool:
    """Mark this process non-dumpable (Linux ``prctl(PR_SET_DUMPABLE, 0)``): a process of the
    same user, such as the measured code, can then no longer read its ``/proc/<pid>/environ``,
    open its ``/proc/<pid>/fd/*`` (the step's log among them) or attach to it. The children it
    starts get the default back when they exec. False where the system does not offer it; it
    does not stop root."""
    return prctl(PR_SET_DUMPABLE, 0)


def kill_session(sid: int) -> None:
    """SIGKILL every process of session ``sid`` (a process started here, in a session of its
    own): its process group, and children that left the group or outlived it; and, for a
    process started confined (``checks.procs.sandbox``), everything in its cgroups, a process
    that started a session of its own included (unconfined, the runner reaps that one by
    ``RUNNER_TRACKING_ID``)."""
    kill_tree(sid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(sid, signal.SIGKILL)
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rpartition(b")")[2].split()
        except OSError:
            continue
        if len(fields) > 3 and int(fields[3]) == sid and pid != os.getpid():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def stop(proc: Any, *, wait: bool = True) -> None:
    """Kill ``proc`` (a ``subprocess.Popen``, or anything with its ``pid``, ``poll``, ``kill``
    and ``wait``: a forked worker) with its whole session (``kill_session``), then wait for it
    up to 10 s; without ``wait``, a thread waits for it instead of the caller (a process with a
    GPU context spends its teardown in its exit)."""
    kill_session(proc.pid)
    if proc.poll() is None:
        proc.kill()
    if wait:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
    else:
        threading.Thread(target=proc.wait, name="reap", daemon=True).start()
