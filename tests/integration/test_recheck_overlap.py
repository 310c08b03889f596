"""With crossover, a case's recheck after timing overlaps the next case's check: one pair
rechecks while the other checks, on real CPU workers. What the overlap must keep: every case
checked once per side before it is timed, every case rechecked on each side, a kernel whose
output changes under timing caught at every case (the last included), and a recheck that holds
the GPU lock when asked to run alone."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from checks.sweep.protocol import ProtocolConfig
from checks.sweep.run import SweepOptions, run_sweep
from checks.sweep.shapes import Case
from checks.sweep.workers import Timeouts, WorkerClient, WorkerSpec
from checks.sweep.zygote import Zygote, start_zygote
from checks.worker import contract
from tests.integration.conftest import Sent
from tests.paths import DATA

STANDINS = DATA / "standins"
# one pass: the overlap is inside a pass (a later pass repeats it with its own workers)
QUICK = ProtocolConfig(
    block_ms=2.0,
    min_rounds=6,
    max_rounds=12,
    warmup_rounds=1,
    max_case_seconds=4.0,
    min_executions=1,
    max_executions=1,
)
FAST = Timeouts(start_s=20, prepare_s=8.0, check_s=5, configure_s=5, block_s=5, finish_s=5)


def _cases(name: str, n: int) -> list[Case]:
    return [
        Case(
            kernel=name,
            bench=f"standin_kernels:{name}",
            baseline="standin_kernels:axpy",
            dims=(20_000 + 1000 * i,),
            dtype="float32",
            tolerance=1.0,
        )
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Zygote]:
    """The module's sweeps fork their workers from one zygote, not one each (2 CPU-s of torch
    and Triton imports a sweep): what they look at is the workers' commands."""
    z = start_zygote("cpu", tmp_path_factory.mktemp("zygote"))
    yield z
    z.close()


def _sweep(cases: list[Case], work: Path, zygote: Zygote, head: str = "head") -> Any:
    return run_sweep(
        cases,
        base_root=STANDINS / "base",
        head_root=STANDINS / head,
        base_rev="b" * 40,
        head_rev="h" * 40,
        options=SweepOptions(
            device="cpu",
            protocol=QUICK.model_copy(update={"crossover": True}),
            timeouts=FAST,
            max_gpu_seconds=600,
        ),
        work_dir=work,
        zygote=zygote,
    )


def _per_case(seen: list[Sent]) -> list[list[Sent]]:
    """The commands between one case's rounds and the next case's prepare (the first case's
    check before its prepare), case by case."""
    out: list[list[Sent]] = [[]]
    in_rounds = False
    for name, op, args in seen:
        if op in (contract.Hello, contract.Env, contract.Warmup, contract.Quit):
            continue
        if op is contract.MeasureCeilings:
            continue
        if op is contract.Prepare:
            in_rounds = True
            continue
        if op in (contract.Finish, contract.Check) and in_rounds:
            in_rounds = False
            out.append([])
        if not in_rounds:
            out[-1].append((name, op, args))
    return out


def test_the_recheck_and_the_next_check_overlap_and_cover_every_case(
    tmp_path: Path, calls: list[Sent], zygote: Zygote
) -> None:
    # a first call that tunes for 0.3 s in each process: a check that costs time of its own
    result = _sweep(_cases("self_tuning", 3), tmp_path, zygote, head="base")
    assert [c.status for c in result.cases] == ["ok"] * 3, [c.message for c in result.cases]
    steps = _per_case(calls)
    pairs = [{"base", "head"}, {"base-x", "head-x"}]
    # the first case is checked by the first pair, alone
    assert [(n, op) for n, op, _ in steps[0]] in (
        [("base", contract.Check), ("head", contract.Check)],
        [("head", contract.Check), ("base", contract.Check)],
    )
    for k, tail in enumerate(steps[1:], start=1):
        finished = {n for n, op, _ in tail if op is contract.Finish}
        checked = {n for n, op, _ in tail if op is contract.Check}
        if k < 3:  # after case k: one pair rechecks it (alone on the GPU), the other checks k+1
            assert finished in pairs and checked in pairs and finished != checked, tail
            wait = FAST.finish_s / 2  # a hung check holding the lock must not fail this case
            assert all(
                a == contract.Finish(recheck=True, alone=True, lock_wait_s=wait)
                for _, op, a in tail
                if op is contract.Finish
            )
        else:  # after the last: every worker rechecks, side by side
            assert finished == pairs[0] | pairs[1] and not checked, tail
            assert all(not a.alone for _, op, a in tail if op is contract.Finish)
    # every case checked once per side: three cases, two checks each
    assert sum(op is contract.Check for _, op, _ in calls) == 6
    # a check made beside the last case's recheck is its own case's time (its first call's
    # tuning held the GPU lock the recheck waited for), not the rechecked case's set-up
    phases = [c.phase_s for c in result.cases]
    assert all(p["check"] >= 0.25 for p in phases), phases
    assert all(p["finish"] < 0.25 for p in phases[:-1]), phases
    assert all(c.gpu_seconds >= sum(c.phase_s.values()) - 0.01 for c in result.cases), [
        (c.gpu_seconds, c.phase_s) for c in result.cases
    ]


def test_an_output_that_changes_under_timing_is_caught_at_every_case(
    tmp_path: Path, zygote: Zygote
) -> None:
    """head's kernel is right on fresh inputs and wrong once called more than twice: the check
    passes and the recheck after timing catches it, whichever pair rechecks, at each case."""
    result = _sweep(_cases("drifts", 3), tmp_path, zygote)
    for case in result.cases:
        assert case.status == "wrong_result" and case.failed_side == "head", case.message
        assert case.message.startswith("output changed after timing"), case.message


def test_a_recheck_asked_to_run_alone_waits_for_the_gpu_lock(tmp_path: Path) -> None:
    spec = WorkerSpec(
        side="base", root=STANDINS / "base", device="cpu", work_dir=tmp_path, timeouts=FAST
    )  # type: ignore[arg-type]
    client = WorkerClient(spec)
    client.start()
    lock = tmp_path / "locks" / "gpu-none.lock"  # the lock every worker of this GPU shares
    assert lock.parent.is_dir()
    try:
        waited = {}
        for alone in (False, True):
            client.prepare(["standin_kernels:axpy"], (1000,), "float32", seed=0)
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)  # another worker's first call holds the GPU
            threading.Timer(0.5, os.close, (fd,)).start()
            t0 = time.monotonic()
            answer = client.finish(recheck=True, alone=alone)
            waited[alone] = time.monotonic() - t0
            assert answer.rechecked and answer.correct
            time.sleep(0.6)
        assert waited[False] < 0.4 <= waited[True], waited
    finally:
        client.close()


def test_a_recheck_that_cannot_take_the_lock_in_half_its_timeout_rechecks_without_it(
    tmp_path: Path,
) -> None:
    """The next case's check hangs holding the lock: the recheck beside it waits half its
    timeout, rechecks without the lock and says so, and its case is not failed for that."""
    timeouts = FAST.model_copy(update={"finish_s": 1.0})
    spec = WorkerSpec(
        side="base", root=STANDINS / "base", device="cpu", work_dir=tmp_path, timeouts=timeouts
    )  # type: ignore[arg-type]
    client = WorkerClient(spec)
    client.start()
    assert spec.lock_path is not None
    try:
        client.prepare(["standin_kernels:axpy"], (1000,), "float32", seed=0)
        fd = os.open(spec.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)  # held past the recheck's timeout
        try:
            t0 = time.monotonic()
            answer = client.finish(recheck=True, alone=True)
            waited = time.monotonic() - t0
        finally:
            os.close(fd)
        assert answer.rechecked and answer.correct, answer
        assert answer.lock_not_taken_s == 0.5, answer
        assert 0.5 <= waited < 1.0, waited
    finally:
        client.close()


def test_a_fault_in_the_check_made_ahead_is_the_next_cases_and_the_sweep_goes_on(
    tmp_path: Path, zygote: Zygote
) -> None:
    """Each fault's case is checked during the case before's recheck: the fault is still laid
    on its own case (the worker restarted), and the case before it is not touched. ``hang``
    hangs in head's first call holding the GPU lock: base's check, waiting for the lock, times
    out too and is not blamed; the recheck beside them, when the hang took the lock first, goes
    on without it after half its timeout."""
    names = ["axpy", "crash", "axpy", "cuda_fault", "axpy", "hang", "axpy"]
    cases = [c for n in names for c in _cases(n, 1)]
    result = _sweep(cases, tmp_path, zygote)
    got = [(c.kernel, c.status, c.failed_side) for c in result.cases]
    assert got == [
        ("axpy", "ok", None),
        ("crash", "crashed", "head"),
        ("axpy", "ok", None),
        ("cuda_fault", "cuda_error", "head"),
        ("axpy", "ok", None),
        ("hang", "timeout", "head"),
        ("axpy", "ok", None),
    ], [c.message for c in result.cases]
    hang = result.cases[5]
    assert "it held the GPU lock; the base worker waited for it" in hang.message, hang.message
