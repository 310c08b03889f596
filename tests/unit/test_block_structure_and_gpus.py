"""Both sides of a case time blocks of one structure, and the GPUs are counted without torch."""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.sweep import gpus
from checks.worker.timing import CpuTimer, graph_calls


def test_a_timer_takes_another_workers_block_structure() -> None:
    """configure(like=...) gives exactly the leader's calls per block whatever this timer's own
    estimate; est_us sizes the blocks from the slower side's estimate."""
    timer = CpuTimer([lambda: sum(range(100))])
    assert timer.configure("cpu", 1.0)["calls_per_block"] >= 1
    assert timer.configure("cpu", 1.0, like={"calls_per_block": 7})["calls_per_block"] == 7
    assert timer.block()["calls"] == 7
    sized = timer.configure("cpu", 1.0, est_us=250.0)
    assert sized["calls_per_block"] == 4 and sized["est_us"] == 250.0


def test_a_graph_holds_whole_passes_over_the_copies_and_a_third_of_a_block() -> None:
    """graph_calls: about min(block / 3, 1 ms) of calls, capped, a multiple of the copies."""
    assert graph_calls(2.5, 5.0, 10) == 170  # 0.83 ms of 5 us calls: 167, 17 passes over 10
    assert graph_calls(3.0, 4.7, 64) == 256  # 1 ms: 213 calls rounded up to 4 passes of 64
    assert graph_calls(10.0, 2.0, 1) == 500  # at most 1 ms, however long the block
    assert graph_calls(10.0, 0.5, 1) == 1000  # and at most MAX_GRAPH_CALLS
    assert graph_calls(2.5, 800.0, 3) == 3  # one pass over the copies at the least
    assert graph_calls(2.5, 0.0, 7) % 7 == 0  # an estimate of 0 does not divide by zero


def _topology(root: Path, gpu_ids: list[str], versions: dict[int, str] | None = None) -> Path:
    for i, gid in enumerate(gpu_ids):
        (root / str(i)).mkdir(parents=True)
        (root / str(i) / "gpu_id").write_text(gid + "\n")
        if versions and i in versions:
            (root / str(i) / "properties").write_text(
                f"cpu_cores_count 0\nsimd_count 1216\ngfx_target_version {versions[i]}\n"
            )
    return root


def test_amd_gpus_are_counted_from_the_kfd_topology(tmp_path: Path) -> None:
    """CPU nodes have gpu_id 0; an unreadable node is skipped; no topology at all is None."""
    nodes = _topology(tmp_path / "nodes", ["0", "45678", "0", "12345", "oops"])
    assert gpus._kfd_count(nodes) == 2
    assert gpus._kfd_count(_topology(tmp_path / "cpu-only", ["0"])) is None
    assert gpus._kfd_count(tmp_path / "absent") is None


def test_visible_gpus_prefers_the_environment_then_counts_without_torch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3, 5")
    assert gpus.visible_gpus() == ["3", "5"]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setattr(gpus, "_nvml_count", lambda: 2)
    assert gpus.visible_gpus() == ["0", "1"]
    monkeypatch.setattr(gpus, "_nvml_count", lambda: None)
    monkeypatch.setattr(gpus, "_kfd_count", lambda: 1)
    assert gpus.visible_gpus() == ["0"]


def test_amd_gpu_targets_come_from_the_kfd_topology(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ROCm's GPU n is the n-th GPU node by node number (node 10 after node 2); its
    gfx_target_version names the target, minor and stepping in hex."""
    monkeypatch.setattr(gpus, "_nvml_target", lambda gpu: None)
    ids = ["0", "1", "2"] + ["0"] * 7 + ["3"]  # nodes 0..10: GPUs at 1, 2 and 10
    nodes = _topology(tmp_path / "nodes", ids, {1: "90402", 2: "90010", 10: "110000"})
    names = [gpus.gpu_target_name(g, topology=nodes) for g in ("0", "1", "2", "3")]
    assert names == ["gfx942", "gfx90a", "gfx1100", None]
    assert gpus.gpu_target_name(None, topology=tmp_path / "absent") is None


def test_the_clock_is_up_at_the_fraction_of_its_maximum_and_unknown_without_a_reading() -> None:
    from checks.worker.main import clock_up

    assert clock_up({"sm_clock_mhz": 1980, "max_sm_clock_mhz": 1980}, 0.85) is True
    assert clock_up({"sm_clock_mhz": 1683, "max_sm_clock_mhz": 1980}, 0.85) is True
    assert clock_up({"sm_clock_mhz": 345, "max_sm_clock_mhz": 1980}, 0.85) is False
    assert clock_up({"sm_clock_mhz": None, "max_sm_clock_mhz": 1980}, 0.85) is False
    assert clock_up({"sm_clock_mhz": 1980}, 0.85) is None
    assert clock_up(None, 0.85) is None


class _Clock:
    """An NVML reading, as the worker's telemetry gives it."""

    def __init__(self, mhz: float) -> None:
        self.mhz = mhz

    def read(self) -> dict:
        return {"sm_clock_mhz": self.mhz, "max_sm_clock_mhz": 1980.0}


def test_a_re_warm_unless_up_burns_nothing_while_the_clock_reads_up() -> None:
    """After a check whose autotuner ran to its end, or the sweep's early warm-up, the clock is
    up: no burn (it would need the GPU, which this machine lacks, so reaching it fails); at the
    idle clock it does burn."""
    from checks.worker.contract import Warmup
    from checks.worker.main import Worker

    worker = Worker("/nonexistent", "cuda", "base")
    worker.torch = object()  # no CUDA here: any burn would fail on it
    worker.nvml = _Clock(1980.0)
    unless_up = Warmup(min_s=0.1, max_s=2.0, unless_up=True)
    answer = worker.op_warmup(unless_up)
    assert answer.skipped is True and answer.reached is True
    assert answer.sm_clock_mhz == 1980.0
    worker.nvml = _Clock(345.0)
    with pytest.raises(AttributeError):
        worker.op_warmup(unless_up)
    worker.nvml = _Clock(1980.0)
    with pytest.raises(AttributeError):  # without unless_up the warm-up always burns
        worker.op_warmup(Warmup(min_s=0.1, max_s=2.0))


def test_the_checks_load_beside_the_start_warm_up_and_first_check_and_nothing_else(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A GPU worker loads the checks' functions in a thread from its start: commands that time
    nothing (hello, env, warm-up, check) are answered meanwhile; any other command waits for
    the loading first, so none of it runs on the GPU while the worker times."""
    import json
    import os
    import threading
    import time

    from checks.worker import contract, main

    ended: list[float] = []

    def slow_exercise(torch: object, device: str) -> None:
        time.sleep(0.4)
        ended.append(time.monotonic())

    monkeypatch.setattr(main.correctness, "exercise", slow_exercise)
    cuda = type("Cuda", (), {"synchronize": staticmethod(lambda: None)})
    worker = main.Worker("/nonexistent", "cuda", "base")
    worker.torch = type("Torch", (), {"cuda": cuda})()
    worker.start_loading_checks()
    first = worker.loading
    worker.start_loading_checks()
    assert worker.loading is first  # once
    cmd_r, cmd_w = os.pipe()
    resp_r, resp_w = os.pipe()
    answered: list[tuple[str, float]] = []

    def read() -> None:
        with os.fdopen(resp_r, "r", encoding="utf-8") as f:
            for line in f:
                answered.append((json.loads(line).get("error", "hello"), time.monotonic()))

    reader = threading.Thread(target=read)
    reader.start()
    serving = threading.Thread(target=main.serve, args=(worker, cmd_r, resp_w))
    serving.start()
    with os.fdopen(cmd_w, "w", encoding="utf-8") as cmds:
        for request in (contract.Hello(), contract.Block(), contract.Quit()):
            cmds.write(contract.encode_request(request).decode())
    serving.join(10)
    reader.join(10)
    assert ended, "the checks never loaded"
    (hello, t_hello), (_, t_block) = answered[0], answered[1]
    assert hello == "hello" and t_hello < ended[0]  # answered while they loaded
    assert t_block >= ended[0]  # a timing command waited for them


def test_a_release_waits_for_the_gpu_only_when_something_may_be_held() -> None:
    """A worker's first command releases nothing: it does not wait for the GPU (where the checks'
    functions may still load) nor empty torch's cache; once the checkout's entry point ran, a
    release does both, once, and the next release with nothing new held does neither."""
    from checks.worker.main import Worker

    calls: list[str] = []
    cuda = type(
        "Cuda",
        (),
        {
            "synchronize": staticmethod(lambda: calls.append("synchronize")),
            "empty_cache": staticmethod(lambda: calls.append("empty_cache")),
        },
    )
    worker = Worker("/nonexistent", "cuda", "base")
    worker.torch = type("Torch", (), {"cuda": cuda})()
    worker._release()
    assert calls == []

    def entry(shape: tuple[int, ...], dtype: str, *, device: str, seed: int) -> dict[str, object]:
        return {"fn": lambda: None}

    worker._call_entry(entry, [4], "float32", 0)
    worker._release()
    assert calls == ["synchronize", "empty_cache"]
    worker._release()
    assert calls == ["synchronize", "empty_cache"]
