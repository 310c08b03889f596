"""The sandbox a pull request's code runs in on a GPU runner.

Measured code runs as the runner's user. Unconfined it could rewrite the files through which
later steps of the job read their environment and PATH (``GITHUB_ENV``, ``GITHUB_PATH``), the
code of the actions that run after it, or the caches a later run trusts. So on a runner that
keeps state between jobs, every process that runs a checkout's code is started (by
``checks.procs.launch``) through ``sandboxed``:

- in ``bwrap`` (bubblewrap): the whole filesystem read-only, its scratch folders writable, a
  /tmp of its own in the run's scratch (its ``TMPDIR`` too), a private /dev/shm, no network,
  the GPU devices passed through, killed with its parent;
- in cgroups of its own (``checks/procs/cgroup.py``): its memory capped there, so a shared
  mapping or a file in /dev/shm counts, and everything in them killed when the process is ended
  (``kill_tree``), a daemon that double-forked into a session of its own included.

``require`` is called before a measurement starts: it turns this on, or refuses to measure with
what is missing and what to do, unless the runner is declared disposable (one job per fresh
machine, which takes nothing to the next job). Until then (local commands, which run code the
user chose to run) processes start as they did. ``kernel-review doctor --runner``
reports what ``detect`` finds.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bot.errors import KernelReviewError
from bot.outputs import cache_root
from checks.procs import cgroup

ENTER = Path(__file__).resolve().parent / "enter.py"
DISPOSABLE_ENV = "KERNEL_REVIEW_DISPOSABLE_RUNNER"
DOCS = "SECURITY.md (Runner isolation)"
# what a GPU needs of /dev: NVIDIA's devices, AMD's KFD and render nodes
GPU_DEVICES = ("/dev/nvidia*", "/dev/nvidia-caps", "/dev/kfd", "/dev/dri")
HOST_TMP = Path("/tmp")


class IsolationError(KernelReviewError):
    """The runner cannot confine measured code and was not declared disposable."""


@dataclass(frozen=True)
class Isolation:
    """What this machine offers: a ``bwrap`` that ran, and a place for cgroups."""

    bwrap: str | None
    bwrap_problem: str
    place: cgroup.Place | None
    cgroup_problem: str

    @property
    def ready(self) -> bool:
        return self.bwrap is not None and self.place is not None

    def problems(self) -> list[str]:
        return [p for p in (self.bwrap_problem, self.cgroup_problem) if p]


def bwrap_args(
    bwrap: str,
    writable: Iterable[Path],
    devices: Iterable[str],
    tmp: Path,
    *,
    needed: Iterable[str] = (),
    host_tmp: Path = HOST_TMP,
) -> list[str]:
    """``bwrap``'s options (before the command): ``/`` read-only, ``writable`` writable, ``tmp``
    (a folder of the run's scratch) mounted as its ``/tmp`` and named its ``TMPDIR``, so a tool
    that writes a fixed path in /tmp (ncu's lock file) works and nothing reaches the machine's
    /tmp; of the machine's /tmp (``host_tmp``), only the entries that hold a path of ``needed``
    (the command's arguments, the bot's import path, its caches: a side's interpreter or a
    test's files may live there) read-only at their places; a private /dev/shm, the
    ``devices`` passed through, no network, no shared IPC; it dies with the process that
    started it. No PID namespace: the workers' zygote hands the processes it forks to the bot,
    which must see their pids."""
    args = [bwrap, "--die-with-parent", "--unshare-net", "--unshare-ipc", "--ro-bind", "/", "/"]
    args += ["--dev", "/dev", "--tmpfs", "/dev/shm"]
    for device in devices:
        args += ["--dev-bind", device, device]
    folders = list(dict.fromkeys(str(Path(w).resolve()) for w in writable))
    args += ["--bind", str(Path(tmp).resolve()), "/tmp"]
    for entry in _entries_holding(host_tmp, needed):  # bwrap reads sources outside its /tmp
        if entry not in folders:
            args += ["--ro-bind-try", entry, entry]  # gone by then: skipped
    for folder in folders:
        args += ["--bind", folder, folder]
    return [*args, "--setenv", "TMPDIR", str(tmp), "--"]


def _entries_holding(host_tmp: Path, needed: Iterable[str]) -> list[str]:
    """The entries of ``host_tmp`` that are, or hold, a path of ``needed`` (an absolute path,
    or one after ``=`` in an option), as written or with its links followed."""
    top = os.path.realpath(host_tmp)
    out: set[str] = set()
    for item in needed:
        for token in (item, item.partition("=")[2]):
            if not token.startswith("/"):
                continue
            for path in {os.path.abspath(token), os.path.realpath(token)}:
                if path.startswith(top + os.sep):
                    out.add(os.path.join(top, path[len(top) + 1 :].split(os.sep)[0]))
    return sorted(out)


def gpu_devices() -> list[str]:
    return sorted({path for pattern in GPU_DEVICES for path in glob.glob(pattern)})


def _try_bwrap() -> tuple[str | None, str]:
    found = shutil.which("bwrap")
    if found is None:
        return None, "bwrap (bubblewrap) is not installed: apt-get install bubblewrap"
    try:
        with tempfile.TemporaryDirectory(prefix="kernel-review-probe-") as folder:
            probe = Path(folder)
            args = bwrap_args(found, [probe], gpu_devices(), probe)
            done = subprocess.run(
                [*args, "/bin/sh", "-c", "exit 0"], capture_output=True, text=True, timeout=30
            )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"bwrap could not be started: {exc}"
    if done.returncode != 0:
        said = done.stderr.strip()[-300:] or f"exit code {done.returncode}"
        return None, (
            f"bwrap cannot make a sandbox for this user ({said}): unprivileged user namespaces "
            "are off (sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu 24.04 an AppArmor "
            "profile for bwrap)"
        )
    return found, ""


def detect() -> Isolation:
    """What this machine offers now (starts ``bwrap`` once, makes and removes a cgroup)."""
    bwrap, bwrap_problem = _try_bwrap()
    place, why = cgroup.find_place()
    problem = "" if place is not None else f"no cgroup for the workers: {why}"
    return Isolation(bwrap, bwrap_problem, place, problem)


@dataclass(frozen=True)
class Confinement:
    bwrap: str
    place: cgroup.Place
    devices: tuple[str, ...]
    scratch: Path  # the run's temporary folders live here; writable to every confined process


_lock = threading.Lock()
_active: Confinement | None = None
_trusted = True  # whether this run may write what later runs take on trust (kept caches)


def trusted_run() -> bool:
    """Whether this run may write the caches later runs trust (the kept toolchain
    environments, the compiler's records): not a run that measures a pull request's code."""
    return _trusted


def kept_if_trusted(folders: Iterable[Path]) -> tuple[Path, ...]:
    """``folders`` (caches kept between runs) where this run may write them, else none: the
    writable folders a confined process adds for them."""
    return tuple(folders) if _trusted else ()


def active() -> Confinement | None:
    return _active


def configure(isolation: Isolation | None, scratch: Path | None = None) -> None:
    """Confine every process ``sandboxed`` starts from now on (None: stop doing so, and trust
    this run again, as a local command is), with ``scratch`` writable to all of them: this
    process's temporary folder from now on (its worktrees, the helpers' folders), so a process
    forked by the zygote can write its own. What the last confinement left running is killed."""
    global _active, _trusted
    with _lock:
        if _active is not None:  # what the last confinement left running ends with it
            cgroup.kill_all(_active.place)
        if isolation is None:
            _active, _trusted = None, True
            tempfile.tempdir = None
            return
        assert isolation.bwrap is not None and isolation.place is not None
        if scratch is None:
            scratch = Path(tempfile.mkdtemp(prefix="kernel-review-run-"))
            atexit.register(shutil.rmtree, scratch, ignore_errors=True)
        scratch.mkdir(parents=True, exist_ok=True)
        tempfile.tempdir = str(scratch)
        _active = Confinement(isolation.bwrap, isolation.place, tuple(gpu_devices()), scratch)
        atexit.register(cgroup.kill_all, isolation.place)  # nothing started outlives the bot


def declared_disposable(flag: str | None) -> bool:
    """Whether the workflow's ``runner-isolation: disposable`` input (``flag``) or the runner's
    ``KERNEL_REVIEW_DISPOSABLE_RUNNER=1`` says this runner takes nothing to its next job."""
    runner = os.environ.get(DISPOSABLE_ENV, "").strip().lower() in ("1", "true", "yes")
    return runner or (flag or "").strip().lower() == "disposable"


def require(disposable: bool, *, trusted: bool) -> str:
    """Before measuring a checkout's code: confine what runs it, or raise IsolationError
    saying what is missing and what to do. A disposable runner runs it unconfined. A run that
    is not ``trusted`` (a pull request's) writes no cache a later run takes on trust. Returns
    the line the log says."""
    global _trusted
    if disposable:
        configure(None)
        _trusted = trusted
        return (
            "runner declared disposable: the measured code runs without a sandbox (nothing it "
            "writes outlives this job)"
        )
    isolation = detect()
    if not isolation.ready:
        raise IsolationError(
            "this runner cannot confine the measured code, so it is not run: "
            + "; ".join(isolation.problems()),
            hint=f"give the runner what {DOCS} lists, or, if every job gets a fresh machine, "
            "declare it disposable (the action's runner-isolation: disposable, or "
            f"{DISPOSABLE_ENV}=1 in the runner's environment); kernel-review doctor --runner "
            "checks it",
        )
    configure(isolation)
    _trusted = trusted
    assert isolation.place is not None
    return (
        "the measured code runs in a sandbox (bwrap: read-only filesystem, its scratch folders "
        f"writable, no network) and in cgroups under {isolation.place.memory_root}"
    )


def sandboxed(argv: Sequence[str], *, writable: Iterable[Path], memory_bytes: int) -> list[str]:
    """``argv`` started confined, when ``require`` turned that on: in its own cgroups (the
    memory cap ``memory_bytes``, 0 for none) and in ``bwrap`` with only ``writable`` (created
    if missing) writable. ``argv`` unchanged otherwise. End it with ``kill_tree``."""
    conf = _active
    if conf is None:
        return list(argv)
    tmp = conf.scratch / "tmp"
    folders = [conf.scratch]
    for folder in [tmp, *writable]:
        Path(folder).mkdir(parents=True, exist_ok=True)
        folders.append(Path(folder))
    setup = json.dumps(cgroup.config(conf.place, memory_bytes))
    needed = [*argv, *sys.path, sys.prefix, sys.base_prefix, str(cache_root())]
    jail = bwrap_args(conf.bwrap, folders, conf.devices, tmp, needed=needed)
    return [sys.executable, "-I", "-B", str(ENTER), setup, "--", *jail, *argv]


def adopt(pid: int, memory_bytes: int) -> None:
    """Confine a process that was not started by ``sandboxed`` (forked by the workers' zygote,
    which is): cgroups of its own, the memory cap. Killed, and IsolationError, when that fails."""
    conf = _active
    if conf is None:
        return
    try:
        cgroup.join(conf.place, pid, memory_bytes)
    except OSError as exc:
        kill_tree(pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        raise IsolationError(
            f"could not move a worker into its cgroup ({exc}); it was killed",
            hint="kernel-review doctor checks the runner's cgroups",
        ) from None


def kill_tree(pid: int) -> None:
    """Kill everything in the cgroups of the confined process started as ``pid``."""
    conf = _active
    if conf is not None:
        cgroup.kill(conf.place, pid)


def killed_at_memory_cap(pid: int) -> bool:
    """Whether the kernel killed a process of the confined tree started as ``pid`` at its
    cgroup's memory cap (ask before ``kill_tree`` removes the cgroup)."""
    conf = _active
    return conf is not None and cgroup.oom_kills(conf.place, pid) > 0


def runner_findings(isolation: Isolation, disposable: bool) -> list[tuple[str, str, str]]:
    """What ``kernel-review doctor --runner`` says of this machine, as (status, setting,
    detail): whether measured code can be confined here, and whether measuring is refused."""
    p = isolation.place
    memory = f", the memory cap under {p.memory_root} (cgroup v1)" if p and p.memory_v1 else ""
    found = [
        ("runner sandbox", isolation.bwrap is not None, isolation.bwrap_problem,
         f"{isolation.bwrap} makes a sandbox for this user (read-only filesystem, no network)"),
        ("runner cgroups", p is not None, isolation.cgroup_problem,
         f"each worker's tree gets cgroups under {p.kill_root if p else ''}{memory}"),
    ]  # fmt: skip
    out = [("ok" if ok else "unsafe", name, good if ok else bad) for name, ok, bad, good in found]
    if not isolation.ready:
        detail = (
            "declared disposable: measured code runs unconfined"
            if disposable
            else "refused: declare the runner disposable only if every job gets a fresh machine "
            f"({DISPOSABLE_ENV}=1, or the action's runner-isolation: disposable)"
        )
        out.append(("ok" if disposable else "unsafe", "measuring on this runner", detail))
    return out
