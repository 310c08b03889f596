"""Real worker subprocesses running CPU stand-ins that crash, hang, run out of memory, return
wrong results or scribble on stdout: each failure is reported with its own kind, and a restarted
worker carries on."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from checks.sweep.workers import (
    Timeouts,
    WorkerClient,
    WorkerFailure,
    WorkerSpec,
    in_parallel,
    start_all,
)
from checks.worker import contract, exclusive
from checks.worker_env import scrubbed_env
from tests.cxx_standin import write_ext_repo
from tests.paths import DATA

STANDINS = DATA / "standins"
# prepare imports torch (seconds on a loaded 2-core machine); a hang in prepare costs this much
FAST = Timeouts(start_s=20, prepare_s=8.0, check_s=5, configure_s=5, block_s=5, finish_s=5)
SHAPE = (1000,)


@pytest.fixture
def make_worker(tmp_path: Path):
    made: list[WorkerClient] = []

    def make(side: str = "head") -> WorkerClient:
        client = WorkerClient(
            WorkerSpec(
                side=side, root=STANDINS / side, device="cpu", work_dir=tmp_path, timeouts=FAST
            )  # type: ignore[arg-type]
        )
        client.start()
        made.append(client)
        return client

    yield make
    for c in made:
        c.close()


def _prepare(client: WorkerClient, name: str) -> contract.PrepareReply:
    return client.prepare([f"standin_kernels:{name}"], SHAPE, "float32", seed=0)


def _alive_after_restart(client: WorkerClient) -> None:
    client.restart()
    assert _prepare(client, "axpy").entry == "standin_kernels:axpy"


def test_a_good_kernel_runs_the_whole_command_set(make_worker) -> None:
    w = make_worker("base")
    c = w.check(["standin_kernels:axpy"], SHAPE, "float32", seed=7)
    assert c.correct and c.has_reference and c.digest[0].shape == (1000,)
    p = _prepare(w, "axpy")
    assert p.bytes_moved == 3 * 4 * 1000 and p.flops == 2000 and p.est_us > 0
    assert p.copies == 4  # a few input copies to rotate through, even on the CPU
    assert w.configure("cpu", 1.0).calls_per_block >= 1
    b = w.block()
    assert b.value_us > 0 and b.calls >= 1 and b.telemetry is None
    assert w.finish().correct
    assert w.env_info().vendor == "cpu"


def test_a_worker_refuses_a_bot_of_another_protocol_version_and_says_why(make_worker) -> None:
    w = make_worker("base")
    with pytest.raises(WorkerFailure) as info:
        w.call(contract.Hello(version=contract.VERSION + 1), timeout=FAST.start_s)
    assert f"the bot speaks version {contract.VERSION + 1}" in info.value.message
    assert "reinstall kernel-review" in info.value.message
    assert w.hello().version == contract.VERSION  # the same worker goes on


@pytest.mark.parametrize(
    ("name", "kind", "words"),
    [
        ("crash", "crashed", "exited with code 7"),
        ("segfault", "crashed", "SIGSEGV"),
        ("hang", "timeout", "did not finish within 8s"),
        ("oom", "oom", "MemoryError"),
        ("cuda_fault", "cuda_error", "illegal memory access"),
        ("out_of_resources", "out_of_resources", "shared memory"),
    ],
)
def test_each_fault_has_its_kind_and_a_restart_recovers(
    make_worker, name: str, kind: str, words: str
) -> None:
    w = make_worker("head")
    first_pid = w.proc.pid if w.proc else None
    with pytest.raises(WorkerFailure) as info:
        _prepare(w, name)
    failure = info.value
    assert failure.kind == kind and words in failure.message
    assert failure.side == "head" and failure.needs_restart
    if kind in ("crashed", "timeout"):
        assert not w.alive()
        with pytest.raises(ProcessLookupError):
            os.killpg(first_pid, 0)  # the whole process group is gone
    _alive_after_restart(w)
    assert w.incarnation == 2


def test_a_check_killed_while_holding_the_gpu_lock_says_so_and_a_waiter_does_not(
    tmp_path: Path,
) -> None:
    """The parent blames the side whose first call hung holding the lock, not the one that
    waited for it; which is which is read as each is killed, since the waiter may take the
    lock and let it go (emptying the lock file) before its own time runs out."""

    def worker(side: str, check_s: float) -> WorkerClient:
        timeouts = FAST.model_copy(update={"check_s": check_s})
        spec = WorkerSpec(
            side=side, root=STANDINS / side, device="cpu", work_dir=tmp_path, timeouts=timeouts
        )  # type: ignore[arg-type]
        client = WorkerClient(spec)
        client.start()
        return client

    hung, impatient, patient = worker("head", 4), worker("base", 1), worker("base", 30)
    try:
        lock = hung.spec.lock_path
        assert lock is not None and lock == patient.spec.lock_path
        lock.write_text("4194304\n")  # a worker of an earlier case that died holding it

        def hang() -> Exception:
            try:
                hung.check(["standin_kernels:hang"], SHAPE, "float32", seed=7)
            except WorkerFailure as f:
                return f
            return AssertionError("the hanging check came back")

        def axpy(w: WorkerClient) -> Any:
            time.sleep(0.5)  # after the hanging call took the lock
            try:
                return w.check(["standin_kernels:axpy"], SHAPE, "float32", seed=7)
            except WorkerFailure as f:
                return f

        got = in_parallel([hang, lambda: axpy(impatient), lambda: axpy(patient)])
        assert isinstance(got[0], WorkerFailure) and got[0].kind == "timeout"
        assert got[0].held_lock_at is not None
        assert isinstance(got[1], WorkerFailure) and got[1].kind == "timeout"
        assert got[1].held_lock_at is None  # it waited, and was killed waiting
        assert got[2].correct  # took the lock once the hung worker died, and let it go
        assert exclusive.holders(lock) == []
    finally:
        for w in (hung, impatient, patient):
            w.close()


def test_a_wrong_result_is_caught_by_the_check(make_worker) -> None:
    w = make_worker("head")
    _prepare(w, "wrong")
    c = w.check(["standin_kernels:wrong"], SHAPE, "float32", seed=7)
    assert not c.correct and c.bad_elements == 1
    assert "index 999" in c.message


def test_output_on_stdout_cannot_corrupt_the_channel_and_is_logged(
    make_worker, monkeypatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret")
    monkeypatch.setenv("ACTIONS_RUNTIME_TOKEN", "x")
    monkeypatch.setenv("MY_API_KEY", "y")
    monkeypatch.setenv("CUDA_HOME", "/usr/local/cuda")
    w = make_worker("head")
    _prepare(w, "noisy")
    w.configure("cpu", 1.0)
    for _ in range(3):
        assert w.block().value_us > 0
    w.finish()
    log = w.log_tail(100_000)
    assert '{"ok": true, "value_us": -1}' in log and "garbage" in log
    env_line = next(line for line in log.splitlines() if line.startswith("environment:"))
    names = set(env_line.split()[1:])
    assert {"PATH", "CUDA_HOME", "TRITON_CACHE_DIR"} <= names
    assert not names & {"GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN", "MY_API_KEY"}


def test_each_side_imports_only_its_own_checkout(make_worker) -> None:
    base, head = make_worker("base"), make_worker("head")
    values = []
    for w in (base, head):
        w.prepare(["standin_kernels:which_side"], (4,), "float32", seed=0)
        values.append(
            w.check(["standin_kernels:which_side"], (4,), "float32", seed=0).digest[0].samples
        )
    assert values == [(1.0,) * 4, (2.0,) * 4]
    assert head.prepare(["head_only:entry"], (4,), "float32", seed=0).entry == "head_only:entry"
    with pytest.raises(WorkerFailure) as info:
        base.prepare(["head_only:entry"], (4,), "float32", seed=0)
    assert info.value.kind == "missing_entry" and not info.value.needs_restart


def test_a_missing_entry_falls_back_to_the_baseline(make_worker) -> None:
    w = make_worker("base")
    p = w.prepare(["standin_kernels:not_there", "standin_kernels:axpy"], SHAPE, "float32", seed=0)
    assert p.entry == "standin_kernels:axpy"


def test_private_triton_cache_and_scrubbed_environment(tmp_path: Path) -> None:
    spec = WorkerSpec(side="base", root=STANDINS / "base", device="cpu", work_dir=tmp_path)
    env = WorkerClient(spec).env()
    assert env["TRITON_CACHE_DIR"].startswith(str(tmp_path)) and env["TRITON_INTERPRET"] == "1"
    assert env["CUDA_VISIBLE_DEVICES"] == ""
    kept = scrubbed_env(
        {
            "PATH": "/bin",
            "GITHUB_TOKEN": "t",
            "CUDA_VISIBLE_DEVICES": "1",
            "TRITON_SECRET_TOKEN": "x",
            "RUNNER_TEMP": "/r",
            "HOME": "/h",
        }
    )
    assert kept == {"PATH": "/bin", "CUDA_VISIBLE_DEVICES": "1", "HOME": "/h"}


def test_the_crossover_pair_makes_its_gpu_contexts_after_the_first_pair(tmp_path: Path) -> None:
    """The first pair's workers mark their GPU contexts made; the crossover's second pair makes
    its own after both marks (tests/gpu/test_zygote_gpu.py sees it on a GPU); on the CPU no
    context, no marks."""
    folder = tmp_path / "contexts" / "gpu3"
    base, head = (
        WorkerSpec(side=s, root=tmp_path, device="cuda", work_dir=tmp_path, gpu="3")
        for s in ("base", "head")
    )
    second = WorkerSpec(
        side="head", root=tmp_path, device="cuda", work_dir=tmp_path, gpu="3", slot=1, arm=1
    )
    assert base.context_args() == [f"--context-mark={folder / 'base'}"]
    assert head.context_args() == [f"--context-mark={folder / 'head'}"]
    assert second.context_args() == [
        f"--context-after={folder / 'base'}",
        f"--context-after={folder / 'head'}",
    ]
    cpu = WorkerSpec(side="head", root=tmp_path, device="cpu", work_dir=tmp_path, arm=1)
    assert cpu.context_args() == []


def test_failure_kinds_from_exceptions() -> None:
    from triton.runtime.errors import OutOfResources

    from checks.worker.failures import classify

    class OutOfMemoryError(RuntimeError):  # the name torch gives its CUDA OOM
        pass

    assert classify(MemoryError()) == "oom"
    assert classify(OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")) == "oom"
    assert classify(OutOfResources(1, 2, "shared memory")) == "out_of_resources"
    assert classify(RuntimeError("Triton Error [CUDA]: an illegal memory access")) == "cuda_error"
    assert classify(RuntimeError("HIP error: hipErrorIllegalAddress")) == "cuda_error"
    assert classify(ValueError("bad shape")) == "error"


def test_a_kernel_triton_rejects_is_a_compile_error_with_its_line() -> None:
    """The GPU fault fixture's ``try`` block, cross-compiled on the CPU: Triton's front end
    refuses it, and the worker's classification calls that a compile error, not a crash."""
    import sys

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from checks.worker.failures import classify

    sys.path.insert(0, str(DATA / "gpu_faults" / "head"))
    try:
        import fault_kernels
    finally:
        sys.path.pop(0)
    source = ASTSource(
        fn=fault_kernels.rejected_kernel,
        signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        constexprs={"BLOCK": 1024},
    )
    with pytest.raises(Exception) as info:
        triton.compile(source, target=GPUTarget("cuda", 90, 32))
    assert classify(info.value) == "compile_error"
    assert "try:" in str(info.value) and "unsupported AST node type: Try" in str(info.value)


def test_huge_byte_and_flop_counts_are_refused(make_worker) -> None:
    w = make_worker("head")
    with pytest.raises(WorkerFailure, match="must be an int from 0 to 2\\*\\*53"):
        _prepare(w, "huge_bytes")


def test_a_tolerance_below_zero_is_the_entry_points_error(make_worker) -> None:
    w = make_worker("head")
    with pytest.raises(WorkerFailure, match=r"'atol' must be a number of 0 or more, not -0\.001"):
        w.check(["standin_kernels:negative_atol"], SHAPE, "float32", seed=7)


@pytest.mark.slow
def test_base_and_head_never_share_a_cxx_extension_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Base and head build a C++ extension of the same name at the same time. In one build
    folder (the default, or a runner's TORCH_EXTENSIONS_DIR) the side that waited for the other's
    build loaded the other side's kernel: head timed base's code. Each side builds its own."""
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "runner-wide"))
    clients = []
    for side, value in (("base", 1), ("head", 2)):
        root = write_ext_repo(tmp_path / side, value)
        timeouts = Timeouts(start_s=60, check_s=300)
        spec = WorkerSpec(side=side, root=root, device="cpu", work_dir=tmp_path, timeouts=timeouts)  # type: ignore[arg-type]
        clients.append(WorkerClient(spec))
    try:
        start_all(clients)
        checks = in_parallel(
            [lambda c=c: c.check(["extbench:entry"], (1,), "float32", seed=0) for c in clients]
        )
    finally:
        for c in clients:
            c.close()
    for side, got in zip(("base", "head"), checks, strict=True):
        assert got.correct, (side, got.message)
    assert not (tmp_path / "runner-wide").exists()


def test_a_worker_ends_at_once_after_quit_and_runs_no_atexit_handler(tmp_path: Path) -> None:
    """A closed worker ends right after answering ``quit``: no interpreter teardown (0.6 s with
    torch and Triton loaded on this machine), so an ``atexit`` handler its checkout registered
    does not run; its log keeps what the checkout printed."""
    root = tmp_path / "checkout"
    root.mkdir()
    marker = tmp_path / "atexit-ran"
    (root / "exitbench.py").write_text(
        "import atexit, pathlib\n"
        "import numpy as np\n"
        f"atexit.register(lambda: pathlib.Path({str(marker)!r}).write_text('ran'))\n"
        "print('imported exitbench', flush=True)\n"
        "def entry(shape, dtype, *, device='cpu', seed=0):\n"
        "    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)\n"
        "    return {'fn': lambda: x + 1, 'reference': lambda: x + 1,\n"
        "            'bytes_moved': 2 * x.nbytes, 'flops': x.size}\n"
    )
    client = WorkerClient(
        WorkerSpec(side="base", root=root, device="cpu", work_dir=tmp_path, timeouts=FAST)  # type: ignore[arg-type]
    )
    client.start()
    try:
        assert client.check(["exitbench:entry"], SHAPE, "float32", seed=0).correct
        proc = client.proc
        assert proc is not None
    finally:
        client.close()
    assert proc.returncode == 0
    assert not marker.exists()
    assert "imported exitbench" in client.log_tail()


def test_a_polling_worker_and_client_answer_within_and_after_the_poll_window(
    tmp_path: Path,
) -> None:
    """``poll_ms``: after a block's answer the worker polls its pipe, and the client polls for
    block answers; a command that comes within the window or long after it is answered, and a
    block that runs past its timeout still kills the worker."""
    spec = WorkerSpec(
        side="base",
        root=STANDINS / "base",
        device="cpu",
        work_dir=tmp_path,
        timeouts=FAST.model_copy(update={"block_s": 1.0}),
        poll_ms=20.0,
    )  # type: ignore[arg-type]
    client = WorkerClient(spec)
    client.start()
    try:
        assert _prepare(client, "axpy").copies >= 1
        client.configure("cpu", 1.0)
        values = [client.block().value_us for _ in range(3)]
        time.sleep(0.1)  # past the window: the worker sleeps in select, and wakes for this
        values.append(client.block().value_us)
        assert all(v > 0 for v in values)
        assert client.finish().correct
        client.prepare(["standin_kernels:axpy"], (2_000_000,), "float32", seed=0)
        client.configure("cpu", 3000.0)  # a block of about 3 s, past its 1 s timeout
        with pytest.raises(WorkerFailure) as failed:
            client.block()
        assert failed.value.kind == "timeout" and not client.alive()
    finally:
        client.close()


def test_polling_only_where_the_cores_allow_and_one_gpu_is_driven() -> None:
    from checks.sweep.workers import POLL_MS, poll_ms_for

    assert poll_ms_for(16, 4, 1) == POLL_MS  # the H200 host: four workers and the bot
    assert poll_ms_for(8, 4, 1) == 0.0  # not two cores each
    assert poll_ms_for(128, 16, 4) == 0.0  # four GPUs: four threads would poll in one bot
    assert poll_ms_for(2, 2, 1) == 0.0  # this CI machine
