"""Which timing mode a case gets, and when a CUDA graph is not to be trusted. Pure."""

from __future__ import annotations

import random

import pytest


def test_a_graph_that_replays_far_faster_than_an_eager_call_missed_the_work() -> None:
    from checks.sweep.pair_runner import graph_missed

    # bitsandbytes' quantize on the H200: 0.007 us a replayed call, 5.2 us eagerly
    said = graph_missed(5.2, 0.0067)
    assert said is not None and "did not capture" in said and "timed eagerly" in said
    # replays save launch gaps, up to about half of a many-kernel op's time: not a miss
    assert graph_missed(3.13, 2.45) is None
    assert graph_missed(30.0, 16.0) is None
    assert graph_missed(5.2, None) is None  # a single worker's configure timed no replays


def test_a_calls_busy_time_is_what_ran_between_its_markers_overlaps_once() -> None:
    """Each call sits between two marker kernels; its value is the union of what ran inside:
    host gaps (here 500 ns between the two kernels of call 0) are not counted, and two
    activities that overlap (call 1, a copy beside a kernel) count once."""
    from checks.worker.timing import MARKER, busy_per_call

    m = f"at::cuda::{MARKER}(long)"
    spans = [
        ("fill", 0, 50), (m, 60, 61), ("k1", 100, 200), ("k2", 700, 800), (m, 900, 901),
        ("fill", 950, 990), (m, 1000, 1001), ("k1", 1100, 1300), ("Memcpy DtoH", 1250, 1400),
        (m, 1500, 1501),
    ]  # fmt: skip
    random.Random(0).shuffle(spans)  # the profiler's order is not the GPU's
    assert busy_per_call(spans, 2) == [0.2, 0.3]
    with pytest.raises(RuntimeError, match="3 marker kernels for 2 calls"):
        busy_per_call([s for s in spans if s[1] != 1500], 2)


def test_a_host_as_slow_as_its_gpu_work_is_timed_by_busy_time() -> None:
    """bitsandbytes' 4-bit quantize (27 us of host, 5 us of GPU) and cut-cross-entropy's loss
    (2 ms of host, 0.4 ms of GPU, a wait inside) are timed by busy time; a kernel whose launch
    is a small part of it (a 300 us GEMM launched in 20 us) keeps event timing."""
    from checks.sweep.pair_runner import host_paced

    assert host_paced(27.0, 5.2) and "busy time" in (host_paced(2000.0, 405.0) or "")
    assert host_paced(20.0, 300.0) is None and host_paced(0.0, 0.0) is None


def test_the_marker_kernel_is_named_as_the_timer_looks_for_it() -> None:
    """Code under test may launch ``torch.cuda._sleep`` itself (the real-kernel suite's extra
    work does): the markers are a kernel of the timer's own, under a name nothing else has."""
    pytest.importorskip("triton")  # the lowest-versions run (.ci/lowest-deps) has none
    from checks.worker import mark_kernel
    from checks.worker.timing import MARKER

    assert mark_kernel.NAME == MARKER == mark_kernel.kernel_review_mark.fn.__name__
    assert "spin_kernel" not in MARKER
