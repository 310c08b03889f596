"""What a process running pull-request code may see, take and leave behind.

- what it sees: the scrubbed environment (it is started, capped, confined and ended by
  ``checks.procs.launch``);
- what it takes: the memory cap's size (its per-command timeouts are
  ``checks.sweep.workers.Timeouts``);
- what it leaves: the trees it ran in, hashed before and after, so measured code that rewrote
  one voids the run it took part in;
- and the failure a command ends in.

Standard library only (and ``bot.errors``): ``kernel-review bench`` imports it to start the
workers' zygote, whose imports are the longest part of a run's start.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import stat
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from bot.errors import ResultsError, UsageError
from checks.memory_cap import MEMORY_ENV, memory_from_env

T = TypeVar("T")
MAX_TREE_BYTES = 2**31  # a tree larger than this is not checked (and the log says so)
MAX_TREE_FILES = 200_000
_CHUNK = 1 << 20

# Failures after which the process (or its CUDA context) cannot be trusted any more.
RESTART_KINDS = frozenset({"crashed", "timeout", "cuda_error", "oom", "out_of_resources"})

KEEP_NAMES = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "LANG",
        "LANGUAGE",
        "TERM",
        "TZ",
        "SHELL",
        "TMPDIR",
        "TMP",
        "TEMP",
        "LD_LIBRARY_PATH",
        "LIBRARY_PATH",
        "CPATH",
        "CC",
        "CXX",
        "SYSTEMROOT",
        "COMSPEC",
        "RUNNER_TRACKING_ID",  # the runner finds and kills a job's leftover processes by it
    }
)
KEEP_PREFIXES = (
    "LC_",
    "CUDA_",
    "NVIDIA_",
    "NVCC_",
    "HIP_",
    "HSA_",
    "ROCM_",
    "ROCR_",
    "HCC_",
    "AMD_",
    "TRITON_",
    "PYTORCH_",
    "TORCH_",
    "OMP_",
    "MKL_",
    "OPENBLAS_",
)
SECRET_RE = re.compile(
    r"TOKEN|SECRET|PASSW|CREDENTIAL|API_?KEY|PRIVATE|AUTH|COOKIE|SESSION|^GITHUB_|^ACTIONS_|"
    r"^RUNNER_|^GH_|^AWS_|^AZURE_|^GOOGLE_|^GCP_|^HF_",
    re.IGNORECASE,
)


def scrubbed_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The parent's environment reduced to what a kernel needs: paths, locale, GPU selection,
    toolchain locations. Nothing that can write to GitHub or a cloud, no token of any kind."""
    src = dict(os.environ if base is None else base)
    out = {}
    for k, v in src.items():
        if k == "RUNNER_TRACKING_ID" or (
            (k in KEEP_NAMES or k.startswith(KEEP_PREFIXES)) and not SECRET_RE.search(k)
        ):
            out[k] = v
    return out


def device_env(device: str, gpu: str | None) -> dict[str, str]:
    """The scrubbed environment with the device's selection: what every worker of a device has
    (and the zygote it is forked from, whose imports read some of it)."""
    env = scrubbed_env()
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
        env["HIP_VISIBLE_DEVICES"] = ""
        env["TRITON_INTERPRET"] = "1"
        # One thread: a CPU "kernel" spread over threads times the scheduler, not the code.
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            env[var] = "1"
    elif gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
        env["HIP_VISIBLE_DEVICES"] = gpu
    return env


MIN_WORKER_MEMORY = 4 * 2**30


def default_memory_bytes() -> int:
    """A worker's memory cap: ``KERNEL_REVIEW_WORKER_MEMORY_GIB`` where set (``memory_cap.py``),
    else a quarter of the machine's memory (base and head run side by side, and the bot beside
    them), at least 4 GiB; 0 (no cap) where the size cannot be read."""
    try:
        chosen = memory_from_env()
    except ValueError as exc:
        raise UsageError(str(exc), hint=f"unset {MEMORY_ENV} or give it a whole number") from None
    if chosen is not None:
        return chosen
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 0
    return max(MIN_WORKER_MEMORY, total // 4)


def prctl(option: int, value: int) -> bool:
    """Linux ``prctl(option, value)`` for this process; False where the system says no or has
    no such call."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


class WorkerFailure(Exception):
    def __init__(
        self,
        kind: str,
        message: str,
        *,
        side: Literal["base", "head", ""] = "",
        log_tail: str = "",
        worker: str = "",
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.side = side
        self.log_tail = log_tail
        self.worker = worker  # the failing worker's name, where several run one side
        # the side whose worker held the GPU lock this one waited for, when that one hung
        self.waited_on: Literal["base", "head", ""] = ""
        # a timeout's: when (time.monotonic()) it was killed holding the GPU lock; None when
        # it did not hold it then
        self.held_lock_at: float | None = None
        # the other side failed too, on its own (not waiting on this one): the case failed on both
        self.both = False

    @property
    def needs_restart(self) -> bool:
        return self.kind in RESTART_KINDS


def tree_digest(
    root: Path,
    *,
    suffix: str | None = None,
    skip_dir: Callable[[str], bool] = lambda name: name in ("__pycache__", ".git"),
    max_files: int = MAX_TREE_FILES,
    max_bytes: int = MAX_TREE_BYTES,
) -> str | None:
    """SHA-256 over the paths and contents of the files under ``root`` (only those ending in
    ``suffix``, when given), or None past ``max_files`` or ``max_bytes``. Symbolic links are
    hashed as their target's name, never followed; anything but a file or a link (a device, a
    pipe) as its kind. Reads at most ``max_bytes`` however large a file claims or turns out to be.
    """
    h = hashlib.sha256()
    files = 0
    budget = max_bytes
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not skip_dir(d))
        for name in sorted(filenames):
            if suffix is not None and not name.endswith(suffix):
                continue
            files += 1
            if files > max_files:
                return None
            path = os.path.join(dirpath, name)
            h.update(os.path.relpath(path, root).encode("utf-8", "surrogateescape") + b"\0")
            try:
                budget = _hash_entry(h, path, budget)
            except OSError:
                return None
            if budget < 0:
                return None
    return h.hexdigest()


def stat_print(root: Path, *, max_files: int = MAX_TREE_FILES) -> str | None:
    """SHA-256 over the relative path and ``lstat`` of every file under ``root`` (links not
    followed; no folder skipped): its device, inode, mode, size, modification time and change
    time. A process without root cannot set a file's change time back: a write, a rename, a
    ``chmod`` or a new file in its place moves it, and ``os.utime`` restores only the
    modification time. None past ``max_files``."""
    h = hashlib.sha256()
    files = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            files += 1
            if files > max_files:
                return None
            path = os.path.join(dirpath, name)
            try:
                s = os.lstat(path)
            except OSError:
                return None
            h.update(os.path.relpath(path, root).encode("utf-8", "surrogateescape") + b"\0")
            h.update(
                f"{s.st_dev} {s.st_ino} {s.st_mode} {s.st_size} "
                f"{s.st_mtime_ns} {s.st_ctime_ns}\0".encode()
            )
    return h.hexdigest()


def write_seal(folder: Path, seal: Path, *, max_bytes: int) -> bool:
    """Write ``seal``: the SHA-256 of ``folder``'s files (``tree_digest``, no folder skipped)
    and the print of their metadata (``stat_print``), through a temporary file. False, and
    nothing written, when the folder is past the caps."""
    digest = tree_digest(folder, skip_dir=lambda name: False, max_bytes=max_bytes)
    if digest is None:
        return False
    printed = stat_print(folder) or ""
    tmp = seal.with_name(seal.name + f".{os.getpid()}")
    tmp.write_text(f"{digest}\n{printed}\n")
    tmp.replace(seal)
    return True


def seal_matches(folder: Path, seal: Path, *, max_bytes: int) -> bool:
    """Whether ``folder``'s files are those ``write_seal`` sealed: when no file's metadata
    moved since (``stat_print``), without reading them; otherwise by their contents
    (``tree_digest``), as a copy of the folder or a seal written before the print was kept
    are read. False when ``seal`` is missing or empty."""
    try:
        lines = seal.read_text().split("\n")
    except OSError:
        return False
    recorded = lines[0].strip()
    printed = lines[1].strip() if len(lines) > 1 else ""
    if not recorded or not folder.is_dir():
        return False
    if printed and stat_print(folder) == printed:
        return True
    return tree_digest(folder, skip_dir=lambda name: False, max_bytes=max_bytes) == recorded


def _hash_entry(h: Any, path: str, budget: int) -> int:
    """Hash one directory entry without following it; returns the byte budget left (< 0: over)."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        h.update(b"link\0" + os.fsencode(os.readlink(path)))
        return budget
    if not stat.S_ISREG(info.st_mode):
        h.update(b"kind\0" + str(stat.S_IFMT(info.st_mode)).encode())
        return budget
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        while chunk := f.read(min(_CHUNK, budget + 1)):
            budget -= len(chunk)
            if budget < 0:
                return budget
            h.update(chunk)
    return budget


def run_sealed(
    trees: Sequence[Path], run: Callable[[], T], *, progress: Callable[[str], None] | None = None
) -> T:
    """``run()``, then ResultsError if any of ``trees`` changed meanwhile: measured code that
    rewrote a worktree (its own, to measure other code than the commit, or the other side's, to
    slow it down) voids the run. A change undone before the run ends is not seen."""
    before = [tree_digest(t) for t in trees]
    for tree, digest in zip(trees, before, strict=True):
        if digest is None and progress is not None:
            progress(f"{tree} is over {MAX_TREE_BYTES:,} bytes; not checked for changes")
    result = run()
    for tree, digest in zip(trees, before, strict=True):
        if digest is not None and tree_digest(tree) != digest:
            raise ResultsError(
                f"the worktree {Path(tree).name} changed while the measured code ran; the "
                "measurements are void",
                hint="the pull request's code wrote into a checked-out tree: read what it does "
                "before running /bench again",
            )
    return result
