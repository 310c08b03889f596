"""The early warm-up (``checks.sweep.warmer``, program ``checks/worker/warmer.py``) as real
processes on the CPU. This machine has no CUDA driver, so where the program must burn it loads a
stand-in ``libcuda.so.1`` built here (the driver calls it makes, each logged): it burns until the
sweep stops it, says so, and a driver that fails or is missing leaves the warm-up to the
workers. The GPU run is ``tests/gpu/test_sweep_gpu.py``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from checks.sweep.warmer import BURN_S, Warmer, start_warmer

STAND_IN = r"""
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static void note(const char *what) {
    const char *path = getenv("STAND_IN_LOG");
    if (!path) return;
    FILE *f = fopen(path, "a");
    if (f) { fprintf(f, "%s\n", what); fclose(f); }
}
int cuInit(unsigned flags) { note("cuInit"); return atoi(getenv("STAND_IN_INIT") ?: "0"); }
int cuDeviceGet(int *device, int ordinal) { *device = ordinal; return 0; }
int cuDevicePrimaryCtxRetain(void **ctx, int device) { *ctx = (void *)1; note("context"); return 0; }
int cuCtxSetCurrent(void *ctx) { return 0; }
int cuMemAlloc_v2(unsigned long long *ptr, size_t bytes) { *ptr = 4096; note("alloc"); return 0; }
int cuMemcpyDtoD_v2(unsigned long long dst, unsigned long long src, size_t bytes) { return 0; }
int cuCtxSynchronize(void) { usleep(2000); note("sync"); return 0; }
"""


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc to build the stand-in driver")
    lib = tmp_path_factory.mktemp("driver")
    (lib / "cuda.c").write_text(STAND_IN, encoding="utf-8")
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-o", str(lib / "libcuda.so.1"), str(lib / "cuda.c")],
        check=True,
    )
    return lib


def _python(tmp: Path, driver: Path, *, init_code: int = 0) -> str:
    """An interpreter that loads the stand-in driver (the warmer's environment is scrubbed, so
    the wrapper sets it), logging its calls to ``tmp/driver.log``."""
    wrapper = tmp / "python-with-driver"
    wrapper.write_text(
        "#!/bin/sh\n"
        f"export LD_LIBRARY_PATH={driver} STAND_IN_LOG={tmp / 'driver.log'} "
        f"STAND_IN_INIT={init_code}\n"
        f'exec {sys.executable} "$@"\n',
        encoding="utf-8",
    )
    wrapper.chmod(0o755)
    return str(wrapper)


def _wait_for(path: Path, line: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and line in path.read_text().splitlines():
            return
        time.sleep(0.02)
    raise AssertionError(f"{path} never said {line!r}: {path.read_text() if path.exists() else ''}")


def test_a_warmer_burns_until_stopped_and_says_it_had_the_gpu(
    stand_in: Path, tmp_path: Path
) -> None:
    warmer = Warmer.start(["3"], tmp_path, python=_python(tmp_path, stand_in))
    log = tmp_path / "logs" / "warmer-gpu3.log"
    _wait_for(log, "burning")
    proc = warmer._procs["3"][0]
    time.sleep(0.1)
    syncs = (tmp_path / "driver.log").read_text().splitlines().count("sync")
    assert syncs >= 3  # it keeps copying while the workers start
    assert warmer.stop("3") is True
    assert proc.wait(timeout=10) is not None
    assert warmer.stop("3") is False  # stopped once; a GPU it never had is not warm either
    calls = (tmp_path / "driver.log").read_text().splitlines()
    assert calls[:4] == ["cuInit", "context", "alloc", "alloc"]


def test_a_warmer_ends_by_itself_after_its_burn(stand_in: Path, tmp_path: Path) -> None:
    """Whatever happens to the bot, the copies end: after ``max_s`` (``BURN_S`` unless told)
    the warmer exits, before the workers make their GPU contexts; one that burnt still counts
    as a warm-up (the workers read the clock before they skip their own)."""
    warmer = Warmer.start([None], tmp_path, python=_python(tmp_path, stand_in))
    proc = warmer._procs[None][0]
    t0 = time.monotonic()
    assert proc.wait(timeout=20) == 0
    assert time.monotonic() - t0 < BURN_S + 10
    said = (tmp_path / "logs" / "warmer-gpu.log").read_text().splitlines()
    assert said[0] == "burning" and said[-1].startswith("stopped after"), said
    assert warmer.stop(None) is True
    assert warmer.stop(None) is False  # the first call took it: a second finds no warmer


@pytest.mark.parametrize("broken", ["no driver", "driver fails"])
def test_a_warmer_without_a_working_driver_leaves_the_warm_up_to_the_workers(
    stand_in: Path, tmp_path: Path, broken: str
) -> None:
    """No CUDA driver library (another vendor's GPU, or none: this machine) or a driver that
    fails: the warmer says why and ends, and ``stop`` says the GPU is not warm, so the workers
    burn as they would without it."""
    if broken == "no driver":
        warmer = start_warmer("cuda", ["0"], tmp_path)
        assert warmer is not None
        expected = "no warm-up: no CUDA driver library"
    else:
        python = _python(tmp_path, stand_in, init_code=100)
        warmer = Warmer.start(["0"], tmp_path, python=python)
        expected = "no warm-up: cuInit returned CUDA error 100"
    proc = warmer._procs["0"][0]
    assert proc.wait(timeout=20) == 3
    said = (tmp_path / "logs" / "warmer-gpu0.log").read_text()
    assert said.startswith(expected), said
    assert warmer.stop("0") is False
    warmer.close()


def test_no_warmer_on_the_cpu_and_close_ends_every_one(stand_in: Path, tmp_path: Path) -> None:
    assert start_warmer("cpu", ["0"], tmp_path) is None
    warmer = Warmer.start(["0", "1", "0"], tmp_path, python=_python(tmp_path, stand_in))
    procs = [p for p, _ in warmer._procs.values()]
    assert len(procs) == 2  # one per GPU
    warmer.close()
    assert all(p.wait(timeout=10) is not None for p in procs)
    assert not warmer._procs
    assert os.path.exists(tmp_path / "logs" / "warmer-gpu1.log")
