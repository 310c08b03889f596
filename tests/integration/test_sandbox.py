"""The sandbox measured code runs in on a runner that keeps state (``checks/procs``): it writes
nothing outside its scratch folders, a daemon that left its session dies with its worker, a
shared mapping or /dev/shm counts against its memory cap; and measuring is refused, saying
what is missing, where the machine cannot confine it. Tests that need bwrap or a writable
cgroup skip, saying why, on a machine without them."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from checks import job_files
from checks.procs import cgroup, sandbox
from checks.sweep.workers import WorkerClient, WorkerFailure, WorkerSpec
from tests.data.jobs.probe import Probe, Seen
from tests.integration.test_worker_isolation import _alive, daemon_dies_with_its_worker
from tests.integration.test_workers import FAST, SHAPE, STANDINS

ISOLATION = sandbox.detect()
needs_isolation = pytest.mark.skipif(
    not ISOLATION.ready, reason="this machine cannot confine: " + "; ".join(ISOLATION.problems())
)


@pytest.fixture
def confined(tmp_path: Path) -> Iterator[None]:
    sandbox.configure(ISOLATION, scratch=tmp_path / "scratch")
    try:
        yield
    finally:
        sandbox.configure(None)


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
        (tmp_path / "work").mkdir()
        (tmp_path / "work" / "targets.txt").write_text("\n".join(map(str, targets)))
        client = _client(tmp_path / "work")
        client.start()
        try:  # the worker itself works: it reads its checkout, writes its scratch
            assert client.prepare(["standin_kernels:escape"], SHAPE, "float32", seed=0).entry
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
    daemon_dies_with_its_worker(client, "setsid_daemon")


@needs_isolation
def test_what_a_worker_nobody_ended_left_running_dies_with_the_run(tmp_path: Path) -> None:
    sandbox.configure(ISOLATION, scratch=tmp_path / "scratch")
    client = _client(tmp_path)
    try:
        client.start()
        client.prepare(["standin_kernels:setsid_daemon"], SHAPE, "float32", seed=0)
        assert client.proc is not None
        os.kill(client.proc.pid, 9)  # the worker dies by itself; nothing ends its tree
        client.proc.wait()
        pid = int(next((tmp_path / "triton-cache").rglob("setsid_daemon.pid")).read_text())
        assert _alive(pid)
        sandbox.configure(None)  # the run's end (also at the bot's exit)
        assert not _alive(pid)
        place = ISOLATION.place
        assert place is not None
        assert not [g for root in place.roots() for g in root.glob(f"{cgroup.owner_prefix()}*")]
    finally:
        sandbox.configure(None)
        client.close()


V1_MEMORY = cgroup.candidates(
    Path("/proc/self/mountinfo").read_text(), Path("/proc/self/cgroup").read_text(), None
)[1]


@needs_isolation
@pytest.mark.skipif(
    V1_MEMORY is None or not os.access(V1_MEMORY, os.W_OK), reason="no writable cgroup v1 memory"
)
def test_on_cgroup_v1_alone_the_tree_is_killed_pid_by_pid(tmp_path: Path) -> None:
    assert V1_MEMORY is not None
    v1_only = cgroup.Place(V1_MEMORY, False, V1_MEMORY, True)  # no cgroup.kill to write
    sandbox.configure(replace(ISOLATION, place=v1_only), scratch=tmp_path / "scratch")
    try:
        client = _client(tmp_path)
        client.start()
        daemon_dies_with_its_worker(client, "setsid_daemon")
    finally:
        sandbox.configure(None)


@needs_isolation
def test_shared_memory_past_the_cap_is_stopped(tmp_path: Path, confined: None) -> None:
    before = set(os.listdir("/dev/shm"))
    client = _client(tmp_path, memory_bytes=256 * 2**20)
    client.start()
    try:
        with pytest.raises(WorkerFailure) as failure:
            client.prepare(["standin_kernels:shm_hog"], SHAPE, "float32", seed=0)
        # killed by the kernel at its cgroup's cap: out of memory, the cap named, not a crash
        assert failure.value.kind == "oom", failure.value.message
        assert "memory cap of 256 MiB" in failure.value.message
        client.restart()  # the next case runs on a fresh worker
        assert client.prepare(["standin_kernels:axpy"], SHAPE, "float32", seed=0).entry
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
    folders = [root / cgroup.name(pid) for root in place.roots()]
    assert all(f.is_dir() for f in folders)
    client.close()
    assert not any(f.exists() for f in folders)


@needs_isolation
@pytest.mark.parametrize("trusted", [False, True])
def test_only_a_trusted_run_writes_the_caches_kept_between_runs(
    tmp_path: Path, trusted: bool
) -> None:
    from checks.job_process import run_job

    kept = tmp_path / "kept-cache"
    kept.mkdir()
    try:
        sandbox.require(disposable=False, trusted=trusted)  # as the measure job does
        work = Path(tempfile.mkdtemp())
        out = run_job(Probe("write", str(kept / "record")),
                      workdir=work, triton_cache=work / "tc", timeout_s=60, what="the probe",
                      kept=(kept,))  # fmt: skip
    finally:
        sandbox.configure(None)
    assert isinstance(out, Seen) and out.wrote is trusted
    assert (kept / "record").exists() is trusted


def test_measuring_is_refused_without_bwrap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it
    monkeypatch.delenv(sandbox.DISPOSABLE_ENV, raising=False)
    with pytest.raises(sandbox.IsolationError) as refused:
        sandbox.require(disposable=False, trusted=False)
    text = str(refused.value)
    assert "bwrap (bubblewrap) is not installed" in text
    assert "runner-isolation: disposable" in text and sandbox.DISPOSABLE_ENV in text
    assert sandbox.active() is None


def test_doctor_says_what_the_runner_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bot.cli import main

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(sandbox.DISPOSABLE_ENV, raising=False)
    assert main(["doctor", "--runner"]) == 1
    out = capsys.readouterr().out
    assert "UNSAFE  runner sandbox: bwrap (bubblewrap) is not installed" in out
    assert "UNSAFE  measuring on this runner: refused" in out
    monkeypatch.setenv(sandbox.DISPOSABLE_ENV, "1")
    assert main(["doctor", "--runner"]) == 1  # still no sandbox: said, but measuring is allowed
    out = capsys.readouterr().out
    assert "OK      measuring on this runner: declared disposable" in out


@needs_isolation
def test_doctor_passes_a_runner_that_can_confine(capsys: pytest.CaptureFixture[str]) -> None:
    from bot.cli import main

    assert main(["doctor", "--runner"]) == 0
    out = capsys.readouterr().out
    assert "OK      runner sandbox:" in out and "OK      runner cgroups:" in out
    assert "every setting that can be read is safe" in out


def test_a_cgroup_folder_that_takes_no_children_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(cgroup.CGROUP_ENV, str(tmp_path / "nowhere"))
    place, why = cgroup.find_place()
    assert place is None
    assert f"{cgroup.CGROUP_ENV}={tmp_path / 'nowhere'}" in why


def test_a_disposable_runner_measures_unconfined(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    said = sandbox.require(disposable=True, trusted=False)
    assert "disposable" in said and sandbox.active() is None and not sandbox.trusted_run()
    sandbox.configure(None)
    assert sandbox.trusted_run()
    monkeypatch.setenv(sandbox.DISPOSABLE_ENV, "1")
    assert sandbox.declared_disposable(None)
    monkeypatch.delenv(sandbox.DISPOSABLE_ENV)
    assert sandbox.declared_disposable("disposable") and not sandbox.declared_disposable("")


@needs_isolation
def test_a_worker_forked_from_a_confined_zygote_is_confined_in_cgroups_of_its_own(
    tmp_path: Path, confined: None
) -> None:
    from checks.sweep.zygote import Forked, start_zygote

    cap = 3 * 2**30
    # as in a measurement: the zygote's folder and the sweep's are temporary folders
    zygote = start_zygote("cpu", Path(tempfile.mkdtemp()), memory_bytes=cap)
    place = ISOLATION.place
    assert place is not None and zygote.proc is not None
    zygote_groups = [root / cgroup.name(zygote.proc.pid) for root in place.roots()]
    try:
        outside = tmp_path / "runner" / "GITHUB_ENV"
        outside.parent.mkdir()
        outside.write_text("KEEP=1\n")
        work = Path(tempfile.mkdtemp())
        assert work.parent == tmp_path / "scratch"
        (work / "targets.txt").write_text(str(outside))
        spec = WorkerSpec(
            side="head", root=STANDINS / "head", device="cpu", work_dir=work, timeouts=FAST,
            memory_bytes=cap,
        )  # fmt: skip
        client = WorkerClient(spec, zygote)
        client.start()
        assert isinstance(client.proc, Forked)
        pid = client.proc.pid
        own = {root / cgroup.name(pid) for root in place.roots()}
        try:
            assert all(str(pid) in (g / "cgroup.procs").read_text().split() for g in own)
            assert client.prepare(["standin_kernels:escape"], SHAPE, "float32", seed=0).entry
        except BaseException:
            client.close()
            raise
        daemon_dies_with_its_worker(client, "setsid_daemon")
        assert outside.read_text() == "KEEP=1\n"
        assert not any(g.exists() for g in own)
    finally:
        zygote.close()
    assert not any(g.exists() for g in zygote_groups)


@needs_isolation
def test_a_tool_that_writes_a_fixed_path_in_tmp_works_confined_and_leaves_the_machines_tmp_alone(
    tmp_path: Path, confined: None
) -> None:
    from checks.job_process import run_job

    lock = Path("/tmp") / f"kernel-review-test-lock-{os.getpid()}"  # as ncu's lock file
    work = Path(tempfile.mkdtemp())  # in the run's scratch, as a helper's folder is
    try:
        out = run_job(Probe("write", str(lock)),
                      workdir=work, triton_cache=work / "tc", timeout_s=60, what="the probe")  # fmt: skip
        assert isinstance(out, Seen) and out.wrote
        assert not lock.exists()  # it went to the run's own /tmp, in its scratch folder
        assert list((tmp_path / "scratch").rglob(lock.name))
    finally:
        lock.unlink(missing_ok=True)


@needs_isolation
def test_a_pull_requests_workers_cannot_write_the_kept_bytecode_or_triton_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bot.outputs import bytecode_dir, triton_key_dir
    from checks.sweep.zygote import Forked, start_zygote

    monkeypatch.setenv("KERNEL_REVIEW_CACHE", str(tmp_path / "cache"))
    kept = [bytecode_dir(), triton_key_dir()]  # what the zygote and the workers keep
    targets = []
    for folder in kept:
        assert folder is not None
        folder.mkdir(parents=True)  # as an earlier trusted run left them
        targets.append(folder / "planted")
    cap = 3 * 2**30
    sandbox.require(disposable=False, trusted=False)  # as a pull request's measure job does
    try:
        zygote = start_zygote("cpu", Path(tempfile.mkdtemp()), memory_bytes=cap)
        work = Path(tempfile.mkdtemp())
        (work / "targets.txt").write_text("\n".join(map(str, targets)))
        spec = WorkerSpec(
            side="head", root=STANDINS / "head", device="cpu", work_dir=work, timeouts=FAST,
            memory_bytes=cap,
        )  # fmt: skip
        forked, started = WorkerClient(spec, zygote), _client(Path(tempfile.mkdtemp()))
        (started.spec.work_dir / "targets.txt").write_text("\n".join(map(str, targets)))
        try:
            for client in (forked, started):
                client.start()
                client.prepare(["standin_kernels:escape"], SHAPE, "float32", seed=0)
            assert isinstance(forked.proc, Forked)  # the zygote's sandbox is the one it shares
        finally:
            forked.close()
            started.close()
            zygote.close()
    finally:
        sandbox.configure(None)
    # a pull request's run reads the kept folders (the bytecode checked against its manifest
    # by the zygote) and writes none (a trusted run's processes do: the test above)
    assert [t.exists() for t in targets] == [False, False]


@needs_isolation
def test_a_helper_forked_from_a_confined_zygote_runs_nothing_before_it_is_in_its_own_cgroups(
    tmp_path: Path, confined: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    from checks.job_process import PACKAGE_ROOT, _job_path
    from checks.sweep.zygote import start_zygote
    from checks.worker.contract import ForkJob
    from checks.worker_env import scrubbed_env

    moved = cgroup.join

    def busy_then_moved(place: cgroup.Place, pid: int, memory_bytes: int) -> None:
        time.sleep(0.5)  # the bot busy for a moment between the fork's answer and the move
        moved(place, pid, memory_bytes)

    monkeypatch.setattr(cgroup, "join", busy_then_moved)
    zygote = start_zygote("cpu", Path(tempfile.mkdtemp()), memory_bytes=3 * 2**30)
    work = Path(tempfile.mkdtemp())
    job = work / "job.json"
    job.write_text(job_files.job_text(Probe("env"), str(work / "out.json")))
    env = {**scrubbed_env(), "TRITON_CACHE_DIR": str(work / "tc")}
    process = ForkJob(
        Probe.MODULE, str(job), env, str(PACKAGE_ROOT), str(work / "log"), _job_path(), 0
    )
    try:
        helper = zygote.fork_job(process, timeout=60)
        assert helper is not None
        assert helper.wait(timeout=60) == 0, (work / "log").read_text()
        sandbox.kill_tree(helper.pid)
    finally:
        zygote.close()
    seen = job_files.read_answer(Probe, (work / "out.json").read_text())
    assert isinstance(seen, Seen)
    at_start = seen.cgroups_at_start
    # its first line ran in its own cgroups already (a daemon it starts is in them too), not in
    # the zygote's, where it would outlive the helper's end
    place = ISOLATION.place
    assert place is not None
    assert at_start.count(f"/{cgroup.name(helper.pid)}\n") == len(place.roots()), at_start
