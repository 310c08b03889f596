"""Timers that run inside a worker: one block of calls in, the time of one call out.

Three GPU modes, chosen by the parent for both sides of a case alike:
- ``graph``: a CUDA graph of K calls cycling over input copies whose footprint exceeds L2,
  replayed r times between two events; block value = elapsed / (r * K). Launch overhead and warm
  caches do not decide the verdict of a short kernel.
- ``eager``: each call preceded by zeroing a buffer twice the L2 size, an event pair around each
  call; block value = median call time. For kernels above ~50 us. When the host takes longer to
  enqueue a call than the flush keeps the GPU busy, the stream is also held (``_sleep``) before
  the start event, so the host's pace never shows as kernel time.
- ``eager-noflush``: as eager without the flush; the fallback when graph capture fails.
- ``kernels`` / ``kernels-noflush``: as eager (with or without the flush), each call between
  two marker kernels (``mark_kernel``), and its value the GPU's busy time inside (the union of its kernels',
  copies' and memsets' spans from the profiler): for a call whose host is as slow as its GPU
  work or waits for the GPU inside (``.item()``, a copy to the host), where the time between two
  events is the host's pace, which differs from one process to the next.

``CpuTimer`` stands in on a machine without a GPU (labelled CPU timing in every result).
Standard library only at import; the worker hands in torch.
"""

from __future__ import annotations

import abc
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

Fn = Callable[[], Any]
MAX_GRAPH_CALLS = 1000
# A graph holds a third of a block's calls, and at most 1 ms of them: every worker captures one
# (and its pre-roll) per case, and capturing graphs of a whole block (a Python launch per call,
# then instantiating) took about 20 ms each in the H200's profile of a run
# (``bench/results/h200/cost_diag/b43a286/profile.md``); a block replays it three times or more,
# back to back on the stream.
GRAPH_SHARE = 3
GRAPH_MAX_MS = 1.0
MAX_EAGER_CALLS = 2000
CPU_COPIES = 4
# Input copies at most: enough that a tiny kernel's copies still overflow L2 twice over (2^16
# float32 elements in and out, 0.5 MB a call: 240 on the H200's 60 MB). With 64, such copies
# stayed half inside L2, and identical code read 6-14% apart from one worker process to another
# at 2^16; with 256 the four workers' medians agreed within 0.7%.
MAX_COPIES = 256
RESIDENT_COPIES = 64  # at most, for inputs that cannot overflow L2 within the count allowed
RESIDENT_SHARE = 16  # ... and they take at most 1/16 of L2


def input_copies(footprint: int, l2_bytes: int | None, *, max_copies: int, max_bytes: int) -> int:
    """How many input copies a worker rotates through. On a GPU whose L2 is known: enough to
    overflow L2 twice, so that every call reads its inputs from memory and where in L2 a
    process's pages fall does not decide its time. Inputs too small for that within
    ``max_copies`` are kept well inside L2 instead (at most ``RESIDENT_COPIES``, taking at most
    1/``RESIDENT_SHARE`` of it): between the two, with the copies a quarter to a half of L2,
    identical code read 1-14% apart from one worker process to another on the H200
    (bench/results/h200/cost_side_by_side/copies/). On the CPU (no L2 given) a few, so that
    one lucky or unlucky allocation does not decide; on a GPU whose L2 is not known (0), one.
    Bounded by ``max_bytes`` in all."""
    footprint = max(1, int(footprint))
    if l2_bytes is None:
        want = CPU_COPIES
    elif l2_bytes <= 0:
        want = 1
    else:
        want = math.ceil(2 * l2_bytes / footprint)
        if want > max_copies:
            want = min(RESIDENT_COPIES, l2_bytes // (RESIDENT_SHARE * footprint))
    return max(1, min(want, max_copies, max_bytes // footprint))


def graph_calls(block_ms: float, est_us: float, copies: int) -> int:
    """Calls one CUDA graph captures: about ``min(block_ms / GRAPH_SHARE, GRAPH_MAX_MS)`` ms of
    calls at ``est_us`` each, at most ``MAX_GRAPH_CALLS``, and whole passes over the ``copies``
    input copies (so every copy is called equally often). The parent sizes every worker's graph
    with it."""
    c = max(1, int(copies))
    span_us = min(block_ms / GRAPH_SHARE, GRAPH_MAX_MS) * 1000.0
    k = max(c, min(MAX_GRAPH_CALLS, math.ceil(span_us / max(est_us, 1e-3))))
    return math.ceil(k / c) * c


# the marker kernel's name (``checks.worker.mark_kernel``): two launches around each call of a
# ``kernels`` block
MARKER = "kernel_review_mark"
MIN_KERNEL_CALLS = 5  # a ``kernels`` block's median is over this many calls at least


def busy_per_call(spans: Sequence[tuple[str, int, int]], calls: int) -> list[float]:
    """Each call's GPU busy time (us) from a ``kernels`` block's device activities (name, start
    ns, end ns): what ran between the call's two markers, overlaps counted once. Raises when the
    markers do not pair up with the calls (a profiler that lost activities)."""
    ordered = sorted(spans, key=lambda s: (s[1], s[2]))
    marks = [i for i, (name, _, _) in enumerate(ordered) if MARKER in name]
    if len(marks) != 2 * calls:
        raise RuntimeError(
            f"the profiler recorded {len(marks)} marker kernels for {calls} calls "
            f"(expected {2 * calls}): the GPU's busy time per call cannot be told apart"
        )
    out = []
    for c in range(calls):
        busy, end = 0, None
        for _, start, stop in ordered[marks[2 * c] + 1 : marks[2 * c + 1]]:
            if end is None or start >= end:
                busy += stop - start
                end = stop
            elif stop > end:
                busy += stop - end
                end = stop
        out.append(busy / 1000.0)
    return out


def _median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


@dataclass(frozen=True)
class BlockPlan:
    """What ``configure`` asks of a timer: the mode, about how long a block is, the estimate
    of one call, another worker's structure to copy (``like``), a graph's preroll, and whether
    a graph's replays are timed now (else ``set_replays`` sets them)."""

    mode: str
    block_ms: float
    est: float
    like: Mapping[str, Any]
    preroll: bool = True
    time_replays: bool = True


class _Timer(abc.ABC):
    """What both timers share: ``configure`` resolves the estimate blocks are sized from."""

    est_us: float

    @abc.abstractmethod
    def estimate_us(self) -> float:
        """The time of one call, measured now."""

    def configure(
        self,
        mode: str,
        block_ms: float,
        *,
        est_us: float | None = None,
        like: Mapping[str, Any] | None = None,
        preroll: bool = True,
        time_replays: bool = True,
    ) -> dict[str, Any]:
        """Set up blocks of about ``block_ms``, sized from ``est_us`` (default this timer's own
        estimate), or with exactly the calls of ``like`` (another worker's answer to configure),
        so that both sides of a case time blocks of the same structure. ``preroll``: a graph
        block starts after one untimed pass over every input copy. ``time_replays`` false: a
        graph is captured but its replays per block are left to ``set_replays`` (several
        workers capture side by side, then one times its graph alone)."""
        est = est_us or self.est_us or self.estimate_us()
        return self._setup(BlockPlan(mode, block_ms, est, like or {}, preroll, time_replays))

    @abc.abstractmethod
    def _setup(self, plan: BlockPlan) -> dict[str, Any]:
        """Blocks for ``plan.mode`` sized from ``plan.est`` (or taken from ``plan.like``); what
        was set up."""


class CpuTimer(_Timer):
    """Wall-clock timing of Python calls: ``time.perf_counter_ns`` around each call."""

    kind = "cpu"

    def __init__(self, fns: Sequence[Fn]) -> None:
        self.fns = list(fns)
        self.est_us = 0.0
        self.calls = 1

    def estimate_us(self) -> float:
        times = []
        deadline = time.perf_counter() + 0.05
        for i in range(5):
            t0 = time.perf_counter_ns()
            self.fns[i % len(self.fns)]()
            times.append((time.perf_counter_ns() - t0) / 1000.0)
            if time.perf_counter() > deadline:
                break
        self.est_us = max(_median(times), 0.01)
        return self.est_us

    def _setup(self, plan: BlockPlan) -> dict[str, Any]:
        self.calls = max(1, min(100_000, round(plan.block_ms * 1000.0 / plan.est)))
        if plan.like.get("calls_per_block"):
            self.calls = int(plan.like["calls_per_block"])
        return {"mode": "cpu", "calls_per_block": self.calls, "est_us": plan.est}

    def block(self) -> dict[str, Any]:
        fns, n = self.fns, len(self.fns)
        times = [0.0] * self.calls
        w0 = time.perf_counter()
        for i in range(self.calls):
            t0 = time.perf_counter_ns()
            fns[i % n]()
            times[i] = (time.perf_counter_ns() - t0) / 1000.0
        wall_ms = (time.perf_counter() - w0) * 1000.0
        return {"value_us": _median(times), "calls": self.calls, "wall_ms": wall_ms, "gpu_ms": None}

    def release(self) -> None:
        self.fns = []


# ``CudaTimer.estimate_us``: a call of at least SINGLE_CALL_MS is its own estimate (its launch is
# a few percent of it at most); a shorter one is timed again, about ESTIMATE_MS of calls queued
# behind a held stream. The estimate sizes blocks: both sides take the slower one's, so it needs
# no more precision than that (these were 20 and 5 ms: 4-8 ms of each side's estimate in turn,
# the GPU otherwise idle, at 300 us and 2 ms calls)
SINGLE_CALL_MS = 1.0
ESTIMATE_MS = 2.0
_SLEEP_RATE: dict[str, float] = {}  # ``CudaTimer._cycles_per_us``'s, once per process


class CudaTimer(_Timer):
    """CUDA (or ROCm through torch.cuda) event timing, eager or in graphs."""

    kind = "cuda"

    def __init__(
        self,
        fns: Sequence[Fn],
        torch: Any,
        *,
        l2_bytes: int,
        make_mark: Callable[[], Fn] | None = None,
    ) -> None:
        """``make_mark``: builds the function that launches the marker kernel (``kernels``
        mode; the worker loads ``mark_kernel``, which imports Triton, only then)."""
        self.fns = list(fns)
        self.torch = torch
        self.flush_bytes = max(2 * int(l2_bytes or 0), 64 * 2**20)
        self.est_us = 0.0
        self.mode = "eager"
        self._graph: Any = None
        self._preroll: Any = None
        self._ring: list[Any] = []
        self._pre_ring: list[Any] = []
        self._graph_calls = 0
        self._replays = 1
        self._flush_buf: Any = None
        self._flush_us = 0.0
        self._calls = 1
        self._events: list[tuple[Any, Any]] = []
        self.host_us = 0.0  # host time to enqueue one call
        self._cover_us = 0.0
        self._mark: Fn | None = None  # launches the marker kernel (``kernels`` mode)
        self._make_mark = make_mark

    def _event(self) -> Any:
        return self.torch.cuda.Event(enable_timing=True)

    def _cycles_per_us(self) -> float:
        """Clock cycles of ``torch.cuda._sleep`` per microsecond, measured once per process (0
        when the build has no ``_sleep``): a timer per case had measured it again each time, 1 ms
        of the GPU per worker and case, for a rate that only sizes a hold."""
        if "rate" not in _SLEEP_RATE:
            sleep = getattr(self.torch.cuda, "_sleep", None)
            _SLEEP_RATE["rate"] = 0.0
            if sleep is not None:
                s, e = self._event(), self._event()
                sleep(1000)  # load the kernel before timing it
                s.record()
                sleep(2_000_000)
                e.record()
                e.synchronize()
                _SLEEP_RATE["rate"] = 2_000_000 / max(s.elapsed_time(e) * 1000.0, 1e-3)
        return _SLEEP_RATE["rate"]

    def _hold(self, us: float) -> None:
        """Keep the stream busy for about ``us`` so that the calls enqueued behind it run back to
        back however slowly the host launches them (the blocking kernel of nvbench)."""
        rate = self._cycles_per_us()
        if rate > 0 and us > 0:
            self.torch.cuda._sleep(int(us * rate))

    def estimate_us(self) -> float:
        """GPU time of one call: eager calls queued behind a held stream, so a slow Python launch
        (tens of us for some wrappers) is not taken for kernel time. The host's own time per call
        is kept in ``host_us``. Both size blocks and pick the mode."""
        cuda = self.torch.cuda
        cuda.synchronize()
        s, e = self._event(), self._event()
        h0 = time.perf_counter()
        s.record()
        self.fns[0]()
        e.record()
        self.host_us = (time.perf_counter() - h0) * 1e6
        e.synchronize()
        one_ms = s.elapsed_time(e)
        if one_ms >= SINGLE_CALL_MS:
            self.est_us = one_ms * 1000.0
            return self.est_us
        n = max(1, min(20, int(ESTIMATE_MS / max(one_ms, 1e-3))))
        cuda.synchronize()
        self._hold(min(50_000.0, 2.0 * n * self.host_us + 100.0))
        h0 = time.perf_counter()
        s.record()
        for i in range(n):
            self.fns[i % len(self.fns)]()
        e.record()
        self.host_us = (time.perf_counter() - h0) * 1e6 / n
        e.synchronize()
        self.est_us = max(s.elapsed_time(e) * 1000.0 / n, 0.01)
        return self.est_us

    # ------------------------------------------------------------------------------ configure

    def _setup(self, plan: BlockPlan) -> dict[str, Any]:
        self.mode = mode = plan.mode
        if mode == "graph":
            return self._configure_graph(
                plan.block_ms,
                plan.est,
                plan.like,
                preroll=plan.preroll,
                time_replays=plan.time_replays,
            )
        if mode in ("eager", "eager-noflush"):
            return self._configure_eager(
                plan.block_ms, plan.est, flush=mode == "eager", like=plan.like
            )
        if mode in ("kernels", "kernels-noflush"):
            return self._configure_kernels(
                plan.block_ms, plan.est, flush=mode == "kernels", like=plan.like
            )
        raise ValueError(f"unknown timing mode {mode!r}")

    def _configure_graph(
        self,
        block_ms: float,
        est: float,
        like: Mapping[str, Any] | None = None,
        *,
        preroll: bool = True,
        time_replays: bool = True,
    ) -> dict[str, Any]:
        torch = self.torch
        c = len(self.fns)
        k = (
            int(like["graph_calls"])
            if like and like.get("graph_calls")
            else graph_calls(block_ms, est, c)
        )
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for i in range(min(3, c) or 1):
                self.fns[i % c]()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        ring: list[Any] = [None] * c

        def calls() -> None:
            for i in range(k):
                # Keep the last c outputs alive so outputs rotate through c buffers too.
                ring[i % c] = self.fns[i % c]()

        graph = self._capture(calls)
        self._graph, self._ring, self._graph_calls = graph, ring, k
        self._preroll = None
        if preroll:
            # One pass over every copy before the start event: the first calls after another
            # process had the GPU (its context switched out, TLBs and caches cold for this
            # process's pages) are not timed; without it such a start-up cost per block would be
            # part of every block's value, and differ from process to process.
            pre_ring: list[Any] = [None] * c

            def each() -> None:
                for i in range(c):
                    pre_ring[i] = self.fns[i]()

            pre = self._capture(each)
            self._preroll, self._pre_ring = pre, pre_ring
            pre.replay()
        graph.replay()
        torch.cuda.synchronize()
        self._s, self._e = self._event(), self._event()
        self._replays = 0
        got = {
            "mode": "graph",
            "graph_calls": k,
            "est_us": est,
            "preroll_calls": c if preroll else 0,
        }
        if like and like.get("replays"):
            return {**got, **self.set_replays(replays=int(like["replays"]))}
        if time_replays:
            return {**got, **self.set_replays(block_ms=block_ms)}
        return got

    def set_replays(
        self, *, block_ms: float | None = None, replays: int | None = None
    ) -> dict[str, Any]:
        """Replays of the captured graph per block: ``replays`` as given, or as many as make
        ``block_ms``, from three replays timed now (so nothing else should run meanwhile)."""
        if self._graph is None:
            raise RuntimeError("set_replays before a graph was captured (configure graph first)")
        out: dict[str, Any] = {}
        if replays is None:
            s, e = self._event(), self._event()
            s.record()
            for _ in range(3):
                self._graph.replay()
            e.record()
            e.synchronize()
            per_replay_ms = max(s.elapsed_time(e) / 3.0, 1e-3)
            replays = max(1, min(10_000, round(float(block_ms or 0.0) / per_replay_ms)))
            out["graph_call_us"] = per_replay_ms * 1000.0 / self._graph_calls
        self._replays = int(replays)
        return {
            **out,
            "replays": self._replays,
            "calls_per_block": self._graph_calls * self._replays,
        }

    def _capture(self, body: Fn) -> Any:
        """A CUDA graph of what ``body`` launches, captured on a side stream. What
        ``torch.cuda.graph`` does, without its ``gc.collect()`` and ``empty_cache()`` before
        every capture (about 20 ms each in a process that has torch and Triton loaded, twice per
        worker and case; the worker frees its memory between cases itself)."""
        torch = self.torch
        graph = torch.cuda.CUDAGraph()
        torch.cuda.synchronize()
        with torch.cuda.stream(torch.cuda.Stream()):
            graph.capture_begin()
            try:
                body()
            finally:
                graph.capture_end()
        return graph

    def _configure_eager(
        self,
        block_ms: float,
        est: float,
        *,
        flush: bool,
        like: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        torch = self.torch
        if flush and self._flush_buf is None:
            self._flush_buf = torch.empty(self.flush_bytes, dtype=torch.int8, device="cuda")
            s, e = self._event(), self._event()
            self._flush_buf.zero_()
            s.record()
            for _ in range(3):
                self._flush_buf.zero_()
            e.record()
            e.synchronize()
            self._flush_us = s.elapsed_time(e) * 1000.0 / 3.0
        # What keeps the GPU ahead of the host between calls: the flush, topped up by a held
        # stream when enqueueing a call takes longer (else idle time would count as kernel time).
        flush_us = self._flush_us if flush else 0.0
        self._cover_us = max(0.0, 1.5 * self.host_us + 5.0 - flush_us) if self.host_us else 0.0
        if self._cycles_per_us() <= 0:
            self._cover_us = 0.0
        per_call = est + flush_us + self._cover_us
        self._calls = max(1, min(MAX_EAGER_CALLS, round(block_ms * 1000.0 / per_call)))
        if like and like.get("calls_per_block"):
            self._calls = int(like["calls_per_block"])
        self._events = [(self._event(), self._event()) for _ in range(self._calls)]
        return {
            "mode": "eager" if flush else "eager-noflush",
            "calls_per_block": self._calls,
            "est_us": est,
            "flush_us": flush_us,
            "cover_us": self._cover_us,
            "host_us": self.host_us,
        }

    def _configure_kernels(
        self,
        block_ms: float,
        est: float,
        *,
        flush: bool,
        like: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Blocks of eager calls timed by the GPU's busy time in each (``busy_per_call``): as
        many calls as ``block_ms`` of GPU work, at least ``MIN_KERNEL_CALLS``; one block is run
        now, so that a profiler that cannot tell the calls apart fails here, not in a round."""
        torch = self.torch
        if getattr(torch, "profiler", None) is None:
            raise RuntimeError("this torch has no torch.profiler")
        if self._mark is None:
            if self._make_mark is None:
                raise RuntimeError("no marker kernel was handed to this timer")
            self._mark = self._make_mark()
            self._mark()  # compiled and loaded before any block
        got = self._configure_eager(block_ms, est, flush=flush, like=like)
        if not (like and like.get("calls_per_block")):
            self._calls = max(self._calls, MIN_KERNEL_CALLS)
        self._cover_us = 0.0
        self._events = []
        self.mode = "kernels" if flush else "kernels-noflush"
        self._kernels_block(flush=flush)
        return {
            **got,
            "mode": self.mode,
            "calls_per_block": self._calls,
            "cover_us": 0.0,
        }

    # ---------------------------------------------------------------------------------- block

    def block(self) -> dict[str, Any]:
        if self.mode == "graph":
            return self._graph_block()
        if self.mode in ("kernels", "kernels-noflush"):
            return self._kernels_block(flush=self.mode == "kernels")
        return self._eager_block(flush=self.mode == "eager")

    def _kernels_block(self, *, flush: bool) -> dict[str, Any]:
        torch = self.torch
        profiler = torch.profiler
        fns, c = self.fns, len(self.fns)
        buf, mark = self._flush_buf, cast(Fn, self._mark)  # made by the kernels mode's set-up
        w0 = time.perf_counter()
        with profiler.profile(activities=[profiler.ProfilerActivity.CUDA]) as prof:
            for i in range(self._calls):
                if flush:
                    buf.zero_()
                mark()
                fns[i % c]()
                mark()
            torch.cuda.synchronize()
        wall_ms = (time.perf_counter() - w0) * 1000.0
        spans = [
            (e.name(), int(e.start_ns()), int(e.end_ns()))
            for e in prof.profiler.kineto_results.events()
            if str(e.device_type()).endswith("CUDA")
        ]
        times = busy_per_call(spans, self._calls)
        return {
            "value_us": _median(times),
            "calls": len(times),
            "wall_ms": wall_ms,
            "gpu_ms": sum(times) / 1000.0,
        }

    def _graph_block(self) -> dict[str, Any]:
        if not self._replays:
            raise RuntimeError("a graph block before its replays were set (set_replays)")
        g, s, e = self._graph, self._s, self._e
        w0 = time.perf_counter()
        if self._preroll is not None:
            self._preroll.replay()
        s.record()
        for _ in range(self._replays):
            g.replay()
        e.record()
        e.synchronize()
        wall_ms = (time.perf_counter() - w0) * 1000.0
        gpu_ms = s.elapsed_time(e)
        calls = self._replays * self._graph_calls
        return {
            "value_us": gpu_ms * 1000.0 / calls,
            "calls": calls,
            "wall_ms": wall_ms,
            "gpu_ms": gpu_ms,
        }

    def _eager_block(self, *, flush: bool) -> dict[str, Any]:
        fns, c = self.fns, len(self.fns)
        buf = self._flush_buf
        w0 = time.perf_counter()
        first: Any = None
        last: Any = None
        cover = self._cover_us
        for i, (s, e) in enumerate(self._events):
            if flush:
                buf.zero_()
            if cover:
                self._hold(cover)
            s.record()
            fns[i % c]()
            e.record()
            if first is None:
                first = s
            last = e
        last.synchronize()
        wall_ms = (time.perf_counter() - w0) * 1000.0
        times = [s.elapsed_time(e) * 1000.0 for s, e in self._events]
        return {
            "value_us": _median(times),
            "calls": len(times),
            "wall_ms": wall_ms,
            "gpu_ms": first.elapsed_time(last),
        }

    def release(self) -> None:
        self._graph = None
        self._preroll = None
        self._ring = []
        self._pre_ring = []
        self._events = []
        self.fns = []
        self._flush_buf = None


def burn(torch: Any, device: str, seconds: float) -> None:
    """Keep the GPU busy for ``seconds`` so its clocks come up before measuring: large copies,
    a load that raises the clock without running into the power limit as a matmul can."""
    src = torch.empty(128 * 2**20, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        for _ in range(16):
            dst.copy_(src)
        torch.cuda.synchronize()
