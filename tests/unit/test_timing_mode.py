"""Which timing mode a case gets, and when a CUDA graph is not to be trusted. Pure."""

from __future__ import annotations


def test_a_graph_that_replays_far_faster_than_an_eager_call_missed_the_work() -> None:
    from checks.sweep.pair_runner import graph_missed

    # bitsandbytes' quantize on the H200: 0.007 us a replayed call, 5.2 us eagerly
    said = graph_missed(5.2, 0.0067)
    assert said is not None and "did not capture" in said and "timed eagerly" in said
    # replays save launch gaps, up to about half of a many-kernel op's time: not a miss
    assert graph_missed(3.13, 2.45) is None
    assert graph_missed(30.0, 16.0) is None
    assert graph_missed(5.2, None) is None  # a single worker's configure timed no replays
