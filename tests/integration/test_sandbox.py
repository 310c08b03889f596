"""The sandbox measured code runs in on a runner that keeps state (``checks/procs``): it writes
nothing outside its scratch folders, a daemon that left its session dies with its worker, a
shared mapping or /dev/shm counts against its memory cap; and measuring is refused, saying
what is missing, where the machine cannot confine it. Tests that need bwrap or a writable
cgroup skip, saying why, on a machine without them."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.app import ActionEnv, measure_mode
from checks.procs import cgroup, sandbox
from checks.sweep.workers import WorkerClient, WorkerFailure, WorkerSpec
from tests.integration.test_workers import FAST, SHAPE, STANDINS

ISOLATION = sandbox.detect()
needs_isolation = pytest.mark.skipif(
    not ISOLATION.ready, reason="this machine cannot confine: " + "; ".join(ISOLATION.problems())
)


@pytest.fixture
def confined() -> Iterator[None]:
    sandbox.configure(ISOLATION)
    try:
        yield
    finally:
        sandbox.configure(None)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rpartition(b")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state != b"Z"


def _client(work: Path, **kw: object) -> WorkerClient:
    spec = WorkerSpec(
        side="head", root=STANDINS / "head", device="cpu", work_dir=work, timeouts=FAST, **kw
    )
    return WorkerClient(spec)


@needs_isolation
def test_measured_code_cannot_write_the_runners_files(tmp_path: Path, confined: None) -> None:
    outside = Path(tempfile.mkdtemp(prefix="kernel-review-runner-", dir="/var/tmp"))
    try:
        targets = [tmp_path / "runner" / "GITHUB_ENV", outside / "GITHUB_PATH"]
        for target in targets:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("KEEP=1\n")
        (tmp_path / "targets.txt").write_text("\n".join(map(str, targets)))
        client = _client(tmp_path / "work")
        client.start()
        try:  # the worker itself works: it reads its checkout, writes its scratch
            assert client.prepare(["standin_kernels:escape"], SHAPE, "float32", seed=0)["entry"]
        finally:
            client.close()
        said = next((tmp_path / "work" / "triton-cache").rglob("escape.txt")).read_text()
        assert said == ""
        assert [t.read_text() for t in targets] == ["KEEP=1\n", "KEEP=1\n"]
    finally:
        shutil.rmtree(outside)


@needs_isolation
def test_a_daemon_that_left_its_session_dies_with_its_worker(
    tmp_path: Path, confined: None
) -> None:
    client = _client(tmp_path)
    client.start()
    try:
        client.prepare(["standin_kernels:setsid_daemon"], SHAPE, "float32", seed=0)
    finally:
        client.close()
    pid = int(next((tmp_path / "triton-cache").rglob("setsid_daemon.pid")).read_text())
    try:
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(pid)
    finally:
        if _alive(pid):
            os.kill(pid, 9)


@needs_isolation
def test_shared_memory_past_the_cap_is_stopped(tmp_path: Path, confined: None) -> None:
    before = set(os.listdir("/dev/shm"))
    client = _client(tmp_path, memory_bytes=256 * 2**20)
    client.start()
    try:
        with pytest.raises(WorkerFailure) as failure:
            client.prepare(["standin_kernels:shm_hog"], SHAPE, "float32", seed=0)
        assert failure.value.kind in ("crashed", "oom")
        client.restart()  # the next case runs on a fresh worker
        assert client.prepare(["standin_kernels:axpy"], SHAPE, "float32", seed=0)["entry"]
    finally:
        client.close()
        for name in set(os.listdir("/dev/shm")) - before:  # what escaped, unconfined
            if name.startswith("kernel-review-test-"):
                os.unlink(f"/dev/shm/{name}")
    # the worker's /dev/shm was its own: nothing is left in the machine's
    assert not [n for n in set(os.listdir("/dev/shm")) - before if "kernel-review-test" in n]


@needs_isolation
def test_a_confined_tree_leaves_no_cgroup_behind(tmp_path: Path, confined: None) -> None:
    client = _client(tmp_path)
    client.start()
    assert client.proc is not None
    pid = client.proc.pid
    place = ISOLATION.place
    assert place is not None
    folders = [root / f"{cgroup.PREFIX}{pid}" for root in place.roots()]
    assert all(f.is_dir() for f in folders)
    client.close()
    assert not any(f.exists() for f in folders)


def test_measuring_is_refused_without_bwrap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it
    monkeypatch.delenv(sandbox.DISPOSABLE_ENV, raising=False)
    with pytest.raises(sandbox.IsolationError) as refused:
        sandbox.require(disposable=False)
    text = str(refused.value)
    assert "bwrap (bubblewrap) is not installed" in text
    assert "runner-isolation: disposable" in text and sandbox.DISPOSABLE_ENV in text
    assert sandbox.active() is None
    lines, refuses = sandbox.isolation_report(sandbox.detect(), disposable=False)
    assert refuses and any(line.startswith("missing: bwrap") for line in lines)


def test_a_cgroup_folder_that_takes_no_children_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(cgroup.CGROUP_ENV, str(tmp_path / "nowhere"))
    place, why = cgroup.find_place()
    assert place is None
    assert f"{cgroup.CGROUP_ENV}={tmp_path / 'nowhere'}" in why


def test_a_disposable_runner_measures_unconfined(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    said = sandbox.require(disposable=True)
    assert "disposable" in said and sandbox.active() is None
    monkeypatch.setenv(sandbox.DISPOSABLE_ENV, "1")
    assert sandbox.declared_disposable(None)
    monkeypatch.delenv(sandbox.DISPOSABLE_ENV)
    assert sandbox.declared_disposable("disposable") and not sandbox.declared_disposable("")


def test_the_measure_job_refuses_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "results").mkdir()
    ran: list[object] = []
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(sandbox.DISPOSABLE_ENV, raising=False)
    env = ActionEnv.from_environ({"INPUT_VENDOR": "nvidia", "INPUT_RESULTS_PATH": str(tmp_path)})
    with pytest.raises(sandbox.IsolationError):
        measure_mode(env, measure_fn=lambda *a, **k: ran.append(a))
    assert ran == []
