"""The measurement engine on a real GPU (skipped without one): CUDA-graph and eager timers, NVML
telemetry, poisoning that catches an unwritten output, a CUDA fault that ends a context and a
sweep that goes on, A/A and a 10% slowdown with their verdicts."""

from __future__ import annotations

import time

import pytest

from checks.sweep.models import ShapeResult
from checks.sweep.protocol import ProtocolConfig
from checks.sweep.run import SweepOptions, run_sweep
from checks.sweep.shapes import Case
from checks.sweep.workers import Timeouts
from tests.paths import DATA, ROOT

pytestmark = pytest.mark.gpu

GPU = DATA / "gpu_standins"
PROOF = ROOT / "bench" / "proof_kernels"


def test_timers_agree_and_graphs_remove_launch_overhead() -> None:
    import sys

    import torch

    from checks.worker.timing import CudaTimer

    sys.path.insert(0, str(PROOF))
    import proofk

    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    small = [proofk.scale_shift((4096,), seed=i)["fn"] for i in range(4)]
    graph = CudaTimer(small, torch, l2_bytes=l2)
    eager = CudaTimer(small, torch, l2_bytes=l2)
    assert graph.configure("graph", 5.0)["mode"] == "graph"
    assert eager.configure("eager-noflush", 5.0)["calls_per_block"] > 1
    g = min(graph.block()["value_us"] for _ in range(5))
    e = min(eager.block()["value_us"] for _ in range(5))
    assert 0 < g < e  # a replayed graph has no Python launch in between
    big = [proofk.scale_shift((2**26,), seed=0)["fn"]]
    flushed = CudaTimer(big, torch, l2_bytes=l2)
    info = flushed.configure("eager", 5.0)
    b = flushed.block()
    assert info["flush_us"] > 0 and b["calls"] >= 1 and b["gpu_ms"] > 0
    bytes_per_s = 8 * 2**26 / (b["value_us"] * 1e-6)
    assert 0.2e12 < bytes_per_s < 20e12  # a memory-bound kernel at a plausible HBM speed


def test_graphs_captured_side_by_side_take_the_leaders_replays() -> None:
    """The sweep's graph configure: every timer captures a graph of the same size first, one
    times its replays alone, the others take them; no block runs before its replays are set."""
    import sys

    import torch

    from checks.worker.timing import CudaTimer, graph_calls

    sys.path.insert(0, str(PROOF))
    import proofk

    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    fns = [proofk.scale_shift((2**16,), seed=i)["fn"] for i in range(8)]
    lead, other = CudaTimer(fns, torch, l2_bytes=l2), CudaTimer(fns, torch, l2_bytes=l2)
    est = lead.estimate_us()
    like = {"graph_calls": graph_calls(2.5, est, len(fns))}
    for t in (lead, other):
        got = t.configure("graph", 2.5, est_us=est, like=like, time_replays=False)
        assert got["graph_calls"] == like["graph_calls"] and "replays" not in got
    with pytest.raises(RuntimeError, match="replays"):
        other.block()
    timed = lead.set_replays(block_ms=2.5)
    took = other.set_replays(replays=timed["replays"])
    assert (
        took["calls_per_block"]
        == timed["calls_per_block"]
        == like["graph_calls"] * timed["replays"]
    )
    assert timed["graph_call_us"] > 0
    blocks = [t.block() for t in (lead, other)]
    assert [b["calls"] for b in blocks] == [timed["calls_per_block"]] * 2
    assert 0.5 < blocks[0]["gpu_ms"] < 10.0  # about the 2.5 ms asked for


def test_a_slow_host_launch_is_not_taken_for_kernel_time() -> None:
    """A wrapper that spends 200 us in Python before launching a 4096-element kernel: the
    estimate that picks the mode, and eager timing, see the kernel, not the host's pace."""
    import sys

    import torch

    from checks.sweep.pair_runner import choose_mode
    from checks.worker.timing import CudaTimer

    sys.path.insert(0, str(PROOF))
    import proofk

    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    fast = [proofk.scale_shift((4096,), seed=i)["fn"] for i in range(4)]

    def slowly(fn):
        def call():
            t_end = time.perf_counter() + 200e-6
            while time.perf_counter() < t_end:
                pass
            return fn()

        return call

    slow = [slowly(fn) for fn in fast]
    timer = CudaTimer(slow, torch, l2_bytes=l2)
    est = timer.estimate_us()
    assert timer.host_us > 150  # the host really is slow
    assert est < 30, est  # ...and the estimate is the kernel's
    assert choose_mode(est, est, "cuda", ProtocolConfig()) == "graph"
    reference = CudaTimer(fast, torch, l2_bytes=l2)
    reference.estimate_us()
    reference.configure("eager-noflush", 5.0)
    info = timer.configure("eager-noflush", 5.0)
    assert info["cover_us"] > 150
    r = min(reference.block()["value_us"] for _ in range(5))
    v = min(timer.block()["value_us"] for _ in range(5))
    assert v < 2 * r + 5, (v, r)  # not 200 us of host time


@pytest.fixture(scope="module")
def gpu_sweep(tmp_path_factory: pytest.TempPathFactory):
    names_shapes = [
        ("same", (2**20,)),
        ("padded", (2**24,)),
        ("padded", (2**26,)),
        ("unwritten", (2**20,)),
        ("out_of_bounds", (2**20,)),
        ("same", (2**26,)),
    ]
    cases = [
        Case(kernel=n, bench=f"gpu_kernels:{n}", dims=dims, dtype="float32", tolerance=0.03)
        for n, dims in names_shapes
    ]
    opts = SweepOptions(
        device="cuda",
        protocol=ProtocolConfig(max_rounds=100),
        timeouts=Timeouts(prepare_s=120, block_s=30),
        max_gpu_seconds=600,
        gpus=None,
        ceilings_cache_dir=str(tmp_path_factory.mktemp("cache")),
    )
    return run_sweep(
        cases,
        base_root=GPU / "base",
        head_root=GPU / "head",
        base_rev="b" * 40,
        head_rev="h" * 40,
        options=opts,
        work_dir=tmp_path_factory.mktemp("work"),
    )


def test_gpu_sweep_verdicts_and_faults(gpu_sweep) -> None:
    by = {(c.kernel, c.shape): c for c in gpu_sweep.cases}
    assert by[("same", (2**20,))].verdict in ("SAME", "INCONCLUSIVE")
    assert by[("same", (2**26,))].verdict in ("SAME", "INCONCLUSIVE")
    assert by[("padded", (2**26,))].verdict == "SLOWER"
    assert by[("padded", (2**26,))].ratio > 1.05
    unwritten = by[("unwritten", (2**20,))]
    assert unwritten.status == "wrong_result" and unwritten.failed_side == "head"
    oob = by[("out_of_bounds", (2**20,))]
    assert oob.status in ("cuda_error", "crashed") and oob.failed_side == "head"
    # the case after the fault ran on a restarted worker
    assert by[("same", (2**26,))].status == "ok"


def test_gpu_sweep_modes_telemetry_and_fingerprint(gpu_sweep) -> None:
    by = {(c.kernel, c.shape): c for c in gpu_sweep.cases}
    assert by[("same", (2**20,))].mode == "graph"
    assert by[("same", (2**26,))].mode == "eager"
    env = gpu_sweep.envs[0]
    assert env.vendor in ("nvidia", "amd") and env.warp_size in (32, 64)
    assert env.device_name and env.torch_version and env.triton_version
    assert gpu_sweep.ceilings and gpu_sweep.ceilings[0].copy_gbps > 100
    case = by[("same", (2**26,))]
    assert case.gbps and case.fraction_of_ceiling and 0.2 < case.fraction_of_ceiling < 1.5
    if env.vendor == "nvidia":
        tel = case.raw.rounds[0].base.telemetry
        assert tel is not None and tel.sm_clock_mhz and tel.max_sm_clock_mhz


def _a_a(tmp_path, sizes):
    """The same kernel on both sides at a 1% tolerance, four workers (each side in both slots)."""
    cases = [
        Case(kernel="scale_shift", bench="proofk:scale_shift", dims=d, dtype="float32",
             tolerance=0.01)
        for d in sizes
    ]  # fmt: skip
    opts = SweepOptions(
        device="cuda",
        timeouts=Timeouts(prepare_s=120, block_s=30),
        max_gpu_seconds=600,
        ceilings_cache_dir=str(tmp_path / "cache"),
    )
    assert opts.protocol.crossover
    return run_sweep(
        cases,
        base_root=PROOF,
        head_root=PROOF,
        base_rev="a" * 40,
        head_rev="a" * 40,
        options=opts,
        work_dir=tmp_path / "work",
    )


def test_crossover_a_a_is_same_at_one_percent(tmp_path) -> None:
    """From about 5 us up (2^20 elements, graph mode; 2^24, eager) identical code is SAME at a
    1% tolerance, where one pair read the head slot 0.5-1.3% slower; both sides timed blocks of
    one structure."""
    result = _a_a(tmp_path, ((2**20,), (2**24,)))
    for c in result.cases:
        assert c.status == "ok", c.message
        assert c.raw is not None and c.raw.arms == 2
        assert c.verdict == "SAME", (c.shape, c.ratio, c.ci_low, c.ci_high)
        assert c.base and c.head and c.base.calls_per_block == c.head.calls_per_block
    assert result.gpu_s_per_verdict_all_in and result.first_verdict_s
    assert result.startup_s["env"] < 1.0  # torch was imported at the workers' start, side by side
    marks = result.start_marks_s
    assert 0 < marks["to_main"] <= marks["to_ready"] <= result.startup_s["start"]
    logs = {p.name.rsplit("-", 1)[0] for p in (tmp_path / "work" / "logs").iterdir()}
    # four workers a pass (the later passes' named -e1, -e2, ...), the zygote they were forked
    # from, and the early warm-up, which had the clock up by the time the first pass answered
    first = {"base-gpu0", "head-gpu0", "base-gpu0-x", "head-gpu0-x", "zygote.log", "warmer"}
    passes = max(c.executions for c in result.cases) // 2
    later = {f"{w}-e{k}" for w in sorted(first)[:4] for k in range(1, passes)}
    assert passes >= 1 and first <= logs <= first | later, logs
    # one Triton kernel a call, no atomics, no buffer besides its output, no autotuner: its
    # first pass may decide (``checks.sweep.models.one_pass_reason``), and a case it decided took one pass
    for c in result.cases:
        assert c.raw is not None and c.raw.one_pass, c.base_launches
        assert c.executions >= 2 and (c.executions == 2) == ("decided in one pass" in c.explanation)
    warmer_log = next((tmp_path / "work" / "logs").glob("warmer-*.log")).read_text()
    assert "burning" in warmer_log.splitlines(), warmer_log
    assert not [n for n in result.notes if "did not settle" in n], result.notes


def test_crossover_a_a_at_two_microseconds_is_same_at_one_percent(tmp_path) -> None:
    """At 2^16 elements (about 1.5 us a call, graph mode) identical code is SAME at a 1%
    tolerance: the input copies overflow L2 twice (``MAX_COPIES``). With copies that stayed half
    in L2, worker processes read 6-14% apart and 4 of 4 sweeps claimed a difference."""
    result = _a_a(tmp_path, ((2**16,),))
    c = result.cases[0]
    assert c.status == "ok", c.message
    assert c.verdict == "SAME", (c.shape, c.ratio, c.ci_low, c.ci_high, c.notes)


def _stand_in_case(case: Case, tmp_path) -> ShapeResult:
    """``case`` swept on the GPU stand-ins (base against head), its one result."""
    opts = SweepOptions(
        device="cuda",
        timeouts=Timeouts(prepare_s=120, block_s=30),
        max_gpu_seconds=300,
        ceilings_cache_dir=str(tmp_path / "cache"),
    )
    result = run_sweep(
        [case],
        base_root=GPU / "base",
        head_root=GPU / "head",
        base_rev="b" * 40,
        head_rev="h" * 40,
        options=opts,
        work_dir=tmp_path / "work",
    )
    return result.cases[0]


def test_work_a_graph_does_not_capture_is_timed_eagerly(tmp_path) -> None:
    """A kernel launched on the legacy default stream (bitsandbytes' quantize ops) is not in a
    graph captured on another stream: replays took 0.007 us for 5.2 us of work, and identical
    code read 1.09-1.92x apart. The sweep sees the replay time fall short of the eager call's,
    says so, and times the case eagerly: a plausible time, and SAME (2^22 elements, about 15 us
    a call, under the 50 us below which graphs are chosen; at 2^16, 2 us a call, eager timing
    read identical code INCONCLUSIVE at 3% on the H200)."""
    case = Case(kernel="legacy_stream", bench="gpu_kernels:legacy_stream", dims=(2**22,),
                dtype="float32", tolerance=0.05)  # fmt: skip
    c = _stand_in_case(case, tmp_path)
    assert c.status == "ok", c.message
    assert c.mode in ("eager", "eager-noflush", "kernels", "kernels-noflush"), (c.mode, c.notes)
    assert any("did not capture" in n for n in c.notes), c.notes
    assert c.base and c.base_median_us and c.base_median_us > 0.3 * c.base.est_us
    assert c.verdict == "SAME", (c.ratio, c.ci_low, c.ci_high, c.explanation)


def test_a_call_that_waits_for_the_gpu_is_timed_by_its_busy_time(tmp_path) -> None:
    """An op that reads a value back mid-call and then spends 0.3 ms on the host: events around
    the call time the host's pace (cut-cross-entropy's loss read identical code 0.68-1.25x apart
    on the H200). Timed by the GPU's busy time, the case's time is its two kernels' (well under
    the host's 0.3 ms), and identical code reads SAME."""
    case = Case(kernel="waits_inside", bench="gpu_kernels:waits_inside", dims=(2**22,),
                dtype="float32", tolerance=0.03)  # fmt: skip
    c = _stand_in_case(case, tmp_path)
    assert c.status == "ok", c.message
    assert c.mode in ("kernels", "kernels-noflush"), (c.mode, c.notes)
    assert any("busy time" in n for n in c.notes), c.notes
    assert c.base and c.base.host_us and c.base.host_us > 300
    assert c.base_median_us is not None and 5 < c.base_median_us < 150, c.base_median_us
    assert c.verdict == "SAME", (c.ratio, c.ci_low, c.ci_high, c.explanation)


def test_a_worker_checks_alike_while_and_after_the_checks_load(tmp_path) -> None:
    """A worker loads the checks' GPU functions in a thread from its start: one checked at once
    (while they load, as a restarted worker is) and one checked after its warm-up both find a
    right output."""
    from checks.sweep.workers import WorkerClient, WorkerSpec

    for name, warm in (("at-once", False), ("warmed", True)):
        w = WorkerClient(
            WorkerSpec(side="base", root=PROOF, device="cuda", work_dir=tmp_path, label=name)
        )
        w.start()
        try:
            if warm:
                assert w.warmup(min_s=0.25, max_s=5.0).reached
            checked = w.check(["proofk:scale_shift"], (4096,), "float32", seed=1)
            assert checked.correct and checked.digest[0].shape == (4096,)
        finally:
            w.close()
