"""What measured code can reach of the job that runs it: the step's environment (the action
replaces its shell by the bot with a clean one), the bot's /proc entries (non-dumpable), pip's
working directory, and processes left behind (the worker's session is killed)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from checks.job_process import run_job
from checks.sweep.workers import WorkerClient, WorkerFailure, WorkerSpec
from checks.worker_env import default_memory_bytes, scrubbed_env
from tests.action_yml import ACTION, run_blocks
from tests.data.jobs.probe import Probe, Seen
from tests.integration.test_workers import FAST, SHAPE, STANDINS
from tests.paths import ROOT

SECRET = "ghs_secret_value_0123456789"
RUNNER_FILES = ("GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_PATH", "GITHUB_STEP_SUMMARY")


def _step(name: str) -> str:
    install, run = run_blocks(ACTION)
    return {"install": install, "run": run}[name]


def _fake_bot(bin_dir: Path, out: Path) -> None:
    """A ``kernel-review`` that records what a worker of it could read: its own environment
    and that of its parent process."""
    bin_dir.mkdir()
    bot = bin_dir / "kernel-review"
    bot.write_text(
        "#!/bin/sh\n"
        f'cat /proc/self/environ > "{out}/self"\n'
        f'cat /proc/$PPID/environ > "{out}/parent" 2>/dev/null || true\n'
    )
    bot.chmod(0o755)


def test_the_measure_step_execs_the_bot_with_a_clean_environment(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    _fake_bot(tmp_path / "bin", out)
    runner_files = {name: tmp_path / name.lower() for name in RUNNER_FILES}
    env = {
        "PATH": "/usr/bin:/bin",
        "KERNEL_REVIEW_BIN": str(tmp_path / "bin"),  # the install step's output
        "HOME": str(tmp_path),
        "INPUT_MODE": "measure",
        "INPUT_VENDOR": "nvidia",
        "INPUT_SHARD": "1/2",
        "INPUT_RESULTS_PATH": "kernel-review-results",
        "INPUT_TOKEN": SECRET,
        "GITHUB_TOKEN": SECRET,
        "ACTIONS_RUNTIME_TOKEN": SECRET,
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN": SECRET,
        "ACTIONS_ID_TOKEN_REQUEST_URL": "https://token.example/" + SECRET,
        "ACTIONS_CACHE_URL": "https://cache.example/" + SECRET,
        "RUNNER_TRACKING_ID": "github_1234",
        "CUDA_VISIBLE_DEVICES": "0",
        "TRITON_PTXAS_PATH": "/opt/ptxas",
        "TRITON_API_KEY": SECRET,
        **{name: str(path) for name, path in runner_files.items()},
    }
    proc = subprocess.run(
        ["bash", "-c", _step("run")], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    own = (out / "self").read_text()
    seen = own + (out / "parent").read_text()
    assert SECRET not in seen
    for path in runner_files.values():
        assert str(path) not in seen
    assert "RUNNER_TRACKING_ID=github_1234" in own and "INPUT_VENDOR=nvidia" in own
    assert "CUDA_VISIBLE_DEVICES=0" in own and "TRITON_PTXAS_PATH=/opt/ptxas" in own
    assert runner_files["GITHUB_OUTPUT"].read_text() == "results-path=kernel-review-results\n"


def test_pip_does_not_run_from_the_pull_requests_checkout(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    (checkout / "pip").mkdir(parents=True)
    marker = tmp_path / "ran"
    (checkout / "pip" / "__main__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (tmp_path / "temp").mkdir()
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "ACTION_PATH": str(tmp_path / "no-such-action"),
        "INPUT_INSTALL": "./no-such-package",
        "INPUT_MODE": "measure",
        "RUNNER_TEMP": str(tmp_path / "temp"),
        "PYTHONPATH": str(checkout),
    }
    proc = subprocess.run(
        ["bash", "-c", _step("install")], env=env, cwd=checkout, capture_output=True, text=True
    )
    assert proc.returncode != 0  # there is nothing to install; pip itself says so
    assert "no-such-package" in proc.stderr + proc.stdout
    assert not marker.exists()


UNDUMPABLE_PROBE = """
import os, subprocess, sys
sys.path.insert(0, sys.argv[1])
if sys.argv[2] == "1":
    from checks.procs.launch import make_undumpable
    assert make_undumpable()
child = f"import os; p = os.getppid(); open(f'/proc/{{p}}/{sys.argv[3]}', '{sys.argv[4]}'); print('read')"
r = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                   env={"PATH": os.environ["PATH"], "PROBE_SECRET": "x"})
print(r.stdout.strip() or r.stderr.strip().splitlines()[-1])
"""


# root (CAP_SYS_PTRACE) may read any process's /proc entries; the runner's user has no
# capabilities, and neither has the probe when setpriv drops them all
AS_RUNNER = ["setpriv", "--inh-caps=-all", "--bounding-set=-all"] if os.geteuid() == 0 else []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
@pytest.mark.skipif(bool(AS_RUNNER) and not shutil.which("setpriv"), reason="needs setpriv")
def test_a_worker_cannot_read_the_environment_of_the_process_that_started_it() -> None:
    root = str(ROOT)

    def probe(undumpable: str, what: str, mode: str) -> str:
        return subprocess.run(
            [*AS_RUNNER, sys.executable, "-c", UNDUMPABLE_PROBE, root, undumpable, what, mode],
            capture_output=True, text=True, timeout=60, cwd="/",
        ).stdout.strip()  # fmt: skip

    # the parent's environment, and its stdout (the step log, where ::warning:: would act)
    for what, mode in (("environ", "r"), ("fd/1", "w")):
        assert probe("0", what, mode) == "read"  # without it, the child gets at both
        assert "PermissionError" in probe("1", what, mode)


def test_runner_tracking_id_reaches_the_worker_and_nothing_else_of_the_runner() -> None:
    kept = scrubbed_env({"RUNNER_TRACKING_ID": "github_1", "RUNNER_TEMP": "/r", "PATH": "/b"})
    assert kept == {"RUNNER_TRACKING_ID": "github_1", "PATH": "/b"}


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def daemon_dies_with_its_worker(client: WorkerClient, entry: str) -> None:
    """Run the stand-in ``entry`` (it leaves a daemon, its pid in ``<entry>.pid`` in the
    worker's Triton cache) on a started ``client``, end the worker, and see the daemon die."""
    try:
        client.prepare([f"standin_kernels:{entry}"], SHAPE, "float32", seed=0)
    finally:
        client.close()
    cache = client.spec.work_dir / "triton-cache"
    pid = int(next(cache.rglob(f"{entry}.pid")).read_text())  # there when prepare ends
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    try:
        assert not _alive(pid)
    finally:
        if _alive(pid):
            os.kill(pid, 9)


def test_a_daemon_left_by_the_measured_code_dies_with_its_worker(tmp_path: Path) -> None:
    spec = WorkerSpec(
        side="head", root=STANDINS / "head", device="cpu", work_dir=tmp_path, timeouts=FAST
    )
    client = WorkerClient(spec)
    client.start()
    daemon_dies_with_its_worker(client, "daemon")


def test_a_worker_that_allocates_past_its_cap_fails_as_oom(tmp_path: Path) -> None:
    spec = WorkerSpec(
        side="head", root=STANDINS / "head", device="cpu", work_dir=tmp_path, timeouts=FAST,
        memory_bytes=2 * 2**30,
    )  # fmt: skip
    client = WorkerClient(spec)
    client.start()
    try:
        with pytest.raises(WorkerFailure) as failure:
            client.prepare(["standin_kernels:hog"], SHAPE, "float32", seed=0)
        assert failure.value.kind == "oom"
        client.restart()  # and the next case runs on a fresh worker
        assert client.prepare(["standin_kernels:axpy"], SHAPE, "float32", seed=0).entry
    finally:
        client.close()


def test_the_default_cap_comes_from_the_machines_memory() -> None:
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert default_memory_bytes() == max(4 * 2**30, total // 4)
    spec = WorkerSpec(side="base", root=STANDINS / "base", device="cpu", work_dir=Path("/tmp"))
    assert spec.memory_bytes == default_memory_bytes()


def test_the_helper_programs_get_the_same_cap(tmp_path: Path) -> None:
    out = run_job(Probe("env"), workdir=tmp_path,
                  triton_cache=tmp_path / "tc", timeout_s=60, what="the probe")  # fmt: skip
    assert isinstance(out, Seen)
    assert out.data_limit == (default_memory_bytes(), default_memory_bytes())
