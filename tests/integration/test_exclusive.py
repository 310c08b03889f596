"""The GPU's first-call lock (``checks.worker.exclusive``): let go for Triton's compiles and
kernel loads, held for everything else."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any

from checks.worker import exclusive


def _free(path: Path) -> bool:
    """Whether another holder could take the lock now (a second open file, as another process)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def test_released_lets_the_lock_go_for_its_block_and_takes_it_back(tmp_path: Path) -> None:
    lock = tmp_path / "gpu.lock"
    with exclusive.exclusive(str(lock)):
        assert not _free(lock)
        with exclusive.released():
            assert _free(lock)
            with exclusive.released():  # nested: nothing more to let go
                assert _free(lock)
        assert not _free(lock)
    assert _free(lock)
    with exclusive.released():  # not held: nothing to do
        assert _free(lock)


def test_only_the_thread_that_took_the_lock_lets_it_go(tmp_path: Path) -> None:
    lock = tmp_path / "gpu.lock"
    seen: list[bool] = []

    def other() -> None:
        with exclusive.released():
            seen.append(_free(lock))

    with exclusive.exclusive(str(lock)):
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen == [False]


def _fake_triton(log: list[str], lock: Path) -> dict[str, Any]:
    def compile(src: str, **kw: Any) -> str:
        log.append(f"compile {src}: lock free {_free(lock)}")
        return f"compiled {src}"

    class CompiledKernel:
        def __init__(self) -> None:
            self.module: object | None = None

        def _init_handles(self) -> None:
            log.append(f"load: lock free {_free(lock)}")
            self.module = object()

    compiler = types.SimpleNamespace(compile=compile, CompiledKernel=CompiledKernel)
    package = types.SimpleNamespace(compile=compile)
    return {
        "triton": types.SimpleNamespace(compile=compile),
        "triton.compiler": package,
        "triton.compiler.compiler": compiler,
    }


def test_triton_compiles_and_first_loads_run_with_the_lock_let_go(tmp_path: Path) -> None:
    lock = tmp_path / "gpu.lock"
    log: list[str] = []
    mods = _fake_triton(log, lock)
    done = exclusive.yield_while_compiling(mods)
    assert done == [
        "triton.compiler.compiler.compile",
        "triton.compiler.compile",
        "triton.compile",
        "triton.compiler.compiler.CompiledKernel._init_handles",
    ]
    assert exclusive.yield_while_compiling(mods) == done  # once: no wrapper around a wrapper
    assert mods["triton.compiler"].compile.__wrapped__.__name__ == "compile"
    assert not hasattr(mods["triton.compiler"].compile.__wrapped__, "__wrapped__")
    kernel = mods["triton.compiler.compiler"].CompiledKernel()
    with exclusive.exclusive(str(lock)):
        assert mods["triton.compiler"].compile("k") == "compiled k"
        assert not _free(lock)  # taken back before the call goes on to the GPU
        kernel._init_handles()
        assert not _free(lock)
        kernel._init_handles()  # loaded already: a launch, which keeps the lock
        log.append(f"after: lock free {_free(lock)}")
    assert log == [
        "compile k: lock free True",
        "load: lock free True",
        "load: lock free False",
        "after: lock free False",
    ]


def test_nothing_is_wrapped_where_triton_is_not_imported() -> None:
    assert exclusive.yield_while_compiling({}) == []
    assert exclusive.yield_while_compiling({"triton": types.SimpleNamespace()}) == []


def test_compiles_and_loads_count_their_time(tmp_path: Path) -> None:
    lock = tmp_path / "gpu.lock"
    log: list[str] = []
    mods = _fake_triton(log, lock)
    exclusive.yield_while_compiling(mods)
    before = dict(exclusive.SPENT)
    with exclusive.exclusive(str(lock)):
        mods["triton.compiler.compiler"].compile("k")
        assert exclusive.SPENT["load"] == before["load"]
        kernel = mods["triton.compiler.compiler"].CompiledKernel()
        kernel._init_handles()
        loaded = exclusive.SPENT["load"]
        kernel._init_handles()  # loaded already: a launch, not counted
    assert exclusive.SPENT["compile"] > before["compile"]
    assert loaded > before["load"] and exclusive.SPENT["load"] == loaded


HOLDER = r"""
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


def test_waiting_to_take_the_lock_back_is_not_counted_as_compiling(tmp_path: Path) -> None:
    """Another worker takes the lock while this one compiles and holds it 0.4 s after: the
    compile is counted, the wait for the lock is not."""
    lock = tmp_path / "gpu.lock"
    log: list[str] = []
    mods = _fake_triton(log, lock)
    holders: list[subprocess.Popen[str]] = []

    def compile_while_another_takes_the_lock(src: str, **kw: Any) -> str:
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(lock), "0.4"], stdout=subprocess.PIPE, text=True
        )
        holders.append(proc)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        return f"compiled {src}"

    mods["triton.compiler.compiler"].compile = compile_while_another_takes_the_lock
    exclusive.yield_while_compiling(mods)
    try:
        with exclusive.exclusive(str(lock)):
            before = exclusive.SPENT["compile"]
            t0 = time.monotonic()
            mods["triton.compiler.compiler"].compile("k")
            waited = time.monotonic() - t0
            counted = exclusive.SPENT["compile"] - before
        assert waited >= 0.3  # the lock came back once the other holder was done
        assert counted < waited - 0.25, (counted, waited)
    finally:
        for proc in holders:
            proc.kill()
            proc.wait()


# holds the lock as a worker does (``exclusive``), in another process, until killed
WORKER_HOLDER = r"""
import sys, time
from checks.worker import exclusive
with exclusive.exclusive(sys.argv[1]):
    print("held", flush=True)
    time.sleep(60)
"""


def _hold_in_another_process(lock: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER_HOLDER, str(lock)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_the_lock_file_names_its_holder_and_who_died_holding_it(tmp_path: Path) -> None:
    lock = tmp_path / "gpu.lock"
    with exclusive.exclusive(str(lock)):
        assert exclusive.holders(lock) == [os.getpid()]
        with exclusive.released():
            assert exclusive.holders(lock) == []
        assert exclusive.holders(lock) == [os.getpid()]
    assert exclusive.holders(lock) == []  # let go: nobody holds it
    proc = _hold_in_another_process(lock)
    assert exclusive.holders(lock) == [proc.pid]
    proc.kill()
    proc.wait()
    # killed holding it: its pid stays, and the next holder comes after it
    assert exclusive.holders(lock) == [proc.pid]
    with exclusive.exclusive(str(lock)):
        assert exclusive.holders(lock) == [proc.pid, os.getpid()]
    assert exclusive.holders(lock) == []
    assert exclusive.holders(tmp_path / "none.lock") == [] and exclusive.holders(None) == []


def test_a_bounded_wait_runs_the_block_without_the_lock_when_another_keeps_it(
    tmp_path: Path,
) -> None:
    lock = tmp_path / "gpu.lock"
    proc = _hold_in_another_process(lock)
    try:
        t0 = time.monotonic()
        with exclusive.exclusive(str(lock), wait_s=0.3) as held:
            waited = time.monotonic() - t0
            assert not held
            assert exclusive.holders(lock) == [proc.pid]  # nothing written: not a holder
        assert 0.3 <= waited < 2.0, waited
    finally:
        proc.kill()
        proc.wait()
    with exclusive.exclusive(str(lock), wait_s=0.3) as held:  # free now: taken at once
        assert held and not _free(lock)
    with exclusive.exclusive(None, wait_s=0.3) as held:
        assert not held
