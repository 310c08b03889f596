"""The bot's side of the zygote (``checks/worker/zygote.py``): a process that imported torch and
Triton once, from which workers are forked instead of each starting a Python that imports them.

``Zygote.start`` launches it (a sweep's first step; ``kernel-review bench`` calls it before its
own imports, git reads and worktrees, which it then overlaps). ``Zygote.fork`` asks it for a
worker and returns a ``Forked`` handle the worker client uses as it uses a ``Popen``; None when
the zygote cannot serve (it failed to start, or died), and the caller starts the worker itself.
A worker only comes from the zygote whose interpreter, memory cap and device it would have had
(``serves``), and never for a checkout with a ``triton`` of its own (the zygote imported the
installed one).

The worker is forked twice so that it becomes this process's child: ``start`` makes this
process a child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``), so the worker is reparented here
when the zygote's intermediate child exits, and can be waited for like any child.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from bot.outputs import bytecode_dir, triton_key_dir
from checks.procs import launch
from checks.procs.sandbox import active, adopt, kept_if_trusted
from checks.worker import contract
from checks.worker_env import default_memory_bytes, device_env, prctl

ZYGOTE_MAIN = Path(__file__).resolve().parent.parent / "worker" / "zygote.py"
PR_SET_CHILD_SUBREAPER = 36


def _subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants; False where Linux says no."""
    return prctl(PR_SET_CHILD_SUBREAPER, 1)


def _bytecode_args() -> list[str]:
    """Where the zygote keeps torch's bytecode when its installation has none; nothing when
    that is turned off, or for a confined run that may not write it (a pull request's) when no
    trusted run made it yet (it is read-only to that run's zygote)."""
    folder = bytecode_dir()
    if folder is None or not (kept_if_trusted([folder]) or active() is None or folder.is_dir()):
        return []
    return ["--bytecode-dir", str(folder)]


def _kept() -> list[Path]:
    """The folders the zygote keeps between runs: Triton's key, the bytecode (when on)."""
    return [triton_key_dir(), *map(Path, _bytecode_args()[1:])]


def bytecode_note(came: str) -> str:
    """What a run says when its zygote found torch without compiled bytecode and had to write
    it (``came``: the zygote's answer, ``checks/worker/zygote.py``'s ``keep_bytecode``); ''
    otherwise; or, when the kept bytecode did not match its manifest, what was done about it."""
    for done, how in (
        ("rebuilt: ", "it was removed and compiled afresh, and nothing of it was imported"),
        (
            "refused: ",
            "this run compiled torch's modules without it; a trusted run (a "
            "scheduled one, a local command) replaces it, or delete it by hand",
        ),
    ):
        if came.startswith(done):
            return (
                "the bytecode kept in kernel-review's cache folder did not match the manifest "
                f"kernel-review wrote with it ({came[len(done) :]}): {how}. A folder from an "
                "earlier kernel-review has no manifest; otherwise code run on this machine since "
                "(a pull request's) changed it: make the GPU runners ephemeral "
                "(docs/repository-settings.md)"
            )
    if came != "written":
        return ""
    return (
        "torch has no compiled bytecode on this machine: this run compiled its modules (seconds "
        "of its start) and kept them for the next runs in kernel-review's cache folder; a runner "
        "that starts each job afresh pays that every time, so build its image with bytecode "
        "(docs/repository-settings.md)"
    )


def own_triton(root: Path, python_path: tuple[str, ...]) -> bool:
    """Whether the checkout puts a ``triton`` of its own on the worker's path (then its code
    imports that one, not the one the zygote imported)."""
    places = [root / p for p in python_path] + [root]
    return any((place / "triton").exists() for place in places)


class Forked:
    """A worker forked by the zygote, reparented to this process: ``pid``, ``poll``, ``wait``,
    ``kill`` and ``returncode`` as a ``subprocess.Popen`` has them."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere, or never ours: gone either way
                self.returncode = -signal.SIGKILL
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = 0.002  # doubled up to 50 ms: a quick end is seen at once, a long job polled less
        while self.poll() is None:
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0.0)
            time.sleep(pause if deadline is None else max(0.0, min(pause, deadline - now)))
            pause = min(0.05, pause * 2)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


@dataclass(frozen=True)
class ZygoteKind:
    """What a worker from this zygote shares with it: its interpreter, memory cap and device."""

    python: str
    memory_bytes: int
    device: str


class Zygote:
    def __init__(
        self,
        kind: ZygoteKind,
        proc: subprocess.Popen[bytes] | None,
        sock: socket.socket | None,
        note: str = "",
    ) -> None:
        self.kind = kind
        self.proc = proc
        self.sock = sock
        self.lock = threading.RLock()
        self.note = note  # why it could not serve, once it could not
        # time.monotonic() at its launch (``spawned_at``) and, from its first fork's answer,
        # when its program began, had imported, had loaded the worker program
        # (``checks/worker/zygote.py``'s ``MARKS``)
        self.marks: dict[str, float] = {"spawned_at": time.monotonic()}
        # where its imports' bytecode came from (``checks/worker/zygote.py``'s
        # ``keep_bytecode``), once it answered
        self.bytecode = ""

    @classmethod
    def start(cls, kind: ZygoteKind, env: dict[str, str], work_dir: Path) -> Zygote:
        """Launch it; one that cannot be launched serves nothing (``fork`` answers None)."""
        if not _subreaper():
            return cls(kind, None, None, "this system cannot adopt forked workers (no subreaper)")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        logs = work_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        argv = (
            *(kind.python, "-I", "-B", "-u", str(ZYGOTE_MAIN), "--sock-fd", str(theirs.fileno())),
            *("--memory-bytes", str(kind.memory_bytes)),  # the workers' cap, set by the zygote
            *("--triton-key-dir", str(triton_key_dir())),
            # Triton's driver utilities, built once for the sweep
            *("--utils-dir", str(work_dir / "triton-utils")),
            *_bytecode_args(),
        )
        started = launch.Launch(
            argv,
            env,
            work_dir,
            memory_bytes=kind.memory_bytes,
            writable=(work_dir, *kept_if_trusted(_kept())),  # a PR's: read-only
            pass_fds=(theirs.fileno(),),
            caps_itself=True,
        )
        try:
            proc = launch.start(started, logs / "zygote.log")
        except OSError as exc:
            ours.close()
            return cls(kind, None, None, f"could not start: {exc}")
        finally:
            theirs.close()
        return cls(kind, proc, ours)

    def serves(self, python: str, memory_bytes: int, device: str) -> bool:
        return self.sock is not None and self.kind == ZygoteKind(python, memory_bytes, device)

    def serves_jobs(self, python: str, memory_bytes: int) -> bool:
        """Whether a helper program started with ``python`` under ``memory_bytes`` may come from
        this zygote instead: a GPU's zygote only, whose imports read the environment a helper's
        would (the CPU's imported Triton for its interpreter, ``TRITON_INTERPRET``, and torch for
        one thread); the job's own environment replaces the rest."""
        kind = self.kind
        same = (kind.python, kind.memory_bytes) == (python, memory_bytes)
        return self.sock is not None and kind.device != "cpu" and same

    def fork(
        self,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: Path,
        log: Path,
        fds: tuple[int, int],
        timeout: float,
    ) -> Forked | None:
        """A worker running ``main.py`` with ``argv`` (after its pipe descriptors ``fds``); None
        when the zygote cannot give one (the caller starts the worker itself)."""
        request = contract.ForkWorker(tuple(argv), env, str(cwd), str(log))
        forked, refused = self._forked(request, list(fds), timeout)
        if refused:  # the note says why workers were started instead
            self.note = refused
        return forked

    def fork_job(self, process: contract.ForkJob, timeout: float) -> Forked | None:
        """One of the bot's helper programs, run as ``python -m module job`` would run it
        (``checks.job_process``); None when the zygote cannot give one (the caller starts it
        itself)."""
        return self._forked(process, [], timeout)[0]

    def _forked(
        self, request: contract.ForkWorker | contract.ForkJob, fds: list[int], timeout: float
    ) -> tuple[Forked | None, str]:
        """The forked process, or None and why the zygote refused ("" when it cannot serve)."""
        with self.lock:
            sock = self.sock
            if sock is None:
                return None, ""
            try:
                socket.send_fds(sock, [contract.encode_fork(request)], fds)
                answer = self._answer(sock, timeout)
            except (OSError, ValueError) as exc:  # a ContractError is a ValueError
                self._lost(f"stopped answering: {exc}")
                return None, ""
            if isinstance(answer, contract.ForkRefused):
                return None, answer.error
            if answer.pid <= 0:
                return None, "no process"
            self.bytecode = answer.bytecode
            marks = contract.as_json(answer.marks)
            self.marks.update({k: float(v) for k, v in marks.items()})
            adopt(answer.pid, self.kind.memory_bytes)  # its own cgroups, out of the zygote's
            return Forked(answer.pid), ""

    @staticmethod
    def _answer(sock: socket.socket, timeout: float) -> contract.Forked | contract.ForkRefused:
        sock.settimeout(timeout)
        data = sock.recv(1 << 16)
        if not data:
            raise OSError("the zygote exited")
        return contract.decode_forked(data)

    def _lost(self, why: str) -> None:
        self.note = why
        self.close()

    def close(self) -> None:
        """End the zygote (the workers it forked are not its children, and live on)."""
        with self.lock:
            if self.sock is not None:
                with contextlib.suppress(OSError):
                    self.sock.close()
                self.sock = None
            if self.proc is not None:
                launch.stop(self.proc)
                self.proc = None


def start_zygote(
    device: str, work_dir: Path, *, python: str = sys.executable, memory_bytes: int | None = None
) -> Zygote:
    """The process a sweep's workers are forked from (``checks.sweep.zygote``), started now:
    its imports run while the caller does the rest of its preparation. Start it after a build
    step that may install into the interpreter it imports from."""
    kind = ZygoteKind(
        python=python, memory_bytes=memory_bytes or default_memory_bytes(), device=device
    )
    return Zygote.start(kind, device_env(device, None), work_dir)
