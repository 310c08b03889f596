"""The garbage collector during a sweep: what the bot and each worker had made before the sweep
(imports, policy, plan; torch and Triton in a worker) is frozen out of its passes, so that no
full pass over it lands between two timed blocks; after the sweep the bot's collector is as
before."""

from __future__ import annotations

import gc
from pathlib import Path

from checks.sweep.protocol import ProtocolConfig
from checks.sweep.run import SweepOptions, run_sweep
from checks.sweep.shapes import Case
from checks.sweep.workers import Timeouts, WorkerClient, WorkerSpec
from tests.paths import DATA

STANDINS = DATA / "standins"
FAST = Timeouts(start_s=20, prepare_s=8.0, check_s=5, configure_s=5, block_s=5, finish_s=5)


def test_the_sweep_freezes_what_came_before_it_and_unfreezes_after(tmp_path: Path) -> None:
    assert gc.get_freeze_count() == 0
    seen: list[int] = []
    case = Case(
        kernel="axpy", bench="standin_kernels:axpy", dims=(20_000,), dtype="float32", tolerance=1
    )
    result = run_sweep(
        [case],
        base_root=STANDINS / "base",
        head_root=STANDINS / "base",
        base_rev="b" * 40,
        head_rev="b" * 40,
        options=SweepOptions(
            device="cpu",
            protocol=ProtocolConfig(block_ms=2.0, min_rounds=6, max_rounds=8, warmup_rounds=1),
            timeouts=FAST,
        ),
        work_dir=tmp_path,
        progress=lambda line: seen.append(gc.get_freeze_count()),
    )
    assert result.cases[0].status == "ok"
    assert seen and min(seen) > 10_000  # the test process's modules among them
    assert gc.get_freeze_count() == 0


def test_a_worker_serves_with_its_imports_frozen(tmp_path: Path) -> None:
    client = WorkerClient(
        WorkerSpec(
            side="base", root=STANDINS / "base", device="cpu", work_dir=tmp_path, timeouts=FAST
        )  # type: ignore[arg-type]
    )
    client.start()
    try:
        assert client.hello().gc_frozen > 1_000
    finally:
        client.close()
