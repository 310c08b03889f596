"""The slow heads' extra work (``bench/real_kernels/rk_extra.py``) on the CPU: identical code
leaves the entry alone; a fraction sizes a busy wait to that fraction of ``fn``'s own time at
the first call, once per case, and adds it after every call."""

from __future__ import annotations

import sys
import time
import types
from typing import Any

import pytest

from tests.paths import ROOT

sys.path.insert(0, str(ROOT / "bench" / "real_kernels"))

import rk_extra

SLEEP_S = 0.004


@pytest.fixture
def entries(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """A module ``rk_fake_entries`` whose ``op`` sleeps SLEEP_S per call; the calls it got."""
    built: list[tuple[Any, ...]] = []
    mod = types.ModuleType("rk_fake_entries")

    def op(shape: tuple[int, ...], dtype: str, *, device: str = "cuda", seed: int = 0) -> dict:
        built.append((shape, dtype, device, seed))
        return {"fn": lambda: time.sleep(SLEEP_S) or "out", "bytes_moved": 12}

    mod.op = op  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "rk_fake_entries", mod)
    monkeypatch.setattr(rk_extra, "SIZED", {})
    return built


def test_no_fraction_returns_the_entrys_own_mapping(entries: list[tuple[Any, ...]]):
    case = rk_extra.wrap(
        "rk_fake_entries", "op", "k", (3, 5), "float16", device="cpu", seed=7, fraction=0.0
    )
    assert entries == [((3, 5), "float16", "cpu", 7)]
    assert case["bytes_moved"] == 12
    assert case["fn"].__name__ == "<lambda>"  # the entry's own fn, not a wrapper
    case["fn"]()
    assert rk_extra.SIZED == {}


def test_a_fraction_adds_that_share_of_the_kernels_time(entries: list[tuple[Any, ...]]):
    wrap = dict(device="cpu", fraction=0.5)
    case = rk_extra.wrap("rk_fake_entries", "op", "k", (64,), "float32", seed=0, **wrap)
    assert case["bytes_moved"] == 12
    assert case["fn"]() == "out"
    ((key, extra),) = rk_extra.SIZED.items()
    assert key == ("k", (64,), "float32", "cpu")
    # the kernel's own time, as timed: a sleep never returns early, and a loaded machine
    # oversleeps (7.3 ms for 4 ms seen with a load of 13 on 2 cores)
    assert SLEEP_S * 1e6 * 0.9 <= extra.kernel_us <= SLEEP_S * 1e6 * 10
    assert extra.spin_us == pytest.approx(0.5 * extra.kernel_us)
    t0 = time.perf_counter()
    for _ in range(5):
        case["fn"]()
    per_call = (time.perf_counter() - t0) / 5
    assert per_call >= (extra.kernel_us + extra.spin_us) * 1e-6 * 0.95
    # another seed of the same case reuses the sizing; another shape is sized anew
    other = rk_extra.wrap("rk_fake_entries", "op", "k", (64,), "float32", seed=1, **wrap)
    other["fn"]()
    assert len(rk_extra.SIZED) == 1
    rk_extra.wrap("rk_fake_entries", "op", "k", (65,), "float32", seed=0, **wrap)["fn"]()
    assert len(rk_extra.SIZED) == 2


def test_a_malformed_entry_is_passed_on_for_the_sweep_to_report(
    monkeypatch: pytest.MonkeyPatch, entries: list[tuple[Any, ...]]
):
    monkeypatch.setattr(sys.modules["rk_fake_entries"], "op", lambda *a, **k: {"fn": 3})
    got = rk_extra.wrap(
        "rk_fake_entries", "op", "k", (4,), "float32", device="cpu", seed=0, fraction=0.1
    )
    assert got == {"fn": 3}


class FakeCuda:
    """A GPU stream on a virtual clock, enough of ``torch.cuda`` for the sizing: a kernel
    launch costs ``launch_us``, ``_sleep(c)`` then spins ``c / mhz`` us, events read the clock."""

    def __init__(self, mhz: float, launch_us: float) -> None:
        self.now, self.mhz, self.launch_us = 0.0, mhz, launch_us
        self.sleeps: list[int] = []
        fake = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                self.t = 0.0

            def record(self) -> None:
                self.t = fake.now

            def elapsed_time(self, end: Event) -> float:
                return (end.t - self.t) / 1000.0  # ms

        self.Event = Event

    def _sleep(self, cycles: int) -> None:
        self.sleeps.append(cycles)
        self.now += self.launch_us + cycles / self.mhz

    def kernel(self, us: float) -> None:
        self.now += self.launch_us + us

    def synchronize(self) -> None:
        pass

    def is_current_stream_capturing(self) -> bool:
        return False


def test_gpu_sizing_takes_the_launch_off_and_converts_to_cycles(monkeypatch: pytest.MonkeyPatch):
    cuda = FakeCuda(mhz=1980.0, launch_us=2.0)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    monkeypatch.setattr(rk_extra, "_CYCLES_PER_US", None)
    extra = rk_extra.size_extra(lambda: cuda.kernel(98.0), 0.10, "cuda")
    assert rk_extra.cycles_per_us() == pytest.approx(1980.0)
    assert extra.kernel_us == pytest.approx(100.0)  # its launch and its work
    assert extra.launch_us == pytest.approx(2.0)  # an empty sleep's launch
    assert extra.target_us == pytest.approx(10.0)
    assert extra.cycles == round(8.0 * 1980.0)  # the launch is part of the 10 us
    before = cuda.now
    extra.run()
    assert cuda.now - before == pytest.approx(10.0)
    # a kernel so short that one more launch is over the target: no cycles, the launch remains
    tiny = rk_extra.size_extra(lambda: cuda.kernel(3.0), 0.05, "cuda")
    assert tiny.cycles == 0 and tiny.launch_us == pytest.approx(2.0)


def test_sizing_inside_a_graph_capture_is_refused(monkeypatch: pytest.MonkeyPatch):
    cuda = FakeCuda(mhz=1000.0, launch_us=1.0)
    cuda.is_current_stream_capturing = lambda: True  # type: ignore[method-assign]
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    with pytest.raises(RuntimeError, match="must not be inside a CUDA graph capture"):
        rk_extra.size_extra(lambda: None, 0.1, "cuda")
