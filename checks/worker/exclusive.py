"""One worker at a time on a GPU for the calls that tune themselves: a case's first call, where
an autotuner (Triton's, cuDNN's benchmark mode, a kernel's own) times its candidates.

Base and head check a case side by side; if both autotuned at once, each would time its configs
while the other's ran on the same GPU and might keep a config it would not pick alone, as in
production it runs alone. The workers of one GPU share a lock file (``GPU_LOCK_ENV``, set by the
parent); the first call of a case's entry point holds it.

What in that call only uses the CPU runs with the lock let go (``yield_while_compiling``):
Triton's compile (LLVM and ptxas, or the cache lookup) and its kernels' loading (the C launcher's
build, the binary's load). Both sides then compile at once, and the lock is taken back before
anything runs on the GPU. (On the H200 a sweep with no lock at all checked 0.3 s faster in 4
runs; with the lock let go for compiles the checks did not read measurably faster, their
medians varying by 0.4 s from run to run: bench/results/h200/cost_side_by_side/.)

The time spent inside Triton's compile and load in this process is counted (``SPENT``): a check
says how much of its first call was compiling and loading.

A holder writes its pid into the lock file when it takes the lock and empties the file when it
lets go, so the file names the processes that hold it or died holding it (``holders``, oldest
first). When both sides of a check time out, the one that held the lock hung and the other
waited for it: the parent blames the first. Standard library only.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

GPU_LOCK_ENV = "KERNEL_REVIEW_GPU_LOCK"
# seconds this process spent inside Triton's compile and its kernels' loading (``_letting_go``)
SPENT = {"compile": 0.0, "load": 0.0}


class _Held:
    """The lock this process holds: its file, the open descriptor, the thread that took it."""

    path = ""
    fd: int | None = None
    owner: int | None = None


_HELD = _Held()


# how often a bounded wait (``exclusive``'s ``wait_s``) tries the lock again
RETRY_S = 0.005


def _acquire(path: str, wait_s: float | None = None) -> int | None:
    """The lock file's descriptor, held; None when ``wait_s`` seconds passed without it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    if wait_s is None:
        fcntl.flock(fd, fcntl.LOCK_EX)
    else:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    return None
                time.sleep(RETRY_S)
    # after the lines of holders that died holding it, if any (their kill let it go)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def _let_go(fd: int) -> None:
    os.ftruncate(fd, 0)  # this process no longer holds it, nor did those before it
    os.close(fd)  # closing releases the lock


def holders(path: str | Path | None) -> list[int]:
    """The pids the lock file names, oldest first: who holds the lock, after those that died
    holding it and were not followed by a holder that let go; none without a lock file."""
    if not path:
        return []
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return []
    return [int(x) for x in text.split() if x.isdigit()]


@contextlib.contextmanager
def exclusive(path: str | None, wait_s: float | None = None) -> Iterator[bool]:
    """Hold the lock file ``path`` (no lock when None or empty). With ``wait_s``, wait at most
    that long for it and run the block without it after: says whether the lock is held."""
    if not path:
        yield False
        return
    fd = _acquire(path, wait_s)
    if fd is None:
        yield False
        return
    _HELD.path, _HELD.fd, _HELD.owner = path, fd, threading.get_ident()
    try:
        yield True
    finally:
        held, _HELD.fd, _HELD.owner = _HELD.fd, None, None
        if held is not None:
            _let_go(held)


@contextlib.contextmanager
def released() -> Iterator[None]:
    """Let the lock go for the block and take it back after (waiting for whoever took it
    meanwhile); nothing when this thread does not hold it (or it is already let go)."""
    if _HELD.fd is None or _HELD.owner != threading.get_ident():
        yield
        return
    fd, _HELD.fd = _HELD.fd, None
    _let_go(fd)
    try:
        yield
    finally:
        _HELD.fd = _acquire(_HELD.path)


def _letting_go(
    fn: Callable[..., Any], spent: str, *, unless: Callable[..., bool] | None = None
) -> Any:
    """``fn`` run in ``released``, its time added to ``SPENT[spent]``; not when ``unless`` says,
    on the same arguments, that there is nothing to do (a launch of a kernel that is loaded
    already)."""
    if getattr(fn, "_kernel_review_lets_go", False):
        return fn

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if unless is not None and unless(*args, **kwargs):
            return fn(*args, **kwargs)
        with released():  # counted inside: taking the lock back may wait for another worker
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                SPENT[spent] += time.perf_counter() - t0

    call._kernel_review_lets_go = True  # type: ignore[attr-defined]
    return call


def _loaded(kernel: Any, *args: Any, **kwargs: Any) -> bool:
    return getattr(kernel, "module", None) is not None


# (module, attribute): Triton's compile where the JIT and ``triton.compile`` find it, and the
# method that builds a compiled kernel's launcher and loads its binary on the first launch
COMPILE_NAMES = (
    ("triton.compiler.compiler", "compile"),
    ("triton.compiler", "compile"),
    ("triton", "compile"),
)
LOAD_NAMES = (("triton.compiler.compiler", "CompiledKernel", "_init_handles"),)


def yield_while_compiling(modules: Mapping[str, Any] | None = None) -> list[str]:
    """Wrap Triton's compile and its kernels' loading in ``released``, where Triton is imported
    (the checkout's own Triton included: whatever ``sys.modules`` holds); once per process.
    A JIT function takes ``compile`` when it first runs, so this is done before a case's first
    call. The names wrapped; none where Triton is not imported or has none of them."""
    mods = sys.modules if modules is None else modules
    done = []
    for module, name in COMPILE_NAMES:
        mod = mods.get(module)
        fn = getattr(mod, name, None) if mod is not None else None
        if callable(fn):
            setattr(mod, name, _letting_go(fn, "compile"))
            done.append(f"{module}.{name}")
    for module, cls_name, name in LOAD_NAMES:
        cls = getattr(mods.get(module), cls_name, None)
        fn = getattr(cls, name, None) if cls is not None else None
        if callable(fn):
            setattr(cls, name, _letting_go(fn, "load", unless=_loaded))
            done.append(f"{module}.{cls_name}.{name}")
    return done
