"""Workers forked from the zygote (``checks.sweep.zygote``), real processes on the CPU: each is
this process's child in a session of its own, with its own environment, folder, log and memory
cap; it dies and is reported as a started worker is; and where the zygote cannot serve a spec
(a checkout with its own ``triton``, another cap, a zygote that died) the worker is started as
before."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from bot.outputs import bytecode_dir
from checks.sweep.workers import WorkerClient, WorkerFailure, WorkerSpec
from checks.sweep.zygote import Forked, Zygote, start_zygote
from checks.worker.zygote import ships_bytecode
from tests.integration.test_worker_isolation import _alive
from tests.integration.test_workers import FAST, SHAPE, STANDINS

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs Linux /proc")
CAP = 3 * 2**30


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory):
    z = start_zygote("cpu", tmp_path_factory.mktemp("zygote"), memory_bytes=CAP)
    yield z
    z.close()


def _client(zygote: Zygote, work: Path, root: Path = STANDINS / "head", **kw) -> WorkerClient:
    spec = WorkerSpec(
        side="head", root=root, device="cpu", work_dir=work, timeouts=FAST, memory_bytes=CAP, **kw
    )
    return WorkerClient(spec, zygote)


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()


def test_a_forked_worker_is_ours_in_its_own_session_with_its_env_folder_log_and_cap(
    zygote: Zygote, tmp_path: Path
) -> None:
    w = _client(zygote, tmp_path)
    w.start()
    try:
        assert isinstance(w.proc, Forked)
        # where the zygote's start went, on one clock: launched, began, imported, ready to fork
        m = zygote.marks
        assert m["spawned_at"] <= m["main_at"] <= m["imported_at"] <= m["program_at"]
        # Triton and its key, then torch, in turn
        assert m["main_at"] <= m["key_at"] <= m["torch_at"] <= m["imported_at"]
        assert m["program_at"] <= time.monotonic()
        # torch's bytecode: its own where the installation ships it, else kept between runs
        if ships_bytecode("torch"):
            assert zygote.bytecode == "installed"
        else:
            import torch

            assert zygote.bytecode in ("kept", "written")
            folder = bytecode_dir()
            assert folder is not None
            kept = folder / Path(torch.__file__).parent.relative_to("/") / "__pycache__"
            assert any(kept.glob("__init__.*.pyc"))
        pid = w.proc.pid
        fields = _stat(pid)
        assert int(fields[1]) == os.getpid()  # reparented here: waited for like any child
        assert int(fields[3]) == pid  # a session of its own (killed whole)
        assert Path(f"/proc/{pid}/cwd").resolve() == (STANDINS / "head").resolve()
        limits = Path(f"/proc/{pid}/limits").read_text()
        data = next(line for line in limits.splitlines() if line.startswith("Max data size"))
        assert data.split()[3:5] == [str(CAP), str(CAP)]
        assert w.prepare(["standin_kernels:axpy"], SHAPE, "float32", seed=0).entry
        assert w.configure("cpu", 1.0).calls_per_block >= 1
        assert w.block().value_us > 0
        assert w.finish().correct
        # the measured code sees the spec's environment: it leaves a daemon whose pid it writes
        # into its TRITON_CACHE_DIR
        w.prepare(["standin_kernels:daemon"], SHAPE, "float32", seed=0)
    finally:
        w.close()
    assert not w.alive() and w.proc is not None and w.proc.returncode == 0
    assert w.log_path is not None and w.log_path.exists()
    daemon = int((w.spec.triton_cache / "daemon.pid").read_text())
    deadline = time.monotonic() + 10
    while _alive(daemon) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(daemon)  # and it died with its worker's session


@pytest.mark.parametrize(
    ("name", "kind", "words"),
    [
        ("crash", "crashed", "exited with code 7"),
        ("segfault", "crashed", "SIGSEGV"),
        ("hang", "timeout", "did not finish within 8s"),
    ],
)
def test_a_forked_worker_that_dies_is_reported_and_replaced_like_a_started_one(
    zygote: Zygote, tmp_path: Path, name: str, kind: str, words: str
) -> None:
    w = _client(zygote, tmp_path)
    w.start()
    try:
        first = w.proc
        with pytest.raises(WorkerFailure) as info:
            w.prepare([f"standin_kernels:{name}"], SHAPE, "float32", seed=0)
        assert info.value.kind == kind and words in info.value.message
        assert not w.alive()
        assert first is not None
        with pytest.raises(ProcessLookupError):
            os.killpg(first.pid, 0)  # its whole session is gone
        w.restart()
        assert isinstance(w.proc, Forked) and w.proc.pid != first.pid
        assert w.prepare(["standin_kernels:axpy"], SHAPE, "float32", seed=0).entry
    finally:
        w.close()


def test_where_the_zygote_cannot_serve_the_worker_is_started_as_before(
    zygote: Zygote, tmp_path: Path
) -> None:
    own = tmp_path / "own-triton"
    shutil.copytree(STANDINS / "head", own)
    (own / "triton").mkdir()  # a checkout with its own triton: not the one the zygote imported
    other_cap = WorkerClient(
        WorkerSpec(side="head", root=STANDINS / "head", device="cpu", work_dir=tmp_path,
                   timeouts=FAST, memory_bytes=2 * CAP),
        zygote,
    )  # fmt: skip
    for w in (_client(zygote, tmp_path, own, label="own"), other_cap):
        w.start()
        try:
            assert isinstance(w.proc, subprocess.Popen)
            assert w.prepare(["standin_kernels:axpy"], SHAPE, "float32", seed=0).entry
        finally:
            w.close()


def test_a_zygote_that_died_leaves_the_workers_to_start_as_before(tmp_path: Path) -> None:
    z = start_zygote("cpu", tmp_path, memory_bytes=CAP)
    assert z.proc is not None
    z.proc.kill()
    z.proc.wait()
    w = _client(z, tmp_path)
    w.start()
    try:
        assert isinstance(w.proc, subprocess.Popen)
        assert "exited" in z.note or "answering" in z.note
        assert w.prepare(["standin_kernels:axpy"], SHAPE, "float32", seed=0).entry
    finally:
        w.close()
        z.close()


@pytest.mark.parametrize("alive", [True, False])
def test_a_sweep_forks_its_workers_from_the_zygote_or_says_why_not(
    tmp_path: Path, alive: bool
) -> None:
    """Unasked, on the CPU as on a GPU (CI runs the path that measures): the sweep's workers
    come from the zygote and measure; with a zygote that died they are started one by one,
    measure all the same, and the sweep's notes say why."""
    from checks.sweep.run import SweepOptions
    from checks.sweep.shapes import Case
    from tests.integration.test_sweep_cpu import QUICK, _standin_sweep

    case = Case(kernel="axpy", bench="standin_kernels:axpy", dims=(1000,), dtype="float32",
                tolerance=0.5)  # fmt: skip
    opts = SweepOptions(device="cpu", protocol=QUICK, measure_ceilings=False)
    z = None
    if not alive:
        z = start_zygote("cpu", tmp_path)
        assert z.proc is not None
        z.proc.kill()
        z.proc.wait()
    try:
        result = _standin_sweep([case], opts, tmp_path, zygote=z)
    finally:
        if z is not None:
            z.close()
    assert result.cases[0].status == "ok" and result.cases[0].verdict
    said = [n for n in result.notes if "not forked from the zygote" in n]
    assert bool(said) != alive, result.notes
    assert (tmp_path / "logs" / "zygote.log").exists()
